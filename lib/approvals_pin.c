/* approvals_pin.c — pinning what approvals exec runs (approvals_pin.h): PATH entries, who can write a path, identity.
 * Never trusts a name: what is checked is the open file's content and the directories the caller cannot write. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approvals_pin.h"
#include "strbuf.h"
#include "strvec.h"
#include "banned.h"

/* ---- PATH ------------------------------------------------------------------------------------ */

int appr_path_entries_check(const char *path_env, struct err *e)
{
	const char *dir = path_env;
	for (int n = 1;; n++) {
		const char *end = strchrnul(dir, ':');
		if (end == dir || dir[0] != '/')
			return err_set(e, E_PERMISSION_DENIED,
				       "PATH entry %d (\"%.*s\") is %s: a shell searches the current directory "
				       "there; remove it from PATH (only absolute directories are accepted)",
				       n, (int)(end - dir > 200 ? 200 : end - dir), dir,
				       end == dir ? "empty" : "relative");
		if (!*end)
			return 0;
		dir = end + 1;
	}
}

/* ---- who can write a path --------------------------------------------------------------------------------- */

/* 0 when the caller cannot change the file or directory at path (see the contract). */
static int pinned_component(const char *path, struct err *e)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return err_errno(e, errno, "%s", path);
	if (S_ISLNK(st.st_mode))
		return err_set(e, E_PERMISSION_DENIED, "%s is a symlink", path);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return err_set(e, E_PERMISSION_DENIED, "%s is writable by its group or by others (mode %04o)", path,
			       (unsigned)(st.st_mode & 07777));
	if (st.st_uid != 0 && (st.st_uid == geteuid() || faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0))
		return err_set(e, E_PERMISSION_DENIED, "%s is writable by the caller (owner uid %u)", path,
			       (unsigned)st.st_uid);
	return 0;
}

int appr_path_pinned(const char *canonical, struct err *e)
{
	if (canonical[0] != '/')
		return err_set(e, E_PERMISSION_DENIED, "%s is not an absolute path", canonical);
	char buf[PATH_MAX];
	if ((size_t)snprintf(buf, sizeof(buf), "%s", canonical) >= sizeof(buf))
		return err_set(e, E_PERMISSION_DENIED, "path too long");
	for (;;) {
		if (pinned_component(buf[0] ? buf : "/", e) < 0)
			return -1;
		char *slash = strrchr(buf, '/');
		if (!slash || !buf[0] || !strcmp(buf, "/"))
			return 0;
		*slash = '\0';
	}
}

char *appr_pinned_path(const char *path_env, struct err *e)
{
	const char *dirs = path_env ? path_env : APPR_DEFAULT_PATH;
	if (appr_path_entries_check(dirs, e) < 0)
		return NULL;
	struct strbuf out = STRBUF_INIT;
	struct strvec seen = STRVEC_INIT;
	while (*dirs) {
		const char *end = strchrnul(dirs, ':');
		_cleanup_free_ char *dir = xstrndup(dirs, (size_t)(end - dirs));
		char real[PATH_MAX];
		struct stat st;
		_cleanup_err_ struct err ignored = ERR_INIT;
		if (realpath(dir, real) && stat(real, &st) == 0 && S_ISDIR(st.st_mode) &&
		    strvec_find(&seen, real) < 0 && appr_path_pinned(real, &ignored) == 0) {
			strbuf_addf(&out, "%s%s", out.len ? ":" : "", real);
			strvec_push(&seen, real);
		}
		dirs = *end ? end + 1 : end;
	}
	strvec_clear(&seen);
	if (!out.len) {
		strbuf_release(&out);
		err_set(e, E_PERMISSION_DENIED,
			"no PATH directory is one the caller cannot write: nothing could be found safely");
		return NULL;
	}
	return strbuf_detach(&out, NULL);
}

/* ---- identity -------------------------------------------------------------------------------- */

int appr_identity_of_fd(int fd, const char *name, struct appr_identity *id, struct err *e)
{
	struct stat st;
	memset(id, 0, sizeof(*id));
	if (fstat(fd, &st) < 0)
		return err_errno(e, errno, "stat %s", name);
	if (!S_ISREG(st.st_mode))
		return err_set(e, E_NOT_FOUND, "%s is not a regular file", name);
	if (st.st_size > APPR_EXECUTABLE_MAX)
		return err_set(e, E_PAYLOAD_TOO_LARGE, "%s is larger than %d MiB: too large to hash and pin", name,
			       APPR_EXECUTABLE_MAX >> 20);
	struct crypto_sha256 h;
	crypto_sha256_init(&h);
	char buf[65536];
	for (off_t off = 0;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_errno(e, errno, "read %s", name);
		if (n == 0)
			break;
		crypto_sha256_update(&h, buf, (size_t)n);
		off += n;
	}
	uint8_t digest[CRYPTO_SHA256_LEN];
	crypto_sha256_final(&h, digest);
	crypto_hex(digest, sizeof(digest), id->sha256);
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	id->size = st.st_size;
	id->mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	id->mode = st.st_mode;
	id->uid = st.st_uid;
	id->gid = st.st_gid;
	id->valid = 1;
	return 0;
}

int appr_open_executable(const char *canonical, struct appr_identity *id, struct err *e)
{
	int fd = open(canonical, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return err_errno(e, errno, "cannot open %s to pin it", canonical);
	if (appr_identity_of_fd(fd, canonical, id, e) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int appr_identity_same(const struct appr_identity *want, const struct appr_identity *got, const char *name,
		       struct err *e)
{
	if (!want->valid || !got->valid || want->dev != got->dev || want->ino != got->ino || want->size != got->size ||
	    want->mtime_ns != got->mtime_ns || strcmp(want->sha256, got->sha256))
		return err_set(e, E_PERMISSION_DENIED,
			       "%s changed since it was checked (sha256 %.16s…, now %.16s…): not run", name,
			       want->sha256, got->sha256);
	return 0;
}

int appr_identity_recheck_path(const char *canonical, const struct appr_identity *want, struct err *e)
{
	struct appr_identity now;
	int fd = appr_open_executable(canonical, &now, e);
	if (fd < 0)
		return -1;
	close(fd);
	return appr_identity_same(want, &now, canonical, e);
}
