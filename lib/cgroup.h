/* cgroup.h — one control group per sandboxed run: memory, process and CPU limits, events, teardown.
 * cgroup v2 where the host has it (with its controllers), else the v1 hierarchies of each controller. */
#ifndef AGOR_CGROUP_H
#define AGOR_CGROUP_H

/*
 * Contract
 * --------
 * cgroup_create(cg, root, parent, leaf, limits, e) finds the hierarchy under `root` (normally
 * /sys/fs/cgroup): v2 when root (or root/unified) is cgroup2 with the needed controllers
 * available, else v1 with one directory per needed controller (memory, pids, cpu). It makes
 * ROOT/…/PARENT/LEAF, writes the limits (memory.max + memory.swap.max or
 * memory.limit_in_bytes + memory.memsw.limit_in_bytes; pids.max; cpu.max or
 * cpu.cfs_quota_us/cpu.cfs_period_us) and returns 0, or -1 with E_ISOLATION_UNAVAILABLE naming
 * what is missing (no hierarchy, controller absent, no permission).
 *
 * cgroup_join_self(cg) runs in the forked child, which must still be single-threaded: it writes "0"
 * to every group's join file (moves the caller): v2 cgroup.procs; v1 tasks, which moves the calling
 * thread, i.e. the whole process, without waiting for the kernel's global threadgroup lock.
 * Async-signal-safe; 0 or -1 with errno. On v2, a child cloned with CLONE_INTO_CGROUP into cg->dir_fd is
 * born inside and needs no move: a move takes the kernel's global threadgroup lock, whose first taker
 * waits out an RCU grace period (8-14 ms), where being born inside takes only its read side.
 *
 * cgroup_events(cg) → {"oomKills": N, "pidsLimitHits": N, "memoryPeakBytes": N?} read from the
 * kernel's event counters; cgroup_destroy(cg) kills whatever is left (cgroup.kill on v2, a
 * SIGKILL sweep on v1), removes the directories and frees cg's strings. Call it exactly once.
 */

#include <jansson.h>
#include <sys/types.h>

#include "err.h"

struct cgroup_limits {
	long long memory_max_bytes; /* 0: no limit */
	long long pids_max;	    /* 0: no limit */
	int cpu_max_percent;	    /* 0: no limit; 100 = one CPU */
};

#define CGROUP_MAX_DIRS 3
/* execution.sandbox.cgroup_root and cgroup_parent by default; agor admin cgroup-delegate uses these */
#define CGROUP_DEFAULT_ROOT   "/sys/fs/cgroup"
#define CGROUP_DEFAULT_PARENT "agor"

struct cgroup {
	int version; /* 1 or 2; 0 before create */
	char *dirs[CGROUP_MAX_DIRS];
	char *procs[CGROUP_MAX_DIRS];		  /* DIR/cgroup.procs, what is left to kill */
	char *joins[CGROUP_MAX_DIRS];		  /* the file the child writes "0" to: v1 DIR/tasks, v2 procs */
	const char *controllers[CGROUP_MAX_DIRS]; /* v1: the controller of dirs[i]; v2: NULL */
	int ndirs;
	int dir_fd; /* v2: the group's directory (O_PATH), for clone3's CLONE_INTO_CGROUP; v1: -1 */
	struct cgroup_limits limits;
};

/* 1 when limits asks for any control at all. */
int cgroup_limits_any(const struct cgroup_limits *limits);
int cgroup_create(struct cgroup *cg, const char *root, const char *parent, const char *leaf,
		  const struct cgroup_limits *limits, struct err *e);
int cgroup_join_self(const struct cgroup *cg);
json_t *cgroup_events(const struct cgroup *cg);
/* {"version": N, "path": "...", "memoryMaxBytes": N, "pidsMax": N, "cpuMaxPercent": N} */
json_t *cgroup_receipt(const struct cgroup *cg);
void cgroup_destroy(struct cgroup *cg);

/* Root only (agor admin cgroup-delegate): makes ROOT/…/PARENT/USER in every hierarchy (v2: the one
 * cgroup2 directory, memory/pids/cpu enabled for its children; v1: memory, pids, cpu) and hands it to
 * uid:gid (the directory, cgroup.procs, cgroup.threads, cgroup.subtree_control, tasks), so runs of a
 * non-root executor can make their groups below it. Appends each directory to made. On v2 the
 * executor must also start inside the delegated subtree (moving a process needs the common ancestor's
 * cgroup.procs): a service manager's delegation gives that, or pid > 0 (the daemon's, owned by uid), which
 * is moved into the leaf USER/CGROUP_DELEGATED_LEAF; v1 needs no move and ignores pid. */
#define CGROUP_DELEGATED_LEAF "daemon"
int cgroup_delegate(const char *root, const char *parent, const char *user, uid_t uid, gid_t gid, pid_t pid,
		    json_t *made, struct err *e);

/* Root only (agor admin serve): cgroup_delegate without a pid, and on v2 the leaf USER/CGROUP_EXECUTORS_LEAF handed
 * to the user too; *leaf is then that leaf's directory (malloc'd), which the executor is cloned into, or whose
 * cgroup.procs its forked child writes "0" into (cgroup_join_procs) before it drops root: either way it starts
 * inside its subtree. v1: *leaf NULL, no move. */
#define CGROUP_EXECUTORS_LEAF "executors"
int cgroup_executor_leaf(const char *root, const char *parent, const char *user, uid_t uid, gid_t gid, char **leaf,
			 struct err *e);
/* Writes "0" to the cgroup.procs file at path (moves the caller). Async-signal-safe; 0 or -1 with errno. */
int cgroup_join_procs(const char *path);

#endif
