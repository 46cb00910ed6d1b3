/* child.c — starts, feeds, watches and reaps child processes (the contract is in child.h).
 * Between fork and exec it never calls anything not async-signal-safe: no malloc, stdio, locks. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "banned.h"

extern char **environ;

/* These numbers are shared by every architecture since Linux 5.x; old headers may lack them. */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* 32-bit architectures have 16-bit legacy id calls; their 32-bit variants carry the suffix. */
#ifdef SYS_setresuid32
#define NR_SETGROUPS SYS_setgroups32
#define NR_SETRESGID SYS_setresgid32
#define NR_SETRESUID SYS_setresuid32
#else
#define NR_SETGROUPS SYS_setgroups
#define NR_SETRESGID SYS_setresgid
#define NR_SETRESUID SYS_setresuid
#endif

#define DEFAULT_PATH	      "/usr/local/bin:/usr/bin:/bin"
#define DRAIN_AFTER_KILL_MS   500 /* how long child_run() still reads pipes after SIGKILL */
#define POLL_WITHOUT_PIDFD_MS 10  /* how often the leader is checked when there is no pidfd */
#define READ_CHUNK	      65536

static const char *const std_names[3] = { "stdin", "stdout", "stderr" };

/* ---- time ------------------------------------------------------------------------------ */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int clamp_ms(int64_t ms)
{
	if (ms < 0)
		return 0;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL); /* EINTR: the caller re-checks the clock anyway */
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* ---- registry of running children ---------------------------------------------------------
 * Slots hold the kill() target of each running child (-pgid or pid; 0 = free). Slots are
 * claimed and released with atomic operations, chunks are appended and never freed, so a
 * signal handler can walk the registry at any moment. */

#define REGISTRY_CHUNK_SLOTS 64

struct registry_chunk {
	int target[REGISTRY_CHUNK_SLOTS];
	struct registry_chunk *next;
};

static struct registry_chunk registry_head;

static struct registry_chunk *registry_next_chunk(struct registry_chunk *chunk)
{
	struct registry_chunk *next = __atomic_load_n(&chunk->next, __ATOMIC_ACQUIRE);
	if (next)
		return next;
	struct registry_chunk *fresh = xcalloc(1, sizeof(*fresh));
	if (__atomic_compare_exchange_n(&chunk->next, &next, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return fresh;
	free(fresh); /* another thread appended one first: use that */
	return next;
}

static int *registry_add(int target)
{
	for (struct registry_chunk *chunk = &registry_head;; chunk = registry_next_chunk(chunk)) {
		for (int i = 0; i < REGISTRY_CHUNK_SLOTS; i++) {
			int expected = 0;
			if (__atomic_compare_exchange_n(&chunk->target[i], &expected, target, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED))
				return &chunk->target[i];
		}
	}
}

static void registry_remove(struct child *c)
{
	if (c->registry_slot_) {
		__atomic_store_n(c->registry_slot_, 0, __ATOMIC_RELEASE);
		c->registry_slot_ = NULL;
	}
}

void child_on_stop_signals(void (*handler)(int))
{
	struct sigaction sa = { .sa_handler = handler };
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

void child_kill_all(int sig)
{
	int saved_errno = errno;
	for (struct registry_chunk *chunk = &registry_head; chunk;
	     chunk = __atomic_load_n(&chunk->next, __ATOMIC_ACQUIRE)) {
		for (int i = 0; i < REGISTRY_CHUNK_SLOTS; i++) {
			int target = __atomic_load_n(&chunk->target[i], __ATOMIC_ACQUIRE);
			if (target)
				kill(target, sig);
		}
	}
	errno = saved_errno;
}

/* ---- what the child needs, prepared before fork ------------------------------------------- */

enum child_stage {
	STAGE_NONE,
	STAGE_SETPGID,
	STAGE_FDS,
	STAGE_HOOK,
	STAGE_SETGROUPS,
	STAGE_SETGID,
	STAGE_SETUID,
	STAGE_REGAIN,
	STAGE_CHDIR,
	STAGE_EXEC,
};

static const char *const stage_names[] = {
	[STAGE_NONE] = "unknown",     [STAGE_SETPGID] = "setpgid",     [STAGE_FDS] = "fds",
	[STAGE_HOOK] = "before_exec", [STAGE_SETGROUPS] = "setgroups", [STAGE_SETGID] = "setgid",
	[STAGE_SETUID] = "setuid",    [STAGE_REGAIN] = "setuid",       [STAGE_CHDIR] = "chdir",
	[STAGE_EXEC] = "exec",
};

/* What a failing child writes to the report pipe (smaller than PIPE_BUF: one atomic write). */
struct exec_report {
	int stage;
	int errnum;
};

struct exec_plan {
	struct strvec envp;	  /* the child's complete environment */
	struct strvec candidates; /* paths execve() is tried on, in order */
	int child_fd[3];	  /* what the child's 0, 1, 2 become; -1 = left alone */
	int pipe_end[3];	  /* the child's ends of new pipes (the parent closes them) */
	int devnull;
	int stderr_to_stdout;
	int report_rd, report_wr;
	long max_fd; /* bound of the close loop when close_range() is unavailable */
};

static void plan_init(struct exec_plan *p)
{
	memset(p, 0, sizeof(*p));
	strvec_init(&p->envp);
	strvec_init(&p->candidates);
	for (int i = 0; i < 3; i++)
		p->child_fd[i] = p->pipe_end[i] = -1;
	p->devnull = p->report_rd = p->report_wr = -1;
}

/* Closes what only the child needed; safe to call twice. */
static void plan_close_child_side(struct exec_plan *p)
{
	for (int i = 0; i < 3; i++)
		close_fd(&p->pipe_end[i]);
	close_fd(&p->devnull);
	close_fd(&p->report_wr);
}

static void plan_release(struct exec_plan *p)
{
	plan_close_child_side(p);
	close_fd(&p->report_rd);
	strvec_clear(&p->envp);
	strvec_clear(&p->candidates);
}

static size_t env_name_len(const char *entry)
{
	return strcspn(entry, "=");
}

/* Index of the first entry of env at or after `from` naming the same variable as entry, or -1. */
static long env_find_name(const struct strvec *env, size_t from, const char *entry)
{
	size_t len = env_name_len(entry);
	for (size_t i = from; i < env->nr; i++)
		if (env_name_len(env->v[i]) == len && !strncmp(env->v[i], entry, len))
			return (long)i;
	return -1;
}

/* The parent's environ (when inherited) minus every name env mentions, then env's NAME=VALUE
 * entries (a later entry for the same name wins; "NAME" alone only unsets). */
static void build_env(const struct child *c, struct strvec *envp)
{
	if (c->inherit_env)
		for (char **p = environ; p && *p; p++)
			if (env_find_name(&c->env, 0, *p) < 0)
				strvec_push(envp, *p);
	for (size_t i = 0; i < c->env.nr; i++) {
		const char *entry = c->env.v[i];
		if (strchr(entry, '=') && env_find_name(&c->env, i + 1, entry) < 0)
			strvec_push(envp, entry);
	}
}

/* execvpe's search, decided before fork: a name with '/' is tried as is, a bare name in each
 * absolute directory of the child's PATH. */
static void build_candidates(const char *prog, const struct strvec *envp, struct strvec *out)
{
	if (strchr(prog, '/')) {
		strvec_push(out, prog);
		return;
	}
	if (!*prog)
		return;
	const char *path = strvec_getenv(envp, "PATH");
	if (!path)
		path = DEFAULT_PATH;
	for (const char *dir = path;;) {
		const char *end = strchrnul(dir, ':');
		if (end > dir && *dir == '/')
			strvec_pushf(out, "%.*s/%s", (int)(end - dir), dir, prog);
		if (!*end)
			break;
		dir = end + 1;
	}
}

static int open_devnull(struct exec_plan *p, struct err *e)
{
	if (p->devnull >= 0)
		return 0;
	p->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	return p->devnull < 0 ? err_errno(e, errno, "open /dev/null") : 0;
}

/* Decides what the child's descriptor i becomes; creates the pipe for CHILD_IO_PIPE. */
static int prepare_stream(struct exec_plan *p, int i, enum child_io io, int given_fd, int *parent_end, struct err *e)
{
	int fds[2];
	switch (io) {
	case CHILD_IO_INHERIT:
		return 0;
	case CHILD_IO_NULL:
		if (open_devnull(p, e) < 0)
			return -1;
		p->child_fd[i] = p->devnull;
		return 0;
	case CHILD_IO_FD:
		if (given_fd < 0)
			return err_set(e, E_INTERNAL, "child %s: CHILD_IO_FD without a descriptor", std_names[i]);
		p->child_fd[i] = given_fd;
		return 0;
	case CHILD_IO_PIPE:
		if (pipe2(fds, O_CLOEXEC) < 0)
			return err_errno(e, errno, "pipe for child %s", std_names[i]);
		p->pipe_end[i] = p->child_fd[i] = i == 0 ? fds[0] : fds[1];
		*parent_end = i == 0 ? fds[1] : fds[0];
		return 0;
	case CHILD_IO_STDOUT:
		if (i != 2)
			break;
		p->stderr_to_stdout = 1;
		return 0;
	}
	return err_set(e, E_INTERNAL, "child %s: invalid mode %d", std_names[i], (int)io);
}

/* The report pipe's write end is kept above 2 so that setting up 0-2 can never clobber it. */
static int open_report_pipe(struct exec_plan *p, struct err *e)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(e, errno, "pipe");
	p->report_rd = fds[0];
	p->report_wr = fds[1];
	if (p->report_wr < 3) {
		int high = fcntl(p->report_wr, F_DUPFD_CLOEXEC, 3);
		if (high < 0)
			return err_errno(e, errno, "fcntl F_DUPFD_CLOEXEC");
		close_fd(&p->report_wr);
		p->report_wr = high;
	}
	return 0;
}

static long descriptor_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 20))
		return 1L << 20;
	return (long)rl.rlim_cur;
}

static int prepare_plan(struct child *c, struct exec_plan *p, struct err *e)
{
	build_env(c, &p->envp);
	build_candidates(c->args.v[0], &p->envp, &p->candidates);
	p->max_fd = descriptor_limit();
	if (prepare_stream(p, 0, c->stdin_io, c->stdin_fd, &c->in, e) < 0 ||
	    prepare_stream(p, 1, c->stdout_io, c->stdout_fd, &c->out, e) < 0 ||
	    prepare_stream(p, 2, c->stderr_io, c->stderr_fd, &c->err, e) < 0)
		return -1;
	return open_report_pipe(p, e);
}

/* ---- in the child: async-signal-safe only ------------------------------------------------- */

static NORETURN void report_and_exit(int fd, int stage, int errnum)
{
	struct exec_report r = { stage, errnum };
	while (write(fd, &r, sizeof(r)) < 0 && errno == EINTR)
		;
	_exit(127);
}

/* The kernel's struct sigaction (Linux rt_sigaction ABI, 64 signals). */
struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* Every disposition back to SIG_DFL and the mask emptied — through the raw system calls, because libc
 * refuses to touch the signals it reserves (musl: 32–34), which an ignoring parent would pass on. */
static void reset_signals(void)
{
	struct kernel_sigaction sa = { .handler = SIG_DFL };
	for (int sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, &sa, NULL, sizeof(sa.mask));
	uint64_t none = 0;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));
}

static int dup2_retrying(int from, int to)
{
	int r;
	while ((r = dup2(from, to)) < 0 && (errno == EINTR || errno == EBUSY))
		;
	return r;
}

/* Every source is first copied above 2, so sources that are themselves 0-2 (even swapped)
 * survive until all targets are set; dup2() leaves the targets without FD_CLOEXEC. */
static int setup_std_fds(const struct exec_plan *p)
{
	int high[3] = { -1, -1, -1 };
	for (int i = 0; i < 3; i++)
		if (p->child_fd[i] >= 0 && (high[i] = fcntl(p->child_fd[i], F_DUPFD_CLOEXEC, 3)) < 0)
			return -1;
	for (int i = 0; i < 3; i++)
		if (high[i] >= 0 && dup2_retrying(high[i], i) < 0)
			return -1;
	if (p->stderr_to_stdout && dup2_retrying(1, 2) < 0)
		return -1;
	return 0;
}

static int run_hook(const struct child *c)
{
	errno = 0;
	int r = c->before_exec(c->before_exec_arg);
	if (r == 0)
		return 0;
	return r > 0 ? r : (errno ? errno : ECANCELED);
}

/* setgroups, setresgid, setresuid, then proof that the change holds. Raw system calls: the
 * forked child is single-threaded, and libc's wrappers would broadcast to all threads. */
static int drop_ids(const struct child *c, int *stage)
{
	const gid_t *groups = c->groups ? c->groups : &c->gid;
	size_t ngroups = c->groups ? c->ngroups : 1;
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;

	*stage = STAGE_SETGROUPS;
	if (syscall(NR_SETGROUPS, ngroups, groups) < 0)
		return -1;
	*stage = STAGE_SETGID;
	if (syscall(NR_SETRESGID, c->gid, c->gid, c->gid) < 0)
		return -1;
	*stage = STAGE_SETUID;
	if (syscall(NR_SETRESUID, c->uid, c->uid, c->uid) < 0)
		return -1;
	*stage = STAGE_REGAIN;
	if (getresuid(&ruid, &euid, &suid) < 0 || getresgid(&rgid, &egid, &sgid) < 0)
		return -1;
	int stuck = ruid == c->uid && euid == c->uid && suid == c->uid && rgid == c->gid && egid == c->gid &&
		    sgid == c->gid;
	if (stuck && c->uid != 0 && syscall(NR_SETRESUID, -1, 0, -1) == 0)
		stuck = 0;
	if (stuck && c->uid != 0 && c->gid != 0 && syscall(NR_SETRESGID, -1, 0, -1) == 0)
		stuck = 0;
	errno = EPERM;
	return stuck ? 0 : -1;
}

static void close_range_or_loop(unsigned first, unsigned last, long max_fd)
{
	if (first > last)
		return;
	if (syscall(SYS_close_range, first, last, 0) == 0)
		return;
	for (long fd = first; fd <= (long)last && fd < max_fd; fd++)
		close((int)fd);
}

static int is_path_search_miss(int errnum)
{
	return errnum == ENOENT || errnum == ENOTDIR || errnum == ESTALE || errnum == ENODEV || errnum == ETIMEDOUT;
}

/* Returns the errno to report: the first hard error, else EACCES if any candidate had it,
 * else the last miss (ENOENT when there was no candidate at all). */
static int exec_candidates(const struct exec_plan *p, char *const argv[])
{
	int seen_eacces = 0, last = ENOENT;
	for (size_t i = 0; i < p->candidates.nr; i++) {
		execve(p->candidates.v[i], argv, p->envp.v);
		int errnum = errno;
		if (errnum == EACCES)
			seen_eacces = 1;
		else if (is_path_search_miss(errnum))
			last = errnum;
		else
			return errnum;
	}
	return seen_eacces ? EACCES : last;
}

/* execveat(fd, "", AT_EMPTY_PATH), still close-on-exec so a binary does not inherit it; a script needs
 * its interpreter to open /dev/fd/N, which fails (ENOENT) while the descriptor is close-on-exec, so
 * then once more with the flag cleared. Returns the errno. */
static int exec_descriptor(int fd, char *const argv[], char *const envp[])
{
	syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
	if (errno != ENOENT)
		return errno;
	int flags = fcntl(fd, F_GETFD);
	if (flags < 0 || fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
		return errno;
	syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
	return errno;
}

/* The last steps before the program: ids, directory, descriptors, exec. */
static NORETURN void exec_program(const struct child *c, const struct exec_plan *p)
{
	int report = p->report_wr;
	int stage;
	if (c->set_ids && drop_ids(c, &stage) < 0)
		report_and_exit(report, stage, errno);
	if (c->cwd_fd >= 0 ? fchdir(c->cwd_fd) < 0 : c->cwd && chdir(c->cwd) < 0)
		report_and_exit(report, STAGE_CHDIR, errno);
	if (c->exec_fd >= 0) {
		unsigned lo = (unsigned)(report < c->exec_fd ? report : c->exec_fd);
		unsigned hi = (unsigned)(report < c->exec_fd ? c->exec_fd : report);
		close_range_or_loop(3, lo - 1, p->max_fd);
		close_range_or_loop(lo + 1, hi - 1, p->max_fd);
		close_range_or_loop(hi + 1, ~0U, p->max_fd);
		report_and_exit(report, STAGE_EXEC, exec_descriptor(c->exec_fd, c->args.v, p->envp.v));
	}
	close_range_or_loop(3, (unsigned)report - 1, p->max_fd);
	close_range_or_loop((unsigned)report + 1, ~0U, p->max_fd);
	report_and_exit(report, STAGE_EXEC, exec_candidates(p, c->args.v));
}

struct child_entry_args {
	const struct child *c;
	const struct exec_plan *p;
};

enum { VFORK_STACK_BYTES = 32768 };

static int program_entry(void *arg)
{
	const struct child_entry_args *a = arg;
	exec_program(a->c, a->p);
}

/* become_init: this process starts the program and stays as its init. The program shares this process's
 * memory until it execs (CLONE_VM|CLONE_VFORK, on a stack in this frame): no copy of the page tables of a
 * process that is a copy of the whole executor. Under ASan it is a plain fork (see start_process). */
static NORETURN void start_program_then_init(const struct child *c, const struct exec_plan *p)
{
	struct child_entry_args a = { c, p };
#ifndef __SANITIZE_ADDRESS__
	char stack[VFORK_STACK_BYTES] __attribute__((aligned(16)));
	pid_t pid = clone(program_entry, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
#else
	pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		program_entry(&a);
#endif
	if (pid < 0)
		report_and_exit(p->report_wr, STAGE_HOOK, errno);
	c->become_init(c->before_exec_arg, pid);
	_exit(127); /* become_init never returns */
}

static NORETURN void child_main(const struct child *c, const struct exec_plan *p)
{
	int report = p->report_wr;
	int stage;

	reset_signals();
	if (c->new_process_group && setpgid(0, 0) < 0)
		report_and_exit(report, STAGE_SETPGID, errno);
	if (setup_std_fds(p) < 0)
		report_and_exit(report, STAGE_FDS, errno);
	if (c->before_exec && (stage = run_hook(c)) != 0)
		report_and_exit(report, STAGE_HOOK, stage);
	if (c->become_init)
		start_program_then_init(c, p);
	exec_program(c, p);
}

#ifndef __SANITIZE_ADDRESS__
static int child_entry(void *arg)
{
	const struct child_entry_args *a = arg;
	child_main(a->c, a->p);
}
#endif

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* clone3(2)'s argument, to the cgroup field (CLONE_ARGS_SIZE_VER2) */
struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
		cgroup;
};

/* A fork-like raw clone into the namespaces of clone_flags (if any), and into the cgroup of clone_cgroup_fd when
 * there is one and the kernel can (else the child is told so through *born_in_cgroup, before it exists). */
static pid_t raw_clone(const struct child *c)
{
	if (c->clone_cgroup_fd >= 0) {
		struct clone3_args args = { .flags = c->clone_flags | CLONE_INTO_CGROUP,
					    .exit_signal = SIGCHLD,
					    .cgroup = (uint64_t)c->clone_cgroup_fd };
		*c->born_in_cgroup = 1;
		pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
		if (pid >= 0 || (errno != ENOSYS && errno != E2BIG && errno != EINVAL))
			return pid;
		*c->born_in_cgroup = 0;
	}
	return (pid_t)syscall(SYS_clone, c->clone_flags | SIGCHLD, 0, 0, 0, 0);
}

/* Starts the child; returns its pid (or -1 with errno). With clone_flags it is cloned straight into
 * the namespaces they name, with clone_cgroup_fd into that cgroup. Otherwise, without a before_exec hook, it shares the
 * parent's memory until it execs (CLONE_VM|CLONE_VFORK, on a stack in this frame): a fork of the
 * daemon copies every page table and then pays a copy-on-write fault per page it touches, which on
 * a virtual machine costs more than the exec. child_main only makes system calls, so nothing of
 * the parent's memory changes. A hook may do anything (the sandbox unshares namespaces, which a
 * process sharing its memory cannot), so with one the child is forked; so it is under ASan, whose
 * bookkeeping would see the child's stack frames in the parent's memory. */
static pid_t start_process(const struct child *c, const struct exec_plan *p)
{
	if (c->clone_flags || c->clone_cgroup_fd >= 0) { /* straight into new namespaces or a cgroup: a fork */
		pid_t pid = raw_clone(c);
		if (pid == 0)
			child_main(c, p);
		return pid;
	}
#ifndef __SANITIZE_ADDRESS__
	if (!c->before_exec) {
		char stack[VFORK_STACK_BYTES] __attribute__((aligned(16)));
		struct child_entry_args a = { c, p };
		return clone(child_entry, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	}
#endif
	pid_t pid = fork();
	if (pid == 0)
		child_main(c, p);
	return pid;
}

/* ---- in the parent -------------------------------------------------------------------------- */

void child_init(struct child *c)
{
	memset(c, 0, sizeof(*c));
	strvec_init(&c->args);
	strvec_init(&c->env);
	c->stdin_fd = c->stdout_fd = c->stderr_fd = -1;
	c->exec_fd = -1;
	c->kill_grace_ms = CHILD_DEFAULT_KILL_GRACE_MS;
	c->pidfd = c->in = c->out = c->err = -1;
	c->cwd_fd = -1;
	c->clone_cgroup_fd = -1;
}

static void close_parent_ends(struct child *c)
{
	close_fd(&c->in);
	close_fd(&c->out);
	close_fd(&c->err);
}

/* Reads the child's (stage, errno); returns the bytes read: 0 means exec succeeded. */
static size_t read_report(int fd, struct exec_report *r)
{
	size_t got = 0;
	while (got < sizeof(*r)) {
		ssize_t n = read(fd, (char *)r + got, sizeof(*r) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static int report_error(const struct child *c, const struct exec_report *r, struct err *e)
{
	int stage = r->stage > STAGE_NONE && r->stage <= STAGE_EXEC ? r->stage : STAGE_NONE;
	_cleanup_free_ char *what = NULL;
	switch (stage) {
	case STAGE_EXEC:
		what = xasprintf("exec %s", c->args.v[0]);
		break;
	case STAGE_CHDIR:
		what = xasprintf("chdir %s", c->cwd);
		break;
	case STAGE_SETGROUPS:
	case STAGE_SETGID:
		what = xasprintf("%s %u", stage_names[stage], (unsigned)c->gid);
		break;
	case STAGE_SETUID:
	case STAGE_REGAIN:
		what = xasprintf("setuid %u", (unsigned)c->uid);
		break;
	case STAGE_HOOK:
		what = xstrdup("before_exec hook");
		break;
	case STAGE_FDS:
		what = xstrdup("setting up stdin/stdout/stderr");
		break;
	default:
		what = xstrdup(stage_names[stage]);
		break;
	}
	json_t *details = json_pack("{s:s,s:i}", "stage", stage_names[stage], "errno", r->errnum);
	if (stage == STAGE_REGAIN)
		return err_setd(e, E_SYSTEM, details, "%s: the old ids could be regained", what);
	return err_setd(e, E_SYSTEM, details, "%s: %s", what, strerror(r->errnum));
}

static void reap_failed_start(struct child *c)
{
	int status;
	registry_remove(c);
	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	c->pid = 0;
}

static int open_pidfd(pid_t pid)
{
	long fd = syscall(SYS_pidfd_open, pid, 0); /* always O_CLOEXEC */
	return fd < 0 ? -1 : (int)fd;
}

int child_start(struct child *c, struct err *e)
{
	if (c->pid > 0)
		return err_set(e, E_INTERNAL, "child_start: %s was already started", c->args.v[0]);
	if (!c->args.nr)
		return err_set(e, E_INTERNAL, "child_start: no program given");
	if (c->exec_fd >= 0 && c->exec_fd < 3)
		return err_set(e, E_INTERNAL, "child_start: exec_fd %d is a standard descriptor", c->exec_fd);

	struct exec_plan p;
	plan_init(&p);
	if (prepare_plan(c, &p, e) < 0) {
		plan_release(&p);
		close_parent_ends(c);
		return -1;
	}

	/* All signals blocked across fork: the child must not run the parent's handlers before
	 * it has reset them. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = start_process(c, &p);
	int fork_errno = errno;
	if (pid > 0) {
		c->pid = pid;
		c->started_ms_ = now_ms();
		c->next_tick_ms_ = c->started_ms_ + c->tick_ms;
		/* Both sides set the group, so it exists whichever runs first; this one fails
		 * harmlessly once the child has exec'd. */
		if (c->new_process_group)
			setpgid(pid, pid);
		c->registry_slot_ = registry_add(c->new_process_group ? -pid : pid);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	plan_close_child_side(&p);
	if (pid < 0) {
		plan_release(&p);
		close_parent_ends(c);
		if (c->clone_flags)
			return err_setd(e, E_SYSTEM, json_pack("{s:s,s:i}", "stage", "clone", "errno", fork_errno),
					"clone with new namespaces for %s: %s", c->args.v[0], strerror(fork_errno));
		return err_errno(e, fork_errno, "fork for %s", c->args.v[0]);
	}
	struct exec_report report;
	size_t got = read_report(p.report_rd, &report);
	plan_release(&p);
	if (got != 0) {
		if (got != sizeof(report))
			report = (struct exec_report){ STAGE_NONE, EIO };
		report_error(c, &report, e);
		reap_failed_start(c);
		close_parent_ends(c);
		return -1;
	}
	c->pidfd = open_pidfd(pid);
	if (c->on_started)
		c->on_started(pid, c->on_started_arg);
	return 0;
}

void child_kill_group(struct child *c, int sig)
{
	if (c->pid <= 0 || c->reaped)
		return;
	kill(c->new_process_group ? -c->pid : c->pid, sig);
}

enum { KILL_NONE, KILL_TERM_SENT, KILL_KILL_SENT };

/* The timeout as a state machine: SIGTERM at the deadline, SIGKILL when the grace is over or
 * the leader has exited after SIGTERM. Returns the milliseconds until the next step is due,
 * or -1 when there is none. */
static int advance_timeout(struct child *c, int leader_exited)
{
	if (c->timeout_ms <= 0 || c->kill_phase_ == KILL_KILL_SENT)
		return -1;
	int64_t now = now_ms();
	if (c->kill_phase_ == KILL_NONE) {
		int64_t deadline = c->started_ms_ + c->timeout_ms;
		if (now < deadline)
			return clamp_ms(deadline - now);
		c->timed_out = 1;
		child_kill_group(c, SIGTERM);
		c->kill_phase_ = KILL_TERM_SENT;
		c->kill_at_ms_ = now + (c->kill_grace_ms > 0 ? c->kill_grace_ms : 0);
	}
	if (leader_exited || now >= c->kill_at_ms_) {
		child_kill_group(c, SIGKILL);
		c->kill_phase_ = KILL_KILL_SENT;
		return -1;
	}
	return clamp_ms(c->kill_at_ms_ - now);
}

/* 1 when the child has exited (it stays unreaped), 0 when not, -1 with errno on error. */
static int leader_has_exited(const struct child *c)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		if (errno != EINTR)
			return -1;
	return si.si_pid != 0;
}

/* Waits up to timeout_ms (-1: forever) for the child to exit, without reaping it.
 * Returns 1 when it has exited, 0 on timeout, -1 with errno on error. */
int child_tick(struct child *c)
{
	if (!c->on_tick || c->tick_ms <= 0 || c->pid <= 0 || c->reaped)
		return -1;
	int64_t now = now_ms();
	if (now >= c->next_tick_ms_) {
		c->on_tick(c->on_tick_arg);
		c->next_tick_ms_ = now + c->tick_ms;
	}
	return clamp_ms(c->next_tick_ms_ - now);
}

/* The shorter of two poll timeouts (-1: none). */
static int sooner(int a, int b)
{
	if (a < 0)
		return b;
	return b < 0 || a < b ? a : b;
}

static int wait_for_exit(struct child *c, int timeout_ms)
{
	if (timeout_ms < 0 && !c->on_tick) {
		siginfo_t si;
		while (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOWAIT) < 0)
			if (errno != EINTR)
				return -1;
		return 1;
	}
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : now_ms() + timeout_ms;
	int nap = 1;
	for (;;) {
		int exited = leader_has_exited(c);
		if (exited)
			return exited;
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return 0;
		int wait = sooner(clamp_ms(left), child_tick(c));
		if (c->pidfd >= 0) {
			struct pollfd pfd = { c->pidfd, POLLIN, 0 };
			if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
				return -1;
			continue;
		}
		sleep_ms(wait < nap ? wait : nap);
		nap = nap < 25 ? nap * 2 : 50;
	}
}

/* Leaves the registry while the zombie still holds the pid, then reaps it. */
static int reap(struct child *c, struct err *e)
{
	int status;
	registry_remove(c);
	close_fd(&c->pidfd);
	c->reaped = 1;
	while (waitpid(c->pid, &status, 0) < 0) {
		if (errno != EINTR) {
			c->status = -1;
			return err_errno(e, errno, "waitpid %d (%s)", (int)c->pid, c->args.v[0]);
		}
	}
	c->status = status;
	return 0;
}

int child_wait(struct child *c, int *status, struct err *e)
{
	if (c->pid <= 0 || c->reaped)
		return err_set(e, E_INTERNAL, "child_wait: no running child");
	for (;;) {
		int exited = wait_for_exit(c, advance_timeout(c, 0));
		if (exited < 0) {
			int saved = errno;
			reap(c, e);
			return err_errno(e, saved, "waiting for %s", c->args.v[0]);
		}
		if (exited)
			break;
	}
	if (c->kill_phase_ == KILL_TERM_SENT)
		advance_timeout(c, 1); /* the leader is gone: the rest of its group goes too */
	if (reap(c, e) < 0)
		return -1;
	if (status)
		*status = c->status;
	return 0;
}

int child_exited_ok(const struct child *c)
{
	return c->reaped && c->status >= 0 && !c->timed_out && WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0;
}

int child_exit_code(const struct child *c)
{
	if (!c->reaped || c->status < 0)
		return -1;
	if (WIFEXITED(c->status))
		return WEXITSTATUS(c->status);
	if (WIFSIGNALED(c->status))
		return 128 + WTERMSIG(c->status);
	return -1;
}

void child_detach(struct child *c)
{
	registry_remove(c);
	c->reaped = 1; /* never waited for, never killed by us: init (or a subreaper) reaps it */
	c->status = 0;
	close_fd(&c->pidfd);
}

void child_release(struct child *c)
{
	if (c->pid > 0 && !c->reaped) {
		struct err ignored = ERR_INIT;
		child_kill_group(c, SIGKILL);
		reap(c, &ignored);
		err_clear(&ignored);
	}
	close_parent_ends(c);
	close_fd(&c->pidfd);
	strvec_clear(&c->args);
	strvec_clear(&c->env);
}

/* ---- child_run: feeding stdin and capturing stdout/stderr --------------------------------- */

/* SIGPIPE is blocked in this thread while child_run() writes, then the one our writes caused
 * (if any, and if none was pending before) is consumed before the old mask returns. */
struct sigpipe_guard {
	sigset_t old_mask;
	int was_pending;
};

static int sigpipe_pending(void)
{
	sigset_t pending;
	sigemptyset(&pending);
	sigpending(&pending);
	return sigismember(&pending, SIGPIPE) == 1;
}

static void sigpipe_block(struct sigpipe_guard *g)
{
	sigset_t pipe_only;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	g->was_pending = sigpipe_pending();
	pthread_sigmask(SIG_BLOCK, &pipe_only, &g->old_mask);
}

static void sigpipe_restore(struct sigpipe_guard *g)
{
	if (!g->was_pending && sigpipe_pending()) {
		sigset_t pipe_only;
		sigemptyset(&pipe_only);
		sigaddset(&pipe_only, SIGPIPE);
		struct timespec zero = { 0, 0 };
		while (sigtimedwait(&pipe_only, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &g->old_mask, NULL);
}

/* One captured stream: appended to sb from base on, at most max bytes (0 = all). */
struct capture {
	struct strbuf *sb; /* NULL: read and discard */
	size_t base;
	size_t max;
	int keep_tail; /* 0: keep the head */
	size_t *dropped;
	void (*on_data)(const char *data, size_t len, void *arg); /* every chunk as it is read, or NULL */
	void *on_data_arg;
};

static size_t captured(const struct capture *cap)
{
	return cap->sb->len - cap->base;
}

/* Cuts the front of the captured part down to max bytes once it exceeds max + slack. */
static void keep_tail(struct capture *cap, size_t slack)
{
	size_t have = captured(cap);
	if (!cap->max || have <= cap->max + slack)
		return;
	size_t cut = have - cap->max;
	memmove(cap->sb->buf + cap->base, cap->sb->buf + cap->base + cut, cap->max);
	strbuf_setlen(cap->sb, cap->base + cap->max);
	*cap->dropped += cut;
}

static void keep_head(struct capture *cap)
{
	size_t have = captured(cap);
	if (cap->max && have > cap->max) {
		*cap->dropped += have - cap->max;
		strbuf_setlen(cap->sb, cap->base + cap->max);
	}
}

static int head_is_full(const struct capture *cap)
{
	return !cap->keep_tail && cap->max && captured(cap) >= cap->max;
}

/* One read() from fd into cap: kept, or counted as dropped when there is no room for it. */
static ssize_t read_into_capture(int fd, struct capture *cap)
{
	char scratch[16384];
	if (!cap->sb || head_is_full(cap)) {
		ssize_t n = read(fd, scratch, sizeof(scratch));
		if (n > 0)
			*cap->dropped += (size_t)n;
		if (n > 0 && cap->on_data)
			cap->on_data(scratch, (size_t)n, cap->on_data_arg);
		return n;
	}
	struct strbuf *sb = cap->sb;
	strbuf_grow(sb, READ_CHUNK);
	ssize_t n = read(fd, sb->buf + sb->len, sb->alloc - sb->len - 1);
	if (n <= 0)
		return n;
	if (cap->on_data)
		cap->on_data(sb->buf + sb->len, (size_t)n, cap->on_data_arg);
	strbuf_setlen(sb, sb->len + (size_t)n);
	if (cap->keep_tail)
		keep_tail(cap, cap->max > READ_CHUNK ? cap->max : READ_CHUNK);
	else
		keep_head(cap);
	return n;
}

/* Reads what fd has now into cap (a bounded number of reads, so stdin is not starved);
 * closes fd at EOF. Returns 0, or -1 with errno on a read error. */
static int drain_output(int *fd, struct capture *cap)
{
	for (int round = 0; round < 16; round++) {
		ssize_t n = read_into_capture(*fd, cap);
		if (n == 0) {
			close_fd(fd);
			return 0;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
	}
	return 0;
}

/* Writes what the pipe takes now; closes stdin when all is written or the child stopped
 * reading (EPIPE). Returns 0, or -1 with errno on another write error. */
static int feed_stdin(int *fd, const char *input, size_t len, size_t *done)
{
	while (*done < len) {
		ssize_t n = write(*fd, input + *done, len - *done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EPIPE)
				break;
			return -1;
		}
		*done += (size_t)n;
	}
	close_fd(fd);
	return 0;
}

static void set_nonblocking(int fd)
{
	int flags = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* How long the next poll() may sleep, advancing the timeout; -2 means stop reading now. */
static int next_poll_timeout(struct child *c, int64_t *drain_until)
{
	int leader_exited = c->kill_phase_ == KILL_TERM_SENT && leader_has_exited(c) == 1;
	int wait = advance_timeout(c, leader_exited);
	if (c->kill_phase_ == KILL_KILL_SENT) {
		close_fd(&c->in);
		if (*drain_until < 0)
			*drain_until = now_ms() + DRAIN_AFTER_KILL_MS;
		int64_t left = *drain_until - now_ms();
		return left <= 0 ? -2 : clamp_ms(left);
	}
	if (c->kill_phase_ == KILL_TERM_SENT && c->pidfd < 0 && (wait < 0 || wait > POLL_WITHOUT_PIDFD_MS))
		wait = POLL_WITHOUT_PIDFD_MS;
	return wait;
}

/* The leader exited while its pipes are still open (a grandchild holds them): in its own process group
 * the leftovers die with it, and what is already in the pipes is drained for a short while. */
static void on_leader_exit(struct child *c, int64_t *drain_until)
{
	if (c->new_process_group)
		kill(-c->pid, SIGKILL); /* the leader is unreaped: its group id cannot have been reused */
	close_fd(&c->in);
	if (*drain_until < 0)
		*drain_until = now_ms() + DRAIN_AFTER_KILL_MS;
}

/* Bounds wait by the drain deadline; -2 once it has passed. */
static int bound_by_drain(int wait, int64_t drain_until)
{
	if (drain_until < 0)
		return wait;
	int64_t left = drain_until - now_ms();
	if (left <= 0)
		return -2;
	return wait < 0 || wait > left ? clamp_ms(left) : wait;
}

static int pump(struct child *c, const char *input, size_t input_len, struct capture *cap_out, struct capture *cap_err,
		struct err *e)
{
	size_t written = 0;
	int64_t drain_until = -1;
	int leader_gone = 0;
	set_nonblocking(c->in);
	set_nonblocking(c->out);
	set_nonblocking(c->err);
	if (c->in >= 0 && (!input || !input_len))
		close_fd(&c->in);

	while (c->in >= 0 || c->out >= 0 || c->err >= 0) {
		int wait = next_poll_timeout(c, &drain_until);
		if (wait != -2)
			wait = sooner(bound_by_drain(wait, drain_until), child_tick(c));
		if (wait == -2)
			break;
		struct pollfd pfd[5];
		int n = 0, i_in = -1, i_out = -1, i_err = -1, i_pid = -1;
		if (c->in >= 0)
			pfd[i_in = n++] = (struct pollfd){ c->in, POLLOUT, 0 };
		if (c->out >= 0)
			pfd[i_out = n++] = (struct pollfd){ c->out, POLLIN, 0 };
		if (c->err >= 0)
			pfd[i_err = n++] = (struct pollfd){ c->err, POLLIN, 0 };
		if (c->kill_phase_ == KILL_TERM_SENT && c->pidfd >= 0)
			pfd[n++] = (struct pollfd){ c->pidfd, POLLIN, 0 };
		else if (c->pidfd >= 0 && !leader_gone)
			pfd[i_pid = n++] = (struct pollfd){ c->pidfd, POLLIN, 0 };
		if (poll(pfd, (nfds_t)n, wait) < 0) {
			if (errno == EINTR)
				continue;
			return err_errno(e, errno, "poll on %s", c->args.v[0]);
		}
		if (i_in >= 0 && pfd[i_in].revents && feed_stdin(&c->in, input, input_len, &written) < 0)
			return err_errno(e, errno, "writing to %s", c->args.v[0]);
		if (i_out >= 0 && pfd[i_out].revents && drain_output(&c->out, cap_out) < 0)
			return err_errno(e, errno, "reading stdout of %s", c->args.v[0]);
		if (i_err >= 0 && pfd[i_err].revents && drain_output(&c->err, cap_err) < 0)
			return err_errno(e, errno, "reading stderr of %s", c->args.v[0]);
		if (i_pid >= 0 && pfd[i_pid].revents) {
			leader_gone = 1;
			on_leader_exit(c, &drain_until);
		}
	}
	close_parent_ends(c);
	return 0;
}

int child_run(struct child *c, const void *input, size_t input_len, struct strbuf *out, struct strbuf *err_out,
	      size_t max_capture, struct err *e)
{
	struct capture cap_out = { out, out ? out->len : 0, max_capture, 0, &c->out_dropped };
	struct capture cap_err = {
		err_out, err_out ? err_out->len : 0, max_capture, 1, &c->err_dropped, c->on_stderr, c->on_stderr_arg
	};
	struct sigpipe_guard guard;

	if (input)
		c->stdin_io = CHILD_IO_PIPE;
	if (out)
		c->stdout_io = CHILD_IO_PIPE;
	if (err_out)
		c->stderr_io = CHILD_IO_PIPE;

	sigpipe_block(&guard);
	int rc = child_start(c, e);
	if (rc == 0) {
		rc = pump(c, input, input_len, &cap_out, &cap_err, e);
		if (rc < 0) {
			struct err ignored = ERR_INIT;
			child_kill_group(c, SIGKILL);
			close_parent_ends(c);
			child_wait(c, NULL, &ignored);
			err_clear(&ignored);
		} else {
			rc = child_wait(c, NULL, e);
		}
		if (err_out)
			keep_tail(&cap_err, 0);
	}
	sigpipe_restore(&guard);
	return rc;
}

int child_die_with_parent(void *arg)
{
	(void)arg;
	return prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ? errno : 0;
}
