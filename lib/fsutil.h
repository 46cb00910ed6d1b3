/* fsutil.h — small filesystem helpers shared by the executor's commands: mkdir -p, no-follow recursive
 * removal, emptiness checks. Never follows a symlink while deleting: a link is removed, not its target. */
#ifndef AGOR_FSUTIL_H
#define AGOR_FSUTIL_H

#include <sys/types.h>

#include "err.h"

/* Creates path and its missing parents with mode (existing directories are fine). */
int fs_mkdir_p(const char *path, mode_t mode, struct err *e);
/* Removes path recursively; symlinks are unlinked, never followed; a missing path is success. */
int fs_remove_tree(const char *path, struct err *e);
/* Removes name in the directory dirfd (an O_PATH descriptor will do) recursively, never following a symlink;
 * `where` names dirfd in messages. A missing name is success. */
int fs_remove_at(int dirfd, const char *name, const char *where, struct err *e);
/* 1 when path is a directory without entries, 0 when it has some or is not a directory, -1 on error. */
int fs_dir_is_empty(const char *path);
/* Writes all len bytes (retrying short writes and EINTR); -1 with errno on failure. Async-signal-safe. */
int fs_write_all(int fd, const void *buf, size_t len);
/* Replaces path with len bytes of data, mode `mode`, atomically (a temporary file in the same directory,
 * fsync'd, renamed over path): readers see the old file or the new one, never a part. */
int fs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, struct err *e);
/* path with repeated and trailing slashes dropped ("/x//y/" → "/x/y"; "/" stays), malloc'd. */
char *fs_tidy_path(const char *path);
/* The canonical form of path (realpath, then tidied: musl keeps a leading "//"), malloc'd; or, when it does not
 * resolve (missing), fs_tidy_path's. */
char *fs_canonical(const char *path);
/* 1 when something (anything, even a dangling symlink) exists at path. */
int fs_exists(const char *path);

#endif
