/* rpcclient.c — the blocking JSON-RPC client of rpcclient.h over Unix NDJSON, HTTP(S) POST /rpc and WS(S).
 * Never blocks past a deadline (every wait is a poll with one), never sends an unmasked WebSocket frame. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "http.h"
#include "json.h"
#include "log.h"
#include "loop.h"
#include "ndjson.h"
#include "rpcclient.h"
#include "tls.h"
#include "ws.h"
#include "banned.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define DEFAULT_SEND_TIMEOUT_MS	   30000
#define DEFAULT_MAX_MESSAGE	   (64u << 20)
#define RESPONSE_HEAD_MAX	   (16u << 10)
#define READ_CHUNK		   65536

enum transport { TR_UNIX, TR_HTTP, TR_WS };

struct rpc_client {
	enum transport transport;
	int use_tls;
	char *host, *port, *path, *host_header;
	int fd;
	struct tls_config *tls_cfg;
	struct tls *tls;
	struct rpc_client_options opt;
	struct strbuf in;
	size_t in_off;
	struct ndjson_reader nd;
	struct ws_parser ws;
	struct http_reader resp;
	unsigned outstanding; /* HTTP: requests sent, responses not yet read */
	int broken;	      /* the connection is gone: HTTP reconnects, others fail */
	int ws_close_sent;
	long long next_id;
};

/* --- deadlines and raw I/O --------------------------------------------------------------- */

static uint64_t deadline_after(int timeout_ms)
{
	return timeout_ms < 0 ? 0 : loop_now_ms() + (uint64_t)timeout_ms;
}

/* Waits until fd is ready for events; deadline 0 = no limit. E_TIMEOUT when it passes. */
static int wait_fd(int fd, short events, uint64_t deadline, struct err *e)
{
	for (;;) {
		int ms = -1;
		if (deadline) {
			uint64_t now = loop_now_ms();
			ms = now >= deadline ? 0 : (int)(deadline - now);
		}
		struct pollfd pfd = { .fd = fd, .events = events };
		int n = poll(&pfd, 1, ms);
		if (n > 0)
			return 0;
		if (n == 0)
			return err_set(e, E_TIMEOUT, "timed out waiting for the server");
		if (errno != EINTR)
			return err_errno(e, errno, "poll");
	}
}

static void mark_broken(struct rpc_client *c)
{
	c->broken = 1;
}

static int write_all(struct rpc_client *c, const char *buf, size_t len, struct err *e)
{
	uint64_t deadline = deadline_after(c->opt.send_timeout_ms);
	size_t off = 0;
	while (off < len) {
		ssize_t n;
		short wait_for = POLLOUT;
		if (c->tls) {
			n = tls_write(c->tls, buf + off, len - off, e);
			if (n == TLS_WANT_READ)
				wait_for = POLLIN;
			if (n == TLS_ERROR) {
				mark_broken(c);
				return -1;
			}
		} else {
			n = send(c->fd, buf + off, len - off, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
				mark_broken(c);
				return err_errno(e, errno, "sending to the server");
			}
		}
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (wait_fd(c->fd, wait_for, deadline, e) < 0) {
			mark_broken(c); /* a partial message may be out: the stream is no longer in sync */
			return -1;
		}
	}
	return 0;
}

/* Reads more bytes into c->in: > 0 bytes, 0 at EOF, -1 with e set (E_TIMEOUT on the deadline). */
static ssize_t read_some(struct rpc_client *c, uint64_t deadline, int nowait, struct err *e)
{
	strbuf_grow(&c->in, READ_CHUNK);
	size_t room = c->in.alloc - c->in.len - 1;
	for (;;) {
		ssize_t n;
		short wait_for = POLLIN;
		if (c->tls) {
			n = tls_read(c->tls, c->in.buf + c->in.len, room, e);
			if (n == TLS_WANT_WRITE)
				wait_for = POLLOUT;
			if (n == TLS_ERROR) {
				mark_broken(c);
				return -1;
			}
		} else {
			n = recv(c->fd, c->in.buf + c->in.len, room, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
				mark_broken(c);
				return err_errno(e, errno, "reading from the server");
			}
		}
		if (n >= 0) {
			strbuf_setlen(&c->in, c->in.len + (size_t)n);
			return n;
		}
		if (nowait)
			return err_set(e, E_TIMEOUT, "no message waiting");
		if (wait_fd(c->fd, wait_for, deadline, e) < 0)
			return -1;
	}
}

static void compact_input(struct rpc_client *c)
{
	if (c->in_off >= c->in.len) {
		strbuf_reset(&c->in);
		c->in_off = 0;
	} else if (c->in_off > READ_CHUNK) {
		strbuf_remove_front(&c->in, c->in_off);
		c->in_off = 0;
	}
}

/* --- URL parsing ------------------------------------------------------------------------- */

static int parse_authority(struct rpc_client *c, const char *s, const char *default_port, const char *default_path,
			   struct err *e)
{
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	const char *host = s, *port = NULL;
	size_t hlen = alen;
	if (alen && s[0] == '[') {
		const char *close = memchr(s, ']', alen);
		if (!close)
			return err_set(e, E_USAGE, "bad IPv6 address in URL");
		host = s + 1;
		hlen = (size_t)(close - host);
		if (close + 1 < s + alen && close[1] == ':')
			port = close + 2;
	} else {
		const char *colon = memchr(s, ':', alen);
		if (colon) {
			hlen = (size_t)(colon - s);
			port = colon + 1;
		}
	}
	if (!hlen)
		return err_set(e, E_USAGE, "URL has no host");
	c->host = xstrndup(host, hlen);
	c->port = port ? xstrndup(port, (size_t)(s + alen - port)) : xstrdup(default_port);
	if (!*c->port || strspn(c->port, "0123456789") != strlen(c->port))
		return err_set(e, E_USAGE, "bad port in URL");
	c->path = xstrdup(slash && strcmp(slash, "/") ? slash : default_path);
	int bracket = strchr(c->host, ':') != NULL;
	c->host_header = xasprintf("%s%s%s:%s", bracket ? "[" : "", c->host, bracket ? "]" : "", c->port);
	return 0;
}

static int parse_url(struct rpc_client *c, const char *url, struct err *e)
{
	static const struct {
		const char *scheme;
		enum transport transport;
		int tls;
		const char *port, *path;
	} schemes[] = {
		{ "http://", TR_HTTP, 0, "80", "/rpc" },
		{ "https://", TR_HTTP, 1, "443", "/rpc" },
		{ "ws://", TR_WS, 0, "80", "/ws" },
		{ "wss://", TR_WS, 1, "443", "/ws" },
	};
	if (!strncmp(url, "unix:", 5) || url[0] == '/') {
		c->transport = TR_UNIX;
		c->path = xstrdup(url[0] == '/' ? url : url + 5);
		if (c->path[0] != '/')
			return err_set(e, E_USAGE, "unix socket URL needs an absolute path: %s", url);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(schemes); i++) {
		size_t n = strlen(schemes[i].scheme);
		if (!strncasecmp(url, schemes[i].scheme, n)) {
			c->transport = schemes[i].transport;
			c->use_tls = schemes[i].tls;
			return parse_authority(c, url + n, schemes[i].port, schemes[i].path, e);
		}
	}
	return err_set(e, E_USAGE, "unsupported daemon URL (unix:, http(s)://, ws(s)://): %s", url);
}

/* --- connecting -------------------------------------------------------------------------- */

static int set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);
	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static int connect_unix(struct rpc_client *c, struct err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(c->path) >= sizeof(sa.sun_path))
		return err_set(e, E_USAGE, "socket path too long: %s", c->path);
	memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return err_errno(e, errno, "socket");
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return err_errno(e, errno, "connecting to %s", c->path);
	return set_nonblocking(c->fd) < 0 ? err_errno(e, errno, "fcntl") : 0;
}

static int connect_address(const struct addrinfo *ai, uint64_t deadline, struct err *e)
{
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return err_errno(e, errno, "socket");
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS) {
			err_errno(e, errno, "connect");
			close(fd);
			return -1;
		}
		int soerr = 0;
		socklen_t len = sizeof(soerr);
		if (wait_fd(fd, POLLOUT, deadline, e) < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 ||
		    soerr) {
			if (soerr)
				err_errno(e, soerr, "connect");
			close(fd);
			return -1;
		}
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int tls_start(struct rpc_client *c, uint64_t deadline, struct err *e)
{
	c->tls = tls_new(c->tls_cfg, c->fd, c->host, e);
	if (!c->tls)
		return -1;
	for (;;) {
		int r = tls_handshake(c->tls, e);
		if (r == 0)
			return 0;
		if (r == TLS_ERROR)
			return -1;
		if (wait_fd(c->fd, r == TLS_WANT_WRITE ? POLLOUT : POLLIN, deadline, e) < 0)
			return -1;
	}
}

static int connect_tcp(struct rpc_client *c, uint64_t deadline, struct err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	int r = getaddrinfo(c->host, c->port, &hints, &res);
	if (r != 0)
		return err_set(e, E_SYSTEM, "cannot resolve %s: %s", c->host, gai_strerror(r));
	c->fd = -1;
	for (struct addrinfo *ai = res; ai && c->fd < 0; ai = ai->ai_next)
		c->fd = connect_address(ai, deadline, e);
	freeaddrinfo(res);
	if (c->fd < 0) {
		err_prefix(e, "connecting to %s", c->host_header);
		return -1;
	}
	err_clear(e);
	if (c->use_tls && tls_start(c, deadline, e) < 0) {
		err_prefix(e, "%s", c->host_header);
		return -1;
	}
	return 0;
}

/* Reads one HTTP response head (and body) into c->resp. */
static int read_response(struct rpc_client *c, uint64_t deadline, int nowait, struct err *e)
{
	for (;;) {
		enum http_read_event ev;
		c->in_off += http_reader_feed(&c->resp, c->in.buf + c->in_off, c->in.len - c->in_off, &ev);
		if (ev == HTTP_MESSAGE)
			break;
		if (ev == HTTP_ERROR) {
			mark_broken(c);
			return err_set(e, E_SYSTEM, "bad HTTP response from the server: %s", c->resp.error);
		}
		ssize_t n = read_some(c, deadline, nowait, e);
		if (n < 0)
			return -1;
		if (n == 0) {
			mark_broken(c);
			if (http_reader_eof(&c->resp) == HTTP_MESSAGE)
				break;
			return err_set(e, E_SYSTEM, "the server closed the connection");
		}
	}
	compact_input(c);
	return 0;
}

static int ws_handshake(struct rpc_client *c, uint64_t deadline, struct err *e)
{
	char key[WS_KEY_LEN + 1], expect[WS_ACCEPT_LEN + 1];
	if (ws_client_key(key, e) < 0)
		return -1;
	ws_accept_key(key, strlen(key), expect);
	struct strbuf req = STRBUF_INIT;
	strbuf_addf(&req,
		    "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
		    c->path, c->host_header, key);
	int r = write_all(c, req.buf, req.len, e);
	strbuf_release(&req);
	if (r < 0 || read_response(c, deadline, 0, e) < 0)
		return -1;
	const struct http_message *m = &c->resp.msg;
	if (m->status != 101)
		return err_set(e, E_SYSTEM, "WebSocket handshake refused: HTTP %u", m->status);
	if (!http_header_has_token(m->headers[HTTP_H_UPGRADE].buf, "websocket") ||
	    !http_header_has_token(m->headers[HTTP_H_CONNECTION].buf, "upgrade") ||
	    strcmp(m->headers[HTTP_H_WS_ACCEPT].buf, expect) != 0)
		return err_set(e, E_SYSTEM, "WebSocket handshake: the server's answer does not match the key");
	ws_parser_release(&c->ws);
	ws_parser_init(&c->ws, WS_ROLE_CLIENT, c->opt.max_message);
	return 0;
}

static void disconnect(struct rpc_client *c)
{
	tls_free(c->tls);
	c->tls = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int establish(struct rpc_client *c, struct err *e)
{
	uint64_t deadline = deadline_after(c->opt.connect_timeout_ms);
	strbuf_reset(&c->in);
	c->in_off = 0;
	c->broken = 0;
	c->outstanding = 0;
	if (c->transport == TR_UNIX)
		return connect_unix(c, e);
	if (connect_tcp(c, deadline, e) < 0)
		return -1;
	http_reader_release(&c->resp);
	http_reader_init(&c->resp, HTTP_RESPONSE, RESPONSE_HEAD_MAX, c->opt.max_message);
	return c->transport == TR_WS ? ws_handshake(c, deadline, e) : 0;
}

struct rpc_client *rpc_client_connect(const char *url, const struct rpc_client_options *opt, struct err *e)
{
	struct rpc_client *c = xcalloc(1, sizeof(*c));
	static const struct rpc_client_options none;
	c->fd = -1;
	c->opt = opt ? *opt : none;
	if (!c->opt.connect_timeout_ms)
		c->opt.connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
	if (!c->opt.send_timeout_ms)
		c->opt.send_timeout_ms = DEFAULT_SEND_TIMEOUT_MS;
	if (!c->opt.max_message)
		c->opt.max_message = DEFAULT_MAX_MESSAGE;
	c->opt.ca_file = c->opt.ca_pem = c->opt.pin_sha256 = NULL; /* used once, below */
	strbuf_init(&c->in, 0);
	ndjson_init(&c->nd, c->opt.max_message);
	ws_parser_init(&c->ws, WS_ROLE_CLIENT, c->opt.max_message);
	http_reader_init(&c->resp, HTTP_RESPONSE, RESPONSE_HEAD_MAX, c->opt.max_message);
	if (parse_url(c, url, e) < 0)
		goto fail;
	if (c->use_tls) {
		c->tls_cfg = opt && opt->ca_pem ? tls_client_config_new_pem(opt->ca_pem, opt->pin_sha256, e)
						: tls_client_config_new(opt ? opt->ca_file : NULL,
									opt ? opt->pin_sha256 : NULL, e);
		if (!c->tls_cfg)
			goto fail;
	}
	if (establish(c, e) < 0)
		goto fail;
	return c;
fail:
	rpc_client_close(c);
	return NULL;
}

void rpc_client_set_call_timeout(struct rpc_client *c, int ms)
{
	c->opt.call_timeout_ms = ms;
}

/* --- sending ----------------------------------------------------------------------------- */

/* An idle keep-alive connection the server has closed (EOF or close_notify waiting): reconnect before use. */
static int http_connection_stale(struct rpc_client *c)
{
	if (c->broken || c->fd < 0)
		return 1;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	return poll(&pfd, 1, 0) > 0; /* nothing is owed to us: anything readable means the server is closing */
}

static int send_http(struct rpc_client *c, const char *json, size_t len, struct err *e)
{
	if (c->outstanding == 0 && http_connection_stale(c)) {
		disconnect(c);
		if (establish(c, e) < 0)
			return -1;
	} else if (c->broken) {
		return err_set(e, E_SYSTEM, "the connection to the server was lost");
	}
	struct strbuf req = STRBUF_INIT;
	strbuf_addf(&req,
		    "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
		    "Content-Length: %zu\r\n\r\n",
		    c->path, c->host_header, len);
	strbuf_add(&req, json, len);
	int r = write_all(c, req.buf, req.len, e);
	strbuf_release(&req);
	if (r == 0)
		c->outstanding++;
	return r;
}

static int send_ws(struct rpc_client *c, int opcode, const char *data, size_t len, struct err *e)
{
	uint8_t mask[4];
	if (ws_random_mask(mask, e) < 0)
		return -1;
	struct strbuf frame = STRBUF_INIT;
	if (opcode == WS_OP_CLOSE)
		ws_encode_close(&frame, WS_CLOSE_NORMAL, NULL, mask);
	else
		ws_encode_frame(&frame, opcode, 1, data, len, mask);
	int r = write_all(c, frame.buf, frame.len, e);
	strbuf_release(&frame);
	return r;
}

int rpc_client_send(struct rpc_client *c, const char *json, size_t len, struct err *e)
{
	if (c->transport == TR_HTTP)
		return send_http(c, json, len, e);
	if (c->broken)
		return err_set(e, E_SYSTEM, "the connection to the server was lost");
	if (c->transport == TR_WS)
		return send_ws(c, WS_OP_TEXT, json, len, e);
	if (memchr(json, '\n', len))
		return err_set(e, E_INVALID_PAYLOAD, "a message on the Unix socket cannot contain a newline");
	struct strbuf line = STRBUF_INIT;
	strbuf_add(&line, json, len);
	strbuf_addch(&line, '\n');
	int r = write_all(c, line.buf, line.len, e);
	strbuf_release(&line);
	return r;
}

int rpc_client_send_binary(struct rpc_client *c, const void *data, size_t len, struct err *e)
{
	if (c->transport != TR_WS)
		return err_set(e, E_USAGE, "binary messages need a WebSocket (ws:// or wss://)");
	if (c->broken)
		return err_set(e, E_SYSTEM, "the connection to the server was lost");
	return send_ws(c, WS_OP_BINARY, (const char *)data, len, e);
}

/* --- receiving --------------------------------------------------------------------------- */

static int recv_http(struct rpc_client *c, struct strbuf *msg, uint64_t deadline, int nowait, struct err *e)
{
	if (!c->outstanding)
		return err_set(e, E_USAGE, "no request is waiting for an answer");
	if (read_response(c, deadline, nowait, e) < 0)
		return -1;
	const struct http_message *m = &c->resp.msg;
	int r = 0;
	c->outstanding--;
	if (!m->keep_alive)
		mark_broken(c);
	if (m->body_too_large)
		r = err_set(e, E_PAYLOAD_TOO_LARGE, "the answer exceeds %zu bytes", c->opt.max_message);
	else if (m->status == 200 || m->status == 204)
		strbuf_add(msg, m->body.buf, m->body.len);
	else
		r = err_set(e, E_SYSTEM, "HTTP %u from the server: %.200s", m->status, m->body.buf);
	http_reader_next(&c->resp);
	return r;
}

static int recv_unix(struct rpc_client *c, struct strbuf *msg, uint64_t deadline, int nowait, struct err *e)
{
	for (;;) {
		enum ndjson_event ev;
		const char *line = NULL;
		size_t len = 0;
		c->in_off += ndjson_feed(&c->nd, c->in.buf + c->in_off, c->in.len - c->in_off, &ev, &line, &len);
		if (ev == NDJSON_LINE) {
			strbuf_add(msg, line, len);
			compact_input(c);
			return 0;
		}
		if (ev == NDJSON_OVERSIZE)
			return err_set(e, E_PAYLOAD_TOO_LARGE, "a message from the server exceeds %zu bytes",
				       c->opt.max_message);
		compact_input(c);
		ssize_t n = read_some(c, deadline, nowait, e);
		if (n < 0)
			return -1;
		if (n == 0) {
			mark_broken(c);
			return err_set(e, E_SYSTEM, "the server closed the connection");
		}
	}
}

/* Handles one WebSocket event: 1 = a message is in msg, 0 = keep going, -1 = error. */
static int ws_event(struct rpc_client *c, const struct ws_event *ev, struct strbuf *msg, struct err *e)
{
	switch (ev->type) {
	case WS_EV_MESSAGE:
		if (ev->opcode != WS_OP_TEXT) { /* binary frames belong to terminal streams, not to JSON-RPC */
			if (c->opt.on_binary)
				c->opt.on_binary(ev->data, ev->len, c->opt.arg);
			return 0;
		}
		strbuf_add(msg, ev->data, ev->len);
		return 1;
	case WS_EV_PING:
		return send_ws(c, WS_OP_PONG, ev->data, ev->len, e) < 0 ? -1 : 0;
	case WS_EV_CLOSE:
		if (!c->ws_close_sent) {
			c->ws_close_sent = 1;
			struct err ignored = ERR_INIT;
			send_ws(c, WS_OP_CLOSE, NULL, 0, &ignored);
			err_clear(&ignored);
		}
		mark_broken(c);
		return err_set(e, E_SYSTEM, "the server closed the WebSocket (%u%s%.*s)", ev->close_code,
			       ev->len ? ": " : "", (int)ev->len, ev->data ? ev->data : "");
	case WS_EV_OVERSIZE:
		return err_set(e, E_PAYLOAD_TOO_LARGE, "a message from the server exceeds %zu bytes",
			       c->opt.max_message);
	case WS_EV_ERROR:
		mark_broken(c);
		return err_set(e, E_SYSTEM, "WebSocket protocol error from the server: %s", ev->reason);
	default:
		return 0;
	}
}

static int recv_ws(struct rpc_client *c, struct strbuf *msg, uint64_t deadline, int nowait, struct err *e)
{
	for (;;) {
		struct ws_event ev;
		c->in_off += ws_parser_feed(&c->ws, c->in.buf + c->in_off, c->in.len - c->in_off, &ev);
		if (ev.type != WS_EV_NEED_MORE) {
			int r = ws_event(c, &ev, msg, e);
			if (r != 0) {
				compact_input(c);
				return r > 0 ? 0 : -1;
			}
			continue;
		}
		compact_input(c);
		ssize_t n = read_some(c, deadline, nowait, e);
		if (n < 0)
			return -1;
		if (n == 0) {
			mark_broken(c);
			return err_set(e, E_SYSTEM, "the server closed the connection");
		}
	}
}

int rpc_client_fd(const struct rpc_client *c)
{
	return c->fd;
}

int rpc_client_recv(struct rpc_client *c, struct strbuf *msg, int timeout_ms, struct err *e)
{
	uint64_t deadline = deadline_after(timeout_ms);
	int nowait = timeout_ms == 0;
	strbuf_reset(msg);
	if (c->transport == TR_HTTP)
		return recv_http(c, msg, deadline, nowait, e);
	if (c->broken)
		return err_set(e, E_SYSTEM, "the connection to the server was lost");
	if (c->transport == TR_WS)
		return recv_ws(c, msg, deadline, nowait, e);
	return recv_unix(c, msg, deadline, nowait, e);
}

/* --- JSON-RPC ---------------------------------------------------------------------------- */

/* The stable code named by s, or NULL when it is none of err.h's (one table: err_code_intern's). */
static const char *known_code(const char *s)
{
	const char *code = err_code_intern(s);
	return s && !strcmp(code, s) ? code : NULL;
}

int rpc_error_to_err(const json_t *error, struct err *e)
{
	json_int_t rpc_code = json_integer_value(json_object_get(error, "code"));
	const char *message = json_get_str(error, "message");
	json_t *data = json_object_get(error, "data");
	const char *code = known_code(json_get_str(data, "code"));
	if (!code) {
		switch (rpc_code) {
		case -32700:
			code = E_INVALID_JSON;
			break;
		case -32600:
		case -32602:
			code = E_INVALID_PAYLOAD;
			break;
		case -32601:
			code = E_UNKNOWN_COMMAND;
			break;
		default:
			code = E_INTERNAL;
			break;
		}
	}
	json_t *details = json_pack("{s:I}", "rpc_code", rpc_code);
	if (data)
		json_object_set(details, "data", data);
	return err_setd(e, code, details, "%s", message ? message : "JSON-RPC error without a message");
}

/* 1 when msg answers request id (a response with that id), 0 when it is something else. */
static int is_response_to(const json_t *msg, long long id)
{
	json_t *jid = json_object_get(msg, "id");
	return json_is_integer(jid) && json_integer_value(jid) == id &&
	       (json_object_get(msg, "result") || json_object_get(msg, "error"));
}

static int call_timeout_left(uint64_t deadline)
{
	if (!deadline)
		return -1;
	uint64_t now = loop_now_ms();
	return now >= deadline ? 0 : (int)(deadline - now);
}

int rpc_client_call(struct rpc_client *c, const char *method, json_t *params, json_t **result, struct err *e)
{
	long long id = ++c->next_id;
	*result = NULL;
	json_t *req = json_pack("{s:s,s:I,s:s}", "jsonrpc", "2.0", "id", (json_int_t)id, "method", method);
	if (params)
		json_object_set(req, "params", params);
	char *text = json_to_compact(req);
	json_decref(req);
	int r = rpc_client_send(c, text, strlen(text), e);
	free(text);
	if (r < 0)
		return -1;
	uint64_t deadline = c->opt.call_timeout_ms > 0 ? deadline_after(c->opt.call_timeout_ms) : 0;
	struct strbuf msg = STRBUF_INIT;
	for (;;) {
		if (rpc_client_recv(c, &msg, call_timeout_left(deadline), e) < 0)
			break;
		if (c->transport == TR_HTTP && msg.len == 0) {
			err_set(e, E_INTERNAL, "%s: the server sent no answer (204)", method);
			break;
		}
		json_t *m = json_parse(msg.buf, msg.len, e);
		if (!m) {
			err_prefix(e, "%s: answer from the server", method);
			break;
		}
		if (is_response_to(m, id)) {
			json_t *error = json_object_get(m, "error");
			if (error)
				rpc_error_to_err(error, e);
			else
				*result = json_incref(json_object_get(m, "result"));
			json_decref(m);
			strbuf_release(&msg);
			return *result ? 0 : -1;
		}
		if (json_is_object(m) && !json_object_get(m, "id") && c->opt.on_notification)
			c->opt.on_notification(m, c->opt.arg);
		else
			log_debug("rpc: dropping a message that does not answer request %lld", id);
		json_decref(m);
	}
	strbuf_release(&msg);
	return -1;
}

void rpc_client_close(struct rpc_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0 && !c->broken && c->transport == TR_WS && !c->ws_close_sent) {
		struct err ignored = ERR_INIT;
		c->opt.send_timeout_ms = 1000;
		send_ws(c, WS_OP_CLOSE, NULL, 0, &ignored);
		err_clear(&ignored);
	}
	if (c->tls && !c->broken)
		tls_close_notify(c->tls);
	disconnect(c);
	tls_config_free(c->tls_cfg);
	strbuf_release(&c->in);
	ndjson_release(&c->nd);
	ws_parser_release(&c->ws);
	http_reader_release(&c->resp);
	free(c->host);
	free(c->port);
	free(c->path);
	free(c->host_header);
	free(c);
}
