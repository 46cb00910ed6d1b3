/* daemon_peer.h — the daemon's connections as its methods see them: who is calling (struct daemon_peer, filled by
 * daemon_access from SO_PEERCRED or a verified token — never from what the caller says), replies that come later,
 * and the events pushed to subscribers (each sees only its own user's, admins everything). Core layer (daemon.h). */
#ifndef AGOR_DAEMON_PEER_H
#define AGOR_DAEMON_PEER_H

#include <jansson.h>
#include <sys/types.h>

#include "daemon.h"
#include "err.h"
#include "rpc.h"

struct net_conn;
struct terminal;

struct daemon_peer {
	struct daemon *d;
	struct net_conn *conn;
	uid_t uid; /* SO_PEERCRED on the Unix socket; (uid_t)-1 over TCP */
	pid_t pid;
	char *user_id; /* the agor user this connection acts as, or NULL */
	int is_admin;
	unsigned users_generation; /* d->users_generation when user_id/is_admin were read */
	int subscribed;
	char *node_id;		   /* a paired node authenticated with node.hello (never also a user) */
	char *token_jti;	   /* over TCP: the client token this connection authenticated with (auth.token) */
	struct terminal *terminal; /* the terminal this connection is attached to (daemon_terminal.c), or NULL */
	struct terminal *terminal_stream; /* the terminal a remote executor relays on this connection, or NULL */
	int executor;	/* a task's executor that presented its live session token (a remote one, over TCP) */
	void **pending; /* deferred replies waiting on this connection */
	size_t npending, pending_alloc;
};

/* The connection glue: a message to the peer (any open write batch is committed first); things that wait on
 * the connection; its subscription to events. */
void daemon_peer_send(struct daemon_peer *peer, const char *text);
/* An answer to a call (text: one JSON-RPC reply, or a batch's array), sent once the open write batch is committed:
 * when that commit failed, every answer in it that said ok says why instead (the disk full or failing, what to do),
 * so no caller is told ok for a write that is not stored (docs/recovery.md). */
void daemon_send_reply(struct daemon *d, struct net_conn *c, const char *text);
void daemon_peer_reply(struct daemon_peer *peer, const char *text);
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

/* A reply that comes later: the method returns RPC_DEFERRED (when rc has an id, outside a batch) and
 * answers with daemon_reply_finish(result stolen, or error); a closed connection drops the answer. */
struct pending_reply {
	struct daemon_pending base;
	struct daemon_peer *peer; /* NULL once the connection closed */
	json_t *id;
	json_t *extra; /* merged into the reply */
	char *kind;    /* what the reply is about: "deferred", "repo", "worktree", "worktree.remove", … */
	char *row_id;
};
struct pending_reply *daemon_reply_defer(struct rpc_ctx *rc);
/* The general form: the reply waits (wait, rc has an id, outside a batch) or is answered now by the caller
 * (pr->peer NULL; always so without rc: work the daemon does on its own); kind and extra (stolen, may be NULL)
 * are the caller's. daemon_reply_free drops it unanswered. */
struct pending_reply *daemon_reply_new(struct rpc_ctx *rc, int wait, const char *kind, json_t *extra);
void daemon_reply_free(struct pending_reply *pr);
void daemon_reply_finish(struct pending_reply *pr, json_t *result, const struct err *error);

/* The daemon and the calling connection of a method call (every method file uses these). */
static inline struct daemon *D(struct rpc_ctx *rc)
{
	return rc->app;
}
static inline struct daemon_peer *P(struct rpc_ctx *rc)
{
	return rc->peer;
}

/* Pushes {"type":type,"data":data} to every subscriber (data stolen). */
void daemon_broadcast(struct daemon *d, const char *type, json_t *data);
/* As daemon_broadcast_to, to user_id and also_to (NULL: nobody more), each connection once. */
void daemon_broadcast_to2(struct daemon *d, const char *user_id, const char *also_to, const char *type, json_t *data);
/* The same, for the subscribers acting as agor user `user_id` and admins only (NULL: admins only).
 * Tasks, their messages and their outcomes are their creator's business. */
void daemon_broadcast_to(struct daemon *d, const char *user_id, const char *type, json_t *data);
/* The "message" event of report_message for user_id's and also_to's subscribers (either may be NULL), its data
 * already serialised (compact JSON, as stored): the same bytes daemon_broadcast_to2 would send, without
 * serialising data twice. */
void daemon_broadcast_message(struct daemon *d, const char *user_id, const char *also_to, const char *task_id,
			      const char *session_id, const char *message_type, const char *data_text);
/* The same, for admins and the agor users of the NULL-terminated list users (NULL: admins only). */
void daemon_broadcast_to_users(struct daemon *d, const char *const *users, const char *type, json_t *data);
/* Events pushed while a write batch is open wait for its commit (at most one loop round): this sends them (send) or
 * drops them (the batch did not commit: they told of writes that are not stored). */
void daemon_release_held_events(struct daemon *d, int send);
/* At the daemon's end: drops what is held and frees what holding used. */
void daemon_free_held_events(struct daemon *d);
void daemon_subscribe(struct daemon *d, struct net_conn *c);
void daemon_unsubscribe(struct daemon *d, struct net_conn *c);

#endif
