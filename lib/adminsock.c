/* adminsock.c — the privileged socket's requests and answers, both sides (adminsock.h).
 * Never keeps a descriptor of a refused request, never reads past the one line a connection may carry. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "adminsock.h"
#include "fdpass.h"
#include "json.h"
#include "banned.h"

static void close_fds(int *fds, size_t *nfds)
{
	for (size_t i = 0; i < *nfds; i++)
		close(fds[i]);
	*nfds = 0;
}

/* The request line: descriptors only with the first chunk, nothing after the "\n". */
static int read_request_line(int sock, struct strbuf *line, struct adminsock_request *r, struct err *e)
{
	char buf[4096];
	for (int first = 1;; first = 0) {
		int extra[FDPASS_MAX_FDS];
		size_t nextra = 0;
		ssize_t n = fdpass_recv(sock, buf, sizeof(buf), first ? r->fds : extra,
					first ? ADMINSOCK_NFDS + 1 : FDPASS_MAX_FDS, first ? &r->nfds : &nextra);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_errno(e, errno, "reading the request");
		if (nextra) {
			close_fds(extra, &nextra);
			return err_set(e, E_INVALID_PAYLOAD, "descriptors may come only with the request's first byte");
		}
		if (n == 0)
			return err_set(e, E_INVALID_PAYLOAD,
				       "truncated request: the connection ended before its \"\\n\"");
		const char *nl = memchr(buf, '\n', (size_t)n);
		size_t take = nl ? (size_t)(nl - buf) : (size_t)n;
		if (line->len + take >= ADMINSOCK_MAX_REQUEST)
			return err_set(e, E_INVALID_PAYLOAD, "request longer than %u bytes", ADMINSOCK_MAX_REQUEST);
		strbuf_add(line, buf, take);
		if (nl && take + 1 != (size_t)n)
			return err_set(e, E_INVALID_PAYLOAD, "one request per connection: bytes follow its line");
		if (nl)
			return 0;
	}
}

/* Exactly the keys named in allowed (NULL-terminated), op among them. */
static int check_keys(json_t *j, const char *const *allowed, struct err *e)
{
	const char *key = json_unknown_key(j, allowed);
	if (key)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "field", key),
				"unknown field '%s' in the request", key);
	for (size_t i = 0; allowed[i]; i++)
		if (!json_object_get(j, allowed[i]))
			return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "field", allowed[i]),
					"the request lacks '%s'", allowed[i]);
	return 0;
}

/* A string without NUL, not empty. */
static const char *plain_string(json_t *v)
{
	if (!json_is_string(v) || !json_string_length(v) || strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

static int parse_admin(json_t *j, struct adminsock_request *r, struct err *e)
{
	if (check_keys(j, (const char *const[]){ "op", "argv", NULL }, e) < 0)
		return -1;
	json_t *argv = json_object_get(j, "argv"), *v;
	size_t n = json_array_size(argv), i;
	if (!json_is_array(argv) || n < 1 || n > ADMINSOCK_MAX_ARGS)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "field", "argv"),
				"argv: expected an array of 1 to %d strings", ADMINSOCK_MAX_ARGS);
	r->op = ADMINSOCK_ADMIN;
	strvec_push(&r->argv, "admin");
	json_array_foreach(argv, i, v)
	{
		const char *s = plain_string(v);
		if (!s)
			return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "field", "argv"),
					"argv[%zu]: expected a non-empty string without NUL", i);
		strvec_push(&r->argv, s);
	}
	if (r->nfds)
		return err_set(e, E_INVALID_PAYLOAD, "an admin request carries no descriptor (got %zu)", r->nfds);
	return 0;
}

static int parse_executor(json_t *j, struct adminsock_request *r, struct err *e)
{
	if (check_keys(j, (const char *const[]){ "op", "user", NULL }, e) < 0)
		return -1;
	const char *user = plain_string(json_object_get(j, "user"));
	if (!user)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "field", "user"),
				"user: expected a user name");
	r->op = ADMINSOCK_EXECUTOR;
	r->user = xstrdup(user);
	if (r->nfds != ADMINSOCK_NFDS)
		return err_set(e, E_INVALID_PAYLOAD,
			       "an executor request carries exactly %d descriptors (stdin, stdout, stderr), got %s%zu",
			       ADMINSOCK_NFDS, r->nfds > ADMINSOCK_NFDS ? "more than " : "",
			       r->nfds > ADMINSOCK_NFDS ? (size_t)ADMINSOCK_NFDS : r->nfds);
	return 0;
}

static int parse_request(const struct strbuf *line, struct adminsock_request *r, struct err *e)
{
	json_t *j = json_parse(line->buf, line->len, e);
	if (!j)
		return err_set(e, E_INVALID_PAYLOAD, "the request is not JSON");
	int rc;
	const char *op = json_is_object(j) ? json_string_value(json_object_get(j, "op")) : NULL;
	if (!op)
		rc = err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "field", "op"),
			      "the request must be an object with a string 'op'");
	else if (!strcmp(op, "admin"))
		rc = parse_admin(j, r, e);
	else if (!strcmp(op, "executor"))
		rc = parse_executor(j, r, e);
	else
		rc = err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "field", "op"),
			      "op: expected admin or executor, got '%.40s'", op);
	json_decref(j);
	return rc;
}

int adminsock_read_request(int sock, struct adminsock_request *r, struct err *e)
{
	memset(r, 0, sizeof(*r));
	strvec_init(&r->argv);
	struct strbuf line = STRBUF_INIT;
	int rc = read_request_line(sock, &line, r, e);
	if (rc == 0) /* fdpass_recv kept one more descriptor than any op takes, so "too many" shows */
		rc = parse_request(&line, r, e);
	strbuf_release(&line);
	if (rc < 0)
		adminsock_request_release(r);
	return rc;
}

void adminsock_request_release(struct adminsock_request *r)
{
	close_fds(r->fds, &r->nfds);
	strvec_clear(&r->argv);
	free(r->user);
	r->user = NULL;
}

int adminsock_reply(int sock, json_t *j)
{
	int rc = json_write_line(sock, j);
	json_decref(j);
	return rc;
}

int adminsock_refuse(int sock, const struct err *e)
{
	return adminsock_reply(sock, json_pack("{s:b,s:o}", "success", 0, "error", err_to_json(e)));
}

int adminsock_connect(const char *path, struct err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return err_set(e, E_CONFIG, "execution.privileged_socket: '%s' is too long for a socket path", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_errno(e, errno, "socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int saved = errno;
		close(fd);
		err_errno(e, saved,
			  "cannot reach the privileged socket %s (execution.privileged_socket; is agor-admin.socket "
			  "running?)",
			  path);
		e->code = E_ISOLATION_UNAVAILABLE;
		return -1;
	}
	return fd;
}

static int send_request(int sock, json_t *req, const int *fds, size_t nfds, struct err *e)
{
	char *text = json_to_compact(req);
	json_decref(req);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, text);
	strbuf_addch(&sb, '\n');
	free(text);
	int rc = fdpass_send_fds(sock, sb.buf, sb.len, fds, nfds, e);
	strbuf_release(&sb);
	return rc;
}

int adminsock_read_line(int sock, struct strbuf *line, size_t max, struct err *e)
{
	char c;
	for (;;) {
		ssize_t n = read(sock, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return err_set(e, E_TIMEOUT, "the privileged socket did not answer in time");
		if (n < 0)
			return err_errno(e, errno, "reading the privileged socket's answer");
		if (n == 0 || c == '\n')
			return 0;
		if (line->len >= max)
			return err_set(e, E_INTERNAL, "the privileged socket's answer is longer than %zu bytes", max);
		strbuf_addch(line, c);
	}
}

int adminsock_admin(const char *path, const char *const *argv, int timeout_ms, struct strbuf *line, struct err *e)
{
	int sock = adminsock_connect(path, e);
	if (sock < 0)
		return -1;
	if (timeout_ms > 0) {
		struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
		setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	json_t *args = json_array();
	for (size_t i = 0; argv[i]; i++)
		json_array_append_new(args, json_string(argv[i]));
	int rc = send_request(sock, json_pack("{s:s,s:o}", "op", "admin", "argv", args), NULL, 0, e);
	if (rc == 0)
		rc = adminsock_read_line(sock, line, 1u << 20, e);
	close(sock);
	return rc;
}

int adminsock_executor(const char *path, const char *user, const int fds[ADMINSOCK_NFDS], struct err *e)
{
	int sock = adminsock_connect(path, e);
	if (sock < 0)
		return -1;
	if (send_request(sock, json_pack("{s:s,s:s}", "op", "executor", "user", user), fds, ADMINSOCK_NFDS, e) < 0) {
		close(sock);
		return -1;
	}
	return sock;
}
