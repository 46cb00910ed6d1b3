/* daemon_tasks.h — the task queue: every executor (or admin) run is a task row, queued → running →
 * completed|failed|cancelled, its events sent to its creator (and whoever prompted it) and admins. Core layer
 * (daemon.h). */
#ifndef AGOR_DAEMON_TASKS_H
#define AGOR_DAEMON_TASKS_H

#include <jansson.h>
#include "adminops.h"
#include "daemon.h"
#include "err.h"

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
	const char *command;	    /* the executor command, e.g. "git.clone" */
	json_t *params;		    /* borrowed */
	json_t *env;		    /* borrowed; the payload's env (checked by the caller), or NULL */
	const char *session_id;	    /* NULL for tasks outside sessions */
	const char *created_by;	    /* agor user id */
	const char *prompted_by;    /* sessions.prompt by someone else (others_can prompt): they get its events too */
	const char *execution_user; /* Unix user the executor runs as (NULL: the daemon user) */
	const char *worktree_id;
	int with_token;	     /* issue a session token bound to this task (prompt tasks, gateway runs) */
	const char *task_id; /* NULL: a new id; else this id (one the caller made with daemon_new_id) */
	const char
		*egress_allow; /* entries added to execution.sandbox.egress_allow for this run (a session's), or NULL */
	/* Instead of an executor: `sudo -n <agor> admin … --json` for this call (adminops.h, built by the caller from
	 * its own config and database; command names it, e.g. "admin.create-worktree-group"). The task runs as root. */
	const struct admin_call *admin;
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
/* The executor of a running task was heard from (a remote prompt's heartbeat, context or permission request): with
 * execution.executor_daemon_url, a prompt silent for three heartbeats and a permission's wait is failed. */
void daemon_task_heard(struct daemon *d, const char *task_id);
/* Cancels every queued and running task (shutdown). */
void daemon_cancel_all(struct daemon *d);
/* Moves finished runs from the workers to the database (loop thread, after loop_wake). */
void daemon_collect_finished(struct daemon *d);
/* Tasks left `running`/`queued` by a previous process become failed: interrupted. Returns how many. */
int daemon_recover_tasks(struct daemon *d, struct err *e);
/* A batch of writes did not commit (failure says why): each task whose final status rode in it is rewritten failed,
 * naming why, rather than left running; what cannot be written yet is retried every second (docs/recovery.md). */
void daemon_tasks_batch_lost(struct daemon *d, const struct err *failure);
/* The same for one task whose final status could not be written (failure says why). */
void daemon_tasks_ending_lost(struct daemon *d, const char *task_id, const struct err *failure);
/* Drops the endings still waiting to be written (the daemon stops: its next start fails them as interrupted). */
void daemon_tasks_release_lost_endings(struct daemon *d);

#endif
