/* sandbox.h — kernel-enforced isolation for whatever untrusted program the executor starts.
 * Namespaces, a minimal mount view, Landlock, seccomp, no capabilities, cgroup limits; fails closed. */
#ifndef AGOR_SANDBOX_H
#define AGOR_SANDBOX_H

/*
 * Contract
 * --------
 *   struct sandbox *sb = sandbox_prepare(&cfg, &req, e);  // parent: probes, cgroup, plans
 *   sandbox_apply(sb, &child);   // the hook, and clone_flags: the child starts as PID 1 of new namespaces
 *   child.new_process_group = 1;  (the run is killed as a group)
 *   if (child_start(&c, e) < 0) sandbox_explain_failure(sb, e);   // names the missing control
 *   ... child_wait / child_run ...
 *   json_t *events = sandbox_finish(sb);   // cgroup events; kills leftovers, removes the cgroup
 *   json_t *receipt = sandbox_receipt(sb); // the controls that were in force
 *   sandbox_free(sb);
 *
 * sandbox_prepare() fails with E_ISOLATION_UNAVAILABLE and details {"missing": CONTROL} when a
 * control the configuration requires is unavailable: "landlock", "seccomp", "cgroup" (only
 * when a limit is set). User namespaces cannot be probed without forking, so their absence
 * shows when the child starts: sandbox_explain_failure() turns the child's report into
 * E_ISOLATION_UNAVAILABLE {"missing": "user namespace"} (or the mount, proc, … that failed).
 * With cfg.fail_closed == 0 a missing Landlock or seccomp is left out and recorded in the
 * receipt's "warnings"; required and missing cgroups always fail.
 *
 * In the child (sandbox_apply's hook, async-signal-safe code only, everything precomputed):
 *   1. the child is created by child.c's clone(2) in new user, mount, PID, IPC, UTS (and network
 *      when network_none) namespaces, as PID 1; it joins the cgroup and maps the caller's uid/gid
 *      to themselves.
 *   2. PID 1 builds the mount view on a fresh tmpfs root and pivots into it:
 *      read-only: /usr, /bin, /sbin, /lib* (symlinks kept as symlinks), selected /etc files (on a
 *      tmpfs /etc made read-only with everything below it by one mount_setattr where available),
 *      cfg.read_only_paths; read-write: the worktree, the repository's git directory with
 *      `hooks/` and `config` read-only and `worktrees/` reduced to this worktree's own entry,
 *      cfg.read_write_paths, req.read_*_binds; private: /tmp, the home directory (tmpfs), /dev (null, zero,
 *      full, random, urandom, tty, pts, shm), /proc of the new PID namespace. Nothing else —
 *      not AGOR_HOME, not other worktrees, not other homes. The root itself is read-only.
 *   3. hostname "agor-sandbox"; loopback up (network none); rlimits core 0, nofile, fsize;
 *      PR_SET_NO_NEW_PRIVS; Landlock (rights matching the mount view; TCP denied with
 *      network none, ABI ≥ 4; abstract Unix sockets and signals scoped, ABI ≥ 6); every
 *      capability dropped (bounding, ambient, effective, permitted, inheritable; securebits
 *      locked so uid 0 regains nothing); the seccomp filter of seccomp.h;
 *   4. PID 1 forks the program's process (which returns 0 to child.c: chdir, exec) and then
 *      only waits (SIGTERM, SIGINT and SIGHUP sent to the run's process group are passed on to
 *      the program, so it can stop gracefully): when the program exits, PID 1 exits with its status (128+signal when
 *      killed) and the kernel kills whatever else is left in the namespace.
 * A failure at any step writes (stage, errno) to a pipe that sandbox_explain_failure() reads.
 */

#include <jansson.h>

#include "cgroup.h"
#include "child.h"
#include "config.h"
#include "err.h"

struct sandbox_config {
	int enabled;
	int fail_closed;
	int network_none;
	const char *read_only_paths;  /* ':'-separated absolute paths, or NULL */
	const char *read_write_paths; /* ':'-separated absolute paths, or NULL */
	struct cgroup_limits limits;
	long long nofile;      /* RLIMIT_NOFILE; 0 = unchanged */
	long long fsize_bytes; /* RLIMIT_FSIZE; 0 = unchanged */
	const char *cgroup_root;
	const char *cgroup_parent;
};

struct sandbox_request {
	const char *worktree;	    /* read-write and the working directory; absolute */
	const char *git_common_dir; /* the repository's git directory, or NULL */
	const char *git_admin_dir;  /* GIT_COMMON_DIR/worktrees/NAME of this worktree, or NULL */
	const char *home;	    /* the home directory's path inside */
	int home_is_kept;	    /* home is a real directory bound read-write, not a fresh tmpfs */
	const char *name;	    /* names the cgroup (letters, digits, '-', '_', '.') */
	int plan_only;		    /* a dry run: no cgroup, no directories; only the receipt */
	/* What one kind of program needs besides the worktree (the agent CLI: its installation and this
	 * executable read-only, the permission broker's directory and its state directories read-write):
	 * NULL-terminated lists of absolute host paths bound at the same place, or NULL. */
	const char *const *read_only_binds;
	const char *const *read_write_binds;
	int network_host; /* the host's network even when execution.sandbox.network is none (a model endpoint) */
};

struct sandbox;

/* What this kernel offers, for `agor setup validate --mode sandbox` (forks once to try a user
 * namespace). landlock_abi: ≥ 1 or -1; *_errno: why a control is missing (0 when present). */
struct sandbox_probe {
	int landlock_abi, landlock_errno;
	int seccomp;
	int user_namespaces, user_namespaces_errno;
};
void sandbox_probe(struct sandbox_probe *p);

/* Fills sc from execution.sandbox.* of cfg (strings borrowed from cfg). */
void sandbox_config_from(struct sandbox_config *sc, const struct config *cfg);
struct sandbox *sandbox_prepare(const struct sandbox_config *cfg, const struct sandbox_request *req, struct err *e);
/* Sets c's before_exec hook and clone_flags, so the child is created as PID 1 of the new namespaces. */
void sandbox_apply(struct sandbox *sb, struct child *c);
/* After child_start() failed: replaces e by the sandbox stage that failed, if one did; returns -1. */
int sandbox_explain_failure(struct sandbox *sb, struct err *e);
json_t *sandbox_receipt(const struct sandbox *sb);
json_t *sandbox_finish(struct sandbox *sb);
void sandbox_free(struct sandbox *sb);
#ifdef SANDBOX_TIMING
/* test/bench only: CLOCK_MONOTONIC µs at the end of each named stage (0 where a stage did not run), or NULL. */
const double *sandbox_stage_times(const struct sandbox *sb, const char *const **names, int *n);
#endif

#endif
