/* gitops.h — the executor's git operations on libgit2, in-process: clone, worktree add/remove.
 * Never runs hooks, filters, fsmonitor or any external program; never reads the user's or system's
 * git config; never writes progress to stdout. libgit2 is initialised lazily (it costs milliseconds).
 *
 * Paths given here are already confined (lib/confine.h) and absolute, and every destination is held by descriptor
 * (confine_hold): libgit2 resolves path strings again (it realpath()s every path it is given, /proc/self/fd/N
 * included), so it never writes through a payload path. A clone or a new worktree is made by libgit2 in a private
 * directory (0700, ".agor-*", made in a trusted root on the same filesystem: repos/ or worktrees/), then moved into
 * the held parent with renameat2; the worktree's admin entry and branch are written by descriptor beneath the held
 * repository; removal is fs_remove_at beneath held directories. libgit2 only reads through the repository's path.
 * On failure every function leaves nothing half-made behind (a failed clone or worktree add removes what it
 * created) and sets
 * e to E_GIT_ERROR (details: {"class":…,"klass":n,"message":…}), E_NOT_FOUND, E_ALREADY_EXISTS,
 * E_WORKTREE_DIRTY (details: {"paths":[…]}), E_AUTH_FAILED (an ssh host key not listed: details {"fingerprint":…})
 * or E_INVALID_PAYLOAD (an ssh URL without a host and port agor can read).
 */
#ifndef AGOR_GITOPS_H
#define AGOR_GITOPS_H

#include <jansson.h>
#include <stdint.h>

#include "err.h"

/* Supplies credentials just in time for origin ("https://host:port", url.h); returns 0 and malloc'd strings, or -1.
 * gitops_clone calls it only when the server asking is the clone URL's own https origin — the host and port
 * libgit2 is really connected to, after any redirect — and, once it gave one, refuses to connect to any other
 * origin (E_AUTH_FAILED, naming both). */
typedef int (*gitops_credential_fn)(void *arg, const char *origin, char **username, char **password, struct err *e);

/* The host keys execution.git.known_hosts lists for origin ("ssh://host:port"): 0 and a new JSON array of
 * "TYPE BASE64" strings (knownhosts.h), or -1 with e set. gitops_clone asks before anything is sent to an ssh
 * server, and refuses a server whose key is not listed (E_AUTH_FAILED naming its SHA256 fingerprint). For an ssh
 * origin, gitops_credential_fn gives the stored user name (NULL: the URL's, else "git") and, as the password, the
 * OpenSSH private key text (sshkey.h): it is parsed in memory and wiped, never written anywhere. */
typedef int (*gitops_host_keys_fn)(void *arg, const char *origin, json_t **keys, struct err *e);

struct gitops_clone {
	const char *url;
	const char *path;      /* the destination's canonical path: messages and the result only */
	int parent_fd;	       /* the destination's parent, held */
	const char *name;      /* the destination in parent_fd; must not exist or be an empty directory */
	int stage_fd;	       /* a trusted directory on the destination's filesystem (repos/) … */
	const char *stage_dir; /* … and its path: libgit2 clones into a private directory made there */
	const char *branch;    /* NULL: the remote's default */
	int bare;
	int resume; /* a bare repository of this URL already at path is the result (an interrupted clone's) */
	gitops_credential_fn credentials; /* NULL: none available */
	gitops_host_keys_fn host_keys;	  /* NULL: no ssh server is trusted */
	void *credentials_arg;		  /* both callbacks' */
	int progress;			  /* print progress lines on stderr */
};

struct gitops_worktree_add {
	const char *repo_path; /* canonical: libgit2 reads the repository through it */
	int repo_fd; /* the repository, held (O_PATH|O_DIRECTORY): refs and the admin entry are written here */
	const char *name;
	const char *path;	   /* the worktree's canonical path: recorded in its metadata, and the result */
	int parent_fd;		   /* the worktree's parent, held */
	const char *leaf;	   /* the worktree in parent_fd; must not exist or be an empty directory */
	int stage_fd;		   /* a trusted directory on the worktree's filesystem (worktrees/) … */
	const char *stage_dir;	   /* … and its path: libgit2 checks out into a private directory made there */
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

/* A worktree's index, reached by descriptor: libgit2 works on a copy in a private directory made in stage_dir
 * (a trusted directory: /tmp), and the result is put back into the admin entry held at admin_fd (as git
 * does: index.lock made exclusively, renamed over index), so no write goes through the worktree's path. */
struct gitops_index_place {
	const char *worktree; /* W: libgit2 reads HEAD's tree through it (reading only) */
	int admin_fd;	      /* A, held */
	const char *admin;    /* A's path, for messages */
	int stage_fd;	      /* stage_dir, held */
	const char *stage_dir;
	uint8_t *written_sha256; /* NULL, or where the SHA-256 (32 bytes) of the index put back is written */
};
/* The index, read by libgit2: fn(path, mode, arg) for each entry in order (non-zero stops: the index is then left
 * as it is and 1 returned); when every entry passed, the index is written back from what libgit2 read (0) — so no
 * reader sees an entry libgit2 did not (unknown extensions, such as the offset table threaded git reads by, are
 * dropped). -1 with E_GIT_ERROR when libgit2 refuses the index. */
typedef int (*gitops_index_entry_fn)(const char *path, unsigned mode, void *arg);
int gitops_index_rewrite(const struct gitops_index_place *at, gitops_index_entry_fn fn, void *arg, struct err *e);
/* Writes the index anew from the worktree's HEAD's tree. */
int gitops_index_from_head(const struct gitops_index_place *at, struct err *e);
int gitops_worktree_add(const struct gitops_worktree_add *o, json_t **result, struct err *e);
/* Removes a worktree whose layout was checked (git_layout_find): unless force, libgit2 reads its status through
 * path (dirty: E_WORKTREE_DIRTY, nothing removed); then leaf in parent_fd is removed (fs_remove_at) and the admin
 * entry admin_name in the held repository's worktrees/. */
struct gitops_worktree_remove {
	const char *path; /* the worktree's canonical path */
	int parent_fd;	  /* its parent, held */
	const char *leaf; /* the worktree in parent_fd */
	int common_fd;	  /* the repository, held */
	const char *common;
	const char *admin_name; /* NAME of common/worktrees/NAME */
	int force;
};
int gitops_worktree_remove(const struct gitops_worktree_remove *o, json_t **result, struct err *e);

#endif
