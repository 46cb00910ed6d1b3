/* impersonate.c — the sudo re-exec of the executor as another user (impersonate.h).
 * Never passes secrets in argv or environment, never trusts output that is not one result line. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adminsock.h"
#include "child.h"
#include "fault.h"
#include "impersonate.h"
#include "json.h"
#include "loop.h"
#include "strvec.h"
#include "banned.h"

#define RESULT_MAX_BYTES  (256u << 20)
#define STDERR_TAIL_BYTES (64u << 10)

const char *impersonate_sudo_path(void)
{
	static const char *const candidates[] = { "/usr/bin/sudo", "/bin/sudo", "/usr/local/bin/sudo" };
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

/* The name on line (a NUL-terminated /etc/passwd entry) when it is a whole entry of uid, else NULL. As libc reads
 * it: seven fields, "name:password:uid:gid:gecos:home:shell", the uid in decimal. */
static char *name_if_uid(const char *line, uid_t uid)
{
	const char *colon = strchr(line, ':');
	const char *uid_field = colon ? strchr(colon + 1, ':') : NULL;
	if (!uid_field || colon == line)
		return NULL;
	unsigned long long value = 0;
	const char *p = uid_field + 1;
	for (; *p >= '0' && *p <= '9' && value <= UINT32_MAX; p++)
		value = value * 10 + (unsigned)(*p - '0');
	if (p == uid_field + 1 || *p != ':' || value != (unsigned long long)uid)
		return NULL;
	int fields = 1;
	for (const char *c = line; *c; c++)
		fields += *c == ':';
	return fields >= 7 ? xstrndup(line, (size_t)(colon - line)) : NULL; /* the shell may hold a colon */
}

/* Streams the file through a stack buffer: the executor asks on every run, and stdio's getpwuid costs a heap page
 * mapped and unmapped for its FILE. */
int impersonate_passwd_name(const char *file, uid_t uid, char **name)
{
	char buf[4096];
	size_t have = 0;
	int fd = open(file, O_RDONLY | O_CLOEXEC), rc = 1;
	if (fd < 0)
		return 1;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			if ((*name = name_if_uid(line, uid))) {
				rc = 0;
				goto out;
			}
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		if (have == sizeof(buf) - 1)
			goto out; /* a line that does not fit: let getpwuid read it */
		memmove(buf, line, have);
	}
	buf[have] = '\0';
	if (have && (*name = name_if_uid(buf, uid))) /* a last line without a newline */
		rc = 0;
out:
	close(fd);
	return rc;
}

char *impersonate_current_user(void)
{
	char *name = NULL;
	if (impersonate_passwd_name("/etc/passwd", geteuid(), &name) == 0)
		return name;
	struct passwd *pw = getpwuid(geteuid());
	return pw ? xstrdup(pw->pw_name) : NULL;
}

char *impersonate_self_path(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

void impersonate_argv(const char *user, const char *self, struct strvec *argv)
{
	const char *sudo = impersonate_sudo_path();
	strvec_push(argv, sudo ? sudo : "/usr/bin/sudo");
	fault_sudo_preserve(argv); /* test builds only (fault.h) */
	strvec_pushv(argv, (const char *const[]){ "-n", "-u", user, "--", self, "executor", "--stdin", NULL });
}

/* A result line is one JSON object with a boolean "success", alone on stdout. */
static int valid_result_line(struct strbuf *out)
{
	strbuf_trim_trailing_newline(out);
	if (!out->len || memchr(out->buf, '\n', out->len))
		return 0;
	struct err ignored = ERR_INIT;
	json_t *j = json_parse(out->buf, out->len, &ignored);
	err_clear(&ignored);
	int ok = json_is_object(j) && json_is_boolean(json_object_get(j, "success"));
	if (j)
		json_decref(j);
	return ok;
}

static void set_environment(struct child *c)
{
	c->inherit_env = 0;
	strvec_push(&c->env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	strvec_pushf(&c->env, "%s=1", IMPERSONATED_ENV);
	const char *level = getenv("AGOR_LOG_LEVEL");
	if (level && *level)
		strvec_setenv(&c->env, "AGOR_LOG_LEVEL", level);
	fault_pass_on(&c->env); /* test builds only (fault.h): with sudo's --preserve-env (impersonate_argv) */
}

int impersonate_run(const char *user, const char *self, const char *payload, size_t len, int timeout_ms,
		    struct strbuf *line, int *exit_code, struct err *e)
{
	if (!impersonate_sudo_path())
		return err_set(e, E_IMPERSONATION_FAILED, "cannot run as %s: sudo is not installed", user);
	_cleanup_child_ struct child c;
	child_init(&c);
	impersonate_argv(user, self, &c.args);
	set_environment(&c);
	c.new_process_group = 1;
	c.timeout_ms = timeout_ms;
	struct strbuf err_tail = STRBUF_INIT;
	if (child_run(&c, payload, len, line, &err_tail, RESULT_MAX_BYTES, e) < 0) {
		strbuf_release(&err_tail);
		err_prefix(e, "running sudo");
		e->code = E_IMPERSONATION_FAILED;
		return -1;
	}
	(void)!write(2, err_tail.buf, err_tail.len);
	int rc = 0;
	if (!valid_result_line(line)) {
		strbuf_trim_trailing_newline(&err_tail);
		const char *last = strrchr(err_tail.buf, '\n');
		last = last ? last + 1 : err_tail.buf;
		rc = err_setd(
			e, E_IMPERSONATION_FAILED,
			json_pack("{s:s,s:i,s:s}", "user", user, "exitStatus", child_exit_code(&c), "stderr", last),
			"cannot run the executor as %s through sudo: %s", user,
			*last ? last : "no result line came back");
	}
	*exit_code = child_exit_code(&c);
	strbuf_release(&err_tail);
	return rc;
}

/* ---- through the privileged socket (docs/admin.md#socket) ---------------------------------------------------- */

struct via_socket {
	int sock, in, out;   /* the request's connection; our ends of the executor's stdin and stdout */
	const char *payload; /* what is left to write */
	size_t left;
	struct strbuf *line;  /* its stdout */
	struct strbuf status; /* the server's answer */
	int status_done;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* One poll round: feeds stdin, reads stdout and the answer; -1 with e on an I/O error. */
static int pump(struct via_socket *v, int timeout, struct err *e)
{
	struct pollfd p[3] = { { .fd = v->in, .events = POLLOUT },
			       { .fd = v->out, .events = POLLIN },
			       { .fd = v->status_done ? -1 : v->sock, .events = POLLIN } };
	if (poll(p, 3, timeout) < 0)
		return errno == EINTR ? 0 : err_errno(e, errno, "poll");
	if (p[0].revents) {
		ssize_t n = send(v->in, v->payload, v->left, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			v->payload += n;
			v->left -= (size_t)n;
		}
		if ((n < 0 && errno != EAGAIN && errno != EINTR) || v->left == 0)
			close_fd(&v->in); /* all written, or the executor stopped reading: EOF either way */
	}
	char buf[65536];
	if (p[1].revents) {
		ssize_t n = read(v->out, buf, sizeof(buf));
		if (n > 0 && v->line->len + (size_t)n <= RESULT_MAX_BYTES)
			strbuf_add(v->line, buf, (size_t)n);
		else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			close_fd(&v->out);
	}
	if (p[2].revents) {
		ssize_t n = read(v->sock, buf, sizeof(buf));
		if (n > 0 && v->status.len < 4096)
			strbuf_add(&v->status, buf, (size_t)n);
		else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			v->status_done = 1;
	}
	return 0;
}

/* The answer {"exitStatus":N} or a refusal {"success":false,"error":{…}}. */
static int read_answer(struct via_socket *v, const char *user, int *exit_code, struct err *e)
{
	strbuf_trim_trailing_newline(&v->status);
	struct err ignored = ERR_INIT;
	json_t *j = json_parse(v->status.buf, v->status.len, &ignored);
	err_clear(&ignored);
	json_t *status = json_object_get(j, "exitStatus"), *error = json_object_get(j, "error");
	int rc = 0;
	if (json_is_integer(status))
		*exit_code = (int)json_integer_value(status);
	else
		rc = err_setd(e, E_IMPERSONATION_FAILED, json_pack("{s:s}", "user", user),
			      "cannot run the executor as %s through the privileged socket: %s", user,
			      json_is_string(json_object_get(error, "message"))
				      ? json_string_value(json_object_get(error, "message"))
				      : "it ended without an answer");
	if (j)
		json_decref(j);
	return rc;
}

static void via_socket_close(struct via_socket *v)
{
	close_fd(&v->sock);
	close_fd(&v->in);
	close_fd(&v->out);
	strbuf_release(&v->status);
}

int impersonate_run_socket(const char *socket_path, const char *user, const char *payload, size_t len, int timeout_ms,
			   struct strbuf *line, int *exit_code, struct err *e)
{
	int in[2], out[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0)
		return err_errno(e, errno, "socketpair");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) < 0) {
		close(in[0]);
		close(in[1]);
		return err_errno(e, errno, "socketpair");
	}
	struct via_socket v = {
		.in = in[1], .out = out[0], .payload = payload, .left = len, .line = line, .status = STRBUF_INIT
	};
	v.sock = adminsock_executor(socket_path, user, (const int[]){ in[0], out[1], 2 }, e);
	close(in[0]);
	close(out[1]);
	if (v.sock < 0) {
		via_socket_close(&v);
		e->code = E_IMPERSONATION_FAILED;
		return -1;
	}
	if (!len)
		close_fd(&v.in);
	int64_t deadline = timeout_ms > 0 ? (int64_t)loop_now_ms() + timeout_ms : 0;
	int rc = 0;
	while (rc == 0 && (v.out >= 0 || !v.status_done)) {
		int64_t wait = deadline ? deadline - (int64_t)loop_now_ms() : -1;
		if (deadline && wait <= 0) { /* closing the connection makes the server kill the executor's group */
			rc = err_set(e, E_TIMEOUT, "the executor as %s timed out after %d ms and was killed", user,
				     timeout_ms);
			break;
		}
		rc = pump(&v, wait > 60000 || wait < 0 ? 60000 : (int)wait, e);
	}
	if (rc == 0)
		rc = read_answer(&v, user, exit_code, e);
	via_socket_close(&v);
	if (rc == 0 && !valid_result_line(line))
		rc = err_setd(e, E_IMPERSONATION_FAILED, json_pack("{s:s,s:i}", "user", user, "exitStatus", *exit_code),
			      "the executor as %s ended without a result line (exit status %d)", user, *exit_code);
	return rc;
}
