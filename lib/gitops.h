/* gitops.h — the executor's git operations on libgit2, in-process: clone, worktree add/remove.
 * Never runs hooks, filters, fsmonitor or any external program; never reads the user's or system's
 * git config; never writes progress to stdout. libgit2 is initialised lazily (it costs milliseconds).
 *
 * Paths given here are already confined (lib/confine.h) and absolute. On failure every function
 * leaves nothing half-made behind (a failed clone or worktree add removes what it created) and sets
 * e to E_GIT_ERROR (details: {"class":…,"klass":n,"message":…}), E_NOT_FOUND, E_ALREADY_EXISTS,
 * E_WORKTREE_DIRTY (details: {"paths":[…]}) or E_AUTH_FAILED.
 */
#ifndef AGOR_GITOPS_H
#define AGOR_GITOPS_H

#include <jansson.h>

#include "err.h"

/* Supplies credentials just in time for origin ("https://host:port", url.h); returns 0 and malloc'd strings, or -1.
 * gitops_clone calls it only when the server asking is the clone URL's own https origin — the host and port
 * libgit2 is really connected to, after any redirect — and, once it gave one, refuses to connect to any other
 * origin (E_AUTH_FAILED, naming both). */
typedef int (*gitops_credential_fn)(void *arg, const char *origin, char **username, char **password,
				     struct err *e);

struct gitops_clone {
	const char *url;
	const char *path; /* where the repository goes; must not exist or be an empty directory */
	const char *branch; /* NULL: the remote's default */
	int bare;
	gitops_credential_fn credentials; /* NULL: none available */
	void *credentials_arg;
	int progress; /* print progress lines on stderr */
};

struct gitops_worktree_add {
	const char *repo_path;
	const char *name;
	const char *path;
	const char *branch;	   /* NULL with create_branch 0: detached HEAD */
	const char *source_branch; /* start point for a new branch or a detached HEAD; NULL: HEAD */
	int create_branch;
};

/* Initialises libgit2 once: empty config search paths, owner validation off (paths are confined by the
 * caller). The CA bundle (SSL_CERT_FILE, SSL_CERT_DIR, then distribution paths) is loaded only before a
 * network operation: parsing it costs milliseconds that local operations (a run's repair) never need. */
int gitops_init(struct err *e);

/* What kind of URL this is: "https", "http", "ssh", "git", "file", "local" (absolute path), or NULL
 * when it is none of them. scp-like user@host:path counts as "ssh". */
const char *gitops_url_kind(const char *url);
/* Refuses a clone URL agor does not take: none of the kinds above, plain http://, a network URL the strict
 * parser refuses (url.h), or user information in one that could carry a daemon credential (all but ssh://).
 * -1 with e set to E_INVALID_PAYLOAD, details {"path":"params.url","reason":…}, message "params.url: …". */
int gitops_check_clone_url(const char *url, struct err *e);
/* The default repository location under repos/: "<provider>/<org>/<repo>.git" (provider = host, or
 * "local" for paths and file://). NULL with e set when the URL has no usable org/repo. */
char *gitops_default_repo_subpath(const char *url, struct err *e);

int gitops_clone(const struct gitops_clone *o, json_t **result, struct err *e);

/* The index of the (already checked) worktree at worktree_path, read by libgit2: fn(path, mode, arg) for each entry
 * in order (non-zero stops: the index is then left as it is and 1 returned); when every entry passed, the index is
 * written back from what libgit2 read (0) — so no reader sees an entry libgit2 did not (unknown extensions, such
 * as the offset table threaded git reads by, are dropped). -1 with E_GIT_ERROR when libgit2 refuses the index. */
typedef int (*gitops_index_entry_fn)(const char *path, unsigned mode, void *arg);
int gitops_index_rewrite(const char *worktree_path, gitops_index_entry_fn fn, void *arg, struct err *e);
/* Rewrites the index of the (already checked) worktree at worktree_path from its HEAD's tree. */
int gitops_index_from_head(const char *worktree_path, struct err *e);
int gitops_worktree_add(const struct gitops_worktree_add *o, json_t **result, struct err *e);
int gitops_worktree_remove(const char *worktree_path, int force, json_t **result, struct err *e);

#endif
