/* fsutil.c — the helpers of fsutil.h, built on descriptor-relative calls.
 * Never follows symlinks during removal, never enters a mount point, never resolves a path string twice. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fault.h"
#include "fsutil.h"
#include "log.h"
#include "openat2.h"
#include "strbuf.h"
#include "strvec.h"
#include "banned.h"

#define RENAME_NOREPLACE_ 1
#ifndef SYS_renameat2
#define SYS_renameat2 316
#endif

int fs_mkdir_p(const char *path, mode_t mode, struct err *e)
{
	/* the usual case in one call: it is there already, or only it was missing */
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	_cleanup_free_ char *copy = xstrdup(path);
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, mode) < 0 && errno != EEXIST)
			return err_errno(e, errno, "mkdir %s", copy);
		*p = '/';
	}
	if (mkdir(copy, mode) < 0 && errno != EEXIST)
		return err_errno(e, errno, "mkdir %s", copy);
	return 0;
}

#define SWAP_RETRIES  8 /* an entry that keeps changing between unlink and open gives up after this many tries */
#define REMOVE_PASSES 4 /* a directory others keep filling gives up after this many passes */

static int remove_entries(int fd, const char *where, struct err *e);

/* The names in the directory open at fd (a dup is read: fd keeps its place), read before anything is removed so
 * a level of the walk holds one descriptor. */
static int list_names(int fd, const char *where, struct strvec *names, struct err *e)
{
	int dup_fd = dup(fd);
	DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return err_errno(e, errno, "opendir %s", where);
	}
	rewinddir(d);
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			strvec_push(names, de->d_name);
	closedir(d);
	return 0;
}

static int remove_entries(int fd, const char *where, struct err *e)
{
	struct strvec names = STRVEC_INIT;
	int rc = list_names(fd, where, &names, e);
	for (size_t i = 0; rc == 0 && i < names.nr; i++)
		rc = fs_remove_at(fd, names.v[i], where, e);
	strvec_clear(&names);
	return rc;
}

/* Empties the directory open at fd (name in dirfd) and removes it; a mount point is not entered. */
static int remove_dir(int dirfd, const char *name, int fd, const char *where, struct err *e)
{
	_cleanup_free_ char *sub = xasprintf("%s/%s", where, name);
	struct stat above, st;
	if (fstat(dirfd, &above) < 0 || fstat(fd, &st) < 0)
		return err_errno(e, errno, "stat %s", sub);
	if (st.st_dev != above.st_dev)
		return err_setd(e, E_SYSTEM, json_pack("{s:s,s:i}", "path", sub, "errno", EXDEV),
				"%s is on another filesystem (a mount point): not removed; unmount it first", sub);
	for (int pass = 0; pass < REMOVE_PASSES; pass++) {
		if (remove_entries(fd, sub, e) < 0)
			return -1;
		if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			return 0;
		if (errno != ENOTEMPTY && errno != EEXIST)
			return err_errno(e, errno, "rmdir %s", sub);
	}
	return err_errno(e, ENOTEMPTY, "rmdir %s (entries kept appearing while it was emptied)", sub);
}

int fs_remove_at(int dirfd, const char *name, const char *where, struct err *e)
{
	for (int attempt = 0; attempt < SWAP_RETRIES; attempt++) {
		if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
			return 0;
		int unlink_errno = errno;
		if (unlink_errno != EISDIR && unlink_errno != EPERM)
			return err_errno(e, unlink_errno, "unlink %s/%s", where, name);
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOTDIR && unlink_errno == EPERM)
			return err_errno(e, EPERM, "unlink %s/%s", where, name);
		if (fd < 0 && (errno == ELOOP || errno == ENOTDIR || errno == ENOENT))
			continue; /* no longer a directory (swapped for a link or a file): unlink that */
		if (fd < 0)
			return err_errno(e, errno, "open %s/%s", where, name);
		int rc = remove_dir(dirfd, name, fd, where, e);
		close(fd);
		return rc;
	}
	return err_errno(e, EAGAIN, "removing %s/%s (it kept changing between a file and a directory)", where, name);
}

int fs_remove_tree(const char *path, struct err *e)
{
	_cleanup_free_ char *copy = fs_tidy_path(path);
	char *slash = strrchr(copy, '/');
	const char *parent = slash == copy ? "/" : slash ? copy : ".";
	const char *name = slash ? slash + 1 : copy;
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return err_set(e, E_INVALID_PAYLOAD, "refusing to remove %s: name a file or directory below a parent",
			       path);
	if (slash && slash != copy)
		*slash = '\0';
	_cleanup_close_ int pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return errno == ENOENT ? 0 : err_errno(e, errno, "open %s", parent);
	return fs_remove_at(pfd, name, parent, e);
}

int fs_dir_is_empty_at(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP || errno == ENOENT ? 0 : -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	struct dirent *de;
	int empty = 1;
	while (empty && (de = readdir(d)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(d);
	return empty;
}

/* A private directory of PREFIX in dirfd whose maker is gone (its flock is free: a process killed -9 while it
 * staged there) is removed, holding the lock. One still in use, or of another user (not openable), is left. */
static void sweep_stale_private_dirs(int dirfd, const char *dir, const char *prefix)
{
	_cleanup_strvec_ struct strvec names = STRVEC_INIT;
	struct err ignored = ERR_INIT;
	_cleanup_close_ int lfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int listed = lfd >= 0 && list_names(lfd, dir, &names, &ignored) == 0;
	err_clear(&ignored);
	if (!listed)
		return;
	for (size_t i = 0; i < names.nr; i++) {
		if (strncmp(names.v[i], prefix, strlen(prefix)))
			continue;
		_cleanup_close_ int fd = openat(dirfd, names.v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		if (fs_remove_at(dirfd, names.v[i], dir, &ignored) == 0)
			log_warn("removed %s/%s: staging left by an interrupted run", dir, names.v[i]);
		err_clear(&ignored);
	}
}

/* Locks the new directory for the life of fd; 0, or 1 when a sweep removed it before the lock was taken. */
static int lock_new_private_dir(int fd)
{
	struct stat st;
	if (flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0)
		return -1;
	return st.st_nlink == 0 ? 1 : 0;
}

int fs_private_dir_at(int dirfd, const char *dir, const char *prefix, char **name, char **path, struct err *e)
{
	sweep_stale_private_dirs(dirfd, dir, prefix);
	for (int attempt = 0; attempt < 16; attempt++) {
		unsigned char r[8];
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return err_errno(e, errno, "getrandom");
		_cleanup_free_ char *try = xasprintf("%s%02x%02x%02x%02x%02x%02x%02x%02x", prefix, r[0], r[1], r[2],
						     r[3], r[4], r[5], r[6], r[7]);
		if (mkdirat(dirfd, try, 0700) < 0) {
			if (errno == EEXIST)
				continue;
			return err_errno(e, errno, "mkdir %s/%s", dir, try);
		}
		int fd = openat(dirfd, try, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return err_errno(e, errno, "open %s/%s", dir, try);
		int locked = lock_new_private_dir(fd);
		if (locked != 0) {
			int saved = errno;
			close(fd);
			if (locked > 0)
				continue;
			return err_errno(e, saved, "locking %s/%s", dir, try);
		}
		*path = xasprintf("%s/%s", dir, try);
		*name = xstrdup(try);
		return fd;
	}
	return err_set(e, E_INTERNAL, "cannot make a private directory in %s (16 names taken)", dir), -1;
}

/* The test seam (fault.h) before a state-changing call: -1 with errno set when the point is armed to fail. */
static int checked(enum fault_kind k, const char *name)
{
	int err = fault_check(k, name);
	if (!err)
		return 0;
	errno = err;
	return -1;
}

static int checked_write(int fd, const void *data, size_t len)
{
	return checked(FAULT_WRITE, "fs.write") < 0 ? -1 : fs_write_all(fd, data, len);
}

static int checked_fsync(int fd)
{
	return checked(FAULT_FSYNC, "fs.fsync") < 0 ? -1 : fsync(fd);
}

int fs_write_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode, const char *where,
		struct err *e)
{
	_cleanup_free_ char *tmp = xasprintf(".%s.tmp.%d", name, (int)getpid());
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return err_errno(e, errno, "creating %s/%s", where, tmp);
	int rc = fchmod(fd, mode) == 0 && checked_write(fd, data, len) == 0 && checked_fsync(fd) == 0 ? 0 : -1;
	int saved = errno;
	close(fd);
	if (rc == 0 && checked(FAULT_RENAME, "fs.rename") == 0 && renameat(dirfd, tmp, dirfd, name) == 0)
		return 0;
	saved = rc == 0 ? errno : saved;
	unlinkat(dirfd, tmp, 0);
	return err_errno(e, saved, "writing %s/%s", where, name);
}

int fs_move_at(int from_fd, const char *from_name, int to_fd, const char *to_name, const char *shown, struct err *e)
{
	if (checked(FAULT_RENAME, "fs.move") < 0)
		return err_errno(e, errno, "moving into %s", shown);
	if (syscall(SYS_renameat2, from_fd, from_name, to_fd, to_name, RENAME_NOREPLACE_) == 0)
		return 0;
	int replace_empty = errno == EEXIST && fs_dir_is_empty_at(to_fd, to_name) == 1;
	if (replace_empty && renameat(from_fd, from_name, to_fd, to_name) == 0)
		return 0; /* over an empty directory: atomic; a link or a filled directory there fails */
	if (errno == EEXIST || errno == ENOTEMPTY || errno == ENOTDIR || errno == EISDIR)
		return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "path", shown),
				"%s already exists and is not an empty directory", shown);
	return err_errno(e, errno, "moving into %s", shown);
}

int fs_dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOTDIR ? 0 : -1;
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty;
}

int fs_relative_path_is_clean(const char *path)
{
	if (!*path || *path == '/')
		return 0;
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		if (!n || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
				return 0;
		p += n;
		if (*p == '/' && !*++p)
			return 0;
	}
	return 1;
}

int fs_path_is_or_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n] || (n == 1 && dir[0] == '/'));
}

char *fs_tidy_path(const char *path)
{
	char *t = xstrdup(path), *w = t;
	for (const char *p = path; *p; p++)
		if (*p != '/' || w == t || w[-1] != '/')
			*w++ = *p;
	if (w > t + 1 && w[-1] == '/')
		w--;
	*w = 0;
	return t;
}

char *fs_lexical_join(const char *base, const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, base);
	while (sb.len > 1 && sb.buf[sb.len - 1] == '/')
		strbuf_setlen(&sb, sb.len - 1);
	for (const char *c = path; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			char *slash = strrchr(sb.buf, '/');
			strbuf_setlen(&sb, slash && slash != sb.buf ? (size_t)(slash - sb.buf) : 1);
		} else if (n && !(n == 1 && c[0] == '.')) {
			if (sb.buf[sb.len - 1] != '/')
				strbuf_addch(&sb, '/');
			strbuf_add(&sb, c, n);
		}
		c += n + (c[n] == '/');
	}
	return strbuf_detach(&sb, NULL);
}

int fs_open_linkless(const char *path, int flags, char **canonical)
{
	if (path[0] != '/')
		return errno = EINVAL, -1;
	int fd = openat2_call(AT_FDCWD, path, (uint64_t)(O_PATH | flags),
			      OPENAT2_RESOLVE_NO_SYMLINKS | OPENAT2_RESOLVE_NO_MAGICLINKS);
	if (fd >= 0)
		*canonical = fs_lexical_join("/", path);
	return fd;
}

char *fs_canonical(const char *path)
{
	char *canonical; /* no readlink per component (musl's realpath) for the usual path without a symlink */
	int fd = fs_open_linkless(path, 0, &canonical);
	if (fd >= 0) {
		close(fd);
		return canonical;
	}
	_cleanup_free_ char *real = realpath(path, NULL);
	return fs_tidy_path(real ? real : path);
}

int fs_dir_start(struct fs_dir *d, int fd)
{
	d->fd = fd;
	d->pos = d->len = 0;
	return fd < 0 ? -1 : 0;
}

struct dirent *fs_dir_next(struct fs_dir *d)
{
	for (;;) {
		if (d->pos >= d->len) {
			long n = syscall(SYS_getdents64, d->fd, d->buf, sizeof(d->buf));
			if (n <= 0) {
				errno = n < 0 ? errno : 0;
				return NULL;
			}
			d->pos = 0;
			d->len = (size_t)n;
		}
		struct dirent *de = (struct dirent *)(void *)(d->buf + d->pos);
		d->pos += de->d_reclen;
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			return de;
	}
}

void fs_dir_end(struct fs_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

int fs_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

int fs_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, struct err *e)
{
	_cleanup_free_ char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return err_errno(e, errno, "creating %s", tmp);
	int rc = fchmod(fd, mode) == 0 && checked_write(fd, data, len) == 0 && checked_fsync(fd) == 0 ? 0 : -1;
	int saved = errno;
	close(fd);
	if (rc == 0 && checked(FAULT_RENAME, "fs.rename") == 0 && rename(tmp, path) == 0)
		return 0;
	saved = rc == 0 ? errno : saved;
	unlink(tmp);
	return err_errno(e, saved, "writing %s", path);
}
