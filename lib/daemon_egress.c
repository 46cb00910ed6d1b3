/* daemon_egress.c — a session's own egress allowlist (daemon_egress.h): stored on the session row as the
 * setting's text, passed into each of its runs' policy by the callers of daemon_task_submit. Never stores an
 * entry the setting's own check would refuse; never lets anyone but the creator or an admin change it. */
#include <string.h>

#include "daemon_access.h"
#include "daemon_egress.h"
#include "daemon_exec_params.h"
#include "egress_allow.h"
#include "json.h"
#include "strvec.h"
#include "banned.h"

/* The session's entries, one per element (its stored text split at ", "). */
static void stored_entries(struct daemon *d, const char *session_id, struct strvec *out, struct err *e)
{
	_cleanup_json_ json_t *row =
		db_query_one(d->db, e, "SELECT egress_allow FROM sessions WHERE id = ?", "s", session_id);
	const char *text = json_is_object(row) ? json_get_str(row, "egress_allow") : NULL;
	for (const char *p = text; p && *p;) {
		size_t n = strcspn(p, ", ");
		if (n)
			strvec_pushf(out, "%.*s", (int)n, p);
		p += n;
		p += strspn(p, ", ");
	}
}

static int store_entries(struct daemon *d, const char *session_id, const struct strvec *entries, struct err *e)
{
	struct strbuf text = STRBUF_INIT;
	for (size_t i = 0; i < entries->nr; i++)
		strbuf_addf(&text, "%s%s", i ? ", " : "", entries->v[i]);
	int rc = db_run(d->db, e, "UPDATE sessions SET egress_allow = ? WHERE id = ?", "ss",
			entries->nr ? text.buf : NULL, session_id);
	strbuf_release(&text);
	return rc < 0 ? -1 : 0;
}

static json_t *entries_json(const char *session_id, const struct strvec *entries)
{
	json_t *list = json_array();
	for (size_t i = 0; i < entries->nr; i++)
		json_array_append_new(list, json_string(entries->v[i]));
	return json_pack("{s:s,s:o}", "session_id", session_id, "egress_allow", list);
}

static int has_entry(const struct strvec *entries, const char *entry)
{
	for (size_t i = 0; i < entries->nr; i++)
		if (!strcmp(entries->v[i], entry))
			return 1;
	return 0;
}

/* One entry of the setting's form, nothing more. */
static int check_entry(const char *entry, struct err *e)
{
	size_t at = 0;
	if (entry[strcspn(entry, ", \t\n")] || egress_allow_check(entry, &at, e) < 0) {
		err_clear(e);
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "entry"),
				"params.entry: expected one egress_allow entry — host, *.suffix, an address literal "
				"(1.2.3.4, [::1]), each optionally :port — not \"%s\"",
				entry);
	}
	return 0;
}

/* The caller may change the session's egress (its creator or an admin); *session_id and *entry are the params. */
static int change_params(struct rpc_ctx *rc, json_t *params, const char **session_id, const char **entry, struct err *e)
{
	if (daemon_need_user(rc, e) < 0 || daemon_need_str(params, "session_id", session_id, e) < 0 ||
	    daemon_need_str(params, "entry", entry, e) < 0)
		return -1;
	const char *sid;
	return daemon_session_param(rc, params, &sid, NULL, e);
}

static int change(struct rpc_ctx *rc, json_t *params, int add, json_t **result, struct err *e)
{
	const char *sid, *entry;
	if (change_params(rc, params, &sid, &entry, e) < 0 || (add && check_entry(entry, e) < 0))
		return -1;
	_cleanup_strvec_ struct strvec entries = STRVEC_INIT, kept = STRVEC_INIT;
	stored_entries(D(rc), sid, &entries, e);
	int present = has_entry(&entries, entry);
	if (!add && !present)
		return err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "path", "entry"),
				"session %s has no egress entry \"%s\" (agor session get %s shows them)", sid, entry,
				sid);
	for (size_t i = 0; i < entries.nr; i++)
		if (add || strcmp(entries.v[i], entry))
			strvec_push(&kept, entries.v[i]);
	if (add && !present)
		strvec_push(&kept, entry);
	if ((!add || !present) && store_entries(D(rc), sid, &kept, e) < 0)
		return -1;
	daemon_audit(D(rc), P(rc)->user_id, add ? "sessions.egress.add" : "sessions.egress.remove", sid, "ok",
		     json_pack("{s:s}", "entry", entry));
	*result = entries_json(sid, &kept);
	return 0;
}

int method_sessions_egress_add(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	return change(rc, params, 1, result, e);
}

int method_sessions_egress_remove(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	return change(rc, params, 0, result, e);
}
