/* daemon_access.c — who is calling and what they may do (daemon_access.h): identity from SO_PEERCRED or a live
 * client token, worktree/task/session access from owners and others_can, the execution user of a creator, and the
 * parameter and row helpers every method file shares. Never takes a caller's word for who it is. */
#include <string.h>

#include "daemon_access.h"
#include "json.h"
#include "unixmode.h"
#include "banned.h"

const char *const others_can_words[] = { "none", "view", "prompt", "all", NULL };

/* --- identity ------------------------------------------------------------------------------ */

void daemon_peer_identify(struct daemon *d, struct daemon_peer *p)
{
	free(p->user_id);
	p->user_id = NULL;
	p->is_admin = 0;
	p->users_generation = d->users_generation;
	if (p->uid == 0 || p->uid == d->uid) { /* root and the daemon's own user act as the owner */
		p->user_id = xstrdup(d->owner_id);
		p->is_admin = 1;
		return;
	}
	struct err e = ERR_INIT;
	json_t *row = db_query_one(d->db, &e, "SELECT id, role FROM users WHERE unix_uid = ?", "i", (long long)p->uid);
	if (row && !json_is_null(row)) {
		p->user_id = xstrdup(json_string_value(json_object_get(row, "id")));
		p->is_admin = !strcmp(json_string_value(json_object_get(row, "role")), "admin");
	}
	if (row)
		json_decref(row);
	err_clear(&e);
}

/* The row of a live token (not revoked, not expired, its user still there), or NULL with e set. */
json_t *daemon_live_token(struct daemon *d, const char *jti, struct err *e)
{
	json_t *row = db_query_one(d->db, e,
				   "SELECT t.user_id, u.role FROM client_tokens t JOIN users u ON u.id = t.user_id "
				   "WHERE t.jti = ? AND t.revoked_at IS NULL AND t.expires_at > ?",
				   "si", jti, daemon_now());
	if (row && json_is_null(row)) {
		json_decref(row);
		row = NULL;
		err_set(e, E_AUTH_FAILED, "the token is revoked, expired or unknown");
	}
	return row;
}

int daemon_peer_token_live(struct daemon *d, struct daemon_peer *p, struct err *e)
{
	if (!p->token_jti) {
		if (p->uid != (uid_t)-1 && p->users_generation != d->users_generation)
			daemon_peer_identify(d, p);
		return 0;
	}
	json_t *row = daemon_live_token(d, p->token_jti, e);
	if (!row) {
		free(p->user_id);
		p->user_id = NULL;
		p->is_admin = 0;
		return -1;
	}
	p->is_admin =
		!strcmp(json_get_str(row, "role") ?: "", "admin"); /* a role changed since auth.token counts now */
	json_decref(row);
	return 0;
}

int daemon_need_user(struct rpc_ctx *rc, struct err *e)
{
	if (daemon_peer_token_live(D(rc), P(rc), e) < 0)
		return -1;
	if (P(rc)->user_id)
		return 0;
	if (P(rc)->uid == (uid_t)-1)
		return err_set(e, E_AUTH_FAILED,
			       "a TCP connection must first present a user token: the agor CLI takes "
			       "--token T or $AGOR_TOKEN, other clients call auth.token {\"token\": …} "
			       "(tokens are made with `agor user token` on the daemon's host)");
	return err_set(e, E_AUTH_FAILED,
		       "this connection is not an agor user (uid %u has none: an admin runs "
		       "`agor user create NAME --unix-user LOGIN`)",
		       (unsigned)P(rc)->uid);
}

int daemon_need_admin(struct rpc_ctx *rc, struct err *e)
{
	if (daemon_need_user(rc, e) < 0)
		return -1;
	return P(rc)->is_admin ? 0 : err_set(e, E_PERMISSION_DENIED, "only an admin may do this");
}

/* --- parameters and rows ------------------------------------------------------------------- */

int daemon_need_str(json_t *params, const char *key, const char **out, struct err *e)
{
	json_t *v = json_object_get(params, key);
	if (!json_is_string(v) || !json_string_length(v))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", key),
				"params.%s: required (a non-empty string)", key);
	*out = json_string_value(v);
	return 0;
}

const char *daemon_opt_str(json_t *params, const char *key)
{
	return json_get_str(params, key);
}

int daemon_opt_bool(json_t *params, const char *key, int dflt)
{
	json_t *v = json_object_get(params, key);
	return json_is_boolean(v) ? json_is_true(v) : dflt;
}

json_t *daemon_one_row(struct daemon *d, struct err *e, const char *what, const char *sql, const char *id)
{
	json_t *row = db_query_one(d->db, e, sql, "s", id);
	if (row && json_is_null(row)) {
		json_decref(row);
		err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "id", id), "no %s with id %s", what, id);
		return NULL;
	}
	return row;
}

/* The rows of sql (no parameters) for any agor user. */
int daemon_list_rows(struct rpc_ctx *rc, const char *sql, json_t **result, struct err *e)
{
	if (daemon_need_user(rc, e) < 0)
		return -1;
	*result = db_query_json(D(rc)->db, e, sql, "");
	return *result ? 0 : -1;
}

/* The row params.id selects with sql (one '?', or two for "id or name"), for any agor user. */
int daemon_get_row(struct rpc_ctx *rc, json_t *params, const char *what, const char *sql, json_t **result,
		   struct err *e)
{
	const char *id;
	if (daemon_need_user(rc, e) < 0 || daemon_need_str(params, "id", &id, e) < 0)
		return -1;
	*result = daemon_one_row(D(rc), e, what, sql, id);
	return *result ? 0 : -1;
}

/* --- worktrees, tasks and sessions --------------------------------------------------------- */

int daemon_owns_worktree(struct daemon *d, const char *worktree_id, const char *user_id, struct err *e)
{
	json_t *row =
		db_query_one(d->db, e, "SELECT 1 AS yes FROM worktree_owners WHERE worktree_id = ? AND user_id = ?",
			     "ss", worktree_id, user_id);
	int owns = row && !json_is_null(row);
	if (row)
		json_decref(row);
	return owns;
}

enum wt_access daemon_worktree_access(struct rpc_ctx *rc, const char *worktree_id, struct err *e)
{
	if (P(rc)->is_admin || daemon_owns_worktree(D(rc), worktree_id, P(rc)->user_id, e))
		return WT_OWNER;
	_cleanup_json_ json_t *row =
		db_query_one(D(rc)->db, e, "SELECT others_can FROM worktrees WHERE id = ?", "s", worktree_id);
	const char *can = json_is_object(row) ? json_get_str(row, "others_can") : NULL;
	for (int level = WT_VIEW; can && level <= WT_ALL; level++)
		if (!strcmp(can, others_can_words[level]))
			return (enum wt_access)level;
	return WT_NONE;
}

int daemon_worktree_visible(struct rpc_ctx *rc, const char *worktree_id, struct err *e)
{
	return daemon_worktree_access(rc, worktree_id, e) >= WT_VIEW;
}

/* 0 when the caller has at least `need` on the worktree; else NOT_FOUND ("no WHAT with id ID", as for an
 * unknown id) below view, PERMISSION_DENIED naming the level `action` needs otherwise. */
int daemon_need_worktree_access(struct rpc_ctx *rc, const char *worktree_id, enum wt_access need, const char *what,
				const char *id, const char *action, struct err *e)
{
	enum wt_access have = daemon_worktree_access(rc, worktree_id, e);
	if (have >= need)
		return 0;
	if (have < WT_VIEW)
		return err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "id", id), "no %s with id %s", what, id);
	if (need == WT_OWNER)
		return err_set(e, E_PERMISSION_DENIED, "only an owner of worktree %s (or an admin) may %s", worktree_id,
			       action);
	return err_set(e, E_PERMISSION_DENIED, "worktree %s lets others %s: %s needs others_can %s (or an owner)",
		       worktree_id, others_can_words[have], action, others_can_words[need]);
}

/* A task is its creator's business (and admins'); a task of a session is also that of whoever has `need`
 * on the session's worktree (view: tasks.get, its messages; prompt: tasks.cancel). A task the caller may
 * not see is NOT_FOUND, as an unknown id, so ids do not leak. */
int daemon_need_task_access(struct rpc_ctx *rc, const char *id, enum wt_access need, const char *action, struct err *e)
{
	if (daemon_need_user(rc, e) < 0)
		return -1;
	_cleanup_json_ json_t *t =
		daemon_one_row(D(rc), e, "task",
			       "SELECT t.created_by, s.worktree_id FROM tasks t LEFT JOIN sessions s ON s.id = "
			       "t.session_id WHERE t.id = ?",
			       id);
	if (!t)
		return -1;
	const char *creator = json_get_str(t, "created_by"), *wt_id = json_get_str(t, "worktree_id");
	if (P(rc)->is_admin || (creator && !strcmp(creator, P(rc)->user_id)))
		return 0;
	if (wt_id)
		return daemon_need_worktree_access(rc, wt_id, need, "task", id, action, e);
	return err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "id", id), "no task with id %s", id); /* as one_row's */
}

/* A session is visible with view on its worktree (NOT_FOUND below, as an unknown id); *wt_id (may be NULL)
 * gets its worktree's id. */
int daemon_need_session_access(struct rpc_ctx *rc, const char *id, enum wt_access need, const char *action,
			       char **wt_id, struct err *e)
{
	if (daemon_need_user(rc, e) < 0)
		return -1;
	_cleanup_json_ json_t *s =
		daemon_one_row(D(rc), e, "session", "SELECT worktree_id FROM sessions WHERE id = ?", id);
	if (!s || daemon_need_worktree_access(rc, json_get_str(s, "worktree_id"), need, "session", id, action, e) < 0)
		return -1;
	if (wt_id)
		*wt_id = xstrdup(json_get_str(s, "worktree_id"));
	return 0;
}

int daemon_worktree_rbac_on(const struct daemon *d)
{
	int mode = d->cfg->execution.unix_user_mode;
	return (mode == CONFIG_MODE_INSULATED || mode == CONFIG_MODE_STRICT) && d->cfg->execution.worktree_rbac;
}

/* --- execution users ----------------------------------------------------------------------- */

int daemon_execution_user_for(struct daemon *d, const char *creator_id, char **user, struct err *e)
{
	json_t *creator = daemon_one_row(d, e, "user", "SELECT * FROM users WHERE id = ?", creator_id);
	if (!creator)
		return -1;
	static const enum unix_mode modes[] = { UNIX_MODE_SIMPLE, UNIX_MODE_INSULATED, UNIX_MODE_STRICT,
						UNIX_MODE_SANDBOX };
	struct unix_mode_settings s = { .mode = modes[d->cfg->execution.unix_user_mode],
					.daemon_user = d->daemon_user,
					.executor_user = d->cfg->execution.executor_unix_user };
	struct unix_mode_creator c = { .label = json_string_value(json_object_get(creator, "name")),
				       .unix_username = json_string_value(json_object_get(creator, "unix_username")) };
	const char *chosen;
	int rc = unix_mode_execution_user(&s, &c, &chosen, e);
	if (rc == 0)
		*user = xstrdup(chosen);
	json_decref(creator);
	return rc;
}
