/* agent.c — the agent CLI adapters (agent.h): command lines per tool and the mapping of each CLI's JSON
 * event stream onto agor's message types. Formats: Claude Code stream-json, Gemini CLI stream-json,
 * `opencode run --format json`; Codex's app-server in agent_codex.c. */
#include <string.h>

#include "agent.h"
#include "agent_codex.h"
#include "common.h"
#include "json.h"
#include "banned.h"

#define GARBAGE_LINE_KEEP 4096

static const char *str_or(const json_t *obj, const char *key, const char *fallback)
{
	const char *s = json_get_str(obj, key);
	return s ? s : fallback;
}

static void emit_unknown(json_t *event, agent_emit_fn emit, void *arg)
{
	emit("unknown", json_pack("{s:s,s:O?}", "type", str_or(event, "type", ""), "raw", event), arg);
}

/* --- Claude Code: claude -p --input-format stream-json --output-format stream-json --verbose --------- */

static int wants_prompt_tool(const char *mode)
{
	return !strcmp(mode, "default") || !strcmp(mode, "acceptEdits");
}

static void claude_command(const struct agent_invocation *inv, struct strvec *argv, struct strvec *env,
			   struct strbuf *in)
{
	strvec_pushv(argv, (const char *const[]){ "-p", "--input-format", "stream-json", "--output-format", "stream-json",
						  "--verbose", "--include-partial-messages", "--permission-mode",
						  inv->permission_mode, NULL });
	if (inv->model)
		strvec_pushv(argv, (const char *const[]){ "--model", inv->model, NULL });
	if (inv->resume_id)
		strvec_pushv(argv, (const char *const[]){ "--resume", inv->resume_id, NULL });
	if (inv->mcp_config && wants_prompt_tool(inv->permission_mode))
		strvec_pushv(argv, (const char *const[]){ "--mcp-config", inv->mcp_config, "--strict-mcp-config",
							  "--permission-prompt-tool", AGENT_PERMISSION_TOOL, NULL });
	if (inv->api_key)
		strvec_setenv(env, "ANTHROPIC_API_KEY", inv->api_key);
	if (inv->base_url)
		strvec_setenv(env, "ANTHROPIC_BASE_URL", inv->base_url);
	strvec_pushv(env, (const char *const[]){ "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
						 "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", NULL });
	json_t *msg = json_pack("{s:s,s:{s:s,s:[{s:s,s:s}]}}", "type", "user", "message", "role", "user", "content",
				"type", "text", "text", inv->prompt);
	json_add_to_strbuf(in, msg);
	strbuf_addch(in, '\n');
	json_decref(msg);
}

static void claude_blocks(json_t *content, int from_user, agent_emit_fn emit, void *arg)
{
	size_t i;
	json_t *b;
	json_array_foreach(content, i, b) {
		const char *type = str_or(b, "type", "");
		if (!from_user && !strcmp(type, "text"))
			emit("text", json_pack("{s:O?}", "text", json_object_get(b, "text")), arg);
		else if (!from_user && !strcmp(type, "thinking"))
			emit("thinking", json_pack("{s:O?}", "text", json_object_get(b, "thinking")), arg);
		else if (!from_user && !strcmp(type, "tool_use"))
			emit("tool_use", json_pack("{s:O?,s:O?,s:O?}", "id", json_object_get(b, "id"), "name",
						   json_object_get(b, "name"), "input", json_object_get(b, "input")), arg);
		else if (from_user && !strcmp(type, "tool_result"))
			emit("tool_result", json_pack("{s:O?,s:O?,s:b}", "tool_use_id", json_object_get(b, "tool_use_id"),
						      "content", json_object_get(b, "content"), "is_error",
						      json_is_true(json_object_get(b, "is_error"))), arg);
		else
			emit("unknown", json_pack("{s:s,s:O?}", "type", type, "raw", b), arg);
	}
}

static void claude_stream_event(json_t *event, agent_emit_fn emit, void *arg)
{
	json_t *inner = json_object_get(event, "event");
	if (strcmp(str_or(inner, "type", ""), "content_block_delta"))
		return; /* message_start/stop, block start/stop, message_delta: the full message follows */
	json_t *delta = json_object_get(inner, "delta");
	const char *type = str_or(delta, "type", "");
	if (!strcmp(type, "text_delta"))
		emit("text_delta", json_pack("{s:O?}", "text", json_object_get(delta, "text")), arg);
	else if (!strcmp(type, "thinking_delta"))
		emit("thinking_delta", json_pack("{s:O?}", "text", json_object_get(delta, "thinking")), arg);
}

static void claude_result(json_t *event, struct agent_state *st, agent_emit_fn emit, void *arg)
{
	const char *subtype = str_or(event, "subtype", "");
	int failed = json_is_true(json_object_get(event, "is_error")) || strcmp(subtype, "success");
	json_t *usage = json_deep_copy(json_object_get(event, "usage"));
	if (!usage)
		usage = json_object();
	json_t *cost = json_object_get(event, "total_cost_usd");
	if (cost)
		json_object_set(usage, "total_cost_usd", cost);
	const char *reason = json_get_str(event, "result");
	agent_finish(st, failed, reason && *reason ? reason : subtype, usage);
	json_decref(usage);
	emit("result", json_incref(event), arg);
}

static void claude_map(json_t *event, struct agent_state *st, agent_emit_fn emit, void *arg)
{
	const char *type = str_or(event, "type", "");
	agent_remember_session(st, json_get_str(event, "session_id"));
	if (!strcmp(type, "system"))
		emit("system", json_incref(event), arg);
	else if (!strcmp(type, "assistant") || !strcmp(type, "user"))
		claude_blocks(json_object_get(json_object_get(event, "message"), "content"), type[0] == 'u', emit, arg);
	else if (!strcmp(type, "stream_event"))
		claude_stream_event(event, emit, arg);
	else if (!strcmp(type, "result"))
		claude_result(event, st, emit, arg);
	else
		emit_unknown(event, emit, arg);
}

/* --- Gemini CLI: gemini --output-format stream-json (prompt on stdin) -------------------------- */

static const char *gemini_approval_mode(const char *mode)
{
	if (!strcmp(mode, "bypassPermissions"))
		return "yolo";
	if (!strcmp(mode, "acceptEdits"))
		return "auto_edit";
	return "default";
}

static void gemini_command(const struct agent_invocation *inv, struct strvec *argv, struct strvec *env,
			   struct strbuf *in)
{
	strvec_pushv(argv, (const char *const[]){ "--output-format", "stream-json", "--approval-mode",
						  gemini_approval_mode(inv->permission_mode), NULL });
	if (inv->model)
		strvec_pushv(argv, (const char *const[]){ "--model", inv->model, NULL });
	if (inv->resume_id)
		strvec_pushv(argv, (const char *const[]){ "--resume", inv->resume_id, NULL });
	if (inv->api_key)
		strvec_setenv(env, "GEMINI_API_KEY", inv->api_key);
	if (inv->base_url)
		strvec_setenv(env, "GOOGLE_GEMINI_BASE_URL", inv->base_url);
	strbuf_addstr(in, inv->prompt);
}

static void gemini_map(json_t *event, struct agent_state *st, agent_emit_fn emit, void *arg)
{
	const char *type = str_or(event, "type", "");
	if (!strcmp(type, "init")) {
		agent_remember_session(st, json_get_str(event, "session_id"));
		emit("system", json_incref(event), arg);
	} else if (!strcmp(type, "message")) {
		if (strcmp(str_or(event, "role", ""), "assistant"))
			return; /* the user's own prompt echoed back */
		emit(json_is_true(json_object_get(event, "delta")) ? "text_delta" : "text",
		     json_pack("{s:O?}", "text", json_object_get(event, "content")), arg);
	} else if (!strcmp(type, "tool_use")) {
		emit("tool_use", json_pack("{s:O?,s:O?,s:O?}", "id", json_object_get(event, "tool_id"), "name",
					   json_object_get(event, "tool_name"), "input", json_object_get(event, "parameters")), arg);
	} else if (!strcmp(type, "tool_result")) {
		emit("tool_result", json_pack("{s:O?,s:O?,s:b}", "tool_use_id", json_object_get(event, "tool_id"), "content",
					      json_object_get(event, "output"), "is_error",
					      strcmp(str_or(event, "status", "success"), "success") != 0), arg);
	} else if (!strcmp(type, "error")) {
		emit("error", json_pack("{s:O?}", "message", json_object_get(event, "message")), arg);
	} else if (!strcmp(type, "result")) {
		int failed = strcmp(str_or(event, "status", ""), "success") != 0;
		json_t *err = json_object_get(event, "error");
		agent_finish(st, failed, json_get_str(err, "message") ? json_get_str(err, "message") : "gemini reported an error",
		       json_object_get(event, "stats"));
		emit("result", json_incref(event), arg);
	} else {
		emit_unknown(event, emit, arg);
	}
}

/* --- OpenCode: opencode run --format json PROMPT ------------------------------------------------ */

/* `opencode run` has nobody to ask: what would need asking is denied (fail closed). */
static const char *opencode_permissions(const char *mode)
{
	if (!strcmp(mode, "bypassPermissions"))
		return "{\"edit\":\"allow\",\"bash\":\"allow\",\"webfetch\":\"allow\"}";
	if (!strcmp(mode, "acceptEdits"))
		return "{\"edit\":\"allow\",\"bash\":\"deny\",\"webfetch\":\"deny\"}";
	return "{\"edit\":\"deny\",\"bash\":\"deny\",\"webfetch\":\"deny\"}";
}

static void opencode_command(const struct agent_invocation *inv, struct strvec *argv, struct strvec *env,
			     struct strbuf *in)
{
	(void)in;
	strvec_pushv(argv, (const char *const[]){ "run", "--format", "json", NULL });
	if (inv->model)
		strvec_pushv(argv, (const char *const[]){ "--model", inv->model, NULL });
	if (inv->resume_id)
		strvec_pushv(argv, (const char *const[]){ "--session", inv->resume_id, NULL });
	strvec_pushv(argv, (const char *const[]){ "--", inv->prompt, NULL });
	if (inv->api_key)
		strvec_setenv(env, "ANTHROPIC_API_KEY", inv->api_key);
	if (inv->base_url)
		strvec_setenv(env, "ANTHROPIC_BASE_URL", inv->base_url);
	strvec_setenv(env, "OPENCODE_PERMISSION", opencode_permissions(inv->permission_mode));
}

static void opencode_tool(json_t *part, agent_emit_fn emit, void *arg)
{
	json_t *state = json_object_get(part, "state");
	const char *status = str_or(state, "status", "");
	emit("tool_use", json_pack("{s:O?,s:O?,s:O?}", "id", json_object_get(part, "callID"), "name",
				   json_object_get(part, "tool"), "input", json_object_get(state, "input")), arg);
	if (!strcmp(status, "completed") || !strcmp(status, "error"))
		emit("tool_result", json_pack("{s:O?,s:O?,s:b}", "tool_use_id", json_object_get(part, "callID"), "content",
					      json_object_get(state, !strcmp(status, "error") ? "error" : "output"),
					      "is_error", !strcmp(status, "error")), arg);
}

static void opencode_map(json_t *event, struct agent_state *st, agent_emit_fn emit, void *arg)
{
	const char *type = str_or(event, "type", "");
	json_t *part = json_object_get(event, "part");
	agent_remember_session(st, json_get_str(event, "sessionID"));
	if (!strcmp(type, "step_start")) {
		emit("system", json_incref(event), arg);
	} else if (!strcmp(type, "text")) {
		emit("text", json_pack("{s:O?}", "text", json_object_get(part, "text")), arg);
	} else if (!strcmp(type, "reasoning")) {
		emit("thinking", json_pack("{s:O?}", "text", json_object_get(part, "text")), arg);
	} else if (!strcmp(type, "tool_use")) {
		opencode_tool(part, emit, arg);
	} else if (!strcmp(type, "step_finish")) {
		json_t *usage = json_deep_copy(json_object_get(part, "tokens"));
		if (usage && json_object_get(part, "cost"))
			json_object_set(usage, "cost", json_object_get(part, "cost"));
		if (strcmp(str_or(part, "reason", ""), "tool-calls"))
			agent_finish(st, 0, NULL, usage);
		if (usage)
			json_decref(usage);
		emit("result", json_incref(event), arg);
	} else if (!strcmp(type, "error")) {
		json_t *err = json_object_get(event, "error");
		const char *msg = json_get_str(json_object_get(err, "data"), "message");
		msg = msg ? msg : str_or(err, "name", "opencode reported an error");
		agent_finish(st, 1, msg, NULL);
		emit("error", json_pack("{s:s}", "message", msg), arg);
	} else {
		emit_unknown(event, emit, arg);
	}
}

/* --- the table and the shared entry points -------------------------------------------------------- */

static const char *const claude_state[] = { ".claude", NULL };
static const char *const codex_state[] = { ".agor/codex", NULL };
static const char *const gemini_state[] = { ".gemini", NULL };
static const char *const opencode_state[] = { ".local/share/opencode", ".config/opencode", NULL };

static const struct agent_adapter adapters[] = {
	{ "claude-code", "claude_code", "anthropic", "claude", claude_command, claude_map, NULL, claude_state,
	  "https://api.anthropic.com" },
	{ "codex", "codex", "openai", "codex", codex_command, codex_map, codex_prepare, codex_state,
	  "https://api.openai.com/v1", 1 },
	{ "gemini", "gemini", "google", "gemini", gemini_command, gemini_map, NULL, gemini_state,
	  "https://generativelanguage.googleapis.com" },
	{ "opencode", "opencode", "anthropic", "opencode", opencode_command, opencode_map, NULL, opencode_state,
	  "https://api.anthropic.com" },
};

const struct agent_adapter *agent_find(const char *tool)
{
	for (size_t i = 0; tool && i < ARRAY_SIZE(adapters); i++)
		if (!strcmp(adapters[i].tool, tool))
			return &adapters[i];
	return NULL;
}

const struct config_agent *agent_config(const struct config *cfg, const char *tool)
{
	const struct config_agent *settings[] = { &cfg->agents.claude_code, &cfg->agents.codex, &cfg->agents.gemini,
						  &cfg->agents.opencode };
	for (size_t i = 0; tool && i < ARRAY_SIZE(adapters); i++)
		if (!strcmp(adapters[i].tool, tool))
			return settings[i];
	return NULL;
}

void agent_command(const struct agent_adapter *a, const struct agent_invocation *inv, struct strvec *argv,
		   struct strvec *env, struct strbuf *stdin_text)
{
	strvec_push(argv, inv->program ? inv->program : a->program);
	a->command(inv, argv, env, stdin_text);
}

int agent_prepare(const struct agent_adapter *a, const struct agent_invocation *inv, struct err *e)
{
	return a->prepare ? a->prepare(inv, e) : 0;
}

struct counting_emit {
	struct agent_state *st;
	agent_emit_fn emit;
	void *arg;
};

static void count_and_emit(const char *type, json_t *data, void *arg)
{
	struct counting_emit *c = arg;
	c->st->messages++;
	c->emit(type, data, c->arg);
}

void agent_map_line(const struct agent_adapter *a, const char *line, size_t len, struct agent_state *st,
		    agent_emit_fn emit, void *arg)
{
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (!len)
		return;
	struct counting_emit c = { st, emit, arg };
	json_t *event = json_loadb(line, len, JSON_DECODE_ANY, NULL);
	if (!json_is_object(event)) {
		st->garbage_lines++;
		count_and_emit("garbage", json_pack("{s:o}", "line", json_string_lossy(line, len < GARBAGE_LINE_KEEP ? len : GARBAGE_LINE_KEEP)), &c);
	} else {
		a->map(event, st, count_and_emit, &c);
	}
	if (event)
		json_decref(event);
}

