/* cgroup.c — per-run control groups on cgroup v2 or v1 (cgroup.h): create, limit, join, events, destroy.
 * Only files under the chosen root are touched; a limit that cannot be written is an error, never skipped. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "common.h"
#include "fsutil.h"
#include "log.h"
#include "strbuf.h"
#include "banned.h"

#define CGROUP2_SUPER_MAGIC 0x63677270
#define CGROUP_SUPER_MAGIC  0x27e0eb
#define CPU_PERIOD_US	    100000

int cgroup_limits_any(const struct cgroup_limits *limits)
{
	return limits->memory_max_bytes > 0 || limits->pids_max > 0 || limits->cpu_max_percent > 0;
}

static int fs_type_is(const char *path, long magic)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && (long)sf.f_type == magic;
}

static int write_text(const char *dir, const char *file, const char *text)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	int rc = fs_write_all(fd, text, strlen(text));
	int saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

static int write_number(const char *dir, const char *file, long long value)
{
	char text[32];
	snprintf(text, sizeof(text), "%lld", value);
	return write_text(dir, file, text);
}

/* The value of KEY in a "key value" per line file, or -1. */
static long long read_keyed(const char *dir, const char *file, const char *key)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);
	_cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
	if (strbuf_read_file(&sb, path, 64 * 1024) < 0)
		return -1;
	size_t klen = strlen(key);
	for (const char *line = sb.buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, key, klen) && line[klen] == ' ')
			return strtoll(line + klen + 1, NULL, 10);
	return -1;
}

static long long read_number(const char *dir, const char *file)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);
	_cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
	if (strbuf_read_file(&sb, path, 64) < 0 || !sb.len)
		return -1;
	return strtoll(sb.buf, NULL, 10);
}

static int listed_in(const char *dir, const char *file, const char *name)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);
	_cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
	if (strbuf_read_file(&sb, path, 4096) < 0)
		return 0;
	size_t n = strlen(name);
	for (const char *p = sb.buf; (p = strstr(p, name)); p += n)
		if ((p == sb.buf || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return 1;
	return 0;
}

static int controller_listed(const char *dir, const char *name)
{
	return listed_in(dir, "cgroup.controllers", name);
}

static void needed_controllers(const struct cgroup_limits *l, const char **out, int *n)
{
	*n = 0;
	if (l->memory_max_bytes > 0)
		out[(*n)++] = "memory";
	if (l->pids_max > 0)
		out[(*n)++] = "pids";
	if (l->cpu_max_percent > 0)
		out[(*n)++] = "cpu";
}

/* The cgroup2 mount that offers every needed controller, or NULL (malloc'd). */
static char *find_v2_root(const char *root, const char **ctrl, int n)
{
	_cleanup_free_ char *unified = xasprintf("%s/unified", root);
	const char *candidates[] = { root, unified };
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++) {
		if (!fs_type_is(candidates[i], CGROUP2_SUPER_MAGIC))
			continue;
		int all = 1;
		for (int c = 0; c < n; c++)
			all &= controller_listed(candidates[i], ctrl[c]);
		if (all)
			return xstrdup(candidates[i]);
	}
	return NULL;
}

static int make_dir(const char *path, struct err *e)
{
	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return 0;
	if (errno == EACCES && geteuid() != 0)
		return err_setd(
			e, E_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "missing", "cgroup"),
			"cgroup: cannot create %s: %s (fix: delegate a cgroup to this user once per boot, as root: "
			"agor admin cgroup-delegate USER; or set execution.sandbox.memory_max_mb, pids_max and "
			"cpu_max_percent to 0)",
			path, strerror(errno));
	return err_setd(e, E_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "missing", "cgroup"),
			"cgroup: cannot create %s: %s", path, strerror(errno));
}

static int limit_failed(struct err *e, const char *dir, const char *file)
{
	return err_setd(e, E_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "missing", "cgroup"),
			"cgroup: cannot write %s/%s: %s", dir, file, strerror(errno));
}

static void add_dir(struct cgroup *cg, char *dir, const char *controller)
{
	cg->dirs[cg->ndirs] = dir;
	cg->procs[cg->ndirs] = xasprintf("%s/cgroup.procs", dir);
	cg->joins[cg->ndirs] = xasprintf("%s/%s", dir, controller ? "tasks" : "cgroup.procs");
	cg->controllers[cg->ndirs] = controller;
	cg->ndirs++;
}

/* Enables ctrl for dir's children; nothing to write (so nothing to be allowed to) when they already are. */
static int enable_v2_controllers(const char *dir, const char **ctrl, int n, struct err *e)
{
	int all = 1;
	for (int i = 0; i < n; i++)
		all &= listed_in(dir, "cgroup.subtree_control", ctrl[i]);
	if (all)
		return 0;
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < n; i++)
		strbuf_addf(&sb, "%s+%s", i ? " " : "", ctrl[i]);
	int rc = n ? write_text(dir, "cgroup.subtree_control", sb.buf) : 0;
	strbuf_release(&sb);
	return rc < 0 ? limit_failed(e, dir, "cgroup.subtree_control") : 0;
}

static int write_v2_limits(const char *dir, const struct cgroup_limits *l, struct err *e)
{
	if (l->memory_max_bytes > 0) {
		if (write_number(dir, "memory.max", l->memory_max_bytes) < 0)
			return limit_failed(e, dir, "memory.max");
		write_number(dir, "memory.swap.max", 0); /* absent without swap accounting */
	}
	if (l->pids_max > 0 && write_number(dir, "pids.max", l->pids_max) < 0)
		return limit_failed(e, dir, "pids.max");
	if (l->cpu_max_percent > 0) {
		char text[48];
		snprintf(text, sizeof(text), "%lld %d", (long long)l->cpu_max_percent * CPU_PERIOD_US / 100,
			 CPU_PERIOD_US);
		if (write_text(dir, "cpu.max", text) < 0)
			return limit_failed(e, dir, "cpu.max");
	}
	return 0;
}

/* Runs whose executor died without cleaning up (kill -9) leave empty groups "run-PID-HEX" behind: each one
 * whose PID is gone and that holds no process is removed before a new run makes its own. */
static void sweep_stale_runs(const char *parent)
{
	DIR *dir = opendir(parent);
	if (!dir)
		return;
	struct dirent *de;
	while ((de = readdir(dir))) {
		char *end;
		long pid = strncmp(de->d_name, "run-", 4) ? 0 : strtol(de->d_name + 4, &end, 10);
		if (pid <= 0 || *end != '-' || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		_cleanup_free_ char *path = xasprintf("%s/%s", parent, de->d_name);
		if (read_number(path, "cgroup.procs") < 0) /* empty (a pid would read as a number) */
			rmdir(path);
	}
	closedir(dir);
}

/* The calling process's cgroup2 path ("/a/b": /proc/self/cgroup's "0::" line), or NULL (malloc'd). */
static char *own_v2_path(void)
{
	_cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
	if (strbuf_read_file(&sb, "/proc/self/cgroup", 64 * 1024) < 0)
		return NULL;
	for (const char *line = sb.buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, "0::", 3))
			return xstrndup(line + 3, strcspn(line + 3, "\n"));
	return NULL;
}

/* v2 lets a process move another only below the common ancestor's cgroup.procs it may write: a non-root
 * executor's runs can join their groups only if it already lives inside the subtree delegated to it. */
static int check_inside_delegation(const char *parent, struct err *e)
{
	if (geteuid() == 0)
		return 0;
	_cleanup_free_ char *own = own_v2_path(), *subtree = xasprintf("/%s", parent);
	size_t n = strlen(subtree);
	if (own && !strncmp(own, subtree, n) && (own[n] == '/' || !own[n]))
		return 0;
	return err_setd(
		e, E_ISOLATION_UNAVAILABLE, json_pack("{s:s,s:s*}", "missing", "cgroup", "cgroup", own),
		"cgroup v2: this executor runs in the cgroup %s, outside %s, the subtree delegated to it, and v2 "
		"moves a process only within a subtree its mover lives in (fix: start the daemon inside it: as "
		"root, once per daemon start, agor admin cgroup-delegate USER --pid DAEMON_PID; under systemd, "
		"start executors through agor-admin.socket (execution.privileged_socket), which places them "
		"inside it; or set execution.sandbox.memory_max_mb, pids_max and cpu_max_percent to 0)",
		own ? own : "(unknown)", subtree);
}

static int create_v2(struct cgroup *cg, const char *v2root, const char *parent, const char *leaf, const char **ctrl,
		     int n, struct err *e)
{
	_cleanup_free_ char *pdir = xasprintf("%s/%s", v2root, parent);
	char *dir = xasprintf("%s/%s", pdir, leaf);
	cg->version = 2;
	if (make_dir(pdir, e) < 0 || check_inside_delegation(parent, e) < 0 ||
	    enable_v2_controllers(v2root, ctrl, n, e) < 0 || enable_v2_controllers(pdir, ctrl, n, e) < 0 ||
	    (sweep_stale_runs(pdir), make_dir(dir, e) < 0)) {
		free(dir);
		return -1;
	}
	add_dir(cg, dir, NULL);
	if ((cg->dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return err_setd(e, E_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "missing", "cgroup"),
				"cgroup: cannot open %s: %s", dir, strerror(errno));
	return write_v2_limits(dir, &cg->limits, e);
}

static int write_v1_limit(const char *dir, const char *controller, const struct cgroup_limits *l, struct err *e)
{
	if (!strcmp(controller, "memory")) {
		if (write_number(dir, "memory.limit_in_bytes", l->memory_max_bytes) < 0)
			return limit_failed(e, dir, "memory.limit_in_bytes");
		write_number(dir, "memory.memsw.limit_in_bytes",
			     l->memory_max_bytes); /* absent without swap accounting */
		return 0;
	}
	if (!strcmp(controller, "pids"))
		return write_number(dir, "pids.max", l->pids_max) < 0 ? limit_failed(e, dir, "pids.max") : 0;
	if (write_number(dir, "cpu.cfs_period_us", CPU_PERIOD_US) < 0 ||
	    write_number(dir, "cpu.cfs_quota_us", (long long)l->cpu_max_percent * CPU_PERIOD_US / 100) < 0)
		return limit_failed(e, dir, "cpu.cfs_quota_us");
	return 0;
}

static int create_v1(struct cgroup *cg, const char *root, const char *parent, const char *leaf, const char **ctrl,
		     int n, struct err *e)
{
	cg->version = 1;
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *hier = xasprintf("%s/%s", root, ctrl[i]);
		if (!fs_type_is(hier, CGROUP_SUPER_MAGIC))
			return err_setd(e, E_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "missing", "cgroup"),
					"cgroup: no %s controller under %s (neither cgroup2 nor a v1 hierarchy)",
					ctrl[i], root);
		_cleanup_free_ char *pdir = xasprintf("%s/%s", hier, parent);
		char *dir = xasprintf("%s/%s", pdir, leaf);
		if (make_dir(pdir, e) < 0 || (sweep_stale_runs(pdir), make_dir(dir, e) < 0)) {
			free(dir);
			return -1;
		}
		add_dir(cg, dir, ctrl[i]);
		if (write_v1_limit(dir, ctrl[i], &cg->limits, e) < 0)
			return -1;
	}
	return 0;
}

int cgroup_create(struct cgroup *cg, const char *root, const char *parent, const char *leaf,
		  const struct cgroup_limits *limits, struct err *e)
{
	memset(cg, 0, sizeof(*cg));
	cg->dir_fd = -1;
	cg->limits = *limits;
	const char *ctrl[CGROUP_MAX_DIRS];
	int n;
	needed_controllers(limits, ctrl, &n);
	_cleanup_free_ char *v2root = find_v2_root(root, ctrl, n);
	int rc = v2root ? create_v2(cg, v2root, parent, leaf, ctrl, n, e)
			: create_v1(cg, root, parent, leaf, ctrl, n, e);
	if (rc < 0)
		cgroup_destroy(cg);
	return rc;
}

int cgroup_join_procs(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fs_write_all(fd, "0", 1);
	int saved = errno;
	close(fd);
	errno = saved;
	return rc < 0 ? -1 : 0;
}

/* v1: "0" written to tasks moves the calling thread alone, which the kernel does without the global
 * threadgroup lock that a write to cgroup.procs takes (its first writer waits out an RCU grace period,
 * 8-14 ms here). The caller, a child just forked, is its process's one thread, so it moves the whole
 * process all the same; everything it starts later is born inside. v2 allows such a thread move only
 * within one domain, so it keeps cgroup.procs. */
int cgroup_join_self(const struct cgroup *cg)
{
	for (int i = 0; i < cg->ndirs; i++)
		if (cgroup_join_procs(cg->joins[i]) < 0)
			return -1;
	return 0;
}

json_t *cgroup_events(const struct cgroup *cg)
{
	json_t *o = json_object();
	for (int i = 0; i < cg->ndirs; i++) {
		const char *dir = cg->dirs[i], *ctrl = cg->controllers[i];
		if (cg->version == 2 || !strcmp(ctrl, "memory")) {
			long long oom =
				read_keyed(dir, cg->version == 2 ? "memory.events" : "memory.oom_control", "oom_kill");
			long long peak =
				read_number(dir, cg->version == 2 ? "memory.peak" : "memory.max_usage_in_bytes");
			if (oom >= 0)
				json_object_set_new(o, "oomKills", json_integer(oom));
			if (peak >= 0)
				json_object_set_new(o, "memoryPeakBytes", json_integer(peak));
		}
		if (cg->version == 2 || !strcmp(ctrl, "pids")) {
			long long hits = read_keyed(dir, "pids.events", "max");
			if (hits >= 0)
				json_object_set_new(o, "pidsLimitHits", json_integer(hits));
		}
	}
	return o;
}

json_t *cgroup_receipt(const struct cgroup *cg)
{
	json_t *paths = json_array();
	for (int i = 0; i < cg->ndirs; i++)
		json_array_append_new(paths, json_string(cg->dirs[i]));
	return json_pack("{s:i,s:o,s:I,s:I,s:i}", "version", cg->version, "paths", paths, "memoryMaxBytes",
			 (json_int_t)cg->limits.memory_max_bytes, "pidsMax", (json_int_t)cg->limits.pids_max,
			 "cpuMaxPercent", cg->limits.cpu_max_percent);
}

static void sleep_briefly(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

/* SIGKILL every process listed; 1 when the list was empty. */
static int kill_listed(const char *procs)
{
	_cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
	if (strbuf_read_file(&sb, procs, 1 << 20) < 0 || !sb.len)
		return 1;
	for (char *p = sb.buf, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid > 0)
			kill((pid_t)pid, SIGKILL);
		while (*end == '\n')
			end++;
	}
	return 0;
}

static void empty_and_remove(const struct cgroup *cg, int i)
{
	if (cg->version == 2)
		write_text(cg->dirs[i], "cgroup.kill", "1");
	for (int tries = 0; tries < 200; tries++) { /* up to 2 s for the last processes to be reaped */
		if (kill_listed(cg->procs[i])) {
			if (rmdir(cg->dirs[i]) == 0 || errno == ENOENT)
				return;
		}
		sleep_briefly();
	}
	log_warn("cgroup %s could not be removed: %s", cg->dirs[i], strerror(errno));
}

void cgroup_destroy(struct cgroup *cg)
{
	if (cg->dir_fd >= 0)
		close(cg->dir_fd);
	for (int i = 0; i < cg->ndirs; i++) {
		empty_and_remove(cg, i);
		free(cg->dirs[i]);
		free(cg->procs[i]);
		free(cg->joins[i]);
	}
	memset(cg, 0, sizeof(*cg));
	cg->dir_fd = -1;
}

/* ---- delegation (root) ------------------------------------------------------------------------- */

static const char *const delegated_files[] = { "cgroup.procs", "cgroup.threads", "cgroup.subtree_control", "tasks" };

static int hand_over(const char *dir, uid_t uid, gid_t gid, struct err *e)
{
	if (chown(dir, uid, gid) < 0)
		return err_errno(e, errno, "cgroup: chown %s", dir);
	for (size_t i = 0; i < ARRAY_SIZE(delegated_files); i++) {
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, delegated_files[i]);
		if (chown(path, uid, gid) < 0 && errno != ENOENT)
			return err_errno(e, errno, "cgroup: chown %s", path);
	}
	return 0;
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* Writes pid, which must run as uid, into dir's cgroup.procs. A pidfd taken before the owner check tells
 * whether that process lived through the write; if not, the number may belong to someone else by then, and
 * whatever holds it goes back to the root cgroup. */
static int move_process(const char *v2root, const char *dir, pid_t pid, uid_t uid, struct err *e)
{
	char text[24], proc[32];
	snprintf(text, sizeof(text), "%d", (int)pid);
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), rc = 0;
	struct stat st;
	if (pidfd < 0)
		return err_errno(e, errno, "cgroup: process %d", (int)pid);
	if (stat(proc, &st) < 0 || st.st_uid != uid)
		rc = err_set(e, E_PERMISSION_DENIED, "cgroup: process %d does not run as uid %u", (int)pid,
			     (unsigned)uid);
	else if (write_text(dir, "cgroup.procs", text) < 0)
		rc = err_errno(e, errno, "cgroup: moving process %d into %s", (int)pid, dir);
	else if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
		write_text(v2root, "cgroup.procs", text);
		rc = err_set(e, E_SYSTEM, "cgroup: process %d exited while it was moved; nothing was moved", (int)pid);
	}
	close(pidfd);
	return rc;
}

/* v2: pid (the daemon's) moves into DIR/daemon, a leaf handed to the user too, so that the executors it starts
 * live inside the delegated subtree (the root of a v2 subtree with controllers enabled holds no process). */
static int move_into_delegation(const char *v2root, const char *dir, pid_t pid, uid_t uid, gid_t gid, json_t *made,
				struct err *e)
{
	_cleanup_free_ char *leaf = xasprintf("%s/%s", dir, CGROUP_DELEGATED_LEAF);
	if (make_dir(leaf, e) < 0 || hand_over(leaf, uid, gid, e) < 0 || move_process(v2root, leaf, pid, uid, e) < 0)
		return -1;
	json_array_append_new(made, json_string(leaf));
	return 0;
}

int cgroup_delegate(const char *root, const char *parent, const char *user, uid_t uid, gid_t gid, pid_t pid,
		    json_t *made, struct err *e)
{
	const char *all[] = { "memory", "pids", "cpu" };
	_cleanup_free_ char *v2root = find_v2_root(root, all, 2); /* cpu is optional on v2 */
	if (v2root) {
		const char *ctrl[3] = { "memory", "pids", "cpu" };
		int n = controller_listed(v2root, "cpu") ? 3 : 2;
		_cleanup_free_ char *pdir = xasprintf("%s/%s", v2root, parent), *dir = xasprintf("%s/%s", pdir, user);
		if (make_dir(pdir, e) < 0 || enable_v2_controllers(v2root, ctrl, n, e) < 0 ||
		    enable_v2_controllers(pdir, ctrl, n, e) < 0 || make_dir(dir, e) < 0 ||
		    hand_over(dir, uid, gid, e) < 0)
			return -1;
		json_array_append_new(made, json_string(dir));
		return pid > 0 ? move_into_delegation(v2root, dir, pid, uid, gid, made, e) : 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		_cleanup_free_ char *hier = xasprintf("%s/%s", root, all[i]);
		if (!fs_type_is(hier, CGROUP_SUPER_MAGIC))
			continue;
		_cleanup_free_ char *pdir = xasprintf("%s/%s", hier, parent), *dir = xasprintf("%s/%s", pdir, user);
		if (make_dir(pdir, e) < 0 || make_dir(dir, e) < 0 || hand_over(dir, uid, gid, e) < 0)
			return -1;
		json_array_append_new(made, json_string(dir));
	}
	if (!json_array_size(made))
		return err_setd(e, E_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "missing", "cgroup"),
				"cgroup: no cgroup2 with memory and pids nor a v1 hierarchy under %s", root);
	return 0;
}

int cgroup_executor_leaf(const char *root, const char *parent, const char *user, uid_t uid, gid_t gid, char **leaf,
			 struct err *e)
{
	*leaf = NULL;
	json_t *made = json_array();
	int rc = cgroup_delegate(root, parent, user, uid, gid, 0, made, e);
	json_decref(made);
	const char *all[] = { "memory", "pids", "cpu" };
	_cleanup_free_ char *v2root = rc == 0 ? find_v2_root(root, all, 2) : NULL;
	if (!v2root)
		return rc;
	_cleanup_free_ char *dir = xasprintf("%s/%s/%s/%s", v2root, parent, user, CGROUP_EXECUTORS_LEAF);
	if (make_dir(dir, e) < 0 || hand_over(dir, uid, gid, e) < 0)
		return -1;
	*leaf = TAKE_PTR(dir);
	return 0;
}
