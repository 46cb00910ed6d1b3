/* daemon_tasks.c — the task queue (daemon_tasks.h): every executor or admin run is a task row, started on a worker
 * thread when a slot is free, collected on the loop thread. Never runs an executor on the loop thread and never
 * touches the database from a worker thread. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "daemon_peer.h"
#include "daemon_taskauth.h"
#include "daemon_tasks.h"
#include "egress_allow.h"
#include "fsutil.h"
#include "fault.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "spawn.h"
#include "strvec.h"
#include "token.h"
#include "banned.h"

struct task_run {
	struct task_run *next;	    /* in d->queued or d->running (loop thread only) */
	struct task_run *done_next; /* in d->done (under d->done_lock): never next, which the loop may be walking */
	struct daemon *d;
	char *task_id;
	struct spawn_request req;
	char *payload;
	char *template;
	char *unix_user, *command, *session_id, *worktree_id;
	struct strvec admin_args; /* non-empty: the task runs agor admin, not an executor */
	char *created_by;	  /* the agor user whose task it is: its events go to them (and admins) only */
	char *prompted_by;	  /* …and to whoever prompted it, when not created_by (kept in memory only) */
	task_judge_fn judge;
	task_done_fn on_done;
	task_progress_fn on_progress;
	void *arg;
	pthread_t thread;
	/* progress: the worker assembles stderr lines in line[]; the newest complete one waits in progress
	 * (under d->done_lock) until the loop thread hands it to on_progress */
	char line[160];
	size_t line_len;
	char *progress;
	int cancelled;
	pid_t pid;
	/* a remote executor's prompt: when the daemon last heard from it, and the watch that fails it when it goes
	 * silent (its link or its host lost while the local end, e.g. kubectl, lives on) */
	uint64_t heard_at;
	struct loop_timer *watch;
	char *lost; /* why the watch ended it, or NULL */
	/* results, written by the worker */
	struct spawn_result res;
	struct err error;
	int failed;
};

/* Each task the previous daemon left queued or running, named in the log with what finishes its work: a clone or
 * worktree add retried takes what the interrupted one made, a removal is finished at start (docs/recovery.md). */
static json_t *report_interrupted(struct daemon *d, struct err *e)
{
	json_t *rows = db_query_json(d->db, e,
				     "SELECT id, command, status FROM tasks WHERE status IN ('queued','running') "
				     "ORDER BY created_at",
				     "");
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
	{
		const char *command = json_get_str(row, "command");
		log_warn("task %s (%s, %s) was interrupted by the previous daemon's end%s", json_get_str(row, "id"),
			 command, json_get_str(row, "status"),
			 !strcmp(command, "git.clone") || !strcmp(command, "git.worktree.add")
				 ? ": retry it, the retry takes what it made"
			 : !strcmp(command, "git.worktree.remove") ? ": its removal is finished now"
								   : "");
	}
	return rows;
}

int daemon_recover_tasks(struct daemon *d, struct err *e)
{
	_cleanup_json_ json_t *interrupted = report_interrupted(d, e);
	if (!interrupted)
		return -1;
	int n = db_run(
		d->db, e,
		"UPDATE tasks SET status = 'failed', error = ?, finished_at = ? WHERE status IN ('queued','running')",
		"si", "{\"code\":\"CANCELLED\",\"message\":\"interrupted: the daemon stopped while the task ran\"}",
		daemon_now());
	if (n > 0) {
		log_warn("%d task(s) interrupted by the previous daemon's end are now failed", n);
		db_run(d->db, e,
		       "UPDATE tokens SET revoked_at = ? WHERE revoked_at IS NULL AND task_id IN "
		       "(SELECT id FROM tasks WHERE status = 'failed')",
		       "i", daemon_now());
		daemon_audit(d, "daemon", "tasks.recover", NULL, "ok",
			     json_pack("{s:i,s:O}", "interrupted", n, "tasks", interrupted));
	}
	return n < 0 ? -1 : n;
}

/* --- endings a failed commit lost ----------------------------------------------------------- */

/* Rewrites one task whose final status was in a batch that did not commit as failed, naming why (its outcome, and
 * maybe its last messages, are not stored), in a transaction of its own; its tokens are revoked, it is audited and
 * its audience told. entry: "TASK_ID WHY". -1 when that write fails too (the disk is still full). */
static int rewrite_lost_ending(struct daemon *d, const char *entry)
{
	_cleanup_free_ char *task_id = xstrndup(entry, strcspn(entry, " "));
	const char *why = entry + strlen(task_id) + (entry[strlen(task_id)] ? 1 : 0);
	struct err e = ERR_INIT;
	_cleanup_json_ json_t *error = json_pack("{s:s,s:s}", "code", E_SYSTEM, "message", why);
	_cleanup_free_ char *error_text = json_to_compact(error);
	_cleanup_json_ json_t *row = NULL;
	long long now = daemon_now();
	int rc = db_begin(d->db, &e);
	if (rc == 0)
		row = db_query_one(d->db, &e,
				   "SELECT command, created_by FROM tasks WHERE id = ? AND status IN "
				   "('queued','running')",
				   "s", task_id);
	if (rc < 0 || !row ||
	    db_run(d->db, &e,
		   "UPDATE tasks SET status = 'failed', error = ?, finished_at = ? WHERE id = ? AND status IN "
		   "('queued','running')",
		   "sis", error_text, now, task_id) < 0 ||
	    db_run(d->db, &e, "UPDATE tokens SET revoked_at = ? WHERE task_id = ? AND revoked_at IS NULL", "is", now,
		   task_id) < 0 ||
	    db_commit(d->db, &e) < 0) {
		log_error("task %s: its lost ending cannot be written yet (retried every second): %s", task_id,
			  e.message);
		err_clear(&e);
		db_rollback(d->db);
		return -1;
	}
	if (json_is_null(row)) /* its row was in the lost batch too, or it was already settled */
		return 0;
	log_warn("task %s ended but its outcome was not stored: now failed (%s)", task_id, why);
	daemon_audit(d, "daemon", "task.outcome_lost", task_id, "failed", json_pack("{s:s}", "reason", why));
	daemon_broadcast_to(d, json_get_str(row, "created_by"), "task.updated",
			    json_pack("{s:s,s:s,s:s,s:O}", "id", task_id, "status", "failed", "command",
				      json_get_str(row, "command"), "error", error));
	return 0;
}

static void retry_lost_endings(struct loop *l, void *arg);

/* Writes the lost endings that can be now; the rest are retried in a second (never while a batch is open: they would
 * ride in it). */
static void settle_lost_endings(struct daemon *d)
{
	struct strvec left = STRVEC_INIT;
	for (size_t i = 0; i < d->lost_endings.nr; i++)
		if (d->write_batch_open || rewrite_lost_ending(d, d->lost_endings.v[i]) < 0)
			strvec_push(&left, d->lost_endings.v[i]);
	strvec_clear(&d->lost_endings);
	d->lost_endings = left;
	if (d->lost_endings.nr && !d->lost_endings_retry)
		d->lost_endings_retry = loop_timer_add(d->loop, 1000, retry_lost_endings, d);
}

static void retry_lost_endings(struct loop *l, void *arg)
{
	(void)l;
	struct daemon *d = arg;
	d->lost_endings_retry = NULL; /* the loop frees a timer once it fired */
	settle_lost_endings(d);
}

void daemon_tasks_ending_lost(struct daemon *d, const char *task_id, const struct err *failure)
{
	log_error("task %s: its final status was not written: %s", task_id, failure->message);
	strvec_pushf(&d->lost_endings, "%s its outcome was not stored: %s", task_id, failure->message);
	settle_lost_endings(d);
}

void daemon_tasks_batch_lost(struct daemon *d, const struct err *failure)
{
	for (size_t i = 0; i < d->batch_endings.nr; i++)
		strvec_pushf(&d->lost_endings, "%s its outcome was not stored: %s", d->batch_endings.v[i],
			     failure->message);
	settle_lost_endings(d);
}

void daemon_tasks_release_lost_endings(struct daemon *d)
{
	if (d->lost_endings_retry)
		loop_timer_cancel(d->loop, d->lost_endings_retry);
	d->lost_endings_retry = NULL;
	strvec_clear(&d->lost_endings);
	strvec_clear(&d->batch_endings);
}

/* --- tasks ------------------------------------------------------------------------------- */

static void task_run_free(struct task_run *t)
{
	spawn_result_release(&t->res);
	err_clear(&t->error);
	if (t->payload)
		explicit_bzero(t->payload, strlen(t->payload));
	if (t->template)
		explicit_bzero(t->template, strlen(t->template));
	free(t->payload);
	free(t->template);
	free(t->unix_user);
	free(t->created_by);
	free(t->prompted_by);
	free(t->command);
	free(t->session_id);
	free(t->worktree_id);
	free(t->task_id);
	strvec_clear(&t->admin_args);
	free(t->progress);
	free(t->lost);
	if (t->watch)
		loop_timer_cancel(t->d->loop, t->watch);
	free(t);
}

static void remember_pid(pid_t pid, void *arg)
{
	__atomic_store_n(&((struct task_run *)arg)->pid, pid, __ATOMIC_RELEASE);
}

/* A task's own event: to its creator, whoever prompted it (when someone else did) and admins. */
static void task_event(struct daemon *d, const struct task_run *t, const char *type, json_t *data)
{
	daemon_broadcast_to2(d, t->created_by, t->prompted_by, type, data);
}

static void *task_worker(void *arg)
{
	struct task_run *t = arg;
	t->failed = spawn_executor(&t->req, &t->res, &t->error) < 0;
	pthread_mutex_lock(&t->d->done_lock);
	t->done_next = t->d->done;
	t->d->done = t;
	pthread_mutex_unlock(&t->d->done_lock);
	loop_wake(t->d->loop);
	return NULL;
}

/* Worker thread: the executor's stderr, cut into lines (\n or \r); printable ASCII only, at most
 * sizeof(line) - 1 bytes of each, the newest kept for the loop thread. Executors are untrusted: their
 * lines are only ever relayed as text to the task's own caller. */
static void take_stderr(const char *data, size_t len, void *arg)
{
	struct task_run *t = arg;
	for (size_t i = 0; i < len; i++) {
		char ch = data[i];
		if (ch != '\n' && ch != '\r') {
			if (t->line_len < sizeof(t->line) - 1 && ch >= 0x20 && ch < 0x7f)
				t->line[t->line_len++] = ch;
			continue;
		}
		if (!t->line_len)
			continue;
		char *line = xstrndup(t->line, t->line_len);
		t->line_len = 0;
		pthread_mutex_lock(&t->d->done_lock);
		free(t->progress);
		t->progress = line;
		pthread_mutex_unlock(&t->d->done_lock);
		loop_wake(t->d->loop);
	}
}

/* Loop thread: hands each running task's newest progress line to its on_progress. */
static void relay_progress(struct daemon *d)
{
	for (struct task_run *t = d->running; t; t = t->next) {
		if (!t->on_progress)
			continue;
		pthread_mutex_lock(&d->done_lock);
		char *line = t->progress;
		t->progress = NULL;
		pthread_mutex_unlock(&d->done_lock);
		if (line)
			t->on_progress(d, t->task_id, line, t->arg);
		free(line);
	}
}

/* The daemon's policy, its egress allowlist extended by extra (a session's additions, checked when added). */
static json_t *policy_with_egress(const struct config *cfg, const char *extra)
{
	json_t *policy = config_execution_policy(cfg);
	if (!extra || !*extra)
		return policy;
	const char *mine = json_get_str(policy, EGRESS_ALLOW_KEY);
	json_object_set_new(policy, EGRESS_ALLOW_KEY,
			    mine && *mine ? json_sprintf("%s, %s", mine, extra) : json_string(extra));
	return policy;
}

/* Where the executor calls back: the Unix socket, or execution.executor_daemon_url with what verifies it. */
static void add_daemon_url(struct daemon *d, json_t *p)
{
	const struct config *cfg = d->cfg;
	if (!cfg->execution.executor_daemon_url) {
		json_object_set_new(p, "daemonUrl", json_sprintf("unix:%s", cfg->daemon.socket_path));
		return;
	}
	json_object_set_new(p, "daemonUrl", json_string(cfg->execution.executor_daemon_url));
	if (d->executor_daemon_ca_pem)
		json_object_set_new(p, "daemonCa", json_string(d->executor_daemon_ca_pem));
	if (cfg->execution.executor_daemon_fingerprint)
		json_object_set_new(p, "daemonFingerprint", json_string(cfg->execution.executor_daemon_fingerprint));
}

/* Every payload carries the daemon's execution policy: the executor, whoever it runs as, applies it over its
 * own config, which may only tighten it (config.h). */
static char *build_payload(struct daemon *d, const char *command, json_t *params, json_t *env,
			   const char *execution_user, const char *token, const char *egress_extra)
{
	json_t *p = json_pack("{s:s,s:O,s:s,s:o}", "command", command, "params", params, "dataHome", d->paths.data_home,
			      "policy", policy_with_egress(d->cfg, egress_extra));
	if (env)
		json_object_set(p, "env", env);
	if (execution_user && strcmp(execution_user, d->daemon_user))
		json_object_set_new(p, "asUser", json_string(execution_user));
	if (token) {
		json_object_set_new(p, "sessionToken", json_string(token));
		add_daemon_url(d, p);
	}
	if (d->cfg->execution.executor_daemon_url) /* the executor checks it sees this data home, or tells its id */
		json_object_set_new(p, "dataHomeId",
				    json_string(d->data_home_id ? d->data_home_id : PATHS_DATA_HOME_ID_ASK));
	char *s = json_to_compact(p);
	json_decref(p);
	return s;
}

/* How long a remote prompt may be silent: three heartbeats, and a permission's whole wait (the executor sends nothing
 * while it waits for the answer). */
static uint64_t silence_limit_ms(const struct config *cfg)
{
	return (uint64_t)(3 * cfg->execution.executor_heartbeat_ms + cfg->execution.permission_timeout_ms);
}

static void watch_remote(struct loop *l, void *arg);

/* A remote executor that heartbeats: a prompt, and a tmux.attach relaying its terminal (terminal_stream.h). */
static int heartbeats(const struct config *cfg, const char *command)
{
	return cfg->execution.executor_daemon_url && (!strcmp(command, "prompt") || !strcmp(command, "tmux.attach"));
}

static void arm_watch(struct task_run *t, uint64_t delay_ms)
{
	t->watch = loop_timer_add(t->d->loop, delay_ms, watch_remote, t);
}

/* The executor went silent past the limit: its local end is killed (SIGKILL: the remote side cannot be reached to
 * stop gracefully) and the task fails naming the silence. */
static void watch_remote(struct loop *l, void *arg)
{
	(void)l;
	struct task_run *t = arg;
	t->watch = NULL; /* the loop frees a timer once it fired */
	uint64_t limit = silence_limit_ms(t->d->cfg), now = loop_now_ms();
	if (now < t->heard_at + limit) {
		arm_watch(t, t->heard_at + limit - now);
		return;
	}
	t->lost = xasprintf(
		"the remote executor went silent: nothing heard for %llu ms (three of "
		"execution.executor_heartbeat_ms and execution.permission_timeout_ms); its link or host is lost",
		(unsigned long long)(now - t->heard_at));
	log_warn("task %s: %s", t->task_id, t->lost);
	pid_t pid = __atomic_load_n(&t->pid, __ATOMIC_ACQUIRE);
	if (pid > 0)
		kill(-pid, SIGKILL);
}

void daemon_task_heard(struct daemon *d, const char *task_id)
{
	for (struct task_run *t = d->running; t; t = t->next)
		if (!strcmp(t->task_id, task_id))
			t->heard_at = loop_now_ms();
}

static int start_worker(struct daemon *d, struct task_run *t, struct err *e)
{
	const struct config *cfg = d->cfg;
	t->req = (struct spawn_request){
		.mode = cfg->execution.executor_command_template ? SPAWN_TEMPLATE : SPAWN_LOCAL,
		.agor_path = d->self_path,
		.template = t->template,
		.unix_user = t->unix_user,
		.payload = t->payload,
		.payload_len = strlen(t->payload),
		.command = t->command,
		.task_id = t->task_id,
		.session_id = t->session_id,
		.worktree_id = t->worktree_id,
		.daemon_url = cfg->execution.executor_daemon_url, /* {daemon_url}: a remote executor's callback */
		/* a relayed terminal lives as long as someone uses it: its heartbeats, not a clock, end it */
		.timeout_ms = cfg->execution.executor_daemon_url && !strcmp(t->command, "tmux.attach")
				      ? 0
				      : (int)cfg->execution.timeout_ms,
		.on_started = remember_pid,
		.on_started_arg = t,
	};
	if (t->on_progress) {
		t->req.on_stderr = take_stderr;
		t->req.on_stderr_arg = t;
	}
	if (t->admin_args.nr) {
		t->req.mode = SPAWN_ADMIN;
		t->req.admin_args = (const char *const *)t->admin_args.v;
		t->req.admin_socket = cfg->execution.privileged_socket;
		t->req.payload = "";
		t->req.payload_len = 0;
	}
	if (db_run(d->db, e, "UPDATE tasks SET status = 'running', started_at = ? WHERE id = ?", "is", daemon_now(),
		   t->task_id) < 0)
		return -1;
	fault_step("task.running");
	if (pthread_create(&t->thread, NULL, task_worker, t) != 0)
		return err_set(e, E_INTERNAL, "cannot start a worker thread");
	t->next = d->running;
	d->running = t;
	d->nrunning++;
	if (heartbeats(cfg, t->command)) {
		t->heard_at = loop_now_ms();
		arm_watch(t, silence_limit_ms(cfg));
	}
	task_event(d, t, "task.updated",
		   json_pack("{s:s,s:s,s:s}", "id", t->task_id, "status", "running", "command", t->command));
	return 0;
}

static void start_queued(struct daemon *d)
{
	while (d->queued && d->nrunning < d->cfg->execution.executor_pool.max_executors && !d->stopping) {
		struct task_run *t = d->queued;
		d->queued = t->next;
		struct err e = ERR_INIT;
		if (start_worker(d, t, &e) < 0) {
			log_error("task %s: %s", t->task_id, e.message);
			t->failed = 1;
			t->error = e;
			pthread_mutex_lock(&d->done_lock);
			t->done_next = d->done;
			d->done = t;
			pthread_mutex_unlock(&d->done_lock);
			loop_wake(d->loop);
		}
	}
}

/* A session token bound to task_id, recorded (jti, expiry) so it can be revoked and counted. */
static int issue_task_token(struct daemon *d, const char *task_id, const struct task_spec *s, char **jwt, struct err *e)
{
	/* a task outside any session (a clone) is its own "session" in the claims */
	const char *sid = s->session_id ? s->session_id : task_id;
	struct token_claims in = { .sub = (char *)s->created_by, .sid = (char *)sid, .tid = (char *)task_id };
	struct token_claims issued = TOKEN_CLAIMS_INIT;
	long long ttl = d->cfg->execution.session_tokens.expiration_ms / 1000;
	if (token_issue_for(TOKEN_AUD_EXECUTOR, d->jwt_secret, sizeof(d->jwt_secret), &in, ttl > 0 ? ttl : 1, jwt,
			    &issued, e) < 0)
		return -1;
	int rc = db_run(
		d->db, e,
		"INSERT INTO tokens (jti, task_id, session_id, user_id, issued_at, expires_at) VALUES (?,?,?,?,?,?)",
		"ssssii", issued.jti, task_id, s->session_id, s->created_by, issued.iat, issued.exp);
	token_claims_release(&issued);
	return rc < 0 ? -1 : 0;
}

int daemon_task_submit(struct daemon *d, const struct task_spec *s, char **task_id, struct err *e)
{
	if (d->stopping)
		return err_set(e, E_CANCELLED, "the daemon is shutting down");
	struct task_run *t = xcalloc(1, sizeof(*t));
	strvec_init(&t->admin_args);
	t->d = d;
	t->task_id = s->task_id ? xstrdup(s->task_id) : daemon_new_id();
	t->command = xstrdup(s->command);
	_cleanup_free_ char *token = NULL;
	t->template = d->cfg->execution.executor_command_template ? xstrdup(d->cfg->execution.executor_command_template)
								  : NULL;
	if (s->admin)
		adminops_argv(s->admin, &t->admin_args);
	t->unix_user = xstrdup(s->admin ? "root" : s->execution_user ? s->execution_user : d->daemon_user);
	t->session_id = s->session_id ? xstrdup(s->session_id) : NULL;
	t->worktree_id = s->worktree_id ? xstrdup(s->worktree_id) : NULL;
	t->created_by = s->created_by ? xstrdup(s->created_by) : NULL;
	t->prompted_by = s->prompted_by && (!s->created_by || strcmp(s->prompted_by, s->created_by))
				 ? xstrdup(s->prompted_by)
				 : NULL;
	t->judge = s->judge;
	t->on_done = s->on_done;
	t->on_progress = s->on_progress;
	t->arg = s->arg;
	const char *prompt = json_string_value(json_object_get(s->params, "prompt"));
	if (db_run(d->db, e,
		   "INSERT INTO tasks (id, session_id, command, status, prompt, created_by, execution_user, created_at)"
		   " VALUES (?,?,?, 'queued', ?,?,?,?)",
		   "ssssssi", t->task_id, s->session_id, s->command, prompt, s->created_by, t->unix_user,
		   daemon_now()) < 0 ||
	    (s->with_token && issue_task_token(d, t->task_id, s, &token, e) < 0)) {
		task_run_free(t);
		return -1;
	}
	fault_step("task.recorded");
	json_t *params = json_deep_copy(s->params);
	if (s->with_token && !strcmp(s->command, "prompt")) /* the prompt payload names its task */
		json_object_set_new(params, "taskId", json_string(t->task_id));
	t->payload = build_payload(d, s->command, params, s->env, s->execution_user, token, s->egress_allow);
	json_decref(params);
	if (token)
		explicit_bzero(token, strlen(token));
	*task_id = xstrdup(t->task_id);
	struct task_run **tail = &d->queued;
	while (*tail)
		tail = &(*tail)->next;
	*tail = t;
	start_queued(d);
	return 0;
}

/* The error a finished run ends with, or NULL when it succeeded. */
static const struct err *run_error(struct task_run *t, struct err *scratch)
{
	if (t->lost) {
		err_set(scratch, E_EXEC_FAILED, "%s", t->lost);
		return scratch;
	}
	if (t->cancelled) {
		err_set(scratch, E_CANCELLED, "cancelled");
		return scratch;
	}
	if (t->failed)
		return &t->error;
	json_t *r = t->res.result;
	if (json_is_true(json_object_get(r, "success")))
		return NULL;
	json_t *eo = json_object_get(r, "error");
	const char *message = json_string_value(json_object_get(eo, "message"));
	err_setd(scratch, err_code_intern(json_string_value(json_object_get(eo, "code"))),
		 json_incref(json_object_get(eo, "details")), "%s", message ? message : "the executor failed");
	return scratch;
}

/* The worktree's git metadata the executor found changed after the run and put back (gitlayout.h): audited, and an
 * event for the task's audience. Its place: data.gitMetadata, or error.details.gitMetadata of a failed prompt. */
static void report_git_repairs(struct daemon *d, struct task_run *t)
{
	json_t *r = t->res.result;
	json_t *gm = json_object_get(json_object_get(r, "data"), "gitMetadata");
	if (!gm)
		gm = json_object_get(json_object_get(json_object_get(r, "error"), "details"), "gitMetadata");
	json_t *repaired = json_object_get(gm, "repaired");
	if (!json_is_array(repaired) || !json_array_size(repaired))
		return;
	log_warn("task %s: the worktree's git metadata was changed during the run and has been put back", t->task_id);
	daemon_audit(d, t->unix_user, "git.metadata.repaired", t->task_id, "repaired",
		     json_pack("{s:O}", "repaired", repaired));
	task_event(d, t, "task.git_metadata_repaired", json_pack("{s:s,s:O}", "id", t->task_id, "repaired", repaired));
}

/* One refusal of a run's egress proxy: an audit row and a task.egress_refused event for the task's audience. */
static void daemon_egress_refused(struct daemon *d, const char *task_id, const char *actor, const char *created_by,
				  const char *prompted_by, json_t *one)
{
	const char *host = json_string_value(json_object_get(one, "host"));
	const char *reason = json_string_value(json_object_get(one, "reason"));
	json_t *port = json_object_get(one, "port"), *count = json_object_get(one, "count");
	if (!host || !reason || !json_is_integer(port) || strlen(host) > 255 || strlen(reason) > 32)
		return;
	json_t *what = json_pack("{s:s,s:O,s:s,s:O*}", "host", host, "port", port, "reason", reason, "count", count);
	daemon_audit(d, actor, "egress.refused", task_id, reason, json_incref(what));
	json_object_set_new(what, "id", json_string(task_id));
	daemon_broadcast_to2(d, created_by, prompted_by, "task.egress_refused", what);
}

/* The connections the run's egress proxy refused (egress.h): one audit row and one task.egress_refused event each
 * (identical refusals come counted), unless the executor reported it while the run lived ("reported").
 * Their place: data.egress, or error.details.egress of a failed prompt. */
static void report_egress_refusals(struct daemon *d, struct task_run *t)
{
	json_t *r = t->res.result;
	json_t *eg = json_object_get(json_object_get(r, "data"), "egress");
	if (!eg)
		eg = json_object_get(json_object_get(json_object_get(r, "error"), "details"), "egress");
	json_t *refused = json_object_get(eg, "refused"), *one;
	size_t i;
	if (!json_is_array(refused))
		return;
	json_array_foreach(refused, i, one)
	{
		if (!json_is_true(json_object_get(one, "reported")))
			daemon_egress_refused(d, t->task_id, t->unix_user, t->created_by, t->prompted_by, one);
	}
	json_int_t dropped = json_integer_value(json_object_get(eg, "dropped"));
	if (dropped > 0)
		log_warn("task %s: %lld more refused connections were only counted", t->task_id, (long long)dropped);
}

/* The first remote executor to tell the data home's id (paths.h) teaches it to the daemon, kept in AGOR_HOME. */
static void learn_data_home_id(struct daemon *d, const json_t *data)
{
	const char *id = json_get_str(data, "dataHomeId");
	if (d->data_home_id || !d->cfg->execution.executor_daemon_url || !paths_is_data_home_id(id))
		return;
	_cleanup_free_ char *path = xasprintf("%s/data-home-id", d->paths.home);
	struct err e = ERR_INIT;
	if (fs_write_file_atomic(path, id, strlen(id), 0600, &e) < 0) {
		log_warn("the data home's id is not kept: %s", e.message);
		err_clear(&e);
		return;
	}
	d->data_home_id = xstrdup(id);
	log_info("the data home %s has id %s: remote executors must see it at that path", d->paths.data_home, id);
}

static void finish_run(struct daemon *d, struct task_run *t)
{
	pthread_join(t->thread, NULL);
	daemon_write_batch(d); /* the ending is whole or not at all: status, tokens, audit, on_done's rows */
	fault_step("task.ended");
	struct err scratch = ERR_INIT, e = ERR_INIT;
	const struct err *failure = run_error(t, &scratch);
	json_t *data = failure ? NULL : json_object_get(t->res.result, "data");
	if (!failure && t->judge && t->judge(data, &scratch) < 0)
		failure = &scratch; /* the run happened: its result is kept beside the reason */
	const char *status = !failure ? "completed" : t->cancelled ? "cancelled" : "failed";
	_cleanup_free_ char *result_text = data ? json_to_compact(data) : NULL;
	json_t *err_json = failure ? err_to_json(failure) : NULL;
	_cleanup_free_ char *error_text = err_json ? json_to_compact(err_json) : NULL;
	if (db_run(d->db, &e, "UPDATE tasks SET status = ?, result = ?, error = ?, finished_at = ? WHERE id = ?",
		   "sssis", status, result_text, error_text, daemon_now(), t->task_id) < 0)
		daemon_tasks_ending_lost(d, t->task_id, &e);
	daemon_note_task_ending(d, t->task_id);
	err_clear(&e);
	db_run(d->db, &e, "UPDATE tokens SET revoked_at = ? WHERE task_id = ? AND revoked_at IS NULL", "is",
	       daemon_now(), t->task_id);
	daemon_audit(d, t->unix_user, t->command, t->task_id, status,
		     json_pack("{s:i,s:O?}", "exitStatus", t->res.exit_status, "error", err_json));
	report_git_repairs(d, t);
	report_egress_refusals(d, t);
	if (data)
		learn_data_home_id(d, data);
	fault_step("task.recorded-result");
	if (t->on_done)
		t->on_done(d, t->task_id, data, failure, t->arg);
	fault_step("task.done");
	json_t *event = json_pack("{s:s,s:s,s:s}", "id", t->task_id, "status", status, "command", t->command);
	if (err_json)
		json_object_set(event, "error", err_json);
	task_event(d, t, "task.updated", event);
	if (err_json)
		json_decref(err_json);
	err_clear(&scratch);
	err_clear(&e);
}

void daemon_collect_finished(struct daemon *d)
{
	relay_progress(d);
	pthread_mutex_lock(&d->done_lock);
	struct task_run *done = d->done;
	d->done = NULL;
	pthread_mutex_unlock(&d->done_lock);
	while (done) {
		struct task_run *t = done;
		done = t->done_next;
		for (struct task_run **p = &d->running; *p; p = &(*p)->next)
			if (*p == t) {
				*p = t->next;
				d->nrunning--;
				break;
			}
		finish_run(d, t);
		task_run_free(t);
	}
	start_queued(d);
}

static struct task_run *find_live_task(struct daemon *d, const char *task_id)
{
	struct task_run *lists[] = { d->queued, d->running };
	for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
		for (struct task_run *t = lists[i]; t; t = t->next)
			if (!strcmp(t->task_id, task_id))
				return t;
	return NULL;
}

void daemon_egress_refused_live(struct daemon *d, const char *task_id, const char *actor, const char *created_by,
				json_t *one)
{
	struct task_run *t = find_live_task(d, task_id);
	daemon_egress_refused(d, task_id, actor, created_by, t ? t->prompted_by : NULL, one);
}

void daemon_task_message(struct daemon *d, const char *task_id, const char *created_by, const char *session_id,
			 const char *message_type, const char *data_text)
{
	struct task_run *t = find_live_task(d, task_id);
	daemon_broadcast_message(d, created_by, t ? t->prompted_by : NULL, task_id, session_id, message_type,
				 data_text);
}

static const char *busy_in(const struct task_run *list, const char *worktree_id)
{
	for (const struct task_run *t = list; t; t = t->next)
		if (t->worktree_id && !strcmp(t->worktree_id, worktree_id) && t->command &&
		    (!strcmp(t->command, "exec.run") || !strcmp(t->command, "prompt")))
			return t->task_id;
	return NULL;
}

const char *daemon_worktree_busy(const struct daemon *d, const char *worktree_id)
{
	const char *id = busy_in(d->running, worktree_id);
	return id ? id : busy_in(d->queued, worktree_id);
}

int daemon_task_cancel(struct daemon *d, const char *task_id, struct err *e)
{
	for (struct task_run **p = &d->queued; *p; p = &(*p)->next)
		if (!strcmp((*p)->task_id, task_id)) {
			struct task_run *t = *p;
			*p = t->next;
			t->cancelled = 1;
			pthread_mutex_lock(&d->done_lock);
			t->done_next = d->done;
			d->done = t;
			pthread_mutex_unlock(&d->done_lock);
			loop_wake(d->loop);
			return 0;
		}
	for (struct task_run *t = d->running; t; t = t->next)
		if (!strcmp(t->task_id, task_id)) {
			t->cancelled = 1;
			if (d->on_task_cancel) /* a waiting agent gets its deny at once */
				d->on_task_cancel(d, task_id);
			pid_t pid = __atomic_load_n(&t->pid, __ATOMIC_ACQUIRE);
			if (pid > 0)
				kill(-pid, SIGTERM); /* the executor leads its own process group */
			return 0;
		}
	return err_set(e, E_NOT_FOUND, "task %s is not queued or running", task_id);
}

void daemon_cancel_all(struct daemon *d)
{
	while (d->queued) {
		struct err e = ERR_INIT;
		daemon_task_cancel(d, d->queued->task_id, &e);
		err_clear(&e);
	}
	for (struct task_run *t = d->running; t; t = t->next) {
		struct err e = ERR_INIT;
		daemon_task_cancel(d, t->task_id, &e);
		err_clear(&e);
	}
}
