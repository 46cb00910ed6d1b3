/* unixperm_account.c — lookups, shadow-utils and work as another user (unixperm_account.h).
 * Never runs a shell; a tool gets a fixed argv, PATH and LC_ALL only, no stdin, a timeout. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "fsutil.h"
#include "unixperm.h"
#include "unixperm_account.h"
#include "banned.h"

#define TOOL_TIMEOUT_MS 120000
#define TOOL_ENV_PATH	"PATH=/usr/sbin:/usr/bin:/sbin:/bin"

/* ---- accounts -------------------------------------------------------------------------------- */

int unixperm_user_lookup(const char *name, struct unixperm_user *u, struct err *e)
{
	memset(u, 0, sizeof(*u));
	errno = 0;
	struct passwd *pw = getpwnam(name);
	if (!pw) {
		if (errno == 0 || errno == ENOENT || errno == ESRCH || errno == EBADF || errno == EPERM)
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
		return err_set(e, E_NOT_FOUND, "no Unix user %s (fix: sudo agor admin setup-unix-user %s)", name, name);
	if (u->uid == 0) {
		unixperm_user_release(u);
		return err_set(e, E_PERMISSION_DENIED, "refusing %s: uid 0 is never an agor user", name);
	}
	if (!unixperm_user_in_group(u, UNIXPERM_USERS_GROUP)) {
		unixperm_user_release(u);
		return err_set(e, E_PERMISSION_DENIED,
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
		if (sscanf(line, " %15s %lu", key, &v) == 2 && !strcmp(key, "UID_MIN") && v > 0 && v < 1000000)
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
		rc = err_set(e, E_SYSTEM, "%s failed (%s %d)%s%s", base, c.timed_out ? "timed out, status" : "exit",
			     child_exit_code(&c), se.len ? ": " : "", se.buf);
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
	const char *argv_system[] = { "/usr/sbin/groupadd", "--system", "--", group, NULL };
	const char *argv_normal[] = { "/usr/sbin/groupadd", "--", group, NULL };
	return unixperm_run_tool(system ? argv_system : argv_normal, NULL, e);
}

int unixperm_groupdel(const char *group, struct err *e)
{
	if (unixperm_check_managed_group(group, e) < 0)
		return -1;
	const char *argv[] = { "/usr/sbin/groupdel", "--", group, NULL };
	return unixperm_run_tool(argv, NULL, e);
}

int unixperm_group_add_member(const char *group, const char *user, struct err *e)
{
	if (strcmp(group, UNIXPERM_USERS_GROUP) && unixperm_check_managed_group(group, e) < 0)
		return -1;
	if (unixperm_check_user_name("unix-user", user, e) < 0)
		return -1;
	const char *argv[] = { "/usr/bin/gpasswd", "-a", user, group, NULL };
	return unixperm_run_tool(argv, NULL, e);
}

int unixperm_group_remove_member(const char *group, const char *user, struct err *e)
{
	if (check_group_and_user(group, user, e) < 0)
		return -1;
	const char *argv[] = { "/usr/bin/gpasswd", "-d", user, group, NULL };
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
	const char *argv[] = { "/usr/bin/gpasswd", "-M", list.buf, group, NULL };
	int rc = unixperm_run_tool(argv, NULL, e);
	strbuf_release(&list);
	return rc;
}

int unixperm_useradd_login(const char *user, struct err *e)
{
	if (unixperm_check_user_name("unix-user", user, e) < 0)
		return -1;
	const char *argv[] = { "/usr/sbin/useradd", "--create-home",	  "--user-group", "--shell", "/bin/bash",
			       "--groups",	    UNIXPERM_USERS_GROUP, "--",		  user,	     NULL };
	return unixperm_run_tool(argv, NULL, e);
}

int unixperm_useradd_system(const char *user, const char *home, struct err *e)
{
	if (unixperm_check_user_name("unix-user", user, e) < 0 || unixperm_check_clean_path("home", home, e) < 0)
		return -1;
	const char *argv[] = { "/usr/sbin/useradd",
			       "--system",
			       "--create-home",
			       "--home-dir",
			       home,
			       "--shell",
			       "/usr/sbin/nologin",
			       "--user-group",
			       "--",
			       user,
			       NULL };
	return unixperm_run_tool(argv, NULL, e);
}

int unixperm_userdel(const char *user, bool remove_home, struct err *e)
{
	if (unixperm_check_user_name("unix-user", user, e) < 0)
		return -1;
	const char *argv_remove[] = { "/usr/sbin/userdel", "--remove", "--", user, NULL };
	const char *argv_keep[] = { "/usr/sbin/userdel", "--", user, NULL };
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
	static const char *const codes[] = {
		E_INVALID_PAYLOAD, E_NOT_FOUND, E_PERMISSION_DENIED, E_PATH_OUTSIDE_DATA_HOME, E_ALREADY_EXISTS,
		E_CONFIG,	   E_SYSTEM,	E_INTERNAL
	};
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
		return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0
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

int unixperm_run_as_user(const struct unixperm_user *u, int (*fn)(void *arg, struct strbuf *out, struct err *e),
			 void *arg, struct strbuf *out, struct err *e)
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
	int rc = n < 0 ? err_errno(e, errno, "read helper reply") : parse_reply(&reply, status, out, e);
	strbuf_release(&reply);
	return rc;
}
