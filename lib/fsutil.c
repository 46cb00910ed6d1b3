/* fsutil.c — the helpers of fsutil.h, built on descriptor-relative calls.
 * Never follows symlinks during removal and never recurses through a mount-point swap. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "banned.h"

int fs_mkdir_p(const char *path, mode_t mode, struct err *e)
{
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

static int remove_entries(int dirfd, const char *where, struct err *e);

static int remove_entry(int dirfd, const char *name, const char *where, struct err *e)
{
	return fs_remove_at(dirfd, name, where, e);
}

int fs_remove_at(int dirfd, const char *name, const char *where, struct err *e)
{
	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return err_errno(e, errno, "unlink %s/%s", where, name);
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, errno, "open %s/%s", where, name);
	_cleanup_free_ char *sub = xasprintf("%s/%s", where, name);
	int rc = remove_entries(fd, sub, e);
	close(fd);
	if (rc < 0)
		return -1;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return err_errno(e, errno, "rmdir %s", sub);
	return 0;
}

/* Removes everything inside the directory open at dirfd (which it consumes a dup of). */
static int remove_entries(int dirfd, const char *where, struct err *e)
{
	int fd = dup(dirfd);
	if (fd < 0)
		return err_errno(e, errno, "dup");
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_errno(e, errno, "opendir %s", where);
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		rc = remove_entry(dirfd, de->d_name, where, e);
	}
	closedir(d);
	return rc;
}

int fs_remove_tree(const char *path, struct err *e)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : err_errno(e, errno, "stat %s", path);
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) < 0 && errno != ENOENT)
			return err_errno(e, errno, "unlink %s", path);
		return 0;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, errno, "open %s", path);
	int rc = remove_entries(fd, path, e);
	close(fd);
	if (rc == 0 && rmdir(path) < 0 && errno != ENOENT)
		return err_errno(e, errno, "rmdir %s", path);
	return rc;
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

char *fs_canonical(const char *path)
{
	_cleanup_free_ char *real = realpath(path, NULL);
	return fs_tidy_path(real ? real : path);
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
	int rc = fchmod(fd, mode) == 0 && fs_write_all(fd, data, len) == 0 && fsync(fd) == 0 ? 0 : -1;
	int saved = errno;
	close(fd);
	if (rc == 0 && rename(tmp, path) == 0)
		return 0;
	saved = rc == 0 ? errno : saved;
	unlink(tmp);
	return err_errno(e, saved, "writing %s", path);
}
