/* approvals_socket.c — the ask protocol of approvals_socket.h: signed requests, checked peers, one UI queue.
 * Never reads from a peer before its uid and rate are checked; never waits on a client without a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "approvals_socket.h"
#include "crypto.h"
#include "json.h"
#include "strbuf.h"
#include "banned.h"

static const char *const answer_names[] = { "allow-once", "allow-always", "deny" };

const char *appr_answer_name(enum appr_answer a)
{
	return answer_names[a];
}

int appr_answer_parse(const char *s)
{
	if (!strcmp(s, "o") || !strcmp(s, "once") || !strcmp(s, "allow-once"))
		return APPR_ANSWER_ALLOW_ONCE;
	if (!strcmp(s, "a") || !strcmp(s, "always") || !strcmp(s, "allow-always"))
		return APPR_ANSWER_ALLOW_ALWAYS;
	if (!strcmp(s, "d") || !strcmp(s, "deny"))
		return APPR_ANSWER_DENY;
	return -1;
}

static long long now_ms(int clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void random_hex(size_t bytes, char *out)
{
	uint8_t raw[32];
	_cleanup_err_ struct err e = ERR_INIT;
	if (crypto_random(raw, bytes, &e) < 0)
		abort(); /* the kernel refusing randomness leaves nothing safe to do */
	crypto_hex(raw, bytes, out);
}

/* ---- messages -------------------------------------------------------------------------------- */

json_t *appr_request_object(const struct appr_ask_request *r)
{
	json_t *argv = json_array();
	for (size_t i = 0; r->argv[i]; i++) {
		json_t *word = json_string(r->argv[i]);
		if (!word) { /* not UTF-8: it could not be shown faithfully */
			json_decref(argv);
			return NULL;
		}
		json_array_append_new(argv, word);
	}
	json_t *o = json_pack("{s:o,s:s,s:s,s:s?}", "argv", argv, "cwd", r->cwd, "agentId", r->agent, "resolvedPath",
			      r->resolved);
	if (o && r->executables)
		json_object_set(o, "executables", r->executables);
	if (o && r->allow_always)
		json_object_set(o, "allowAlways", r->allow_always);
	if (o && r->allow_always_refused)
		json_object_set_new(o, "allowAlwaysRefused", json_string(r->allow_always_refused));
	return o;
}

static void hmac_hex(const char *token, const char *msg, size_t len, char hex_out[65])
{
	uint8_t mac[CRYPTO_HMAC_SHA256_LEN];
	crypto_hmac_sha256(token, strlen(token), msg, len, mac);
	crypto_hex(mac, sizeof(mac), hex_out);
}

void appr_request_hmac(const char *token, const char *nonce, long long ts, const json_t *request, char hex_out[65])
{
	char *canonical = json_dumps(request, JSON_COMPACT | JSON_SORT_KEYS);
	struct strbuf msg = STRBUF_INIT;
	strbuf_addf(&msg, "%s:%lld:%s", nonce, ts, canonical ? canonical : "");
	hmac_hex(token, msg.buf, msg.len, hex_out);
	free(canonical);
	strbuf_release(&msg);
}

static void decision_hmac(const char *token, const char *nonce, const char *id, const char *decision, char hex_out[65])
{
	struct strbuf msg = STRBUF_INIT;
	strbuf_addf(&msg, "decision:%s:%s:%s", nonce, id, decision);
	hmac_hex(token, msg.buf, msg.len, hex_out);
	strbuf_release(&msg);
}

json_t *appr_request_envelope(const char *token, const char *id, const char *nonce, long long ts, json_t *request)
{
	char mac[65];
	appr_request_hmac(token, nonce, ts, request, mac);
	return json_pack("{s:s,s:s,s:s,s:I,s:s,s:o}", "type", "request", "id", id, "nonce", nonce, "ts", (json_int_t)ts,
			 "hmac", mac, "request", request);
}

json_t *appr_executables_json(const struct appr_analysis *a)
{
	json_t *out = json_array();
	for (size_t i = 0; i < a->nexes; i++) {
		const struct appr_identity *id = &a->exes[i].id;
		struct passwd *pw = getpwuid(id->uid);
		char owner[64], mode[8];
		if (pw)
			snprintf(owner, sizeof(owner), "%s", pw->pw_name);
		else
			snprintf(owner, sizeof(owner), "%u", (unsigned)id->uid);
		snprintf(mode, sizeof(mode), "%04o", (unsigned)(id->mode & 07777));
		json_array_append_new(out,
				      json_pack("{s:s%,s:s,s:s,s:s}", "path", a->exes[i].path, strlen(a->exes[i].path),
						"owner", owner, "mode", mode, "sha256", id->sha256));
	}
	return out;
}

int appr_executables_check(const json_t *exes, struct err *e)
{
	size_t i;
	json_t *v;
	if (!json_is_array(exes) || json_array_size(exes) > APPR_EXECUTABLES_MAX)
		return err_set(e, E_INVALID_PAYLOAD, "executables must be an array of at most %d entries",
			       APPR_EXECUTABLES_MAX);
	json_array_foreach(exes, i, v)
	{
		if (!json_is_object(v) || json_object_size(v) != 4 || !json_get_str(v, "path") ||
		    !json_get_str(v, "owner") || !json_get_str(v, "mode") || !json_get_str(v, "sha256"))
			return err_set(e, E_INVALID_PAYLOAD,
				       "executables.%zu must be {path, owner, mode, sha256} strings", i);
	}
	return 0;
}

/* The code point of the UTF-8 sequence at s (n bytes), for the sequences display_escape looks at. */
static unsigned code_point(const unsigned char *s, size_t n)
{
	if (n == 2)
		return ((s[0] & 0x1fu) << 6) | (s[1] & 0x3fu);
	if (n == 3)
		return ((s[0] & 0x0fu) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
	return 0;
}

/* Characters that would let text look like something else on a terminal: C1 controls, bidi embeddings,
 * overrides and isolates, zero-width and invisible marks, line and paragraph separators. */
static int deceptive(unsigned cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || cp == 0xad || (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) || cp == 0xfeff;
}

void appr_display_escape(const char *text, struct strbuf *out)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t len = strlen(text);
	for (size_t k = 0; k < len;) {
		unsigned char c = s[k];
		if (c < 0x20 || c == 0x7f) {
			strbuf_addf(out, "\\x%02x", c);
			k++;
			continue;
		}
		size_t n = c < 0x80 ? 1 : utf8_sequence_length(s + k, len - k);
		if (n == 0) {
			strbuf_addf(out, "\\x%02x", c);
			k++;
			continue;
		}
		unsigned cp = code_point(s + k, n);
		if (n > 1 && deceptive(cp))
			strbuf_addf(out, "\\u{%04x}", cp);
		else
			strbuf_add(out, text + k, n);
		k += n;
	}
}

void appr_format_argv(const json_t *argv, struct strbuf *out)
{
	size_t i;
	json_t *w;
	json_array_foreach(argv, i, w)
	{
		const char *s = json_string_value(w);
		if (i)
			strbuf_addch(out, ' ');
		struct strbuf q = STRBUF_INIT;
		if (s && *s &&
		    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			      "/._-=:,+@%") == strlen(s))
			strbuf_addstr(&q, s);
		else
			strbuf_add_shell_quoted(&q, s ? s : "");
		appr_display_escape(q.buf, out);
		strbuf_release(&q);
	}
}

/* ---- client ---------------------------------------------------------------------------------- */

static int connect_socket(const char *path, struct err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return err_set(e, E_NOT_FOUND, "socket path %s is too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_errno(e, errno, "socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int saved = errno;
		close(fd);
		err_errno(e, saved, "no approval UI reachable at %s", path);
		e->code = E_NOT_FOUND;
		return -1;
	}
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != geteuid()) {
		close(fd);
		return err_set(e, E_PERMISSION_DENIED, "the approval socket %s is not served by uid %u", path,
			       (unsigned)geteuid());
	}
	return fd;
}

/* Waits for events on fd until deadline (monotonic ms); 0 ready, -1 E_TIMEOUT / errno. */
static int wait_fd(int fd, short events, long long deadline, struct err *e)
{
	for (;;) {
		long long left = deadline - now_ms(CLOCK_MONOTONIC);
		if (left <= 0)
			return err_set(e, E_TIMEOUT, "no answer from the approval UI in time");
		struct pollfd p = { .fd = fd, .events = events };
		int n = poll(&p, 1, (int)(left > 1000000 ? 1000000 : left));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return err_errno(e, errno, "poll");
	}
}

static int send_all(int fd, const char *buf, size_t len, long long deadline, struct err *e)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return err_errno(e, errno, "send to the approval UI");
		if (wait_fd(fd, POLLOUT, deadline, e) < 0)
			return -1;
	}
	return 0;
}

static int read_line(int fd, struct strbuf *sb, size_t max, long long deadline, struct err *e)
{
	for (size_t scanned = 0;;) { /* each byte looked at once, not once per read */
		const char *nl = strbuf_find_newline(sb, scanned);
		scanned = sb->len;
		if (nl) {
			strbuf_setlen(sb, (size_t)(nl - sb->buf));
			return 0;
		}
		if (sb->len > max)
			return err_set(e, E_PAYLOAD_TOO_LARGE, "reply longer than %zu bytes", max);
		char buf[4096];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n > 0) {
			strbuf_add(sb, buf, (size_t)n);
			continue;
		}
		if (n == 0)
			return err_set(e, E_NOT_FOUND, "the approval UI closed the connection");
		if (errno != EAGAIN && errno != EINTR)
			return err_errno(e, errno, "read from the approval UI");
		if (wait_fd(fd, POLLIN, deadline, e) < 0)
			return -1;
	}
}

static int parse_reply(const char *token, const char *id, const char *nonce, const struct strbuf *line,
		       enum appr_answer *answer, struct err *e)
{
	_cleanup_json_ json_t *j = json_parse(line->buf, line->len, e);
	if (!j)
		return -1;
	const char *type = json_get_str(j, "type");
	if (type && !strcmp(type, "error")) {
		json_t *err = json_object_get(j, "error");
		return err_set(e, E_PERMISSION_DENIED, "approval UI refused: %s: %s",
			       json_get_str(err, "code") ? json_get_str(err, "code") : "?",
			       json_get_str(err, "message") ? json_get_str(err, "message") : "");
	}
	const char *rid = json_get_str(j, "id"), *decision = json_get_str(j, "decision"),
		   *mac = json_get_str(j, "hmac");
	if (!type || strcmp(type, "decision") || !rid || strcmp(rid, id) || !decision || !mac)
		return err_set(e, E_INVALID_JSON, "malformed reply from the approval UI");
	char want[65];
	decision_hmac(token, nonce, id, decision, want);
	if (strlen(mac) != 64 || !crypto_equal(mac, want, 64))
		return err_set(e, E_AUTH_FAILED, "the approval UI's reply is not signed with the token");
	int a = appr_answer_parse(decision);
	if (a < 0)
		return err_set(e, E_INVALID_JSON, "unknown decision %s", decision);
	*answer = (enum appr_answer)a;
	return 0;
}

int appr_ask(const char *socket_path, const char *token, const struct appr_ask_request *r, int timeout_ms,
	     enum appr_answer *answer, struct err *e)
{
	long long deadline = now_ms(CLOCK_MONOTONIC) + timeout_ms;
	int fd = connect_socket(socket_path, e);
	if (fd < 0)
		return -1;
	json_t *request = appr_request_object(r);
	if (!request) {
		close(fd);
		return err_set(e, E_INVALID_PAYLOAD,
			       "the command, cwd or agent is not valid UTF-8 and cannot be shown for approval");
	}
	char id[17], nonce[33];
	random_hex(8, id);
	random_hex(16, nonce);
	json_t *env = appr_request_envelope(token, id, nonce, now_ms(CLOCK_REALTIME) / 1000, request);
	struct strbuf out = STRBUF_INIT, in = STRBUF_INIT;
	json_add_to_strbuf(&out, env);
	strbuf_addch(&out, '\n');
	json_decref(env);
	int rc = send_all(fd, out.buf, out.len, deadline, e);
	if (rc == 0)
		rc = read_line(fd, &in, 65536, deadline, e);
	if (rc == 0)
		rc = parse_reply(token, id, nonce, &in, answer, e);
	strbuf_release(&out);
	strbuf_release(&in);
	close(fd);
	return rc;
}

/* ---- server ---------------------------------------------------------------------------------- */

enum conn_state { CONN_READING, CONN_QUEUED };

struct conn {
	int fd;
	pid_t pid;
	enum conn_state state;
	long long deadline;   /* for reading the request */
	long long queued_seq; /* order in the UI queue */
	struct strbuf in;
	json_t *request; /* the inner request, when queued */
	char *id, *nonce;
};

struct rate {
	uid_t uid;
	long long window_start;
	int count;
};

struct nonce_seen {
	char *nonce;
	long long ts;
};

struct server {
	const char *token;
	int listen_fd;
	int ui_fd;
	const struct appr_server_ops *ops;
	struct conn *conns[APPR_MAX_CONNECTIONS];
	struct rate *rates; /* per peer uid */
	size_t nrates;
	struct rate total; /* every connection, whoever it is from */
	struct nonce_seen *nonces;
	size_t nnonces;
	long long seq;
	struct conn *shown; /* the request on the UI now */
	struct strbuf ui_in;
};

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void reply(int fd, json_t *msg)
{
	struct strbuf sb = STRBUF_INIT;
	json_add_to_strbuf(&sb, msg);
	strbuf_addch(&sb, '\n');
	/* Best effort within a short deadline: a peer that does not read loses its answer. */
	_cleanup_err_ struct err e = ERR_INIT;
	send_all(fd, sb.buf, sb.len, now_ms(CLOCK_MONOTONIC) + 1000, &e);
	strbuf_release(&sb);
	json_decref(msg);
}

static void reply_error(struct server *s, int fd, const char *id, const char *code, const char *fmt, ...)
	PRINTF_LIKE(5, 6);
static void reply_error(struct server *s, int fd, const char *id, const char *code, const char *fmt, ...)
{
	struct strbuf msg = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	reply(fd, json_pack("{s:s,s:s?,s:{s:s,s:s}}", "type", "error", "id", id, "error", "code", code, "message",
			    msg.buf));
	if (s->ops->note) {
		struct strbuf note = STRBUF_INIT;
		strbuf_addf(&note, "refused a request: %s: %s", code, msg.buf);
		s->ops->note(s->ops->arg, note.buf);
		strbuf_release(&note);
	}
	strbuf_release(&msg);
}

static void conn_free(struct server *s, size_t i)
{
	struct conn *c = s->conns[i];
	if (s->shown == c)
		s->shown = NULL;
	close(c->fd);
	strbuf_release(&c->in);
	if (c->request)
		json_decref(c->request);
	free(c->id);
	free(c->nonce);
	free(c);
	s->conns[i] = NULL;
}

/* Counts one connection in r's window (restarted when over); 1 while within limit. */
static int rate_count(struct rate *r, long long now, int limit)
{
	if (now - r->window_start >= APPR_RATE_WINDOW_MS) {
		r->window_start = now;
		r->count = 0;
	}
	return ++r->count <= limit;
}

/* 1 when a peer of uid may open another connection now: under the per-uid limit and the total one.
 * Keyed by uid, never by process: forked children share their parent's budget. */
static int rate_allows(struct server *s, uid_t uid)
{
	long long now = now_ms(CLOCK_MONOTONIC);
	int total_ok = rate_count(&s->total, now, APPR_RATE_TOTAL);
	size_t live = 0;
	for (size_t i = 0; i < s->nrates; i++) /* forget finished windows */
		if (now - s->rates[i].window_start < APPR_RATE_WINDOW_MS)
			s->rates[live++] = s->rates[i];
	s->nrates = live;
	for (size_t i = 0; i < s->nrates; i++)
		if (s->rates[i].uid == uid)
			return rate_count(&s->rates[i], now, APPR_RATE_LIMIT) && total_ok;
	s->rates = xrealloc(s->rates, (s->nrates + 1) * sizeof(*s->rates));
	s->rates[s->nrates++] = (struct rate){ uid, now, 1 };
	return total_ok;
}

static void accept_one(struct server *s)
{
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		close(fd);
		return;
	}
	if (!rate_allows(s, cred.uid)) {
		reply_error(s, fd, NULL, "RATE_LIMITED",
			    "more than %d requests in %d s from uid %u (or %d from everyone)", APPR_RATE_LIMIT,
			    APPR_RATE_WINDOW_MS / 1000, (unsigned)cred.uid, APPR_RATE_TOTAL);
		close(fd);
		return;
	}
	if (cred.uid != geteuid()) {
		reply_error(s, fd, NULL, "UID_MISMATCH", "peer uid %u is not the server's uid %u", (unsigned)cred.uid,
			    (unsigned)geteuid());
		close(fd);
		return;
	}
	size_t slot = 0;
	while (slot < APPR_MAX_CONNECTIONS && s->conns[slot])
		slot++;
	if (slot == APPR_MAX_CONNECTIONS) {
		reply_error(s, fd, NULL, "BUSY", "too many open requests");
		close(fd);
		return;
	}
	struct conn *c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->pid = cred.pid;
	c->state = CONN_READING;
	c->deadline = now_ms(CLOCK_MONOTONIC) + APPR_READ_TIMEOUT_MS;
	strbuf_init(&c->in, 0);
	s->conns[slot] = c;
}

static int is_hex(const char *s, size_t n)
{
	return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

/* executables [{path, owner, mode, sha256}], allowAlways [patterns], allowAlwaysRefused (all optional). */
static int check_request_extras(const json_t *r, struct err *e)
{
	json_t *exes = json_object_get(r, "executables"), *always = json_object_get(r, "allowAlways"), *v;
	json_t *refused = json_object_get(r, "allowAlwaysRefused");
	size_t i;
	if (exes && appr_executables_check(exes, e) < 0)
		return err_prefix(e, "request"), -1;
	if (always && !json_is_array(always))
		return err_set(e, E_INVALID_PAYLOAD, "request.allowAlways must be an array of patterns");
	json_array_foreach(always, i, v)
	{
		if (!json_is_string(v))
			return err_set(e, E_INVALID_PAYLOAD, "request.allowAlways.%zu must be a string", i);
	}
	if (refused && !json_is_string(refused))
		return err_set(e, E_INVALID_PAYLOAD, "request.allowAlwaysRefused must be a string");
	return 0;
}

int appr_request_check(const json_t *j, struct err *e)
{
	static const char *const keys[] = { "type", "id", "nonce", "ts", "hmac", "request", NULL };
	static const char *const rkeys[] = {
		"argv", "cwd", "agentId", "resolvedPath", "executables", "allowAlways", "allowAlwaysRefused", NULL
	};
	if (!json_is_object(j))
		return err_set(e, E_INVALID_PAYLOAD, "the request is not a JSON object");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)j, k, v)
	{
		size_t i = 0;
		while (keys[i] && strcmp(keys[i], k))
			i++;
		if (!keys[i])
			return err_set(e, E_INVALID_PAYLOAD, "unknown field %s", k);
	}
	const char *type = json_get_str(j, "type"), *id = json_get_str(j, "id"), *nonce = json_get_str(j, "nonce"),
		   *mac = json_get_str(j, "hmac");
	if (!type || strcmp(type, "request"))
		return err_set(e, E_INVALID_PAYLOAD, "type must be \"request\"");
	if (!id || !*id || strlen(id) > 128)
		return err_set(e, E_INVALID_PAYLOAD, "id must be a string of 1-128 characters");
	if (!nonce || strlen(nonce) < 16 || strlen(nonce) > 128)
		return err_set(e, E_INVALID_PAYLOAD, "nonce must be a string of 16-128 characters");
	if (!json_is_integer(json_object_get(j, "ts")))
		return err_set(e, E_INVALID_PAYLOAD, "ts must be an integer (seconds)");
	if (!mac || !is_hex(mac, 64))
		return err_set(e, E_INVALID_PAYLOAD, "hmac must be 64 lowercase hex digits");
	json_t *r = json_object_get(j, "request");
	if (!json_is_object(r))
		return err_set(e, E_INVALID_PAYLOAD, "request must be an object");
	json_object_foreach(r, k, v)
	{
		size_t i = 0;
		while (rkeys[i] && strcmp(rkeys[i], k))
			i++;
		if (!rkeys[i])
			return err_set(e, E_INVALID_PAYLOAD, "unknown field request.%s", k);
	}
	json_t *argv = json_object_get(r, "argv");
	if (!json_is_array(argv) || json_array_size(argv) == 0)
		return err_set(e, E_INVALID_PAYLOAD, "request.argv must be a non-empty array");
	size_t i;
	json_array_foreach(argv, i, v)
	{
		if (!json_is_string(v))
			return err_set(e, E_INVALID_PAYLOAD, "request.argv.%zu must be a string", i);
	}
	if (!json_get_str(r, "cwd") || !json_get_str(r, "agentId"))
		return err_set(e, E_INVALID_PAYLOAD, "request.cwd and request.agentId must be strings");
	json_t *rp = json_object_get(r, "resolvedPath");
	if (rp && !json_is_string(rp) && !json_is_null(rp))
		return err_set(e, E_INVALID_PAYLOAD, "request.resolvedPath must be a string or null");
	return check_request_extras(r, e);
}

/* 1 when nonce was seen (a replay); otherwise records it. Forgets nonces older than the window. */
static int nonce_replayed(struct server *s, const char *nonce, long long ts)
{
	long long now = now_ms(CLOCK_REALTIME) / 1000;
	size_t live = 0;
	for (size_t i = 0; i < s->nnonces; i++) {
		if (s->nonces[i].ts >= now - 3 * APPR_MAX_SKEW_S)
			s->nonces[live++] = s->nonces[i];
		else
			free(s->nonces[i].nonce);
	}
	s->nnonces = live;
	for (size_t i = 0; i < s->nnonces; i++)
		if (!strcmp(s->nonces[i].nonce, nonce))
			return 1;
	s->nonces = xrealloc(s->nonces, (s->nnonces + 1) * sizeof(*s->nonces));
	s->nonces[s->nnonces++] = (struct nonce_seen){ xstrdup(nonce), ts };
	return 0;
}

/* Verifies a complete line; on success the connection is queued for the UI. */
static int accept_request(struct server *s, struct conn *c)
{
	_cleanup_err_ struct err e = ERR_INIT;
	const char *code = "INVALID_REQUEST";
	_cleanup_json_ json_t *j = json_parse(c->in.buf, c->in.len, &e);
	if (!j || appr_request_check(j, &e) < 0) {
		reply_error(s, c->fd, j ? json_get_str(j, "id") : NULL, code, "%s", e.message);
		return -1;
	}
	const char *id = json_get_str(j, "id"), *nonce = json_get_str(j, "nonce");
	long long ts = json_integer_value(json_object_get(j, "ts"));
	json_t *request = json_object_get(j, "request");
	char want[65];
	appr_request_hmac(s->token, nonce, ts, request, want);
	if (!crypto_equal(want, json_get_str(j, "hmac"), 64)) {
		reply_error(s, c->fd, id, "BAD_HMAC", "the request is not signed with the socket token");
		return -1;
	}
	long long now = now_ms(CLOCK_REALTIME) / 1000;
	if (ts > now + APPR_MAX_SKEW_S || ts < now - APPR_MAX_SKEW_S) {
		reply_error(s, c->fd, id, "EXPIRED", "ts %lld is more than %d s from now (%lld)", ts, APPR_MAX_SKEW_S,
			    now);
		return -1;
	}
	if (nonce_replayed(s, nonce, ts)) {
		reply_error(s, c->fd, id, "REPLAY", "nonce already used");
		return -1;
	}
	if (s->ui_fd < 0) {
		reply_error(s, c->fd, id, "UNAVAILABLE", "no UI is attached to answer");
		return -1;
	}
	c->request = json_incref(request);
	c->id = xstrdup(id);
	c->nonce = xstrdup(nonce);
	c->state = CONN_QUEUED;
	c->queued_seq = ++s->seq;
	return 0;
}

/* Reads what c sent; -1 when c is finished (answered with an error or gone). */
static int read_request(struct server *s, struct conn *c)
{
	for (;;) {
		char buf[16384];
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
		if (n == 0)
			return -1;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		size_t scanned = c->in.len; /* held no newline: only the new bytes are looked at */
		strbuf_add(&c->in, buf, (size_t)n);
		const char *nl = strbuf_find_newline(&c->in, scanned);
		if (nl && (size_t)(nl - c->in.buf) <= APPR_REQUEST_MAX) {
			strbuf_setlen(&c->in, (size_t)(nl - c->in.buf));
			return accept_request(s, c);
		}
		if (c->in.len > APPR_REQUEST_MAX) {
			reply_error(s, c->fd, NULL, "TOO_LARGE", "requests are limited to %d bytes", APPR_REQUEST_MAX);
			return -1;
		}
	}
}

static struct conn *queue_front(struct server *s)
{
	struct conn *front = NULL;
	for (size_t i = 0; i < APPR_MAX_CONNECTIONS; i++) {
		struct conn *c = s->conns[i];
		if (c && c->state == CONN_QUEUED && (!front || c->queued_seq < front->queued_seq))
			front = c;
	}
	return front;
}

static size_t queue_length(struct server *s)
{
	size_t n = 0;
	for (size_t i = 0; i < APPR_MAX_CONNECTIONS; i++)
		n += s->conns[i] && s->conns[i]->state == CONN_QUEUED;
	return n;
}

static void show_front(struct server *s)
{
	if (s->shown || s->ui_fd < 0)
		return;
	s->shown = queue_front(s);
	if (s->shown)
		s->ops->show(s->ops->arg, s->shown->request, queue_length(s));
}

static void answer_shown(struct server *s, enum appr_answer a)
{
	struct conn *c = s->shown;
	if (s->ops->answered)
		s->ops->answered(s->ops->arg, c->request, &a);
	char mac[65];
	decision_hmac(s->token, c->nonce, c->id, appr_answer_name(a), mac);
	reply(c->fd, json_pack("{s:s,s:s,s:s,s:s}", "type", "decision", "id", c->id, "decision", appr_answer_name(a),
			       "hmac", mac));
	for (size_t i = 0; i < APPR_MAX_CONNECTIONS; i++)
		if (s->conns[i] == c)
			conn_free(s, i);
	s->shown = NULL;
}

/* Input from the UI: complete lines are answers to the shown request. */
static void read_ui(struct server *s)
{
	char buf[512];
	ssize_t n = read(s->ui_fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) { /* the UI is gone: nobody can answer any more */
		s->ui_fd = -1;
		for (size_t i = 0; i < APPR_MAX_CONNECTIONS; i++)
			if (s->conns[i] && s->conns[i]->state == CONN_QUEUED) {
				reply_error(s, s->conns[i]->fd, s->conns[i]->id, "UNAVAILABLE", "the UI went away");
				conn_free(s, i);
			}
		return;
	}
	strbuf_add(&s->ui_in, buf, (size_t)n);
	size_t done = 0, len; /* the lines read, removed at once: a removal per line is quadratic */
	for (const char *at; (at = strbuf_next_line(&s->ui_in, &done, &len));) {
		_cleanup_free_ char *line = xstrndup(at, len - 1);
		char *t = line;
		while (*t == ' ' || *t == '\t')
			t++;
		size_t tl = strlen(t);
		while (tl > 0 && (t[tl - 1] == ' ' || t[tl - 1] == '\r' || t[tl - 1] == '\t'))
			t[--tl] = '\0';
		if (!s->shown)
			continue;
		int a = appr_answer_parse(t);
		if (a < 0) {
			s->ops->show(s->ops->arg, s->shown->request, queue_length(s));
			continue;
		}
		answer_shown(s, (enum appr_answer)a);
		show_front(s);
	}
	strbuf_remove_front(&s->ui_in, done);
	if (s->ui_in.len > 4096)
		strbuf_reset(&s->ui_in);
}

static int bind_socket(const char *path, struct err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return err_set(e, E_CONFIG, "socket path %s is too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	_cleanup_free_ char *dir = xstrdup(path);
	*strrchr(dir, '/') = '\0';
	struct stat st;
	if (lstat(dir[0] ? dir : "/", &st) < 0)
		return err_errno(e, errno, "stat %s", dir);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return err_set(e, E_PERMISSION_DENIED,
			       "the socket directory %s must be a directory owned by uid %u with mode 0700", dir,
			       (unsigned)geteuid());
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return err_set(e, E_ALREADY_EXISTS, "%s exists and is not a socket", path);
		struct err probe = ERR_INIT;
		int live = connect_socket(path, &probe);
		err_clear(&probe);
		if (live >= 0) {
			close(live);
			return err_set(e, E_ALREADY_EXISTS, "another server is already serving on %s", path);
		}
		unlink(path); /* a stale socket of an earlier server */
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_errno(e, errno, "socket");
	mode_t old = umask(0177);
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0 || chmod(path, 0600) < 0 || listen(fd, 128) < 0) {
		int saved = errno;
		close(fd);
		return err_errno(e, saved, "listen on %s", path);
	}
	return fd;
}

static void server_release(struct server *s)
{
	for (size_t i = 0; i < APPR_MAX_CONNECTIONS; i++)
		if (s->conns[i])
			conn_free(s, i);
	for (size_t i = 0; i < s->nnonces; i++)
		free(s->nonces[i].nonce);
	free(s->nonces);
	free(s->rates);
	strbuf_release(&s->ui_in);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
}

/* Drops connections whose request did not arrive in time. */
static void expire_readers(struct server *s)
{
	long long now = now_ms(CLOCK_MONOTONIC);
	for (size_t i = 0; i < APPR_MAX_CONNECTIONS; i++) {
		struct conn *c = s->conns[i];
		if (c && c->state == CONN_READING && now >= c->deadline) {
			reply_error(s, c->fd, NULL, "TIMEOUT", "the request was not sent in time");
			conn_free(s, i);
		}
	}
}

static void serve_events(struct server *s, struct pollfd *p, struct conn **who, size_t n)
{
	if (p[0].revents & POLLIN)
		accept_one(s);
	if (s->ui_fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
		read_ui(s);
	for (size_t k = 2; k < n; k++) {
		if (!p[k].revents)
			continue;
		for (size_t i = 0; i < APPR_MAX_CONNECTIONS; i++) {
			struct conn *c = s->conns[i];
			if (c != who[k])
				continue;
			if (c->state == CONN_READING) {
				if (read_request(s, c) < 0)
					conn_free(s, i);
			} else if (p[k].revents & (POLLHUP | POLLERR | POLLIN | POLLRDHUP)) {
				/* queued, and the client gave up (or sent more): drop it */
				if (s->shown == c && s->ops->note)
					s->ops->note(s->ops->arg, "the request was withdrawn (the client gave up)");
				conn_free(s, i);
			}
			break;
		}
	}
}

int appr_serve(const char *socket_path, const char *token, int ui_fd, const struct appr_server_ops *ops, struct err *e)
{
	struct server s = { .token = token, .ui_fd = ui_fd, .ops = ops, .listen_fd = -1 };
	strbuf_init(&s.ui_in, 0);
	s.listen_fd = bind_socket(socket_path, e);
	if (s.listen_fd < 0) {
		server_release(&s);
		return -1;
	}
	if (ops->ready)
		ops->ready(ops->arg, socket_path);
	struct sigaction sa = { .sa_handler = on_stop_signal }, old_int, old_term;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	stop_requested = 0;
	while (!stop_requested) {
		struct pollfd p[2 + APPR_MAX_CONNECTIONS];
		struct conn *who[2 + APPR_MAX_CONNECTIONS] = { 0 };
		size_t n = 2;
		p[0] = (struct pollfd){ .fd = s.listen_fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = s.ui_fd, .events = POLLIN };
		for (size_t i = 0; i < APPR_MAX_CONNECTIONS; i++)
			if (s.conns[i]) {
				who[n] = s.conns[i];
				p[n++] = (struct pollfd){ .fd = s.conns[i]->fd,
							  .events = s.conns[i]->state == CONN_READING ? POLLIN
												      : POLLRDHUP };
			}
		int rc = poll(p, n, 250);
		if (rc < 0 && errno != EINTR) {
			err_errno(e, errno, "poll");
			break;
		}
		if (rc > 0)
			serve_events(&s, p, who, n);
		expire_readers(&s);
		show_front(&s);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	unlink(socket_path);
	server_release(&s);
	return err_is_set(e) ? -1 : 0;
}
