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

/*
 * A payload path held by descriptor, so no later operation resolves its string again (no check-then-use):
 *
 * confine_hold(root, path, make_parents, &held, e):
 *   path as for confine_path (resolved with it first: symlinks that stay inside root are allowed there), then its
 *   canonical form is walked again from root one component at a time with confine_openat — no symlink followed,
 *   none, never leaving root — and its parent directory is kept open. With make_parents, missing parents are made
 *   (mkdirat, 0755) on the way, each opened the same way; otherwise a missing parent is E_NOT_FOUND. The last
 *   component need not exist. path naming root itself is E_INVALID_PAYLOAD ("names the root itself").
 *   Everything the caller then does (mkdirat, renameat, unlinkat, openat with O_NOFOLLOW…) is relative to
 *   held.parent_fd and held.name: a parent swapped for a symlink afterwards changes nothing for it.
 *   held.path is the canonical path, for messages and results only.
 */
struct confined_path {
	int root_fd;   /* root, O_PATH */
	int parent_fd; /* the path's parent directory, O_PATH|O_DIRECTORY */
	char *name;    /* the last component: a plain name */
	char *path;    /* canonical absolute path (messages, results, what is recorded) */
};
#define CONFINED_PATH_INIT                                                                                             \
	{                                                                                                              \
		-1, -1, NULL, NULL                                                                                     \
	}
int confine_hold(const char *root, const char *path, int make_parents, struct confined_path *held, struct err *e);
void confined_path_release(struct confined_path *held);
/* path (absolute under root, or relative to it; root itself allowed) opened beneath root with confine_openat's
 * rules and flags: no symlink anywhere. The descriptor, or -1 with e set (E_PATH_OUTSIDE_DATA_HOME, E_NOT_FOUND). */
int confine_open_path(const char *root, const char *path, int flags, struct err *e);

/* Opens rel beneath the directory rootfd with openat(2)'s flags (O_PATH, O_RDONLY, O_DIRECTORY, …), following
 * no symlink at all — none on the way, the last component included — and never leaving rootfd ("." is rootfd
 * itself). Returns the descriptor (O_CLOEXEC), or -1 with errno: ELOOP a symlink, EXDEV ".." or an absolute
 * path. For paths a sandbox could have written: nothing there is ever followed. */
int confine_openat(int rootfd, const char *rel, int flags);
/* Opens the directory rel beneath rootfd one component at a time with confine_openat (O_PATH|O_DIRECTORY), making
 * each missing one (mkdirat, 0755) first when make is set. Returns the descriptor, or -1 with errno (ELOOP: a
 * symlink on the way, EXDEV: ".." or absolute, ENOENT: missing and make unset). */
int confine_open_dirs(int rootfd, const char *rel, int make);
/* The same from a root given by path (the root itself is trusted and resolved normally). */
int confine_open(const char *root, const char *rel, int flags);

#endif
