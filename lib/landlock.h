/* landlock.h — Landlock rulesets for the sandbox: filesystem rights per path, TCP and scoping by ABI.
 * Defence in depth under the mount view: even a path that is visible gets only the rights listed. */
#ifndef AGOR_LANDLOCK_H
#define AGOR_LANDLOCK_H

/*
 * Contract
 * --------
 * landlock_abi() → the kernel's Landlock ABI version (≥ 1), or -1 with errno (ENOSYS: not
 * built, EOPNOTSUPP: disabled at boot, EPERM: denied by a filter).
 *
 * A plan is filled in the parent (landlock_plan_init, landlock_plan_add) and applied in the
 * forked child (landlock_apply: async-signal-safe system calls only, after
 * PR_SET_NO_NEW_PRIVS). Every filesystem right the ABI knows is handled, so whatever no rule
 * grants is denied. Rights by kind of rule:
 *   LANDLOCK_READ    execute, read files, read directories;
 *   LANDLOCK_WRITE   every right (create, remove, rename across directories, truncate, …);
 *   LANDLOCK_DEVICE  read, write and truncate files, read directories, device ioctls;
 *   LANDLOCK_DATA    every right but making symlinks, devices, fifos and sockets (a git object store: files and
 *                    directories only, so nothing planted there can lead a later reader elsewhere);
 *   LANDLOCK_TREE    every right but making devices and fifos (a worktree: files, directories, symlinks and
 *                    sockets, but nothing host git would hang on when it reads a .gitignore).
 * A rule on a file (not a directory) keeps only the rights that apply to files. A path that
 * does not exist when the rule is applied is skipped (it cannot be reached either).
 * network_none: with ABI ≥ 4 every TCP bind and connect is denied, but connect to connect_port when it is
 * not 0 (the sandbox's own namespace has only loopback: that port is the egress relay's). ABI ≥ 6: abstract Unix
 * sockets and signals are scoped to the sandbox (nothing outside can be reached or signalled).
 */

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum landlock_kind { LANDLOCK_READ, LANDLOCK_WRITE, LANDLOCK_DEVICE, LANDLOCK_DATA, LANDLOCK_TREE };

#define LANDLOCK_MAX_RULES 64

struct landlock_plan {
	int abi;
	uint64_t handled_fs, handled_net, scoped;
	int connect_port; /* network_none: the one TCP port connect() may reach (the egress relay), or 0 */
	size_t nrules;
	struct {
		const char *path; /* borrowed: must outlive landlock_apply() */
		enum landlock_kind kind;
	} rules[LANDLOCK_MAX_RULES];
};

int landlock_abi(void);
void landlock_plan_init(struct landlock_plan *plan, int abi, int network_none, int connect_port);
/* Returns -1 when the plan is full. */
int landlock_plan_add(struct landlock_plan *plan, const char *path, enum landlock_kind kind);
/* In the child: 0, or -1 with errno. */
int landlock_apply(const struct landlock_plan *plan);
/* {"abi":N, "handledFs":[…], "tcp":"denied"|"not restricted", "scoped":[…], "rules":[{path, access}]} */
json_t *landlock_receipt(const struct landlock_plan *plan);

#endif
