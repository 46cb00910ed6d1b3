/* net.h — the daemon's message server on lib/loop: NDJSON over a Unix socket, WebSocket at GET /ws and POST /rpc
 * over TCP (TLS optional), whole messages to one callback, bounded queues and counters for /metrics.
 * Never blocks the loop, never grows a buffer without bound, never frees a connection inside its own callback.
 *
 * Contract (all of it runs on the loop's thread; no function here may be called from another thread):
 *
 * Listening. net_server_start() listens on cfg->unix_path (if set) and/or cfg->tcp_host:cfg->tcp_port (if
 *   tcp_port != 0; NET_TCP_EPHEMERAL picks a free port, read it back with net_server_tcp_port()). A Unix path
 *   longer than sun_path is refused; an existing path is replaced only if it is a socket nobody listens on.
 *   The socket file is created with mode unix_mode (default 0600; the process umask is briefly 0177 around
 *   bind so it is never wider in between) and group unix_gid when unix_gid_set. TLS applies to the TCP
 *   listener when tls_cert and tls_key are both set (PEM files; a key that does not match is refused).
 *
 * Connections and messages. Three kinds, one callback for whole messages, on_message(conn, data, len):
 *   NET_CONN_UNIX  one message per line (NDJSON; "\r\n" accepted, blank lines ignored);
 *   NET_CONN_WS    one message per text frame/fragmented message (GET /ws, or GET /terminal with an Upgrade
 *                  header; RFC 6455, masked client frames required; violations close with 1002/1007; pings
 *                  answered; close handshake honoured);
 *                  binary messages go to on_binary, or the connection is closed with 1003 when it is NULL;
 *   NET_CONN_HTTP  a TCP connection before (or without) a WebSocket upgrade: the body of POST /rpc is one
 *                  message. EVERY POST /rpc must be answered with exactly one net_send() — at once or later
 *                  (the connection reads nothing more until then): a non-empty message becomes "200
 *                  application/json", an empty one "204". Keep-alive and pipelining are supported; requests
 *                  are answered in order.
 *   GET/HEAD on any other path (and on /terminal without an Upgrade header) go to on_http_get(conn, path without
 *   query, body, &content_type, headers) → status (404 when on_http_get is NULL; content_type defaults to
 *   text/plain; headers may receive extra complete header lines, each ending in "\r\n"). /ws without a valid
 *   upgrade → 426 or 400; a wrong method → 405; a malformed request → 400 and close; a head over max_header →
 *   431 and close.
 *   data is NOT NUL-terminated and is valid until the callback returns (also after a net_send() inside it).
 *
 * Limits. A message over max_message (default 1 MiB) calls on_oversize(conn) and is skipped without being
 *   buffered; the connection stays open. On POST /rpc on_oversize must answer like on_message (the daemon sends
 *   a JSON-RPC -32600 error); without on_oversize the server answers 413 itself. The request head (TLS handshake,
 *   request line, headers and body) must arrive within header_timeout_ms (default 10 s; between keep-alive
 *   requests the same timeout applies to the next one) else 408/close. idle_timeout_ms (0 = none) closes a
 *   connection that has neither read nor written for that long (WS: close 1000 "idle timeout"; never while a
 *   POST /rpc awaits its answer). Per-message refusals and protocol errors are counted, and logged at debug
 *   level only (a flood must not flood the log); slow-reader drops are logged as warnings.
 *
 * Caps. A new connection over a cap is closed at once, counted by reason, and logged at most once a second.
 *   max_connections (default 4096) bounds open TCP connections and max_unix_connections (default 1024) Unix ones:
 *   a TCP flood never keeps a Unix peer out. tcp_fd_ceiling (0 = none) refuses a TCP connection whose descriptor
 *   is at or above it, so the descriptors above stay for the Unix socket and whatever else the process opens.
 *   max_per_ip (0 = none) bounds TCP connections from one address (addrcount.h: an IPv6 /64 is one address).
 *   max_unauthenticated (0 = none) bounds TCP connections the application has not yet marked with
 *   net_conn_set_authenticated() (Unix peers are known by SO_PEERCRED and always count as authenticated).
 *   auth_timeout_ms (0 = none): such a TCP connection that completes no request and no WebSocket message for that
 *   long is closed (WS: close 1008 "authentication timeout"; never while a POST /rpc awaits its answer), so bytes
 *   dripped into a message that never completes do not keep it open.
 *
 * Origins. When a WebSocket upgrade (/ws, /terminal) or a POST /rpc carries an Origin header — a browser sent it —
 *   on_origin(conn, origin) decides: 0 answers 403 and closes (counted in origin_refusals). Without on_origin every
 *   Origin is accepted. net_conn_from_browser() says whether the request being answered (POST /rpc) or the
 *   WebSocket's upgrade carried one.
 *
 * Output. net_send() queues one message: a line + '\n' on Unix (a message containing '\n' is refused), a text
 *   frame on WS, the response to the pending POST /rpc on HTTP (refused when none is pending). net_send_binary()
 *   queues a binary frame (WS only). Writes go out at the end of this connection's own on_message when the
 *   send happens inside it, else at the end of the loop iteration (one write for a burst of events) or, when
 *   another connection's input keeps the iteration busy, once they have waited 200 µs (events do not wait for a
 *   long burst of input to be processed whole; the daemon itself holds an event until the write it tells of is
 *   committed: daemon_peer.h). When the bytes still queued would exceed out_high_water (default 4 MiB) the peer is a
 * slow reader: the connection is closed at once, logged and counted (slow_drops) and the call returns -1. Every send
 * returns 0 when queued, -1 when refused or dropped.
 *
 * Lifetime. on_open(conn) runs when a connection is accepted (before any TLS handshake; a TCP connection is
 *   NET_CONN_HTTP until it upgrades to NET_CONN_WS). on_close(conn) runs exactly once for every opened
 *   connection, at the end of a loop iteration (never inside the connection's own callbacks); the pointer is
 *   valid until on_close returns and net_send() on it returns -1 from the moment it started closing.
 *   net_conn_close() is graceful: stop reading, send a WS close 1000, flush, shut down, wait briefly for the
 *   peer to finish, then close. net_server_stop_accepting() closes the listeners (and removes the socket file)
 *   while established connections go on; after it HTTP responses carry "Connection: close".
 *   net_server_close_all() closes every connection gracefully (WS close 1001). net_server_free() closes
 *   everything at once (on_close runs for each) and frees the server; call it from outside net callbacks —
 *   ideally after loop_run() returned.
 */
#ifndef AGOR_NET_H
#define AGOR_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "loop.h"
#include "strbuf.h"

struct sockaddr_un;

enum net_conn_kind { NET_CONN_UNIX, NET_CONN_HTTP, NET_CONN_WS };

#define NET_TCP_EPHEMERAL (-1) /* tcp_port: bind a free port */

struct net_server_config {
	const char *unix_path; /* NULL = no Unix socket */
	mode_t unix_mode;      /* 0 = 0600 */
	int unix_gid_set;
	gid_t unix_gid;
	const char *tcp_host; /* NULL = 127.0.0.1 */
	int tcp_port;	      /* 0 = no TCP listener; NET_TCP_EPHEMERAL = any free port */
	const char *tls_cert; /* PEM; TLS on TCP when both are set */
	const char *tls_key;
	size_t max_message;	       /* 0 = 1 MiB */
	size_t max_header;	       /* 0 = 16 KiB */
	size_t out_high_water;	       /* 0 = 4 MiB */
	unsigned header_timeout_ms;    /* 0 = 10000 */
	unsigned idle_timeout_ms;      /* 0 = none */
	unsigned max_connections;      /* 0 = 4096: open TCP connections */
	unsigned max_unix_connections; /* 0 = 1024 */
	int tcp_fd_ceiling;	       /* 0 = none: TCP connections on descriptors >= this are refused */
	unsigned max_per_ip;	       /* 0 = none: TCP connections from one address */
	unsigned max_unauthenticated;  /* 0 = none: TCP connections not yet authenticated */
	unsigned auth_timeout_ms;      /* 0 = none */
	int backlog;		       /* 0 = 128 */
};

struct net_conn;
struct net_server;

/* Fills *sa for the Unix socket at path; -1 (E_INVALID_PAYLOAD, naming the length limit) when path does not
 * fit sun_path. The one place every Unix socket address is made. */
int net_unix_address(const char *path, struct sockaddr_un *sa, struct err *e);

struct net_callbacks {
	void (*on_open)(struct net_conn *c, void *arg);
	void (*on_message)(struct net_conn *c, const char *data, size_t len, void *arg);
	void (*on_binary)(struct net_conn *c, const void *data, size_t len, void *arg);
	void (*on_oversize)(struct net_conn *c, void *arg);
	int (*on_http_get)(struct net_conn *c, const char *path, struct strbuf *body, const char **content_type,
			   struct strbuf *headers, void *arg);
	void (*on_close)(struct net_conn *c, void *arg);
	/* A browser's Origin header on a WebSocket upgrade or POST /rpc: 1 serves it, 0 answers 403. NULL: all served.
	 */
	int (*on_origin)(struct net_conn *c, const char *origin, void *arg);
	void *arg;
};

struct net_stats {
	uint64_t connections_open;
	uint64_t connections_total;
	uint64_t messages_in;
	uint64_t messages_out;
	uint64_t bytes_in;
	uint64_t bytes_out;
	uint64_t slow_drops;		  /* closed for exceeding out_high_water */
	uint64_t oversize_refusals;	  /* messages over max_message */
	uint64_t protocol_errors;	  /* malformed HTTP, WebSocket violations */
	uint64_t tls_failures;		  /* failed TLS handshakes */
	uint64_t timeouts;		  /* header or idle timeouts */
	uint64_t refused;		  /* over max_connections or max_unix_connections */
	uint64_t refused_reserve;	  /* TCP on a descriptor at or above tcp_fd_ceiling */
	uint64_t refused_per_ip;	  /* over max_per_ip */
	uint64_t refused_unauthenticated; /* over max_unauthenticated */
	uint64_t auth_timeouts;		  /* closed after auth_timeout_ms */
	uint64_t origin_refusals;	  /* 403 for an Origin on_origin refused */
	uint64_t tcp_open;		  /* now: open TCP connections */
	uint64_t unauthenticated_open;	  /* now: of which not authenticated */
};

struct net_server *net_server_start(struct loop *l, const struct net_server_config *cfg, const struct net_callbacks *cb,
				    struct err *e);
/* The bound TCP port, or 0 without a TCP listener. */
int net_server_tcp_port(const struct net_server *s);
void net_server_stop_accepting(struct net_server *s);
void net_server_close_all(struct net_server *s);
void net_server_free(struct net_server *s);
void net_server_stats(const struct net_server *s, struct net_stats *out);

int net_send(struct net_conn *c, const char *data, size_t len);
int net_send_binary(struct net_conn *c, const void *data, size_t len);
/* The oldest descriptor a Unix peer attached (SCM_RIGHTS) and nobody took yet, now the caller's; -1: none.
 * Descriptors arrive with the bytes they were sent with: take it while handling that message. */
int net_conn_take_fd(struct net_conn *c);
/* This TCP connection presented a credential the application accepted: it leaves max_unauthenticated and
 * auth_timeout_ms behind for good. A no-op on Unix connections. */
void net_conn_set_authenticated(struct net_conn *c);
/* 1 when the request being answered (POST /rpc) or the WebSocket's upgrade carried an Origin header. */
int net_conn_from_browser(const struct net_conn *c);
/* 1 when the WebSocket was opened at GET /terminal (a terminal relay) rather than /ws. */
int net_conn_is_terminal(const struct net_conn *c);
void net_conn_close(struct net_conn *c);

void net_conn_set_data(struct net_conn *c, void *data);
void *net_conn_get_data(const struct net_conn *c);
enum net_conn_kind net_conn_kind(const struct net_conn *c);
/* SO_PEERCRED taken at accept; -1 for TCP connections. Any pointer may be NULL. */
int net_conn_peer_cred(const struct net_conn *c, uid_t *uid, gid_t *gid, pid_t *pid);
/* "127.0.0.1:50412", "[::1]:50412", or "unix". */
const char *net_conn_remote_addr(const struct net_conn *c);
/* The same without the port: "127.0.0.1", "::1", or "unix". */
const char *net_conn_remote_ip(const struct net_conn *c);

#endif
