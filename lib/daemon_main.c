/* daemon_main.c — the daemon's life (daemon_main.h): its home, lock and secrets, the database and the owner
 * user at start, and the orderly release of every part at the end. Sits above every other daemon file. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_main.h"
#include "daemon_dispatch.h"
#include "daemon_limits.h"
#include "daemon_nodes.h"
#include "daemon_peer.h"
#include "daemon_permissions.h"
#include "daemon_taskauth.h"
#include "daemon_tasks.h"
#include "daemon_terminal.h"
#include "fault.h"
#include "impersonate.h"
#include "log.h"
#include "report_scan.h"
#include "strbuf.h"
#include "banned.h"

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
		rc = err_set(e, E_PERMISSION_DENIED,
			     "%s must be a regular file owned by uid %u with mode 0600 (chmod 600 %s)", path,
			     (unsigned)geteuid(), path);
	else if (st.st_size != 32 || read(fd, key, 32) != 32)
		rc = err_set(e, E_INTERNAL, "%s is not a 32-byte secret (corrupted?)", path);
	close(fd);
	return rc;
}

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
		   "INSERT INTO users (id, name, unix_username, unix_uid, role, created_at) VALUES (?,?,?,?, 'admin', "
		   "?)",
		   "sssii", d->owner_id, d->daemon_user, d->daemon_user, (long long)d->uid, daemon_now()) < 0)
		return -1;
	daemon_audit(d, "daemon", "users.create", d->owner_id, "ok",
		     json_pack("{s:s,s:s}", "name", d->daemon_user, "role", "admin"));
	return 0;
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

/* execution.executor_daemon_url: the certificates remote executors verify the daemon with, read once (payloads carry
 * them, so an executor on another host needs no file of its own). */
static int load_executor_trust(struct daemon *d, struct err *e)
{
	const struct config *cfg = d->cfg;
	const char *ca = cfg->execution.executor_daemon_ca_file;
	if (!cfg->execution.executor_daemon_url)
		return 0;
	if (!ca && !cfg->execution.executor_daemon_fingerprint)
		return err_set(e, E_CONFIG,
			       "execution.executor_daemon_url: remote executors must verify the daemon: set "
			       "execution.executor_daemon_ca_file (the CA of daemon.tls_cert) or "
			       "execution.executor_daemon_fingerprint (its SHA-256)");
	if (!cfg->daemon.tls_cert)
		return err_set(e, E_CONFIG,
			       "execution.executor_daemon_url: the daemon serves no TLS: set daemon.tls_cert "
			       "and daemon.tls_key");
	if (!ca)
		return 0;
	struct strbuf pem = STRBUF_INIT;
	if (strbuf_read_file(&pem, ca, 1u << 20) < 0 || !strstr(pem.buf, "-----BEGIN CERTIFICATE-----")) {
		strbuf_release(&pem);
		return err_set(e, E_CONFIG,
			       "execution.executor_daemon_ca_file: %s is not a readable PEM certificate file", ca);
	}
	d->executor_daemon_ca_pem = strbuf_detach(&pem, NULL);
	return 0;
}

/* The data home's id a remote executor told an earlier run (daemon_tasks.c), from AGOR_HOME/data-home-id. */
static void load_data_home_id(struct daemon *d)
{
	_cleanup_free_ char *path = xasprintf("%s/data-home-id", d->paths.home);
	struct strbuf id = STRBUF_INIT;
	if (d->cfg->execution.executor_daemon_url && strbuf_read_file(&id, path, 64) == 0 &&
	    paths_is_data_home_id(id.buf))
		d->data_home_id = strbuf_detach(&id, NULL);
	strbuf_release(&id);
}

/* After each batch of writes: its held events go once it committed; when it did not, they are dropped and the task
 * endings it carried are rewritten as failed (docs/recovery.md). */
static void after_commit(struct daemon *d, const struct err *failure)
{
	if (!failure)
		daemon_tokens_batch_committed(d);
	daemon_release_held_events(d, !failure);
	if (failure)
		daemon_tasks_batch_lost(d, failure);
}

int daemon_init(struct daemon *d, struct config *cfg, struct err *e)
{
	memset(d, 0, sizeof(*d));
	d->lock_fd = d->ready_fd = -1;
	d->started_at = daemon_now();
	pthread_mutex_init(&d->done_lock, NULL);
	d->cfg = cfg;
	fault_init("daemon"); /* test builds only (fault.h) */
	d->on_task_cancel = daemon_permissions_cancel_task;
	d->before_commit = daemon_tokens_before_commit;
	d->after_commit = after_commit;
	strvec_init(&d->batch_endings);
	strbuf_init(&d->held_bytes, 0);
	strvec_init(&d->lost_endings);
	if (daemon_dispatch_check(e) < 0)
		return -1;
	d->uid = geteuid();
	struct passwd *pw = getpwuid(d->uid);
	d->daemon_user = xstrdup(pw ? pw->pw_name : "agor");
	d->self_path = impersonate_self_path();
	if (!d->self_path)
		return err_set(e, E_INTERNAL, "cannot find the agor binary (/proc/self/exe)");
	paths_from_config(&d->paths, cfg);
	if (load_executor_trust(d, e) < 0 || paths_ensure_home(&d->paths, e) < 0 || take_lock(d, e) < 0)
		return -1;
	load_data_home_id(d);
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
	daemon_free_held_events(d);
	daemon_tasks_release_lost_endings(d);
	explicit_bzero(d->jwt_secret, sizeof(d->jwt_secret));
	explicit_bzero(d->master_key, sizeof(d->master_key));
	daemon_nodes_release(d);
	daemon_terminals_release(d);	  /* before the loop goes: their descriptors are registered in it */
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
	free(d->executor_daemon_ca_pem);
	free(d->data_home_id);
	free(d->daemon_user);
	free(d->owner_id);
	pthread_mutex_destroy(&d->done_lock);
	if (d->lock_fd >= 0)
		close(d->lock_fd);
}
