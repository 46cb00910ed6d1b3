/* daemon.h — the trusted control plane's shared state (struct daemon) and its base: the clock, new ids, the
 * audit helper, the write batch. Never executes untrusted code and never opens the data home: every git or file change
 * is an executor payload run through lib/spawn on a worker thread; the database is touched on the loop thread only.
 *
 * The daemon's files, in layers (docs/architecture.md); a file calls only files of lower layers, never up
 * (`test/integration/t0006-layers.sh` fails on any call or include cycle between lib modules):
 *   base      daemon (this file)
 *   core      daemon_limits (refusals, origins, descriptors, db size) · daemon_peer (connections, deferred
 *             replies, events to subscribers) · daemon_taskauth (executor tokens) · daemon_tasks (the queue)
 *   access    daemon_access (who is calling, what they may see and change, parameter helpers)
 *   services  daemon_permissions (asking a person) · daemon_exec_params (exec.run's shared checks) ·
 *             daemon_exec_session (a session's exec defaults)
 *   features  daemon_tokens · daemon_executor · daemon_egress · daemon_terminal · daemon_gateway · daemon_nodes ·
 *             daemon_methods (users, repos, worktrees, sessions, tasks, …): each exports its method handlers
 *   top       daemon_dispatch (the one sorted method table) · daemon_serve (listeners, the loop) ·
 *             daemon_main (init and release, which set the hooks below)
 * A lower layer reaches a higher one only through a hook in struct daemon that daemon_main sets.
 */
#ifndef AGOR_DAEMON_H
#define AGOR_DAEMON_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "db.h"
#include "err.h"
#include "loop.h"
#include "paths.h"
#include "strbuf.h"
#include "strvec.h"

struct net_server;
struct net_conn;
struct task_run;
struct node_state;
struct refusals;
struct origin_set;
struct net_server_config;

struct daemon {
	struct config *cfg;
	struct agor_paths paths;
	struct db *db;
	struct loop *loop;
	struct net_server *server;
	uint8_t jwt_secret[32];
	uint8_t master_key[32];
	char *self_path;    /* this agor binary: what executors run */
	char *data_home_id; /* remote executors: the data home's id (paths.h), learnt from the first that told it, or
			       NULL */
	char *executor_daemon_ca_pem; /* execution.executor_daemon_ca_file's certificates, for remote executors; or NULL
				       */
	char *daemon_user;	      /* the Unix user the daemon runs as */
	uid_t uid;
	char *owner_id;		   /* the agor user mapped to the daemon's own uid */
	unsigned users_generation; /* bumped when a user's Unix mapping or role changes or a user goes */
	int stopping;
	long long started_at; /* daemon_now() at daemon_init: `agor daemon status` shows the uptime */
	int lock_fd;	      /* run/daemon.lock, flocked for the daemon's lifetime */
	int ready_fd;	      /* when detached: the pipe to the waiting parent ("R" once serving), else -1 */

	struct task_run *queued;  /* waiting for a free executor slot (FIFO list) */
	struct task_run *running; /* executors in flight (list) */
	int nrunning;
	pthread_mutex_t done_lock;
	struct task_run *done; /* finished by workers, waiting for the loop thread */

	int write_batch_open;		/* a transaction spanning this loop iteration's writes (daemon_write_batch) */
	struct held_event *held_events; /* events of the open batch, sent once it commits (daemon_peer.c) */
	size_t nheld_events, held_events_alloc;
	struct strbuf held_bytes;    /* their texts and audiences, kept from batch to batch (daemon_peer.c) */
	struct strvec batch_endings; /* tasks whose final status rides in the open batch (daemon_note_task_ending) */
	struct strvec lost_endings;  /* tasks whose final status a failed commit lost, not yet rewritten as failed */
	struct loop_timer *lost_endings_retry;
	struct verified_token *verified; /* executor tokens whose signature was checked (daemon_executor.c) */
	uint64_t auth_generation;	 /* bumped by every write to tokens or tasks: a remembered check is void */
	unsigned data_version_at_commit; /* the database's data version as the last batch began to commit */
	int saving_token_uses;		 /* writing the counted uses back: not a change of any token's state */
	struct report_line *report_line; /* report_scan's buffer, reused from line to line */

	/* hooks: set by daemon_main, called by lower layers */
	void (*on_task_cancel)(struct daemon *d, const char *task_id); /* a running task is being cancelled */
	void (*before_commit)(struct daemon *d);		       /* a batch of writes is about to commit */
	/* the batch committed (failure NULL) or was rolled back (failure says why): its held events go or are dropped,
	 * its lost task endings are rewritten (docs/recovery.md) */
	void (*after_commit)(struct daemon *d, const struct err *failure);

	struct node_state *nodes;		/* paired nodes connected now and their runs (daemon_nodes.c) */
	struct terminal *terminals;		/* open terminals (daemon_terminal.c) */
	struct terminal_drain *terminal_drains; /* control sockets of ended terminals, detaching (daemon_terminal.c) */

	struct net_conn **subscribers;
	size_t nsubscribers, subscribers_alloc;
	uint64_t events_sent;

	/* limits (daemon_limits.c) */
	char caller[64]; /* who sent the message being handled: an IP address or "unix uid N"; "" between messages */
	struct refusals *refusals;	   /* refused calls of the current audit window */
	struct loop_timer *refusal_window; /* ends that window; NULL while none is open */
	struct origin_set *origins;	   /* the browser origins served (origin.h) */
	struct loop_timer *size_watch;
	unsigned long long db_bytes, wal_bytes; /* the database's files, as last measured */
	int db_size_alarm;			/* db_bytes is past daemon.db_size_alarm_mb */
	uint64_t db_alarm_logged_at;
};

/* A new random id (32 hex characters). */
char *daemon_new_id(void);
/* Seconds since the epoch. */
long long daemon_now(void);

/* Records an audit row; failures are logged loudly (never silently dropped). details (may be NULL) is
 * stolen, so `daemon_audit(…, json_pack(…))` reads well. */
void daemon_audit(struct daemon *d, const char *actor, const char *action, const char *target, const char *outcome,
		  json_t *details);

/* Groups the database writes of the current loop iteration (e.g. a burst of report_message lines
 * read at once) into one transaction, committed right after the callback that opened it. */
void daemon_write_batch(struct daemon *d);
/* Commits the open batch now (a no-op without one): before any reply leaves, so that an answer to a call
 * is never seen before the writes of the lines that came ahead of it are durable. */
void daemon_commit_write_batch(struct daemon *d);
/* The same, saying how it went: 0 when no batch was open or it committed; -1 when its commit failed, e then names
 * the cause for a caller (the disk full or failing, and what to do), and the batch's writes are rolled back. */
int daemon_commit_write_batch_or_why(struct daemon *d, struct err *e);
/* Notes that task_id's final status was just written: when it rides in an open batch whose commit then fails, the
 * task is rewritten as failed (its outcome was not stored) rather than left running (docs/recovery.md). */
void daemon_note_task_ending(struct daemon *d, const char *task_id);

#endif
