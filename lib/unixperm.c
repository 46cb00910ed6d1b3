/* unixperm.c — names, access levels and confined opens (unixperm.h).
 * Never trusts a name or a path: each is checked before use, a root is opened without following symlinks. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/sha256.h>

#include "openat2.h"
#include "strbuf.h"
#include "unixperm.h"
#include "banned.h"

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
	if (strncmp(name, UNIXPERM_WORKTREE_PREFIX, plen) && strncmp(name, UNIXPERM_REPO_PREFIX, plen))
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
		if (len == 0 || (len == 1 && comp[0] == '.') || (len == 2 && comp[0] == '.' && comp[1] == '.'))
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

static int refuse_name(struct err *e, const char *code, const char *what, const char *value, const char *rule)
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
	return refuse_name(e, E_INVALID_PAYLOAD, what, id, "must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$");
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
	return refuse_name(e, E_INVALID_PAYLOAD, what, name, "must match ^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$");
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

static const char *const access_names[] = { "none", "read", "write" };

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
	static const mode_t other_bits[] = { 0, 05, 07 };
	return S_ISGID | 0770 | other_bits[others];
}

mode_t unixperm_file_mode(mode_t current, enum unixperm_access others)
{
	mode_t x = (current & 0111) ? 1 : 0;
	mode_t other = others == UNIXPERM_NONE ? 0 : others == UNIXPERM_READ ? (4 | x) : (6 | x);
	return (current & 0700) | ((6 | x) << 3) | other;
}

/* ---- confined paths ------------------------------------------------------------------------ */

int unixperm_open_root(const char *root, struct err *e)
{
	if (!unixperm_path_is_clean(root))
		return err_set(e, E_CONFIG, "root %s must be a clean absolute path other than /", root);
	int fd = openat2_call(AT_FDCWD, root, O_PATH | O_DIRECTORY,
			      OPENAT2_RESOLVE_NO_SYMLINKS | OPENAT2_RESOLVE_NO_MAGICLINKS);
	if (fd < 0 && openat2_unavailable(errno)) {
		int top = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (top < 0)
			return err_errno(e, errno, "open /");
		fd = openat2_walk_nofollow(top, root + 1, O_PATH | O_DIRECTORY);
		int saved = errno;
		close(top);
		errno = saved;
	}
	if (fd >= 0)
		return fd;
	if (errno == ENOENT)
		return err_set(e, E_NOT_FOUND, "root %s does not exist", root);
	if (errno == ELOOP || errno == EXDEV)
		return err_set(e, E_CONFIG, "root %s contains a symlink: configure its canonical path", root);
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
	err_setd(e, E_PATH_OUTSIDE_DATA_HOME, details, "path %s is refused: %s (allowed: below %s)", sb.buf, why, root);
	strbuf_release(&sb);
	return -1;
}

static int same_inode(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int unixperm_open_beneath(int rootfd, const char *root, const char *path, struct err *e)
{
	if (!unixperm_path_is_clean(path))
		return refuse_outside(e, path, root, "not a clean absolute path ('.', '..', '//' are refused)");
	const char *rel = unixperm_path_below(root, path);
	if (!rel)
		return refuse_outside(e, path, root, "not inside the configured root");
	int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat2_call(rootfd, rel, (uint64_t)flags, OPENAT2_RESOLVE_BENEATH | OPENAT2_RESOLVE_NO_MAGICLINKS);
	if (fd < 0 && openat2_unavailable(errno))
		fd = openat2_walk_nofollow(rootfd, rel, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		if (errno == EXDEV || errno == ELOOP)
			return refuse_outside(e, path, root, "a symlink on the way leaves the root or is the target");
		if (errno == ENOENT)
			return err_set(e, E_NOT_FOUND, "%s does not exist", path);
		struct stat st;
		if (errno == ENOTDIR && fstatat(rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
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
