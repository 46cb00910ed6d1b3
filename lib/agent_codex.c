/* agent_codex.c — Codex through `codex app-server` (agent_codex.h): the conversation agor leads over the CLI's
 * stdin, its notifications mapped onto agor's message types, its approval requests asked of the daemon. */
#include <string.h>

#include "agent_codex.h"
#include "common.h"
#include "fsutil.h"
#include "json.h"
#include "banned.h"

enum { ID_INITIALIZE = 1, ID_THREAD = 2, ID_TURN = 3 };

static const char *str_or(const json_t *obj, const char *key, const char *fallback)
{
	const char *s = json_get_str(obj, key);
	return s ? s : fallback;
}

/* --- the command line and CODEX_HOME --------------------------------------------------------------- */

void codex_mode_policy(const char *mode, int in_sandbox, const char **approval, const char **sandbox)
{
	int asks = !strcmp(mode, "default") || !strcmp(mode, "acceptEdits");
	*approval = asks ? "untrusted" : "never";
	if (in_sandbox || !strcmp(mode, "bypassPermissions")) /* Codex's bubblewrap cannot nest in agor's sandbox */
		*sandbox = "danger-full-access";
	else
		*sandbox = !strcmp(mode, "plan") ? "read-only" : "workspace-write";
}

static void send_line(struct agent_channel *ch, json_t *msg /* stolen */)
{
	if (ch) {
		json_add_to_strbuf(&ch->to_cli, msg);
		strbuf_addch(&ch->to_cli, '\n');
	}
	json_decref(msg);
}

static void send_request(struct strbuf *out, int id, const char *method, json_t *params /* stolen */)
{
	json_t *msg = json_pack("{s:s,s:i,s:s,s:o}", "jsonrpc", "2.0", "id", id, "method", method, "params", params);
	json_add_to_strbuf(out, msg);
	strbuf_addch(out, '\n');
	json_decref(msg);
}

void codex_command(const struct agent_invocation *inv, struct strvec *argv, struct strvec *env, struct strbuf *in)
{
	strvec_pushv(argv, (const char *const[]){ "app-server", "--listen", "stdio://", NULL });
	if (inv->api_key)
		strvec_setenv(env, "OPENAI_API_KEY", inv->api_key);
	strvec_pushf(env, "CODEX_HOME=%s/.agor/codex", inv->home ? inv->home : inv->run_dir);
	send_request(in, ID_INITIALIZE, "initialize",
		     json_pack("{s:{s:s,s:s}}", "clientInfo", "name", "agor", "version", "1"));
}

int codex_prepare(const struct agent_invocation *inv, struct err *e)
{
	const char *home = inv->state_home ? inv->state_home : inv->home ? inv->home : inv->run_dir;
	_cleanup_free_ char *dir = xasprintf("%s/.agor/codex", home); /* CODEX_HOME as the host sees it */
	_cleanup_free_ char *path = xasprintf("%s/config.toml", dir);
	struct strbuf toml = STRBUF_INIT;
	strbuf_addstr(&toml, "# written by agor for each prompt: the provider the daemon configured\n");
	if (inv->base_url)
		strbuf_addf(&toml,
			    "model_provider = \"agor\"\n\n[model_providers.agor]\nname = \"agor\"\nbase_url = \"%s\"\n"
			    "wire_api = \"responses\"\nenv_key = \"OPENAI_API_KEY\"\n",
			    inv->base_url); /* config.c refused quotes and spaces in base_url */
	int rc = fs_mkdir_p(dir, 0700, e) < 0 ? -1 : fs_write_file_atomic(path, toml.buf, toml.len, 0600, e);
	strbuf_release(&toml);
	return rc;
}

/* --- the conversation: initialize → thread → turn ------------------------------------------------- */

static void open_thread(struct agent_channel *ch)
{
	const struct agent_invocation *inv = ch->inv;
	const char *approval, *sandbox;
	codex_mode_policy(inv->permission_mode, inv->in_sandbox, &approval, &sandbox);
	json_t *params = json_pack("{s:s,s:s}", "approvalPolicy", approval, "sandbox", sandbox);
	if (inv->model)
		json_object_set_new(params, "model", json_string(inv->model));
	if (inv->resume_id)
		json_object_set_new(params, "threadId", json_string(inv->resume_id));
	send_line(ch, json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", "initialized"));
	send_request(&ch->to_cli, ID_THREAD, inv->resume_id ? "thread/resume" : "thread/start", params);
}

static void start_turn(struct agent_channel *ch, const char *thread_id)
{
	send_request(&ch->to_cli, ID_TURN, "turn/start",
		     json_pack("{s:s,s:[{s:s,s:s}]}", "threadId", thread_id, "input", "type", "text", "text",
			       ch->inv->prompt));
}

static void end_conversation(struct agent_state *st, const char *failure)
{
	if (failure)
		agent_finish(st, 1, failure, NULL);
	if (st->channel)
		st->channel->done = 1;
}

static void on_response(json_t *msg, struct agent_state *st, agent_emit_fn emit, void *arg)
{
	json_t *error = json_object_get(msg, "error");
	json_int_t id = json_integer_value(json_object_get(msg, "id"));
	if (error) {
		const char *text = str_or(error, "message", "the codex app-server refused a request");
		emit("error", json_pack("{s:s}", "message", text), arg);
		end_conversation(st, text);
		return;
	}
	json_t *result = json_object_get(msg, "result");
	struct agent_channel *ch = st->channel;
	if (id == ID_INITIALIZE && ch) {
		open_thread(ch);
	} else if (id == ID_THREAD) {
		const char *thread = json_get_str(json_object_get(result, "thread"), "id");
		agent_remember_session(st, thread);
		if (!thread)
			end_conversation(st, "the codex app-server opened no thread");
		else if (ch)
			start_turn(ch, thread);
	}
}

/* --- approvals ------------------------------------------------------------------------------------------- */

static void reply(struct agent_channel *ch, json_t *id, json_t *result /* stolen */)
{
	send_line(ch, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static int approved(struct agent_channel *ch, const char *tool, json_t *input /* stolen */, json_t *item_id)
{
	json_t *answer = ch && ch->ask ? ch->ask(tool, input, item_id, ch->ask_arg) : NULL;
	int yes = json_is_true(json_object_get(answer, "approved"));
	if (answer)
		json_decref(answer);
	json_decref(input);
	return yes;
}

static json_t *command_question(json_t *params)
{
	return json_pack("{s:O?,s:O?,s:O?}", "command", json_object_get(params, "command"), "cwd",
			 json_object_get(params, "cwd"), "reason", json_object_get(params, "reason"));
}

static json_t *file_change_question(struct agent_channel *ch, json_t *params)
{
	const char *item = json_get_str(params, "itemId");
	json_t *changes = ch && ch->pending && item ? json_object_get(ch->pending, item) : NULL;
	return json_pack("{s:O?,s:O?}", "changes", changes ? changes : json_null(), "reason",
			 json_object_get(params, "reason"));
}

static void on_server_request(json_t *msg, const char *method, struct agent_state *st)
{
	struct agent_channel *ch = st->channel;
	json_t *id = json_object_get(msg, "id"), *params = json_object_get(msg, "params");
	json_t *item = json_object_get(params, "itemId");
	int yes;
	if (!strcmp(method, "item/commandExecution/requestApproval"))
		yes = approved(ch, "command_execution", command_question(params), item);
	else if (!strcmp(method, "item/fileChange/requestApproval"))
		yes = approved(ch, "file_change", file_change_question(ch, params), item);
	else {
		send_line(ch, json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error", "code", -32601,
					"message", "agor answers command and file change approvals only"));
		return;
	}
	reply(ch, id, json_pack("{s:s}", "decision", yes ? "accept" : "decline"));
}

/* --- items ----------------------------------------------------------------------------------------------- */

static void remember_file_change(struct agent_channel *ch, json_t *item)
{
	const char *id = json_get_str(item, "id");
	if (!ch || !id)
		return;
	if (!ch->pending)
		ch->pending = json_object();
	json_object_set(ch->pending, id,
			json_object_get(item, "changes") ? json_object_get(item, "changes") : json_null());
}

static void item_started(json_t *item, struct agent_state *st, agent_emit_fn emit, void *arg)
{
	const char *type = str_or(item, "type", "");
	json_t *id = json_object_get(item, "id");
	if (!strcmp(type, "commandExecution")) {
		emit("tool_use",
		     json_pack("{s:O?,s:s,s:{s:O?}}", "id", id, "name", "command_execution", "input", "command",
			       json_object_get(item, "command")),
		     arg);
	} else if (!strcmp(type, "fileChange")) {
		remember_file_change(st->channel, item);
		emit("tool_use",
		     json_pack("{s:O?,s:s,s:{s:O?}}", "id", id, "name", "file_change", "input", "changes",
			       json_object_get(item, "changes")),
		     arg);
	}
}

static json_t *joined_text(json_t *parts)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;
	json_t *p;
	json_array_foreach(parts, i, p)
	{
		const char *text = json_is_string(p) ? json_string_value(p) : json_get_str(p, "text");
		strbuf_addf(&sb, "%s%s", sb.len && text ? "\n" : "", text ? text : "");
	}
	json_t *s = json_string_lossy(sb.buf, sb.len);
	strbuf_release(&sb);
	return s;
}

static void item_completed(json_t *item, agent_emit_fn emit, void *arg)
{
	const char *type = str_or(item, "type", "");
	const char *status = str_or(item, "status", "");
	json_t *id = json_object_get(item, "id");
	if (!strcmp(type, "agentMessage")) {
		emit("text", json_pack("{s:O?}", "text", json_object_get(item, "text")), arg);
	} else if (!strcmp(type, "reasoning")) {
		json_t *summary = json_object_get(item, "summary");
		emit("thinking",
		     json_pack("{s:o}", "text",
			       joined_text(json_array_size(summary) ? summary : json_object_get(item, "content"))),
		     arg);
	} else if (!strcmp(type, "commandExecution")) {
		json_t *code = json_object_get(item, "exitCode");
		emit("tool_result",
		     json_pack("{s:O?,s:O?,s:O?,s:s,s:b}", "tool_use_id", id, "content",
			       json_object_get(item, "aggregatedOutput"), "exit_code", code ? code : json_null(),
			       "status", status, "is_error",
			       strcmp(status, "completed") || !json_is_integer(code) || json_integer_value(code)),
		     arg);
	} else if (!strcmp(type, "fileChange")) {
		emit("tool_result",
		     json_pack("{s:O?,s:s,s:b}", "tool_use_id", id, "content", status, "is_error",
			       strcmp(status, "completed") != 0),
		     arg);
	} else if (strcmp(type, "userMessage")) {
		emit("tool_use", json_pack("{s:O?,s:s,s:O}", "id", id, "name", type, "input", item), arg);
	}
}

/* --- notifications --------------------------------------------------------------------------------------- */

/* Adds one request's usage (tokenUsage.last) to the run's, under the names `codex exec --json` used. */
static void add_usage(struct agent_state *st, json_t *last)
{
	static const char *const names[][2] = { { "inputTokens", "input_tokens" },
						{ "cachedInputTokens", "cached_input_tokens" },
						{ "outputTokens", "output_tokens" },
						{ "reasoningOutputTokens", "reasoning_output_tokens" } };
	if (!json_is_object(last))
		return;
	if (!st->usage)
		st->usage = json_object();
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		json_int_t sum = json_integer_value(json_object_get(st->usage, names[i][1])) +
				 json_integer_value(json_object_get(last, names[i][0]));
		json_object_set_new(st->usage, names[i][1], json_integer(sum));
	}
}

static void turn_completed(json_t *params, struct agent_state *st, agent_emit_fn emit, void *arg)
{
	json_t *turn = json_object_get(params, "turn");
	const char *status = str_or(turn, "status", "");
	int ok = !strcmp(status, "completed");
	const char *why = json_get_str(json_object_get(turn, "error"), "message");
	agent_finish(st, !ok, why ? why : status, NULL); /* the usage was summed by add_usage */
	emit("result",
	     json_pack("{s:s,s:s,s:O?,s:O?}", "type", "turn.completed", "status", status, "usage", st->usage, "error",
		       json_object_get(turn, "error")),
	     arg);
	end_conversation(st, NULL);
}

/* Known notifications agor does not relay: state already carried by the items, or nothing for the task. */
static const char *const quiet_methods[] = {
	"thread/status/changed",
	"account/rateLimits/updated",
	"remoteControl/status/changed",
	"serverRequest/resolved",
	"item/commandExecution/outputDelta",
	"item/fileChange/outputDelta",
	"item/fileChange/patchUpdated",
	"mcpServer/startupStatus/updated",
	"thread/settings/updated",
	"item/reasoning/summaryPartAdded",
	"turn/diff/updated",
	"skills/changed",
	"thread/tokenUsage/updated", /* folded into the usage by on_notification */
};

static int is_quiet(const char *method)
{
	for (size_t i = 0; i < ARRAY_SIZE(quiet_methods); i++)
		if (!strcmp(method, quiet_methods[i]))
			return 1;
	return 0;
}

static void on_notification(json_t *msg, const char *method, struct agent_state *st, agent_emit_fn emit, void *arg)
{
	json_t *params = json_object_get(msg, "params");
	if (!strcmp(method, "item/started"))
		item_started(json_object_get(params, "item"), st, emit, arg);
	else if (!strcmp(method, "item/completed"))
		item_completed(json_object_get(params, "item"), emit, arg);
	else if (!strcmp(method, "item/agentMessage/delta"))
		emit("text_delta", json_pack("{s:O?}", "text", json_object_get(params, "delta")), arg);
	else if (!strcmp(method, "item/reasoning/textDelta") || !strcmp(method, "item/reasoning/summaryTextDelta"))
		emit("thinking_delta", json_pack("{s:O?}", "text", json_object_get(params, "delta")), arg);
	else if (!strcmp(method, "thread/started") || !strcmp(method, "turn/started"))
		emit("system", json_pack("{s:s,s:O?}", "type", method, "params", params), arg);
	else if (!strcmp(method, "thread/tokenUsage/updated"))
		add_usage(st, json_object_get(json_object_get(params, "tokenUsage"), "last"));
	else if (!strcmp(method, "error"))
		emit("error",
		     json_pack("{s:s,s:O?}", "message", str_or(json_object_get(params, "error"), "message", "error"),
			       "will_retry", json_object_get(params, "willRetry")),
		     arg);
	else if (!strcmp(method, "turn/completed"))
		turn_completed(params, st, emit, arg);
	else if (!is_quiet(method))
		emit("unknown", json_pack("{s:s,s:O}", "type", method, "raw", msg), arg);
}

void codex_map(json_t *message, struct agent_state *st, agent_emit_fn emit, void *arg)
{
	const char *method = json_get_str(message, "method");
	int has_id = json_object_get(message, "id") != NULL;
	if (method && has_id)
		on_server_request(message, method, st);
	else if (method)
		on_notification(message, method, st, emit, arg);
	else if (has_id)
		on_response(message, st, emit, arg);
	else
		emit("unknown", json_pack("{s:s,s:O}", "type", "", "raw", message), arg);
}
