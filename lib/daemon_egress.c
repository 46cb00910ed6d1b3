/* daemon_egress.c — a session's own egress allowlist (daemon_egress.h): stored on the session row as the
 * setting's text, passed into each of its runs' policy by the callers of daemon_task_submit. Never stores an
 * entry the setting's own check would refuse; never lets anyone but the creator or an admin change it. */
#include <string.h>

#include "crypto.h"
#include "daemon_access.h"
#include "daemon_egress.h"
#include "daemon_exec_params.h"
#include "daemon_limits.h"
#include "daemon_peer.h"
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

/* --- terminal panes ------------------------------------------------------------------------ */

#define PANE_ID_MAX 64 /* ids are daemon_new_id()'s; anything longer is not one */

static void pane_mac(struct daemon *d, const char *worktree_id, const char *user_id,
		     char hex[CRYPTO_HMAC_SHA256_LEN * 2 + 1])
{
	_cleanup_free_ char *msg = xasprintf("agor pane egress\n%s\n%s", worktree_id, user_id);
	uint8_t mac[CRYPTO_HMAC_SHA256_LEN];
	crypto_hmac_sha256(d->jwt_secret, sizeof(d->jwt_secret), msg, strlen(msg), mac);
	crypto_hex(mac, sizeof(mac), hex);
}

char *daemon_pane_ticket(struct daemon *d, const char *worktree_id, const char *user_id)
{
	char hex[CRYPTO_HMAC_SHA256_LEN * 2 + 1];
	pane_mac(d, worktree_id, user_id, hex);
	return xasprintf("%s.%s.%s", worktree_id, user_id, hex);
}

/* Splits and checks a ticket: its worktree and user ids into wt and user (PANE_ID_MAX + 1 each). */
static int pane_ticket_check(struct daemon *d, const char *ticket, char *wt, char *user)
{
	const char *dot1 = strchr(ticket, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	if (!dot2 || dot1 - ticket > PANE_ID_MAX || dot2 - dot1 - 1 > PANE_ID_MAX || dot1 == ticket || dot2 == dot1 + 1)
		return -1;
	snprintf(wt, PANE_ID_MAX + 1, "%.*s", (int)(dot1 - ticket), ticket);
	snprintf(user, PANE_ID_MAX + 1, "%.*s", (int)(dot2 - dot1 - 1), dot1 + 1);
	char want[CRYPTO_HMAC_SHA256_LEN * 2 + 1];
	pane_mac(d, wt, user, want);
	return strlen(dot2 + 1) == strlen(want) && crypto_equal(dot2 + 1, want, strlen(want)) ? 0 : -1;
}

static int pane_still_there(struct daemon *d, const char *wt, const char *user, struct err *e)
{
	_cleanup_json_ json_t *row = db_query_one(
		d->db, e, "SELECT w.id FROM worktrees w, users u WHERE w.id = ? AND u.id = ?", "ss", wt, user);
	return json_is_object(row) ? 0 : -1;
}

static void pane_refused(struct daemon *d, const char *wt, const char *user, json_t *one)
{
	const char *host = json_get_str(one, "host"), *reason = json_get_str(one, "reason");
	json_t *port = json_object_get(one, "port"), *count = json_object_get(one, "count");
	if (!host || !reason || !json_is_integer(port) || strlen(host) > 255 || strlen(reason) > 32 ||
	    (count && !json_is_integer(count)))
		return;
	json_t *what = json_pack("{s:s,s:O,s:s,s:O*}", "host", host, "port", port, "reason", reason, "count", count);
	json_t *details = json_deep_copy(what);
	json_object_set_new(details, "terminal", json_true());
	daemon_audit(d, user, "egress.refused", wt, reason, details);
	json_object_set_new(what, "worktree_id", json_string(wt));
	daemon_broadcast_to(d, user, "terminal.egress_refused", what);
}

int method_terminal_report_egress(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	const char *ticket;
	json_t *refused = json_object_get(params, "refused"), *one;
	char wt[PANE_ID_MAX + 1], user[PANE_ID_MAX + 1];
	if (daemon_need_str(params, "ticket", &ticket, e) < 0)
		return -1;
	if (pane_ticket_check(d, ticket, wt, user) < 0 || pane_still_there(d, wt, user, e) < 0) {
		err_clear(e);
		daemon_audit_refusal(d, "unknown", "terminal.report_egress", NULL, json_pack("{s:s}", "why", "ticket"));
		return err_set(e, E_AUTH_FAILED,
			       "params.ticket: not a pane ticket of this daemon (or its worktree or "
			       "user is gone)");
	}
	if (!json_is_array(refused) || json_array_size(refused) > 100)
		return err_set(e, E_INVALID_PAYLOAD, "params.refused: expected an array of at most 100 refusals");
	size_t i;
	json_array_foreach(refused, i, one) pane_refused(d, wt, user, one);
	*result = json_object();
	return 0;
}
