/* openat2.c — the one openat2(2) call and its stand-in walk (openat2.h). Never follows a symlink in the walk:
 * each component is opened O_NOFOLLOW and checked. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "openat2.h"
#include "banned.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

struct open_how_abi {
	uint64_t flags, mode, resolve;
};

static bool disabled_for_tests;

void openat2_disable_for_tests(bool disabled)
{
	disabled_for_tests = disabled;
}

bool openat2_unavailable(int err)
{
	return disabled_for_tests || err == ENOSYS || err == EPERM;
}

int openat2_call(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	if (disabled_for_tests)
		return errno = ENOSYS, -1;
	struct open_how_abi how = { flags | O_CLOEXEC, 0, resolve };
	for (int attempt = 0; attempt < 16; attempt++) {
		long r = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (r >= 0)
			return (int)r;
		if (errno != EAGAIN && errno != EINTR)
			return -1;
	}
	return -1;
}

static bool is_symlink_at(int fd, const char *name)
{
	struct stat st;
	return fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

/* One component below fd (then closed), O_NOFOLLOW: the next descriptor, or -1 with errno — ELOOP for a symlink,
 * whichever way open reports it (ELOOP; O_PATH opening the link itself; ENOTDIR under O_DIRECTORY). */
static int step(int fd, const char *name, int flags)
{
	int next = openat(fd, name, flags | O_NOFOLLOW | O_CLOEXEC);
	int saved = errno;
	struct stat st;
	if (next >= 0 && fstat(next, &st) == 0 && S_ISLNK(st.st_mode)) {
		close(next);
		next = -1;
		saved = ELOOP;
	} else if (next < 0 && saved == ENOTDIR && is_symlink_at(fd, name)) {
		saved = ELOOP;
	}
	close(fd);
	errno = saved;
	return next;
}

int openat2_walk_nofollow(int dirfd, const char *rel, int last_flags)
{
	if (rel[0] == '/')
		return errno = EXDEV, -1;
	_cleanup_free_ char *copy = xstrdup(rel);
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	char *save = NULL;
	for (char *c = strtok_r(copy, "/", &save); c && fd >= 0;) {
		char *next_name = strtok_r(NULL, "/", &save);
		while (next_name && !strcmp(next_name, "."))
			next_name = strtok_r(NULL, "/", &save);
		if (!strcmp(c, "..")) {
			close(fd);
			return errno = EXDEV, -1;
		}
		if (strcmp(c, "."))
			fd = step(fd, c, next_name ? O_PATH : last_flags);
		c = next_name;
	}
	return fd;
}
