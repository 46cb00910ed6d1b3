/* daemon_access.h — who is calling and what they may do: the caller's agor user (from SO_PEERCRED or a live client
 * token, read again when the users changed), access to worktrees, tasks and sessions (owners, admins, others_can),
 * the Unix user a creator's executions run as, and the parameter and row helpers every method file shares.
 * Access layer (daemon.h). Never decides a caller's identity from anything the caller says. */
#ifndef AGOR_DAEMON_ACCESS_H
#define AGOR_DAEMON_ACCESS_H

#include <jansson.h>

#include "daemon.h"
#include "daemon_peer.h"
#include "err.h"
#include "rpc.h"

/*
 * Identity
 * daemon_peer_identify: a Unix-socket peer's agor user and role from its SO_PEERCRED uid (root and the daemon's
 *   own user act as the owner), read at connect and whenever d->users_generation moved since.
 * daemon_peer_token_live: for a connection authenticated by a client token, 0 while that token is live (its
 *   role read again), else -1 and the connection loses its identity; SO_PEERCRED connections: 0 (identified again
 *   when the users changed). daemon_live_token: the live client token jti's {user_id, role}, else NULL and
 *   AUTH_FAILED.
 * daemon_need_user: the caller is an agor user (else AUTH_FAILED saying how to become one); daemon_need_admin:
 *   …and an admin (else PERMISSION_DENIED).
 */
void daemon_peer_identify(struct daemon *d, struct daemon_peer *p);
json_t *daemon_live_token(struct daemon *d, const char *jti, struct err *e);
int daemon_peer_token_live(struct daemon *d, struct daemon_peer *p, struct err *e);
int daemon_need_user(struct rpc_ctx *rc, struct err *e);
int daemon_need_admin(struct rpc_ctx *rc, struct err *e);

/*
 * Parameters and rows
 * daemon_need_str: params.KEY a non-empty string (else INVALID_PAYLOAD naming it); daemon_opt_str / opt_bool:
 *   the value, or NULL / dflt when absent or of another type.
 * daemon_one_row: the row sql (one '?' = id) selects, else NULL with NOT_FOUND "no WHAT with id ID".
 * daemon_list_rows / daemon_get_row: for any agor user, the rows of sql (no parameters) / the row params.id selects.
 */
int daemon_need_str(json_t *params, const char *key, const char **out, struct err *e);
const char *daemon_opt_str(json_t *params, const char *key);
int daemon_opt_bool(json_t *params, const char *key, int dflt);
json_t *daemon_one_row(struct daemon *d, struct err *e, const char *what, const char *sql, const char *id);
int daemon_list_rows(struct rpc_ctx *rc, const char *sql, json_t **result, struct err *e);
int daemon_get_row(struct rpc_ctx *rc, json_t *params, const char *what, const char *sql, json_t **result,
		   struct err *e);

/*
 * Worktrees, tasks and sessions
 * What the caller may do in a worktree: an owner or admin anything (WT_OWNER); anyone else what the worktree's
 * others_can says (none < view < prompt < all, others_can_words). A worktree the caller may not even see answers
 * as unknown (NOT_FOUND "no WHAT with id ID"), never as forbidden. A task's access is its creator's (or its
 * session's worktree's); a session's its worktree's (*wt_id, may be NULL, gets that worktree's id).
 * daemon_worktree_rbac_on: worktree Unix groups are on (insulated or strict mode with execution.worktree_rbac).
 */
enum wt_access { WT_NONE, WT_VIEW, WT_PROMPT, WT_ALL, WT_OWNER }; /* WT_VIEW..WT_ALL = others_can_words[1..3] */
extern const char *const others_can_words[];
int daemon_owns_worktree(struct daemon *d, const char *worktree_id, const char *user_id, struct err *e);
enum wt_access daemon_worktree_access(struct rpc_ctx *rc, const char *worktree_id, struct err *e);
/* 1 when the caller may see the worktree (owner, admin, or its others_can is not none), else 0. */
int daemon_worktree_visible(struct rpc_ctx *rc, const char *worktree_id, struct err *e);
int daemon_need_worktree_access(struct rpc_ctx *rc, const char *worktree_id, enum wt_access need, const char *what,
				const char *id, const char *action, struct err *e);
int daemon_need_task_access(struct rpc_ctx *rc, const char *id, enum wt_access need, const char *action, struct err *e);
int daemon_need_session_access(struct rpc_ctx *rc, const char *id, enum wt_access need, const char *action,
			       char **wt_id, struct err *e);
int daemon_worktree_rbac_on(const struct daemon *d);

/* The Unix user executions for agor user creator_id run as (the Unix mode's rule, docs/security.md); *user is
 * malloc'd. */
int daemon_execution_user_for(struct daemon *d, const char *creator_id, char **user, struct err *e);

#endif
