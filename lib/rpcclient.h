/* rpcclient.h — the blocking JSON-RPC 2.0 client of the CLI, executors and nodes: NDJSON on a Unix socket,
 * POST /rpc over HTTP(S) with keep-alive, or a WebSocket client (ws://, wss://) with masked frames.
 * Never runs an event loop, never waits longer than the caller allows, never accepts an unverified TLS server.
 *
 * Contract:
 *   - URLs: "unix:/path/to.sock" or a bare absolute path; "http://host[:port][/path]" and "https://…" (path
 *     default /rpc; ports default 80/443); "ws://host[:port][/path]" and "wss://…" (path default /ws).
 *     IPv6 literals go in brackets. TLS verifies the server against ca_file or ca_pem (default: the system bundle via
 *     SSL_CERT_FILE or the usual paths) and checks the host name; pin_sha256 additionally pins the server
 *     certificate's SHA-256 (with a pin and no ca_file, the pin alone is the trust anchor) — see tls.h.
 *   - rpc_client_send() sends one message (a compact JSON text; on Unix it must not contain '\n').
 *     rpc_client_recv() returns the next message: the next line / text frame, or for HTTP the body of the
 *     response to the oldest unanswered POST (empty for 204). Over WebSocket, pings are answered and binary
 *     frames go to on_binary (skipped without it) while waiting. timeout_ms < 0 waits without limit; 0 only
 *     takes what has arrived. A timeout fails with E_TIMEOUT and leaves the client usable; a message over
 *     max_message fails with E_PAYLOAD_TOO_LARGE and is skipped (the client stays usable); anything else (I/O
 *     error, the server closing) fails with E_SYSTEM and the client is then unusable (HTTP reconnects by itself
 *     on the next send when the server closed an idle keep-alive connection).
 *   - rpc_client_call() sends {"jsonrpc":"2.0","id":N,"method":…,"params":…} with a fresh id and waits for
 *     the response with that id; notifications arriving first go to on_notification (when set), responses
 *     with other ids are dropped. A JSON-RPC error becomes e: code = data.code when it is one of err.h's
 *     codes, else mapped from the JSON-RPC code (-32700 INVALID_JSON, -32600/-32602 INVALID_PAYLOAD, -32601
 *     UNKNOWN_COMMAND, others INTERNAL); message = error.message; details = {rpc_code, data?}.
 *     params is borrowed (may be NULL); *result is a new reference.
 */
#ifndef AGOR_RPCCLIENT_H
#define AGOR_RPCCLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "strbuf.h"

struct rpc_client_options {
	const char *ca_file;	/* TLS: CA certificates (PEM); NULL = the system bundle */
	const char *ca_pem;	/* TLS: CA certificates as PEM text, instead of ca_file */
	const char *pin_sha256; /* TLS: 64 hex digits of the server certificate's SHA-256, or NULL */
	int connect_timeout_ms; /* connect + TLS + WebSocket handshake; 0 = 10000 */
	int send_timeout_ms;	/* writing one message; 0 = 30000 */
	int call_timeout_ms;	/* rpc_client_call waiting for its answer; 0 = no limit */
	size_t max_message;	/* largest message accepted; 0 = 64 MiB */
	void (*on_notification)(json_t *msg, void *arg); /* rpc_client_call: messages without an id */
	/* WebSocket binary messages (a terminal's output), as they are read by recv or call; else skipped */
	void (*on_binary)(const void *data, size_t len, void *arg);
	void *arg;
};

struct rpc_client;

struct rpc_client *rpc_client_connect(const char *url, const struct rpc_client_options *opt, struct err *e);
int rpc_client_send(struct rpc_client *c, const char *json, size_t len, struct err *e);
/* One WebSocket binary message (a terminal stream's bytes); E_USAGE on any other transport. */
int rpc_client_send_binary(struct rpc_client *c, const void *data, size_t len, struct err *e);
int rpc_client_recv(struct rpc_client *c, struct strbuf *msg, int timeout_ms, struct err *e);
/* The connection's descriptor, for poll(): when it is readable, drain rpc_client_recv(…, 0) until E_TIMEOUT
 * (messages already buffered do not make it readable, so always drain after a wake-up). */
int rpc_client_fd(const struct rpc_client *c);
/* Changes opt.call_timeout_ms for the calls that follow (0: no limit). */
void rpc_client_set_call_timeout(struct rpc_client *c, int ms);
int rpc_client_call(struct rpc_client *c, const char *method, json_t *params, json_t **result, struct err *e);
/* Sends a WebSocket close / TLS close_notify (best effort) and frees everything. NULL is fine. */
void rpc_client_close(struct rpc_client *c);

/* Maps a JSON-RPC error object into e (see the contract); returns -1. */
int rpc_error_to_err(const json_t *error, struct err *e);

#endif
