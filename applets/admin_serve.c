/* admin_serve.c — `agor admin serve`: the root end of the privileged socket (docs/admin.md#socket). The daemon's
 * typed requests — an admin operation of adminops' table, or an executor as an execution user — run here, so the
 * daemon itself needs no sudo, no setuid and no capability. Never serves a peer other than the daemon user, never
 * starts anything as root or as a user --run-as does not name, never passes the request's environment on.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adminsock.h"
#include "admin_serve.h"
#include "applet.h"
#include "cgroup.h"
#include "child.h"
#include "client.h"
#include "impersonate.h"
#include "json.h"
#include "unixperm.h"
#include "unixperm_account.h"
#include "banned.h"

#define REQUEST_TIMEOUT_S 10   /* a connection must have sent its whole request by then */
#define CANCEL_GRACE_MS	  5000 /* SIGTERM → SIGKILL when the daemon gives an executor up (child.c's default) */
#define MAX_GROUPS	  256

struct serve {
	const char *daemon_user, *run_as, *socket_path;
	uid_t daemon_uid;
	gid_t daemon_gid;
	char *self; /* this binary: what executors run */
};

static const char serve_usage[] =
	"Usage: agor admin serve --daemon-user USER --run-as USER|%GROUP [--socket PATH]\n"
	"The root end of the privileged socket (docs/admin.md#socket): the daemon user USER sends it admin\n"
	"operations and executor starts instead of running sudo. --run-as names the execution users it may start\n"
	"executors as: one user (insulated: agor_executor) or %GROUP's members (strict: %agor_users), never root\n"
	"nor the daemon user. Without --socket, the socket comes from systemd (agor-admin.socket); with it, serve\n"
	"makes PATH itself (root:USER's group, 0660).\n";

static void PRINTF_LIKE(1, 2) say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("agor admin serve: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The refusal line, then what the peer still sends is read and dropped for a moment: closing with unread bytes
 * would reset the connection and lose the line. */
static int refuse(int conn, struct err *e)
{
	say("refused: %s", e->message ? e->message : "?");
	adminsock_refuse(conn, e);
	err_clear(e);
	shutdown(conn, SHUT_WR);
	struct timeval tv = { .tv_usec = 200000 };
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char buf[4096];
	for (size_t total = 0; total < (1u << 20);) {
		ssize_t n = read(conn, buf, sizeof(buf));
		if (n <= 0)
			break;
		total += (size_t)n;
	}
	return EXIT_FAILED;
}

/* ---- admin operations ---------------------------------------------------------------------------------------- */

static int serve_admin(int conn, struct adminsock_request *r)
{
	struct admin_call call;
	struct err e = ERR_INIT;
	if (adminops_parse((int)r->argv.nr, r->argv.v, &call, &e) < 0)
		return refuse(conn, &e);
	if (call.root_config) {
		err_set(&e, E_PERMISSION_DENIED,
			"--root-config is refused over the socket: admin.yaml says where admin acts");
		return refuse(conn, &e);
	}
	call.json = 1;
	say("%s", adminops[call.op].name);
	fflush(stdout);
	if (dup2(conn, 1) < 0)
		return EXIT_FAILED;
	int status = admin_run_call(&call);
	fflush(stdout);
	return status;
}

/* ---- executors ----------------------------------------------------------------------------------------------- */

/* The rule sudoers would grant: the --run-as user or a member of its group; never root, never the daemon user. */
static int check_run_as(const struct serve *sv, const char *name, struct unixperm_user *u, struct err *e)
{
	if (!unixperm_user_name_valid(name))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "field", "user"),
				"user: '%.40s' is not a user name", name);
	int found = unixperm_user_lookup(name, u, e);
	if (found <= 0)
		return found < 0 ? -1 : err_set(e, E_NOT_FOUND, "user: no such user '%s'", name);
	if (u->uid == 0)
		return err_set(e, E_PERMISSION_DENIED, "user: %s has uid 0: executors never run as root", name);
	if (u->uid == sv->daemon_uid)
		return err_set(e, E_PERMISSION_DENIED, "user: %s is the daemon user, which runs its executors itself",
			       name);
	bool allowed = sv->run_as[0] == '%' ? unixperm_user_in_group(u, sv->run_as + 1) : !strcmp(sv->run_as, name);
	if (!allowed)
		return err_set(e, E_PERMISSION_DENIED, "user: %s is not an execution user here (--run-as %s)", name,
			       sv->run_as);
	return 0;
}

/* The executors' leaf of the user's delegated subtree (cgroup v2) an executor starts in. */
struct executor_leaf {
	char *dir;   /* NULL: no leaf (cgroup v1, or none could be made) */
	char *procs; /* its cgroup.procs, for the child's move when it was not cloned in */
	int dir_fd;  /* the leaf, for clone3's CLONE_INTO_CGROUP; -1 when it cannot be opened */
	int born_in; /* the child was cloned into it (child.c sets it before the child exists) */
};

/* child.c's before_exec, still as root: into the leaf, unless the executor was born there. A write to
 * cgroup.procs takes the kernel's global threadgroup lock, whose first writer after a quiet spell waits out an RCU
 * grace period (8-14 ms per start here); cloning into the group does not. */
static int join_leaf(void *arg)
{
	const struct executor_leaf *leaf = arg;
	return leaf->born_in || cgroup_join_procs(leaf->procs) == 0 ? 0 : -1;
}

static void start_in_leaf(struct child *c, struct executor_leaf *leaf)
{
	leaf->procs = xasprintf("%s/cgroup.procs", leaf->dir);
	leaf->dir_fd = open(leaf->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	c->clone_cgroup_fd = leaf->dir_fd;
	c->born_in_cgroup = &leaf->born_in;
	c->before_exec = join_leaf;
	c->before_exec_arg = leaf;
}

static int prepare_executor(const struct serve *sv, const struct unixperm_user *u, const int *fds, gid_t *groups,
			    struct child *c, struct executor_leaf *leaf, struct err *e)
{
	int ngroups = MAX_GROUPS;
	if (getgrouplist(u->name, u->gid, groups, &ngroups) < 0)
		return err_set(e, E_IMPERSONATION_FAILED, "%s is in more than %d groups", u->name, MAX_GROUPS);
	struct err cg = ERR_INIT;
	if (cgroup_executor_leaf(CGROUP_DEFAULT_ROOT, CGROUP_DEFAULT_PARENT, u->name, u->uid, u->gid, &leaf->dir, &cg) <
	    0)
		dprintf(fds[2], "agor admin serve: the executor runs outside a delegated cgroup: %s\n", cg.message);
	err_clear(&cg);
	strvec_pushv(&c->args, (const char *const[]){ sv->self, "executor", "--stdin", NULL });
	c->inherit_env = 0;
	strvec_push(&c->env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	strvec_pushf(&c->env, "HOME=%s", u->home);
	strvec_pushf(&c->env, "USER=%s", u->name);
	strvec_pushf(&c->env, "LOGNAME=%s", u->name);
	strvec_push(&c->env, "LANG=C.UTF-8");
	strvec_pushf(&c->env, "%s=1", IMPERSONATED_ENV);
	c->stdin_io = c->stdout_io = c->stderr_io = CHILD_IO_FD;
	c->stdin_fd = fds[0];
	c->stdout_fd = fds[1];
	c->stderr_fd = fds[2];
	c->set_ids = 1;
	c->uid = u->uid;
	c->gid = u->gid;
	c->groups = groups;
	c->ngroups = (size_t)ngroups;
	c->new_process_group = 1;
	c->cwd = "/";
	if (leaf->dir)
		start_in_leaf(c, leaf);
	return 0;
}

/* Waits for the executor while watching the connection: the daemon closing it (or sending anything) gives the
 * executor up, and its whole process group is killed. 1 when that happened. */
static int watch(struct child *c, int conn)
{
	for (;;) {
		struct pollfd p[2] = { { .fd = conn, .events = POLLIN | POLLRDHUP },
				       { .fd = c->pidfd, .events = POLLIN } };
		int n = poll(p, c->pidfd >= 0 ? 2 : 1, c->pidfd >= 0 ? -1 : 100);
		if (n < 0 && errno != EINTR)
			return 0;
		siginfo_t si = { 0 };
		if (p[1].revents ||
		    (c->pidfd < 0 && waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		     si.si_pid == c->pid))
			return 0;
		if (p[0].revents)
			return 1;
	}
}

static void give_up(struct child *c)
{
	child_kill_group(c, SIGTERM);
	struct pollfd p = { .fd = c->pidfd, .events = POLLIN };
	if (c->pidfd >= 0)
		poll(&p, 1, CANCEL_GRACE_MS);
	else
		usleep(CANCEL_GRACE_MS * 1000);
	child_kill_group(c, SIGKILL); /* the leader is not reaped yet: its group id is still its own */
}

static int serve_executor(const struct serve *sv, int conn, struct adminsock_request *r)
{
	struct err e = ERR_INIT;
	struct unixperm_user u = { 0 };
	gid_t groups[MAX_GROUPS];
	struct executor_leaf leaf = { .dir_fd = -1 };
	_cleanup_child_ struct child c;
	child_init(&c);
	int status = EXIT_FAILED;
	if (check_run_as(sv, r->user, &u, &e) < 0 || prepare_executor(sv, &u, r->fds, groups, &c, &leaf, &e) < 0 ||
	    child_start(&c, &e) < 0) {
		status = refuse(conn, &e);
		goto out;
	}
	adminsock_request_release(r); /* ours closed: the executor's stdout reaches EOF when it ends */
	say("executor as %s: pid %d", u.name, (int)c.pid);
	int cancelled = watch(&c, conn);
	if (cancelled) {
		say("executor as %s (pid %d): the daemon gave it up; its process group is killed", u.name, (int)c.pid);
		give_up(&c);
	}
	child_wait(&c, NULL, &e);
	err_clear(&e);
	adminsock_reply(conn, json_pack("{s:i}", "exitStatus", child_exit_code(&c)));
	status = EXIT_OK;
out:
	unixperm_user_release(&u);
	if (leaf.dir_fd >= 0)
		close(leaf.dir_fd);
	free(leaf.dir);
	free(leaf.procs);
	return status;
}

/* ---- the server ---------------------------------------------------------------------------------------------- */

static int handle(const struct serve *sv, int conn)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct err e = ERR_INIT;
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return err_errno(&e, errno, "SO_PEERCRED"), refuse(conn, &e);
	if (cred.uid != sv->daemon_uid) {
		err_set(&e, E_PERMISSION_DENIED,
			"only %s (uid %u) may use this socket; the peer (pid %d) runs as uid %u", sv->daemon_user,
			(unsigned)sv->daemon_uid, (int)cred.pid, (unsigned)cred.uid);
		return refuse(conn, &e);
	}
	struct timeval tv = { .tv_sec = REQUEST_TIMEOUT_S };
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct adminsock_request r;
	if (adminsock_read_request(conn, &r, &e) < 0)
		return refuse(conn, &e);
	tv.tv_sec = 0;
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	int status = r.op == ADMINSOCK_ADMIN ? serve_admin(conn, &r) : serve_executor(sv, conn, &r);
	adminsock_request_release(&r);
	return status;
}

/* --socket PATH: made here, root:the daemon user's group, 0660; replaces only a stale socket. */
static int listen_on_path(const struct serve *sv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	if (strlen(sv->socket_path) >= sizeof(sa.sun_path) || sv->socket_path[0] != '/')
		return say("--socket: '%s' is not an absolute socket path", sv->socket_path), -1;
	if (lstat(sv->socket_path, &st) == 0 && !S_ISSOCK(st.st_mode))
		return say("--socket: %s exists and is not a socket", sv->socket_path), -1;
	unlink(sv->socket_path);
	memcpy(sa.sun_path, sv->socket_path, strlen(sv->socket_path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	mode_t old = umask(0177);
	int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0 || chown(sv->socket_path, 0, sv->daemon_gid) < 0 || chmod(sv->socket_path, 0660) < 0 ||
	    listen(fd, 64) < 0) {
		say("--socket %s: %s", sv->socket_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The socket systemd passes (LISTEN_FDS=1 for this pid: descriptor 3). */
static int listen_from_systemd(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (!pid || !fds || atol(pid) != (long)getpid() || strcmp(fds, "1"))
		return say("no socket: give --socket PATH, or start it from agor-admin.socket (LISTEN_FDS=1)"), -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	int flags = fcntl(3, F_GETFD);
	if (flags < 0 || fcntl(3, F_SETFD, flags | FD_CLOEXEC) < 0)
		return say("descriptor 3: %s", strerror(errno)), -1;
	return 3;
}

static void serve_forever(const struct serve *sv, int lfd)
{
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		if (poll(&p, 1, 1000) <= 0)
			continue;
		int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			continue;
		pid_t pid = fork();
		if (pid == 0) {
			close(lfd);
			_exit(handle(sv, conn));
		}
		if (pid < 0)
			say("fork: %s", strerror(errno));
		close(conn);
	}
}

static const struct client_flag serve_flags[] = {
	{ "--daemon-user", "daemon_user", CLIENT_FLAG_STRING, "the only user who may connect (the daemon's)", "USER" },
	{ "--run-as", "run_as", CLIENT_FLAG_STRING, "the execution user, or %GROUP's members, executors may run as",
	  "USER|%GROUP" },
	{ "--socket", "socket", CLIENT_FLAG_STRING, "make this socket instead of taking systemd's", "PATH" },
	{ NULL },
};
static const struct client_command serve_command = {
	"serve",
	NULL,
	NULL,
	serve_flags,
	"--daemon-user USER --run-as USER|%GROUP [--socket PATH]",
	.local = 1,
	.example = "agor admin serve --daemon-user agor --run-as agor_executor "
		   "--socket /run/agor-admin.sock"
};

static int parse_args(int argc, char **argv, struct serve *sv, json_t *params)
{
	if (client_parse_args("admin serve", &serve_command, argc - 1, argv + 1, NULL, params))
		return -1;
	sv->daemon_user = json_string_value(json_object_get(params, "daemon_user"));
	sv->run_as = json_string_value(json_object_get(params, "run_as"));
	sv->socket_path = json_string_value(json_object_get(params, "socket"));
	if (!sv->daemon_user || !sv->run_as)
		return say("--daemon-user and --run-as are required\n%s", serve_usage), -1;
	const char *who = sv->run_as[0] == '%' ? sv->run_as + 1 : sv->run_as;
	if (!unixperm_user_name_valid(who) || !strcmp(who, "root"))
		return say("--run-as: '%s' must name a user or %%GROUP other than root", sv->run_as), -1;
	struct unixperm_user u;
	struct err e = ERR_INIT;
	if (!unixperm_user_name_valid(sv->daemon_user) || unixperm_user_lookup(sv->daemon_user, &u, &e) != 1) {
		err_clear(&e);
		return say("--daemon-user: no such user '%s'", sv->daemon_user), -1;
	}
	sv->daemon_uid = u.uid;
	sv->daemon_gid = u.gid;
	unixperm_user_release(&u);
	if (sv->daemon_uid == 0)
		return say("--daemon-user: %s has uid 0; the daemon never runs as root here", sv->daemon_user), -1;
	return 0;
}

static void print_help(void)
{
	fputs(serve_usage, stdout);
	fputs("\nOptions:\n", stdout);
	client_print_flags(stdout, serve_flags);
	printf("\nExample:\n  %s\n", serve_command.example);
}

int admin_serve_main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return print_help(), EXIT_OK;
	if (getenv("SUDO_UID") || getenv("SUDO_USER") || getenv("SUDO_COMMAND") || getenv("SUDO_GID"))
		return say("refused through sudo: it runs from a root service (agor-admin.service), started by root"),
		       EXIT_FAILED;
	struct serve sv = { 0 };
	_cleanup_json_ json_t *params = json_object(); /* sv's strings point into it */
	if (parse_args(argc, argv, &sv, params) < 0)
		return EXIT_USAGE;
	if (!(sv.self = impersonate_self_path()))
		return say("cannot find this executable's path (/proc/self/exe)"), EXIT_FAILED;
	int lfd = sv.socket_path ? listen_on_path(&sv) : listen_from_systemd();
	if (lfd < 0)
		return free(sv.self), EXIT_FAILED;
	signal(SIGPIPE, SIG_IGN); /* an answer to a daemon that left fails with EPIPE; executors get SIG_DFL back */
	say("serving %s for %s; executors as %s", sv.socket_path ? sv.socket_path : "systemd's socket", sv.daemon_user,
	    sv.run_as);
	serve_forever(&sv, lfd);
	return EXIT_OK;
}
