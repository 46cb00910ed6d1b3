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
 * when a limit is set), "mount API" (open_tree, move_mount, mount_setattr: Linux 5.12), "idmapped
 * mounts" (a root executor: see below). User namespaces cannot be probed without forking, so their
 * absence shows when the child starts: sandbox_explain_failure() turns the child's report into
 * E_ISOLATION_UNAVAILABLE {"missing": "user namespace"} (or the mount, proc, … that failed, with the path).
 * With cfg.fail_closed == 0 a missing Landlock or seccomp is left out and recorded in the
 * receipt's "warnings"; required and missing cgroups always fail.
 *
 * Nothing the sandbox can write is ever followed by the code that builds it. Every bind of a path in
 * untrusted territory (the worktree, the repository, a kept home, agent state: struct sandbox_bind with a
 * root) is opened in the child beneath its trusted root with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
 * RESOLVE_NO_MAGICLINKS), cloned from that descriptor (open_tree), given its attributes while still detached
 * (mount_setattr: read-only, nosuid, nodev, idmap) and attached to a destination also opened without
 * following any symlink (move_mount): a symlink or a swap between check and use fails the run, naming the
 * path; it never leads elsewhere. A destination inside an earlier bind must already exist there.
 *
 * Landlock rights add up along a path, so a SANDBOX_DATA bind below a private mount the run may write anything in
 * (/tmp, the private home) is refused (E_ISOLATION_UNAVAILABLE naming paths.data_home): execrun moves the home
 * aside when the data home lies in it. A trusted bind (no root) that is or holds one of req.protected_paths (the
 * data home, AGOR_HOME) is refused; one below req.data_home is opened beneath it like an untrusted one.
 *
 * Who runs inside. A non-root executor's run gets a user namespace mapping its uid and gid to themselves.
 * A root executor's run gets no user namespace: PID 1 builds the view as root, then the program and PID 1
 * drop to cfg.root_maps_to (uid and gid, never 0, no supplementary groups, every capability gone), and every
 * bind from the data home is an idmapped mount (on-disk uid/gid 0 ↔ root_maps_to), so files written there
 * stay owned by root on disk while nothing inside is root: /proc/sys and the like are not writable, no
 * process outside can be signalled. A filesystem without idmapped mounts fails the run naming the path.
 *
 * In the child (sandbox_apply's hook, async-signal-safe code only, everything precomputed):
 *   1. the child is created by child.c's clone(2) in new mount, PID, IPC, UTS (and network when
 *      network_none) namespaces, as PID 1, and in a new user namespace unless it is root; it joins the cgroup.
 *   2. PID 1 builds the mount view on a fresh tmpfs root and pivots into it:
 *      read-only: /usr, /bin, /sbin, /lib* (symlinks kept as symlinks), selected /etc files (on a
 *      tmpfs /etc made read-only), cfg.read_only_paths; read-write: the worktree (its .git file read-only;
 *      all of it with req.worktree_read_only),
 *      cfg.read_write_paths, the request's binds (for a worktree of a repository: the repository
 *      read-only but for objects/, refs/ and logs/, where no symlink, device, fifo or socket can be made,
 *      objects/info read-only, worktrees/ covered but for this worktree's own entry — files and directories
 *      only there too — whose gitdir and commondir are read-only); private: /tmp, the home directory (tmpfs), /dev
 * (null, zero, full, random, urandom, tty, pts, shm), /proc of the new PID namespace with /proc/sys and
 *      /proc/sysrq-trigger read-only. Every bind is nosuid (and but for /dev's
 *      nodes nodev). Nothing else — not AGOR_HOME, not other worktrees, not other homes. The root is read-only.
 *   3. hostname "agor-sandbox"; loopback up (network none or proxy); with req.egress_socket a TCP listener on
 *      127.0.0.1:SANDBOX_EGRESS_PORT; rlimits core 0, nofile, fsize;
 *      PR_SET_NO_NEW_PRIVS; Landlock (rights matching the mount view; TCP bind and connect denied with
 *      network none, connect allowed to SANDBOX_EGRESS_PORT only with proxy, ABI ≥ 4; abstract Unix sockets
 *      and signals scoped, ABI ≥ 6); every
 *      capability dropped (bounding, ambient, effective, permitted, inheritable; securebits
 *      locked so uid 0 regains nothing); a root executor's run switches to root_maps_to here; the seccomp
 *      filter of seccomp.h (which also refuses setuid and setgid bits); with req.egress_socket PID 1 then forks
 *      the relay (as confined as the program): each connection to the listener is copied both ways to a new
 *      connection to egress_socket — the relay holds no privilege; the proxy outside decides everything;
 *   4. PID 1 forks the program's process (which returns 0 to child.c: chdir, exec) and then
 *      only waits (SIGTERM, SIGINT and SIGHUP sent to the run's process group are passed on to
 *      the program, so it can stop gracefully): when the program exits, PID 1 exits with its status (128+signal when
 *      killed) and the kernel kills whatever else is left in the namespace.
 * A failure at any step writes (stage, errno, op) to a pipe that sandbox_explain_failure() reads.
 *
 * Disk: with cfg.disk_max_bytes, /tmp and the private home are tmpfs mounts of that size and the run's writes to
 * storage are summed while it runs (diskwatch.h: sandbox_apply sets child.c's on_started and on_tick, so a caller
 * waiting in a loop of its own calls child_tick());
 * past the budget the run is killed and sandbox_finish's events say {"diskLimitHits": 1, "diskMaxBytes": N}.
 */

#include <jansson.h>

#include "cgroup.h"
#include "child.h"
#include "config.h"
#include "err.h"

#define SANDBOX_EGRESS_PORT 3128 /* inside the run's own network namespace */

struct sandbox_config {
	int enabled;
	int fail_closed;
	int network_none;
	const char *read_only_paths;  /* ':'-separated absolute paths, or NULL */
	const char *read_write_paths; /* ':'-separated absolute paths, or NULL */
	struct cgroup_limits limits;
	long long nofile;	  /* RLIMIT_NOFILE; 0 = unchanged */
	long long fsize_bytes;	  /* RLIMIT_FSIZE; 0 = unchanged */
	long long disk_max_bytes; /* the run's write budget (diskwatch.h) and each private tmpfs's size; 0 = none */
	const char *cgroup_root;
	const char *cgroup_parent;
	unsigned root_maps_to; /* a root executor's runs: this uid and gid (never 0) */
};

enum sandbox_access {
	SANDBOX_READ,  /* read-only */
	SANDBOX_WRITE, /* read-write */
	SANDBOX_DATA,  /* read-write, but no symlink, device, fifo or socket can be made there (a git object store) */
	SANDBOX_TREE,  /* read-write, but no device or fifo can be made there (the worktree) */
	SANDBOX_COVER, /* an empty read-only tmpfs hides what is at dst (src unused) */
};

/* One bind of the request. */
struct sandbox_bind {
	const char *root; /* the trusted directory src is resolved beneath, following no symlink; NULL: src is a
			   * trusted host path (the system's, the agent's installation), followed like any path */
	const char *src;  /* absolute host path (under root when root is set) */
	const char *dst;  /* the path inside; NULL: the same as src */
	enum sandbox_access access;
};

struct sandbox_request {
	const char *worktree;	   /* read-write and the working directory; absolute */
	const char *worktree_root; /* the trusted directory it lies beneath (the data home's worktrees/) */
	const char *data_home; /* territory runs write: a "trusted" bind below it is opened beneath it all the same */
	const char *const *protected_paths; /* NULL-terminated (the data home, AGOR_HOME): no bind may hold one */
	const char *home;		    /* the home directory's path inside */
	const char *home_root;		    /* home_is_kept: the trusted directory the home lies beneath */
	int home_is_kept;		    /* home is a real directory bound read-write, not a fresh tmpfs */
	const char *name;		    /* names the cgroup (letters, digits, '-', '_', '.') */
	int plan_only;			    /* a dry run: no cgroup, no directories; only the receipt */
	int worktree_read_only; /* the worktree bound read-only (the permission mode plan: nothing may change) */
	/* Bound after the worktree, in this order (a bind inside an earlier one comes after it): the worktree's
	 * git metadata, and what one kind of program needs (the agent CLI: its installation and this executable
	 * read-only, the permission broker's directory and its state read-write). */
	const struct sandbox_bind *binds;
	size_t nbinds;
	/* Network proxy (egress.h): the proxy's Unix socket; the run gets a network namespace of its own whose only
	 * way out is a relay on 127.0.0.1:SANDBOX_EGRESS_PORT to it. NULL: cfg.network_none decides. */
	const char *egress_socket;
};

struct sandbox;

/* What this kernel offers, for `agor setup validate --mode sandbox` (forks once to try a user
 * namespace). landlock_abi: ≥ 1 or -1; *_errno: why a control is missing (0 when present). */
struct sandbox_probe {
	int landlock_abi, landlock_errno;
	int seccomp;
	int user_namespaces, user_namespaces_errno;
	int mount_api; /* open_tree, move_mount, mount_setattr (Linux 5.12) */
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
