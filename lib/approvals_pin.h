/* approvals_pin.h — pinning what `approvals exec` runs: PATH entries, paths the caller cannot write, the
 * identity (device, inode, size, mtime, SHA-256) of an executable. Never decides policy. */
#ifndef AGOR_APPROVALS_PIN_H
#define AGOR_APPROVALS_PIN_H

/*
 * Contract
 * --------
 * appr_path_entries_check refuses a PATH with an empty or relative entry anywhere (a shell would
 *   search the current directory there): never skipped.
 * Pinning: a path is pinned (appr_path_pinned) when the caller cannot change what it names: it and
 *   every directory above it are neither group- nor world-writable, and each is owned by root or by
 *   another uid that is not the caller's and that the caller cannot write to. appr_pinned_path is
 *   the PATH a run gets: the canonical, existing, pinned directories of PATH in order (the others
 *   dropped), or NULL when PATH has an empty or relative entry or keeps no directory.
 *   The identity of an executable (appr_identity) is its device, inode, size, mtime, owner, mode and
 *   SHA-256, read from an open descriptor; a file over APPR_EXECUTABLE_MAX is refused.
 */

#include <sys/types.h>

#include "crypto.h"
#include "err.h"

#define APPR_DEFAULT_PATH   "/usr/local/bin:/usr/bin:/bin"
#define APPR_EXECUTABLE_MAX (512 << 20) /* larger executables are not hashed: not pinnable, refused */

/* 0 when every PATH entry is absolute and non-empty; -1 naming the first that is not. */
int appr_path_entries_check(const char *path_env, struct err *e);
/* 0 when the caller cannot change what canonical names (see the contract); -1 saying why. */
int appr_path_pinned(const char *canonical, struct err *e);
/* The PATH a run gets (see the contract); caller frees. */
char *appr_pinned_path(const char *path_env, struct err *e);

struct appr_identity {
	int valid;
	dev_t dev;
	ino_t ino;
	off_t size;
	long long mtime_ns;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	char sha256[CRYPTO_SHA256_HEX_LEN + 1];
};
/* Reads fd's identity (a regular file; the whole content is hashed). */
int appr_identity_of_fd(int fd, const char *name, struct appr_identity *id, struct err *e);
/* Opens canonical (O_RDONLY|O_CLOEXEC|O_NOFOLLOW) and reads its identity; the descriptor or -1. */
int appr_open_executable(const char *canonical, struct appr_identity *id, struct err *e);
/* 0 when got is want (device, inode, size, mtime, SHA-256); -1 naming what changed. */
int appr_identity_same(const struct appr_identity *want, const struct appr_identity *got, const char *name,
		       struct err *e);
/* appr_identity_same against what canonical is now. */
int appr_identity_recheck_path(const char *canonical, const struct appr_identity *want, struct err *e);

#endif
