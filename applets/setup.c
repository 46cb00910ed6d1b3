/* setup.c — `agor setup sudoers|isolation|validate` (docs/modes.md#set-up-commands): host set-up for isolation.
 * Never installs sudoers visudo rejected; never writes as root into a user's directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adminconf.h"
#include "applet.h"
#include "client.h"
#include "config.h"
#include "config_edit.h"
#include "fsutil.h"
#include "json.h"
#include "sandbox.h"
#include "unixmode.h"
#include "unixperm.h"
#include "unixperm_account.h"
#include "zellij.h"
#include "banned.h"

#define SUDOERS_DIR    "/etc/sudoers.d"
#define SUDOERS_NAME   "agor"
#define RUN_DIR_PARENT "/run"
#define RUN_DIR_NAME   "agor"
#define RUN_DIR	       "/run/agor"
#define RUN_SOCKET     "/run/agor/agor.sock"
#define TMPFILES_DIR   "/etc/tmpfiles.d"
#define TMPFILES_NAME  "agor.conf"
#define ADMIN_DIR      "/etc/agor"

extern const struct applet applet_setup;

struct setup {
	const char *sub;
	bool mode_set, dry_run, json;
	enum unix_mode mode;
	const char *daemon_user, *executor_user, *bin, *config;

	struct strvec actions;
	bool changed;
	int failures;	/* validate */
	json_t *checks; /* validate --json: [{ok, check, fix?}]; NULL without --json */
	struct err e;
};

/* What the daemon user's configuration says (read as that user). */
struct daemon_view {
	char *config_file, *mode, *socket_path, *data_home, *worktrees_dir, *repos_dir, *executor_user, *agor_home;
	bool found;
};

static void PRINTF_LIKE(2, 3) act(struct setup *s, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	strvec_push_nodup(&s->actions, strbuf_detach(&sb, NULL));
	s->changed = true;
}

/* ---- the daemon user's configuration ------------------------------------------------------------
 */

struct config_job {
	const char *home;	 /* set HOME to this (we are a child that became the daemon user) */
	const char *config_path; /* --config, or NULL */
};

static void clear_agor_env(const char *home)
{
	static const char *const vars[] = { "AGOR_HOME", "AGOR_DATA_HOME", "AGOR_CONFIG_PATH", "AGOR_DAEMON_HOST",
					    "AGOR_DAEMON_PORT" };
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++)
		unsetenv(vars[i]);
	setenv("HOME", home, 1);
}

static int load_config_fn(void *arg, struct strbuf *out, struct err *e)
{
	const struct config_job *job = arg;
	if (job->home)
		clear_agor_env(job->home);
	struct config *cfg = config_new();
	struct config_overrides ov = { .config_path = job->config_path };
	int rc = config_load(cfg, &ov, e);
	if (rc == 0)
		strbuf_addf(out,
			    "config_file=%s\nfound=%d\nmode=%s\nsocket_path=%s\nworktrees_dir=%"
			    "s\nrepos_dir=%s\nexecutor_user=%s\ndata_home=%s\nagor_home=%s\n",
			    cfg->config_file, cfg->config_file_found ? 1 : 0,
			    config_user_mode_name(cfg->execution.unix_user_mode), cfg->daemon.socket_path,
			    cfg->paths.worktrees_dir, cfg->paths.repos_dir, cfg->execution.executor_unix_user,
			    cfg->paths.data_home, cfg->paths.agor_home);
	config_free(cfg);
	return rc;
}

static char *view_value(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, key, n) && line[n] == '=') {
			const char *end = strchr(line + n + 1, '\n');
			return xstrndup(line + n + 1, end ? (size_t)(end - line - n - 1) : strlen(line + n + 1));
		}
	return xstrdup("");
}

static void view_release(struct daemon_view *v)
{
	free(v->config_file);
	free(v->mode);
	free(v->socket_path);
	free(v->worktrees_dir);
	free(v->data_home);
	free(v->agor_home);
	free(v->repos_dir);
	free(v->executor_user);
	memset(v, 0, sizeof(*v));
}

/* Loads the daemon user's config.yaml: in-process when we are that user, else (root) in a
 * child that became that user, so the file is read with the daemon user's rights only. */
static int load_daemon_view(struct setup *s, const struct unixperm_user *daemon, struct daemon_view *v)
{
	struct strbuf out = STRBUF_INIT;
	int rc;
	if (geteuid() == daemon->uid) {
		struct config_job job = { NULL, s->config };
		rc = load_config_fn(&job, &out, &s->e);
	} else if (geteuid() == 0) {
		struct config_job job = { daemon->home, s->config };
		rc = unixperm_run_as_user(daemon, load_config_fn, &job, &out, &s->e);
	} else {
		rc = err_set(&s->e, E_PERMISSION_DENIED, "run as root or as the daemon user %s to read its config",
			     daemon->name);
	}
	if (rc == 0) {
		v->config_file = view_value(out.buf, "config_file");
		char *found = view_value(out.buf, "found");
		v->found = !strcmp(found, "1");
		free(found);
		v->mode = view_value(out.buf, "mode");
		v->socket_path = view_value(out.buf, "socket_path");
		v->worktrees_dir = view_value(out.buf, "worktrees_dir");
		v->repos_dir = view_value(out.buf, "repos_dir");
		v->executor_user = view_value(out.buf, "executor_user");
		v->data_home = view_value(out.buf, "data_home");
		v->agor_home = view_value(out.buf, "agor_home");
	}
	strbuf_release(&out);
	return rc;
}

/* ---- editing config.yaml (as the daemon user)
 * -------------------------------------------------------- */

#define SETUP_DATA_HOME "/srv/agor" /* where setup puts a data home that lay in AGOR_HOME */

struct config_edit {
	const char *path;
	const char *mode;
	const char *socket_path;
	const char *data_home; /* NULL: left as configured */
};

/* daemon.socket_path, then execution.unix_user_mode, each set in place by lib/config_edit (comments and
 * other lines kept, checked by the real loader, atomic); the first alone is already a valid config. */
static int write_config_fn(void *arg, struct strbuf *out, struct err *e)
{
	const struct config_edit *ed = arg;
	(void)out;
	_cleanup_free_ char *dir = xstrndup(ed->path, (size_t)(strrchr(ed->path, '/') - ed->path));
	if (fs_mkdir_p(dir, 0700, e) < 0 || config_file_set(ed->path, "daemon.socket_path", ed->socket_path, e) < 0 ||
	    config_file_set(ed->path, "execution.unix_user_mode", ed->mode, e) < 0 ||
	    (ed->data_home && config_file_set(ed->path, "paths.data_home", ed->data_home, e) < 0))
		return -1;
	return 0;
}

/* ---- root-owned files, installed atomically
 * ------------------------------------------------------------ */

/* True when dir/name is a root-owned regular file with exactly this content and mode. */
static bool file_is_current(const char *dir, const char *name, const struct strbuf *want, mode_t mode)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return false;
	struct stat st;
	struct strbuf have = STRBUF_INIT;
	bool same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 07777) == mode &&
		    strbuf_read_fd(&have, fd, 1 << 20) >= 0 && have.len == want->len &&
		    !memcmp(have.buf, want->buf, want->len);
	close(fd);
	strbuf_release(&have);
	return same;
}

/* Makes a rename in the directory durable (dirfd may be an O_PATH descriptor). */
static int fsync_dir(int dirfd, const char *dir, struct err *e)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = fd < 0 || fsync(fd) < 0 ? err_errno(e, errno, "fsync %s", dir) : 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Writes content to a hidden temporary file in dir, lets check() judge it, renames it over
 * dir/name. Names with a '.' are ignored by sudo in sudoers.d, so the temporary is inert. */
static int install_file(const char *dir, const char *name, const struct strbuf *content, mode_t mode,
			int (*check)(const char *tmp_path, struct err *e), struct err *e)
{
	int dirfd = adminconf_open_trusted_dir(dir, e);
	if (dirfd < 0)
		return -1;
	char *tmp = xasprintf(".%s.agor-%d", name, (int)getpid());
	char *tmp_path = xasprintf("%s/%s", dir, tmp);
	(void)unlinkat(dirfd, tmp, 0);
	int rc = -1;
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		err_errno(e, errno, "create %s", tmp_path);
	else if (fs_write_all(fd, content->buf, content->len) < 0 || fchown(fd, 0, 0) < 0 || fchmod(fd, mode) < 0 ||
		 fsync(fd) < 0)
		err_errno(e, errno, "write %s", tmp_path);
	else if (check && check(tmp_path, e) < 0)
		;
	else if (renameat(dirfd, tmp, dirfd, name) < 0)
		err_errno(e, errno, "install %s/%s", dir, name);
	else
		rc = fsync_dir(dirfd, dir, e);
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		(void)unlinkat(dirfd, tmp, 0);
	close(dirfd);
	free(tmp);
	free(tmp_path);
	return rc;
}

/* visudo -c -f on the temporary file: only a snippet sudo accepts is installed. */
static int visudo_check(const char *tmp_path, struct err *e)
{
	const char *argv[] = { "/usr/sbin/visudo", "-c", "-q", "-f", tmp_path, NULL };
	if (unixperm_run_tool(argv, NULL, e) < 0) {
		err_prefix(e, "visudo refused the generated sudoers (nothing installed)");
		return -1;
	}
	return 0;
}

/* ---- sudoers
 * --------------------------------------------------------------------------------------------- */

static void default_names(struct setup *s)
{
	if (!s->daemon_user)
		s->daemon_user = UNIX_MODE_DEFAULT_DAEMON_USER;
	if (!s->executor_user)
		s->executor_user = UNIX_MODE_DEFAULT_EXECUTOR_USER;
	if (!s->bin)
		s->bin = UNIX_MODE_DEFAULT_BIN;
}

static int render_sudoers(struct setup *s, struct strbuf *out)
{
	struct unix_mode_sudoers spec = { s->mode, s->daemon_user, s->executor_user, s->bin };
	return unix_mode_sudoers(&spec, out, &s->e);
}

/* The rules name --bin as what sudo runs as root: it must be root's and beyond everyone else's reach, like
 * check_bin. Not installed yet is allowed (the rules are printed ahead of the install), but then the nearest
 * existing directory on its path must already be root's alone, so nobody else can put a binary there first. */
static int check_bin(struct setup *s);

static int check_printed_bin(struct setup *s)
{
	struct stat st;
	if (lstat(s->bin, &st) == 0 || errno != ENOENT)
		return check_bin(s);
	_cleanup_free_ char *dir = xstrdup(s->bin);
	for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
		*(slash == dir ? slash + 1 : slash) = '\0';
		if (lstat(dir, &st) < 0 && errno == ENOENT && slash != dir)
			continue;
		int fd = adminconf_open_trusted_dir(dir, &s->e);
		if (fd < 0)
			return err_prefix(&s->e,
					  "--bin %s is not installed and %s could be written by others, who could put "
					  "their own program there for sudo to run as root (fix: install agor as root "
					  "in a "
					  "root-owned directory, mode 0755, first)",
					  s->bin, dir),
			       -1;
		close(fd);
		break;
	}
	fprintf(stderr,
		"agor setup sudoers: note: %s is not installed yet; install it root-owned, mode 0755, before "
		"these rules are used\n",
		s->bin);
	return 0;
}

static int cmd_sudoers(struct setup *s)
{
	if (!s->mode_set)
		return err_set(&s->e, E_USAGE, "--mode simple|insulated|strict|sandbox is required");
	struct strbuf out = STRBUF_INIT;
	int rc = render_sudoers(s, &out); /* first: a --bin that is no clean path is a usage error (exit 2) */
	if (rc == 0)
		rc = check_printed_bin(s);
	if (rc == 0)
		fputs(out.buf, stdout);
	strbuf_release(&out);
	return rc;
}

/* ---- isolation
 * ------------------------------------------------------------------------------------------- */

struct isolation_plan {
	struct unixperm_user daemon;
	struct daemon_view view;
	struct strbuf sudoers;
	struct strbuf tmpfiles;
	struct strbuf admin_yaml; /* empty when admin.yaml exists (it is validated, never replaced) */
	bool admin_yaml_exists;
	gid_t users_gid;
	bool have_users_gid;
	bool move_data_home; /* the configured data home lies in AGOR_HOME: config gets SETUP_DATA_HOME instead */
};

static void plan_release(struct isolation_plan *p)
{
	unixperm_user_release(&p->daemon);
	view_release(&p->view);
	strbuf_release(&p->sudoers);
	strbuf_release(&p->tmpfiles);
	strbuf_release(&p->admin_yaml);
}

static int check_daemon_user(struct setup *s, struct unixperm_user *u)
{
	if (unixperm_check_user_name("--daemon-user", s->daemon_user, &s->e) < 0)
		return -1;
	int found = unixperm_user_lookup(s->daemon_user, u, &s->e);
	if (found < 0)
		return -1;
	if (!found)
		return err_set(&s->e, E_NOT_FOUND,
			       "daemon user %s does not exist (fix: useradd --system --create-home "
			       "%s, or --daemon-user)",
			       s->daemon_user, s->daemon_user);
	if (u->uid == 0)
		return err_set(&s->e, E_PERMISSION_DENIED, "the daemon must not run as root");
	return 0;
}

static int check_executor_user(struct setup *s)
{
	if (s->mode != UNIX_MODE_INSULATED)
		return 0;
	struct unixperm_user u;
	int found = unixperm_user_lookup(s->executor_user, &u, &s->e);
	if (found <= 0)
		return found;
	bool bad = u.uid == 0 || u.uid >= unixperm_uid_min();
	unixperm_user_release(&u);
	return bad ? err_set(&s->e, E_PERMISSION_DENIED, "executor user %s exists and is not a system account",
			     s->executor_user)
		   : 0;
}

/* The binary sudo will run as root must be root's alone, like every directory above it. */
static int check_bin(struct setup *s)
{
	int fd = adminconf_open_trusted(s->bin, &s->e);
	if (fd < 0) {
		err_prefix(&s->e,
			   "--bin %s (sudo runs it as root; fix: install agor there, root-owned, "
			   "mode 0755)",
			   s->bin);
		return -1;
	}
	close(fd);
	return 0;
}

static int plan_admin_yaml(struct setup *s, struct isolation_plan *p)
{
	struct stat st;
	p->admin_yaml_exists = lstat(ADMINCONF_DEFAULT_PATH, &st) == 0;
	if (p->admin_yaml_exists) {
		struct adminconf c;
		if (adminconf_load(NULL, &c, &s->e) < 0) {
			err_prefix(&s->e, "existing %s (fix or remove it)", ADMINCONF_DEFAULT_PATH);
			return -1;
		}
		adminconf_release(&c);
		return 0;
	}
	struct adminconf c = { NULL, p->view.worktrees_dir, p->view.repos_dir, NULL };
	adminconf_format(&c, &p->admin_yaml);
	struct adminconf parsed;
	if (adminconf_parse(p->admin_yaml.buf, p->admin_yaml.len, ADMINCONF_DEFAULT_PATH, &parsed, &s->e) < 0)
		return -1;
	adminconf_release(&parsed);
	return 0;
}

/* Every check and every file content, before anything is changed. */
/* A path of the view below old, moved below SETUP_DATA_HOME. */
static void move_below(char **path, const char *old)
{
	if (!fs_path_is_or_below(*path, old))
		return;
	char *moved = xasprintf("%s%s", SETUP_DATA_HOME, *path + strlen(old));
	free(*path);
	*path = moved;
}

/* The default data home is AGOR_HOME, 0700, which executors of other users cannot reach: setup moves it to
 * SETUP_DATA_HOME (repos/ and worktrees/ with it, when they were below it) and writes that to config.yaml. */
static int plan_data_home(struct isolation_plan *p)
{
	if (!fs_path_is_or_below(p->view.data_home, p->view.agor_home))
		return 0;
	p->move_data_home = true;
	_cleanup_free_ char *old = xstrdup(p->view.data_home);
	move_below(&p->view.repos_dir, old);
	move_below(&p->view.worktrees_dir, old);
	move_below(&p->view.data_home, old);
	return 0;
}

static int plan_isolation(struct setup *s, struct isolation_plan *p)
{
	if (!s->mode_set)
		s->mode = UNIX_MODE_INSULATED;
	if (s->mode == UNIX_MODE_SIMPLE || s->mode == UNIX_MODE_SANDBOX)
		return err_set(&s->e, E_USAGE, "%s mode needs no Unix isolation set-up (use --mode insulated|strict)",
			       unix_mode_name(s->mode));
	if (!s->dry_run && geteuid() != 0)
		return err_set(&s->e, E_PERMISSION_DENIED, "setup isolation must run as root (try --dry-run)");
	if (check_daemon_user(s, &p->daemon) < 0 || check_executor_user(s) < 0 || render_sudoers(s, &p->sudoers) < 0 ||
	    check_bin(s) < 0 || load_daemon_view(s, &p->daemon, &p->view) < 0 || plan_data_home(p) < 0 ||
	    plan_admin_yaml(s, p) < 0)
		return -1;
	strbuf_addf(&p->tmpfiles,
		    "# recreates the daemon socket directory at boot (agor setup isolation)\n"
		    "d %s 0750 %s %s -\n",
		    RUN_DIR, s->daemon_user, UNIXPERM_USERS_GROUP);
	p->have_users_gid = unixperm_group_lookup(UNIXPERM_USERS_GROUP, &p->users_gid);
	return 0;
}

static int ensure_users_group(struct setup *s, struct isolation_plan *p)
{
	if (p->have_users_gid)
		return 0;
	act(s, "groupadd --system %s", UNIXPERM_USERS_GROUP);
	if (s->dry_run)
		return 0;
	if (unixperm_groupadd(UNIXPERM_USERS_GROUP, true, &s->e) < 0)
		return -1;
	p->have_users_gid = unixperm_group_lookup(UNIXPERM_USERS_GROUP, &p->users_gid);
	return p->have_users_gid ? 0
				 : err_set(&s->e, E_SYSTEM, "group %s missing after groupadd", UNIXPERM_USERS_GROUP);
}

/* In the isolating modes the daemon hands its socket to agor_users (other users' executors reach it so), which
 * chown allows only to a member: without this the daemon does not start. */
static int ensure_daemon_in_group(struct setup *s, struct isolation_plan *p)
{
	if (unixperm_user_in_group(&p->daemon, UNIXPERM_USERS_GROUP))
		return 0;
	act(s, "gpasswd -a %s %s  # the daemon gives its socket to that group", s->daemon_user, UNIXPERM_USERS_GROUP);
	return s->dry_run ? 0 : unixperm_group_add_member(UNIXPERM_USERS_GROUP, s->daemon_user, &s->e);
}

static int ensure_executor_user(struct setup *s)
{
	if (s->mode != UNIX_MODE_INSULATED)
		return 0;
	struct unixperm_user u;
	int found = unixperm_user_lookup(s->executor_user, &u, &s->e);
	if (found < 0)
		return -1;
	char *home = xasprintf("/home/%s", s->executor_user);
	int rc = 0;
	if (!found) {
		act(s,
		    "useradd --system --create-home --home-dir %s --shell /usr/sbin/nologin "
		    "--user-group %s",
		    home, s->executor_user);
		if (!s->dry_run)
			rc = unixperm_useradd_system(s->executor_user, home, &s->e);
	}
	if (rc == 0 && !s->dry_run && !found)
		found = unixperm_user_lookup(s->executor_user, &u, &s->e);
	if (rc == 0 && (!found || !unixperm_user_in_group(&u, UNIXPERM_USERS_GROUP))) {
		act(s, "gpasswd -a %s %s", s->executor_user, UNIXPERM_USERS_GROUP);
		if (!s->dry_run)
			rc = unixperm_group_add_member(UNIXPERM_USERS_GROUP, s->executor_user, &s->e);
	}
	if (found > 0)
		unixperm_user_release(&u);
	free(home);
	return rc;
}

static int ensure_sudoers(struct setup *s, struct isolation_plan *p)
{
	if (file_is_current(SUDOERS_DIR, SUDOERS_NAME, &p->sudoers, 0440))
		return 0;
	act(s, "install %s/%s (mode 0440, checked with visudo -cf first)", SUDOERS_DIR, SUDOERS_NAME);
	return s->dry_run ? 0 : install_file(SUDOERS_DIR, SUDOERS_NAME, &p->sudoers, 0440, visudo_check, &s->e);
}

/* /run/agor: owned by the daemon user, group agor_users, 0750 — never through a symlink. */
static int ensure_run_dir(struct setup *s, struct isolation_plan *p)
{
	int parent = open(RUN_DIR_PARENT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (parent < 0)
		return err_errno(&s->e, errno, "open %s", RUN_DIR_PARENT);
	struct stat st;
	int rc = 0;
	bool exists = fstatat(parent, RUN_DIR_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && !S_ISDIR(st.st_mode))
		rc = err_set(&s->e, E_PERMISSION_DENIED, "%s exists and is not a directory", RUN_DIR);
	else if (!exists || st.st_uid != p->daemon.uid || st.st_gid != p->users_gid || (st.st_mode & 07777) != 0750) {
		act(s, "install -d -m 0750 -o %s -g %s %s", s->daemon_user, UNIXPERM_USERS_GROUP, RUN_DIR);
		if (!s->dry_run) {
			if (!exists && mkdirat(parent, RUN_DIR_NAME, 0700) < 0 && errno != EEXIST)
				rc = err_errno(&s->e, errno, "mkdir %s", RUN_DIR);
			int fd = rc < 0 ? -1
					: openat(parent, RUN_DIR_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (rc == 0 && (fd < 0 || fchown(fd, p->daemon.uid, p->users_gid) < 0 || fchmod(fd, 0750) < 0))
				rc = err_errno(&s->e, errno, "set up %s", RUN_DIR);
			if (fd >= 0)
				close(fd);
		}
	}
	close(parent);
	if (rc == 0 && !file_is_current(TMPFILES_DIR, TMPFILES_NAME, &p->tmpfiles, 0644)) {
		act(s, "install %s/%s (recreates %s at boot)", TMPFILES_DIR, TMPFILES_NAME, RUN_DIR);
		if (!s->dry_run && mkdir(TMPFILES_DIR, 0755) < 0 && errno != EEXIST)
			rc = err_errno(&s->e, errno, "mkdir %s", TMPFILES_DIR);
		else if (!s->dry_run)
			rc = install_file(TMPFILES_DIR, TMPFILES_NAME, &p->tmpfiles, 0644, NULL, &s->e);
	}
	return rc;
}

/* The data home, repos_dir and worktrees_dir: the daemon user's, group agor_users, mode 2770, made when missing
 * (their parents must exist). Executors of every isolated user write there (clones, worktrees, agent state),
 * reaching it through the group; never through a symlink (opened as roots, then changed by descriptor). A data
 * home that lay in AGOR_HOME was moved to SETUP_DATA_HOME by plan_data_home. */
static int ensure_data_dir(struct setup *s, struct isolation_plan *p, const char *dir)
{
	struct stat st;
	bool exists = lstat(dir, &st) == 0;
	if (exists && st.st_uid == p->daemon.uid && st.st_gid == p->users_gid && (st.st_mode & 07777) == 02770)
		return 0;
	act(s, "install -d -m 2770 -o %s -g %s %s", s->daemon_user, UNIXPERM_USERS_GROUP, dir);
	if (s->dry_run)
		return 0;
	if (!exists && mkdir(dir, 0700) < 0)
		return err_errno(&s->e, errno, "mkdir %s (its parent must exist)", dir);
	int path_fd = unixperm_open_root(dir, &s->e); /* O_PATH: opened for real below, to change it */
	if (path_fd < 0)
		return -1;
	int fd = openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(path_fd);
	int rc = fd < 0 || fchown(fd, p->daemon.uid, p->users_gid) < 0 || fchmod(fd, 02770) < 0
			 ? err_errno(&s->e, errno, "set up %s", dir)
			 : 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

static int ensure_data_dirs(struct setup *s, struct isolation_plan *p)
{
	const char *dirs[] = { p->view.data_home, p->view.repos_dir, p->view.worktrees_dir };
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if ((i == 0 || strcmp(dirs[i], dirs[0])) && ensure_data_dir(s, p, dirs[i]) < 0)
			return -1;
	return 0;
}

static int ensure_admin_yaml(struct setup *s, struct isolation_plan *p)
{
	if (p->admin_yaml_exists)
		return 0;
	act(s, "install %s (worktrees_dir: %s, repos_dir: %s; root-owned, mode 0644)", ADMINCONF_DEFAULT_PATH,
	    p->view.worktrees_dir, p->view.repos_dir);
	if (s->dry_run)
		return 0;
	if (mkdir(ADMIN_DIR, 0755) < 0 && errno != EEXIST)
		return err_errno(&s->e, errno, "mkdir %s", ADMIN_DIR);
	return install_file(ADMIN_DIR, "admin.yaml", &p->admin_yaml, 0644, NULL, &s->e);
}

static int ensure_config(struct setup *s, struct isolation_plan *p)
{
	const char *mode = unix_mode_name(s->mode);
	if (!strcmp(p->view.mode, mode) && !strcmp(p->view.socket_path, RUN_SOCKET) && !p->move_data_home)
		return 0;
	act(s, "set execution.unix_user_mode: %s and daemon.socket_path: %s%s%s in %s  # as %s", mode, RUN_SOCKET,
	    p->move_data_home ? " and paths.data_home: " : "", p->move_data_home ? SETUP_DATA_HOME : "",
	    p->view.config_file, s->daemon_user);
	if (s->dry_run)
		return 0;
	struct config_edit ed = { p->view.config_file, mode, RUN_SOCKET, p->move_data_home ? SETUP_DATA_HOME : NULL };
	return unixperm_run_as_user(&p->daemon, write_config_fn, &ed, NULL, &s->e);
}

static int cmd_isolation(struct setup *s)
{
	struct isolation_plan p = { .sudoers = STRBUF_INIT, .tmpfiles = STRBUF_INIT, .admin_yaml = STRBUF_INIT };
	int rc = plan_isolation(s, &p);
	if (rc == 0)
		rc = ensure_users_group(s, &p);
	if (rc == 0)
		rc = ensure_daemon_in_group(s, &p);
	if (rc == 0)
		rc = ensure_executor_user(s);
	if (rc == 0)
		rc = ensure_sudoers(s, &p);
	if (rc == 0)
		rc = ensure_run_dir(s, &p);
	if (rc == 0)
		rc = ensure_data_dirs(s, &p);
	if (rc == 0)
		rc = ensure_admin_yaml(s, &p);
	if (rc == 0)
		rc = ensure_config(s, &p);
	plan_release(&p);
	return rc;
}

/* ---- validate
 * -------------------------------------------------------------------------------------------- */

static void PRINTF_LIKE(4, 5) check(struct setup *s, bool ok, const char *fix, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	if (s->checks)
		json_array_append_new(s->checks,
				      json_pack("{s:b,s:s,s:s?}", "ok", ok, "check", sb.buf, "fix", ok ? NULL : fix));
	else if (ok)
		printf("ok %s\n", sb.buf);
	else
		printf("FAIL %s — fix: %s\n", sb.buf, fix);
	s->failures += !ok;
	strbuf_release(&sb);
}

static void check_group_exists(struct setup *s)
{
	check(s, unixperm_group_lookup(UNIXPERM_USERS_GROUP, NULL), "sudo agor setup isolation", "group %s exists",
	      UNIXPERM_USERS_GROUP);
}

static void check_executor(struct setup *s)
{
	struct unixperm_user u;
	struct err e = ERR_INIT;
	int found = unixperm_user_lookup(s->executor_user, &u, &e);
	err_clear(&e);
	check(s, found == 1, "sudo agor setup isolation", "executor user %s exists", s->executor_user);
	if (found != 1)
		return;
	bool nologin = strstr(u.shell, "nologin") || strstr(u.shell, "/false");
	check(s, u.uid != 0 && strcmp(u.name, s->daemon_user), "use a dedicated executor user",
	      "executor user %s is neither root nor the daemon user", u.name);
	check(s, nologin, "usermod --shell /usr/sbin/nologin", "executor user %s has no login shell (%s)", u.name,
	      u.shell);
	check(s, unixperm_user_in_group(&u, UNIXPERM_USERS_GROUP), "sudo gpasswd -a EXECUTOR agor_users",
	      "executor user %s is in %s (to reach the daemon socket)", u.name, UNIXPERM_USERS_GROUP);
	unixperm_user_release(&u);
}

static void check_sudoers_file(struct setup *s)
{
	struct strbuf want = STRBUF_INIT;
	struct err e = ERR_INIT;
	struct unix_mode_sudoers spec = { s->mode, s->daemon_user, s->executor_user, s->bin };
	struct stat st;
	if (unix_mode_sudoers(&spec, &want, &e) < 0)
		check(s, false, "pass valid --daemon-user/--executor-user/--bin", "sudoers can be rendered: %s",
		      e.message);
	else if (geteuid() != 0) /* 0440 root: only its owner and mode can be seen; sudo -l below
				    checks the rules */
		check(s,
		      lstat(SUDOERS_DIR "/" SUDOERS_NAME, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
			      (st.st_mode & 07777) == 0440,
		      "sudo agor setup isolation",
		      "%s/%s is root's and mode 0440 (its text is checked when run as root)", SUDOERS_DIR,
		      SUDOERS_NAME);
	else
		check(s, file_is_current(SUDOERS_DIR, SUDOERS_NAME, &want, 0440), "sudo agor setup isolation",
		      "%s/%s is root's, mode 0440, and equals 'agor setup sudoers --mode %s'", SUDOERS_DIR,
		      SUDOERS_NAME, unix_mode_name(s->mode));
	err_clear(&e);
	strbuf_release(&want);
}

/* The command lines `sudo -l` lists for the daemon user (the indented lines after "may run"). */
static int sudo_list(struct setup *s, const struct unixperm_user *daemon, struct strvec *lines, struct err *e)
{
	const char *as_root[] = { "/usr/bin/sudo", "-n", "-l", "-U", daemon->name, NULL };
	const char *as_self[] = { "/usr/bin/sudo", "-n", "-l", NULL };
	struct strbuf out = STRBUF_INIT;
	(void)s;
	int rc = unixperm_run_tool(geteuid() == 0 ? as_root : as_self, &out, e);
	const char *section = strstr(out.buf, "may run the following commands");
	for (const char *line = section ? strchr(section, '\n') : NULL; line && *line;) {
		line++;
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len && (line[0] == ' ' || line[0] == '\t')) {
			while (len && (*line == ' ' || *line == '\t'))
				line++, len--;
			strvec_push_nodup(lines, xstrndup(line, len));
		}
		line = end;
	}
	strbuf_release(&out);
	return rc;
}

static void check_sudo_rules(struct setup *s, const struct unixperm_user *daemon)
{
	struct strvec want = STRVEC_INIT, have = STRVEC_INIT;
	if (s->mode == UNIX_MODE_INSULATED)
		strvec_pushf(&want, "(%s) NOPASSWD: %s executor --stdin", s->executor_user, s->bin);
	if (s->mode == UNIX_MODE_STRICT)
		strvec_pushf(&want, "(%%%s, !root) NOPASSWD: %s executor --stdin", UNIXPERM_USERS_GROUP, s->bin);
	strvec_pushf(&want, "(root) NOPASSWD: %s admin *", s->bin);
	struct err e = ERR_INIT;
	int rc = sudo_list(s, daemon, &have, &e);
	bool same = rc == 0 && have.nr == want.nr;
	for (size_t i = 0; same && i < want.nr; i++)
		same = strvec_find(&have, want.v[i]) >= 0;
	struct strbuf got = STRBUF_INIT;
	for (size_t i = 0; i < have.nr; i++)
		strbuf_addf(&got, "%s%s", i ? " | " : "", have.v[i]);
	check(s, same, "sudo agor setup isolation (and remove other sudo rules of the daemon user)",
	      "sudo -l for %s lists exactly the executor and admin rules (%s)", daemon->name,
	      rc < 0	? e.message
	      : got.len ? got.buf
			: "none");
	err_clear(&e);
	strbuf_release(&got);
	strvec_clear(&want);
	strvec_clear(&have);
}

static void check_run_dir(struct setup *s, const struct unixperm_user *daemon)
{
	struct stat st;
	gid_t gid = 0;
	bool have_gid = unixperm_group_lookup(UNIXPERM_USERS_GROUP, &gid);
	bool ok = lstat(RUN_DIR, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == daemon->uid && have_gid &&
		  st.st_gid == gid && (st.st_mode & 07777) == 0750;
	check(s, ok, "sudo agor setup isolation", "%s is a directory owned by %s, group %s, mode 0750", RUN_DIR,
	      daemon->name, UNIXPERM_USERS_GROUP);
}

static void check_socket(struct setup *s, const struct daemon_view *v)
{
	check(s, !strcmp(v->socket_path, RUN_SOCKET), "sudo agor setup isolation (sets daemon.socket_path)",
	      "daemon.socket_path is %s (%s)", RUN_SOCKET, v->socket_path);
	struct stat st;
	if (lstat(v->socket_path, &st) < 0) {
		check(s, errno == ENOENT, "check the path", "socket %s not created yet (the daemon is not running)",
		      v->socket_path);
		return;
	}
	gid_t gid = 0;
	bool ok = S_ISSOCK(st.st_mode) && unixperm_group_lookup(UNIXPERM_USERS_GROUP, &gid) && st.st_gid == gid &&
		  (st.st_mode & 0777) == 0660;
	check(s, ok, "restart the daemon (it creates the socket 0660, group agor_users)",
	      "socket %s is mode 0660, group %s", v->socket_path, UNIXPERM_USERS_GROUP);
}

/* Members of agor_users must be able to reach the worktrees: every directory above it searchable.
 */
static bool reachable_by_users(const char *path)
{
	gid_t gid = 0;
	bool have = unixperm_group_lookup(UNIXPERM_USERS_GROUP, &gid);
	char *copy = xstrdup(path);
	bool ok = true;
	for (char *slash = strrchr(copy, '/'); ok && slash && slash != copy; slash = strrchr(copy, '/')) {
		*slash = '\0';
		struct stat st;
		ok = stat(copy, &st) == 0 && ((st.st_mode & 0001) || (have && st.st_gid == gid && (st.st_mode & 0010)));
	}
	free(copy);
	return ok;
}

static bool writable_by_users(const char *dir)
{
	struct stat st;
	gid_t gid;
	return unixperm_group_lookup(UNIXPERM_USERS_GROUP, &gid) && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_gid == gid && (st.st_mode & 02070) == 02070;
}

static void check_admin_conf(struct setup *s)
{
	struct adminconf c;
	struct err e = ERR_INIT;
	int rc = adminconf_load(NULL, &c, &e);
	check(s, rc == 0, "sudo agor setup isolation", "%s is root's and valid%s%s", ADMINCONF_DEFAULT_PATH,
	      rc < 0 ? ": " : "", rc < 0 ? e.message : "");
	err_clear(&e);
	if (rc < 0)
		return;
	const char *roots[] = { c.worktrees_dir, c.repos_dir };
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++) {
		int fd = unixperm_open_root(roots[i], &e);
		check(s, fd >= 0, "create it as the daemon user (agor starts it), without symlinks in its path",
		      "root %s exists%s%s", roots[i], fd < 0 ? ": " : "", fd < 0 ? e.message : "");
		if (fd >= 0)
			close(fd);
		err_clear(&e);
		check(s, reachable_by_users(roots[i]),
		      "keep the data home outside AGOR_HOME (0700), e.g. paths.data_home: "
		      "/srv/agor",
		      "every directory above %s is searchable by %s", roots[i], UNIXPERM_USERS_GROUP);
		check(s, writable_by_users(roots[i]), "sudo agor setup isolation",
		      "%s is writable by %s (group %s, mode 2770: executors clone and add worktrees there)", roots[i],
		      UNIXPERM_USERS_GROUP, UNIXPERM_USERS_GROUP);
	}
	adminconf_release(&c);
}

static void check_bin_trusted(struct setup *s)
{
	struct err e = ERR_INIT;
	int fd = adminconf_open_trusted(s->bin, &e);
	check(s, fd >= 0, "install agor root-owned (0755) in a root-owned directory", "%s is root's alone%s%s", s->bin,
	      fd < 0 ? ": " : "", fd < 0 ? e.message : "");
	if (fd >= 0)
		close(fd);
	err_clear(&e);
}

/* Sandbox mode: no users or sudo to check; the kernel controls the sandbox needs must be there. */
static void validate_sandbox(struct setup *s)
{
	struct sandbox_probe p;
	sandbox_probe(&p);
	check(s, p.user_namespaces,
	      "enable user namespaces (sysctl user.max_user_namespaces > 0; on Debian also "
	      "kernel.unprivileged_userns_clone=1)",
	      "user namespaces%s%s", p.user_namespaces ? "" : ": ",
	      p.user_namespaces ? "" : strerror(p.user_namespaces_errno));
	if (p.landlock_abi > 0)
		check(s, true, "", "Landlock ABI %d%s", p.landlock_abi,
		      p.landlock_abi >= 4 ? "" : " (no TCP rules before ABI 4)");
	else
		check(s, false, "boot a kernel with Landlock enabled (CONFIG_SECURITY_LANDLOCK, lsm=…,landlock)",
		      "Landlock: %s", strerror(p.landlock_errno));
	check(s, p.seccomp, "run agor on x86_64 (the only architecture with a filter so far)",
	      "seccomp filter for this architecture");
	check(s, p.mount_api,
	      "boot Linux 5.12 or later (the sandbox binds by descriptor: open_tree, move_mount, "
	      "mount_setattr)",
	      "the new mount API");
}

static void validate_isolation(struct setup *s, const struct unixperm_user *daemon, const struct daemon_view *v)
{
	check_group_exists(s);
	check(s, unixperm_user_in_group(daemon, UNIXPERM_USERS_GROUP), "sudo agor setup isolation",
	      "daemon user %s is in %s (it gives the daemon socket to that group)", daemon->name, UNIXPERM_USERS_GROUP);
	if (s->mode == UNIX_MODE_INSULATED)
		check_executor(s);
	check_bin_trusted(s);
	check_sudoers_file(s);
	check_sudo_rules(s, daemon);
	check_run_dir(s, daemon);
	check_socket(s, v);
	check_admin_conf(s);
}

static int cmd_validate(struct setup *s)
{
	struct unixperm_user daemon = { 0 };
	struct daemon_view v = { 0 };
	struct err e = ERR_INIT;
	int found = unixperm_user_name_valid(s->daemon_user) ? unixperm_user_lookup(s->daemon_user, &daemon, &e) : 0;
	check(s, found == 1 && daemon.uid != 0, "useradd --system --create-home agor (or pass --daemon-user)",
	      "daemon user %s exists and is not root", s->daemon_user);
	if (found == 1 && load_daemon_view(s, &daemon, &v) == 0) {
		check(s, true, "", "config %s loads (%s)", v.config_file, v.found ? "found" : "defaults");
		if (!s->mode_set && unix_mode_parse(v.mode, &s->mode) == 0)
			s->mode_set = true;
		if (!s->mode_set || strcmp(v.mode, unix_mode_name(s->mode)))
			check(s, false, "sudo agor setup isolation --mode MODE", "execution.unix_user_mode is %s (%s)",
			      unix_mode_name(s->mode), v.mode);
		else
			check(s, true, "", "execution.unix_user_mode is %s", v.mode);
	} else if (found == 1) {
		check(s, false, "fix the config file", "config loads: %s", s->e.message);
		err_clear(&s->e);
	}
	if (s->mode_set && s->mode == UNIX_MODE_SANDBOX)
		validate_sandbox(s);
	else if (s->mode_set && s->mode != UNIX_MODE_SIMPLE && found == 1 && v.config_file)
		validate_isolation(s, &daemon, &v);
	else if (s->mode_set && s->mode == UNIX_MODE_SIMPLE)
		check(s, true, "", "simple mode: executors run as the daemon user (no isolation to check)");
	view_release(&v);
	if (found == 1)
		unixperm_user_release(&daemon);
	err_clear(&e);
	return 0;
}

/* ---- arguments and main
 * ---------------------------------------------------------------------------------- */

#define USER_FLAGS                                                                                                     \
	{ "--mode", "mode", CLIENT_FLAG_STRING, "simple, insulated, strict or sandbox (execution.unix_user_mode)",     \
	  "MODE" },                                                                                                    \
		{ "--daemon-user", "daemon_user", CLIENT_FLAG_STRING, "the daemon's Unix user (default agor)",         \
		  "USER" },                                                                                            \
		{ "--executor-user", "executor_user", CLIENT_FLAG_STRING,                                              \
		  "the shared execution user of insulated mode (default agor_executor)", "USER" },                     \
	{                                                                                                              \
		"--bin", "bin", CLIENT_FLAG_STRING, "the installed agor (default /usr/local/bin/agor)", "PATH"         \
	}

static const struct client_flag sudoers_flags[] = { USER_FLAGS, { NULL } };
static const struct client_flag isolation_flags[] = {
	USER_FLAGS,
	{ "--dry-run", "dry_run", CLIENT_FLAG_BOOL, "print every action, change nothing" },
	{ "--json", "json", CLIENT_FLAG_BOOL, "print {command, actions, changed} as JSON" },
	{ NULL },
};
static const struct client_flag validate_flags[] = {
	USER_FLAGS,
	{ "--config", "config", CLIENT_FLAG_STRING, "the daemon's config.yaml (default: the daemon user's)", "PATH" },
	{ "--json", "json", CLIENT_FLAG_BOOL, "print {command, checks: [{ok, check, fix?}], failures} as JSON" },
	{ NULL },
};
static const struct client_flag zellij_flags[] = {
	{ "--config", "config", CLIENT_FLAG_STRING, "the config.yaml naming paths.zellij_dir", "PATH" },
	{ "--print", "print", CLIENT_FLAG_BOOL, "print config.kdl instead of writing it" },
	{ NULL },
};

static const struct client_command commands[] = {
	{ "sudoers", NULL, NULL, sudoers_flags,
	  "--mode simple|insulated|strict|sandbox [--daemon-user U] [--executor-user E] [--bin PATH]", .local = 1,
	  .example = "agor setup sudoers --mode insulated > /etc/sudoers.d/agor" },
	{ "isolation", NULL, NULL, isolation_flags,
	  "[--mode insulated|strict] [--daemon-user U] [--executor-user E] [--bin PATH] [--dry-run] [--json]",
	  .local = 1, .example = "sudo agor setup isolation --mode insulated --dry-run" },
	{ "validate", NULL, NULL, validate_flags,
	  "[--mode M] [--daemon-user U] [--executor-user E] [--bin PATH] [--config PATH] [--json]", .local = 1,
	  .example = "sudo agor setup validate --daemon-user agor" },
	{ "zellij", NULL, NULL, zellij_flags, "[--config PATH] [--print]", .local = 1,
	  .example = "agor setup zellij --print" },
};

static int parse_setup_args(struct setup *s, int argc, char **argv, json_t *params)
{
	if (argc < 2)
		return applet_usage_error(&applet_setup, "missing subcommand (sudoers, isolation, validate, zellij)");
	const struct client_command *c = applet_command(&applet_setup, argc, argv);
	if (!c)
		return applet_usage_error(&applet_setup, "unknown subcommand '%s'", argv[1]);
	s->sub = c->name;
	int rc = client_parse_args("setup", c, argc - 2, argv + 2, NULL, params);
	if (rc)
		return rc;
	s->daemon_user = json_get_str(params, "daemon_user");
	s->executor_user = json_get_str(params, "executor_user");
	s->bin = json_get_str(params, "bin");
	s->config = json_get_str(params, "config");
	s->dry_run = json_is_true(json_object_get(params, "dry_run"));
	s->json = json_is_true(json_object_get(params, "json"));
	s->checks = s->json ? json_array() : NULL;
	const char *mode = json_get_str(params, "mode");
	if (mode && unix_mode_parse(mode, &s->mode) < 0)
		return applet_usage_error(&applet_setup, "--mode must be simple, insulated, strict or sandbox");
	s->mode_set = mode != NULL;
	return EXIT_OK;
}

/* `agor setup zellij [--config PATH] [--print]`: the zellij config.kdl of terminals, under paths.zellij_dir. */
static int cmd_zellij(const struct setup *s, json_t *params)
{
	const char *config_path = s->config;
	bool print = json_is_true(json_object_get(params, "print"));
	struct err e = ERR_INIT;
	struct config *cfg = config_new();
	int changed = 0, rc = config_load(cfg, &(struct config_overrides){ .config_path = config_path }, &e);
	if (rc == 0 && print) {
		struct strbuf text = STRBUF_INIT;
		zellij_config_kdl(cfg->paths.zellij_dir, &text);
		fputs(text.buf, stdout);
		strbuf_release(&text);
	} else if (rc == 0 && (rc = zellij_install_config(cfg->paths.zellij_dir, &changed, &e)) == 0) {
		_cleanup_free_ char *path = zellij_config_path(cfg->paths.zellij_dir);
		printf(changed ? "wrote %s\n" : "# nothing to change: %s is up to date\n", path);
	}
	if (rc < 0)
		fprintf(stderr, "agor setup zellij: %s\n", e.message);
	config_free(cfg);
	err_clear(&e);
	return rc < 0 ? EXIT_FAILED : EXIT_OK;
}

/* --json: {command, actions, changed} (sudoers, isolation) or {command, checks, failures} (validate). */
static void print_json_report(const struct setup *s)
{
	json_t *actions = json_array();
	for (size_t i = 0; i < s->actions.nr; i++)
		json_array_append_new(actions, json_string(s->actions.v[i]));
	json_t *j = json_pack("{s:s,s:o,s:b,s:O,s:i}", "command", s->sub, "actions", actions, "changed", s->changed,
			      "checks", s->checks, "failures", s->failures);
	char *text = json_dumps(j, JSON_COMPACT);
	printf("%s\n", text);
	free(text);
	json_decref(j);
}

static int setup_main(int argc, char **argv)
{
	struct setup s = { .actions = STRVEC_INIT, .e = ERR_INIT };
	_cleanup_json_ json_t *params = json_object();
	int status = parse_setup_args(&s, argc, argv, params);
	if (status != EXIT_OK)
		return status;
	if (!strcmp(s.sub, "zellij"))
		return cmd_zellij(&s, params);
	default_names(&s);
	int rc = !strcmp(s.sub, "sudoers")     ? cmd_sudoers(&s)
		 : !strcmp(s.sub, "isolation") ? cmd_isolation(&s)
					       : cmd_validate(&s);
	if (s.json && rc == 0)
		print_json_report(&s);
	for (size_t i = 0; !s.json && i < s.actions.nr; i++)
		printf("%s\n", s.actions.v[i]);
	if (!s.json && !strcmp(s.sub, "isolation") && rc == 0 && !s.changed)
		printf("# nothing to change: isolation already set up\n");
	if (rc < 0) {
		fprintf(stderr, "agor setup %s: %s\n", s.sub, s.e.message ? s.e.message : "failed");
		status = !strcmp(s.e.code, E_USAGE) || !strcmp(s.e.code, E_INVALID_PAYLOAD) ? EXIT_USAGE : EXIT_FAILED;
	} else
		status = s.failures ? EXIT_FAILED : EXIT_OK;
	strvec_clear(&s.actions);
	json_decref(s.checks);
	err_clear(&s.e);
	return status;
}

static const char setup_usage[] =
	"Usage: agor setup sudoers --mode simple|insulated|strict|sandbox [--daemon-user U]\n"
	"                          [--executor-user E] [--bin PATH]\n"
	"       agor setup isolation [--mode insulated|strict] [--daemon-user U]\n"
	"                          [--executor-user E] [--bin PATH] [--dry-run]\n"
	"       agor setup validate [--mode M] [--daemon-user U] [--executor-user E]\n"
	"                          [--bin PATH] [--config PATH]\n"
	"       agor setup zellij [--config PATH] [--print]\n"
	"\n"
	"sudoers    prints the /etc/sudoers.d/agor snippet: the daemon user may run\n"
	"           '<bin> executor --stdin' as the execution user(s) and '<bin> admin *'\n"
	"           as root, nothing else.\n"
	"isolation  (root) one-time, idempotent host set-up: group agor_users, the executor\n"
	"           user (insulated), /etc/sudoers.d/agor (checked by visudo -cf, installed\n"
	"           atomically, 0440), /run/agor (0750, group agor_users) and its tmpfiles.d\n"
	"           entry, /etc/agor/admin.yaml, and unix_user_mode and daemon.socket_path\n"
	"           in the daemon user's config.yaml (written as that user).\n"
	"validate   one line per check, 'ok …' or 'FAIL … — fix: …'; exit 1 when any fails.\n"
	"zellij     writes <paths.zellij_dir>/config.kdl for zellij terminals (session_serialization,\n"
	"           session_folder <paths.zellij_dir>/sessions, a quiet interface); idempotent.\n"
	"           --print shows it instead.\n"
	"\n"
	"Defaults: --daemon-user agor, --executor-user agor_executor, --bin /usr/local/bin/agor;\n"
	"isolation defaults to --mode insulated; validate reads the mode from the daemon's\n"
	"config.yaml.\n";

const struct applet applet_setup = {
	.name = "setup",
	.summary = "host set-up for Unix isolation: sudoers snippets, one-time set-up, validation",
	.usage = setup_usage,
	.main = setup_main,
	.flags = 0,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
