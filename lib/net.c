/* net.c — the message server of net.h: listeners, connection state machine, input framing dispatch, output
 * queues, timeouts and counters. Never blocks, never recurses into a connection's input while it is processed,
 * never frees a connection before the end of the loop iteration in which it died. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "addrcount.h"
#include "fdpass.h"
#include "http.h"
#include "log.h"
#include "ndjson.h"
#include "net.h"
#include "tls.h"
#include "ws.h"
#include "banned.h"

#define DEFAULT_MAX_MESSAGE	     (1u << 20)
#define DEFAULT_MAX_HEADER	     (16u << 10)
#define DEFAULT_HIGH_WATER	     (4u << 20)
#define DEFAULT_HEADER_TIMEOUT_MS    10000
#define DEFAULT_MAX_CONNECTIONS	     4096
#define DEFAULT_MAX_UNIX_CONNECTIONS 1024
#define DEFAULT_BACKLOG		     128
#define LINGER_MS		     2000 /* flushing + waiting for the peer's EOF after we closed our side */
#define READ_CHUNK		     65536
#define READ_BUDGET		     (256u << 10) /* bytes read from one connection per readiness event */
#define ACCEPT_BUDGET		     64
#define ACCEPT_RETRY_MS		     100		     /* after EMFILE and friends */
#define KEEP_BUFFER		     (256u << 10)	     /* idle input/output buffers larger than this are freed */
#define REMOTE_LEN		     (INET6_ADDRSTRLEN + 10) /* "[v6]:port" */
#define SEND_DELAY_US		     200 /* the longest queued sends wait behind another connection's input */

enum conn_state { ST_HANDSHAKE, ST_OPEN, ST_FLUSHING, ST_LINGER, ST_DEAD };
enum io_result { IO_AGAIN = -2, IO_WANT_WRITE = -3, IO_WANT_READ = -4, IO_ERROR = -1 };

struct listener {
	struct net_server *srv;
	int fd;
	int is_unix;
	int tls;
};

struct net_conn {
	struct net_server *srv;
	struct net_conn *prev, *next; /* srv->conns */
	struct net_conn *work_next;   /* srv->work */
	int work_queued;
	int work_flush_only; /* queued only to send its output (after_queue), not to read */
	int drain_later;
	uint64_t id;
	int fd;
	enum net_conn_kind kind;
	enum conn_state state;
	struct tls *tls;
	int hs_wants_write, read_wants_write, write_wants_read;
	struct strbuf in;
	size_t in_off;
	struct strbuf out;
	size_t out_off;
	int processing; /* inside process_input: sends are flushed when it ends */
	int peer_eof;
	int awaiting_reply, reply_keep_alive;
	int in_request_callback; /* on_message/on_oversize of a POST /rpc runs: its data must stay valid */
	int finish_deferred;	 /* answered inside that callback: go on with the next request after it */
	int ws_close_sent;
	int opened;
	uint64_t last_activity, request_deadline, close_deadline;
	struct loop_timer *timer;
	uint64_t timer_at;
	struct http_reader *http;
	struct ws_parser *ws;
	struct ndjson_reader *nd;
	int have_cred;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	int passed_fds[FDPASS_MAX_FDS]; /* Unix: descriptors received with SCM_RIGHTS, oldest first */
	size_t npassed;
	int terminal_path;     /* WS upgraded at /terminal */
	int from_browser;      /* the request being answered, or the WS upgrade, carried an Origin header */
	int authenticated;     /* Unix: always; TCP: once net_conn_set_authenticated() */
	uint64_t last_message; /* TCP: when it opened or last completed a request or WS message (auth_timeout_ms) */
	int has_addr;
	struct addr_key addr; /* TCP: the client's address, as max_per_ip counts it */
	char remote[REMOTE_LEN];
	char ip[INET6_ADDRSTRLEN]; /* remote without its port; "unix" */
	void *data;
};

struct net_server {
	struct loop *loop;
	struct net_server_config cfg;
	struct net_callbacks cb;
	char *unix_path;
	dev_t unix_dev;
	ino_t unix_ino;
	struct listener unix_l, tcp_l;
	int tcp_port;
	int accepting;
	struct loop_timer *accept_timer;
	struct loop_timer *drain_timer;
	struct tls_config *tls;
	struct net_conn *conns;
	unsigned tcp_open, unix_open, unauthenticated;
	struct addr_counts *per_addr; /* open TCP connections per client address */
	struct net_conn *work;
	int work_scheduled;
	uint64_t sends_queued_at; /* µs, monotonic: when the oldest unsent flush-only work was queued (0: none) */
	int free_requested;
	int freeing; /* net_server_free is reaping synchronously: no new deferred calls */
	uint64_t next_id;
	uint64_t refusal_logged_at;
	struct net_stats stats;
};

static void update_interest(struct net_conn *c);
static void flush_output(struct net_conn *c);
static void process_input(struct net_conn *c);
static void read_input(struct net_conn *c);
static void arm_timer(struct net_conn *c);

/* --- small helpers ----------------------------------------------------------------------- */

static const char *kind_name(enum net_conn_kind k)
{
	return k == NET_CONN_UNIX ? "unix" : k == NET_CONN_WS ? "ws" : "http";
}

static size_t out_pending(const struct net_conn *c)
{
	return c->out.len - c->out_off;
}

static int is_open(const struct net_conn *c)
{
	return c && c->state == ST_OPEN;
}

static void release_if_big(struct strbuf *sb)
{
	if (sb->alloc > KEEP_BUFFER)
		strbuf_release(sb);
	else
		strbuf_reset(sb);
}

/* --- deferred work: resumes and reaping ------------------------------------------------- */

static void conn_free(struct net_conn *c)
{
	for (size_t i = 0; i < c->npassed; i++)
		close(c->passed_fds[i]);
	tls_free(c->tls);
	if (c->http) {
		http_reader_release(c->http);
		free(c->http);
	}
	if (c->ws) {
		ws_parser_release(c->ws);
		free(c->ws);
	}
	if (c->nd) {
		ndjson_release(c->nd);
		free(c->nd);
	}
	strbuf_release(&c->in);
	strbuf_release(&c->out);
	free(c);
}

/* The end of a dead connection: on_close, then unlink and free. */
static void reap(struct net_conn *c)
{
	struct net_server *srv = c->srv;
	if (c->opened && srv->cb.on_close)
		srv->cb.on_close(c, srv->cb.arg);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	conn_free(c);
}

static void destroy_server(struct net_server *srv)
{
	loop_timer_cancel(srv->loop, srv->accept_timer);
	loop_timer_cancel(srv->loop, srv->drain_timer);
	tls_config_free(srv->tls);
	addr_counts_free(srv->per_addr);
	free(srv->unix_path);
	free(srv);
}

/* Resumes a connection whose input was paused (answered POST /rpc) or left buffered inside TLS. */
static void resume(struct net_conn *c)
{
	if (c->state != ST_OPEN)
		return;
	process_input(c);
	if (c->state == ST_OPEN && !c->awaiting_reply && !c->peer_eof)
		read_input(c);
	if (c->state != ST_DEAD)
		update_interest(c);
}

static void run_work(struct loop *l, void *arg)
{
	(void)l;
	struct net_server *srv = arg;
	srv->work_scheduled = 0;
	srv->sends_queued_at = 0;
	while (srv->work) {
		struct net_conn *c = srv->work;
		srv->work = c->work_next;
		c->work_next = NULL;
		c->work_queued = 0;
		int flush_only = c->work_flush_only;
		c->work_flush_only = 0;
		if (c->state == ST_DEAD)
			reap(c);
		else if (flush_only)
			flush_output(c);
		else
			resume(c);
	}
	if (srv->free_requested)
		destroy_server(srv);
}

static void schedule_work(struct net_conn *c, int flush_only)
{
	struct net_server *srv = c->srv;
	if (flush_only && !srv->sends_queued_at)
		srv->sends_queued_at = loop_now_us();
	if (!c->work_queued) {
		c->work_queued = 1;
		c->work_flush_only = flush_only;
		c->work_next = srv->work;
		srv->work = c;
	} else if (!flush_only) {
		c->work_flush_only = 0;
	}
	if (!srv->work_scheduled && !srv->freeing) {
		srv->work_scheduled = 1;
		loop_defer(srv->loop, run_work, srv);
	}
}

static void queue_work(struct net_conn *c)
{
	schedule_work(c, 0);
}

/* A TLS connection that hit its read budget may hold records epoll cannot see: look again next iteration
 * (a timer, not a deferred call, so other connections get their turn first). */
static void on_drain_timer(struct loop *l, void *arg)
{
	(void)l;
	struct net_server *srv = arg;
	srv->drain_timer = NULL;
	for (struct net_conn *c = srv->conns; c; c = c->next)
		if (c->drain_later) {
			c->drain_later = 0;
			queue_work(c);
		}
}

static void drain_later(struct net_conn *c)
{
	c->drain_later = 1;
	if (!c->srv->drain_timer)
		c->srv->drain_timer = loop_timer_add(c->srv->loop, 0, on_drain_timer, c->srv);
}

/* --- closing ----------------------------------------------------------------------------- */

/* The connection no longer counts against the caps (net.h "Caps"). */
static void forget_counted(struct net_conn *c)
{
	struct net_server *srv = c->srv;
	if (c->kind == NET_CONN_UNIX) {
		srv->unix_open--;
		return;
	}
	srv->tcp_open--;
	if (!c->authenticated)
		srv->unauthenticated--;
	if (c->has_addr)
		addr_counts_remove(srv->per_addr, &c->addr);
}

/* Immediate close: the descriptor goes now, the memory (and on_close) at the end of the iteration. */
static void kill_conn(struct net_conn *c, const char *why)
{
	if (c->state == ST_DEAD)
		return;
	if (why)
		log_debug("net: %s connection %llu (%s) closed: %s", kind_name(c->kind), (unsigned long long)c->id,
			  c->remote, why);
	c->state = ST_DEAD;
	loop_del_fd(c->srv->loop, c->fd);
	close(c->fd);
	c->fd = -1;
	if (c->timer) {
		loop_timer_cancel(c->srv->loop, c->timer);
		c->timer = NULL;
	}
	c->srv->stats.connections_open--;
	forget_counted(c);
	queue_work(c);
}

static void enter_linger(struct net_conn *c)
{
	c->state = ST_LINGER;
	if (c->tls)
		tls_close_notify(c->tls);
	shutdown(c->fd, SHUT_WR);
	if (c->peer_eof) {
		kill_conn(c, NULL);
		return;
	}
	c->close_deadline = loop_now_ms() + LINGER_MS;
	arm_timer(c);
	update_interest(c);
}

/* Graceful close: stop reading, flush what is queued, then shut down and linger. */
static void begin_close(struct net_conn *c)
{
	if (c->state != ST_OPEN && c->state != ST_HANDSHAKE) {
		return;
	}
	if (c->state == ST_HANDSHAKE) {
		kill_conn(c, NULL);
		return;
	}
	c->state = ST_FLUSHING;
	c->awaiting_reply = 0;
	c->close_deadline = loop_now_ms() + LINGER_MS;
	arm_timer(c);
	if (!c->processing)
		flush_output(c);
}

static void slow_drop(struct net_conn *c, size_t adding)
{
	struct net_server *srv = c->srv;
	srv->stats.slow_drops++;
	log_warn("net: %s connection %llu (%s) has %zu bytes queued (+%zu), over the %zu-byte high-water mark: "
		 "dropped as a slow reader",
		 kind_name(c->kind), (unsigned long long)c->id, c->remote, out_pending(c), adding,
		 srv->cfg.out_high_water);
	kill_conn(c, NULL);
}

/* --- timers ------------------------------------------------------------------------------ */

static uint64_t min_deadline(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

static uint64_t idle_deadline(const struct net_conn *c)
{
	unsigned idle = c->srv->cfg.idle_timeout_ms;
	if (!idle || c->state != ST_OPEN || c->awaiting_reply)
		return 0;
	return c->last_activity + idle;
}

/* An unauthenticated TCP connection must complete a request or a message every auth_timeout_ms. */
static uint64_t auth_deadline(const struct net_conn *c)
{
	unsigned limit = c->srv->cfg.auth_timeout_ms;
	if (!limit || c->authenticated || c->state != ST_OPEN || c->awaiting_reply)
		return 0;
	return c->last_message + limit;
}

static uint64_t conn_deadline(const struct net_conn *c)
{
	uint64_t d = min_deadline(idle_deadline(c), auth_deadline(c));
	if (c->state == ST_FLUSHING || c->state == ST_LINGER)
		return c->close_deadline;
	return min_deadline(d, c->request_deadline);
}

static void on_conn_timer(struct loop *l, void *arg);

static void arm_timer(struct net_conn *c)
{
	uint64_t d = conn_deadline(c);
	if (!d || c->state == ST_DEAD || (c->timer && c->timer_at <= d))
		return;
	if (c->timer)
		loop_timer_cancel(c->srv->loop, c->timer);
	uint64_t now = loop_now_ms();
	c->timer = loop_timer_add(c->srv->loop, d > now ? d - now : 0, on_conn_timer, c);
	c->timer_at = d;
}

static void queue_raw(struct net_conn *c, const char *data, size_t len);
static void queue_ws_close(struct net_conn *c, uint16_t code, const char *reason);

static void request_timed_out(struct net_conn *c)
{
	c->srv->stats.timeouts++;
	if (c->state == ST_HANDSHAKE || (c->http && !c->http->msg.target.len && !http_reader_head_done(c->http))) {
		kill_conn(c, "no request in time");
		return;
	}
	struct strbuf head = STRBUF_INIT;
	http_response_head(&head, 408, "text/plain; charset=utf-8", 16, 0, NULL);
	strbuf_addstr(&head, "Request Timeout\n");
	queue_raw(c, head.buf, head.len);
	strbuf_release(&head);
	begin_close(c);
}

static void idle_timed_out(struct net_conn *c)
{
	c->srv->stats.timeouts++;
	log_debug("net: %s connection %llu (%s) idle for %u ms: closing", kind_name(c->kind), (unsigned long long)c->id,
		  c->remote, c->srv->cfg.idle_timeout_ms);
	if (c->kind == NET_CONN_WS)
		queue_ws_close(c, WS_CLOSE_NORMAL, "idle timeout");
	begin_close(c);
}

static void auth_timed_out(struct net_conn *c)
{
	c->srv->stats.auth_timeouts++;
	log_debug("net: %s connection %llu (%s) completed nothing unauthenticated for %u ms: closing",
		  kind_name(c->kind), (unsigned long long)c->id, c->remote, c->srv->cfg.auth_timeout_ms);
	if (c->kind == NET_CONN_WS)
		queue_ws_close(c, WS_CLOSE_POLICY, "authentication timeout");
	begin_close(c);
}

static void on_conn_timer(struct loop *l, void *arg)
{
	(void)l;
	struct net_conn *c = arg;
	c->timer = NULL;
	uint64_t now = loop_now_ms();
	if (c->state == ST_FLUSHING || c->state == ST_LINGER) {
		if (now >= c->close_deadline)
			kill_conn(c, "close timeout");
	} else if (c->request_deadline && now >= c->request_deadline) {
		request_timed_out(c);
	} else if (auth_deadline(c) && now >= auth_deadline(c)) {
		auth_timed_out(c);
	} else if (idle_deadline(c) && now >= idle_deadline(c)) {
		idle_timed_out(c);
	}
	arm_timer(c);
	if (c->state != ST_DEAD)
		update_interest(c);
}

/* --- raw I/O ----------------------------------------------------------------------------- */

/* Unix peers may attach descriptors (SCM_RIGHTS): they are kept for net_conn_take_fd(), at most
 * FDPASS_MAX_FDS at a time (more are closed), and closed with the connection if nobody takes them. */
static ssize_t recv_unix(struct net_conn *c, char *buf, size_t len)
{
	int fds[FDPASS_MAX_FDS];
	size_t nfds = 0;
	ssize_t n = fdpass_recv(c->fd, buf, len, fds, FDPASS_MAX_FDS, &nfds);
	for (size_t i = 0; i < nfds; i++) {
		if (c->npassed < FDPASS_MAX_FDS)
			c->passed_fds[c->npassed++] = fds[i];
		else
			close(fds[i]);
	}
	return n;
}

static ssize_t conn_recv(struct net_conn *c, char *buf, size_t len)
{
	if (c->tls) {
		struct err e = ERR_INIT;
		ssize_t n = tls_read(c->tls, buf, len, &e);
		if (n == TLS_ERROR)
			log_debug("net: connection %llu (%s): %s", (unsigned long long)c->id, c->remote, e.message);
		err_clear(&e);
		return n >= 0 ? n : n == TLS_WANT_READ ? IO_AGAIN : n == TLS_WANT_WRITE ? IO_WANT_WRITE : IO_ERROR;
	}
	for (;;) {
		ssize_t n = c->kind == NET_CONN_UNIX ? recv_unix(c, buf, len) : recv(c->fd, buf, len, 0);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? IO_AGAIN : IO_ERROR;
	}
}

static ssize_t conn_send(struct net_conn *c, const char *buf, size_t len)
{
	if (c->tls) {
		struct err e = ERR_INIT;
		ssize_t n = tls_write(c->tls, buf, len, &e);
		if (n == TLS_ERROR)
			log_debug("net: connection %llu (%s): %s", (unsigned long long)c->id, c->remote, e.message);
		err_clear(&e);
		return n >= 0 ? n : n == TLS_WANT_WRITE ? IO_AGAIN : n == TLS_WANT_READ ? IO_WANT_READ : IO_ERROR;
	}
	for (;;) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? IO_AGAIN : IO_ERROR;
	}
}

static void update_interest(struct net_conn *c)
{
	unsigned ev = 0;
	int pending = out_pending(c) > 0;
	switch (c->state) {
	case ST_HANDSHAKE:
		ev = c->hs_wants_write ? LOOP_WRITE : LOOP_READ;
		break;
	case ST_OPEN:
		if (!c->peer_eof && !c->awaiting_reply)
			ev |= LOOP_READ;
		if (c->read_wants_write)
			ev |= LOOP_WRITE;
		if (pending)
			ev |= c->write_wants_read ? LOOP_READ : LOOP_WRITE;
		break;
	case ST_FLUSHING:
		if (pending)
			ev |= c->write_wants_read ? LOOP_READ : LOOP_WRITE;
		break;
	case ST_LINGER:
		ev = LOOP_READ;
		break;
	case ST_DEAD:
		return;
	}
	loop_set_events(c->srv->loop, c->fd, ev);
}

static void flush_output(struct net_conn *c)
{
	if (c->state == ST_DEAD || c->state == ST_HANDSHAKE)
		return;
	while (c->out_off < c->out.len) {
		ssize_t n = conn_send(c, c->out.buf + c->out_off, c->out.len - c->out_off);
		if (n > 0) {
			c->out_off += (size_t)n;
			c->srv->stats.bytes_out += (uint64_t)n;
			c->last_activity = loop_now_ms();
			continue;
		}
		if (n == IO_AGAIN || n == IO_WANT_READ) {
			c->write_wants_read = n == IO_WANT_READ;
			break;
		}
		kill_conn(c, "write failed");
		return;
	}
	if (c->out_off == c->out.len) {
		release_if_big(&c->out);
		c->out_off = 0;
		c->write_wants_read = 0;
		if (c->state == ST_FLUSHING) {
			enter_linger(c);
			return;
		}
	} else if (c->out_off > KEEP_BUFFER && c->out_off > c->out.len / 2) {
		strbuf_remove_front(&c->out, c->out_off); /* same bytes at the new offset: a TLS retry stays valid */
		c->out_off = 0;
	}
	update_interest(c);
}

/* Sends at the end of the connection's own input processing, or else at the end of the loop iteration:
 * a burst of events (one per report_message of a read) goes out in one write, not one write each. */
static void after_queue(struct net_conn *c)
{
	if (!c->processing && c->state != ST_DEAD)
		schedule_work(c, 1);
}

/* Room for len more bytes under the high-water mark; drops the connection when there is none. */
static int reserve(struct net_conn *c, size_t len)
{
	size_t pending = out_pending(c);
	if (pending && pending + len > c->srv->cfg.out_high_water) {
		slow_drop(c, len);
		return -1;
	}
	return 0;
}

static void queue_raw(struct net_conn *c, const char *data, size_t len)
{
	if (c->state == ST_DEAD || reserve(c, len) < 0)
		return;
	strbuf_add(&c->out, data, len);
}

static int queue_ws_frame(struct net_conn *c, int opcode, const void *data, size_t len)
{
	if (c->state == ST_DEAD || reserve(c, len + 14) < 0)
		return -1;
	ws_encode_frame(&c->out, opcode, 1, data, len, NULL);
	return 0;
}

static void queue_ws_close(struct net_conn *c, uint16_t code, const char *reason)
{
	if (c->ws_close_sent || c->state == ST_DEAD)
		return;
	c->ws_close_sent = 1;
	if (reserve(c, 2 + 125) < 0)
		return;
	ws_encode_close(&c->out, code == WS_CLOSE_NO_STATUS ? 0 : code, reason, NULL);
}

/* --- HTTP ------------------------------------------------------------------------------- */

static int keep_alive_for(const struct net_conn *c, int requested)
{
	return requested && c->srv->accepting;
}

/* The request has been answered: go on with the next one, or close. */
static void finish_request(struct net_conn *c, int keep_alive)
{
	if (!keep_alive) {
		begin_close(c);
		return;
	}
	http_reader_next(c->http);
	c->request_deadline = loop_now_ms() + c->srv->cfg.header_timeout_ms;
	arm_timer(c);
}

static void queue_response(struct net_conn *c, unsigned status, const char *content_type, const char *body,
			   size_t body_len, int keep_alive, const char *extra, int head_only)
{
	struct strbuf head = STRBUF_INIT;
	http_response_head(&head, status, content_type, body_len, keep_alive, extra);
	if (!head_only && body_len)
		strbuf_add(&head, body, body_len);
	queue_raw(c, head.buf, head.len);
	strbuf_release(&head);
}

/* A short text/plain answer ("Not Found\n"), then the next request or close. */
static void respond_status(struct net_conn *c, unsigned status, const char *extra, int keep_alive)
{
	struct strbuf body = STRBUF_INIT;
	strbuf_addf(&body, "%s\n", http_status_text(status));
	queue_response(c, status, "text/plain; charset=utf-8", body.buf, body.len, keep_alive, extra, 0);
	strbuf_release(&body);
	finish_request(c, keep_alive);
}

static void respond_bad_request(struct net_conn *c, unsigned status, const char *why)
{
	c->srv->stats.protocol_errors++;
	log_debug("net: http connection %llu (%s): %u: %s", (unsigned long long)c->id, c->remote, status,
		  why ? why : "?");
	respond_status(c, status, NULL, 0);
}

static void serve_get(struct net_conn *c, const char *path, int head_only, int keep_alive)
{
	struct net_server *srv = c->srv;
	if (!srv->cb.on_http_get) {
		respond_status(c, 404, NULL, keep_alive);
		return;
	}
	struct strbuf body = STRBUF_INIT, headers = STRBUF_INIT;
	const char *content_type = "text/plain; charset=utf-8";
	int status = srv->cb.on_http_get(c, path, &body, &content_type, &headers, srv->cb.arg);
	if (status < 200 || status > 599)
		status = 500;
	if (c->state == ST_OPEN) {
		queue_response(c, (unsigned)status, content_type, body.buf, body.len, keep_alive,
			       headers.len ? headers.buf : NULL, head_only);
		finish_request(c, keep_alive);
	}
	strbuf_release(&headers);
	strbuf_release(&body);
}

static void switch_to_websocket(struct net_conn *c, const struct http_message *m)
{
	char accept[WS_ACCEPT_LEN + 1];
	struct strbuf extra = STRBUF_INIT;
	ws_accept_key(m->headers[HTTP_H_WS_KEY].buf, m->headers[HTTP_H_WS_KEY].len, accept);
	strbuf_addf(&extra, "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n", accept);
	queue_response(c, 101, NULL, NULL, 0, 1, extra.buf, 0);
	strbuf_release(&extra);
	http_reader_release(c->http);
	free(c->http);
	c->http = NULL;
	c->kind = NET_CONN_WS;
	c->request_deadline = 0;
	c->ws = xmalloc(sizeof(*c->ws));
	ws_parser_init(c->ws, WS_ROLE_SERVER, c->srv->cfg.max_message);
	arm_timer(c);
}

static void handle_ws_upgrade(struct net_conn *c, const struct http_message *m, int keep_alive)
{
	static const char upgrade_hint[] = "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n";
	if (m->method != HTTP_GET) {
		respond_status(c, 405, "Allow: GET\r\n", keep_alive);
		return;
	}
	if (!http_header_has_token(m->headers[HTTP_H_UPGRADE].buf, "websocket") ||
	    !http_header_has_token(m->headers[HTTP_H_CONNECTION].buf, "upgrade") || !m->upgrade) {
		respond_status(c, 426, upgrade_hint, keep_alive);
		return;
	}
	if (strcmp(m->headers[HTTP_H_WS_VERSION].buf, "13") != 0) {
		respond_status(c, 426, upgrade_hint, keep_alive);
		return;
	}
	if (m->http_major != 1 || m->http_minor < 1 || !m->headers[HTTP_H_HOST].len ||
	    !ws_key_valid(m->headers[HTTP_H_WS_KEY].buf, m->headers[HTTP_H_WS_KEY].len)) {
		respond_bad_request(c, 400, "invalid WebSocket handshake");
		return;
	}
	switch_to_websocket(c, m);
}

/* The body handed to the callback lives in the HTTP reader: only now may the reader move on. */
static void end_request_callback(struct net_conn *c)
{
	c->in_request_callback = 0;
	if (c->finish_deferred) {
		c->finish_deferred = 0;
		if (c->state == ST_OPEN)
			finish_request(c, c->reply_keep_alive);
	}
}

static void handle_rpc_post(struct net_conn *c, const struct http_message *m, int keep_alive)
{
	struct net_server *srv = c->srv;
	if (m->method != HTTP_POST) {
		respond_status(c, 405, "Allow: POST\r\n", keep_alive);
		return;
	}
	c->awaiting_reply = 1;
	c->reply_keep_alive = keep_alive;
	if (m->body_too_large) {
		srv->stats.oversize_refusals++;
		log_debug("net: http connection %llu (%s): POST /rpc body over %zu bytes refused",
			  (unsigned long long)c->id, c->remote, srv->cfg.max_message);
		if (srv->cb.on_oversize) {
			c->in_request_callback = 1;
			srv->cb.on_oversize(c, srv->cb.arg);
			end_request_callback(c);
		} else {
			c->awaiting_reply = 0;
			respond_status(c, 413, NULL, keep_alive);
		}
		return;
	}
	srv->stats.messages_in++;
	c->in_request_callback = 1;
	if (srv->cb.on_message)
		srv->cb.on_message(c, m->body.buf, m->body.len, srv->cb.arg);
	end_request_callback(c);
}

/* A browser's request (it carries Origin) that acts — a WebSocket upgrade or POST /rpc — needs an origin on_origin
 * serves; 0 when it was answered 403 instead. */
static int origin_served(struct net_conn *c, const struct http_message *m)
{
	struct net_server *srv = c->srv;
	const struct strbuf *origin = &m->headers[HTTP_H_ORIGIN];
	c->from_browser = origin->len > 0;
	if (!origin->len || !srv->cb.on_origin || srv->cb.on_origin(c, origin->buf, srv->cb.arg))
		return 1;
	srv->stats.origin_refusals++;
	log_debug("net: http connection %llu (%s): Origin %.100s refused", (unsigned long long)c->id, c->remote,
		  origin->buf);
	respond_status(c, 403, NULL, 0);
	return 0;
}

/* GET /terminal is a WebSocket when the request asks for one, else a page (on_http_get). */
static int asks_upgrade(const struct http_message *m)
{
	return m->headers[HTTP_H_UPGRADE].len || m->upgrade;
}

static void handle_request(struct net_conn *c)
{
	struct http_message *m = &c->http->msg;
	c->request_deadline = 0;
	c->last_message = loop_now_ms();
	if (m->http_major != 1) {
		respond_bad_request(c, 505, "HTTP version not supported");
		return;
	}
	if (m->target.buf[0] != '/') {
		respond_bad_request(c, 400, "request target is not a path");
		return;
	}
	int keep_alive = keep_alive_for(c, m->keep_alive);
	size_t path_len = http_target_path_len(m->target.buf);
	strbuf_setlen(&m->target, path_len);
	const char *path = m->target.buf;
	if (!strcmp(path, "/ws") || (!strcmp(path, "/terminal") && asks_upgrade(m))) {
		c->terminal_path = !strcmp(path, "/terminal");
		if (origin_served(c, m))
			handle_ws_upgrade(c, m, keep_alive);
	} else if (!strcmp(path, "/rpc")) {
		if (origin_served(c, m))
			handle_rpc_post(c, m, keep_alive);
	} else if (m->method == HTTP_GET || m->method == HTTP_HEAD)
		serve_get(c, path, m->method == HTTP_HEAD, keep_alive);
	else
		respond_status(c, 405, "Allow: GET, HEAD\r\n", keep_alive);
}

static int send_rpc_reply(struct net_conn *c, const char *data, size_t len)
{
	c->awaiting_reply = 0;
	if (len)
		queue_response(c, 200, "application/json", data, len, c->reply_keep_alive, NULL, 0);
	else
		queue_response(c, 204, NULL, NULL, 0, c->reply_keep_alive, NULL, 0);
	if (c->state == ST_DEAD)
		return -1;
	if (c->in_request_callback) {
		c->finish_deferred = 1;
		return 0;
	}
	finish_request(c, c->reply_keep_alive);
	if (!c->processing && c->state == ST_OPEN)
		queue_work(c); /* pipelined requests may be waiting in the input buffer */
	return 0;
}

/* --- input framing ---------------------------------------------------------------------- */

static void deliver_message(struct net_conn *c, const char *data, size_t len)
{
	struct net_server *srv = c->srv;
	srv->stats.messages_in++;
	c->last_message = loop_now_ms();
	if (srv->cb.on_message)
		srv->cb.on_message(c, data, len, srv->cb.arg);
}

static void deliver_oversize(struct net_conn *c)
{
	struct net_server *srv = c->srv;
	srv->stats.oversize_refusals++;
	log_debug("net: %s connection %llu (%s): message over %zu bytes refused", kind_name(c->kind),
		  (unsigned long long)c->id, c->remote, srv->cfg.max_message);
	if (srv->cb.on_oversize)
		srv->cb.on_oversize(c, srv->cb.arg);
}

static void process_ndjson(struct net_conn *c)
{
	enum ndjson_event ev;
	const char *line = NULL;
	size_t len = 0;
	c->in_off += ndjson_feed(c->nd, c->in.buf + c->in_off, c->in.len - c->in_off, &ev, &line, &len);
	if (ev == NDJSON_LINE)
		deliver_message(c, line, len);
	else if (ev == NDJSON_OVERSIZE)
		deliver_oversize(c);
}

static void ws_fail(struct net_conn *c, uint16_t code, const char *why)
{
	log_debug("net: ws connection %llu (%s): closing with %u: %s", (unsigned long long)c->id, c->remote, code, why);
	queue_ws_close(c, code, why);
	begin_close(c);
}

static void handle_ws_event(struct net_conn *c, const struct ws_event *ev)
{
	struct net_server *srv = c->srv;
	switch (ev->type) {
	case WS_EV_NEED_MORE:
	case WS_EV_PONG:
		break;
	case WS_EV_MESSAGE:
		if (ev->opcode == WS_OP_TEXT) {
			deliver_message(c, ev->data, ev->len);
		} else if (srv->cb.on_binary) {
			srv->stats.messages_in++;
			c->last_message = loop_now_ms();
			srv->cb.on_binary(c, ev->data, ev->len, srv->cb.arg);
		} else {
			ws_fail(c, WS_CLOSE_UNSUPPORTED, "binary messages are not accepted");
		}
		break;
	case WS_EV_PING:
		if (!c->ws_close_sent)
			queue_ws_frame(c, WS_OP_PONG, ev->data, ev->len);
		break;
	case WS_EV_CLOSE:
		queue_ws_close(c, ev->close_code, NULL); /* echo the peer's code */
		begin_close(c);
		break;
	case WS_EV_OVERSIZE:
		deliver_oversize(c);
		break;
	case WS_EV_ERROR:
		srv->stats.protocol_errors++;
		ws_fail(c, ev->close_code, ev->reason);
		break;
	}
}

static void process_ws(struct net_conn *c)
{
	struct ws_event ev;
	c->in_off += ws_parser_feed(c->ws, c->in.buf + c->in_off, c->in.len - c->in_off, &ev);
	handle_ws_event(c, &ev);
}

static void process_http(struct net_conn *c)
{
	enum http_read_event ev;
	c->in_off += http_reader_feed(c->http, c->in.buf + c->in_off, c->in.len - c->in_off, &ev);
	if (c->http->continue_pending) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		c->http->continue_pending = 0;
		queue_raw(c, cont, sizeof(cont) - 1);
	}
	if (ev == HTTP_ERROR)
		respond_bad_request(c, c->http->error_status, c->http->error);
	else if (ev == HTTP_MESSAGE)
		handle_request(c);
}

/* Sends the output queued for other connections (events) when it has waited SEND_DELAY_US behind c's input:
 * a long burst of input (an executor's report_message lines) does not hold its events back until all of it is
 * processed. The connections stay on the work list: what they queue next goes at the end of the iteration. */
static void send_delayed_output(struct net_conn *c)
{
	struct net_server *srv = c->srv;
	if (!srv->sends_queued_at || loop_now_us() - srv->sends_queued_at < SEND_DELAY_US)
		return;
	srv->sends_queued_at = 0;
	for (struct net_conn *o = srv->work; o; o = o->work_next)
		if (o != c && o->work_flush_only && !o->processing)
			flush_output(o);
}

static void process_input(struct net_conn *c)
{
	c->processing = 1;
	while (c->state == ST_OPEN && c->in_off < c->in.len && !c->awaiting_reply) {
		size_t before = c->in_off;
		enum net_conn_kind kind = c->kind;
		if (kind == NET_CONN_UNIX)
			process_ndjson(c);
		else if (kind == NET_CONN_WS)
			process_ws(c);
		else
			process_http(c);
		if (c->in_off == before && c->kind == kind && c->state == ST_OPEN && !c->awaiting_reply &&
		    (!c->http || !c->http->message_done))
			break; /* nothing consumed, nothing reported: wait for more bytes */
		send_delayed_output(c);
	}
	c->processing = 0;
	if (c->state == ST_DEAD)
		return;
	if (c->in_off >= c->in.len) {
		release_if_big(&c->in);
		c->in_off = 0;
	} else if (c->in_off) {
		strbuf_remove_front(&c->in, c->in_off);
		c->in_off = 0;
	}
	flush_output(c);
	if (c->state == ST_OPEN && c->peer_eof && !c->awaiting_reply)
		begin_close(c);
}

static void on_peer_eof(struct net_conn *c)
{
	c->peer_eof = 1;
	if (!c->awaiting_reply)
		begin_close(c);
}

static void read_input(struct net_conn *c)
{
	size_t budget = READ_BUDGET;
	while (c->state == ST_OPEN && !c->peer_eof && !c->awaiting_reply) {
		strbuf_grow(&c->in, READ_CHUNK);
		size_t room = c->in.alloc - c->in.len - 1;
		ssize_t n = conn_recv(c, c->in.buf + c->in.len, room);
		c->read_wants_write = n == IO_WANT_WRITE;
		if (n > 0) {
			strbuf_setlen(&c->in, c->in.len + (size_t)n);
			c->srv->stats.bytes_in += (uint64_t)n;
			c->last_activity = loop_now_ms();
			process_input(c);
			if ((size_t)n >= budget) {
				if (c->tls && c->state == ST_OPEN && tls_pending(c->tls))
					drain_later(c);
				break;
			}
			budget -= (size_t)n;
			if ((size_t)n < room && (!c->tls || !tls_pending(c->tls)))
				break; /* drained: epoll reports anything newer (level-triggered), saving an EAGAIN read
					*/
			continue;
		}
		if (n == 0)
			on_peer_eof(c);
		else if (n == IO_ERROR)
			kill_conn(c, "read failed");
		break;
	}
}

/* Reads and throws away what the peer sends after we closed our side, until its EOF. */
static void discard_input(struct net_conn *c)
{
	char buf[4096];
	for (int i = 0; i < 16; i++) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
		if (n > 0)
			continue;
		if (n < 0 && (errno == EINTR))
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		kill_conn(c, NULL);
		return;
	}
}

static void continue_handshake(struct net_conn *c)
{
	struct err e = ERR_INIT;
	int r = tls_handshake(c->tls, &e);
	if (r == 0) {
		c->state = ST_OPEN;
		c->hs_wants_write = 0;
		read_input(c); /* the first request may already sit in the TLS buffers */
	} else if (r == TLS_WANT_READ || r == TLS_WANT_WRITE) {
		c->hs_wants_write = r == TLS_WANT_WRITE;
	} else {
		c->srv->stats.tls_failures++;
		log_debug("net: TLS handshake with %s failed: %s", c->remote, e.message);
		kill_conn(c, NULL);
	}
	err_clear(&e);
}

static void on_conn_io(struct loop *l, int fd, unsigned events, void *arg)
{
	(void)l;
	(void)fd;
	struct net_conn *c = arg;
	switch (c->state) {
	case ST_HANDSHAKE:
		continue_handshake(c);
		break;
	case ST_OPEN:
		if ((events & (LOOP_HUP | LOOP_ERROR)) && (c->awaiting_reply || c->peer_eof) && !out_pending(c)) {
			kill_conn(c, "peer went away"); /* not reading: EPOLLHUP would repeat forever */
			break;
		}
		if ((events & LOOP_WRITE) || (c->write_wants_read && (events & LOOP_READ)))
			flush_output(c);
		if (c->state == ST_OPEN && ((events & LOOP_READ) || (c->read_wants_write && (events & LOOP_WRITE))))
			read_input(c);
		break;
	case ST_FLUSHING:
		flush_output(c);
		break;
	case ST_LINGER:
		discard_input(c);
		break;
	case ST_DEAD:
		return;
	}
	if (c->state != ST_DEAD)
		update_interest(c);
}

/* --- accepting --------------------------------------------------------------------------- */

/* "127.0.0.1", "::1", or "unix". */
static void format_ip(char out[INET6_ADDRSTRLEN], const struct sockaddr_storage *ss)
{
	const void *addr = ss->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
						    : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
	if ((ss->ss_family != AF_INET && ss->ss_family != AF_INET6) ||
	    !inet_ntop(ss->ss_family, addr, out, INET6_ADDRSTRLEN))
		snprintf(out, INET6_ADDRSTRLEN, "unix");
}

/* "127.0.0.1:50412", "[::1]:50412", or "unix". */
static void format_remote(char out[REMOTE_LEN], const struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		port = ntohs(sin->sin_port);
		snprintf(out, REMOTE_LEN, "%s:%u", host, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		port = ntohs(sin6->sin6_port);
		snprintf(out, REMOTE_LEN, "[%s]:%u", host, port);
	} else {
		snprintf(out, REMOTE_LEN, "unix");
	}
}

static void take_peer_cred(struct net_conn *c)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
		c->have_cred = 1;
		c->uid = cred.uid;
		c->gid = cred.gid;
		c->pid = cred.pid;
	}
}

/* The connection counts against the caps (net.h "Caps") until forget_counted(). */
static void count_open(struct net_conn *c)
{
	struct net_server *srv = c->srv;
	if (c->kind == NET_CONN_UNIX) {
		srv->unix_open++;
		return;
	}
	srv->tcp_open++;
	srv->unauthenticated++;
	if (c->has_addr)
		addr_counts_add(srv->per_addr, &c->addr);
}

static void conn_new(struct net_server *srv, const struct listener *lst, int fd, const struct sockaddr_storage *ss)
{
	struct err e = ERR_INIT;
	struct net_conn *c = xcalloc(1, sizeof(*c));
	c->srv = srv;
	c->fd = fd;
	c->id = ++srv->next_id;
	c->state = ST_OPEN;
	strbuf_init(&c->in, 0);
	strbuf_init(&c->out, 0);
	c->last_activity = c->last_message = loop_now_ms();
	format_remote(c->remote, ss);
	format_ip(c->ip, ss);
	if (lst->is_unix) {
		c->kind = NET_CONN_UNIX;
		c->authenticated = 1;
		take_peer_cred(c);
		c->nd = xmalloc(sizeof(*c->nd));
		ndjson_init(c->nd, srv->cfg.max_message);
	} else {
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->kind = NET_CONN_HTTP;
		c->has_addr = addr_key_from(ss, &c->addr) == 0;
		c->http = xmalloc(sizeof(*c->http));
		http_reader_init(c->http, HTTP_REQUEST, srv->cfg.max_header, srv->cfg.max_message);
		c->request_deadline = c->last_activity + srv->cfg.header_timeout_ms;
		if (lst->tls) {
			c->tls = tls_new(srv->tls, fd, NULL, &e);
			c->state = ST_HANDSHAKE;
		}
	}
	if ((lst->tls && !c->tls) || loop_add_fd(srv->loop, fd, LOOP_READ, on_conn_io, c, &e) < 0) {
		log_warn("net: cannot take a connection from %s: %s", c->remote, e.message);
		err_clear(&e);
		close(fd);
		conn_free(c);
		return;
	}
	c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = c;
	srv->conns = c;
	srv->stats.connections_open++;
	srv->stats.connections_total++;
	count_open(c);
	arm_timer(c);
	c->opened = 1;
	if (srv->cb.on_open)
		srv->cb.on_open(c, srv->cb.arg);
}

static void on_listener(struct loop *l, int fd, unsigned events, void *arg);

static void resume_accepting(struct loop *l, void *arg)
{
	struct net_server *srv = arg;
	srv->accept_timer = NULL;
	if (!srv->accepting)
		return;
	if (srv->unix_l.fd >= 0)
		loop_set_events(l, srv->unix_l.fd, LOOP_READ);
	if (srv->tcp_l.fd >= 0)
		loop_set_events(l, srv->tcp_l.fd, LOOP_READ);
}

/* Out of descriptors or memory: stop accepting for a moment instead of spinning on the listener. */
static void pause_accepting(struct net_server *srv, int errnum)
{
	log_warn("net: accept: %s: pausing for %d ms", strerror(errnum), ACCEPT_RETRY_MS);
	if (srv->unix_l.fd >= 0)
		loop_set_events(srv->loop, srv->unix_l.fd, 0);
	if (srv->tcp_l.fd >= 0)
		loop_set_events(srv->loop, srv->tcp_l.fd, 0);
	if (!srv->accept_timer)
		srv->accept_timer = loop_timer_add(srv->loop, ACCEPT_RETRY_MS, resume_accepting, srv);
}

/* Why a new connection must be closed at once (net.h "Caps"), counted by reason; NULL when it may stay. */
static const char *refusal(struct net_server *srv, const struct listener *lst, int cfd,
			   const struct sockaddr_storage *ss)
{
	const struct net_server_config *cfg = &srv->cfg;
	struct addr_key k;
	if (lst->is_unix) {
		if (srv->unix_open < cfg->max_unix_connections)
			return NULL;
		srv->stats.refused++;
		return "the Unix connections are at their cap";
	}
	if (srv->tcp_open >= cfg->max_connections) {
		srv->stats.refused++;
		return "the TCP connections are at their cap";
	}
	if (cfg->tcp_fd_ceiling > 0 && cfd >= cfg->tcp_fd_ceiling) {
		srv->stats.refused_reserve++;
		return "the descriptors left are kept for the Unix socket and the rest of the process";
	}
	if (cfg->max_per_ip && addr_key_from(ss, &k) == 0 && addr_counts_get(srv->per_addr, &k) >= cfg->max_per_ip) {
		srv->stats.refused_per_ip++;
		return "the connections from this address are at their cap";
	}
	if (cfg->max_unauthenticated && srv->unauthenticated >= cfg->max_unauthenticated) {
		srv->stats.refused_unauthenticated++;
		return "the connections not authenticated yet are at their cap";
	}
	return NULL;
}

/* At most once a second: a flood must not flood the log. */
static void log_refusal(struct net_server *srv, const struct sockaddr_storage *ss, const char *why)
{
	uint64_t now = loop_now_ms();
	if (now - srv->refusal_logged_at < 1000)
		return;
	srv->refusal_logged_at = now;
	char remote[REMOTE_LEN];
	format_remote(remote, ss);
	log_warn("net: refusing new connections (%s, for one): %s (%u TCP, %u of them unauthenticated, %u Unix open)",
		 remote, why, srv->tcp_open, srv->unauthenticated, srv->unix_open);
}

static void on_listener(struct loop *l, int fd, unsigned events, void *arg)
{
	(void)l;
	(void)events;
	struct listener *lst = arg;
	struct net_server *srv = lst->srv;
	for (int i = 0; i < ACCEPT_BUDGET && srv->accepting; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		memset(&ss, 0, sizeof(ss));
		int cfd = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				pause_accepting(srv, errno);
			else if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warn("net: accept: %s", strerror(errno));
			return;
		}
		const char *why = refusal(srv, lst, cfd, &ss);
		if (why) {
			log_refusal(srv, &ss, why);
			close(cfd);
			continue;
		}
		conn_new(srv, lst, cfd, &ss);
	}
}

/* --- listeners --------------------------------------------------------------------------- */

/* An existing path is replaced only when it is a socket that nobody accepts on. */
static int remove_stale_socket(const char *path, struct err *e)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : err_errno(e, errno, "%s", path);
	if (!S_ISSOCK(st.st_mode))
		return err_set(e, E_ALREADY_EXISTS, "%s exists and is not a socket", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_errno(e, errno, "socket");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	int errnum = errno;
	close(fd);
	if (r == 0)
		return err_set(e, E_ALREADY_EXISTS, "another process is listening on %s", path);
	if (errnum != ECONNREFUSED && errnum != ENOENT)
		return err_errno(e, errnum, "probing %s", path);
	if (unlink(path) < 0 && errno != ENOENT)
		return err_errno(e, errno, "removing the stale socket %s", path);
	return 0;
}

static int bind_unix_socket(int fd, const struct sockaddr_un *sa, struct err *e)
{
	mode_t old = umask(0177);
	int r = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));
	int errnum = errno;
	umask(old);
	return r < 0 ? err_errno(e, errnum, "bind %s", sa->sun_path) : 0;
}

int net_unix_address(const char *path, struct sockaddr_un *sa, struct err *e)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return err_set(e, E_INVALID_PAYLOAD,
			       "socket path is %zu bytes, longer than the %zu a Unix socket allows: %s", strlen(path),
			       sizeof(sa->sun_path) - 1, path);
	memcpy(sa->sun_path, path, strlen(path) + 1);
	return 0;
}

static int listen_unix(struct net_server *srv, struct err *e)
{
	const char *path = srv->unix_path;
	struct sockaddr_un sa;
	if (net_unix_address(path, &sa, e) < 0) {
		e->code = E_CONFIG;
		return -1;
	}
	if (remove_stale_socket(path, e) < 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_errno(e, errno, "socket");
	srv->unix_l.fd = fd;
	if (bind_unix_socket(fd, &sa, e) < 0)
		return -1;
	struct stat st;
	if (stat(path, &st) == 0) {
		srv->unix_dev = st.st_dev;
		srv->unix_ino = st.st_ino;
	}
	if (srv->cfg.unix_gid_set && chown(path, (uid_t)-1, srv->cfg.unix_gid) < 0)
		return err_errno(e, errno, "chown %s to group %u", path, (unsigned)srv->cfg.unix_gid);
	if (chmod(path, srv->cfg.unix_mode) < 0)
		return err_errno(e, errno, "chmod %s", path);
	if (listen(fd, srv->cfg.backlog) < 0)
		return err_errno(e, errno, "listen %s", path);
	return loop_add_fd(srv->loop, fd, LOOP_READ, on_listener, &srv->unix_l, e);
}

static int bind_tcp_address(const struct addrinfo *ai, int backlog)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, backlog) < 0) {
		int errnum = errno;
		close(fd);
		errno = errnum;
		return -1;
	}
	return fd;
}

static int bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

static int listen_tcp(struct net_server *srv, const char *host, struct err *e)
{
	if (!host || !*host)
		host = "127.0.0.1";
	char port[16];
	snprintf(port, sizeof(port), "%d", srv->cfg.tcp_port < 0 ? 0 : srv->cfg.tcp_port);
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	int r = getaddrinfo(host, port, &hints, &res);
	if (r != 0)
		return err_set(e, E_CONFIG, "cannot resolve %s: %s", host, gai_strerror(r));
	int fd = -1, errnum = 0;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = bind_tcp_address(ai, srv->cfg.backlog);
		errnum = errno;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return err_errno(e, errnum, "listening on %s:%s", host, port);
	srv->tcp_l.fd = fd;
	srv->tcp_port = bound_port(fd);
	return loop_add_fd(srv->loop, fd, LOOP_READ, on_listener, &srv->tcp_l, e);
}

static void apply_defaults(struct net_server_config *cfg)
{
	if (!cfg->unix_mode)
		cfg->unix_mode = 0600;
	if (!cfg->max_message)
		cfg->max_message = DEFAULT_MAX_MESSAGE;
	if (!cfg->max_header)
		cfg->max_header = DEFAULT_MAX_HEADER;
	if (!cfg->out_high_water)
		cfg->out_high_water = DEFAULT_HIGH_WATER;
	if (!cfg->header_timeout_ms)
		cfg->header_timeout_ms = DEFAULT_HEADER_TIMEOUT_MS;
	if (!cfg->max_connections)
		cfg->max_connections = DEFAULT_MAX_CONNECTIONS;
	if (!cfg->max_unix_connections)
		cfg->max_unix_connections = DEFAULT_MAX_UNIX_CONNECTIONS;
	if (cfg->backlog <= 0)
		cfg->backlog = DEFAULT_BACKLOG;
}

static void close_listener(struct net_server *srv, struct listener *lst)
{
	if (lst->fd < 0)
		return;
	loop_del_fd(srv->loop, lst->fd);
	close(lst->fd);
	lst->fd = -1;
}

/* Removes the socket file only if it is still the one we bound (another daemon may have replaced it). */
static void remove_own_socket(struct net_server *srv)
{
	struct stat st;
	if (!srv->unix_path || !srv->unix_ino)
		return;
	if (lstat(srv->unix_path, &st) == 0 && st.st_dev == srv->unix_dev && st.st_ino == srv->unix_ino)
		unlink(srv->unix_path);
	srv->unix_ino = 0;
}

struct net_server *net_server_start(struct loop *l, const struct net_server_config *cfg, const struct net_callbacks *cb,
				    struct err *e)
{
	struct net_server *srv = xcalloc(1, sizeof(*srv));
	srv->loop = l;
	srv->per_addr = addr_counts_new();
	srv->cfg = *cfg;
	apply_defaults(&srv->cfg);
	srv->cb = *cb;
	srv->unix_l = (struct listener){ srv, -1, 1, 0 };
	srv->tcp_l = (struct listener){ srv, -1, 0, 0 };
	srv->accepting = 1;
	srv->cfg.tls_cert = srv->cfg.tls_key = srv->cfg.tcp_host = srv->cfg.unix_path = NULL; /* not kept */
	if (!cfg->unix_path && !cfg->tcp_port) {
		err_set(e, E_CONFIG, "nothing to listen on: neither a socket path nor a TCP port");
		goto fail;
	}
	if ((cfg->tls_cert && *cfg->tls_cert) != (cfg->tls_key && *cfg->tls_key)) {
		err_set(e, E_CONFIG, "TLS needs both a certificate and a key");
		goto fail;
	}
	if (cfg->tcp_port && cfg->tls_cert && *cfg->tls_cert) {
		srv->tls = tls_server_config_new(cfg->tls_cert, cfg->tls_key, e);
		if (!srv->tls)
			goto fail;
		srv->tcp_l.tls = 1;
	}
	if (cfg->unix_path) {
		srv->unix_path = xstrdup(cfg->unix_path);
		if (listen_unix(srv, e) < 0)
			goto fail;
	}
	if (cfg->tcp_port && listen_tcp(srv, cfg->tcp_host, e) < 0)
		goto fail;
	return srv;
fail:
	close_listener(srv, &srv->unix_l);
	close_listener(srv, &srv->tcp_l);
	remove_own_socket(srv);
	destroy_server(srv);
	return NULL;
}

int net_server_tcp_port(const struct net_server *s)
{
	return s ? s->tcp_port : 0;
}

void net_server_stop_accepting(struct net_server *s)
{
	if (!s || !s->accepting)
		return;
	s->accepting = 0;
	close_listener(s, &s->unix_l);
	close_listener(s, &s->tcp_l);
	remove_own_socket(s);
}

void net_server_close_all(struct net_server *s)
{
	for (struct net_conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		if (c->kind == NET_CONN_WS && c->state == ST_OPEN) {
			queue_ws_close(c, WS_CLOSE_GOING_AWAY, "server shutting down");
			begin_close(c);
		} else if (c->kind == NET_CONN_HTTP && c->awaiting_reply) {
			c->reply_keep_alive = 0; /* close once the pending answer is out */
		} else {
			net_conn_close(c);
		}
	}
}

void net_server_free(struct net_server *s)
{
	if (!s)
		return;
	net_server_stop_accepting(s);
	int deferred = s->work_scheduled;
	s->freeing = !deferred;
	for (struct net_conn *c = s->conns; c; c = c->next)
		kill_conn(c, NULL);
	if (deferred) { /* a deferred run_work is pending (called from a loop callback): it reaps and frees */
		log_debug("net: server freed from inside the loop: finishing at the end of the iteration");
		s->free_requested = 1;
		return;
	}
	s->free_requested = 1;
	run_work(s->loop, s);
}

void net_server_stats(const struct net_server *s, struct net_stats *out)
{
	*out = s->stats;
	out->tcp_open = s->tcp_open;
	out->unauthenticated_open = s->unauthenticated;
}

/* --- connection API ---------------------------------------------------------------------- */

static int send_line(struct net_conn *c, const char *data, size_t len)
{
	if (memchr(data, '\n', len)) {
		log_warn("net: refusing to send a message containing a newline on unix connection %llu",
			 (unsigned long long)c->id);
		return -1;
	}
	if (reserve(c, len + 1) < 0)
		return -1;
	strbuf_grow(&c->out, len + 1);
	strbuf_add(&c->out, data, len);
	strbuf_addch(&c->out, '\n');
	return 0;
}

int net_send(struct net_conn *c, const char *data, size_t len)
{
	if (!is_open(c))
		return -1;
	int r;
	switch (c->kind) {
	case NET_CONN_UNIX:
		r = send_line(c, data, len);
		break;
	case NET_CONN_WS:
		r = c->ws_close_sent ? -1 : queue_ws_frame(c, WS_OP_TEXT, data, len);
		break;
	default:
		r = c->awaiting_reply ? send_rpc_reply(c, data, len) : -1;
		break;
	}
	if (r < 0)
		return -1;
	c->srv->stats.messages_out++;
	after_queue(c);
	return c->state == ST_DEAD ? -1 : 0;
}

int net_conn_take_fd(struct net_conn *c)
{
	if (!c->npassed)
		return -1;
	int fd = c->passed_fds[0];
	memmove(c->passed_fds, c->passed_fds + 1, --c->npassed * sizeof(int));
	return fd;
}

void net_conn_set_authenticated(struct net_conn *c)
{
	if (c->authenticated || c->state == ST_DEAD)
		return;
	c->authenticated = 1;
	c->srv->unauthenticated--;
}

int net_conn_from_browser(const struct net_conn *c)
{
	return c->from_browser;
}

int net_conn_is_terminal(const struct net_conn *c)
{
	return c->terminal_path;
}

int net_send_binary(struct net_conn *c, const void *data, size_t len)
{
	if (!is_open(c) || c->kind != NET_CONN_WS || c->ws_close_sent)
		return -1;
	if (queue_ws_frame(c, WS_OP_BINARY, data, len) < 0)
		return -1;
	c->srv->stats.messages_out++;
	after_queue(c);
	return c->state == ST_DEAD ? -1 : 0;
}

void net_conn_close(struct net_conn *c)
{
	if (!c || (c->state != ST_OPEN && c->state != ST_HANDSHAKE))
		return;
	if (c->kind == NET_CONN_WS && c->state == ST_OPEN)
		queue_ws_close(c, WS_CLOSE_NORMAL, NULL);
	begin_close(c);
}

void net_conn_set_data(struct net_conn *c, void *data)
{
	c->data = data;
}

void *net_conn_get_data(const struct net_conn *c)
{
	return c->data;
}

enum net_conn_kind net_conn_kind(const struct net_conn *c)
{
	return c->kind;
}

int net_conn_peer_cred(const struct net_conn *c, uid_t *uid, gid_t *gid, pid_t *pid)
{
	if (!c->have_cred)
		return -1;
	if (uid)
		*uid = c->uid;
	if (gid)
		*gid = c->gid;
	if (pid)
		*pid = c->pid;
	return 0;
}

const char *net_conn_remote_addr(const struct net_conn *c)
{
	return c->remote;
}

const char *net_conn_remote_ip(const struct net_conn *c)
{
	return c->ip;
}
