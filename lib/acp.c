/* acp.c — the Agent Client Protocol client (acp.h): initialize, session/new, session/prompt,
 * session updates mapped onto agor's messages, permission requests answered by the caller's ask. */
#include <string.h>
#include <unistd.h>

#include "acp.h"
#include "common.h"
#include "fsutil.h"
#include "json.h"
#include "banned.h"

#define GARBAGE_LINE_KEEP 4096

enum acp_call { CALL_INITIALIZE = 1, CALL_SESSION = 2, CALL_PROMPT = 3 };

struct acp_client {
	int to_agent; /* the CLI's stdin, or -1 once the turn ended */
	char *cwd, *prompt;
	acp_ask_fn ask;
	void *arg;
};

static void send_message(struct acp_client *c, json_t *msg /* stolen */)
{
	json_object_set_new(msg, "jsonrpc", json_string("2.0"));
	char *text = json_to_compact(msg);
	json_decref(msg);
	if (c->to_agent >= 0 &&
	    (fs_write_all(c->to_agent, text, strlen(text)) < 0 || fs_write_all(c->to_agent, "\n", 1) < 0)) {
		close(c->to_agent); /* the CLI is gone: its end is seen on stdout */
		c->to_agent = -1;
	}
	free(text);
}

static void call(struct acp_client *c, enum acp_call id, const char *method, json_t *params /* stolen */)
{
	send_message(c, json_pack("{s:i,s:s,s:o}", "id", id, "method", method, "params", params));
}

static void end_turn(struct acp_client *c)
{
	if (c->to_agent >= 0)
		close(c->to_agent);
	c->to_agent = -1;
}

struct acp_client *acp_start(int to_agent, const char *cwd, const char *prompt, acp_ask_fn ask, void *arg)
{
	struct acp_client *c = xcalloc(1, sizeof(*c));
	*c = (struct acp_client){
		.to_agent = to_agent, .cwd = xstrdup(cwd), .prompt = xstrdup(prompt), .ask = ask, .arg = arg
	};
	call(c, CALL_INITIALIZE, "initialize",
	     json_pack("{s:i,s:{s:{s:b,s:b},s:b}}", "protocolVersion", 1, "clientCapabilities", "fs", "readTextFile", 0,
		       "writeTextFile", 0, "terminal", 0));
	return c;
}

void acp_free(struct acp_client *c)
{
	if (!c)
		return;
	end_turn(c);
	free(c->cwd);
	free(c->prompt);
	free(c);
}

/* --- the calls' answers ------------------------------------------------------------------------- */

static void send_prompt(struct acp_client *c, const char *session_id, struct agent_state *st)
{
	if (!st->agent_session_id || strcmp(st->agent_session_id, session_id)) {
		free(st->agent_session_id);
		st->agent_session_id = xstrdup(session_id);
	}
	call(c, CALL_PROMPT, "session/prompt",
	     json_pack("{s:s,s:[{s:s,s:s}]}", "sessionId", session_id, "prompt", "type", "text", "text", c->prompt));
}

static void finish_turn(struct acp_client *c, struct agent_state *st, int failed, const char *reason, json_t *usage)
{
	st->finished = 1;
	st->failed = st->failed || failed;
	if (failed && !st->failure)
		st->failure = xstrdup(reason ? reason : "the agent reported an error");
	if (json_is_object(usage)) {
		if (st->usage)
			json_decref(st->usage);
		st->usage = json_deep_copy(usage);
	}
	end_turn(c);
}

static void on_answer(struct acp_client *c, json_t *msg, struct agent_state *st, agent_emit_fn emit, void *arg)
{
	json_int_t id = json_integer_value(json_object_get(msg, "id"));
	json_t *result = json_object_get(msg, "result"), *error = json_object_get(msg, "error");
	if (error) {
		const char *why = json_get_str(error, "message");
		finish_turn(c, st, 1, why, NULL);
		emit("error", json_pack("{s:s}", "message", why ? why : "the agent answered with an error"), arg);
	} else if (id == CALL_INITIALIZE) {
		call(c, CALL_SESSION, "session/new", json_pack("{s:s,s:[]}", "cwd", c->cwd, "mcpServers"));
	} else if (id == CALL_SESSION) {
		const char *sid = json_get_str(result, "sessionId");
		if (sid)
			send_prompt(c, sid, st);
		else
			finish_turn(c, st, 1, "session/new answered without a sessionId", NULL);
	} else if (id == CALL_PROMPT) {
		const char *stop = json_get_str(result, "stopReason");
		int failed = !stop || !strcmp(stop, "refusal") || !strcmp(stop, "cancelled");
		json_t *usage = json_object_get(result, "usage");
		if (!usage) /* Gemini: in _meta */
			usage = json_object_get(json_object_get(json_object_get(result, "_meta"), "quota"),
						"token_count");
		finish_turn(c, st, failed, stop ? stop : "the prompt ended without a stop reason", usage);
		emit("result", json_incref(msg), arg);
	}
}

/* --- the CLI's requests ------------------------------------------------------------------------- */

static const char *option_of_kind(json_t *options, const char *kind)
{
	size_t i;
	json_t *o;
	json_array_foreach(options, i, o) if (!strcmp(json_get_str(o, "kind") ? json_get_str(o, "kind") : "",
						      kind)) return json_get_str(o, "optionId");
	return NULL;
}

static json_t *permission_outcome(struct acp_client *c, json_t *params)
{
	json_t *tool = json_object_get(params, "toolCall");
	const char *kind = json_get_str(tool, "kind");
	json_t *request = json_pack("{s:s,s:{s:O?,s:O?},s:O?}", "tool_name", kind ? kind : "tool", "input", "title",
				    json_object_get(tool, "title"), "input", json_object_get(tool, "rawInput"),
				    "tool_use_id", json_object_get(tool, "toolCallId"));
	int allowed = c->ask(request, c->arg) == 1;
	json_decref(request);
	const char *option = option_of_kind(json_object_get(params, "options"), allowed ? "allow_once" : "reject_once");
	if (!option)
		return json_pack("{s:{s:s}}", "outcome", "outcome", "cancelled");
	return json_pack("{s:{s:s,s:s}}", "outcome", "outcome", "selected", "optionId", option);
}

static void on_request(struct acp_client *c, json_t *msg)
{
	json_t *id = json_object_get(msg, "id");
	if (!strcmp(json_get_str(msg, "method"), "session/request_permission"))
		send_message(c, json_pack("{s:O,s:o}", "id", id, "result",
					  permission_outcome(c, json_object_get(msg, "params"))));
	else
		send_message(c, json_pack("{s:O,s:{s:i,s:s}}", "id", id, "error", "code", -32601, "message",
					  "this client offers no such method"));
}

/* --- session updates ---------------------------------------------------------------------------- */

static void on_update(json_t *update, agent_emit_fn emit, void *arg)
{
	const char *kind = json_get_str(update, "sessionUpdate");
	json_t *content = json_object_get(update, "content");
	kind = kind ? kind : "";
	if (!strcmp(kind, "user_message_chunk"))
		return; /* the prompt echoed back */
	if (!strcmp(kind, "agent_message_chunk"))
		emit("text_delta", json_pack("{s:O?}", "text", json_object_get(content, "text")), arg);
	else if (!strcmp(kind, "agent_thought_chunk"))
		emit("thinking_delta", json_pack("{s:O?}", "text", json_object_get(content, "text")), arg);
	else if (!strcmp(kind, "tool_call"))
		emit("tool_use",
		     json_pack("{s:O?,s:O?,s:O?}", "id", json_object_get(update, "toolCallId"), "name",
			       json_object_get(update, "kind"), "input", json_object_get(update, "rawInput")),
		     arg);
	else if (!strcmp(kind, "tool_call_update")) {
		const char *status = json_get_str(update, "status");
		if (status && (!strcmp(status, "completed") || !strcmp(status, "failed")))
			emit("tool_result",
			     json_pack("{s:O?,s:O?,s:b}", "tool_use_id", json_object_get(update, "toolCallId"),
				       "content", content ? content : json_object_get(update, "rawOutput"), "is_error",
				       !strcmp(status, "failed")),
			     arg);
	} else
		emit("unknown", json_pack("{s:s,s:O?}", "type", kind, "raw", update), arg);
}

struct counting_emit {
	struct agent_state *st;
	agent_emit_fn emit;
	void *arg;
};

static void count_and_emit(const char *type, json_t *data, void *arg)
{
	struct counting_emit *ce = arg;
	ce->st->messages++;
	ce->emit(type, data, ce->arg);
}

void acp_on_line(struct acp_client *c, const char *line, size_t len, struct agent_state *st, agent_emit_fn emit_to,
		 void *emit_to_arg)
{
	struct counting_emit ce = { st, emit_to, emit_to_arg };
	agent_emit_fn emit = count_and_emit;
	void *emit_arg = &ce;
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (!len)
		return;
	json_t *msg = json_loadb(line, len, JSON_DECODE_ANY, NULL);
	if (!json_is_object(msg)) {
		st->garbage_lines++;
		size_t keep = len < GARBAGE_LINE_KEEP ? len : GARBAGE_LINE_KEEP;
		emit("garbage", json_pack("{s:o}", "line", json_string_lossy(line, keep)), emit_arg);
	} else if (json_get_str(msg, "method") && json_object_get(msg, "id")) {
		on_request(c, msg);
	} else if (json_get_str(msg, "method") && !strcmp(json_get_str(msg, "method"), "session/update")) {
		on_update(json_object_get(json_object_get(msg, "params"), "update"), emit, emit_arg);
	} else if (json_get_str(msg, "method")) {
		emit("unknown", json_pack("{s:s,s:O}", "type", json_get_str(msg, "method"), "raw", msg), emit_arg);
	} else {
		on_answer(c, msg, st, emit, emit_arg);
	}
	if (msg)
		json_decref(msg);
}
