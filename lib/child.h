/* child.h — the one place agor starts processes (git's run-command): argv, env, fds, ids, timeouts.
 * It never runs a shell on its own, never lets a child inherit a descriptor it was not given. */
#ifndef AGOR_CHILD_H
#define AGOR_CHILD_H

/*
 * Contract
 * --------
 * Fill a `struct child` after child_init(), then either
 *   - child_start() + (use c->in / c->out / c->err) + child_wait(), or
 *   - child_run(), which does all of it with in-memory input and captured output.
 * child_release() (or _cleanup_child_) frees it; a child still running at release time is
 * killed with SIGKILL (its whole group when it has one) and reaped: nothing is left behind.
 *
 * Program and environment
 *   args.v[0] is the program: a path containing '/' is executed as is (relative to the
 *   child's cwd); a bare name is looked up in PATH *of the child's environment* (like
 *   execvpe). Empty and relative PATH entries are skipped (never the current directory); with
 *   no PATH the default is "/usr/local/bin:/usr/bin:/bin". A file that is not a valid
 *   executable fails with ENOEXEC: there is no fallback to /bin/sh.
 *   exec_fd >= 3 (default -1): the program is that open descriptor instead (execveat with
 *   AT_EMPTY_PATH, no lookup; args.v[0] is only the program's argv[0]); it is kept open in the
 *   child up to the exec, and across it only for a script (its interpreter reads /dev/fd/N).
 *   inherit_env == 0: the child's environment is exactly `env` (possibly empty).
 *   inherit_env == 1: the parent's environ, with `env` entries replacing same-named ones.
 *   In both modes an `env` entry without '=' ("NAME") means "unset NAME".
 *
 * Standard descriptors: each of stdin/stdout/stderr is one of enum child_io. Pipe ends kept
 *   by the parent (c->in, c->out, c->err) are O_CLOEXEC. Every descriptor other than 0, 1, 2
 *   is closed in the child before exec (close_range, with a loop as fallback).
 *
 * In the child, between fork and exec (async-signal-safe code only), in this order:
 *   1. every signal disposition reset to SIG_DFL (SIG_IGN too) and the signal mask emptied;
 *   2. setpgid(0, 0) when new_process_group (the parent does it too, so there is no race);
 *   3. stdin/stdout/stderr set up;
 *   4. before_exec(before_exec_arg) when set — still with the parent's privileges, before
 *      chdir; it must return 0 to continue, or an errno value (or -1 with errno set) to abort;
 *   5. when set_ids: setgroups(groups, or just gid when groups is NULL), then setresgid and
 *      setresuid to gid/uid, then a check that the ids stuck and that uid 0 cannot be regained;
 *   6. fchdir(cwd_fd) when it is set, else chdir(cwd) when cwd is set (as the final user, so it proves the user
 *      may enter it);
 *   7. every other descriptor closed; exec.
 *   A failure of any step is sent to the parent over an O_CLOEXEC pipe as (stage, errno) and
 *   child_start() returns -1 with a message such as "exec /no/such: No such file or
 *   directory", "chdir /x: Permission denied", "setuid 1000: Operation not permitted" or
 *   "before_exec hook: …" and details {"stage": "exec", "errno": 2}. The failed child is
 *   reaped before child_start() returns.
 *
 * Process groups and timeouts
 *   child_kill_group() signals the child's process group when new_process_group is set and
 *   only the child itself otherwise (never the caller's own group). timeout_ms (0 = none)
 *   counts from child_start(); at the deadline child_wait()/child_run() send SIGTERM, then
 *   SIGKILL when kill_grace_ms (default 5000) has passed or as soon as the leader has exited,
 *   whichever comes first — so nothing of a timed-out group survives. The leader is kept
 *   unreaped until then, so its process-group id cannot be reused by another process.
 *   c->timed_out tells that the timeout fired. Use new_process_group with timeouts unless the
 *   child is known to start no processes of its own.
 *
 * Registry: every started, not yet reaped child is recorded (lock-free slots in chunks that
 *   are never freed), so child_kill_all() can signal them all at exit or from a fatal-signal
 *   handler (it is async-signal-safe). A child leaves the registry before it is reaped.
 *
 * Reaping: child_wait() reaps exactly c->pid (never waitpid(-1)); callers must not install
 *   a SIGCHLD handler that reaps children it did not start itself, nor set SIGCHLD to
 *   SIG_IGN (the kernel would then reap children on its own).
 *
 * SIGPIPE: child_run() blocks SIGPIPE in the calling thread while it feeds stdin (a write to
 *   a closed pipe then fails with EPIPE instead of killing the process) and afterwards
 *   consumes the SIGPIPE it caused with sigtimedwait(), then restores the signal mask. The
 *   process-wide disposition is never changed, so other threads are unaffected. Callers
 *   writing to c->in themselves after child_start() must handle SIGPIPE on their own.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"
#include "err.h"
#include "strbuf.h"
#include "strvec.h"

enum child_io {
	CHILD_IO_INHERIT = 0, /* the parent's own descriptor (the default) */
	CHILD_IO_NULL,	      /* /dev/null */
	CHILD_IO_FD,	      /* stdin_fd / stdout_fd / stderr_fd; the caller keeps ownership */
	CHILD_IO_PIPE,	      /* a new pipe; the parent's end is c->in / c->out / c->err */
	CHILD_IO_STDOUT,      /* stderr only: the same descriptor as the child's stdout (2>&1) */
};

#define CHILD_DEFAULT_KILL_GRACE_MS 5000

struct child {
	/* What to run. */
	struct strvec args; /* argv; args.v[0] is the program (path or name looked up in PATH) */
	struct strvec env;  /* "NAME=VALUE" (or "NAME" = unset); see inherit_env */
	int exec_fd;	    /* >= 3: execute this descriptor, not args.v[0] (see the contract); -1 */
	int inherit_env;    /* 0: exactly env; 1: the parent's environ overridden by env */
	const char *cwd;    /* NULL: the parent's */
	int cwd_fd;	    /* >= 0: start in this directory, held by descriptor (fchdir); cwd then only names it */

	/* Standard descriptors. */
	enum child_io stdin_io, stdout_io, stderr_io;
	int stdin_fd, stdout_fd, stderr_fd; /* for CHILD_IO_FD */

	/* Identity: when set_ids, the child runs as uid/gid with supplementary groups `groups`
	 * (ngroups entries; NULL means just gid). Needs root (CAP_SETUID/CAP_SETGID). */
	int set_ids;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t ngroups;

	int new_process_group; /* setpgid(0,0): the child leads a group that can be killed whole */
	int timeout_ms;	       /* 0 = none; counted from child_start() */
	int kill_grace_ms;     /* SIGTERM → SIGKILL delay at timeout (default 5000) */

	/* Runs in the child after fd setup, before ids, chdir and exec: async-signal-safe code
	 * only. Returns 0, or an errno value (or -1 with errno set) to abort the exec. The
	 * future sandbox plugs in here. */
	int (*before_exec)(void *arg);
	void *before_exec_arg;
	/* CLONE_NEW* flags: the child is created in new namespaces by a raw clone(2) (as bubblewrap does)
	 * instead of fork(), so with CLONE_NEWPID it is PID 1 there, with no intermediate process. libc's
	 * fork bookkeeping is skipped: the child must stick to async-signal-safe system calls (it does).
	 * A failed clone is reported as "clone …" with details {"stage": "clone", "errno": N}. */
	unsigned long clone_flags;
	/* A cgroup2 directory (an O_PATH fd) to clone the child straight into (clone3 with CLONE_INTO_CGROUP), or -1;
	 * with or without clone_flags (without, the child is a raw clone like theirs: async-signal-safe calls only).
	 * *born_in_cgroup (set with it) tells the child whether that held: 0 when this kernel has no clone3 or no
	 * CLONE_INTO_CGROUP (before 5.7) and the child was cloned beside its parent, to move itself. */
	int clone_cgroup_fd;
	int *born_in_cgroup;
	/* Set with clone_flags by the sandbox: after before_exec, this process starts the program itself
	 * (sharing its memory until the exec) and calls become_init(before_exec_arg, program_pid), which
	 * never returns: it stays as the namespaces' PID 1 and mirrors the program's status. */
	void (*become_init)(void *arg, pid_t program);

	/* Called in the parent once the child has exec'd (e.g. to let another thread cancel it). */
	void (*on_started)(pid_t pid, void *arg);
	void *on_started_arg;
	/* Periodic work in the parent while the child runs (the sandbox's write budget): on_tick(on_tick_arg) every
	 * tick_ms from the start, from child_run's and child_wait's waiting — and from a caller's own loop through
	 * child_tick(). No thread: it runs in the waiting thread. */
	void (*on_tick)(void *arg);
	void *on_tick_arg;
	int tick_ms;
	/* child_run() with err_out: called in the parent with each chunk of stderr as it arrives
	 * (before any of it is dropped), e.g. to relay progress lines. */
	void (*on_stderr)(const char *data, size_t len, void *arg);
	void *on_stderr_arg;

	/* Results (read-only for callers). */
	pid_t pid;  /* > 0 once started; kept after reaping for reference */
	int pidfd;  /* pidfd_open() of pid if the kernel allows it, else -1; closed when reaped */
	int in;	    /* parent's write end of the stdin pipe, or -1 */
	int out;    /* parent's read end of the stdout pipe, or -1 */
	int err;    /* parent's read end of the stderr pipe, or -1 */
	int reaped; /* the child has been waited for; status is valid */
	int status; /* raw wait status */
	int timed_out;
	size_t out_dropped, err_dropped; /* bytes child_run() discarded beyond max_capture */

	/* Private to child.c. */
	int64_t started_ms_;
	int64_t next_tick_ms_;
	int64_t kill_at_ms_;
	int kill_phase_;
	int *registry_slot_;
};

void child_init(struct child *c);
/* For a caller waiting in its own loop: runs on_tick when it is due; returns the milliseconds until the next
 * one, or -1 when there is none (no on_tick, not started or already reaped). */
int child_tick(struct child *c);
/* Starts the child; -1 with e set on any failure (nothing is left running then). */
int child_start(struct child *c, struct err *e);
/* Waits for the child, enforcing timeout_ms (see above); stores the raw wait status in
 * c->status and *status (may be NULL). -1 when the child was not started or already reaped. */
int child_wait(struct child *c, int *status, struct err *e);
/*
 * Starts the child, writes input to its stdin (then closes it) while reading its stdout and
 * stderr concurrently with poll(), waits for it and returns 0 — whatever its exit status.
 * A pipe is made for stdin when input is not NULL (input_len may be 0: immediate EOF), for
 * stdout when out is not NULL, for stderr when err_out is not NULL; other streams keep c's
 * settings (a stream the caller set to CHILD_IO_PIPE with no buffer is read and discarded).
 * Output is appended to out / err_out (two different buffers; for one merged stream set
 * c->stderr_io = CHILD_IO_STDOUT and pass err_out = NULL). When max_capture is not 0, at most
 * max_capture bytes of each stream are kept: the HEAD of stdout (the start of a result) and
 * the TAIL of stderr (the last, usually most telling, lines); the rest is read and counted in
 * c->out_dropped / c->err_dropped. A child that exits without reading all of its input is not
 * an error (EPIPE is expected). The timeout is enforced as in child_wait(); after SIGKILL the
 * pipes are drained for at most a short while. Returns -1 when the child could not be started
 * or an I/O error occurred (the child is then killed and reaped).
 */
int child_run(struct child *c, const void *input, size_t input_len, struct strbuf *out, struct strbuf *err_out,
	      size_t max_capture, struct err *e);

/* The child exited on its own with status 0 (not killed, not timed out). */
int child_exited_ok(const struct child *c);
/* The exit code, or 128 + signal number for a signal death; -1 when not reaped yet. */
int child_exit_code(const struct child *c);

/* Sends sig to the child's group (new_process_group) or to the child; no-op once reaped. */
void child_kill_group(struct child *c, int sig);
/* Sends sig to every registered (started, not yet reaped) child, as child_kill_group() would.
 * Async-signal-safe. */
void child_kill_all(int sig);
/* handler for SIGTERM, SIGINT and SIGHUP (a stop request), SA_RESTART; async-signal-safe. */
void child_on_stop_signals(void (*handler)(int));
/* A before_exec hook (arg unused): the child is sent SIGKILL when the process that started it dies
 * (PR_SET_PDEATHSIG), so a runner killed outright leaves no command behind. Async-signal-safe. */
int child_die_with_parent(void *arg);
/* Lets a started child go: it leaves the registry and is never signalled, waited for or killed by
 * child_release() (a long-lived process handed to someone else, e.g. a terminal's tmux client, which
 * should have made itself a session leader in before_exec). c->status means nothing afterwards. */
void child_detach(struct child *c);
/* Frees args/env, closes c's descriptors; kills (SIGKILL) and reaps a child still running. */
void child_release(struct child *c);

static inline void cleanup_child(struct child *c)
{
	child_release(c);
}
#define _cleanup_child_ __attribute__((cleanup(cleanup_child)))

#endif
