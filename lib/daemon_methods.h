/* daemon_methods.h — the glue between the daemon's transports and its JSON-RPC methods: who is calling
 * (struct daemon_peer), replies that come later, and event subscriptions.
 * Never decides a caller's identity from anything the caller says: only SO_PEERCRED or a verified token. */
#ifndef AGOR_DAEMON_METHODS_H
#define AGOR_DAEMON_METHODS_H

#include <sys/types.h>

#include "daemon.h"
#include "rpc.h"
#include "strbuf.h"

struct daemon_peer {
	struct daemon *d;
	struct net_conn *conn;
	uid_t uid;	/* SO_PEERCRED on the Unix socket; (uid_t)-1 over TCP */
	pid_t pid;
	char *user_id;	/* the agor user this connection acts as, or NULL */
	int is_admin;
	unsigned users_generation; /* d->users_generation when user_id/is_admin were read */
	int subscribed;
	char *node_id;	 /* a paired node authenticated with node.hello (never also a user) */
	char *token_jti; /* over TCP: the client token this connection authenticated with (auth.token) */
	struct terminal *terminal; /* the terminal this connection is attached to (daemon_terminal.c), or NULL */
	void **pending;	/* deferred replies waiting on this connection */
	size_t npending, pending_alloc;
};

/* Who a Unix-socket peer is (SO_PEERCRED uid → agor user and role), read again: at connect, and whenever
 * d->users_generation moved since (users.update, users.remove). */
void daemon_peer_identify(struct daemon *d, struct daemon_peer *p);

/* The executor methods (SPEC §4.3), authenticated by session tokens (daemon_executor.c). */
extern const struct rpc_method daemon_executor_methods[];
/* User access tokens for TCP clients (daemon_tokens.c): auth.token, tokens.create|list|revoke. */
extern const struct rpc_method daemon_token_methods[];
extern const size_t daemon_token_nmethods;
/* A connection authenticated by a client token: 0 while that token is live (its role read again); else -1
 * (and the connection loses its identity). Connections known by SO_PEERCRED: always 0, identified again
 * when the users changed since. */
int daemon_peer_token_live(struct daemon *d, struct daemon_peer *p, struct err *e);
extern const size_t daemon_executor_nmethods;
/* Opens the sealed API key of service into out when its scope (owner | admins | members) admits the agor user
 * user (a task's); PERMISSION_DENIED naming the scope otherwise, NOT_FOUND when none is stored. *scope (may be
 * NULL) gets the key's scope, malloc'd, when the key exists. */
int daemon_open_api_key(struct daemon *d, const char *service, const char *user, struct strbuf *out, char **scope,
			struct err *e);
/* 1 when scope is one of owner, admins, members. */
int daemon_api_key_scope_valid(const char *scope);
/* The name api_keys.set stores service under: a git credential git:HOST[:PORT] canonical (host lower-cased,
 * an IPv6 literal in brackets, port 443 left out), any other name as given; INVALID_PAYLOAD naming
 * params.service when a git: name is not an https origin. */
int daemon_canonical_service(const char *service, char **out, struct err *e);

/* The terminal methods (daemon_terminal.c): terminal.open|attach|input|resize|close|list, terminal.handover. */
extern const struct rpc_method daemon_terminal_methods[];
extern const size_t daemon_terminal_nmethods;
/* Bytes typed into the terminal the connection is attached to (WebSocket binary frames). */
void daemon_terminal_on_binary(struct daemon_peer *peer, const void *data, size_t len);
/* The connection closes: it leaves its terminal. */
void daemon_terminal_on_close(struct daemon_peer *peer);
/* Lets every terminal go (shutdown): descriptors closed, tmux clients detach, sessions stay. */
void daemon_terminals_release(struct daemon *d);
/* Who may have opened a terminal in the worktree (its owners and the admins: a terminal runs as its opener's
 * execution user, in that user's tmux server): their user ids, a JSON array (never NULL). */
json_t *daemon_terminal_openers(struct daemon *d, const char *worktree_id);
/* A removed worktree: its open terminals end ("the worktree was removed") and a tmux.close task for each distinct
 * execution user of openers kills its window there (the shell would stay in a deleted directory). */
void daemon_terminals_worktree_removed(struct daemon *d, const char *worktree_id, const char *name, const json_t *openers);
/* At start: for each execution user of the agor users, a tmux.close task closes the windows agor made for
 * worktrees that no longer exist (removed while the daemon was down, or before this was done). */
void daemon_terminals_sweep(struct daemon *d);

/* Shared by the method files. daemon_need_user: the caller is an agor user (else AUTH_FAILED). */
int daemon_need_user(struct rpc_ctx *rc, struct err *e);
int daemon_owns_worktree(struct daemon *d, const char *worktree_id, const char *user_id, struct err *e);
/* 1 when the caller may see the worktree (owner, admin, or its others_can is not none), else 0. */
int daemon_worktree_visible(struct rpc_ctx *rc, const char *worktree_id, struct err *e);
/* The Unix user executions for agor user creator_id run as (SPEC §5.1); *user is malloc'd. */
int daemon_execution_user_for(struct daemon *d, const char *creator_id, char **user, struct err *e);
/* Verifies an executor's params.session_token (as every executor method does); *task_id is its task. */
int daemon_executor_authenticate(struct daemon *d, const char *method, json_t *params, char **task_id, struct err *e);
/* exec.run's shared parameter checks (daemon_methods.c): argv a non-empty array of strings; a level
 * (absent → dflt); params.session_id a session of the caller (*owner, may be NULL: its creator); the run's
 * worktree (params.worktree_id, owned by the caller or the caller an admin). The judge of runs whose
 * program ended badly (exit ≠ 0, timeout, limits). */
int daemon_need_argv(json_t *params, json_t **argv, struct err *e);
int daemon_level_param(json_t *params, const char *key, int (*parse)(const char *), const char *names,
		       const char *dflt, const char **out, struct err *e);
int daemon_session_param(struct rpc_ctx *rc, json_t *params, const char **session_id, char **owner, struct err *e);
/* params.env of exec.run on a node or the gateway (*env borrowed, NULL when absent): every name must pass
 * execution.exec_env_allow (exec_env.h), else INVALID_PAYLOAD "params.env.NAME: not allowed: …" naming it. */
int daemon_exec_env_param(struct rpc_ctx *rc, json_t *params, json_t **env, struct err *e);
json_t *daemon_run_worktree(struct rpc_ctx *rc, json_t *params, struct err *e);
int daemon_exec_outcome(const json_t *data, struct err *why);
/* A reply that comes later: the method returns RPC_DEFERRED (when rc has an id, outside a batch) and
 * answers with daemon_reply_finish(result stolen, or error); a closed connection drops the answer. */
struct pending_reply;
struct pending_reply *daemon_reply_defer(struct rpc_ctx *rc);
void daemon_reply_finish(struct pending_reply *pr, json_t *result, const struct err *error);

/* Processes one message from peer; returns the reply text (malloc'd) or NULL. */
char *daemon_handle_message(struct daemon *d, struct daemon_peer *peer, const char *msg, size_t len);

/* The daemon and the calling connection of a method call (every method file uses these). */
static inline struct daemon *D(struct rpc_ctx *rc) { return rc->app; }
static inline struct daemon_peer *P(struct rpc_ctx *rc) { return rc->peer; }

/* Implemented by the transport glue (daemon_serve.c). */
void daemon_peer_send(struct daemon_peer *peer, const char *text);
void daemon_peer_remember(struct daemon_peer *peer, void *pending);
void daemon_peer_forget(struct daemon_peer *peer, void *pending);
void daemon_peer_subscribe(struct daemon_peer *peer);
/* Anything remembered on a connection (daemon_peer_remember) starts with this header: detach is called
 * when the connection closes, after which the thing must not use its peer again. */
struct daemon_pending {
	void (*detach)(struct daemon_pending *self);
};
/* Called for each pending reply when its connection closes. */
void daemon_pending_detach(void *pending);
/* True when a subscriber acting as user_id, or an admin, is connected (someone can be asked). */
int daemon_has_watcher(struct daemon *d, const char *user_id);

/* Permission requests of agents (daemon_permissions.c): request_permission's decision, and
 * permissions.respond for the clients that decide. */
int daemon_permission_request(struct rpc_ctx *rc, const json_t *task, const char *session_id, json_t *params,
			      json_t **result, struct err *e);
void daemon_permissions_cancel_task(struct daemon *d, const char *task_id);
/* A permission request the daemon raises itself (exec approvals, issue 8): asked of owner (or an admin) with
 * permission.requested {request_id, task_id, session_id?, kind, tool_name, tool_input, timeout_ms}. Returns 0
 * when nobody who may decide is connected (nothing asked, decided never runs), else 1: decided then runs
 * exactly once — approved or not, scope (allow-once|allow-always, NULL unless a person answered), who decided
 * and why — also on timeout and cancellation (denied). */
typedef void (*permission_decided_fn)(struct daemon *d, int approved, const char *scope, const char *decider,
				      const char *reason, void *arg);
struct permission_ask {
	const char *owner, *task_id, *session_id; /* session_id may be NULL */
	const char *kind;			  /* e.g. "exec" (also the audited mode) */
	const char *tool;			  /* e.g. "exec.run" */
	const json_t *input;			  /* borrowed: what the decider is shown */
	permission_decided_fn decided;
	void *arg;
};
int daemon_permission_ask(struct daemon *d, const struct permission_ask *a);
extern const struct rpc_method daemon_permission_methods[];
extern const size_t daemon_permission_nmethods;

#endif
