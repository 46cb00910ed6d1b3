/* daemon_exec_session.c — the session side of exec (issue 8): /exec and /elevated directives kept on the session
 * row, and the session's exec events shown once to its agent on the next prompt. Never raises a host's cap. */
#include <string.h>

#include "approvals_policy.h"
#include "approvals_store.h"
#include "daemon_exec_session.h"
#include "exec_directive.h"
#include "json.h"
#include "log.h"
#include "strbuf.h"
#include "banned.h"

#define EVENTS_PER_NOTE 50
#define NOTE_OUTPUT_MAX 400

/* The gateway's own security for agent "default": what a session may raise security to on that host. */
static int gateway_cap(struct daemon *d, int *cap, struct err *e)
{
	struct appr_store s = APPR_STORE_INIT;
	if (appr_store_load(&s, d->paths.home, e) < 0)
		return -1;
	struct appr_levels agent, star, defaults, none = APPR_LEVELS_UNSET;
	appr_store_levels(s.root, "default", &agent);
	appr_store_levels(s.root, "*", &star);
	appr_store_defaults(s.root, &defaults);
	struct appr_effective eff;
	appr_policy_resolve(&none, &agent, &star, &defaults, &eff);
	*cap = (int)eff.security;
	appr_store_release(&s);
	return 0;
}

static int within_cap(struct daemon *d, const json_t *next, struct err *e)
{
	const char *host = json_get_str(next, "host"), *security = json_get_str(next, "security");
	int cap;
	if (!host || strcmp(host, "gateway") || !security)
		return 0; /* a node enforces its own cap, the sandbox has no levels */
	if (gateway_cap(d, &cap, e) < 0)
		return -1;
	if (appr_security_parse(security) <= cap)
		return 0;
	return err_setd(
		e, E_PERMISSION_DENIED, json_pack("{s:s,s:s}", "directive", "security", "cap", appr_security_name(cap)),
		"security=%s is above what the gateway's exec approvals allow (security=%s in %s/%s); an operator "
		"raises it with `agor approvals set --security %s`",
		security, appr_security_name(cap), d->paths.home, APPR_FILE_NAME, security);
}

int daemon_session_directive(struct daemon *d, const json_t *session, const char *prompt, int may_set, json_t **result,
			     struct err *e)
{
	const char *text = json_get_str(session, "exec_defaults");
	_cleanup_json_ json_t *current = text ? json_loads(text, 0, NULL) : NULL;
	json_t *next = NULL;
	int rc = exec_directive_apply(prompt, current, &next, e);
	if (rc <= 0)
		return rc;
	if (!may_set) {
		json_decref(next);
		return err_set(e, E_PERMISSION_DENIED,
			       "only the session's creator (or an admin) may change its exec defaults");
	}
	_cleanup_free_ char *stored = json_to_compact(next);
	const char *sid = json_get_str(session, "id");
	if (within_cap(d, next, e) < 0 || db_run(d->db, e, "UPDATE sessions SET exec_defaults = ? WHERE id = ?", "ss",
						 json_object_size(next) ? stored : NULL, sid) < 0) {
		json_decref(next);
		return -1;
	}
	*result = json_pack("{s:s,s:s,s:o}", "session_id", sid, "directive", prompt + strspn(prompt, " \t"), "exec",
			    next);
	return 1;
}

/* --- events for the agent ------------------------------------------------------------------------------ */

static const char *where(const json_t *data)
{
	const json_t *node = json_object_get(data, "node");
	const char *name = json_get_str(node, "displayName");
	return name ? name : json_get_str(data, "host") ? json_get_str(data, "host") : "?";
}

static void add_argv(struct strbuf *sb, const json_t *argv)
{
	size_t i;
	const json_t *w;
	json_array_foreach(argv, i, w) strbuf_addf(sb, "%s%s", i ? " " : "", json_string_value(w));
}

static void add_event(struct strbuf *sb, const char *type, const json_t *data)
{
	const char *run = json_get_str(data, "runId");
	strbuf_addf(sb, "- %s on %s (run %.8s): ", type, where(data), run ? run : "?");
	if (!strcmp(type, "exec.started")) {
		add_argv(sb, json_object_get(data, "argv"));
	} else if (!strcmp(type, "exec.denied")) {
		strbuf_addf(sb, "denied (%s)", json_get_str(data, "reason") ? json_get_str(data, "reason") : "?");
		if (json_get_str(data, "detail"))
			strbuf_addf(sb, ": %s", json_get_str(data, "detail"));
	} else {
		strbuf_addf(sb, "exit code %lld%s", (long long)json_integer_value(json_object_get(data, "exitCode")),
			    json_is_true(json_object_get(data, "timedOut")) ? ", timed out" : "");
		const char *out = json_get_str(data, "output");
		size_t len = out ? strlen(out) : 0;
		if (len)
			strbuf_addf(sb, "; output%s: %s", len > NOTE_OUTPUT_MAX ? " (last part)" : "",
				    out + (len > NOTE_OUTPUT_MAX ? len - NOTE_OUTPUT_MAX : 0));
	}
	while (sb->len && sb->buf[sb->len - 1] == '\n')
		sb->len--;
	strbuf_addch(sb, '\n');
}

char *daemon_session_events_note(struct daemon *d, const char *session_id, long long *last_id)
{
	struct err e = ERR_INIT;
	_cleanup_json_ json_t *rows = db_query_json(
		d->db, &e,
		"SELECT m.id, m.message_type, m.data FROM messages m JOIN sessions s ON s.id = m.session_id "
		"WHERE m.session_id = ? AND m.id > s.exec_events_seen "
		"AND m.message_type IN ('exec.started', 'exec.finished', 'exec.denied') ORDER BY m.id",
		"s", session_id);
	if (!rows) {
		log_error("session %s: exec events: %s", session_id, e.message);
		err_clear(&e);
		return NULL;
	}
	size_t n = json_array_size(rows);
	if (!n)
		return NULL;
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "[agor] System events since your last prompt (commands run for this session):\n");
	for (size_t i = n > EVENTS_PER_NOTE ? n - EVENTS_PER_NOTE : 0; i < n; i++) {
		json_t *row = json_array_get(rows, i);
		json_t *data = json_loads(json_get_str(row, "data"), 0, NULL);
		add_event(&sb, json_get_str(row, "message_type"), data);
		json_decref(data);
	}
	if (n > EVENTS_PER_NOTE)
		strbuf_addf(&sb, "(%zu earlier events left out)\n", n - EVENTS_PER_NOTE);
	strbuf_addstr(&sb, "[agor] End of system events.\n\n");
	*last_id = json_integer_value(json_object_get(json_array_get(rows, n - 1), "id"));
	return strbuf_detach(&sb, NULL);
}

void daemon_session_events_seen(struct daemon *d, const char *session_id, long long last_id)
{
	struct err e = ERR_INIT;
	if (db_run(d->db, &e, "UPDATE sessions SET exec_events_seen = ? WHERE id = ? AND exec_events_seen < ?", "isi",
		   last_id, session_id, last_id) < 0)
		log_error("session %s: exec events seen: %s", session_id, e.message);
	err_clear(&e);
}
