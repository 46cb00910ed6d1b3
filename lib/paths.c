/* paths.c — resolves agor's paths from the config; creates AGOR_HOME and the data home (docs/config.md).
 * Never follows a symlink at AGOR_HOME or its subdirs, never loosens a mode or adopts others'. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "log.h"
#include "paths.h"
#include "banned.h"

static char *join(const char *dir, const char *name)
{
	return xasprintf("%s/%s", strcmp(dir, "/") ? dir : "", name);
}

void paths_from_config(struct agor_paths *p, const struct config *cfg)
{
	p->home = xstrdup(cfg->paths.agor_home);
	p->config_file = xstrdup(cfg->config_file ? cfg->config_file : "");
	p->db = join(p->home, "agor.db");
	p->logs = join(p->home, "logs");
	p->cache = join(p->home, "cache");
	p->run = join(p->home, "run");
	p->pid_file = join(p->run, "agor.pid");
	p->socket = xstrdup(cfg->daemon.socket_path);
	p->data_home = xstrdup(cfg->paths.data_home);
	p->repos = xstrdup(cfg->paths.repos_dir);
	p->worktrees = xstrdup(cfg->paths.worktrees_dir);
	p->zellij = xstrdup(cfg->paths.zellij_dir);
	p->zellij_sessions = join(p->zellij, "sessions");
}

void paths_release(struct agor_paths *p)
{
	char **all[] = { &p->home,	     &p->config_file, &p->db,	     &p->logs,	&p->cache,     &p->run,
			 &p->pid_file,	     &p->socket,      &p->data_home, &p->repos, &p->worktrees, &p->zellij,
			 &p->zellij_sessions };
	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		free(*all[i]);
		*all[i] = NULL;
	}
}

/* mkdir -p for every component of path before the last one (mode 0755, symlinks followed). */
static int make_parents(const char *path, struct err *e)
{
	_cleanup_free_ char *buf = xstrdup(path);
	for (char *slash = strchr(buf + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return err_errno(e, errno, "cannot create %s", buf);
		*slash = '/';
	}
	return 0;
}

/* Creates dir in at (mode exactly `mode`), tolerating an existing entry; *created says which. */
static int make_dir_at(int at, const char *name, const char *shown, mode_t mode, bool *created, struct err *e)
{
	*created = false;
	if (mkdirat(at, name, mode) == 0) {
		*created = true;
		return 0;
	}
	if (errno == EEXIST)
		return 0;
	return err_errno(e, errno, "cannot create %s", shown);
}

/* make_dir_at(AT_FDCWD, path), its missing parents made first: tried alone before, since an existing directory (the
 * usual case) then costs one call rather than one per ancestor. */
static int make_dir_and_parents(const char *path, mode_t mode, bool *created, struct err *e)
{
	*created = false;
	if (mkdirat(AT_FDCWD, path, mode) == 0) {
		*created = true;
		return 0;
	}
	if (errno == EEXIST)
		return 0;
	if (make_parents(path, e) < 0)
		return -1;
	return make_dir_at(AT_FDCWD, path, path, mode, created, e);
}

/* Opens an existing directory without following a symlink at its last component. */
static int open_dir_nofollow(int at, const char *name, const char *shown, struct err *e)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	int saved = errno;
	struct stat st;
	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		return err_set(e, E_PERMISSION_DENIED, "%s is a symbolic link; refusing it (use the real path)", shown);
	if (saved == ENOTDIR)
		return err_set(e, E_PERMISSION_DENIED, "%s exists and is not a directory", shown);
	return err_errno(e, saved, "cannot open %s", shown);
}

/* A private directory must be ours; any mode but 0700 is set to 0700 (with a warning when
 * it was not just created by us). */
static int make_private(int fd, const char *shown, bool created, struct err *e)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(e, errno, "cannot stat %s", shown);
	if (st.st_uid != geteuid())
		return err_set(e, E_PERMISSION_DENIED,
			       "%s is owned by uid %u, not by the running user (uid %u); refusing "
			       "to use it",
			       shown, (unsigned)st.st_uid, (unsigned)geteuid());
	if ((st.st_mode & 07777) == 0700)
		return 0;
	if (fchmod(fd, 0700) < 0)
		return err_errno(e, errno, "cannot set mode 0700 on %s", shown);
	if (!created)
		log_warn("%s had mode %04o; tightened to 0700", shown, (unsigned)(st.st_mode & 07777));
	return 0;
}

static int ensure_private_subdir(int home_fd, const char *name, const char *shown, struct err *e)
{
	bool created;
	if (make_dir_at(home_fd, name, shown, 0700, &created, e) < 0)
		return -1;
	_cleanup_close_ int fd = open_dir_nofollow(home_fd, name, shown, e);
	if (fd < 0)
		return -1;
	return make_private(fd, shown, created, e);
}

int paths_ensure_home(const struct agor_paths *p, struct err *e)
{
	bool created;
	if (make_dir_and_parents(p->home, 0700, &created, e) < 0)
		return -1;
	_cleanup_close_ int home_fd = open_dir_nofollow(AT_FDCWD, p->home, p->home, e);
	if (home_fd < 0 || make_private(home_fd, p->home, created, e) < 0)
		return -1;
	const char *const subdirs[] = { "logs", "cache", "run" };
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		_cleanup_free_ char *shown = join(p->home, subdirs[i]);
		if (ensure_private_subdir(home_fd, subdirs[i], shown, e) < 0)
			return -1;
	}
	return 0;
}

/* mkdir -p path with mode 0755 for what it creates; the result must be a directory. */
static int ensure_data_dir(const char *path, mode_t mode, struct err *e)
{
	bool created;
	if (make_dir_and_parents(path, mode, &created, e) < 0)
		return -1;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOTDIR ? err_set(e, E_SYSTEM, "%s exists and is not a directory", path)
					: err_errno(e, errno, "cannot open %s", path);
	if (created && fchmod(fd, mode) < 0) /* exactly mode whatever the umask */
		return err_errno(e, errno, "cannot set mode %04o on %s", (unsigned)mode, path);
	return 0;
}

int paths_ensure_data(const struct agor_paths *p, struct err *e)
{
	/* a new data home is private (by default it is AGOR_HOME itself); `agor setup` opens it up */
	if (ensure_data_dir(p->data_home, 0700, e) < 0 || ensure_data_dir(p->repos, 0755, e) < 0 ||
	    ensure_data_dir(p->worktrees, 0755, e) < 0)
		return -1;
	return 0;
}

int paths_create_private_file(const char *path, struct err *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		int saved = errno;
		err_errno(e, saved, "cannot create %s", path);
		if (saved == EEXIST)
			e->code = E_ALREADY_EXISTS;
		return -1;
	}
	if (fchmod(fd, 0600) < 0) { /* exactly 0600 whatever the umask */
		int saved = errno;
		close(fd);
		unlink(path);
		return err_errno(e, saved, "cannot set mode 0600 on %s", path);
	}
	return fd;
}

int paths_is_data_home_id(const char *s)
{
	size_t n = 0;
	for (; s && ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')); n++)
		;
	return s && n == 32 && !s[n];
}

static int read_data_home_id(const char *path, char out[33], struct err *e)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT ? err_set(e, E_NOT_FOUND, "%s does not exist", path)
				       : err_errno(e, errno, "cannot read %s", path);
	char buf[40] = { 0 };
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	if (!paths_is_data_home_id(buf))
		return err_set(e, E_CONFIG, "%s does not hold a data home id (32 hex digits)", path);
	memcpy(out, buf, 33);
	return 0;
}

/* A new random id, written beside the final name and linked into place: never a half-written id. */
static int create_data_home_id(const char *data_home, const char *path, struct err *e)
{
	uint8_t raw[16];
	char hex[34];
	if (crypto_random(raw, sizeof(raw), e) < 0)
		return -1;
	crypto_hex(raw, sizeof(raw), hex);
	hex[32] = '\n';
	_cleanup_free_ char *tmp = xasprintf("%s/%s.%ld", data_home, PATHS_DATA_HOME_ID_FILE, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0)
		return err_errno(e, errno, "cannot create %s", tmp);
	int ok = fchmod(fd, 0644) == 0 && write(fd, hex, 33) == 33;
	close(fd);
	if (ok && link(tmp, path) < 0 && errno != EEXIST)
		ok = 0;
	unlink(tmp);
	return ok ? 0 : err_errno(e, errno, "cannot write %s", path);
}

int paths_data_home_id(const char *data_home, int create, char out[33], struct err *e)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", data_home, PATHS_DATA_HOME_ID_FILE);
	if (read_data_home_id(path, out, e) == 0 || !create || strcmp(e->code, E_NOT_FOUND))
		return err_is_set(e) ? -1 : 0;
	err_clear(e);
	if (create_data_home_id(data_home, path, e) < 0)
		return -1;
	return read_data_home_id(path, out, e);
}
