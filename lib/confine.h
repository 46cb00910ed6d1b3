/* confine.h — path confinement for the executor: a path must resolve, after symlinks and "..", inside a
 * given root directory (the data home's repos/ or worktrees/). Uses openat2(RESOLVE_BENEATH), falling back
 * to a descriptor walk that refuses every symlink; never a string-prefix check alone.
 *
 * confine_path(root, path, must_exist, &out, e):
 *   path is absolute (it must then lie lexically under root) or relative to root. The longest existing
 *   prefix is opened beneath root; absolute symlinks, ".." escapes, and symlinks leading out are refused
 *   with E_PATH_OUTSIDE_DATA_HOME. Components that do not exist yet (must_exist 0) must be plain names.
 *   With must_exist 1 a missing path is E_NOT_FOUND. *out receives the canonical absolute path (malloc'd).
 */
#ifndef AGOR_CONFINE_H
#define AGOR_CONFINE_H

#include "err.h"

int confine_path(const char *root, const char *path, int must_exist, char **out, struct err *e);

/* Opens rel beneath the directory rootfd with openat(2)'s flags (O_PATH, O_RDONLY, O_DIRECTORY, …), following
 * no symlink at all — none on the way, the last component included — and never leaving rootfd ("." is rootfd
 * itself). Returns the descriptor (O_CLOEXEC), or -1 with errno: ELOOP a symlink, EXDEV ".." or an absolute
 * path. For paths a sandbox could have written: nothing there is ever followed. */
int confine_openat(int rootfd, const char *rel, int flags);
/* The same from a root given by path (the root itself is trusted and resolved normally). */
int confine_open(const char *root, const char *rel, int flags);

#endif
