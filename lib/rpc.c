/* rpc.c — JSON-RPC 2.0 parsing, dispatch and replies (rpc.h).
 * Never passes a malformed call to a handler; never builds a reply that is not valid JSON-RPC. */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "rpc.h"
#include "strbuf.h"
#include "banned.h"

enum {
	PARSE_ERROR = -32700,
	INVALID_REQUEST = -32600,
	METHOD_NOT_FOUND = -32601,
	INVALID_PARAMS = -32602,
	INTERNAL_ERROR = -32603
};

static const struct {
	const char *code;
	int rpc;
} app_codes[] = {
	{ E_AUTH_FAILED, -32001 },
	{ E_PERMISSION_DENIED, -32003 },
	{ E_NOT_FOUND, -32004 },
	{ E_ALREADY_EXISTS, -32009 },
	{ E_TIMEOUT, -32008 },
	{ E_CANCELLED, -32010 },
	{ E_NOT_BUILT, -32011 },
	{ E_GIT_ERROR, -32012 },
	{ E_WORKTREE_DIRTY, -32013 },
	{ E_PATH_OUTSIDE_DATA_HOME, -32014 },
	{ E_IMPERSONATION_FAILED, -32015 },
	{ E_ISOLATION_UNAVAILABLE, -32016 },
	{ E_EXECUTOR_RESULT_MISSING, -32017 },
	{ E_CONFIG, -32018 },
	{ E_SYSTEM, -32019 },
};

int rpc_error_code(const char *code)
{
	if (!code)
		return INTERNAL_ERROR;
	if (!strcmp(code, E_INVALID_PAYLOAD) || !strcmp(code, E_USAGE))
		return INVALID_PARAMS;
	for (size_t i = 0; i < ARRAY_SIZE(app_codes); i++)
		if (!strcmp(code, app_codes[i].code))
			return app_codes[i].rpc;
	return !strcmp(code, E_INTERNAL) ? INTERNAL_ERROR : -32000;
}

static json_t *error_object(int code, const char *message, const struct err *e)
{
	json_t *err = json_pack("{s:i,s:s}", "code", code, "message", message);
	if (e && e->code) {
		json_t *data = json_pack("{s:s}", "code", e->code);
		if (e->details)
			json_object_set(data, "details", e->details);
		json_object_set_new(err, "data", data);
	}
	return err;
}

static json_t *error_reply(const json_t *id, int code, const char *message, const struct err *e)
{
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? (json_t *)id : json_null(), "error",
			 error_object(code, message, e));
}

static char *dump_and_free(json_t *j)
{
	char *s = json_to_compact(j);
	json_decref(j);
	return s;
}

char *rpc_result_text(const json_t *id, json_t *result)
{
	return dump_and_free(json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? (json_t *)id : json_null(),
				       "result", result ? result : json_null()));
}

char *rpc_error_text(const json_t *id, const struct err *e)
{
	return dump_and_free(error_reply(id, rpc_error_code(e->code), e->message ? e->message : "error", e));
}

char *rpc_oversize_text(size_t limit)
{
	char msg[96];
	snprintf(msg, sizeof(msg), "message larger than %zu bytes refused", limit);
	return dump_and_free(error_reply(NULL, INVALID_REQUEST, msg, NULL));
}

char *rpc_event_text(const char *type, json_t *data)
{
	return dump_and_free(json_pack("{s:s,s:s,s:{s:s,s:o}}", "jsonrpc", "2.0", "method", "event", "params", "type",
				       type, "data", data ? data : json_null()));
}

void rpc_add_message_event(struct strbuf *out, const char *task_id, const char *session_id, const char *message_type,
			   const char *data_json)
{
	strbuf_grow(out, 160 + strlen(data_json));
	strbuf_addstr(
		out,
		"{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":{\"type\":\"message\",\"data\":{\"task_id\":");
	json_add_string_to_strbuf(out, task_id);
	strbuf_addstr(out, ",\"session_id\":");
	json_add_string_to_strbuf(out, session_id);
	strbuf_addstr(out, ",\"message_type\":");
	json_add_string_to_strbuf(out, message_type);
	strbuf_addstr(out, ",\"data\":");
	strbuf_addstr(out, data_json);
	strbuf_addstr(out, "}}}");
}

static int valid_id(const json_t *id)
{
	return !id || json_is_string(id) || json_is_integer(id) || json_is_null(id);
}

static int compare_method(const void *key, const void *elem)
{
	return strcmp(key, ((const struct rpc_method *)elem)->name);
}

static const struct rpc_method *find_method(const struct rpc_method *m, size_t n, const char *name)
{
	return bsearch(name, m, n, sizeof(*m), compare_method);
}

const char *rpc_table_unsorted(const struct rpc_method *methods, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (strcmp(methods[i - 1].name, methods[i].name) >= 0)
			return methods[i].name;
	return NULL;
}

/* One call → a reply object, or NULL (notification, or deferred). */
static json_t *process_call(const struct rpc_method *methods, size_t n, struct rpc_ctx *rc, json_t *call)
{
	json_t *id = json_object_get(call, "id");
	json_t *version = json_object_get(call, "jsonrpc");
	json_t *method = json_object_get(call, "method");
	json_t *params = json_object_get(call, "params");
	if (!json_is_object(call) || !json_is_string(version) || strcmp(json_string_value(version), "2.0") ||
	    !json_is_string(method) || !valid_id(id) || (params && !json_is_object(params) && !json_is_array(params)))
		return error_reply(
			json_is_object(call) && valid_id(id) ? id : NULL, INVALID_REQUEST,
			"invalid request: expected {\"jsonrpc\":\"2.0\",\"method\":…,\"params\"?:{…},\"id\"?:…}", NULL);
	const struct rpc_method *m = find_method(methods, n, json_string_value(method));
	if (!m)
		return id ? error_reply(id, METHOD_NOT_FOUND, "method not found", NULL) : NULL;
	if (params && !json_is_object(params))
		return id ? error_reply(id, INVALID_PARAMS, "params must be an object", NULL) : NULL;
	json_t *empty = params ? NULL : json_object();
	rc->id = id;
	json_t *result = NULL;
	struct err e = ERR_INIT;
	int rv = m->fn(rc, params ? params : empty, &result, &e);
	if (empty)
		json_decref(empty);
	json_t *reply = NULL;
	if (rv == RPC_DEFERRED && !rc->in_batch)
		reply = NULL;
	else if (rv < 0 && id)
		reply = error_reply(id, rpc_error_code(e.code), e.message ? e.message : "error", &e);
	else if (rv >= 0 && id)
		reply = json_pack("{s:s,s:O,s:O}", "jsonrpc", "2.0", "id", id, "result", result ? result : json_null());
	if (result)
		json_decref(result);
	err_clear(&e);
	return reply;
}

static char *process_batch(const struct rpc_method *methods, size_t n, struct rpc_ctx *rc, json_t *batch)
{
	if (!json_array_size(batch))
		return dump_and_free(error_reply(NULL, INVALID_REQUEST, "empty batch", NULL));
	json_t *replies = json_array();
	size_t i;
	json_t *call;
	rc->in_batch = 1;
	json_array_foreach(batch, i, call)
	{
		json_t *reply = process_call(methods, n, rc, call);
		if (reply)
			json_array_append_new(replies, reply);
	}
	if (!json_array_size(replies)) {
		json_decref(replies);
		return NULL;
	}
	return dump_and_free(replies);
}

char *rpc_process(const struct rpc_method *methods, size_t nmethods, void *app, void *peer, const char *msg, size_t len)
{
	json_error_t je;
	json_t *j = json_loadb(msg, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return dump_and_free(error_reply(NULL, PARSE_ERROR, "parse error", NULL));
	struct rpc_ctx rc = { .app = app, .peer = peer };
	char *out;
	if (json_is_array(j)) {
		out = process_batch(methods, nmethods, &rc, j);
	} else {
		json_t *reply = process_call(methods, nmethods, &rc, j);
		out = reply ? dump_and_free(reply) : NULL;
	}
	json_decref(j);
	return out;
}
