/* daemon.c — the daemon's home, secrets, database, audit helper and task orchestration (daemon.h).
 * Never runs an executor on the loop thread and never touches the database from a worker thread. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "audit.h"
#include "daemon.h"
#include "daemon_methods.h"
#include "impersonate.h"
#include "json.h"
#include "log.h"
#include "report_scan.h"
#include "spawn.h"
#include "strvec.h"
#include "token.h"
#include "banned.h"

struct task_run {
	struct task_run *next;
	struct daemon *d;
	char *task_id;
	struct spawn_request req;
	char *payload;
	char *template;
	char *unix_user, *command, *session_id, *worktree_id;
	struct strvec admin_args; /* non-empty: the task runs agor admin, not an executor */
	char *created_by; /* the agor user whose task it is: its events go to them (and admins) only */
	char *prompted_by; /* …and to whoever prompted it, when not created_by (kept in memory only) */
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
	/* results, written by the worker */
	struct spawn_result res;
	struct err error;
	int failed;
};

long long daemon_now(void)
{
	return (long long)time(NULL);
}

void daemon_commit_write_batch(struct daemon *d)
{
	struct err e = ERR_INIT;
	if (!d->write_batch_open)
		return;
	daemon_save_token_uses(d);
	d->write_batch_open = 0;
	if (db_commit(d->db, &e) < 0) {
		log_error("could not commit a batch of writes: %s", e.message);
		err_clear(&e);
		db_exec(d->db, "ROLLBACK", &e);
		err_clear(&e);
	}
}

static void commit_write_batch(struct loop *l, void *arg)
{
	(void)l;
	daemon_commit_write_batch(arg);
}

void daemon_write_batch(struct daemon *d)
{
	struct err e = ERR_INIT;
	if (d->write_batch_open || !d->loop)
		return;
	if (db_begin(d->db, &e) < 0) { /* the writes then commit one by one */
		log_error("could not open a batch of writes: %s", e.message);
		err_clear(&e);
		return;
	}
	d->write_batch_open = 1;
	loop_defer(d->loop, commit_write_batch, d);
}

char *daemon_new_id(void)
{
	uint8_t b[16];
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n > 0)
			got += (size_t)n;
		else if (errno != EINTR)
			abort();
	}
	char *s = xmalloc(33);
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(s + 2 * i, 3, "%02x", b[i]);
	return s;
}

/* --- secrets ----------------------------------------------------------------------------- */

static int create_secret(const char *path, uint8_t key[32], struct err *e)
{
	size_t got = 0;
	while (got < 32) {
		ssize_t n = getrandom(key + got, 32 - got, 0);
		if (n < 0 && errno != EINTR)
			return err_errno(e, errno, "getrandom");
		if (n > 0)
			got += (size_t)n;
	}
	int fd = paths_create_private_file(path, e);
	if (fd < 0)
		return -1;
	int rc = write(fd, key, 32) == 32 && fsync(fd) == 0 ? 0 : err_errno(e, errno, "writing %s", path);
	close(fd);
	return rc;
}

/* Reads a 32-byte secret file, refusing one others could read or that is not ours. */
static int load_secret(const char *path, uint8_t key[32], struct err *e)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return create_secret(path, key, e);
	if (fd < 0)
		return err_errno(e, errno, "opening %s", path);
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		rc = err_set(e, E_PERMISSION_DENIED, "%s must be a regular file owned by uid %u with mode 0600 (chmod 600 %s)",
			     path, (unsigned)geteuid(), path);
	else if (st.st_size != 32 || read(fd, key, 32) != 32)
		rc = err_set(e, E_INTERNAL, "%s is not a 32-byte secret (corrupted?)", path);
	close(fd);
	return rc;
}

/* --- users ------------------------------------------------------------------------------- */

/* The agor user that stands for the daemon's own Unix user (made on first start, role admin). */
static int ensure_owner(struct daemon *d, struct err *e)
{
	json_t *row = db_query_one(d->db, e, "SELECT id FROM users WHERE unix_uid = ?", "i", (long long)d->uid);
	if (!row)
		return -1;
	if (!json_is_null(row)) {
		d->owner_id = xstrdup(json_string_value(json_object_get(row, "id")));
		json_decref(row);
		return 0;
	}
	json_decref(row);
	d->owner_id = daemon_new_id();
	if (db_run(d->db, e,
		   "INSERT INTO users (id, name, unix_username, unix_uid, role, created_at) VALUES (?,?,?,?, 'admin', ?)",
		   "sssii", d->owner_id, d->daemon_user, d->daemon_user, (long long)d->uid, daemon_now()) < 0)
		return -1;
	daemon_audit(d, "daemon", "users.create", d->owner_id, "ok", json_pack("{s:s,s:s}", "name", d->daemon_user, "role", "admin"));
	return 0;
}

void daemon_audit(struct daemon *d, const char *actor, const char *action, const char *target, const char *outcome,
		  json_t *details)
{
	struct err e = ERR_INIT;
	if (audit_append(d->db, actor ? actor : "?", action, target, outcome, details, &e) < 0)
		log_error("AUDIT LOG WRITE FAILED for %s %s: %s", action, target ? target : "", e.message);
	err_clear(&e);
	if (details)
		json_decref(details);
}

int daemon_recover_tasks(struct daemon *d, struct err *e)
{
	int n = db_run(d->db, e,
		       "UPDATE tasks SET status = 'failed', error = ?, finished_at = ? WHERE status IN ('queued','running')",
		       "si", "{\"code\":\"CANCELLED\",\"message\":\"interrupted: the daemon stopped while the task ran\"}",
		       daemon_now());
	if (n > 0) {
		log_warn("%d task(s) interrupted by the previous daemon's end are now failed", n);
		db_run(d->db, e, "UPDATE tokens SET revoked_at = ? WHERE revoked_at IS NULL AND task_id IN "
				 "(SELECT id FROM tasks WHERE status = 'failed')", "i", daemon_now());
		daemon_audit(d, "daemon", "tasks.recover", NULL, "ok", json_pack("{s:i}", "interrupted", n));
	}
	return n < 0 ? -1 : n;
}

/* One daemon per AGOR_HOME: an exclusive lock on run/daemon.lock, holding our pid. */
static int take_lock(struct daemon *d, struct err *e)
{
	_cleanup_free_ char *path = xasprintf("%s/daemon.lock", d->paths.run);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return err_errno(e, errno, "opening %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char pid[32] = "";
		(void)!read(fd, pid, sizeof(pid) - 1);
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		return err_set(e, E_ALREADY_EXISTS, "another agor daemon is running on %s (pid %s)", d->paths.home,
			       *pid ? pid : "?");
	}
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		log_warn("cannot record the pid in %s", path);
	d->lock_fd = fd;
	return 0;
}

int daemon_init(struct daemon *d, struct config *cfg, struct err *e)
{
	memset(d, 0, sizeof(*d));
	d->lock_fd = d->ready_fd = -1;
	pthread_mutex_init(&d->done_lock, NULL);
	d->cfg = cfg;
	d->uid = geteuid();
	struct passwd *pw = getpwuid(d->uid);
	d->daemon_user = xstrdup(pw ? pw->pw_name : "agor");
	d->self_path = impersonate_self_path();
	if (!d->self_path)
		return err_set(e, E_INTERNAL, "cannot find the agor binary (/proc/self/exe)");
	paths_from_config(&d->paths, cfg);
	if (paths_ensure_home(&d->paths, e) < 0 || take_lock(d, e) < 0)
		return -1;
	_cleanup_free_ char *jwt = xasprintf("%s/jwt.secret", d->paths.home);
	_cleanup_free_ char *master = xasprintf("%s/master.key", d->paths.home);
	if (load_secret(jwt, d->jwt_secret, e) < 0 || load_secret(master, d->master_key, e) < 0)
		return -1;
	unsigned long long wal_max = (unsigned long long)cfg->daemon.wal_max_mb << 20;
	if (db_open(d->paths.db, &d->db, e) < 0 || db_checkpoint_in_background(d->db, wal_max, e) < 0)
		return -1;
	daemon_watch_auth_state(d);
	if (ensure_owner(d, e) < 0 || daemon_recover_tasks(d, e) < 0)
		return -1;
	d->loop = loop_new(e);
	return d->loop ? 0 : -1;
}

void daemon_release(struct daemon *d)
{
	if (d->db) {
		daemon_commit_write_batch(d); /* a batch the stopped loop never got to commit */
		daemon_flush_refusals(d);     /* the counted rows of the last window */
	}
	daemon_limits_release(d);
	explicit_bzero(d->jwt_secret, sizeof(d->jwt_secret));
	explicit_bzero(d->master_key, sizeof(d->master_key));
	daemon_nodes_release(d);
	daemon_terminals_release(d); /* before the loop goes: their descriptors are registered in it */
	daemon_forget_verified_tokens(d); /* their counted uses are written back */
	if (d->report_line) {
		report_line_release(d->report_line);
		free(d->report_line);
	}
	db_close(d->db);
	loop_free(d->loop);
	paths_release(&d->paths);
	free(d->subscribers);
	free(d->self_path);
	free(d->daemon_user);
	free(d->owner_id);
	pthread_mutex_destroy(&d->done_lock);
	if (d->lock_fd >= 0)
		close(d->lock_fd);
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
	t->next = t->d->done;
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

/* Every payload carries the daemon's execution policy: the executor, whoever it runs as, applies it over its
 * own config, which may only tighten it (config.h). */
static char *build_payload(struct daemon *d, const char *command, json_t *params, json_t *env,
			   const char *execution_user, const char *token)
{
	json_t *p = json_pack("{s:s,s:O,s:s,s:o}", "command", command, "params", params, "dataHome", d->paths.data_home,
			      "policy", config_execution_policy(d->cfg));
	if (env)
		json_object_set(p, "env", env);
	if (execution_user && strcmp(execution_user, d->daemon_user))
		json_object_set_new(p, "asUser", json_string(execution_user));
	if (token) {
		json_object_set_new(p, "sessionToken", json_string(token));
		json_object_set_new(p, "daemonUrl", json_sprintf("unix:%s", d->cfg->daemon.socket_path));
	}
	char *s = json_to_compact(p);
	json_decref(p);
	return s;
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
		.timeout_ms = (int)cfg->execution.timeout_ms,
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
		t->req.payload = "";
		t->req.payload_len = 0;
	}
	if (db_run(d->db, e, "UPDATE tasks SET status = 'running', started_at = ? WHERE id = ?", "is", daemon_now(),
		   t->task_id) < 0)
		return -1;
	if (pthread_create(&t->thread, NULL, task_worker, t) != 0)
		return err_set(e, E_INTERNAL, "cannot start a worker thread");
	t->next = d->running;
	d->running = t;
	d->nrunning++;
	task_event(d, t, "task.updated", json_pack("{s:s,s:s,s:s}", "id", t->task_id, "status", "running", "command", t->command));
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
			t->next = d->done;
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
	if (token_issue_for(TOKEN_AUD_EXECUTOR, d->jwt_secret, sizeof(d->jwt_secret), &in, ttl > 0 ? ttl : 1, jwt, &issued, e) < 0)
		return -1;
	int rc = db_run(d->db, e, "INSERT INTO tokens (jti, task_id, session_id, user_id, issued_at, expires_at) VALUES (?,?,?,?,?,?)",
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
	t->template = d->cfg->execution.executor_command_template ? xstrdup(d->cfg->execution.executor_command_template) : NULL;
	if (s->admin_args)
		strvec_pushv(&t->admin_args, s->admin_args);
	t->unix_user = xstrdup(s->admin_args ? "root" : s->execution_user ? s->execution_user : d->daemon_user);
	t->session_id = s->session_id ? xstrdup(s->session_id) : NULL;
	t->worktree_id = s->worktree_id ? xstrdup(s->worktree_id) : NULL;
	t->created_by = s->created_by ? xstrdup(s->created_by) : NULL;
	t->prompted_by = s->prompted_by && (!s->created_by || strcmp(s->prompted_by, s->created_by)) ? xstrdup(s->prompted_by) : NULL;
	t->judge = s->judge;
	t->on_done = s->on_done;
	t->on_progress = s->on_progress;
	t->arg = s->arg;
	const char *prompt = json_string_value(json_object_get(s->params, "prompt"));
	if (db_run(d->db, e,
		   "INSERT INTO tasks (id, session_id, command, status, prompt, created_by, execution_user, created_at)"
		   " VALUES (?,?,?, 'queued', ?,?,?,?)",
		   "ssssssi", t->task_id, s->session_id, s->command, prompt, s->created_by, t->unix_user, daemon_now()) < 0 ||
	    (s->with_token && issue_task_token(d, t->task_id, s, &token, e) < 0)) {
		task_run_free(t);
		return -1;
	}
	json_t *params = json_deep_copy(s->params);
	if (s->with_token && !strcmp(s->command, "prompt")) /* the prompt payload names its task */
		json_object_set_new(params, "taskId", json_string(t->task_id));
	t->payload = build_payload(d, s->command, params, s->env, s->execution_user, token);
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
	daemon_audit(d, t->unix_user, "git.metadata.repaired", t->task_id, "repaired", json_pack("{s:O}", "repaired", repaired));
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

static void finish_run(struct daemon *d, struct task_run *t)
{
	pthread_join(t->thread, NULL);
	struct err scratch = ERR_INIT, e = ERR_INIT;
	const struct err *failure = run_error(t, &scratch);
	json_t *data = failure ? NULL : json_object_get(t->res.result, "data");
	if (!failure && t->judge && t->judge(data, &scratch) < 0)
		failure = &scratch; /* the run happened: its result is kept beside the reason */
	const char *status = !failure ? "completed" : t->cancelled ? "cancelled" : "failed";
	_cleanup_free_ char *result_text = data ? json_to_compact(data) : NULL;
	json_t *err_json = failure ? err_to_json(failure) : NULL;
	_cleanup_free_ char *error_text = err_json ? json_to_compact(err_json) : NULL;
	if (db_run(d->db, &e, "UPDATE tasks SET status = ?, result = ?, error = ?, finished_at = ? WHERE id = ?", "sssis",
		   status, result_text, error_text, daemon_now(), t->task_id) < 0)
		log_error("task %s: %s", t->task_id, e.message);
	db_run(d->db, &e, "UPDATE tokens SET revoked_at = ? WHERE task_id = ? AND revoked_at IS NULL", "is", daemon_now(),
	       t->task_id);
	daemon_audit(d, t->unix_user, t->command, t->task_id, status,
		     json_pack("{s:i,s:O?}", "exitStatus", t->res.exit_status, "error", err_json));
	report_git_repairs(d, t);
	report_egress_refusals(d, t);
	if (t->on_done)
		t->on_done(d, t->task_id, data, failure, t->arg);
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
		done = t->next;
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

void daemon_task_event(struct daemon *d, const char *task_id, const char *created_by, const char *type, json_t *data)
{
	struct task_run *t = task_id ? find_live_task(d, task_id) : NULL;
	daemon_broadcast_to2(d, created_by, t ? t->prompted_by : NULL, type, data);
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
	daemon_broadcast_message(d, created_by, t ? t->prompted_by : NULL, task_id, session_id, message_type, data_text);
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
			t->next = d->done;
			d->done = t;
			pthread_mutex_unlock(&d->done_lock);
			loop_wake(d->loop);
			return 0;
		}
	for (struct task_run *t = d->running; t; t = t->next)
		if (!strcmp(t->task_id, task_id)) {
			t->cancelled = 1;
			daemon_permissions_cancel_task(d, task_id); /* a waiting agent gets its deny at once */
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
