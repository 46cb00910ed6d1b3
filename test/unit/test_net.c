/* test_net.c — unit tests of the message server and client: HTTP request glue (split reads, pipelining, upgrade
 * bytes), NDJSON splitting, and real round trips (unix, http, ws, https, wss) against a server thread in-process. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <mbedtls/sha256.h>
#include <mbedtls/x509_crt.h>

#include "http.h"
#include "json.h"
#include "log.h"
#include "loop.h"
#include "ndjson.h"
#include "net.h"
#include "rpcclient.h"
#include "unit.h"
#include "ws.h"
#include "callback.h"
#include "banned.h"

/* === HTTP request glue ==================================================================== */

static const char POST_RPC[] = "POST /rpc?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
			       "Content-Length: 11\r\n\r\n{\"a\":\"bc\"}\n";

TEST(http_request_split_at_every_byte_boundary)
{
	size_t n = sizeof(POST_RPC) - 1;
	for (size_t split = 0; split <= n; split++) {
		struct http_reader r;
		enum http_read_event ev;
		http_reader_init(&r, HTTP_REQUEST, 16384, 1 << 20);
		size_t used = http_reader_feed(&r, POST_RPC, split, &ev);
		CHECK_INT(used, split);
		if (split < n)
			CHECK_INT(ev, HTTP_NEED_MORE);
		if (ev != HTTP_MESSAGE) {
			used = http_reader_feed(&r, POST_RPC + split, n - split, &ev);
			CHECK_INT(used, n - split);
		}
		CHECK_INT(ev, HTTP_MESSAGE);
		CHECK_INT(r.msg.method, HTTP_POST);
		CHECK_STR(r.msg.target.buf, "/rpc?x=1");
		CHECK_STR(r.msg.body.buf, "{\"a\":\"bc\"}\n");
		CHECK_STR(r.msg.headers[HTTP_H_CONTENT_TYPE].buf, "application/json");
		CHECK_STR(r.msg.headers[HTTP_H_HOST].buf, "localhost");
		CHECK(r.msg.keep_alive);
		CHECK_INT(http_target_path_len(r.msg.target.buf), 4);
		http_reader_release(&r);
	}
}

TEST(http_pipelined_requests_stop_at_each_message_end)
{
	struct strbuf in = STRBUF_INIT;
	strbuf_addstr(&in, POST_RPC);
	strbuf_addstr(&in, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	strbuf_addstr(&in, POST_RPC);
	struct http_reader r;
	enum http_read_event ev;
	http_reader_init(&r, HTTP_REQUEST, 16384, 1 << 20);
	size_t off = http_reader_feed(&r, in.buf, in.len, &ev);
	CHECK_INT(ev, HTTP_MESSAGE);
	CHECK_INT(off, sizeof(POST_RPC) - 1);
	CHECK_INT(http_reader_feed(&r, in.buf + off, in.len - off, &ev), 0); /* still paused */
	CHECK_INT(ev, HTTP_MESSAGE);
	http_reader_next(&r);
	off += http_reader_feed(&r, in.buf + off, in.len - off, &ev);
	CHECK_INT(ev, HTTP_MESSAGE);
	CHECK_INT(r.msg.method, HTTP_GET);
	CHECK_STR(r.msg.target.buf, "/healthz");
	CHECK_INT(r.msg.body.len, 0);
	http_reader_next(&r);
	off += http_reader_feed(&r, in.buf + off, in.len - off, &ev);
	CHECK_INT(ev, HTTP_MESSAGE);
	CHECK_INT(off, in.len);
	CHECK_STR(r.msg.body.buf, "{\"a\":\"bc\"}\n");
	http_reader_release(&r);
	strbuf_release(&in);
}

static const char WS_HANDSHAKE[] = "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
				   "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
				   "Sec-WebSocket-Version: 13\r\n\r\n";

TEST(http_upgrade_stops_before_the_first_websocket_bytes)
{
	static const uint8_t mask[4] = { 1, 2, 3, 4 };
	struct strbuf in = STRBUF_INIT;
	strbuf_addstr(&in, WS_HANDSHAKE);
	ws_encode_frame(&in, WS_OP_TEXT, 1, "hello", 5, mask);
	for (size_t split = 1; split <= in.len; split++) { /* the frame may arrive in the same read */
		struct http_reader r;
		enum http_read_event ev;
		http_reader_init(&r, HTTP_REQUEST, 16384, 1 << 20);
		size_t off = http_reader_feed(&r, in.buf, split, &ev);
		if (ev != HTTP_MESSAGE)
			off += http_reader_feed(&r, in.buf + off, in.len - off, &ev);
		CHECK_INT(ev, HTTP_MESSAGE);
		CHECK_INT(off, sizeof(WS_HANDSHAKE) - 1);
		CHECK(r.msg.upgrade);
		CHECK(http_header_has_token(r.msg.headers[HTTP_H_CONNECTION].buf, "upgrade"));
		CHECK(http_header_has_token(r.msg.headers[HTTP_H_UPGRADE].buf, "WebSocket"));
		CHECK_STR(r.msg.headers[HTTP_H_WS_KEY].buf, "dGhlIHNhbXBsZSBub25jZQ==");
		struct ws_parser p;
		struct ws_event wev;
		ws_parser_init(&p, WS_ROLE_SERVER, 1024);
		CHECK_INT(ws_parser_feed(&p, in.buf + off, in.len - off, &wev), in.len - off);
		CHECK_INT(wev.type, WS_EV_MESSAGE);
		CHECK(wev.len == 5 && !memcmp(wev.data, "hello", 5));
		ws_parser_release(&p);
		http_reader_release(&r);
	}
	strbuf_release(&in);
}

TEST(http_limits_head_431_body_skipped_and_malformed_400)
{
	struct http_reader r;
	enum http_read_event ev;
	struct strbuf in = STRBUF_INIT;
	strbuf_addstr(&in, "GET / HTTP/1.1\r\nX-Big: ");
	for (int i = 0; i < 2000; i++)
		strbuf_addstr(&in, "aaaaaaaaa");
	strbuf_addstr(&in, "\r\n\r\n");
	http_reader_init(&r, HTTP_REQUEST, 16384, 100);
	http_reader_feed(&r, in.buf, in.len, &ev);
	CHECK_INT(ev, HTTP_ERROR);
	CHECK_INT(r.error_status, 431);
	http_reader_release(&r);

	/* a body over max_body is skipped, the message completes and the next one is read */
	strbuf_reset(&in);
	strbuf_addf(&in, "POST /rpc HTTP/1.1\r\nHost: a\r\nContent-Length: 150\r\n\r\n");
	for (int i = 0; i < 150; i++)
		strbuf_addch(&in, 'b');
	strbuf_addstr(
		&in,
		"POST /rpc HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
	http_reader_init(&r, HTTP_REQUEST, 16384, 100);
	size_t off = http_reader_feed(&r, in.buf, in.len, &ev);
	CHECK_INT(ev, HTTP_MESSAGE);
	CHECK(r.msg.body_too_large);
	CHECK_INT(r.msg.body.len, 0);
	http_reader_next(&r);
	off += http_reader_feed(&r, in.buf + off, in.len - off, &ev);
	CHECK_INT(ev, HTTP_MESSAGE);
	CHECK(!r.msg.body_too_large);
	CHECK_STR(r.msg.body.buf, "abcde");
	CHECK_INT(off, in.len);
	http_reader_release(&r);

	/* a chunked body growing past the limit */
	strbuf_reset(&in);
	strbuf_addstr(&in, "POST /rpc HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < 30; i++)
		strbuf_addstr(&in, "5\r\n01234\r\n");
	strbuf_addstr(&in, "0\r\n\r\n");
	http_reader_init(&r, HTTP_REQUEST, 16384, 100);
	http_reader_feed(&r, in.buf, in.len, &ev);
	CHECK_INT(ev, HTTP_MESSAGE);
	CHECK(r.msg.body_too_large);
	http_reader_release(&r);

	static const char *const bad[] = { "GET / HTTP/1.1\r\nHost a\r\n\r\n", "BREW / HTTP/1.1\r\n\r\n",
					   "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
					   "\x16\x03\x01\x02\x00\x01" /* TLS to a plain port */ };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		http_reader_init(&r, HTTP_REQUEST, 16384, 100);
		http_reader_feed(&r, bad[i], strlen(bad[i]), &ev);
		CHECK_INT(ev, HTTP_ERROR);
		CHECK_INT(r.error_status, 400);
		CHECK_INT(http_reader_feed(&r, "GET", 3, &ev), 0);
		CHECK_INT(ev, HTTP_ERROR);
		http_reader_release(&r);
	}
	strbuf_release(&in);
}

TEST(http_expect_continue_and_header_tokens)
{
	struct http_reader r;
	enum http_read_event ev;
	const char *req = "POST /rpc HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
	http_reader_init(&r, HTTP_REQUEST, 16384, 100);
	CHECK_INT(http_reader_feed(&r, req, strlen(req), &ev), strlen(req));
	CHECK_INT(ev, HTTP_NEED_MORE);
	CHECK(r.continue_pending);
	http_reader_feed(&r, "{}", 2, &ev);
	CHECK_INT(ev, HTTP_MESSAGE);
	http_reader_release(&r);
	CHECK(http_header_has_token("keep-alive, Upgrade", "upgrade"));
	CHECK(http_header_has_token(" websocket ", "websocket"));
	CHECK(!http_header_has_token("websockets", "websocket"));
	CHECK(!http_header_has_token("", "upgrade"));
	struct strbuf sb = STRBUF_INIT;
	http_response_head(&sb, 204, NULL, 0, 0, NULL);
	CHECK_STR(sb.buf, "HTTP/1.1 204 No Content\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n");
	strbuf_release(&sb);
}

/* === NDJSON ================================================================================ */

struct lines {
	int n, oversize;
	char got[16][64];
};

static void feed_lines(struct ndjson_reader *r, const char *data, size_t len, struct lines *out)
{
	size_t off = 0;
	while (off < len) {
		enum ndjson_event ev;
		const char *line;
		size_t n;
		off += ndjson_feed(r, data + off, len - off, &ev, &line, &n);
		if (ev == NDJSON_LINE && out->n < 16 && n < 64) {
			memcpy(out->got[out->n], line, n);
			out->got[out->n++][n] = '\0';
		} else if (ev == NDJSON_OVERSIZE) {
			out->got[out->n++][0] = '!';
			out->oversize++;
		}
	}
}

TEST(ndjson_lines_split_at_every_boundary)
{
	const char in[] = "{\"a\":1}\n\r\n\n{\"b\":2}\r\n{\"c\":3}\n";
	size_t n = sizeof(in) - 1;
	for (size_t split = 0; split <= n; split++) {
		struct ndjson_reader r;
		struct lines l = { 0 };
		ndjson_init(&r, 100);
		feed_lines(&r, in, split, &l);
		feed_lines(&r, in + split, n - split, &l);
		CHECK_INT(l.n, 3);
		CHECK_STR(l.got[0], "{\"a\":1}");
		CHECK_STR(l.got[1], "{\"b\":2}");
		CHECK_STR(l.got[2], "{\"c\":3}");
		ndjson_release(&r);
	}
	/* byte by byte */
	struct ndjson_reader r;
	struct lines l = { 0 };
	ndjson_init(&r, 100);
	for (size_t i = 0; i < n; i++)
		feed_lines(&r, in + i, 1, &l);
	CHECK_INT(l.n, 3);
	ndjson_release(&r);
}

TEST(ndjson_oversize_line_is_skipped_and_the_next_one_read)
{
	struct strbuf in = STRBUF_INIT;
	for (int i = 0; i < 10; i++)
		strbuf_addch(&in, 'x'); /* exactly max: fine */
	strbuf_addstr(&in, "\n");
	for (int i = 0; i < 10; i++)
		strbuf_addch(&in, 'y');
	strbuf_addstr(&in, "\r\n"); /* max + '\r': fine */
	for (int i = 0; i < 11; i++)
		strbuf_addch(&in, 'z'); /* max + 1: oversize */
	strbuf_addstr(&in, "\nok\n");
	for (int i = 0; i < 500; i++)
		strbuf_addch(&in, 'w'); /* long, arriving in pieces */
	strbuf_addstr(&in, "\nlast\n");
	for (size_t step = 1; step <= in.len; step += (step < 20 ? 1 : 37)) {
		struct ndjson_reader r;
		struct lines l = { 0 };
		ndjson_init(&r, 10);
		for (size_t off = 0; off < in.len; off += step)
			feed_lines(&r, in.buf + off, off + step < in.len ? step : in.len - off, &l);
		CHECK_INT(l.n, 6);
		CHECK_STR(l.got[0], "xxxxxxxxxx");
		CHECK_STR(l.got[1], "yyyyyyyyyy");
		CHECK_STR(l.got[2], "!");
		CHECK_STR(l.got[3], "ok");
		CHECK_STR(l.got[4], "!");
		CHECK_STR(l.got[5], "last");
		CHECK(r.line.len <= 11); /* never buffered the long line */
		ndjson_release(&r);
	}
	strbuf_release(&in);
}

/* === an in-process server ================================================================== */

struct server {
	struct loop *loop;
	struct net_server *srv;
	pthread_t thread;
	char sock[200];
	int port;
	struct net_stats stats;
	int opened, closed;
	struct net_conn *subs[8];
	int nsubs;
	int flood_left, flood_per_tick;
	size_t flood_size;
	long flood_seq;
	uint64_t out_seen[16]; /* slow_event: the server's bytes_out as each call began */
	int nslow;
};
static struct server S;

static void reply(struct net_conn *c, json_t *id, const char *key, json_t *value)
{
	json_t *msg = json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), key, value);
	char *text = json_to_compact(msg);
	net_send(c, text, strlen(text));
	free(text);
	json_decref(msg);
}

static void flood_tick(struct loop *l, void *arg)
{
	(void)arg;
	char *msg = xmalloc(S.flood_size);
	for (int k = 0; k < S.flood_per_tick && S.flood_left > 0; k++, S.flood_left--) {
		memset(msg, 'f', S.flood_size);
		int n = snprintf(msg, S.flood_size, "%ld ", S.flood_seq++);
		msg[n] = 'f';
		for (int i = 0; i < S.nsubs; i++)
			if (S.subs[i] && net_send(S.subs[i], msg, S.flood_size) < 0)
				S.subs[i] = NULL;
	}
	free(msg);
	if (S.flood_left > 0)
		loop_timer_add(l, 1, flood_tick, NULL);
}

static void handle_rpc(struct net_conn *c, json_t *req)
{
	const char *method = json_get_str(req, "method");
	json_t *id = json_object_get(req, "id");
	json_t *params = json_object_get(req, "params");
	if (!method)
		method = "";
	if (!strcmp(method, "echo")) {
		reply(c, id, "result", json_incref(params ? params : json_null()));
	} else if (!strcmp(method, "fail")) {
		reply(c, id, "error",
		      json_pack("{s:i,s:s,s:{s:s}}", "code", -32001, "message", "nope", "data", "code", "NOT_FOUND"));
	} else if (!strcmp(method, "notify_then_echo")) {
		const char *note = "{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":{\"type\":\"t\",\"data\":1}}";
		net_send(c, note, strlen(note));
		reply(c, id, "result", json_incref(params ? params : json_null()));
	} else if (!strcmp(method, "whoami")) {
		uid_t uid = 0;
		gid_t gid = 0;
		pid_t pid = 0;
		int r = net_conn_peer_cred(c, &uid, &gid, &pid);
		reply(c, id, "result",
		      json_pack("{s:i,s:i,s:i,s:i,s:s,s:s}", "ok", r, "uid", (int)uid, "gid", (int)gid, "pid", (int)pid,
				"kind", net_conn_kind(c) == NET_CONN_UNIX ? "unix" : "tcp", "remote",
				net_conn_remote_addr(c)));
	} else if (!strcmp(method, "login")) {
		net_conn_set_authenticated(c);
		reply(c, id, "result", json_true());
	} else if (!strcmp(method, "browser")) {
		reply(c, id, "result", json_boolean(net_conn_from_browser(c)));
	} else if (!strcmp(method, "silent")) {
		net_send(c, "", 0);
	} else if (!strcmp(method, "bye")) {
		net_conn_close(c);
	} else if (!strcmp(method, "stop_accepting")) {
		net_server_stop_accepting(S.srv);
		reply(c, id, "result", json_true());
	} else if (!strcmp(method,
			   "slow_event")) { /* a notification: an event to every subscriber, then 1 ms of work */
		struct net_stats st;
		net_server_stats(S.srv, &st);
		if (S.nslow < 16)
			S.out_seen[S.nslow++] = st.bytes_out;
		for (int i = 0; i < S.nsubs; i++)
			if (S.subs[i])
				net_send(S.subs[i], "{\"jsonrpc\":\"2.0\",\"method\":\"event\"}", 32);
		uint64_t until = loop_now_ms() + 2; /* busy, as a handler writing a row is: 1 to 2 ms */
		while (loop_now_ms() < until)
			;
	} else if (!strcmp(method, "subscribe")) {
		if (S.nsubs < 8)
			S.subs[S.nsubs++] = c;
		reply(c, id, "result", json_true());
	} else if (!strcmp(method, "flood")) {
		S.flood_left = (int)json_integer_value(json_object_get(params, "n"));
		S.flood_per_tick = (int)json_integer_value(json_object_get(params, "per_tick"));
		S.flood_size = (size_t)json_integer_value(json_object_get(params, "size"));
		reply(c, id, "result", json_true());
		loop_timer_add(S.loop, 1, flood_tick, NULL);
	} else {
		reply(c, id, "error", json_pack("{s:i,s:s}", "code", -32601, "message", "method not found"));
	}
}

static void srv_on_message(struct net_conn *c, const char *data, size_t len, void *arg)
{
	(void)arg;
	json_t *req = len && data[0] == '{' ? json_loadb(data, len, 0, NULL) : NULL;
	if (req && json_object_get(req, "method")) {
		handle_rpc(c, req);
	} else {
		net_send(c, data, len); /* raw echo */
		if (len) {
			volatile char last = data[len - 1]; /* data must stay valid for the whole callback */
			(void)last;
		}
	}
	json_decref(req);
}

static void srv_on_oversize(struct net_conn *c, void *arg)
{
	(void)arg;
	const char *msg = "{\"error\":\"oversize\"}";
	net_send(c, msg, strlen(msg));
}

static int srv_on_http_get(struct net_conn *c, const char *path, struct strbuf *body, const char **ct,
			   struct strbuf *headers, void *arg)
{
	(void)c;
	(void)arg;
	if (!strcmp(path, "/terminal")) { /* a page shares the path of the terminal WebSocket */
		strbuf_addstr(body, "<!doctype html>\n");
		strbuf_addstr(headers, "X-Page: yes\r\n");
		*ct = "text/html";
		return 200;
	}
	if (strcmp(path, "/healthz"))
		return 404;
	strbuf_addstr(body, "{\"ok\":true}\n");
	*ct = "application/json";
	return 200;
}

static void srv_on_open(struct net_conn *c, void *arg)
{
	(void)c;
	(void)arg;
	S.opened++;
}

static void srv_on_close(struct net_conn *c, void *arg)
{
	(void)arg;
	S.closed++;
	for (int i = 0; i < S.nsubs; i++)
		if (S.subs[i] == c)
			S.subs[i] = NULL;
}

static int srv_on_origin(struct net_conn *c, const char *origin, void *arg)
{
	(void)c;
	(void)arg;
	return !strcmp(origin, "http://good.example");
}

static const struct net_callbacks CALLBACKS = {
	.on_origin = srv_on_origin,
	.on_open = srv_on_open,
	.on_message = srv_on_message,
	.on_oversize = srv_on_oversize,
	.on_http_get = srv_on_http_get,
	.on_close = srv_on_close,
};

static void stop_loop(struct loop *l, void *arg)
{
	(void)arg;
	loop_stop(l);
}

static void *server_thread(void *arg)
{
	(void)arg;
	struct err e = ERR_INIT;
	loop_run(S.loop, &e);
	return NULL;
}

static int tls_dir_ready(const char *dir);

/* Starts a server on <tmp>/s.sock and an ephemeral TCP port (TLS when tls_dir is set). */
static int server_start_with(struct net_server_config *cfg, const char *tls_dir)
{
	struct err e = ERR_INIT;
	char cert[300], key[300];
	memset(&S, 0, sizeof(S));
	log_set_level(LOG_ERROR); /* the slow-reader warning is expected; keep the test output readable */
	snprintf(S.sock, sizeof(S.sock), "%s/s.sock", unit_tmpdir());
	S.loop = loop_new(&e);
	loop_set_wake(S.loop, stop_loop, NULL, &e);
	if (!cfg->unix_path)
		cfg->unix_path = S.sock;
	if (!cfg->tcp_port)
		cfg->tcp_port = NET_TCP_EPHEMERAL;
	if (tls_dir) {
		if (!tls_dir_ready(tls_dir))
			return -1;
		snprintf(cert, sizeof(cert), "%s/server.crt", tls_dir);
		snprintf(key, sizeof(key), "%s/server.key", tls_dir);
		cfg->tls_cert = cert;
		cfg->tls_key = key;
	}
	S.srv = net_server_start(S.loop, cfg, &CALLBACKS, &e);
	if (!S.srv) {
		unit_fail(__FILE__, __LINE__, "net_server_start: %s", e.message);
		err_clear(&e);
		return -1;
	}
	S.port = net_server_tcp_port(S.srv);
	pthread_create(&S.thread, NULL, server_thread, NULL);
	return 0;
}

static int server_start(void)
{
	struct net_server_config cfg = { 0 };
	return server_start_with(&cfg, NULL);
}

static void server_stop(void)
{
	loop_wake(S.loop);
	pthread_join(S.thread, NULL);
	net_server_stats(S.srv, &S.stats);
	net_server_free(S.srv);
	loop_free(S.loop);
}

/* --- TLS material ------------------------------------------------------------------------- */

static int run_script(const char *script, const char *arg)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/bash", "bash", script, arg, (char *)NULL);
		_exit(127);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* A throwaway CA + localhost certificate in dir (test/helpers/make-test-ca.sh, needs openssl). */
static int tls_dir_ready(const char *dir)
{
	char probe[300];
	struct stat st;
	snprintf(probe, sizeof(probe), "%s/server.crt", dir);
	if (stat(probe, &st) == 0)
		return 1;
	if (run_script("test/helpers/make-test-ca.sh", dir) < 0) {
		unit_fail(__FILE__, __LINE__,
			  "test/helpers/make-test-ca.sh %s failed (openssl missing? run from the top)", dir);
		return 0;
	}
	return 1;
}

static const char *tmp_path(const char *name)
{
	static char buf[4][300];
	static int i;
	char *p = buf[i++ % 4];
	snprintf(p, 300, "%s/%s", unit_tmpdir(), name);
	return p;
}

/* --- client helpers ----------------------------------------------------------------------- */

static struct rpc_client *client(const char *url, const struct rpc_client_options *opt)
{
	struct err e = ERR_INIT;
	struct rpc_client *c = rpc_client_connect(url, opt, &e);
	if (!c)
		unit_fail(__FILE__, __LINE__, "connect %s: %s", url, e.message);
	err_clear(&e);
	return c;
}

static const char *url_of(const char *fmt)
{
	static char buf[4][300];
	static int i;
	char *p = buf[i++ % 4];
	const char *hole = strstr(fmt, "%d"); /* "ws://127.0.0.1:%d/ws": the port goes there */
	if (!strncmp(fmt, "unix", 4))
		snprintf(p, 300, "unix:%s", S.sock);
	else
		snprintf(p, 300, "%.*s%d%s", (int)(hole - fmt), fmt, S.port, hole + 2);
	return p;
}

static void expect_raw_echo(struct rpc_client *c, const char *msg)
{
	struct err e = ERR_INIT;
	struct strbuf got = STRBUF_INIT;
	CHECK_INT(rpc_client_send(c, msg, strlen(msg), &e), 0);
	if (rpc_client_recv(c, &got, 5000, &e) < 0)
		unit_fail(__FILE__, __LINE__, "recv: %s", e.message);
	CHECK_STR(got.buf, msg);
	strbuf_release(&got);
	err_clear(&e);
}

static void expect_calls(struct rpc_client *c)
{
	struct err e = ERR_INIT;
	for (int i = 0; i < 3; i++) {
		json_t *params = json_pack("{s:i,s:s}", "x", i, "s", "\xc3\xa9t\xc3\xa9");
		json_t *result = NULL;
		if (rpc_client_call(c, "echo", params, &result, &e) < 0)
			unit_fail(__FILE__, __LINE__, "call: %s", e.message);
		CHECK(json_equal(params, result));
		json_decref(params);
		json_decref(result);
	}
	json_t *result = NULL;
	CHECK_INT(rpc_client_call(c, "fail", NULL, &result, &e), -1);
	CHECK(result == NULL);
	CHECK_STR(e.code, E_NOT_FOUND);
	CHECK_STR(e.message, "nope");
	CHECK_INT(json_integer_value(json_object_get(e.details, "rpc_code")), -32001);
	err_clear(&e);
	CHECK_INT(rpc_client_call(c, "no.such", NULL, &result, &e), -1);
	CHECK_STR(e.code, E_UNKNOWN_COMMAND);
	err_clear(&e);
}

static void round_trip(const char *url, const struct rpc_client_options *opt)
{
	struct rpc_client *c = client(url, opt);
	if (!c)
		return;
	expect_raw_echo(c, "{\"hello\":\"world\"}");
	expect_calls(c);
	expect_raw_echo(c, "[1,2,3]");
	rpc_client_close(c);
}

/* === round trips ============================================================================ */

TEST(net_unix_round_trip_and_peer_credentials)
{
	if (server_start() < 0)
		return;
	round_trip(url_of("unix"), NULL);
	round_trip(S.sock, NULL); /* a bare path works too */
	struct stat st;
	CHECK_INT(stat(S.sock, &st), 0);
	CHECK(S_ISSOCK(st.st_mode));
	CHECK_INT(st.st_mode & 0777, 0600);
	struct rpc_client *c = client(url_of("unix"), NULL);
	struct err e = ERR_INIT;
	json_t *who = NULL;
	CHECK_INT(rpc_client_call(c, "whoami", NULL, &who, &e), 0);
	CHECK_INT(json_integer_value(json_object_get(who, "ok")), 0);
	CHECK_INT(json_integer_value(json_object_get(who, "uid")), getuid());
	CHECK_INT(json_integer_value(json_object_get(who, "gid")), getgid());
	CHECK_INT(json_integer_value(json_object_get(who, "pid")), getpid());
	CHECK_STR(json_get_str(who, "kind"), "unix");
	json_decref(who);
	/* a message containing a newline cannot go on the socket */
	CHECK_INT(rpc_client_send(c, "{\n}", 3, &e), -1);
	CHECK_STR(e.code, E_INVALID_PAYLOAD);
	err_clear(&e);
	rpc_client_close(c);
	server_stop();
	CHECK_INT(S.opened, 3);
	CHECK_INT(S.closed, 3);
	CHECK_INT(S.stats.messages_in, 15); /* 7 per round trip + whoami; the newline one never left */
	CHECK_INT(stat(S.sock, &st), -1);   /* removed on free */
}

TEST(net_http_round_trip_keeps_the_connection_alive)
{
	if (server_start() < 0)
		return;
	round_trip(url_of("http://127.0.0.1:%d"), NULL);
	struct rpc_client *c = client(url_of("http://localhost:%d/rpc"), NULL);
	struct err e = ERR_INIT;
	json_t *who = NULL;
	CHECK_INT(rpc_client_call(c, "whoami", NULL, &who, &e), 0);
	CHECK_STR(json_get_str(who, "kind"), "tcp");
	CHECK_INT(json_integer_value(json_object_get(who, "ok")), -1);
	CHECK(!strncmp(json_get_str(who, "remote"), "127.0.0.1:", 10));
	json_decref(who);
	/* a notification over HTTP is answered 204: recv gives an empty message */
	struct strbuf got = STRBUF_INIT;
	const char *silent = "{\"jsonrpc\":\"2.0\",\"method\":\"silent\"}";
	CHECK_INT(rpc_client_send(c, silent, strlen(silent), &e), 0);
	CHECK_INT(rpc_client_recv(c, &got, 5000, &e), 0);
	CHECK_INT(got.len, 0);
	/* recv with nothing outstanding is a usage error */
	CHECK_INT(rpc_client_recv(c, &got, 0, &e), -1);
	CHECK_STR(e.code, E_USAGE);
	err_clear(&e);
	strbuf_release(&got);
	rpc_client_close(c);
	server_stop();
	CHECK_INT(S.stats.connections_total, 2); /* one per client: every call reused its connection */
}

static int notes;
static void count_note(json_t *msg, void *arg)
{
	(void)arg;
	if (!strcmp(json_get_str(msg, "method"), "event"))
		notes++;
}

TEST(net_ws_round_trip_with_notifications)
{
	if (server_start() < 0)
		return;
	round_trip(url_of("ws://127.0.0.1:%d/ws"), NULL);
	round_trip(url_of("ws://localhost:%d"), NULL); /* default path /ws */
	struct rpc_client_options opt = { .on_notification = count_note };
	struct rpc_client *c = client(url_of("ws://127.0.0.1:%d/ws"), &opt);
	struct err e = ERR_INIT;
	json_t *r = NULL;
	notes = 0;
	json_t *seven = json_integer(7);
	CHECK_INT(rpc_client_call(c, "notify_then_echo", seven, &r, &e), 0);
	json_decref(seven);
	CHECK_INT(notes, 1);
	CHECK_INT(json_integer_value(r), 7);
	json_decref(r);
	/* the server closes: the client sees the close code */
	struct strbuf got = STRBUF_INIT;
	const char *bye = "{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}";
	CHECK_INT(rpc_client_send(c, bye, strlen(bye), &e), 0);
	CHECK_INT(rpc_client_recv(c, &got, 5000, &e), -1);
	CHECK_CONTAINS(e.message, "1000");
	err_clear(&e);
	strbuf_release(&got);
	rpc_client_close(c);
	server_stop();
	CHECK_INT(S.closed, 3);
}

TEST(net_tls_round_trips_https_and_wss)
{
	struct net_server_config cfg = { 0 };
	const char *ca = tmp_path("ca");
	if (server_start_with(&cfg, ca) < 0)
		return;
	char ca_file[300];
	snprintf(ca_file, sizeof(ca_file), "%s/ca.crt", ca);
	struct rpc_client_options opt = { .ca_file = ca_file };
	round_trip(url_of("https://localhost:%d"), &opt);
	round_trip(url_of("wss://localhost:%d/ws"), &opt);
	/* big messages cross many TLS records in both directions */
	struct rpc_client *c = client(url_of("wss://localhost:%d/ws"), &opt);
	struct strbuf big = STRBUF_INIT;
	for (int i = 0; i < 200000; i++)
		strbuf_addch(&big, (char)('a' + i % 26));
	if (c) {
		expect_raw_echo(c, big.buf);
		rpc_client_close(c);
	}
	c = client(url_of("https://localhost:%d"), &opt);
	if (c) {
		expect_raw_echo(c, big.buf);
		rpc_client_close(c);
	}
	strbuf_release(&big);
	server_stop();
	CHECK_INT(S.stats.tls_failures, 0);
}

static void expect_refused(const char *url, const struct rpc_client_options *opt, const char *code, const char *text)
{
	struct err e = ERR_INIT;
	struct rpc_client *c = rpc_client_connect(url, opt, &e);
	CHECK(c == NULL);
	rpc_client_close(c);
	CHECK_STR(e.code, code);
	CHECK_CONTAINS(e.message, text);
	err_clear(&e);
}

static void cert_sha256_hex(const char *file, char out[65])
{
	mbedtls_x509_crt crt;
	unsigned char digest[32];
	mbedtls_x509_crt_init(&crt);
	CHECK_INT(mbedtls_x509_crt_parse_file(&crt, file), 0);
	mbedtls_sha256_ret(crt.raw.p, crt.raw.len, digest, 0);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", digest[i]);
	mbedtls_x509_crt_free(&crt);
}

TEST(net_tls_unknown_ca_wrong_host_and_pin_mismatch_are_refused)
{
	struct net_server_config cfg = { 0 };
	const char *ca = tmp_path("ca");
	const char *other = tmp_path("other-ca");
	if (server_start_with(&cfg, ca) < 0 || !tls_dir_ready(other))
		return;
	char ca_file[300], other_file[300], server_crt[300], pin[65];
	snprintf(ca_file, sizeof(ca_file), "%s/ca.crt", ca);
	snprintf(other_file, sizeof(other_file), "%s/ca.crt", other);
	snprintf(server_crt, sizeof(server_crt), "%s/server.crt", ca);
	struct rpc_client_options unknown = { .ca_file = other_file };
	expect_refused(url_of("https://localhost:%d"), &unknown, E_AUTH_FAILED, "verification failed");
	expect_refused(url_of("wss://localhost:%d/ws"), &unknown, E_AUTH_FAILED, "verification failed");
	struct rpc_client_options good = { .ca_file = ca_file };
	expect_refused(url_of("https://127.0.0.1:%d"), &good, E_AUTH_FAILED, "CN"); /* the name does not match */
	struct rpc_client_options bad_pin = { .pin_sha256 = "00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22:"
							    "33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff" };
	expect_refused(url_of("wss://localhost:%d/ws"), &bad_pin, E_AUTH_FAILED, "pinned");
	struct rpc_client_options short_pin = { .pin_sha256 = "abcd" };
	expect_refused(url_of("wss://localhost:%d/ws"), &short_pin, E_CONFIG, "64 hex");
	/* the right pin alone is enough, even from an IP address (the pin is the trust anchor) */
	cert_sha256_hex(server_crt, pin);
	struct rpc_client_options pinned = { .pin_sha256 = pin };
	round_trip(url_of("wss://127.0.0.1:%d/ws"), &pinned);
	/* pin + CA: both must pass */
	struct rpc_client_options both_bad = { .ca_file = other_file, .pin_sha256 = pin };
	expect_refused(url_of("https://localhost:%d"), &both_bad, E_AUTH_FAILED, "verification failed");
	/* plain HTTP to the TLS port fails cleanly */
	struct err e = ERR_INIT;
	struct rpc_client *c = rpc_client_connect(url_of("http://127.0.0.1:%d"), NULL, &e);
	json_t *r = NULL;
	if (c)
		CHECK_INT(rpc_client_call(c, "echo", NULL, &r, &e), -1);
	rpc_client_close(c);
	err_clear(&e);
	server_stop();
	CHECK(S.stats.tls_failures >= 5);
}

/* A remote executor's trust travels as PEM text in its payload (callback.h): verified like a CA file, and a remote
 * URL without any trust is refused before a connection is made. */
TEST(net_tls_ca_pem_and_callback_trust)
{
	struct net_server_config cfg = { 0 };
	const char *ca = tmp_path("ca");
	const char *other = tmp_path("other-ca");
	if (server_start_with(&cfg, ca) < 0 || !tls_dir_ready(other))
		return;
	char ca_file[300], other_file[300];
	snprintf(ca_file, sizeof(ca_file), "%s/ca.crt", ca);
	snprintf(other_file, sizeof(other_file), "%s/ca.crt", other);
	struct strbuf pem = STRBUF_INIT, other_pem = STRBUF_INIT;
	CHECK(strbuf_read_file(&pem, ca_file, 1u << 20) >= 0);
	CHECK(strbuf_read_file(&other_pem, other_file, 1u << 20) >= 0);
	struct rpc_client_options opt = { .ca_pem = pem.buf };
	round_trip(url_of("wss://localhost:%d/ws"), &opt);
	struct rpc_client_options wrong = { .ca_pem = other_pem.buf };
	expect_refused(url_of("wss://localhost:%d/ws"), &wrong, E_AUTH_FAILED, "verification failed");
	struct rpc_client_options junk = { .ca_pem = "not a certificate" };
	expect_refused(url_of("wss://localhost:%d/ws"), &junk, E_SYSTEM, "CA certificates");
	struct err e = ERR_INIT;
	struct callback_target none = { .url = url_of("wss://localhost:%d/ws") };
	CHECK(callback_connect(&none, NULL, &e) == NULL);
	CHECK_CONTAINS(e.message, "execution.executor_daemon_ca_file");
	err_clear(&e);
	struct callback_target refused = { .url = url_of("wss://localhost:%d/ws"), .ca_pem = other_pem.buf };
	CHECK(callback_connect(&refused, NULL, &e) == NULL);
	CHECK_STR(e.code, E_AUTH_FAILED);
	CHECK_CONTAINS(e.message, "check execution.executor_daemon_ca_file");
	err_clear(&e);
	struct callback_target good = { .url = url_of("wss://localhost:%d/ws"), .ca_pem = pem.buf };
	struct rpc_client *c = callback_connect(&good, NULL, &e);
	CHECK(c != NULL);
	rpc_client_close(c);
	err_clear(&e);
	CHECK(!callback_is_remote("unix:/run/agor/agor.sock") && !callback_is_remote("/run/agor.sock"));
	CHECK(callback_is_remote("https://agor:3030"));
	strbuf_release(&pem);
	strbuf_release(&other_pem);
	server_stop();
}

TEST(net_oversize_messages_are_refused_and_the_connection_kept)
{
	struct net_server_config cfg = { .max_message = 1000 };
	if (server_start_with(&cfg, NULL) < 0)
		return;
	struct strbuf big = STRBUF_INIT;
	for (int i = 0; i < 5000; i++)
		strbuf_addch(&big, 'x');
	static const char *const urls[] = { "unix", "ws://127.0.0.1:%d/ws", "http://127.0.0.1:%d" };
	for (size_t i = 0; i < ARRAY_SIZE(urls); i++) {
		struct rpc_client *c = client(url_of(urls[i]), NULL);
		if (!c)
			continue;
		struct err e = ERR_INIT;
		struct strbuf got = STRBUF_INIT;
		for (int round = 0; round < 3; round++) {
			CHECK_INT(rpc_client_send(c, big.buf, big.len, &e), 0);
			CHECK_INT(rpc_client_recv(c, &got, 5000, &e), 0);
			CHECK_STR(got.buf, "{\"error\":\"oversize\"}");
			expect_raw_echo(c, "{\"still\":\"here\"}");
		}
		strbuf_release(&got);
		rpc_client_close(c);
	}
	strbuf_release(&big);
	server_stop();
	CHECK_INT(S.stats.oversize_refusals, 9);
	CHECK_INT(S.stats.connections_total, 3);
}

TEST(net_slow_reader_is_dropped_while_a_fast_one_keeps_receiving)
{
	struct net_server_config cfg = { .out_high_water = 256 << 10 };
	if (server_start_with(&cfg, NULL) < 0)
		return;
	struct rpc_client *fast = client(url_of("ws://127.0.0.1:%d/ws"), NULL);
	struct rpc_client *slow = client(url_of("unix"), NULL); /* small kernel buffers: the queue grows soon */
	if (!fast || !slow)
		return;
	struct err e = ERR_INIT;
	json_t *r = NULL;
	CHECK_INT(rpc_client_call(fast, "subscribe", NULL, &r, &e), 0);
	json_decref(r);
	CHECK_INT(rpc_client_call(slow, "subscribe", NULL, &r, &e), 0);
	json_decref(r);
	const int total = 3200;
	json_t *params = json_pack("{s:i,s:i,s:i}", "n", total, "per_tick", 16, "size", 4096);
	CHECK_INT(rpc_client_call(fast, "flood", params, &r, &e), 0);
	json_decref(params);
	json_decref(r);
	struct strbuf got = STRBUF_INIT;
	int received = 0;
	for (; received < total; received++) {
		if (rpc_client_recv(fast, &got, 10000, &e) < 0) {
			unit_fail(__FILE__, __LINE__, "fast reader: %s after %d", e.message, received);
			break;
		}
		if (got.len != 4096 || atol(got.buf) != received) {
			unit_fail(__FILE__, __LINE__, "message %d: %zu bytes, seq %ld", received, got.len,
				  atol(got.buf));
			break;
		}
	}
	CHECK_INT(received, total);
	/* the slow one got some messages, then the connection was cut */
	int slow_got = 0;
	while (rpc_client_recv(slow, &got, 5000, &e) == 0)
		slow_got++;
	CHECK(slow_got < total);
	CHECK_STR(e.code, E_SYSTEM);
	err_clear(&e);
	strbuf_release(&got);
	rpc_client_close(fast);
	rpc_client_close(slow);
	server_stop();
	CHECK_INT(S.stats.slow_drops, 1);
}

/* === raw sockets: what real clients may send =============================================== */

static int unix_connect(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sun.sun_path)) {
		unit_fail(__FILE__, __LINE__, "socket path too long: %s", path);
		close(fd);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		unit_fail(__FILE__, __LINE__, "connect %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void raw_send(int fd, const void *data, size_t len);

static int tcp_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		unit_fail(__FILE__, __LINE__, "connect: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void raw_send(int fd, const void *data, size_t len)
{
	CHECK_INT(send(fd, data, len, MSG_NOSIGNAL), len);
}

/* Reads until needle has been seen count times, EOF, or the timeout; returns 1 at EOF. */
static int raw_read(int fd, struct strbuf *sb, const char *needle, int count, int timeout_ms)
{
	uint64_t deadline = loop_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		if (needle) {
			int seen = 0;
			for (const char *p = sb->buf; (p = strstr(p, needle)); p++)
				seen++;
			if (seen >= count)
				return 0;
		}
		uint64_t now = loop_now_ms();
		if (now >= deadline)
			return 0;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
			return 0;
		char buf[4096];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			return 1;
		strbuf_add(sb, buf, (size_t)n);
	}
}

static void http_exchange(const char *request, const char *expect_status, int expect_eof)
{
	int fd = tcp_connect(S.port);
	if (fd < 0)
		return;
	struct strbuf sb = STRBUF_INIT;
	raw_send(fd, request, strlen(request));
	int eof = raw_read(fd, &sb, expect_eof ? NULL : "\r\n\r\n", 1, expect_eof ? 3000 : 2000);
	CHECK_CONTAINS(sb.buf, expect_status);
	CHECK_INT(eof, expect_eof);
	strbuf_release(&sb);
	close(fd);
}

TEST(net_http_status_codes_for_wrong_paths_methods_and_requests)
{
	if (server_start() < 0)
		return;
	http_exchange("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Type: application/json",
		      0);
	http_exchange("HEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\n", "Content-Length: 12", 0);
	http_exchange("GET /nope?x HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found", 0);
	http_exchange("GET /rpc HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 405 Method Not Allowed\r\n", 0);
	http_exchange("DELETE /x HTTP/1.1\r\nHost: a\r\n\r\n", "Allow: GET, HEAD", 0);
	http_exchange("GET /ws HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 426 Upgrade Required", 0);
	http_exchange("GET /terminal HTTP/1.1\r\nHost: a\r\n\r\n",
		      "Content-Type: text/html\r\nContent-Length: 16\r\nCache-Control: no-store\r\nX-Page: yes\r\n", 0);
	http_exchange("GET /terminal HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
		      "HTTP/1.1 101 Switching Protocols", 0);
	http_exchange("GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n",
		      "Sec-WebSocket-Version: 13", 0);
	http_exchange("GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		      "Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n",
		      "HTTP/1.1 400 Bad Request", 1);
	http_exchange("GET / HTTP/1.1\r\nHost a\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n", 1);
	http_exchange("GET / HTTP/9.9\r\n\r\n", "HTTP/1.1 505", 1);
	http_exchange("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 400", 1);
	http_exchange("GET /healthz HTTP/1.0\r\n\r\n", "Connection: close", 1);
	http_exchange("GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", "200 OK", 1);
	struct strbuf big = STRBUF_INIT;
	strbuf_addstr(&big, "GET / HTTP/1.1\r\nHost: a\r\n");
	for (int i = 0; i < 400; i++)
		strbuf_addf(&big, "X-Filler-%d: %s\r\n", i, "0123456789012345678901234567890123456789");
	strbuf_addstr(&big, "\r\n");
	http_exchange(big.buf, "HTTP/1.1 431", 1);
	strbuf_release(&big);
	server_stop();
	CHECK_INT(S.stats.protocol_errors, 5);
}

TEST(net_http_pipelined_posts_are_answered_in_order)
{
	if (server_start() < 0)
		return;
	int fd = tcp_connect(S.port);
	struct strbuf req = STRBUF_INIT, sb = STRBUF_INIT;
	for (int i = 0; i < 5; i++) {
		char body[64];
		int n = snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"echo\"}", i);
		strbuf_addf(&req, "POST /rpc HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n%s", n, body);
	}
	strbuf_addstr(&req, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	raw_send(fd, req.buf, req.len);
	raw_read(fd, &sb, "HTTP/1.1 200 OK", 6, 3000);
	const char *p = sb.buf;
	for (int i = 0; i < 5; i++) {
		char want[32];
		snprintf(want, sizeof(want), "\"id\":%d", i);
		p = strstr(p, want);
		CHECK(p != NULL);
		if (!p)
			break;
	}
	CHECK_CONTAINS(sb.buf, "{\"ok\":true}");
	/* Expect: 100-continue */
	strbuf_reset(&sb);
	const char *head = "POST /rpc HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 7\r\n\r\n";
	raw_send(fd, head, strlen(head));
	raw_read(fd, &sb, "100 Continue\r\n\r\n", 1, 2000);
	CHECK_CONTAINS(sb.buf, "HTTP/1.1 100 Continue\r\n\r\n");
	raw_send(fd, "[1,2,3]", 7);
	raw_read(fd, &sb, "[1,2,3]", 1, 2000);
	CHECK_CONTAINS(sb.buf, "HTTP/1.1 200 OK");
	close(fd);
	strbuf_release(&req);
	strbuf_release(&sb);
	server_stop();
	CHECK_INT(S.stats.connections_total, 1);
}

static size_t ws_upgrade_request(struct strbuf *out)
{
	strbuf_addstr(out, WS_HANDSHAKE);
	return out->len;
}

TEST(net_ws_handshake_and_first_frame_in_one_write)
{
	static const uint8_t mask[4] = { 9, 8, 7, 6 };
	if (server_start() < 0)
		return;
	int fd = tcp_connect(S.port);
	struct strbuf req = STRBUF_INIT, sb = STRBUF_INIT;
	ws_upgrade_request(&req);
	ws_encode_frame(&req, WS_OP_TEXT, 1, "hello", 5, mask);
	ws_encode_frame(&req, WS_OP_PING, 1, "pp", 2, mask);
	raw_send(fd, req.buf, req.len);
	raw_read(fd, &sb, "pp", 1, 2000);
	CHECK_CONTAINS(sb.buf, "HTTP/1.1 101 Switching Protocols\r\n");
	CHECK_CONTAINS(sb.buf, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n");
	const char *frames = strstr(sb.buf, "\r\n\r\n");
	CHECK(frames && !memcmp(frames + 4, "\x81\x05hello\x8a\x02pp", 11));
	/* close handshake: the server echoes the code and closes */
	strbuf_reset(&req);
	strbuf_reset(&sb);
	ws_encode_close(&req, 1000, "done", mask);
	raw_send(fd, req.buf, req.len);
	CHECK_INT(raw_read(fd, &sb, NULL, 1, 3000), 1);
	CHECK_INT(sb.len, 4);
	CHECK(!memcmp(sb.buf, "\x88\x02\x03\xe8", 4));
	close(fd);
	strbuf_release(&req);
	strbuf_release(&sb);
	server_stop();
}

static void expect_ws_close(const void *frame, size_t len, unsigned code)
{
	int fd = tcp_connect(S.port);
	struct strbuf req = STRBUF_INIT, sb = STRBUF_INIT;
	size_t head = ws_upgrade_request(&req);
	(void)head;
	strbuf_add(&req, frame, len);
	raw_send(fd, req.buf, req.len);
	CHECK_INT(raw_read(fd, &sb, NULL, 1, 3000), 1);
	const char *frames = strstr(sb.buf, "\r\n\r\n");
	CHECK(frames != NULL);
	if (frames) {
		const unsigned char *f = (const unsigned char *)frames + 4;
		CHECK_INT(f[0], 0x88);
		CHECK_INT(((unsigned)f[2] << 8) | f[3], code);
	}
	close(fd);
	strbuf_release(&req);
	strbuf_release(&sb);
}

TEST(net_ws_violations_close_with_their_codes_and_the_server_goes_on)
{
	static const uint8_t mask[4] = { 9, 8, 7, 6 };
	if (server_start() < 0)
		return;
	expect_ws_close("\x81\x02hi", 4, 1002); /* unmasked */
	struct strbuf f = STRBUF_INIT;
	ws_encode_frame(&f, WS_OP_TEXT, 1, "\xc0\xaf", 2, mask);
	expect_ws_close(f.buf, f.len, 1007);
	strbuf_reset(&f);
	ws_encode_frame(&f, WS_OP_BINARY, 1, "\x01", 1, mask);
	expect_ws_close(f.buf, f.len, 1003); /* no on_binary */
	strbuf_reset(&f);
	ws_encode_frame(&f, 0x3, 1, "x", 1, mask);
	expect_ws_close(f.buf, f.len, 1002);
	strbuf_release(&f);
	round_trip(url_of("ws://127.0.0.1:%d/ws"), NULL);
	server_stop();
	CHECK_INT(S.stats.protocol_errors, 3);
}

TEST(net_header_and_idle_timeouts)
{
	struct net_server_config cfg = { .header_timeout_ms = 300, .idle_timeout_ms = 400 };
	if (server_start_with(&cfg, NULL) < 0)
		return;
	uint64_t t0 = loop_now_ms();
	int fd = tcp_connect(S.port);
	struct strbuf sb = STRBUF_INIT;
	raw_send(fd, "GET /healthz HTT", 16);
	CHECK_INT(raw_read(fd, &sb, NULL, 1, 3000), 1);
	CHECK_CONTAINS(sb.buf, "HTTP/1.1 408");
	CHECK(loop_now_ms() - t0 >= 250);
	close(fd);
	/* a connection that never sends anything is just closed */
	strbuf_reset(&sb);
	fd = tcp_connect(S.port);
	CHECK_INT(raw_read(fd, &sb, NULL, 1, 3000), 1);
	CHECK_INT(sb.len, 0);
	close(fd);
	/* idle unix and ws connections are closed (ws with 1000 "idle timeout") */
	t0 = loop_now_ms();
	struct rpc_client *u = client(url_of("unix"), NULL);
	struct rpc_client *w = client(url_of("ws://127.0.0.1:%d/ws"), NULL);
	struct err e = ERR_INIT;
	CHECK_INT(rpc_client_recv(u, &sb, 3000, &e), -1);
	CHECK_STR(e.code, E_SYSTEM);
	CHECK_INT(rpc_client_recv(w, &sb, 3000, &e), -1);
	CHECK_CONTAINS(e.message, "1000: idle timeout");
	CHECK(loop_now_ms() - t0 >= 350);
	err_clear(&e);
	rpc_client_close(u);
	rpc_client_close(w);
	strbuf_release(&sb);
	server_stop();
	CHECK_INT(S.stats.timeouts, 4);
}

TEST(net_recv_timeout_leaves_the_client_usable)
{
	if (server_start() < 0)
		return;
	struct rpc_client *c = client(url_of("ws://127.0.0.1:%d/ws"), NULL);
	struct strbuf sb = STRBUF_INIT;
	struct err e = ERR_INIT;
	uint64_t t0 = loop_now_ms();
	CHECK_INT(rpc_client_recv(c, &sb, 200, &e), -1);
	CHECK_STR(e.code, E_TIMEOUT);
	CHECK(loop_now_ms() - t0 >= 190);
	CHECK_INT(rpc_client_recv(c, &sb, 0, &e), -1);
	CHECK_STR(e.code, E_TIMEOUT);
	err_clear(&e);
	expect_raw_echo(c, "{\"after\":\"timeout\"}");
	rpc_client_close(c);
	strbuf_release(&sb);
	server_stop();
}

TEST(net_stop_accepting_keeps_established_connections)
{
	if (server_start() < 0)
		return;
	struct rpc_client *u = client(url_of("unix"), NULL);
	struct rpc_client *h = client(url_of("http://127.0.0.1:%d"), NULL);
	struct err e = ERR_INIT;
	json_t *r = NULL;
	expect_raw_echo(h, "{\"accepted\":1}");
	CHECK_INT(rpc_client_call(u, "stop_accepting", NULL, &r, &e), 0);
	json_decref(r);
	struct stat st;
	CHECK_INT(stat(S.sock, &st), -1);
	expect_raw_echo(u, "{\"a\":1}");
	struct rpc_client *late = rpc_client_connect(url_of("unix"), NULL, &e);
	CHECK(late == NULL);
	err_clear(&e);
	late = rpc_client_connect(url_of("ws://127.0.0.1:%d/ws"), NULL, &e);
	CHECK(late == NULL);
	err_clear(&e);
	/* the kept-alive HTTP connection gets its answer, with Connection: close */
	expect_raw_echo(h, "{\"b\":2}");
	rpc_client_close(u);
	rpc_client_close(h);
	server_stop();
}

TEST(net_unix_socket_path_rules)
{
	struct err e = ERR_INIT;
	struct loop *l = loop_new(&e);
	char long_path[200];
	memset(long_path, 'a', sizeof(long_path));
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	struct net_server_config cfg = { .unix_path = long_path };
	CHECK(net_server_start(l, &cfg, &CALLBACKS, &e) == NULL);
	CHECK_CONTAINS(e.message, "longer than");
	err_clear(&e);
	/* a regular file is never replaced */
	const char *file = tmp_path("file.sock");
	int fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	close(fd);
	cfg.unix_path = file;
	CHECK(net_server_start(l, &cfg, &CALLBACKS, &e) == NULL);
	CHECK_CONTAINS(e.message, "not a socket");
	err_clear(&e);
	/* a stale socket (nobody listening) is replaced */
	const char *stale = tmp_path("stale.sock");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, stale, strlen(stale) + 1);
	CHECK_INT(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	cfg.unix_path = stale;
	cfg.unix_mode = 0660;
	cfg.unix_gid_set = 1;
	cfg.unix_gid = getgid();
	struct net_server *s1 = net_server_start(l, &cfg, &CALLBACKS, &e);
	CHECK(s1 != NULL);
	struct stat st;
	CHECK_INT(stat(stale, &st), 0);
	CHECK_INT(st.st_mode & 0777, 0660);
	/* a live one is not */
	struct net_server *s2 = net_server_start(l, &cfg, &CALLBACKS, &e);
	CHECK(s2 == NULL);
	CHECK_CONTAINS(e.message, "another process is listening");
	err_clear(&e);
	net_server_free(s1);
	CHECK_INT(stat(stale, &st), -1);
	/* nothing to listen on */
	struct net_server_config none = { 0 };
	CHECK(net_server_start(l, &none, &CALLBACKS, &e) == NULL);
	err_clear(&e);
	loop_free(l);
}

static void run_loop_for(struct loop *l, int ms)
{
	struct err e = ERR_INIT;
	loop_timer_add(l, (uint64_t)ms, stop_loop, NULL);
	loop_run(l, &e);
}

TEST(net_server_close_all_is_graceful_and_free_reaps_everything)
{
	if (server_start() < 0)
		return;
	struct rpc_client *w = client(url_of("ws://127.0.0.1:%d/ws"), NULL);
	struct rpc_client *u = client(url_of("unix"), NULL);
	struct rpc_client *h = client(url_of("http://127.0.0.1:%d"), NULL);
	expect_raw_echo(w, "{}");
	expect_raw_echo(u, "{}");
	expect_raw_echo(h, "{}");
	loop_wake(S.loop);
	pthread_join(S.thread, NULL);
	/* from here the loop runs on this thread, in slices */
	net_server_close_all(S.srv);
	run_loop_for(S.loop, 20);
	struct strbuf sb = STRBUF_INIT;
	struct err e = ERR_INIT;
	CHECK_INT(rpc_client_recv(w, &sb, 2000, &e), -1);
	CHECK_CONTAINS(e.message, "1001: server shutting down");
	err_clear(&e);
	CHECK_INT(rpc_client_recv(u, &sb, 2000, &e), -1);
	CHECK_CONTAINS(e.message, "closed the connection");
	err_clear(&e);
	rpc_client_close(w);
	rpc_client_close(u);
	rpc_client_close(h);
	struct net_stats st;
	for (int i = 0; i < 100; i++) {
		run_loop_for(S.loop, 10);
		net_server_stats(S.srv, &st);
		if (!st.connections_open)
			break;
	}
	CHECK_INT(st.connections_open, 0);
	CHECK_INT(S.closed, 3);
	strbuf_release(&sb);
	net_server_free(S.srv);
	loop_free(S.loop);
}

static void free_from_timer(struct loop *l, void *arg)
{
	net_server_free(arg);
	loop_stop(l);
}

TEST(net_server_free_from_a_loop_callback_with_open_connections)
{
	if (server_start() < 0)
		return;
	struct rpc_client *w = client(url_of("ws://127.0.0.1:%d/ws"), NULL);
	struct rpc_client *u = client(url_of("unix"), NULL);
	expect_raw_echo(w, "{}");
	expect_raw_echo(u, "{}");
	loop_wake(S.loop);
	pthread_join(S.thread, NULL);
	struct rpc_client *late = client(url_of("unix"), NULL); /* still in the backlog */
	rpc_client_close(u); /* its EOF dies in the same iteration: free runs while a reap is deferred */
	loop_timer_add(S.loop, 0, free_from_timer, S.srv);
	struct err e = ERR_INIT;
	loop_run(S.loop, &e);
	CHECK_INT(S.closed, S.opened);
	struct strbuf sb = STRBUF_INIT;
	CHECK_INT(rpc_client_recv(w, &sb, 2000, &e), -1); /* cut without a close frame */
	err_clear(&e);
	CHECK_INT(rpc_client_recv(late, &sb, 2000, &e), -1);
	err_clear(&e);
	strbuf_release(&sb);
	rpc_client_close(w);
	rpc_client_close(late);
	loop_free(S.loop);
}

TEST(rpc_client_rejects_bad_urls_and_maps_errors)
{
	static const char *const bad[] = { "ftp://x",	       "unix:relative.sock", "http://",
					   "http://host:port", "ws://[::1",	     "https://:443" };
	struct err e = ERR_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		CHECK(rpc_client_connect(bad[i], NULL, &e) == NULL);
		CHECK_STR(e.code, E_USAGE);
		err_clear(&e);
	}
	CHECK(rpc_client_connect(tmp_path("none.sock"), NULL, &e) == NULL);
	CHECK_STR(e.code, E_SYSTEM);
	CHECK_CONTAINS(e.message, "No such file");
	err_clear(&e);
	struct rpc_client_options ca = { .ca_file = tmp_path("missing-ca.pem") };
	CHECK(rpc_client_connect("https://localhost:1", &ca, &e) == NULL);
	CHECK_CONTAINS(e.message, "missing-ca.pem");
	err_clear(&e);
	json_t *error = json_pack("{s:i,s:s,s:{s:s}}", "code", -32000, "message", "token expired", "data", "code",
				  "AUTH_FAILED");
	CHECK_INT(rpc_error_to_err(error, &e), -1);
	CHECK_STR(e.code, E_AUTH_FAILED);
	CHECK_STR(e.message, "token expired");
	json_decref(error);
	error = json_pack("{s:i,s:s,s:{s:s}}", "code", -32602, "message", "bad", "data", "code", "SOMETHING_NEW");
	rpc_error_to_err(error, &e);
	CHECK_STR(e.code, E_INVALID_PAYLOAD);
	CHECK_STR(json_get_str(json_object_get(e.details, "data"), "code"), "SOMETHING_NEW");
	json_decref(error);
	error = json_pack("{s:i}", "code", -32700);
	rpc_error_to_err(error, &e);
	CHECK_STR(e.code, E_INVALID_JSON);
	json_decref(error);
	err_clear(&e);
}

/* 1 when the server closed fd (nothing more to read) within timeout_ms. */
static int closed_by_server(int fd, int timeout_ms)
{
	struct strbuf sb = STRBUF_INIT;
	int eof = raw_read(fd, &sb, NULL, 1, timeout_ms);
	strbuf_release(&sb);
	return eof;
}

/* A WebSocket at /ws from the loopback address 127.0.0.SOURCE; -1 when the upgrade did not happen. */
static int ws_open_from(int source)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in from = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000000u | (unsigned)source) };
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)S.port) };
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct strbuf sb = STRBUF_INIT;
	if (bind(fd, (struct sockaddr *)&from, sizeof(from)) < 0 ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0) {
		unit_fail(__FILE__, __LINE__, "connect from 127.0.0.%d: %s", source, strerror(errno));
		close(fd);
		return -1;
	}
	raw_send(fd, WS_HANDSHAKE, sizeof(WS_HANDSHAKE) - 1);
	raw_read(fd, &sb, "\r\n\r\n", 1, 2000);
	int upgraded = strstr(sb.buf, " 101 ") != NULL;
	strbuf_release(&sb);
	if (!upgraded) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends one JSON-RPC call as a masked text frame and waits for its answer (1: it came). */
static int ws_call(int fd, const char *method)
{
	static const uint8_t mask[4] = { 4, 3, 2, 1 };
	struct strbuf req = STRBUF_INIT, sb = STRBUF_INIT;
	strbuf_addf(&req, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\"}", method);
	struct strbuf frame = STRBUF_INIT;
	ws_encode_frame(&frame, WS_OP_TEXT, 1, req.buf, req.len, mask);
	raw_send(fd, frame.buf, frame.len);
	raw_read(fd, &sb, "\"id\":7", 1, 2000);
	int answered = strstr(sb.buf, "\"id\":7") != NULL;
	strbuf_release(&req);
	strbuf_release(&frame);
	strbuf_release(&sb);
	return answered;
}

TEST(net_tcp_cap_never_keeps_a_unix_peer_out)
{
	struct net_server_config cfg = { .max_connections = 1, .max_unix_connections = 2 };
	if (server_start_with(&cfg, NULL) < 0)
		return;
	struct rpc_client *a = client(url_of("unix"), NULL);
	struct rpc_client *b = client(url_of("ws://127.0.0.1:%d/ws"), NULL);
	expect_raw_echo(a, "{}");
	expect_raw_echo(b, "{}");
	int fd = tcp_connect(S.port); /* over max_connections: closed at once */
	CHECK_INT(closed_by_server(fd, 2000), 1);
	close(fd);
	struct rpc_client *u = client(url_of("unix"), NULL); /* TCP is full, the Unix socket is not */
	expect_raw_echo(u, "{\"a\":\"still served\"}");
	struct err e = ERR_INIT;
	struct rpc_client *c = rpc_client_connect(url_of("unix"), NULL, &e); /* over max_unix_connections */
	struct strbuf sb = STRBUF_INIT;
	if (c) {
		CHECK_INT(rpc_client_recv(c, &sb, 2000, &e), -1);
		CHECK_CONTAINS(e.message, "closed");
	}
	err_clear(&e);
	rpc_client_close(c);
	rpc_client_close(u);
	rpc_client_close(b);
	expect_raw_echo(a, "{\"a\":\"still served\"}");
	strbuf_release(&sb);
	rpc_client_close(a);
	server_stop();
	CHECK_INT(S.stats.refused, 2);
}

TEST(net_per_address_cap_counts_each_client_address)
{
	struct net_server_config cfg = { .max_per_ip = 2 };
	if (server_start_with(&cfg, NULL) < 0)
		return;
	int a = ws_open_from(1), b = ws_open_from(1), c = ws_open_from(1), d = ws_open_from(2);
	CHECK(a >= 0 && b >= 0 && d >= 0);
	CHECK_INT(c, -1);
	close(b); /* one of 127.0.0.1's goes: it may have another */
	for (int i = 0; i < 100 && (b = ws_open_from(1)) < 0; i++)
		usleep(10000);
	CHECK(b >= 0);
	CHECK(ws_call(a, "echo") && ws_call(d, "echo"));
	close(a);
	close(b);
	close(d);
	server_stop();
	CHECK(S.stats.refused_per_ip >= 1);
}

TEST(net_unauthenticated_cap_and_auth_timeout)
{
	struct net_server_config cfg = { .max_unauthenticated = 2, .auth_timeout_ms = 400 };
	if (server_start_with(&cfg, NULL) < 0)
		return;
	int a = ws_open_from(1), b = ws_open_from(1);
	CHECK(a >= 0 && b >= 0);
	CHECK_INT(ws_open_from(1), -1); /* two not authenticated yet: no third */
	CHECK(ws_call(a, "login"));
	int c = ws_open_from(1); /* a left the count */
	CHECK(c >= 0);
	/* b and c complete nothing more: closed after auth_timeout_ms with 1008; a, authenticated, stays */
	uint64_t t0 = loop_now_ms();
	struct strbuf sb = STRBUF_INIT;
	CHECK_INT(raw_read(b, &sb, NULL, 1, 3000), 1);
	CHECK(sb.len >= 4 && !memcmp(sb.buf, "\x88", 1) &&
	      (((unsigned char)sb.buf[2] << 8) | (unsigned char)sb.buf[3]) == 1008);
	CHECK(loop_now_ms() - t0 >= 250);
	CHECK_INT(closed_by_server(c, 3000), 1);
	CHECK_INT(closed_by_server(a, 500), 0);
	CHECK(ws_call(a, "echo"));
	close(b); /* closed connections stop counting once the peer's side is gone too */
	close(c);
	/* a message resets the clock: a client calling every 200 ms stays although it never authenticates */
	int d = -1;
	for (int i = 0; i < 100 && (d = ws_open_from(1)) < 0; i++)
		usleep(10000);
	CHECK(d >= 0);
	for (int i = 0; i < 5 && d >= 0; i++) {
		usleep(200000);
		CHECK(ws_call(d, "echo"));
	}
	close(a);
	close(d);
	strbuf_release(&sb);
	server_stop();
	CHECK(S.stats.refused_unauthenticated >= 1);
	CHECK_INT(S.stats.auth_timeouts, 2);
}

TEST(net_tcp_descriptor_ceiling_keeps_the_rest_for_unix)
{
	struct net_server_config cfg = { .tcp_fd_ceiling = 3 }; /* every descriptor a TCP connection could get */
	if (server_start_with(&cfg, NULL) < 0)
		return;
	int fd = tcp_connect(S.port);
	CHECK_INT(closed_by_server(fd, 2000), 1);
	close(fd);
	struct rpc_client *u = client(url_of("unix"), NULL);
	expect_raw_echo(u, "{}");
	rpc_client_close(u);
	server_stop();
	CHECK_INT(S.stats.refused_reserve, 1);
}

TEST(net_origin_decides_upgrades_and_posts_from_browsers)
{
	if (server_start() < 0)
		return;
	static const char post[] = "POST /rpc HTTP/1.1\r\nHost: a\r\n%sContent-Length: 43\r\n\r\n"
				   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"browser\"}";
	static const char upgrade[] =
		"GET %s HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n%s"
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
	char req[600];
	snprintf(req, sizeof(req), post, "Origin: http://evil.example\r\n");
	http_exchange(req, "HTTP/1.1 403 Forbidden", 1);
	snprintf(req, sizeof(req), upgrade, "/ws", "Origin: http://evil.example\r\n");
	http_exchange(req, "HTTP/1.1 403 Forbidden", 1);
	snprintf(req, sizeof(req), upgrade, "/terminal", "Origin: null\r\n");
	http_exchange(req, "HTTP/1.1 403 Forbidden", 1);
	snprintf(req, sizeof(req), post, "Origin: http://good.example\r\n");
	http_exchange(req, "\"result\":true", 0);
	snprintf(req, sizeof(req), post, "");
	http_exchange(req, "\"result\":false", 0);
	snprintf(req, sizeof(req), upgrade, "/ws", "Origin: http://good.example\r\n");
	http_exchange(req, "HTTP/1.1 101 Switching Protocols", 0);
	server_stop();
	CHECK_INT(S.stats.origin_refusals, 3);
}

/* An event does not wait for the whole burst of another connection's input to be processed: 8 notifications in one
 * write, each queueing an event and then working for over a millisecond, all in one loop iteration; the events of
 * the first calls have left (bytes_out grew) before the last call begins. */
TEST(net_events_leave_while_a_long_burst_of_input_is_processed)
{
	if (server_start() < 0)
		return;
	struct rpc_client *sub = client(url_of("ws://127.0.0.1:%d/ws"), NULL);
	int fd = unix_connect(S.sock);
	if (!sub || fd < 0)
		return;
	struct err e = ERR_INIT;
	json_t *r = NULL;
	CHECK_INT(rpc_client_call(sub, "subscribe", NULL, &r, &e), 0);
	json_decref(r);
	struct strbuf burst = STRBUF_INIT;
	for (int i = 0; i < 8; i++)
		strbuf_addstr(&burst, "{\"jsonrpc\":\"2.0\",\"method\":\"slow_event\"}\n");
	raw_send(fd, burst.buf, burst.len);
	struct strbuf got = STRBUF_INIT;
	for (int i = 0; i < 8; i++)
		if (rpc_client_recv(sub, &got, 10000, &e) < 0) {
			unit_fail(__FILE__, __LINE__, "event %d: %s", i, e.message);
			break;
		}
	server_stop();
	CHECK_INT(S.nslow, 8);
	CHECK(S.out_seen[7] > S.out_seen[0]); /* without the 200 µs bound: all equal, sent after the 8th */
	strbuf_release(&got);
	strbuf_release(&burst);
	err_clear(&e);
	close(fd);
	rpc_client_close(sub);
}
