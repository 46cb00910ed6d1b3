/* approvals_socket.h — the ask protocol: an authenticated local Unix socket between `approvals exec`
 * (client) and `approvals serve` (the UI). Never trusts a peer it has not checked, never blocks without a deadline. */
#ifndef AGOR_APPROVALS_SOCKET_H
#define AGOR_APPROVALS_SOCKET_H

/*
 * Protocol (one JSON line each way, one request per connection)
 * ------------------------------------------------------------
 * Request:  {"type":"request","id":ID,"nonce":NONCE,"ts":SECONDS,"hmac":HEX,
 *            "request":{"argv":[…],"cwd":DIR,"agentId":AGENT,"resolvedPath":PATH|null,
 *                       "executables"?:[{"path","owner","mode","sha256"}…],
 *                       "allowAlways"?:[PATTERN…],"allowAlwaysRefused"?:WHY}}
 *   executables: every executable the run starts, as checked (the UI shows them); allowAlways: the
 *   exact patterns allow-always records (the UI never analyses the command again); absent or
 *   empty, allow-always is answered as allow-once (allowAlwaysRefused says why).
 *   hmac = lowercase hex HMAC-SHA256(token, NONCE ":" SECONDS ":" REQUEST_JSON), where
 *   REQUEST_JSON is the "request" object serialised canonically: jansson
 *   JSON_COMPACT|JSON_SORT_KEYS (keys sorted, no spaces, UTF-8 unescaped, only '"', '\\' and
 *   control characters escaped) — for ASCII/UTF-8 text without control characters the same bytes
 *   as Python's json.dumps(r, sort_keys=True, separators=(",",":"), ensure_ascii=False).
 *   The token is the 64-hex-digit string itself (its ASCII bytes are the HMAC key).
 * Reply:    {"type":"decision","id":ID,"decision":"allow-once"|"allow-always"|"deny","hmac":HEX}
 *   with hmac = HMAC-SHA256(token, "decision:" NONCE ":" ID ":" DECISION), checked by the client;
 *   or      {"type":"error","id":ID|null,"error":{"code":CODE,"message":TEXT}} with CODE one of
 *   UID_MISMATCH, RATE_LIMITED, BUSY, TOO_LARGE, INVALID_REQUEST, BAD_HMAC, EXPIRED, REPLAY,
 *   UNAVAILABLE (no UI can answer), TIMEOUT (the request was not sent in time).
 *
 * Server (appr_serve): the socket is created 0600 in a directory that must be ours and 0700. For
 * every connection, before reading a byte: the peer's uid (SO_PEERCRED) must be under its rate limit
 * (APPR_RATE_LIMIT connections per APPR_RATE_WINDOW_MS — per uid, never per process, so forked
 * children share it) and all connections together under APPR_RATE_TOTAL; the uid must be the
 * server's euid; at most APPR_MAX_CONNECTIONS are open at once. Then: one line of at most APPR_REQUEST_MAX bytes
 * within APPR_READ_TIMEOUT_MS, a strict shape check, the HMAC (constant-time), |now - ts| <=
 * APPR_MAX_SKEW_S, and a nonce never seen within the window. Every refusal gets an error reply
 * and the connection is closed; the server keeps serving. Valid requests queue for the UI one at
 * a time; a client that hangs up leaves the queue.
 *
 * Client (appr_ask): connects without blocking (a missing, refused or busy socket is E_NOT_FOUND
 * at once), checks that the server runs as its own euid, sends, and waits at most timeout_ms
 * (E_TIMEOUT). An error reply is -1 with its message (code E_PERMISSION_DENIED).
 */

#include <jansson.h>

#include "approvals_policy.h"
#include "err.h"
#include "strbuf.h"

#define APPR_REQUEST_MAX     (256 * 1024)
#define APPR_MAX_SKEW_S	     10
#define APPR_RATE_LIMIT	     20
#define APPR_RATE_TOTAL	     60
#define APPR_RATE_WINDOW_MS  10000
#define APPR_MAX_CONNECTIONS 64
#define APPR_READ_TIMEOUT_MS 5000
#define APPR_EXECUTABLES_MAX 64

enum appr_answer { APPR_ANSWER_ALLOW_ONCE, APPR_ANSWER_ALLOW_ALWAYS, APPR_ANSWER_DENY };
const char *appr_answer_name(enum appr_answer a);
/* "o"/"once"/"allow-once", "a"/"always"/"allow-always", "d"/"deny" → the answer; -1 otherwise. */
int appr_answer_parse(const char *s);

/* What a client asks about. */
struct appr_ask_request {
	const char *const *argv;
	const char *cwd;
	const char *agent;
	const char *resolved;		  /* may be NULL */
	json_t *executables;		  /* may be NULL: [{path, owner, mode, sha256}] */
	json_t *allow_always;		  /* may be NULL: the patterns allow-always records */
	const char *allow_always_refused; /* may be NULL */
};

/* The request object (the signed part; NULL when a string is not valid UTF-8) and the signed
 * envelope. */
json_t *appr_request_object(const struct appr_ask_request *r);
/* hex_out gets 64 hex digits + NUL. */
void appr_request_hmac(const char *token, const char *nonce, long long ts, const json_t *request, char hex_out[65]);
json_t *appr_request_envelope(const char *token, const char *id, const char *nonce, long long ts,
			      json_t *request /* reference stolen */);

/* Asks the UI behind socket_path; 0 with *answer, or -1 (see the contract). */
int appr_ask(const char *socket_path, const char *token, const struct appr_ask_request *r, int timeout_ms,
	     enum appr_answer *answer, struct err *e);

/* The strict shape check of a request line as the server reads it (before its HMAC, ts and nonce): 0, or -1
 * with E_INVALID_PAYLOAD naming the field (answered INVALID_REQUEST). */
int appr_request_check(const json_t *line, struct err *e);

/* Terminal-safe display of an argv: shell-quoted words, control characters as \xNN, C1 controls, bidi
 * embeddings/overrides/isolates (U+202A–202E, U+2066–2069), marks and invisible characters as \u{XXXX}. */
void appr_format_argv(const json_t *argv, struct strbuf *out);
/* Every executable an analysis starts, as shown on a prompt: [{path, owner, mode, sha256}] (owner a user
 * name when the password database has one, mode 4 octal digits). Also the gateway's permission requests. */
json_t *appr_executables_json(const struct appr_analysis *a);
/* 0 when exes has that shape (at most APPR_EXECUTABLES_MAX entries); -1 naming the entry. */
int appr_executables_check(const json_t *exes, struct err *e);
/* The same escaping for any text (a path, a cwd). */
void appr_display_escape(const char *text, struct strbuf *out);

struct appr_server_ops {
	/* The socket is bound and listening (may be NULL). */
	void (*ready)(void *arg, const char *socket_path);
	/* The request (the inner "request" object) now awaits an answer on the UI. */
	void (*show)(void *arg, const json_t *request, size_t waiting);
	/* An answer was given; may downgrade *answer (e.g. allow-always that cannot be recorded). */
	void (*answered)(void *arg, const json_t *request, enum appr_answer *answer);
	/* Something worth a line on the UI (a refused connection). */
	void (*note)(void *arg, const char *text);
	void *arg;
};

/* Serves until SIGINT/SIGTERM (then 0) or a fatal error (-1). ui_fd: where answers are read
 * (lines, see appr_answer_parse); at its EOF, or when -1, requests are answered UNAVAILABLE. */
int appr_serve(const char *socket_path, const char *token, int ui_fd, const struct appr_server_ops *ops, struct err *e);

#endif
