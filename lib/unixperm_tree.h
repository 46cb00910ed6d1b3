/* unixperm_tree.h — the recursive permission change of a worktree or repository: group, mode and ACLs applied to
 * every inode below a directory by descriptor, skipping what it must never touch. */
#ifndef AGOR_UNIXPERM_TREE_H
#define AGOR_UNIXPERM_TREE_H

/*
 * Contract
 * --------
 * Permissions. others none|read|write → directories 2770|2775|2777 (setgid), regular files
 * keep their owner bits, get group rw (x when any x bit was set), others ---|r--|rw- (same x
 * rule); setuid/setgid on files are cleared. Each inode gets the group and an access ACL
 * u::,g::,g:GROUP:,m::,o:: matching its mode; directories also get the same as default ACL,
 * so files created later inherit group and access. ACLs are written in-process as the
 * system.posix_acl_access / system.posix_acl_default xattrs (version 2, little-endian); an
 * existing ACL granting the same effective rights (e.g. inherited "g:G:rwx" under "m::rw-") is
 * left alone, so a second run changes nothing.
 * unixperm_apply_tree() walks with descriptors only (openat O_NOFOLLOW, fchown, fchmod,
 * fsetxattr): symlinks, sockets, FIFOs and devices are skipped, so are regular files with more
 * than one link (a hard link to a file outside the tree) and anything on another filesystem.
 *
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "err.h"
#include "unixperm.h"

/* ---- recursive permission change ------------------------------------------------------------ */
struct unixperm_tree_spec {
	gid_t gid;
	enum unixperm_access others;
	bool dry_run; /* walk and count what would change, change nothing */
};
struct unixperm_tree_stats {
	unsigned long dirs, files, changed;
	unsigned long skipped_symlinks, skipped_special, skipped_hardlinked, skipped_other_fs;
};
/* Applies spec to the directory dirfd and everything below it (see the contract above). */
int unixperm_apply_tree(int dirfd, const struct unixperm_tree_spec *spec, struct unixperm_tree_stats *stats,
			struct err *e);

#endif
