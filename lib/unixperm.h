/* unixperm.h — the names and paths agor's Unix operations share: user, group, link and id names checked before
 * anything uses them, the managed groups' names, access levels and the modes they give, and confined opens of a
 * configured root. The base of the unixperm_* family (acl, tree, account, links). Never trusts a name or a path. */
#ifndef AGOR_UNIXPERM_H
#define AGOR_UNIXPERM_H

/*
 * Contract
 * --------
 * Names. Every name that reaches this module from a caller is checked with one of the
 * *_valid() predicates first; the shadow-utils wrappers check again (defence in depth) and
 * refuse a malformed name with E_INVALID_PAYLOAD, a group outside the prefixes with
 * E_PERMISSION_DENIED (agor_users is the one other group they may add to or create).
 *   ids (worktree ids)     ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$
 *   user names (docs/payloads.md#impersonation) ^[a-z_][a-z0-9_-]{0,31}$   (so never "-x", never "--help")
 *   link names             ^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$
 *   managed groups         agor_wt_ or agor_rp_ followed by exactly 16 lowercase hex digits
 * A worktree's group is agor_wt_ + the first 16 hex digits of SHA-256(id); a repository's is
 * agor_rp_ + 16 hex of SHA-256(the repository's path relative to the repos root).
 *
 * Paths. Callers pass clean absolute paths (no "//", ".", ".." components, no trailing "/",
 * no control characters). unixperm_open_root() opens a configured root without following any
 * symlink; unixperm_open_beneath() opens a directory strictly below it with openat2
 * RESOLVE_BENEATH (symlinks allowed only while they stay inside; the last component never a
 * symlink) or, where openat2 is unavailable, a component walk that follows no symlink at all.
 *
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "err.h"

#define UNIXPERM_USERS_GROUP	 "agor_users"
#define UNIXPERM_WORKTREE_PREFIX "agor_wt_"
#define UNIXPERM_REPO_PREFIX	 "agor_rp_"
#define UNIXPERM_GROUP_HASH_HEX	 16
#define UNIXPERM_GROUP_NAME_SIZE 25  /* "agor_wt_" + 16 hex + NUL */
#define UNIXPERM_MAX_DEPTH	 400 /* deeper trees are refused, not half-changed silently */

/* ---- names ---------------------------------------------------------------------------- */
bool unixperm_id_valid(const char *id);
bool unixperm_user_name_valid(const char *name);
bool unixperm_link_name_valid(const char *name);
bool unixperm_managed_group_valid(const char *name);
bool unixperm_path_is_clean(const char *path);
/* "agor_wt_"/"agor_rp_" + 16 hex of SHA-256(key) into out (UNIXPERM_GROUP_NAME_SIZE bytes). */
void unixperm_group_name(const char *prefix, const char *key, char out[UNIXPERM_GROUP_NAME_SIZE]);

/* Each sets E_INVALID_PAYLOAD naming `what` and the rule, with the offending value escaped. */
int unixperm_check_id(const char *what, const char *id, struct err *e);
int unixperm_check_user_name(const char *what, const char *name, struct err *e);
int unixperm_check_link_name(const char *what, const char *name, struct err *e);
int unixperm_check_clean_path(const char *what, const char *path, struct err *e);
int unixperm_check_managed_group(const char *name, struct err *e);

/* ---- access levels and modes ------------------------------------------------------------ */
enum unixperm_access { UNIXPERM_NONE, UNIXPERM_READ, UNIXPERM_WRITE };
int unixperm_access_parse(const char *s, enum unixperm_access *out); /* -1 when unknown */
const char *unixperm_access_name(enum unixperm_access a);
mode_t unixperm_dir_mode(enum unixperm_access others);
mode_t unixperm_file_mode(mode_t current, enum unixperm_access others);

/* ---- confined paths ---------------------------------------------------------------------- */
/* O_PATH descriptor of root (clean, absolute, not "/"), no symlink followed anywhere. */
int unixperm_open_root(const char *root, struct err *e);
/* O_RDONLY|O_DIRECTORY descriptor of path, which must be strictly below root (whose descriptor
 * is rootfd). Refusals are E_PATH_OUTSIDE_DATA_HOME (outside, escaping symlink, "..") or
 * E_NOT_FOUND / E_INVALID_PAYLOAD. */
int unixperm_open_beneath(int rootfd, const char *root, const char *path, struct err *e);
/* The path of path relative to root (a pointer into path), or NULL when path is not below root. */
const char *unixperm_path_below(const char *root, const char *path);

#endif
