/* unixperm.c — names, ACL xattrs, confined opens, the no-follow walk, shadow-utils, home links.
 * Never follows a symlink when changing an inode; never acts as root in a user's directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <mbedtls/sha256.h>

#include "child.h"
#include "unixperm.h"
#include "fsutil.h"
#include "banned.h"

#define XATTR_ACL_ACCESS  "system.posix_acl_access"
#define XATTR_ACL_DEFAULT "system.posix_acl_default"
#define ACL_XATTR_VERSION 2u
#define TOOL_TIMEOUT_MS	  120000
#define TOOL_ENV_PATH	  "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

/* ---- names ---------------------------------------------------------------------------- */

static bool is_lower(char c)
{
	return c >= 'a' && c <= 'z';
}
static bool is_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}
static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}
static bool is_alnum(char c)
{
	return is_lower(c) || is_upper(c) || is_digit(c);
}
static bool is_hex_lower(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f');
}

bool unixperm_id_valid(const char *id)
{
	size_t n = strlen(id);
	if (n < 1 || n > 64 || !is_alnum(id[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!is_alnum(id[i]) && id[i] != '_' && id[i] != '-')
			return false;
	return true;
}

bool unixperm_user_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n < 1 || n > 32 || !(is_lower(name[0]) || name[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!is_lower(name[i]) && !is_digit(name[i]) && name[i] != '_' && name[i] != '-')
			return false;
	return true;
}

bool unixperm_link_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n < 1 || n > 100 || !(is_alnum(name[0]) || name[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!is_alnum(name[i]) && name[i] != '.' && name[i] != '_' && name[i] != '-')
			return false;
	return true;
}

bool unixperm_managed_group_valid(const char *name)
{
	size_t plen = strlen(UNIXPERM_WORKTREE_PREFIX);
	if (strncmp(name, UNIXPERM_WORKTREE_PREFIX, plen) &&
	    strncmp(name, UNIXPERM_REPO_PREFIX, plen))
		return false;
	if (strlen(name) != plen + UNIXPERM_GROUP_HASH_HEX)
		return false;
	for (size_t i = plen; name[i]; i++)
		if (!is_hex_lower(name[i]))
			return false;
	return true;
}

bool unixperm_path_is_clean(const char *path)
{
	size_t n = strlen(path);
	if (n < 2 || n >= PATH_MAX || path[0] != '/' || path[n - 1] == '/')
		return false;
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	for (const char *comp = path + 1; comp;) {
		const char *slash = strchr(comp, '/');
		size_t len = slash ? (size_t)(slash - comp) : strlen(comp);
		if (len == 0 || (len == 1 && comp[0] == '.') ||
		    (len == 2 && comp[0] == '.' && comp[1] == '.'))
			return false;
		comp = slash ? slash + 1 : NULL;
	}
	return true;
}

void unixperm_group_name(const char *prefix, const char *key, char out[UNIXPERM_GROUP_NAME_SIZE])
{
	unsigned char digest[32];
	mbedtls_sha256_ret((const unsigned char *)key, strlen(key), digest, 0);
	size_t plen = strlen(prefix);
	if (plen > 8)
		plen = 8;
	memcpy(out, prefix, plen);
	for (size_t i = 0; i < UNIXPERM_GROUP_HASH_HEX / 2; i++)
		snprintf(out + plen + 2 * i, 3, "%02x", digest[i]);
	out[plen + UNIXPERM_GROUP_HASH_HEX] = '\0';
}

/* Appends s quoted, with anything but printable ASCII escaped, at most 100 bytes of it. */
static void add_escaped(struct strbuf *sb, const char *s)
{
	strbuf_addch(sb, '"');
	size_t i;
	for (i = 0; s[i] && i < 100; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n')
			strbuf_addstr(sb, "\\n");
		else if (c == '"' || c == '\\')
			strbuf_addf(sb, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			strbuf_addf(sb, "\\x%02x", c);
		else
			strbuf_addch(sb, (char)c);
	}
	if (s[i])
		strbuf_addstr(sb, "...");
	strbuf_addch(sb, '"');
}

static int refuse_name(struct err *e, const char *code, const char *what, const char *value,
		       const char *rule)
{
	struct strbuf sb = STRBUF_INIT;
	add_escaped(&sb, value);
	json_t *details = json_pack("{s:s,s:s}", "path", what, "reason", rule);
	err_setd(e, code, details, "%s %s is invalid: %s", what, sb.buf, rule);
	strbuf_release(&sb);
	return -1;
}

int unixperm_check_id(const char *what, const char *id, struct err *e)
{
	if (unixperm_id_valid(id))
		return 0;
	return refuse_name(e, E_INVALID_PAYLOAD, what, id,
			   "must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$");
}

int unixperm_check_user_name(const char *what, const char *name, struct err *e)
{
	if (unixperm_user_name_valid(name))
		return 0;
	return refuse_name(e, E_INVALID_PAYLOAD, what, name, "must match ^[a-z_][a-z0-9_-]{0,31}$");
}

int unixperm_check_link_name(const char *what, const char *name, struct err *e)
{
	if (unixperm_link_name_valid(name))
		return 0;
	return refuse_name(e, E_INVALID_PAYLOAD, what, name,
			   "must match ^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$");
}

int unixperm_check_clean_path(const char *what, const char *path, struct err *e)
{
	if (unixperm_path_is_clean(path))
		return 0;
	return refuse_name(e, E_INVALID_PAYLOAD, what, path,
			   "must be a clean absolute path (no '.', '..', '//', trailing '/' or "
			   "control characters)");
}

int unixperm_check_managed_group(const char *name, struct err *e)
{
	if (unixperm_managed_group_valid(name))
		return 0;
	return refuse_name(e, E_PERMISSION_DENIED, "group", name,
			   "only agor_wt_/agor_rp_ followed by 16 hex digits are managed by agor");
}

/* ---- access levels and modes ------------------------------------------------------------ */

static const char *const access_names[] = {"none", "read", "write"};

int unixperm_access_parse(const char *s, enum unixperm_access *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(access_names); i++)
		if (!strcmp(s, access_names[i])) {
			*out = (enum unixperm_access)i;
			return 0;
		}
	return -1;
}

const char *unixperm_access_name(enum unixperm_access a)
{
	return (size_t)a < ARRAY_SIZE(access_names) ? access_names[a] : "?";
}

mode_t unixperm_dir_mode(enum unixperm_access others)
{
	static const mode_t other_bits[] = {0, 05, 07};
	return S_ISGID | 0770 | other_bits[others];
}

mode_t unixperm_file_mode(mode_t current, enum unixperm_access others)
{
	mode_t x = (current & 0111) ? 1 : 0;
	mode_t other = others == UNIXPERM_NONE ? 0 : others == UNIXPERM_READ ? (4 | x) : (6 | x);
	return (current & 0700) | ((6 | x) << 3) | other;
}

/* ---- POSIX ACLs ---------------------------------------------------------------------------- */

size_t unixperm_acl_for_mode(mode_t mode, gid_t gid, struct unixperm_acl_entry out[5])
{
	uint16_t u = (mode >> 6) & 7, g = (mode >> 3) & 7, o = mode & 7;
	out[0] = (struct unixperm_acl_entry){UNIXPERM_ACL_USER_OBJ, u, UNIXPERM_ACL_UNDEFINED_ID};
	out[1] = (struct unixperm_acl_entry){UNIXPERM_ACL_GROUP_OBJ, g, UNIXPERM_ACL_UNDEFINED_ID};
	out[2] = (struct unixperm_acl_entry){UNIXPERM_ACL_GROUP, g, (uint32_t)gid};
	out[3] = (struct unixperm_acl_entry){UNIXPERM_ACL_MASK, g, UNIXPERM_ACL_UNDEFINED_ID};
	out[4] = (struct unixperm_acl_entry){UNIXPERM_ACL_OTHER, o, UNIXPERM_ACL_UNDEFINED_ID};
	return 5;
}

static void add_le16(struct strbuf *sb, uint16_t v)
{
	unsigned char b[2] = {(unsigned char)(v & 0xff), (unsigned char)(v >> 8)};
	strbuf_add(sb, b, 2);
}

static void add_le32(struct strbuf *sb, uint32_t v)
{
	unsigned char b[4] = {(unsigned char)(v & 0xff), (unsigned char)((v >> 8) & 0xff),
			      (unsigned char)((v >> 16) & 0xff), (unsigned char)(v >> 24)};
	strbuf_add(sb, b, 4);
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void unixperm_acl_encode(const struct unixperm_acl_entry *ent, size_t n, struct strbuf *out)
{
	add_le32(out, ACL_XATTR_VERSION);
	for (size_t i = 0; i < n; i++) {
		add_le16(out, ent[i].tag);
		add_le16(out, ent[i].perm);
		add_le32(out, ent[i].id);
	}
}

int unixperm_acl_decode(const void *buf, size_t len, struct unixperm_acl_entry *out, size_t max,
			size_t *n)
{
	const unsigned char *p = buf;
	if (len < 4 || (len - 4) % 8 || get_le32(p) != ACL_XATTR_VERSION || (len - 4) / 8 > max)
		return -1;
	*n = (len - 4) / 8;
	for (size_t i = 0; i < *n; i++) {
		const unsigned char *q = p + 4 + 8 * i;
		out[i].tag = (uint16_t)(q[0] | q[1] << 8);
		out[i].perm = (uint16_t)(q[2] | q[3] << 8);
		out[i].id = get_le32(q + 4);
	}
	return 0;
}

static void add_perm(struct strbuf *sb, unsigned perm)
{
	strbuf_addch(sb, (perm & 4) ? 'r' : '-');
	strbuf_addch(sb, (perm & 2) ? 'w' : '-');
	strbuf_addch(sb, (perm & 1) ? 'x' : '-');
}

void unixperm_acl_describe(const struct unixperm_acl_entry *ent, size_t n, const char *group_name,
			   struct strbuf *out)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			strbuf_addch(out, ',');
		switch (ent[i].tag) {
		case UNIXPERM_ACL_USER_OBJ:
			strbuf_addstr(out, "u::");
			break;
		case UNIXPERM_ACL_USER:
			strbuf_addf(out, "u:%u:", (unsigned)ent[i].id);
			break;
		case UNIXPERM_ACL_GROUP_OBJ:
			strbuf_addstr(out, "g::");
			break;
		case UNIXPERM_ACL_GROUP:
			if (group_name)
				strbuf_addf(out, "g:%s:", group_name);
			else
				strbuf_addf(out, "g:%u:", (unsigned)ent[i].id);
			break;
		case UNIXPERM_ACL_MASK:
			strbuf_addstr(out, "m::");
			break;
		case UNIXPERM_ACL_OTHER:
			strbuf_addstr(out, "o::");
			break;
		default:
			strbuf_addf(out, "?%u:", (unsigned)ent[i].tag);
			break;
		}
		add_perm(out, ent[i].perm);
	}
}

/* ---- confined paths ------------------------------------------------------------------------ */

struct agor_open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};
#define AGOR_RESOLVE_NO_MAGICLINKS 0x02
#define AGOR_RESOLVE_NO_SYMLINKS   0x04
#define AGOR_RESOLVE_BENEATH	   0x08
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* openat2(2); retries the EAGAIN the kernel returns when a concurrent rename raced a ".." check. */
static int openat2_fd(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct agor_open_how how = {flags, 0, resolve};
	for (int attempt = 0; attempt < 16; attempt++) {
		long r = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (r >= 0)
			return (int)r;
		if (errno != EAGAIN && errno != EINTR)
			return -1;
	}
	return -1;
}

static bool openat2_disabled; /* tests only: exercise the fallback walk */

void unixperm_disable_openat2_for_tests(bool disabled)
{
	openat2_disabled = disabled;
}

static bool openat2_unavailable(int err)
{
	return openat2_disabled || err == ENOSYS ||
	       err == EPERM; /* EPERM: a seccomp filter that blocks it */
}

/* Opens the clean relative path rel below dirfd following no symlink at all (the fallback
 * when openat2 is unavailable); the last component is opened with last_flags. */
static int open_walk_nofollow(int dirfd, const char *rel, int last_flags)
{
	char *copy = xstrdup(rel);
	int cur = dirfd, rc = -1;
	char *comp = copy;
	for (;;) {
		char *slash = strchr(comp, '/');
		if (slash)
			*slash = '\0';
		int flags = slash ? (O_PATH | O_DIRECTORY) : last_flags;
		int next = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC);
		int saved = errno;
		if (cur != dirfd)
			close(cur);
		if (next < 0) {
			errno = saved == ENOTDIR
					? ELOOP
					: saved; /* a symlinked directory shows as ENOTDIR */
			break;
		}
		cur = next;
		if (!slash) {
			rc = cur;
			break;
		}
		comp = slash + 1;
	}
	free(copy);
	return rc;
}

int unixperm_open_root(const char *root, struct err *e)
{
	if (!unixperm_path_is_clean(root))
		return err_set(e, E_CONFIG, "root %s must be a clean absolute path other than /",
			       root);
	int fd = openat2_fd(AT_FDCWD, root, O_PATH | O_DIRECTORY | O_CLOEXEC,
			    AGOR_RESOLVE_NO_SYMLINKS | AGOR_RESOLVE_NO_MAGICLINKS);
	if (fd < 0 && openat2_unavailable(errno)) {
		int top = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (top < 0)
			return err_errno(e, errno, "open /");
		fd = open_walk_nofollow(top, root + 1, O_PATH | O_DIRECTORY);
		int saved = errno;
		close(top);
		errno = saved;
	}
	if (fd >= 0)
		return fd;
	if (errno == ENOENT)
		return err_set(e, E_NOT_FOUND, "root %s does not exist", root);
	if (errno == ELOOP || errno == EXDEV)
		return err_set(e, E_CONFIG,
			       "root %s contains a symlink: configure its canonical path", root);
	return err_errno(e, errno, "open root %s", root);
}

const char *unixperm_path_below(const char *root, const char *path)
{
	size_t n = strlen(root);
	if (strncmp(path, root, n) || path[n] != '/' || !path[n + 1])
		return NULL;
	return path + n + 1;
}

static int refuse_outside(struct err *e, const char *path, const char *root, const char *why)
{
	struct strbuf sb = STRBUF_INIT;
	add_escaped(&sb, path);
	json_t *details = json_pack("{s:s,s:s}", "root", root, "reason", why);
	err_setd(e, E_PATH_OUTSIDE_DATA_HOME, details, "path %s is refused: %s (allowed: below %s)",
		 sb.buf, why, root);
	strbuf_release(&sb);
	return -1;
}

static int same_inode(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int unixperm_open_beneath(int rootfd, const char *root, const char *path, struct err *e)
{
	if (!unixperm_path_is_clean(path))
		return refuse_outside(e, path, root,
				      "not a clean absolute path ('.', '..', '//' are refused)");
	const char *rel = unixperm_path_below(root, path);
	if (!rel)
		return refuse_outside(e, path, root, "not inside the configured root");
	int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat2_fd(rootfd, rel, (uint64_t)flags,
			    AGOR_RESOLVE_BENEATH | AGOR_RESOLVE_NO_MAGICLINKS);
	if (fd < 0 && openat2_unavailable(errno))
		fd = open_walk_nofollow(rootfd, rel, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		if (errno == EXDEV || errno == ELOOP)
			return refuse_outside(
				e, path, root,
				"a symlink on the way leaves the root or is the target");
		if (errno == ENOENT)
			return err_set(e, E_NOT_FOUND, "%s does not exist", path);
		struct stat st;
		if (errno == ENOTDIR && fstatat(rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			return refuse_outside(e, path, root, "it is a symlink");
		if (errno == ENOTDIR)
			return err_set(e, E_INVALID_PAYLOAD, "%s is not a directory", path);
		return err_errno(e, errno, "open %s", path);
	}
	if (same_inode(fd, rootfd)) {
		close(fd);
		return refuse_outside(e, path, root, "it is the root itself");
	}
	return fd;
}

/* ---- recursive permission change ------------------------------------------------------------ */

struct tree_walk {
	const struct unixperm_tree_spec *spec;
	struct unixperm_tree_stats *stats;
	dev_t dev;
	struct strbuf path; /* relative path of the current entry, for messages */
	struct err *e;
};

static int walk_fail(struct tree_walk *w, int errnum, const char *what)
{
	return err_errno(w->e, errnum, "%s %s", what, w->path.len ? w->path.buf : ".");
}

/* The mask entry's permissions, or 7 when there is none. */
static unsigned acl_mask(const struct unixperm_acl_entry *ent, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ent[i].tag == UNIXPERM_ACL_MASK)
			return ent[i].perm;
	return 7;
}

/* Same entries granting the same effective permissions: an inherited "g:G:rwx, m::rw-" equals
 * the wanted "g:G:rw-, m::rw-", so a second run does not rewrite what files inherited. */
static bool acl_equivalent(const struct unixperm_acl_entry *a, size_t na,
			   const struct unixperm_acl_entry *b, size_t nb)
{
	if (na != nb || acl_mask(a, na) != acl_mask(b, nb))
		return false;
	unsigned mask = acl_mask(a, na);
	for (size_t i = 0; i < na; i++) {
		bool masked = a[i].tag == UNIXPERM_ACL_GROUP_OBJ ||
			      a[i].tag == UNIXPERM_ACL_GROUP || a[i].tag == UNIXPERM_ACL_USER;
		unsigned pa = masked ? a[i].perm & mask : a[i].perm,
			 pb = masked ? b[i].perm & mask : b[i].perm;
		if (a[i].tag != b[i].tag || a[i].id != b[i].id || pa != pb)
			return false;
	}
	return true;
}

static bool xattr_equals(int fd, const char *name, const struct unixperm_acl_entry *want,
			 size_t nwant)
{
	unsigned char buf[4 + 8 * UNIXPERM_ACL_MAX_ENTRIES];
	struct unixperm_acl_entry have[UNIXPERM_ACL_MAX_ENTRIES];
	size_t nhave;
	ssize_t n = fgetxattr(fd, name, buf, sizeof(buf));
	return n > 0 &&
	       unixperm_acl_decode(buf, (size_t)n, have, UNIXPERM_ACL_MAX_ENTRIES, &nhave) == 0 &&
	       acl_equivalent(have, nhave, want, nwant);
}

static int set_acl_if_needed(struct tree_walk *w, int fd, const char *xname, mode_t mode,
			     bool *changed)
{
	struct unixperm_acl_entry ent[5];
	size_t n = unixperm_acl_for_mode(mode, w->spec->gid, ent);
	struct strbuf want = STRBUF_INIT;
	unixperm_acl_encode(ent, n, &want);
	int rc = 0;
	if (!xattr_equals(fd, xname, ent, n)) {
		*changed = true;
		if (!w->spec->dry_run && fsetxattr(fd, xname, want.buf, want.len, 0) < 0) {
			if (errno == ENOTSUP || errno == EOPNOTSUPP)
				rc = err_set(w->e, E_SYSTEM,
					     "the filesystem of %s does not support POSIX ACLs",
					     w->path.len ? w->path.buf : ".");
			else
				rc = walk_fail(w, errno, "set ACL on");
		}
	}
	strbuf_release(&want);
	return rc;
}

/* Group, ACLs, then mode of one inode, each only when it differs. */
static int apply_inode(struct tree_walk *w, int fd, const struct stat *st, bool is_dir)
{
	mode_t want = is_dir ? unixperm_dir_mode(w->spec->others)
			     : unixperm_file_mode(st->st_mode, w->spec->others);
	bool changed = false, dry = w->spec->dry_run;
	if (st->st_gid != w->spec->gid) {
		changed = true;
		if (!dry && fchown(fd, (uid_t)-1, w->spec->gid) < 0)
			return walk_fail(w, errno, "chgrp");
	}
	if (set_acl_if_needed(w, fd, XATTR_ACL_ACCESS, want, &changed) < 0)
		return -1;
	if (is_dir && set_acl_if_needed(w, fd, XATTR_ACL_DEFAULT, want, &changed) < 0)
		return -1;
	struct stat now = *st;
	if (!dry && fstat(fd, &now) < 0)
		return walk_fail(w, errno, "stat");
	if ((now.st_mode & 07777) != want) {
		changed = true;
		if (!dry && fchmod(fd, want) < 0)
			return walk_fail(w, errno, "chmod");
	}
	if (changed)
		w->stats->changed++;
	return 0;
}

static int walk_dir(struct tree_walk *w, int fd, int depth);

static bool raced_away(int errnum)
{
	return errnum == ENOENT || errnum == ELOOP || errnum == ENOTDIR || errnum == ENXIO;
}

static int enter_dir(struct tree_walk *w, int parentfd, const char *name, int depth)
{
	if (depth >= UNIXPERM_MAX_DEPTH)
		return err_set(w->e, E_INVALID_PAYLOAD,
			       "directory tree deeper than %d levels at %s", UNIXPERM_MAX_DEPTH,
			       w->path.buf);
	int fd = openat(parentfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (raced_away(errno)) {
			w->stats->skipped_symlinks++;
			return 0;
		}
		return walk_fail(w, errno, "open");
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int saved = errno;
		close(fd);
		return walk_fail(w, saved, "stat");
	}
	if (st.st_dev != w->dev) { /* a mount point */
		close(fd);
		w->stats->skipped_other_fs++;
		return 0;
	}
	w->stats->dirs++;
	if (apply_inode(w, fd, &st, true) < 0) {
		close(fd);
		return -1;
	}
	return walk_dir(w, fd, depth + 1);
}

static int change_file(struct tree_walk *w, int parentfd, const char *name)
{
	int fd = openat(parentfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (raced_away(errno)) {
			w->stats->skipped_symlinks++;
			return 0;
		}
		return walk_fail(w, errno, "open");
	}
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0)
		rc = walk_fail(w, errno, "stat");
	else if (!S_ISREG(st.st_mode))
		w->stats->skipped_special++;
	else if (st.st_dev != w->dev)
		w->stats->skipped_other_fs++;
	else if (st.st_nlink > 1)
		w->stats->skipped_hardlinked++;
	else {
		w->stats->files++;
		rc = apply_inode(w, fd, &st, false);
	}
	close(fd);
	return rc;
}

static int walk_entry(struct tree_walk *w, int parentfd, const char *name, int depth)
{
	struct stat st;
	if (fstatat(parentfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : walk_fail(w, errno, "stat");
	if (S_ISLNK(st.st_mode)) {
		w->stats->skipped_symlinks++;
		return 0;
	}
	if (st.st_dev != w->dev) {
		w->stats->skipped_other_fs++;
		return 0;
	}
	if (S_ISDIR(st.st_mode))
		return enter_dir(w, parentfd, name, depth);
	if (S_ISREG(st.st_mode))
		return change_file(w, parentfd, name);
	w->stats->skipped_special++;
	return 0;
}

/* Walks the directory dirfd (consumed: closed before returning). */
static int walk_dir(struct tree_walk *w, int fd, int depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		int saved = errno;
		close(fd);
		return walk_fail(w, saved, "read directory");
	}
	size_t base = w->path.len;
	int rc = 0;
	struct dirent *de;
	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		strbuf_setlen(&w->path, base);
		if (base)
			strbuf_addch(&w->path, '/');
		strbuf_addstr(&w->path, de->d_name);
		if ((rc = walk_entry(w, fd, de->d_name, depth)) < 0)
			break;
	}
	if (rc == 0 && errno)
		rc = walk_fail(w, errno, "read directory");
	strbuf_setlen(&w->path, base);
	closedir(d);
	return rc;
}

int unixperm_apply_tree(int dirfd, const struct unixperm_tree_spec *spec,
			struct unixperm_tree_stats *stats, struct err *e)
{
	struct tree_walk w = {spec, stats, 0, STRBUF_INIT, e};
	memset(stats, 0, sizeof(*stats));
	struct stat st;
	if (fstat(dirfd, &st) < 0)
		return err_errno(e, errno, "stat tree top");
	if (!S_ISDIR(st.st_mode))
		return err_set(e, E_INVALID_PAYLOAD, "tree top is not a directory");
	w.dev = st.st_dev;
	int top =
		openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own offset for readdir */
	if (top < 0)
		return err_errno(e, errno, "open tree top");
	stats->dirs++;
	int rc = apply_inode(&w, top, &st, true);
	if (rc < 0)
		close(top);
	else
		rc = walk_dir(&w, top, 1);
	strbuf_release(&w.path);
	return rc;
}

/* ---- accounts -------------------------------------------------------------------------------- */

int unixperm_user_lookup(const char *name, struct unixperm_user *u, struct err *e)
{
	memset(u, 0, sizeof(*u));
	errno = 0;
	struct passwd *pw = getpwnam(name);
	if (!pw) {
		if (errno == 0 || errno == ENOENT || errno == ESRCH || errno == EBADF ||
		    errno == EPERM)
			return 0;
		return err_errno(e, errno, "look up user %s", name);
	}
	u->name = xstrdup(pw->pw_name);
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	u->home = xstrdup(pw->pw_dir ? pw->pw_dir : "");
	u->shell = xstrdup(pw->pw_shell ? pw->pw_shell : "");
	return 1;
}

void unixperm_user_release(struct unixperm_user *u)
{
	free(u->name);
	free(u->home);
	free(u->shell);
	memset(u, 0, sizeof(*u));
}

int unixperm_group_lookup(const char *name, gid_t *gid)
{
	struct group *gr = getgrnam(name);
	if (!gr)
		return 0;
	if (gid)
		*gid = gr->gr_gid;
	return 1;
}

int unixperm_group_members(const char *name, struct strvec *members)
{
	struct group *gr = getgrnam(name);
	if (!gr)
		return 0;
	for (char **m = gr->gr_mem; m && *m; m++)
		strvec_push(members, *m);
	return 1;
}

bool unixperm_user_in_group(const struct unixperm_user *u, const char *group)
{
	struct group *gr = getgrnam(group);
	if (!gr)
		return false;
	if (gr->gr_gid == u->gid)
		return true;
	for (char **m = gr->gr_mem; m && *m; m++)
		if (!strcmp(*m, u->name))
			return true;
	return false;
}

int unixperm_require_agor_user(const char *name, struct unixperm_user *u, struct err *e)
{
	if (unixperm_check_user_name("unix-user", name, e) < 0)
		return -1;
	int found = unixperm_user_lookup(name, u, e);
	if (found < 0)
		return -1;
	if (!found)
		return err_set(e, E_NOT_FOUND,
			       "no Unix user %s (fix: sudo agor admin setup-unix-user %s)", name,
			       name);
	if (u->uid == 0) {
		unixperm_user_release(u);
		return err_set(e, E_PERMISSION_DENIED, "refusing %s: uid 0 is never an agor user",
			       name);
	}
	if (!unixperm_user_in_group(u, UNIXPERM_USERS_GROUP)) {
		unixperm_user_release(u);
		return err_set(
			e, E_PERMISSION_DENIED,
			"refusing %s: not a member of %s (agor only manages users it set up: "
			"sudo agor admin setup-unix-user NAME)",
			name, UNIXPERM_USERS_GROUP);
	}
	return 0;
}

uid_t unixperm_uid_min(void)
{
	uid_t min = 1000;
	FILE *f = fopen("/etc/login.defs", "re");
	if (!f)
		return min;
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		unsigned long v;
		char key[16];
		if (sscanf(line, " %15s %lu", key, &v) == 2 && !strcmp(key, "UID_MIN") && v > 0 &&
		    v < 1000000)
			min = (uid_t)v;
	}
	fclose(f);
	return min;
}

static int run_tool(const char *const *argv, struct strbuf *out, int out_fd, struct err *e)
{
	if (!argv[0] || argv[0][0] != '/')
		return err_set(e, E_INTERNAL, "tool path must be absolute");
	struct child c;
	child_init(&c);
	strvec_pushv(&c.args, argv);
	strvec_push(&c.env, TOOL_ENV_PATH);
	strvec_push(&c.env, "LC_ALL=C");
	c.inherit_env = 0;
	c.cwd = "/";
	c.stdin_io = CHILD_IO_NULL;
	c.new_process_group = 1;
	c.timeout_ms = TOOL_TIMEOUT_MS;
	if (out_fd >= 0) {
		c.stdout_io = CHILD_IO_FD;
		c.stdout_fd = out_fd;
	}
	struct strbuf so = STRBUF_INIT, se = STRBUF_INIT;
	int rc = child_run(&c, NULL, 0, out_fd >= 0 ? NULL : &so, &se, 1 << 16, e);
	if (rc == 0 && !child_exited_ok(&c)) {
		strbuf_trim_trailing_newline(&se);
		const char *base = strrchr(argv[0], '/') + 1;
		rc = err_set(e, E_SYSTEM, "%s failed (%s %d)%s%s", base,
			     c.timed_out ? "timed out, status" : "exit", child_exit_code(&c),
			     se.len ? ": " : "", se.buf);
	}
	if (rc == 0 && out)
		strbuf_add(out, so.buf, so.len);
	strbuf_release(&so);
	strbuf_release(&se);
	child_release(&c);
	return rc;
}

int unixperm_run_tool(const char *const *argv, struct strbuf *out, struct err *e)
{
	return run_tool(argv, out, -1, e);
}

int unixperm_run_tool_fd(const char *const *argv, int out_fd, struct err *e)
{
	return run_tool(argv, NULL, out_fd, e);
}

static int check_group_and_user(const char *group, const char *user, struct err *e)
{
	if (unixperm_check_managed_group(group, e) < 0)
		return -1;
	return user ? unixperm_check_user_name("unix-user", user, e) : 0;
}

int unixperm_groupadd(const char *group, bool system, struct err *e)
{
	if (strcmp(group, UNIXPERM_USERS_GROUP) && unixperm_check_managed_group(group, e) < 0)
		return -1;
	const char *argv_system[] = {"/usr/sbin/groupadd", "--system", "--", group, NULL};
	const char *argv_normal[] = {"/usr/sbin/groupadd", "--", group, NULL};
	return unixperm_run_tool(system ? argv_system : argv_normal, NULL, e);
}

int unixperm_groupdel(const char *group, struct err *e)
{
	if (unixperm_check_managed_group(group, e) < 0)
		return -1;
	const char *argv[] = {"/usr/sbin/groupdel", "--", group, NULL};
	return unixperm_run_tool(argv, NULL, e);
}

int unixperm_group_add_member(const char *group, const char *user, struct err *e)
{
	if (strcmp(group, UNIXPERM_USERS_GROUP) && unixperm_check_managed_group(group, e) < 0)
		return -1;
	if (unixperm_check_user_name("unix-user", user, e) < 0)
		return -1;
	const char *argv[] = {"/usr/bin/gpasswd", "-a", user, group, NULL};
	return unixperm_run_tool(argv, NULL, e);
}

int unixperm_group_remove_member(const char *group, const char *user, struct err *e)
{
	if (check_group_and_user(group, user, e) < 0)
		return -1;
	const char *argv[] = {"/usr/bin/gpasswd", "-d", user, group, NULL};
	return unixperm_run_tool(argv, NULL, e);
}

int unixperm_group_set_members(const char *group, const struct strvec *users, struct err *e)
{
	if (unixperm_check_managed_group(group, e) < 0)
		return -1;
	struct strbuf list = STRBUF_INIT;
	for (size_t i = 0; i < users->nr; i++) {
		if (unixperm_check_user_name("unix-user", users->v[i], e) < 0) {
			strbuf_release(&list);
			return -1;
		}
		if (i)
			strbuf_addch(&list, ',');
		strbuf_addstr(&list, users->v[i]);
	}
	const char *argv[] = {"/usr/bin/gpasswd", "-M", list.buf, group, NULL};
	int rc = unixperm_run_tool(argv, NULL, e);
	strbuf_release(&list);
	return rc;
}

int unixperm_useradd_login(const char *user, struct err *e)
{
	if (unixperm_check_user_name("unix-user", user, e) < 0)
		return -1;
	const char *argv[] = {
		"/usr/sbin/useradd", "--create-home",	   "--user-group", "--shell", "/bin/bash",
		"--groups",	     UNIXPERM_USERS_GROUP, "--",	   user,      NULL};
	return unixperm_run_tool(argv, NULL, e);
}

int unixperm_useradd_system(const char *user, const char *home, struct err *e)
{
	if (unixperm_check_user_name("unix-user", user, e) < 0 ||
	    unixperm_check_clean_path("home", home, e) < 0)
		return -1;
	const char *argv[] = {"/usr/sbin/useradd",
			      "--system",
			      "--create-home",
			      "--home-dir",
			      home,
			      "--shell",
			      "/usr/sbin/nologin",
			      "--user-group",
			      "--",
			      user,
			      NULL};
	return unixperm_run_tool(argv, NULL, e);
}

int unixperm_userdel(const char *user, bool remove_home, struct err *e)
{
	if (unixperm_check_user_name("unix-user", user, e) < 0)
		return -1;
	const char *argv_remove[] = {"/usr/sbin/userdel", "--remove", "--", user, NULL};
	const char *argv_keep[] = {"/usr/sbin/userdel", "--", user, NULL};
	return unixperm_run_tool(remove_home ? argv_remove : argv_keep, NULL, e);
}

/* ---- work done as another user -----------------------------------------------------------------
 */

/* Reply over the pipe: 'O' + output bytes, or 'E' + code + NUL + message. */
static void send_reply(int fd, int rc, const struct strbuf *out, const struct err *e)
{
	struct strbuf msg = STRBUF_INIT;
	if (rc == 0) {
		strbuf_addch(&msg, 'O');
		strbuf_add(&msg, out->buf, out->len);
	} else {
		strbuf_addch(&msg, 'E');
		strbuf_addstr(&msg, e->code ? e->code : E_INTERNAL);
		strbuf_addch(&msg, '\0');
		strbuf_addstr(&msg, e->message ? e->message : "failed");
	}
	(void)fs_write_all(fd, msg.buf, msg.len);
	strbuf_release(&msg);
}

static const char *known_code(const char *s)
{
	static const char *const codes[] = {E_INVALID_PAYLOAD,
					    E_NOT_FOUND,
					    E_PERMISSION_DENIED,
					    E_PATH_OUTSIDE_DATA_HOME,
					    E_ALREADY_EXISTS,
					    E_CONFIG,
					    E_SYSTEM,
					    E_INTERNAL};
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (!strcmp(s, codes[i]))
			return codes[i];
	return E_SYSTEM;
}

static int drop_to_user(const struct unixperm_user *u)
{
	if (initgroups(u->name, u->gid) < 0 || setresgid(u->gid, u->gid, u->gid) < 0 ||
	    setresuid(u->uid, u->uid, u->uid) < 0)
		return -1;
	if (u->uid != 0 && (setuid(0) == 0 || geteuid() == 0)) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

static NORETURN void run_child_as_user(int fd, const struct unixperm_user *u,
				       int (*fn)(void *, struct strbuf *, struct err *), void *arg)
{
	struct err ce = ERR_INIT;
	struct strbuf co = STRBUF_INIT;
	int rc;
	if (drop_to_user(u) < 0)
		rc = err_errno(&ce, errno, "cannot become user %s", u->name);
	else if (chdir("/") < 0)
		rc = err_errno(&ce, errno, "chdir /");
	else
		rc = fn(arg, &co, &ce);
	send_reply(fd, rc, &co, &ce);
	_exit(rc < 0 ? 1 : 0);
}

static int parse_reply(const struct strbuf *reply, int status, struct strbuf *out, struct err *e)
{
	if (reply->len && reply->buf[0] == 'O') {
		if (out)
			strbuf_add(out, reply->buf + 1, reply->len - 1);
		return WIFEXITED(status) && WEXITSTATUS(status) == 0
			       ? 0
			       : err_set(e, E_INTERNAL, "helper exited badly");
	}
	if (reply->len && reply->buf[0] == 'E') {
		const char *code = reply->buf + 1;
		size_t clen = strlen(code);
		const char *message = clen + 2 <= reply->len ? code + clen + 1 : "failed";
		return err_set(e, known_code(code), "%s", message);
	}
	return err_set(e, E_INTERNAL, "helper process died (status %d)", status);
}

int unixperm_run_as_user(const struct unixperm_user *u,
			 int (*fn)(void *arg, struct strbuf *out, struct err *e), void *arg,
			 struct strbuf *out, struct err *e)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_errno(e, errno, "pipe");
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		int saved = errno;
		close(p[0]);
		close(p[1]);
		return err_errno(e, saved, "fork");
	}
	if (pid == 0) {
		close(p[0]);
		run_child_as_user(p[1], u, fn, arg);
	}
	close(p[1]);
	struct strbuf reply = STRBUF_INIT;
	ssize_t n = strbuf_read_fd(&reply, p[0], 1 << 20);
	close(p[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int rc = n < 0 ? err_errno(e, errno, "read helper reply")
		       : parse_reply(&reply, status, out, e);
	strbuf_release(&reply);
	return rc;
}

/* ---- owner links (these functions run in the child, as the user) -------------------------------
 */

struct link_job {
	const char *home;
	const char *name;	    /* link_add */
	const char *target;	    /* link_add */
	bool dry_run;		    /* link_add: only tell whether it would change */
	const char *suffix;	    /* links_find */
	gid_t gid;		    /* links_find */
	const struct strvec *names; /* links_remove */
};

/* Opens <home>/agor/worktrees (creating it when create); *fd = -1 when absent and !create. */
static int open_links_dir(const char *home, bool create, int *fd, struct err *e)
{
	*fd = -1;
	int h = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (h < 0)
		return errno == ENOENT && !create
			       ? 0
			       : err_errno(e, errno, "open home directory %s", home);
	static const char *const parts[] = {"agor", "worktrees"};
	int cur = h;
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		if (create && mkdirat(cur, parts[i], 0755) < 0 && errno != EEXIST) {
			int saved = errno;
			close(cur);
			return err_errno(e, saved, "mkdir %s/…/%s", home, parts[i]);
		}
		int flags =
			i + 1 < ARRAY_SIZE(parts) ? O_PATH | O_DIRECTORY : O_RDONLY | O_DIRECTORY;
		int next = openat(cur, parts[i], flags | O_CLOEXEC);
		int saved = errno;
		close(cur);
		if (next < 0)
			return saved == ENOENT && !create
				       ? 0
				       : err_errno(e, saved, "open %s/…/%s", home, parts[i]);
		cur = next;
	}
	*fd = cur;
	return 0;
}

static int link_add_as_user(void *arg, struct strbuf *out, struct err *e)
{
	const struct link_job *job = arg;
	int fd;
	if (open_links_dir(job->home, !job->dry_run, &fd, e) < 0)
		return -1;
	if (fd < 0) { /* dry run: the directory does not exist yet */
		strbuf_addstr(out, "changed");
		return 0;
	}
	char buf[PATH_MAX];
	ssize_t n = readlinkat(fd, job->name, buf, sizeof(buf) - 1);
	if (n >= 0 && (size_t)n == strlen(job->target) && !memcmp(buf, job->target, (size_t)n)) {
		close(fd);
		strbuf_addstr(out, "unchanged");
		return 0;
	}
	if (job->dry_run) {
		close(fd);
		strbuf_addstr(out, "changed");
		return 0;
	}
	char *tmp = xasprintf(".%s.agor-tmp", job->name);
	int rc = 0;
	(void)unlinkat(fd, tmp, 0);
	if (symlinkat(job->target, fd, tmp) < 0)
		rc = err_errno(e, errno, "symlink %s", job->name);
	else if (renameat(fd, tmp, fd, job->name) < 0) {
		rc = err_errno(e, errno,
			       "replace %s/agor/worktrees/%s (it exists and is not a symlink?)",
			       job->home, job->name);
		(void)unlinkat(fd, tmp, 0);
	} else
		strbuf_addstr(out, "changed");
	free(tmp);
	close(fd);
	return rc;
}

static bool ends_with_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	return n > s + 1 && name[n - s - 1] == '-' && !strcmp(name + n - s, suffix);
}

static bool link_points_at_group(int fd, const char *name, gid_t gid)
{
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
		return false;
	if (fstatat(fd, name, &st, 0) < 0)
		return errno == ENOENT; /* dangling: the worktree is gone */
	return S_ISDIR(st.st_mode) && st.st_gid == gid;
}

static int links_find_as_user(void *arg, struct strbuf *out, struct err *e)
{
	const struct link_job *job = arg;
	int fd;
	if (open_links_dir(job->home, false, &fd, e) < 0)
		return -1;
	if (fd < 0)
		return 0;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_errno(e, errno, "read %s/agor/worktrees", job->home);
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (ends_with_suffix(de->d_name, job->suffix) &&
		    link_points_at_group(dirfd(d), de->d_name, job->gid)) {
			strbuf_addstr(out, de->d_name);
			strbuf_addch(out, '\0');
		}
	closedir(d);
	return 0;
}

static int links_remove_as_user(void *arg, struct strbuf *out, struct err *e)
{
	const struct link_job *job = arg;
	(void)out;
	int fd;
	if (open_links_dir(job->home, false, &fd, e) < 0)
		return -1;
	if (fd < 0)
		return 0;
	int rc = 0;
	for (size_t i = 0; i < job->names->nr && rc == 0; i++) {
		struct stat st;
		const char *name = job->names->v[i];
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
			continue;
		if (unlinkat(fd, name, 0) < 0 && errno != ENOENT)
			rc = err_errno(e, errno, "remove %s/agor/worktrees/%s", job->home, name);
	}
	close(fd);
	return rc;
}

int unixperm_link_add(const struct unixperm_user *u, const char *link_name, const char *target,
		      bool dry_run, struct err *e)
{
	if (unixperm_check_link_name("link name", link_name, e) < 0 ||
	    unixperm_check_clean_path("link target", target, e) < 0)
		return -1;
	struct link_job job = {
		.home = u->home, .name = link_name, .target = target, .dry_run = dry_run};
	struct strbuf out = STRBUF_INIT;
	int rc = unixperm_run_as_user(u, link_add_as_user, &job, &out, e);
	if (rc == 0)
		rc = !strcmp(out.buf, "changed");
	strbuf_release(&out);
	return rc;
}

int unixperm_links_find(const struct unixperm_user *u, const char *suffix, gid_t gid,
			struct strvec *found, struct err *e)
{
	struct link_job job = {.home = u->home, .suffix = suffix, .gid = gid};
	struct strbuf out = STRBUF_INIT;
	int rc = unixperm_run_as_user(u, links_find_as_user, &job, &out, e);
	for (size_t off = 0; rc == 0 && off < out.len; off += strlen(out.buf + off) + 1)
		strvec_push(found, out.buf + off);
	strbuf_release(&out);
	return rc;
}

int unixperm_links_remove(const struct unixperm_user *u, const struct strvec *names, struct err *e)
{
	if (!names->nr)
		return 0;
	struct link_job job = {.home = u->home, .names = names};
	return unixperm_run_as_user(u, links_remove_as_user, &job, NULL, e);
}

char *unixperm_links_dir(const struct unixperm_user *u)
{
	return xasprintf("%s/agor/worktrees", u->home);
}
