/* confine.c — resolves paths beneath a root with openat2(RESOLVE_BENEATH) (confine.h).
 * Never trusts a path string: the canonical result is what the kernel resolved — the lexical path when it resolved
 * without any symlink (RESOLVE_NO_SYMLINKS succeeded), else read back from the opened descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "confine.h"
#include "fsutil.h"
#include "openat2.h"
#include "strbuf.h"
#include "strvec.h"
#include "banned.h"

static int outside(struct err *e, const char *path, const char *root, const char *why)
{
	return err_setd(e, E_PATH_OUTSIDE_DATA_HOME,
			json_pack("{s:s,s:s,s:s}", "path", path, "root", root, "reason", why), "%s is outside %s (%s)",
			path, root, why);
}

/* rel beneath rootfd: symlinks that stay beneath are followed (openat2), or none at all (the walk without it). */
static int open_beneath(int rootfd, const char *rel)
{
	int fd = openat2_call(rootfd, rel, O_PATH, OPENAT2_RESOLVE_BENEATH | OPENAT2_RESOLVE_NO_MAGICLINKS);
	if (fd >= 0 || !openat2_unavailable(errno))
		return fd;
	return openat2_walk_nofollow(rootfd, rel, O_PATH);
}

int confine_openat(int rootfd, const char *rel, int flags)
{
	rel = *rel ? rel : ".";
	int fd = openat2_call(rootfd, rel, (uint64_t)(flags & ~O_NOFOLLOW), /* a final link is refused, not opened */
			      OPENAT2_RESOLVE_BENEATH | OPENAT2_RESOLVE_NO_SYMLINKS | OPENAT2_RESOLVE_NO_MAGICLINKS);
	if (fd >= 0 || !openat2_unavailable(errno))
		return fd;
	return openat2_walk_nofollow(rootfd, rel, flags);
}

int confine_open(const char *root, const char *rel, int flags)
{
	int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -1;
	int fd = confine_openat(rootfd, rel, flags);
	int saved = errno;
	close(rootfd);
	errno = saved;
	return fd;
}

static char *fd_path(int fd)
{
	char link[64], buf[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

/* The part of path below root; NULL when an absolute path is not lexically under root. */
static const char *relative_part(const char *path, const char *root, const char *canonical_root)
{
	if (path[0] != '/')
		return path;
	const char *const candidates[] = { root, canonical_root };
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++) {
		size_t n = strlen(candidates[i]);
		while (n > 1 && candidates[i][n - 1] == '/')
			n--;
		if (!strncmp(path, candidates[i], n) && (path[n] == '/' || path[n] == '\0'))
			return path[n] ? path + n + 1 : ".";
	}
	return NULL;
}

static int is_plain_name(const char *s, size_t n)
{
	return n > 0 && !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

/* Splits off the last component of rel (in place); returns it, or NULL when it is not a plain name. */
static char *pop_component(char *rel)
{
	size_t len = strlen(rel);
	while (len > 1 && rel[len - 1] == '/')
		rel[--len] = '\0';
	char *slash = strrchr(rel, '/');
	char *last = slash ? slash + 1 : rel;
	if (!is_plain_name(last, strlen(last)))
		return NULL;
	char *copy = xstrdup(last);
	if (slash)
		*slash = '\0';
	else
		rel[0] = '.', rel[1] = '\0';
	return copy;
}

/* Opens rel beneath rootfd and sets *resolved to its canonical path. Without a symlink on the way (the common case)
 * the kernel's own resolution is lexical, so the path follows from canonical_root; a symlink that stays beneath
 * (ELOOP here) is followed and the path read back from the descriptor. -1 with errno when it does not open. */
static int resolve_beneath(int rootfd, const char *canonical_root, const char *rel, char **resolved)
{
	int fd = openat2_call(rootfd, rel, O_PATH,
			      OPENAT2_RESOLVE_BENEATH | OPENAT2_RESOLVE_NO_SYMLINKS | OPENAT2_RESOLVE_NO_MAGICLINKS);
	if (fd >= 0) {
		close(fd);
		*resolved = fs_lexical_join(canonical_root, rel);
		return 0;
	}
	if (errno != ELOOP && !openat2_unavailable(errno))
		return -1;
	if ((fd = open_beneath(rootfd, rel)) < 0)
		return -1;
	*resolved = fd_path(fd);
	close(fd);
	return 0;
}

static int open_root(const char *root, char **canonical, struct err *e)
{
	int fd = fs_open_linkless(root, O_DIRECTORY, canonical); /* nothing to read back from /proc */
	if (fd >= 0)
		return fd;
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, errno, "opening %s", root), -1;
	*canonical = fd_path(fd);
	if (!*canonical) {
		char buf[PATH_MAX];
		*canonical = realpath(root, buf) ? xstrdup(buf) : xstrdup(root);
	}
	return fd;
}

int confine_path(const char *root, const char *path, int must_exist, char **out, struct err *e)
{
	_cleanup_free_ char *canonical_root = NULL;
	_cleanup_close_ int rootfd = open_root(root, &canonical_root, e);
	if (rootfd < 0)
		return -1;
	const char *rel0 = relative_part(path, root, canonical_root);
	if (!rel0)
		return outside(e, path, root, "not under the root");
	_cleanup_free_ char *rel = xstrdup(*rel0 ? rel0 : ".");
	struct strbuf missing = STRBUF_INIT;
	struct strvec tail = STRVEC_INIT; /* components that do not exist yet, last first */
	char *resolved = NULL;
	int opened, rc = -1;
	while ((opened = resolve_beneath(rootfd, canonical_root, rel, &resolved)) < 0 && errno == ENOENT &&
	       !must_exist && tail.nr < 256) {
		char *last = pop_component(rel);
		if (!last) {
			outside(e, path, root, "a missing component is not a plain name");
			goto out;
		}
		strvec_push_nodup(&tail, last);
	}
	if (opened < 0) {
		if (errno == ENOENT)
			err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "path", path), "%s does not exist", path);
		else if (errno == EXDEV || errno == ELOOP)
			outside(e, path, root, errno == EXDEV ? "resolves outside the root" : "symlink not allowed");
		else
			err_errno(e, errno, "resolving %s", path);
		goto out;
	}
	if (!resolved) {
		err_set(e, E_INTERNAL, "cannot read back the resolved path of %s (is /proc mounted?)", path);
		goto out;
	}
	strbuf_addstr(&missing, resolved);
	free(resolved);
	for (size_t i = tail.nr; i-- > 0;)
		strbuf_addf(&missing, "/%s", tail.v[i]);
	size_t n = strlen(canonical_root);
	if (strncmp(missing.buf, canonical_root, n) || (missing.buf[n] != '/' && missing.buf[n] != '\0')) {
		outside(e, path, root, "resolves outside the root");
		goto out;
	}
	*out = strbuf_detach(&missing, NULL);
	rc = 0;
out:
	strvec_clear(&tail);
	strbuf_release(&missing);
	return rc;
}

/* --- a path held by descriptor ---------------------------------------------------------------- */

void confined_path_release(struct confined_path *held)
{
	if (held->root_fd >= 0)
		close(held->root_fd);
	if (held->parent_fd >= 0)
		close(held->parent_fd);
	free(held->name);
	free(held->path);
	*held = (struct confined_path)CONFINED_PATH_INIT;
}

static int walk_failed(struct err *e, const char *path, const char *root, const char *component, int errnum)
{
	if (errnum == ELOOP || errnum == EXDEV)
		return outside(e, path, root, "a symlink appeared on the way (a parent was swapped while resolving)");
	if (errnum == ENOENT)
		return err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "path", path), "%s does not exist (at %s)", path,
				component);
	if (errnum == ENOTDIR)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s,s:s}", "path", path, "reason", "not a directory"),
				"%s: %s is not a directory", path, component);
	return err_errno(e, errnum, "opening %s of %s", component, path);
}

/* Opens the directory name in fd (making it first with make), never through a symlink; -1 with errno. */
static int open_step(int fd, const char *name, int make)
{
	int next = confine_openat(fd, name, O_PATH | O_DIRECTORY);
	if (next >= 0 || errno != ENOENT || !make)
		return next;
	if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST)
		return -1;
	return confine_openat(fd, name, O_PATH | O_DIRECTORY);
}

int confine_open_dirs(int rootfd, const char *rel, int make)
{
	_cleanup_free_ char *copy = xstrdup(rel);
	int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	char *save = NULL;
	for (char *c = strtok_r(copy, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
		int next = open_step(fd, c, make);
		int saved = errno;
		close(fd);
		fd = next;
		errno = saved;
	}
	return fd;
}

/* Opens the parent of rel (below rootfd) with confine_open_dirs; *last points at rel's last component. */
static int open_parent_of(int rootfd, char *rel, char **last, int make, const char *path, const char *root,
			  struct err *e)
{
	char *slash = strrchr(rel, '/');
	*last = slash ? slash + 1 : rel;
	if (slash)
		*slash = '\0';
	int fd = confine_open_dirs(rootfd, slash ? rel : ".", make);
	if (fd < 0)
		walk_failed(e, path, root, slash ? rel : ".", errno);
	return fd;
}

int confine_hold(const char *root, const char *path, int make_parents, struct confined_path *held, struct err *e)
{
	*held = (struct confined_path)CONFINED_PATH_INIT;
	_cleanup_free_ char *canonical = NULL, *canonical_root = NULL;
	if (confine_path(root, path, 0, &canonical, e) < 0)
		return -1;
	held->root_fd = open_root(root, &canonical_root, e);
	if (held->root_fd < 0)
		return -1;
	const char *rel0 = relative_part(canonical, root, canonical_root);
	if (!rel0 || !strcmp(rel0, ".") || !*rel0) {
		confined_path_release(held);
		return err_setd(e, E_INVALID_PAYLOAD,
				json_pack("{s:s,s:s}", "path", path, "reason", "names the root itself"),
				"%s names %s itself: give a path below it", path, root);
	}
	_cleanup_free_ char *rel = xstrdup(rel0);
	char *last;
	held->parent_fd = open_parent_of(held->root_fd, rel, &last, make_parents, path, root, e);
	if (held->parent_fd < 0) {
		confined_path_release(held);
		return -1;
	}
	held->name = xstrdup(last);
	held->path = xstrdup(canonical);
	return 0;
}

int confine_open_path(const char *root, const char *path, int flags, struct err *e)
{
	_cleanup_free_ char *canonical_root = NULL;
	_cleanup_close_ int rootfd = open_root(root, &canonical_root, e);
	if (rootfd < 0)
		return -1;
	const char *rel = relative_part(path, root, canonical_root);
	if (!rel)
		return outside(e, path, root, "not under the root"), -1;
	int fd = confine_openat(rootfd, rel, flags);
	if (fd < 0)
		walk_failed(e, path, root, rel, errno);
	return fd;
}
