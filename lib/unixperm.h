/* unixperm.h — Unix operations for admin/setup: names, groups, ACLs, confined paths, home links.
 * Never follows a symlink when changing permissions, never runs a shell, never trusts a name. */
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
 * Accounts. groupadd, groupdel, gpasswd, useradd, userdel (and visudo, tar for setup/admin) run
 * by absolute path with a fixed argv, no shell, an environment of only PATH and LC_ALL=C, stdin
 * /dev/null, a timeout; a non-zero exit is an E_SYSTEM error carrying the tool's stderr.
 *
 * Home links. Owner links ~/agor/worktrees/<name>-<id8> are made and removed by a forked child
 * that has dropped to the owner's uid, gid and groups, so nothing root-only ever happens in a
 * directory the user controls.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "err.h"
#include "strbuf.h"
#include "strvec.h"

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

/* ---- POSIX ACLs (xattr format) ------------------------------------------------------------ */
enum {
	UNIXPERM_ACL_USER_OBJ = 0x01,
	UNIXPERM_ACL_USER = 0x02,
	UNIXPERM_ACL_GROUP_OBJ = 0x04,
	UNIXPERM_ACL_GROUP = 0x08,
	UNIXPERM_ACL_MASK = 0x10,
	UNIXPERM_ACL_OTHER = 0x20,
};
#define UNIXPERM_ACL_UNDEFINED_ID 0xffffffffu
#define UNIXPERM_ACL_MAX_ENTRIES  32

struct unixperm_acl_entry {
	uint16_t tag;
	uint16_t perm; /* rwx = 4|2|1 */
	uint32_t id;   /* uid/gid for USER/GROUP, else UNIXPERM_ACL_UNDEFINED_ID */
};

/* The five entries u::,g::,g:gid:,m::,o:: for mode (group perms = named group = mask). */
size_t unixperm_acl_for_mode(mode_t mode, gid_t gid, struct unixperm_acl_entry out[5]);
/* Appends the xattr value (header + entries, little-endian). Entries must be sorted. */
void unixperm_acl_encode(const struct unixperm_acl_entry *ent, size_t n, struct strbuf *out);
/* Parses an xattr value; -1 on a malformed one. */
int unixperm_acl_decode(const void *buf, size_t len, struct unixperm_acl_entry *out, size_t max,
			size_t *n);
/* "u::rwx,g::rwx,g:NAME:rwx,m::rwx,o::r-x" (group_name used for the named group entries). */
void unixperm_acl_describe(const struct unixperm_acl_entry *ent, size_t n, const char *group_name,
			   struct strbuf *out);

/* ---- confined paths ---------------------------------------------------------------------- */
/* O_PATH descriptor of root (clean, absolute, not "/"), no symlink followed anywhere. */
int unixperm_open_root(const char *root, struct err *e);
/* O_RDONLY|O_DIRECTORY descriptor of path, which must be strictly below root (whose descriptor
 * is rootfd). Refusals are E_PATH_OUTSIDE_DATA_HOME (outside, escaping symlink, "..") or
 * E_NOT_FOUND / E_INVALID_PAYLOAD. */
int unixperm_open_beneath(int rootfd, const char *root, const char *path, struct err *e);
/* Tests only: behave as if openat2 were blocked (the no-symlink walk is used instead). */
void unixperm_disable_openat2_for_tests(bool disabled);
/* The path of path relative to root (a pointer into path), or NULL when path is not below root. */
const char *unixperm_path_below(const char *root, const char *path);

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
int unixperm_apply_tree(int dirfd, const struct unixperm_tree_spec *spec,
			struct unixperm_tree_stats *stats, struct err *e);

/* ---- accounts -------------------------------------------------------------------------------- */
struct unixperm_user {
	char *name;
	uid_t uid;
	gid_t gid;
	char *home;
	char *shell;
};
/* 1 and u filled when the user exists, 0 when not, -1 on a lookup error. */
int unixperm_user_lookup(const char *name, struct unixperm_user *u, struct err *e);
void unixperm_user_release(struct unixperm_user *u);
/* 1 and *gid when the group exists, 0 when not. */
int unixperm_group_lookup(const char *name, gid_t *gid);
/* Appends the group's listed members (gr_mem; users whose primary group it is are not
 * listed); 1 when the group exists, 0 when not. */
int unixperm_group_members(const char *name, struct strvec *members);
/* True when user is in group (listed member, or group is the user's primary group). */
bool unixperm_user_in_group(const struct unixperm_user *u, const char *group);
/* Checks name, existence, uid != 0 and membership of agor_users; fills u. Refusals are
 * E_INVALID_PAYLOAD (bad name), E_NOT_FOUND, E_PERMISSION_DENIED. */
int unixperm_require_agor_user(const char *name, struct unixperm_user *u, struct err *e);
/* The smallest uid of a normal (non-system) account: UID_MIN in /etc/login.defs, else 1000. */
uid_t unixperm_uid_min(void);

/* The fixed-argv tool runner: argv[0] must be absolute. stdout is appended to out when not NULL. */
int unixperm_run_tool(const char *const *argv, struct strbuf *out, struct err *e);
/* The same with the tool's stdout going to out_fd (the caller keeps it). */
int unixperm_run_tool_fd(const char *const *argv, int out_fd, struct err *e);
/* Thin wrappers; each validates its names again. system: allocate from the system range. */
int unixperm_groupadd(const char *group, bool system, struct err *e);
int unixperm_groupdel(const char *group, struct err *e);
int unixperm_group_add_member(const char *group, const char *user, struct err *e);
int unixperm_group_remove_member(const char *group, const char *user, struct err *e);
/* Replaces the member list of a managed group (users comma-joined; names validated). */
int unixperm_group_set_members(const char *group, const struct strvec *users, struct err *e);
/* A login account with a home (useradd -m -U -s /bin/bash -G agor_users). */
int unixperm_useradd_login(const char *user, struct err *e);
/* A system account without login shell, home `home` created (useradd -r -m -d home -s nologin -U).
 */
int unixperm_useradd_system(const char *user, const char *home, struct err *e);
int unixperm_userdel(const char *user, bool remove_home, struct err *e);

/* ---- work done as another user -----------------------------------------------------------------
 */
/* Forks; the child drops to u's uid, gid and groups for good, runs fn, sends out and any error
 * back over a pipe and exits. Returns fn's result as seen by the parent. */
int unixperm_run_as_user(const struct unixperm_user *u,
			 int (*fn)(void *arg, struct strbuf *out, struct err *e), void *arg,
			 struct strbuf *out, struct err *e);

/* Owner links in ~/agor/worktrees (as the user). link_add replaces a stale link of that name;
 * returns 1 when something changed (or, with dry_run, would change), 0 when the link already
 * pointed at target. */
int unixperm_link_add(const struct unixperm_user *u, const char *link_name, const char *target,
		      bool dry_run, struct err *e);
/* Lists (names appended to found) the symlinks in ~/agor/worktrees whose name ends in
 * "-<suffix>" and whose target is missing or a directory of group gid. */
int unixperm_links_find(const struct unixperm_user *u, const char *suffix, gid_t gid,
			struct strvec *found, struct err *e);
/* Removes those links (by name, as the user; a name that is no longer a symlink is left alone). */
int unixperm_links_remove(const struct unixperm_user *u, const struct strvec *names, struct err *e);
/* "<home>/agor/worktrees" for messages and dry-run output. */
char *unixperm_links_dir(const struct unixperm_user *u);

#endif
