/* gitlayout.h — a worktree's git metadata as agor made it: derived from the data home's layout, checked on disk
 * before anything runs there, and put back after a run. Never follows a symlink or a path read from a file
 * that a sandboxed program could have written without checking it against the layout first.
 *
 * Contract
 * --------
 * What agor makes (git.clone, git.worktree.add):
 *   repository  C = a bare repository under the data home's repos/ (no `commondir` file in it)
 *   worktree    W = a directory under worktrees/ whose `.git` is a regular file "gitdir: C/worktrees/NAME\n",
 *               NAME = the last component of W
 *   admin dir   A = C/worktrees/NAME, a directory whose `gitdir` is "W/.git\n" and `commondir` "../..\n",
 *               with no `config.worktree`
 * git_layout_find(cfg, W, expected_repo, create, &l, e) derives C and A from W's `.git` file and accepts them
 * only when everything above holds on disk, every component reached without following a symlink (openat2
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS beneath repos/ and worktrees/). expected_repo (the daemon's record, or
 * NULL) must then equal C. W without `.git` has no layout (l.common NULL, returns 0). Anything else fails with
 * E_PATH_OUTSIDE_DATA_HOME (gitdir outside repos/) or E_GIT_ERROR, details {"file": PATH, "reason": …}, a
 * message naming the file: nothing runs in a worktree whose metadata was changed. With create, C/logs and
 * C/objects/info are made when missing (a sandbox binds them).
 *
 * git_layout_snapshot(cfg, &l) records what a run must not change (C/config's bytes, C/hooks' entries);
 * git_layout_repair(cfg, &l, run) afterwards checks every file a planted change could steer host git or a later
 * run with — W/.git, A/gitdir, A/commondir, A/config.worktree, C/commondir, C/config, C/hooks,
 * C/objects/info/{alternates,http-alternates}, symlinks anywhere under C/refs, C/logs, C/objects — moves what is
 * not as agor made it to DATA_HOME/quarantine/<time>-<run>/ (removes it when it cannot be moved), puts the
 * expected file back, and returns {"checked": true, "repaired": [{"path","found","action","to"?}…]}.
 * The repository-level checks (gitlayout_repository_*) serve git.worktree.add and remove too.
 */
#ifndef AGOR_GITLAYOUT_H
#define AGOR_GITLAYOUT_H

#include <jansson.h>

#include "config.h"
#include "err.h"

struct git_layout {
	char *worktree; /* W */
	char *common;	/* C, or NULL when W has no .git */
	char *admin;	/* C/worktrees/NAME */
	char *config;	/* snapshot: C/config's bytes (NULL: none taken) */
	size_t config_len;
	json_t *hooks; /* snapshot: C/hooks entries {name: "mode size mtime"} */
	char *head;    /* snapshot: the admin entry's HEAD (put back when it is no longer a small regular file) */
};

int git_layout_find(const struct config *cfg, const char *worktree, const char *expected_repo, int create,
		    struct git_layout *l, struct err *e);
void git_layout_snapshot(const struct config *cfg, struct git_layout *l);
json_t *git_layout_repair(const struct config *cfg, const struct git_layout *l, const char *run);
void git_layout_release(struct git_layout *l);
/* The repository C of a found layout, opened beneath repos/ without following any link (O_PATH|O_DIRECTORY);
 * -1 with errno. */
int git_layout_open_common(const struct config *cfg, const struct git_layout *l);

/* A repository directory (absolute, under repos/) as agor made it: reached without symlinks, a directory,
 * no `commondir` file, `worktrees` (when present) a real directory. -1 with E_GIT_ERROR naming the file. */
int git_layout_check_repository(const struct config *cfg, const char *repo, struct err *e);

#endif
