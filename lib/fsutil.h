/* fsutil.h — small filesystem helpers shared by the executor's commands: mkdir -p, no-follow recursive
 * removal, emptiness checks. Never follows a symlink while deleting: a link is removed, not its target. */
#ifndef AGOR_FSUTIL_H
#define AGOR_FSUTIL_H

#include <dirent.h>
#include <sys/types.h>

#include "err.h"

/* Creates path and its missing parents with mode (existing directories are fine). */
int fs_mkdir_p(const char *path, mode_t mode, struct err *e);
/* Removes path recursively with fs_remove_at in its parent; a missing path is success. The parent is resolved as
 * the string says: for agor's own trusted paths only — a payload path is held (confine_hold) and removed with
 * fs_remove_at. */
int fs_remove_tree(const char *path, struct err *e);
/* Removes name in the directory dirfd (an O_PATH descriptor will do) recursively, never following a symlink;
 * `where` names dirfd in messages. A missing name is success.
 * Every level is opened from the one above (openat O_NOFOLLOW|O_DIRECTORY) and only unlinkat() relative to an
 * open directory removes anything, so no path string is resolved twice: an entry swapped for a symlink while the
 * walk runs is unlinked, never followed (a directory that turns into a link between unlinkat's EISDIR and the
 * open is unlinked on the retry). A directory on another filesystem (a mount point) is not entered: error.
 * Entries added while a directory is emptied are removed on a bounded number of passes. */
int fs_remove_at(int dirfd, const char *name, const char *where, struct err *e);
/* 1 when name in dirfd is a directory without entries (not through a symlink), 0 when not, -1 on error. */
int fs_dir_is_empty_at(int dirfd, const char *name);
/* Makes a new private directory (0700, "PREFIX" + random hex) in the directory dirfd, whose path is dir;
 * returns its descriptor (O_RDONLY|O_DIRECTORY) and sets *name and *path (malloc'd); -1 with e set.
 * The descriptor holds an exclusive flock on the directory while it is open: a directory of PREFIX there whose
 * lock is free was left by a maker killed -9 (docs/recovery.md), and is removed first. */
int fs_private_dir_at(int dirfd, const char *dir, const char *prefix, char **name, char **path, struct err *e);
/* Replaces name in dirfd with len bytes of data (mode `mode`) atomically: a temporary file made there
 * (O_EXCL|O_NOFOLLOW), fsync'd, renamed over name; `where` names dirfd in messages. */
int fs_write_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode, const char *where,
		struct err *e);
/* Moves from_name in from_fd to to_name in to_fd (renameat2, never following either last component). to_name must
 * not exist, or be an empty directory (then replaced atomically); otherwise E_ALREADY_EXISTS naming shown. */
int fs_move_at(int from_fd, const char *from_name, int to_fd, const char *to_name, const char *shown, struct err *e);
/* 1 when path is a directory without entries, 0 when it has some or is not a directory, -1 on error. */
int fs_dir_is_empty(const char *path);
/* Writes all len bytes (retrying short writes and EINTR); -1 with errno on failure. Async-signal-safe. */
int fs_write_all(int fd, const void *buf, size_t len);
/* Replaces path with len bytes of data, mode `mode`, atomically (a temporary file in the same directory,
 * fsync'd, renamed over path): readers see the old file or the new one, never a part. */
int fs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, struct err *e);
/* path with repeated and trailing slashes dropped ("/x//y/" → "/x/y"; "/" stays), malloc'd. */
char *fs_tidy_path(const char *path);
/* 1 when path is a non-empty relative path of plain names joined by single '/' (no '.', '..' or empty
 * component, no '/' at either end): what a setting may name below a directory. */
int fs_relative_path_is_clean(const char *path);
/* 1 when path is dir or lies below it, compared as strings (give both tidy or canonical; "/" holds everything). */
int fs_path_is_or_below(const char *path, const char *dir);
/* Opens absolute path (O_PATH | flags) only when no symlink is on the way (openat2 RESOLVE_NO_SYMLINKS): a path so
 * reached is its own canonical form, lexically, set in *canonical (fs_lexical_join "/" path, malloc'd). -1 with
 * errno otherwise: ELOOP for a symlink, EINVAL for a relative path; the caller resolves those another way. */
int fs_open_linkless(const char *path, int flags, char **canonical);
/* The canonical form of path, malloc'd: fs_open_linkless's when it opens; otherwise realpath's, then tidied (musl
 * keeps a leading "//"); when it does not resolve (missing), fs_tidy_path's. */
char *fs_canonical(const char *path);
/* base followed by path's components, "" and "." dropped and each ".." taking off the one before it (never above
 * "/"), malloc'd: the canonical path of a resolution from base that met no symlink, where ".." is lexical. base is
 * canonical and absolute. */
char *fs_lexical_join(const char *base, const char *path);
/* A directory read without the heap: fdopendir's DIR takes a page the allocator maps and unmaps for each directory
 * (the git layout check reads a dozen after every run). fs_dir_start takes fd (a directory at its start; -1 with
 * errno when fd < 0); fs_dir_next gives the entries as readdir would, "." and ".." left out, NULL at the end (errno
 * 0) or on an error (errno set); fs_dir_end closes fd. Entries may be renamed away while it reads. */
struct fs_dir {
	int fd;
	size_t pos, len;
	_Alignas(struct dirent) char buf[2048];
};
int fs_dir_start(struct fs_dir *d, int fd);
struct dirent *fs_dir_next(struct fs_dir *d);
void fs_dir_end(struct fs_dir *d);
/* 1 when something (anything, even a dangling symlink) exists at path. */
int fs_exists(const char *path);

#endif
