/* test_child.c — unit tests of lib/child: exec, env, PATH, errors, big pipes, timeouts, ids, fds.
 * Never leaves a process running behind a test and never writes outside its scratch directory. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "err.h"
#include "strbuf.h"
#include "strvec.h"
#include "unit.h"
#include "banned.h"

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static long long elapsed_ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000LL + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

static char *tmp_path(const char *name)
{
	return xasprintf("%s/%s", unit_tmpdir(), name);
}

static void write_file(const char *path, const char *content, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_INT(write(fd, content, strlen(content)), strlen(content));
	close(fd);
	chmod(path, mode);
}

static void sleep_a_little(void)
{
	struct timespec ts = { 0, 10 * 1000000 };
	nanosleep(&ts, NULL);
}

/* A process that is gone: not running and not a zombie (reaped by us as the subreaper). */
static int process_is_gone(pid_t pid)
{
	for (int i = 0; i < 300; i++) {
		waitpid(pid, NULL, WNOHANG);
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return 1;
		sleep_a_little();
	}
	return 0;
}

TEST(child_run_captures_echo)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/echo", "hello", "world"));
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_STR(out.buf, "hello world\n");
	CHECK(child_exited_ok(&c));
	CHECK_INT(child_exit_code(&c), 0);
	CHECK(c.pid > 0);
	CHECK(c.reaped);
	CHECK_INT(c.out, -1);
	CHECK_INT(c.pidfd, -1);
	CHECK(!c.timed_out);
	/* A reaped child cannot be waited for twice. */
	CHECK_INT(child_wait(&c, NULL, &e), -1);
}

TEST(child_env_is_exactly_what_was_set)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	setenv("AGOR_CHILD_SECRET", "parent-only", 1);
	child_init(&c);
	strvec_push(&c.args, "/usr/bin/env");
	strvec_push(&c.env, "FOO=bar");
	strvec_push(&c.env, "A=b c");
	strvec_push(&c.env, "FOO=baz"); /* a later entry wins */
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_STR(out.buf, "A=b c\nFOO=baz\n");
	child_release(&c);

	child_init(&c);
	strbuf_reset(&out);
	strvec_push(&c.args, "/usr/bin/env");
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_STR(out.buf, "");
}

TEST(child_env_inherited_with_overrides_and_unsets)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	setenv("AGOR_CHILD_TEST", "parent", 1);
	setenv("AGOR_CHILD_GONE", "x", 1);
	setenv("AGOR_CHILD_KEPT", "kept", 1);
	child_init(&c);
	c.inherit_env = 1;
	strvec_push(&c.args, "/usr/bin/env");
	strvec_push(&c.env, "AGOR_CHILD_TEST=child");
	strvec_push(&c.env, "AGOR_CHILD_GONE");
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_CONTAINS(out.buf, "AGOR_CHILD_TEST=child\n");
	CHECK_CONTAINS(out.buf, "AGOR_CHILD_KEPT=kept\n");
	CHECK(!strstr(out.buf, "AGOR_CHILD_TEST=parent"));
	CHECK(!strstr(out.buf, "AGOR_CHILD_GONE"));
}

TEST(child_path_lookup_uses_the_childs_path)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	_cleanup_free_ char *bin = tmp_path("bin");
	_cleanup_free_ char *prog = tmp_path("bin/agor-child-probe");
	_cleanup_free_ char *path = xasprintf("/nonexistent:%s", bin);
	CHECK_INT(mkdir(bin, 0755), 0);
	write_file(prog, "#!/bin/sh\necho found \"$1\"\n", 0755);

	child_init(&c);
	strvec_pushv(&c.args, ARGS("agor-child-probe", "x"));
	strvec_setenv(&c.env, "PATH", path);
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_STR(out.buf, "found x\n");
	child_release(&c);

	/* The parent's PATH is not used, and relative or empty entries never mean the cwd. */
	child_init(&c);
	c.cwd = unit_tmpdir();
	strvec_push(&c.args, "agor-child-probe");
	strvec_setenv(&c.env, "PATH", "/nonexistent::bin:.");
	setenv("PATH", bin, 1);
	CHECK_INT(child_start(&c, &e), -1);
	CHECK_STR(e.message, "exec agor-child-probe: No such file or directory");
}

TEST(child_path_lookup_reports_eacces)
{
	_cleanup_child_ struct child c;
	_cleanup_err_ struct err e = ERR_INIT;
	_cleanup_free_ char *bin = tmp_path("bin");
	_cleanup_free_ char *prog = tmp_path("bin/not-executable");
	CHECK_INT(mkdir(bin, 0755), 0);
	write_file(prog, "#!/bin/sh\necho no\n", 0644);
	child_init(&c);
	strvec_push(&c.args, "not-executable");
	strvec_setenv(&c.env, "PATH", bin);
	CHECK_INT(child_start(&c, &e), -1);
	CHECK_STR(e.message, "exec not-executable: Permission denied");
}

TEST(child_exec_failure_reports_enoent)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	child_init(&c);
	strvec_push(&c.args, "/no/such");
	CHECK_INT(child_run(&c, "input", 5, &out, NULL, 0, &e), -1);
	CHECK_STR(e.code, E_SYSTEM);
	CHECK_STR(e.message, "exec /no/such: No such file or directory");
	CHECK_STR(json_string_value(json_object_get(e.details, "stage")), "exec");
	CHECK_INT(json_integer_value(json_object_get(e.details, "errno")), ENOENT);
	CHECK_INT(c.pid, 0);
	CHECK_INT(c.in, -1);
	CHECK_INT(c.out, -1);
	/* The failed child was reaped: no zombie is left. */
	errno = 0;
	CHECK_INT(waitpid(-1, NULL, WNOHANG), -1);
	CHECK_INT(errno, ECHILD);
}

TEST(child_chdir_failure_reported)
{
	_cleanup_child_ struct child c;
	_cleanup_err_ struct err e = ERR_INIT;
	child_init(&c);
	strvec_push(&c.args, "/bin/true");
	c.cwd = "/no/such/dir";
	CHECK_INT(child_start(&c, &e), -1);
	CHECK_STR(e.message, "chdir /no/such/dir: No such file or directory");
	CHECK_STR(json_string_value(json_object_get(e.details, "stage")), "chdir");
}

static int hook_returning_errno(void *arg)
{
	(void)arg;
	return EPERM;
}

static int hook_setting_errno(void *arg)
{
	(void)arg;
	errno = EROFS;
	return -1;
}

static int hook_setting_umask(void *arg)
{
	umask(*(mode_t *)arg);
	return 0;
}

TEST(child_before_exec_hook_runs_and_can_abort)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	child_init(&c);
	strvec_push(&c.args, "/bin/true");
	c.before_exec = hook_returning_errno;
	CHECK_INT(child_start(&c, &e), -1);
	CHECK_STR(e.message, "before_exec hook: Operation not permitted");
	child_release(&c);

	child_init(&c);
	strvec_push(&c.args, "/bin/true");
	c.before_exec = hook_setting_errno;
	CHECK_INT(child_start(&c, &e), -1);
	CHECK_STR(e.message, "before_exec hook: Read-only file system");
	child_release(&c);

	mode_t mask = 027;
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sh", "-c", "umask"));
	c.before_exec = hook_setting_umask;
	c.before_exec_arg = &mask;
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_STR(out.buf, "0027\n");
}

/* clone_flags: the child starts in the new namespaces (here PID 1 of a new PID namespace); a refused
 * clone is reported with stage "clone". */
TEST(child_clone_flags_start_the_child_in_new_namespaces)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sh", "-c", "echo $$"));
	c.clone_flags = CLONE_NEWUSER | CLONE_NEWPID;
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_STR(out.buf, "1\n");
	child_release(&c);

	child_init(&c);
	strvec_push(&c.args, "/bin/true");
	c.clone_flags = CLONE_NEWUSER | CLONE_FS; /* the kernel refuses this pair (EINVAL) */
	CHECK_INT(child_start(&c, &e), -1);
	CHECK_STR(json_string_value(json_object_get(e.details, "stage")), "clone");
	CHECK_INT((int)json_integer_value(json_object_get(e.details, "errno")), EINVAL);
}

/* A child started with clone_flags (0: a plain fork, as `admin serve` starts an executor) and clone_cgroup_fd
 * a new cgroup2 group says it is in that group and was told it was born there. */
static void clone_into_new_group(unsigned long clone_flags)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	const char *root =
		access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0 ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
	_cleanup_free_ char *name = xasprintf("agor-unit-%d", (int)getpid());
	_cleanup_free_ char *dir = xasprintf("%s/%s", root, name);
	_cleanup_free_ char *want = xasprintf("0::/%s\n", name);
	CHECK(geteuid() == 0 && mkdir(dir, 0755) == 0);
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), born = -1;
	CHECK(fd >= 0);
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sh", "-c", "grep ^0:: /proc/self/cgroup"));
	c.clone_flags = clone_flags;
	c.clone_cgroup_fd = fd;
	c.born_in_cgroup = &born;
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_STR(out.buf, want);
	CHECK_INT(born, 1);
	child_release(&c);
	close(fd);
	CHECK_INT(rmdir(dir), 0);
}

/* clone_cgroup_fd: the child is born in that cgroup2 group (clone3's CLONE_INTO_CGROUP) and told so, with new
 * namespaces or without; a directory that is no cgroup2 group refuses the start (no fallback to a child outside).
 * Root, with a cgroup2 mount (/sys/fs/cgroup or, hybrid, /sys/fs/cgroup/unified), is needed to make a group:
 * CHECKed, not skipped. */
TEST(child_clone_cgroup_fd_starts_the_child_inside_that_group)
{
	_cleanup_child_ struct child c;
	_cleanup_err_ struct err e = ERR_INIT;
	int born = -1;
	clone_into_new_group(CLONE_NEWPID);
	clone_into_new_group(0);

	int fd = open(unit_tmpdir(), O_PATH | O_DIRECTORY | O_CLOEXEC);
	child_init(&c);
	strvec_push(&c.args, "/bin/true");
	c.clone_flags = CLONE_NEWPID;
	c.clone_cgroup_fd = fd;
	c.born_in_cgroup = &born;
	CHECK_INT(child_start(&c, &e), -1);
	CHECK_STR(json_string_value(json_object_get(e.details, "stage")), "clone");
	close(fd);
}

static char *pattern(size_t n)
{
	char *p = xmalloc(n);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(i * 131 + (i >> 12));
	return p;
}

static int all_zero(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

TEST(child_run_moves_megabytes_both_ways)
{
	const char *scripts[] = {
		"head -c 1048576 /dev/zero >&2; exec cat",
		"head -c 1048576 /dev/zero >&2 & cat; wait",
		"cat; head -c 1048576 /dev/zero >&2",
	};
	size_t n = 4 * 1024 * 1024 + 12345;
	_cleanup_free_ char *input = pattern(n);
	for (size_t i = 0; i < ARRAY_SIZE(scripts); i++) {
		_cleanup_child_ struct child c;
		_cleanup_strbuf_ struct strbuf out = STRBUF_INIT, errb = STRBUF_INIT;
		_cleanup_err_ struct err e = ERR_INIT;
		child_init(&c);
		strvec_pushv(&c.args, ARGS("/bin/sh", "-c", scripts[i]));
		CHECK_INT(child_run(&c, input, n, &out, &errb, 0, &e), 0);
		CHECK(child_exited_ok(&c));
		CHECK_INT(out.len, n);
		CHECK(out.len == n && !memcmp(out.buf, input, n));
		CHECK_INT(errb.len, 1048576);
		CHECK(all_zero(errb.buf, errb.len));
		CHECK_INT(c.out_dropped, 0);
		CHECK_INT(c.err_dropped, 0);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
}

TEST(child_run_survives_signal_interruptions)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: every blocking call sees EINTR */
	sigemptyset(&sa.sa_mask);
	CHECK_INT(sigaction(SIGALRM, &sa, NULL), 0);
	struct itimerval every_ms = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };
	CHECK_INT(setitimer(ITIMER_REAL, &every_ms, NULL), 0);

	size_t n = 2 * 1024 * 1024;
	_cleanup_free_ char *input = pattern(n);
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sh", "-c", "cat; sleep 0.2"));
	c.timeout_ms = 10000;
	CHECK_INT(child_run(&c, input, n, &out, NULL, 0, &e), 0);
	setitimer(ITIMER_REAL, &off, NULL);
	CHECK(child_exited_ok(&c));
	CHECK(out.len == n && !memcmp(out.buf, input, n));
}

TEST(child_timeout_kills_the_whole_group)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT, pid_text = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	_cleanup_free_ char *pidfile = tmp_path("bg.pid");
	struct timespec t0;
	/* Orphans of the killed shell are reparented to us, so we can see them die. */
	CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sh", "-c", "sleep 100 & echo $! > \"$1\"; sleep 100", "sh", pidfile));
	c.new_process_group = 1;
	c.timeout_ms = 200;
	c.kill_grace_ms = 5000;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	long long ms = elapsed_ms_since(&t0);
	CHECK(ms >= 190);
	CHECK(ms < 3000);
	CHECK(c.timed_out);
	CHECK(!child_exited_ok(&c));
	CHECK(WIFSIGNALED(c.status));
	CHECK_INT(child_exit_code(&c), 128 + SIGTERM);

	CHECK_INT(strbuf_read_file(&pid_text, pidfile, 0), 0);
	pid_t bg = (pid_t)atoi(pid_text.buf);
	CHECK(bg > 0);
	CHECK(bg > 0 && process_is_gone(bg));
}

TEST(child_wait_enforces_timeout_without_pipes)
{
	_cleanup_child_ struct child c;
	_cleanup_err_ struct err e = ERR_INIT;
	struct timespec t0;
	int status = 0;
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sleep", "100"));
	c.stdin_io = CHILD_IO_NULL;
	c.timeout_ms = 100;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_INT(child_start(&c, &e), 0);
	CHECK_INT(child_wait(&c, &status, &e), 0);
	CHECK(elapsed_ms_since(&t0) < 3000);
	CHECK(c.timed_out);
	CHECK_INT(status, c.status);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}

static void count_tick(void *arg)
{
	(*(int *)arg)++;
}

TEST(child_on_tick_runs_while_child_run_and_child_wait_wait)
{
	_cleanup_child_ struct child c;
	_cleanup_err_ struct err e = ERR_INIT;
	int ticks = 0;
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sleep", "0.35"));
	c.on_tick = count_tick;
	c.on_tick_arg = &ticks;
	c.tick_ms = 50;
	struct strbuf out = STRBUF_INIT;
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	strbuf_release(&out);
	CHECK(ticks >= 4 && ticks <= 8);
	CHECK_INT(child_tick(&c), -1); /* reaped: no more ticks */
	child_release(&c);
	ticks = 0;
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sleep", "0.35"));
	c.on_tick = count_tick;
	c.on_tick_arg = &ticks;
	c.tick_ms = 50;
	int status;
	CHECK_INT(child_start(&c, &e), 0);
	CHECK_INT(child_wait(&c, &status, &e), 0);
	CHECK(ticks >= 4 && ticks <= 8);
}

TEST(child_ignoring_sigterm_is_killed_after_grace)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	struct timespec t0;
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sh", "-c", "trap '' TERM; sleep 100; echo survived"));
	c.new_process_group = 1;
	c.timeout_ms = 200;
	c.kill_grace_ms = 300;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	long long ms = elapsed_ms_since(&t0);
	CHECK(ms >= 480);
	CHECK(ms < 3000);
	CHECK(c.timed_out);
	CHECK(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGKILL);
	CHECK_INT(child_exit_code(&c), 128 + SIGKILL);
	CHECK_STR(out.buf, "");
}

TEST(child_run_tolerates_a_child_that_does_not_read)
{
	size_t n = 4 * 1024 * 1024;
	_cleanup_free_ char *input = pattern(n);
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	sigset_t mask, pending;

	child_init(&c);
	strvec_push(&c.args, "/bin/true");
	CHECK_INT(child_run(&c, input, n, &out, NULL, 0, &e), 0);
	CHECK(child_exited_ok(&c));
	child_release(&c);

	child_init(&c);
	strvec_pushv(&c.args, ARGS("/usr/bin/head", "-c", "10"));
	CHECK_INT(child_run(&c, input, n, &out, NULL, 0, &e), 0);
	CHECK(child_exited_ok(&c));
	CHECK(out.len == 10 && !memcmp(out.buf, input, 10));

	/* No SIGPIPE left pending and the signal mask is as it was. */
	sigemptyset(&pending);
	sigpending(&pending);
	CHECK(!sigismember(&pending, SIGPIPE));
	sigprocmask(SIG_SETMASK, NULL, &mask);
	CHECK(!sigismember(&mask, SIGPIPE));
}

TEST(child_max_capture_keeps_stdout_head_and_stderr_tail)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT, errb = STRBUF_INIT;
	_cleanup_strbuf_ struct strbuf want_out = STRBUF_INIT, want_err = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	for (int i = 0; i < 2000; i++) {
		strbuf_addf(&want_out, "o%d\n", i);
		strbuf_addf(&want_err, "e%d\n", i);
	}
	strbuf_addstr(&errb, "PREFIX:");
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sh", "-c",
				   "i=0; while [ $i -lt 2000 ]; do echo o$i; echo e$i >&2; "
				   "i=$((i+1)); done"));
	CHECK_INT(child_run(&c, NULL, 0, &out, &errb, 100, &e), 0);
	CHECK(child_exited_ok(&c));
	CHECK_INT(out.len, 100);
	CHECK(!memcmp(out.buf, want_out.buf, 100));
	CHECK_INT(errb.len, 7 + 100);
	CHECK(!memcmp(errb.buf, "PREFIX:", 7));
	CHECK(!memcmp(errb.buf + 7, want_err.buf + want_err.len - 100, 100));
	CHECK_INT(c.out_dropped, want_out.len - 100);
	CHECK_INT(c.err_dropped, want_err.len - 100);
}

TEST(child_exit_codes_and_signal_deaths)
{
	struct {
		const char *script;
		int code;
	} cases[] = {
		{ "exit 0", 0 },
		{ "exit 7", 7 },
		{ "kill -USR1 $$", 128 + SIGUSR1 },
		{ "kill -KILL $$", 128 + SIGKILL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_child_ struct child c;
		_cleanup_err_ struct err e = ERR_INIT;
		child_init(&c);
		strvec_pushv(&c.args, ARGS("/bin/sh", "-c", cases[i].script));
		CHECK_INT(child_run(&c, NULL, 0, NULL, NULL, 0, &e), 0);
		CHECK_INT(child_exit_code(&c), cases[i].code);
		CHECK_INT(child_exited_ok(&c), cases[i].code == 0);
	}
}

TEST(child_set_ids_drops_to_nobody)
{
	if (getuid() != 0)
		return; /* needs root: nothing to check otherwise */
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sh", "-c", "id -u; id -g; id -G"));
	strvec_setenv(&c.env, "PATH", "/usr/bin:/bin");
	c.cwd = "/";
	c.set_ids = 1;
	c.uid = 65534;
	c.gid = 65534;
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_STR(out.buf, "65534\n65534\n65534\n");
	child_release(&c);

	const gid_t groups[] = { 65534, 100 };
	child_init(&c);
	strbuf_reset(&out);
	strvec_pushv(&c.args, ARGS("/usr/bin/id", "-G"));
	c.set_ids = 1;
	c.uid = 65534;
	c.gid = 65534;
	c.groups = groups;
	c.ngroups = ARRAY_SIZE(groups);
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_STR(out.buf, "65534 100\n");
	child_release(&c);

	/* chdir happens as the new user: a root-only directory is refused. */
	_cleanup_free_ char *want = xasprintf("chdir %s: Permission denied", unit_tmpdir());
	CHECK_INT(chmod(unit_tmpdir(), 0700), 0);
	child_init(&c);
	strvec_push(&c.args, "/bin/true");
	c.cwd = unit_tmpdir();
	c.set_ids = 1;
	c.uid = 65534;
	c.gid = 65534;
	CHECK_INT(child_start(&c, &e), -1);
	CHECK_STR(e.message, want);
}

static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return 1;
	return 0;
}

TEST(child_inherits_no_descriptor_beyond_stdio)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	int fd = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
	CHECK(fd >= 0);
	CHECK_INT(dup2(fd, 100), 100);
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/ls", "/proc/self/fd"));
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK(has_line(out.buf, "0") && has_line(out.buf, "1") && has_line(out.buf, "2"));
	CHECK(!has_line(out.buf, "100"));
	for (const char *p = out.buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		CHECK(atoi(p) < 10); /* only ls's own descriptors besides 0-2 */
	child_release(&c);

	/* The parent's ends are close-on-exec. */
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sleep", "100"));
	c.stdin_io = c.stdout_io = c.stderr_io = CHILD_IO_PIPE;
	c.new_process_group = 1;
	CHECK_INT(child_start(&c, &e), 0);
	CHECK(fcntl(c.in, F_GETFD) & FD_CLOEXEC);
	CHECK(fcntl(c.out, F_GETFD) & FD_CLOEXEC);
	CHECK(fcntl(c.err, F_GETFD) & FD_CLOEXEC);
	if (c.pidfd >= 0)
		CHECK(fcntl(c.pidfd, F_GETFD) & FD_CLOEXEC);
	child_kill_group(&c, SIGKILL);
	CHECK_INT(child_wait(&c, NULL, &e), 0);
	CHECK_INT(child_exit_code(&c), 128 + SIGKILL);
}

/* The line of /proc/PID/status starting with key, without its newline (NULL when absent). */
static char *status_line(const char *status, const char *key)
{
	for (const char *p = status; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, strlen(key)))
			return xstrndup(p, strcspn(p, "\n"));
	return NULL;
}

TEST(child_resets_signal_dispositions_and_mask)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	sigset_t block;
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_BLOCK, &block, NULL);
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/cat", "/proc/self/status"));
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	_cleanup_free_ char *blocked = status_line(out.buf, "SigBlk:");
	_cleanup_free_ char *ignored = status_line(out.buf, "SigIgn:");
	CHECK_STR(blocked, "SigBlk:\t0000000000000000");
	CHECK_STR(ignored, "SigIgn:\t0000000000000000");
}

TEST(child_fd_and_stdout_redirections)
{
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	_cleanup_free_ char *in_path = tmp_path("in");
	_cleanup_free_ char *out_path = tmp_path("out");
	_cleanup_strbuf_ struct strbuf file = STRBUF_INIT;
	write_file(in_path, "from file\n", 0600);
	_cleanup_close_ int in_fd = open(in_path, O_RDONLY | O_CLOEXEC);
	CHECK(in_fd >= 0);
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sh", "-c", "cat; echo err >&2"));
	c.stdin_io = CHILD_IO_FD;
	c.stdin_fd = in_fd;
	c.stderr_io = CHILD_IO_STDOUT;
	CHECK_INT(child_run(&c, NULL, 0, &out, NULL, 0, &e), 0);
	CHECK_STR(out.buf, "from file\nerr\n");
	child_release(&c);

	_cleanup_close_ int out_fd = open(out_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sh", "-c", "cat; echo to-file; echo err >&2"));
	c.stdin_io = CHILD_IO_NULL;
	c.stdout_io = CHILD_IO_FD;
	c.stdout_fd = out_fd;
	c.stderr_io = CHILD_IO_NULL;
	CHECK_INT(child_start(&c, &e), 0);
	CHECK_INT(child_wait(&c, NULL, &e), 0);
	CHECK_INT(strbuf_read_file(&file, out_path, 0), 0);
	CHECK_STR(file.buf, "to-file\n");
}

TEST(child_kill_all_kills_running_children)
{
	_cleanup_child_ struct child grouped, single;
	_cleanup_err_ struct err e = ERR_INIT;
	child_init(&grouped);
	child_init(&single);
	strvec_pushv(&grouped.args, ARGS("/bin/sleep", "100"));
	strvec_pushv(&single.args, ARGS("/bin/sleep", "100"));
	grouped.new_process_group = 1;
	CHECK_INT(child_start(&grouped, &e), 0);
	CHECK_INT(child_start(&single, &e), 0);
	child_kill_all(SIGKILL);
	CHECK_INT(child_wait(&grouped, NULL, &e), 0);
	CHECK_INT(child_wait(&single, NULL, &e), 0);
	CHECK(WIFSIGNALED(grouped.status) && WTERMSIG(grouped.status) == SIGKILL);
	CHECK(WIFSIGNALED(single.status) && WTERMSIG(single.status) == SIGKILL);
	child_kill_all(SIGKILL); /* nothing registered any more: harmless */
}

TEST(child_release_kills_and_reaps_a_running_child)
{
	struct child c;
	_cleanup_err_ struct err e = ERR_INIT;
	child_init(&c);
	strvec_pushv(&c.args, ARGS("/bin/sleep", "100"));
	c.new_process_group = 1;
	CHECK_INT(child_start(&c, &e), 0);
	pid_t pid = c.pid;
	child_release(&c);
	CHECK(kill(pid, 0) < 0 && errno == ESRCH);
}
