/* daemon.h — the trusted control plane's state and lifecycle (SPEC §4): AGOR_HOME and its secrets, the
 * database, the listeners, the task queue that runs executors, and the events pushed to subscribers.
 * Never executes untrusted code and never opens the data home: every git or file change is an executor
 * payload run through lib/spawn on a worker thread; the database is touched on the loop thread only.
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
	char *self_path;   /* this agor binary: what executors run */
	char *daemon_user; /* the Unix user the daemon runs as */
	uid_t uid;
	char *owner_id;	   /* the agor user mapped to the daemon's own uid */
	unsigned users_generation; /* bumped when a user's Unix mapping or role changes or a user goes */
	int stopping;
	int lock_fd;  /* run/daemon.lock, flocked for the daemon's lifetime */
	int ready_fd; /* when detached: the pipe to the waiting parent ("R" once serving), else -1 */

	struct task_run *queued;  /* waiting for a free executor slot (FIFO list) */
	struct task_run *running; /* executors in flight (list) */
	int nrunning;
	pthread_mutex_t done_lock;
	struct task_run *done; /* finished by workers, waiting for the loop thread */

	int write_batch_open; /* a transaction spanning this loop iteration's writes (daemon_write_batch) */
	struct verified_token *verified; /* executor tokens whose signature was checked (daemon_executor.c) */
	uint64_t auth_generation; /* bumped by every write to tokens or tasks: a remembered check is void */
	int saving_token_uses;	  /* writing the counted uses back: not a change of any token's state */
	struct report_line *report_line; /* report_scan's buffer, reused from line to line */

	struct node_state *nodes; /* paired nodes connected now and their runs (daemon_nodes.c) */
	struct terminal *terminals; /* open terminals (daemon_terminal.c) */

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

/* Everything up to the listeners: home, secrets, database, crash recovery. */
int daemon_init(struct daemon *d, struct config *cfg, struct err *e);
/* Opens the listeners and runs the loop until SIGTERM/SIGINT; SIGHUP reopens logs. */
int daemon_run(struct daemon *d, struct err *e);
void daemon_release(struct daemon *d);

/* A new random id (32 hex characters). */
char *daemon_new_id(void);
/* Seconds since the epoch. */
long long daemon_now(void);

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
void daemon_subscribe(struct daemon *d, struct net_conn *c);
void daemon_unsubscribe(struct daemon *d, struct net_conn *c);

/* Groups the database writes of the current loop iteration (e.g. a burst of report_message lines
 * read at once) into one transaction, committed right after the callback that opened it. */
void daemon_write_batch(struct daemon *d);
/* Commits the open batch now (a no-op without one): before any reply leaves, so that an answer to a call
 * is never seen before the writes of the lines that came ahead of it are durable. */
void daemon_commit_write_batch(struct daemon *d);
/* Writes the remembered tokens' counted uses back and frees them (daemon_release, before db_close). */
void daemon_forget_verified_tokens(struct daemon *d);
/* Watches the database for writes to tokens and tasks (and rollbacks): each bumps d->auth_generation. */
void daemon_watch_auth_state(struct daemon *d);
/* Adds the executor calls counted in memory to tokens.uses (before a batch of writes commits). */
void daemon_save_token_uses(struct daemon *d);
/* Handles line when it is a report_message notification that report_scan reads (the common case of an
 * executor's stream): the same checks, audit, row and event as the JSON-RPC method, nothing to answer.
 * 0 when the line must go through the full JSON-RPC path instead. */
int daemon_report_message_line(struct daemon *d, const char *line, size_t len);
/* Frees the in-memory state of paired nodes (daemon_nodes.c; daemon_release). */
void daemon_nodes_release(struct daemon *d);

/* Records an audit row; failures are logged loudly (never silently dropped). details (may be NULL) is
 * stolen, so `daemon_audit(…, json_pack(…))` reads well. */
void daemon_audit(struct daemon *d, const char *actor, const char *action, const char *target, const char *outcome,
		  json_t *details);

/*
 * Limits (daemon_limits.c; docs/security.md section 9).
 * daemon_audit_refusal: the audit row of a refused call (outcome "refused"), through the refusal window of
 *   refusals.h so that a flood costs a few rows: the first refusal of a kind — the same caller (d->caller), actor,
 *   action, target and details — in daemon.audit_refusals_window_ms is written at once with details.peer = the
 *   caller; its repeats become one row with details.repeated = their number when the window ends; past
 *   daemon.audit_refusals_max kinds in a window, refusals are only counted, into one audit.refusals_suppressed row
 *   {count, by_action}. details (may be NULL) is stolen.
 * daemon_flush_refusals: writes the counted rows now and ends the window (before the audit is read, at shutdown).
 * daemon_plan_descriptors: raises RLIMIT_NOFILE for daemon.max_connections + daemon.fd_reserve (fdlimit.h) and fills
 *   the TCP caps of the listener's config; when the hard limit is too low, serves fewer TCP connections and logs it.
 * daemon_watch_db_size: measures the database and its WAL now and every few seconds; past daemon.db_size_alarm_mb
 *   the alarm is set and logged (again at most once an hour while it lasts).
 */
void daemon_audit_refusal(struct daemon *d, const char *actor, const char *action, const char *target, json_t *details);
void daemon_flush_refusals(struct daemon *d);
int daemon_plan_descriptors(struct daemon *d, struct net_server_config *sc, struct err *e);
void daemon_watch_db_size(struct daemon *d);
/* The browser origins (origin.h) once the TCP port is known; 1 when the Origin header value may call. */
void daemon_set_origins(struct daemon *d, int tcp_port);
int daemon_origin_allowed(const struct daemon *d, const char *origin);
/* Frees what the limits hold (daemon_release, after daemon_flush_refusals). */
void daemon_limits_release(struct daemon *d);

/*
 * Tasks: every executor run is a task row (queued → running → completed|failed|cancelled).
 * daemon_task_submit() stores the task and starts it when fewer than max_executors run; `payload` is the
 * executor payload without asUser/dataHome (the daemon fills them). judge (may be NULL) decides whether
 * a run the executor reports as successful still fails the task (returns -1 with the reason in why):
 * the task is then failed and keeps its result. on_done runs on the loop thread with the executor's
 * result and/or an error after the task row is updated; it may be NULL.
 */
typedef int (*task_judge_fn)(const json_t *data, struct err *why);
typedef void (*task_done_fn)(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
			     void *arg);
/* A line of progress the task's executor printed on stderr (loop thread; line is untrusted text). */
typedef void (*task_progress_fn)(struct daemon *d, const char *task_id, const char *line, void *arg);
struct task_spec {
	const char *command;	  /* the executor command, e.g. "git.clone" */
	json_t *params;		  /* borrowed */
	json_t *env;		  /* borrowed; the payload's env (checked by the caller), or NULL */
	const char *session_id;	  /* NULL for tasks outside sessions */
	const char *created_by;	  /* agor user id */
	const char *prompted_by;  /* sessions.prompt by someone else (others_can prompt): they get its events too */
	const char *execution_user; /* Unix user the executor runs as (NULL: the daemon user) */
	const char *worktree_id;
	int with_token; /* issue a session token bound to this task (prompt tasks, gateway runs) */
	const char *task_id; /* NULL: a new id; else this id (one the caller made with daemon_new_id) */
	/* Instead of an executor: `sudo -n <agor> admin ARGS… --json` (NULL-terminated, validated by the
	 * caller; command names it, e.g. "admin.set-worktree-permissions"). The task runs as root. */
	const char *const *admin_args;
	task_judge_fn judge;
	task_done_fn on_done;
	task_progress_fn on_progress; /* NULL: the executor's stderr is only kept for errors */
	void *arg;
};
int daemon_task_submit(struct daemon *d, const struct task_spec *spec, char **task_id, struct err *e);
int daemon_task_cancel(struct daemon *d, const char *task_id, struct err *e);
/* The id of a queued or running exec.run or prompt task in worktree_id (borrowed), or NULL: what a worktree's
 * removal must not pull the directory from under. */
const char *daemon_worktree_busy(const struct daemon *d, const char *worktree_id);
/* Sends a task's event to its creator and, for a live task prompted by someone else, to them too (and
 * admins): data is stolen. */
void daemon_task_event(struct daemon *d, const char *task_id, const char *created_by, const char *type, json_t *data);
/* report_message's event (daemon_broadcast_message) for the same audience as daemon_task_event. */
/* A refusal the executor's egress proxy reports while the run lives (report_egress): audited and announced now. */
void daemon_egress_refused_live(struct daemon *d, const char *task_id, const char *actor, const char *created_by,
				json_t *one);
void daemon_task_message(struct daemon *d, const char *task_id, const char *created_by, const char *session_id,
			 const char *message_type, const char *data_text);
/* Cancels every queued and running task (shutdown). */
void daemon_cancel_all(struct daemon *d);
/* Moves finished runs from the workers to the database (loop thread, after loop_wake). */
void daemon_collect_finished(struct daemon *d);
/* Tasks left `running`/`queued` by a previous process become failed: interrupted. Returns how many. */
int daemon_recover_tasks(struct daemon *d, struct err *e);

#endif
