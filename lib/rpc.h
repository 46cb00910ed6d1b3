/* rpc.h — JSON-RPC 2.0 message processing, independent of the transport: parses one message (a request,
 * a notification or a batch), dispatches each call through a method table and builds the reply text.
 * Never lets a handler's failure escape as anything but a JSON-RPC error object; never echoes params.
 *
 * Errors: -32700 parse error, -32600 invalid request, -32601 method not found, -32602 invalid params
 * (handlers set E_INVALID_PAYLOAD / E_USAGE), -32603 internal; application errors -32000…-32099 with
 * data.code one of the docs/payloads.md#results strings (E_AUTH_FAILED → -32001, E_NOT_FOUND → -32004, … see rpc.c).
 * A handler may answer later (RPC_DEFERRED) when it is not part of a batch: it keeps rc->id (incref) and
 * replies with rpc_result_text()/rpc_error_text() through its transport.
 */
#ifndef AGOR_RPC_H
#define AGOR_RPC_H

#include <jansson.h>

#include "err.h"
#include "strbuf.h"

#define RPC_DEFERRED 1

struct rpc_ctx {
	json_t *id; /* borrowed; NULL for a notification */
	int in_batch;
	void *peer; /* the transport's connection / caller identity */
	void *app;  /* the application (e.g. the daemon) */
};

/* Returns 0 with *result set (new reference, NULL → null), RPC_DEFERRED, or -1 with e set. */
typedef int (*rpc_handler_fn)(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e);

/* A handler's declaration: RPC_METHOD(method_users_create); */
#define RPC_METHOD(fn) int fn(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)

struct rpc_method {
	const char *name;
	rpc_handler_fn fn;
};

/* A method table is sorted by name, strictly (it is searched by bisection): rpc_table_unsorted returns the first
 * name out of order (or repeated), NULL when the table is sound. Processes msg; returns the reply to send (malloc'd) or
 * NULL when nothing is to be sent (notifications only, or a single deferred call). */
char *rpc_process(const struct rpc_method *methods, size_t nmethods, void *app, void *peer, const char *msg,
		  size_t len);
const char *rpc_table_unsorted(const struct rpc_method *methods, size_t n);
/* The reply to an oversized message: -32600 with id null. */
char *rpc_oversize_text(size_t limit);
char *rpc_result_text(const json_t *id, json_t *result /* stolen */);
char *rpc_error_text(const json_t *id, const struct err *e);
/* A server→client notification {"jsonrpc":"2.0","method":"event","params":{"type","data"}} (data stolen). */
char *rpc_event_text(const char *type, json_t *data);
/* Appends to out the "message" event of a stored message, built without jansson (one is sent for every
 * report_message): the same bytes as rpc_event_text("message", {task_id, session_id, message_type, data}), with
 * data_json (valid compact JSON, as stored) copied, not parsed, as data; a NULL string is null. */
void rpc_add_message_event(struct strbuf *out, const char *task_id, const char *session_id, const char *message_type,
			   const char *data_json);
/* The JSON-RPC error code for an error code string. */
int rpc_error_code(const char *code);

#endif
