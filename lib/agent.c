/* agent.c — the agent CLI adapters (agent.h): command lines per tool and the mapping of each CLI's JSON
 * event stream onto agor's message types. Formats: Claude Code stream-json, Gemini CLI stream-json (and ACP in
 * default mode, acp.c), `opencode run --format json`; Codex's app-server in agent_codex.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "agent_codex.h"
#include "common.h"
#include "fsutil.h"
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
	strvec_pushv(argv, (const char *const[]){ "-p", "--input-format", "stream-json", "--output-format",
						  "stream-json", "--verbose", "--include-partial-messages",
						  "--permission-mode", inv->permission_mode, NULL });
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
	json_array_foreach(content, i, b)
	{
		const char *type = str_or(b, "type", "");
		if (!from_user && !strcmp(type, "text"))
			emit("text", json_pack("{s:O?}", "text", json_object_get(b, "text")), arg);
		else if (!from_user && !strcmp(type, "thinking"))
			emit("thinking", json_pack("{s:O?}", "text", json_object_get(b, "thinking")), arg);
		else if (!from_user && !strcmp(type, "tool_use"))
			emit("tool_use",
			     json_pack("{s:O?,s:O?,s:O?}", "id", json_object_get(b, "id"), "name",
				       json_object_get(b, "name"), "input", json_object_get(b, "input")),
			     arg);
		else if (from_user && !strcmp(type, "tool_result"))
			emit("tool_result",
			     json_pack("{s:O?,s:O?,s:b}", "tool_use_id", json_object_get(b, "tool_use_id"), "content",
				       json_object_get(b, "content"), "is_error",
				       json_is_true(json_object_get(b, "is_error"))),
			     arg);
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

/* Headless, Gemini offers the model no tool that needs approval (auto_edit: no shell; plan: read-only tools and
 * its plan files), so nothing runs unasked; "default" runs over ACP instead, where it asks (gemini_acp_command). */
static const char *gemini_approval_mode(const char *mode)
{
	if (!strcmp(mode, "bypassPermissions"))
		return "yolo";
	if (!strcmp(mode, "acceptEdits"))
		return "auto_edit";
	return "plan";
}

static void gemini_command(const struct agent_invocation *inv, struct strvec *argv, struct strvec *env,
			   struct strbuf *in)
{
	strvec_pushv(argv, (const char *const[]){ "--skip-trust", "--output-format", "stream-json", "--approval-mode",
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

/* `gemini --acp`: the prompt and each approval go over ACP (acp.h); Gemini asks before every tool that needs it. */
static void gemini_acp_command(const struct agent_invocation *inv, struct strvec *argv, struct strvec *env)
{
	strvec_pushv(argv, (const char *const[]){ "--acp", "--skip-trust", NULL });
	if (inv->model)
		strvec_pushv(argv, (const char *const[]){ "--model", inv->model, NULL });
	if (inv->api_key)
		strvec_setenv(env, "GEMINI_API_KEY", inv->api_key);
	if (inv->base_url)
		strvec_setenv(env, "GOOGLE_GEMINI_BASE_URL", inv->base_url);
}

/* What Gemini writes below ~/.gemini and may find there at the next prompt (sessions, history, ids). Everything
 * else — policies (a user-tier "allow" rule runs a tool unasked), extensions, commands, hooks, .env — is what the
 * agent could have left there to change how the next run asks: removed before each run. */
static const char *const gemini_kept[] = { "tmp", "history", "installation_id", "projects.json", NULL };

static int gemini_keeps(const char *name)
{
	for (const char *const *k = gemini_kept; *k; k++)
		if (!strcmp(name, *k))
			return 1;
	return !strcmp(name, ".") || !strcmp(name, "..");
}

static int gemini_clear(const char *dir, struct err *e)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : err_errno(e, errno, "opening %s", dir);
	int listfd = dup(fd);
	DIR *d = listfd >= 0 ? fdopendir(listfd) : NULL;
	if (!d) {
		if (listfd >= 0)
			close(listfd);
		return err_errno(e, errno, "listing %s", dir);
	}
	struct strvec doomed = STRVEC_INIT;
	for (struct dirent *ent; (ent = readdir(d));)
		if (!gemini_keeps(ent->d_name))
			strvec_push(&doomed, ent->d_name);
	closedir(d);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < doomed.nr; i++)
		rc = fs_remove_at(fd, doomed.v[i], dir, e);
	strvec_clear(&doomed);
	return rc;
}

/* ~/.gemini cleared of what the agent could have left (gemini_kept), and its settings.json written afresh: the API
 * key from the environment — with GOOGLE_GEMINI_BASE_URL alone Gemini picks its "gateway" auth, which headless it
 * rejects — and no traffic of its own (usage statistics, update checks). */
static int gemini_prepare(const struct agent_invocation *inv, struct err *e)
{
	const char *home = inv->state_home ? inv->state_home : inv->home ? inv->home : inv->run_dir;
	_cleanup_free_ char *dir = xasprintf("%s/.gemini", home);
	_cleanup_free_ char *path = xasprintf("%s/settings.json", dir);
	if (gemini_clear(dir, e) < 0)
		return -1;
	json_t *settings = json_pack("{s:{s:{s:s}},s:{s:b},s:{s:b,s:b}}", "security", "auth", "selectedType",
				     "gemini-api-key", "privacy", "usageStatisticsEnabled", 0, "general",
				     "enableAutoUpdate", 0, "enableAutoUpdateNotification", 0);
	_cleanup_free_ char *text = json_to_compact(settings);
	json_decref(settings);
	return fs_mkdir_p(dir, 0700, e) < 0 ? -1 : fs_write_file_atomic(path, text, strlen(text), 0600, e);
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
		emit("tool_use",
		     json_pack("{s:O?,s:O?,s:O?}", "id", json_object_get(event, "tool_id"), "name",
			       json_object_get(event, "tool_name"), "input", json_object_get(event, "parameters")),
		     arg);
	} else if (!strcmp(type, "tool_result")) {
		emit("tool_result",
		     json_pack("{s:O?,s:O?,s:b}", "tool_use_id", json_object_get(event, "tool_id"), "content",
			       json_object_get(event, "output"), "is_error",
			       strcmp(str_or(event, "status", "success"), "success") != 0),
		     arg);
	} else if (!strcmp(type, "error")) {
		emit("error", json_pack("{s:O?}", "message", json_object_get(event, "message")), arg);
	} else if (!strcmp(type, "result")) {
		int failed = strcmp(str_or(event, "status", ""), "success") != 0;
		json_t *err = json_object_get(event, "error");
		agent_finish(st, failed,
			     json_get_str(err, "message") ? json_get_str(err, "message") : "gemini reported an error",
			     json_object_get(event, "stats"));
		emit("result", json_incref(event), arg);
	} else {
		emit_unknown(event, emit, arg);
	}
}

/* --- OpenCode: opencode run --format json (prompt on stdin) ------------------------------------ */

/* `opencode run` has nobody to ask (it rejects what is set to ask), so its modes say allow or deny outright and
 * "default" is refused (agent_check_mode). Its ACP mode would ask, but it serves OpenCode's whole HTTP API on a
 * loopback port, permission answers included, which every tool the agent runs could reach (docs/agents.md). */
static const char *opencode_permissions(const char *mode)
{
	if (!strcmp(mode, "bypassPermissions"))
		return "{\"edit\":\"allow\",\"bash\":\"allow\",\"webfetch\":\"allow\"}";
	if (!strcmp(mode, "acceptEdits"))
		return "{\"edit\":\"allow\",\"bash\":\"deny\",\"webfetch\":\"deny\"}";
	return "{\"edit\":\"deny\",\"bash\":\"deny\",\"webfetch\":\"deny\"}";
}

/* OPENCODE_CONFIG_CONTENT: the Anthropic provider at the configured endpoint (the SDK's base URL ends in /v1),
 * no sharing, no update checks. */
static char *opencode_config(const struct agent_invocation *inv)
{
	json_t *cfg = json_pack("{s:s,s:b}", "share", "disabled", "autoupdate", 0);
	if (inv->base_url) {
		_cleanup_free_ char *url = xasprintf("%s/v1", inv->base_url);
		json_object_set_new(cfg, "provider",
				    json_pack("{s:{s:{s:s}}}", "anthropic", "options", "baseURL", url));
	}
	char *text = json_to_compact(cfg);
	json_decref(cfg);
	return text;
}

static void opencode_environment(const struct agent_invocation *inv, struct strvec *env)
{
	if (inv->api_key)
		strvec_setenv(env, "ANTHROPIC_API_KEY", inv->api_key);
	_cleanup_free_ char *config = opencode_config(inv);
	strvec_setenv(env, "OPENCODE_CONFIG_CONTENT", config);
	strvec_setenv(env, "OPENCODE_PERMISSION", opencode_permissions(inv->permission_mode));
	strvec_pushv(env, (const char *const[]){ "OPENCODE_DISABLE_PROJECT_CONFIG=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
						 "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
						 NULL });
}

static void opencode_command(const struct agent_invocation *inv, struct strvec *argv, struct strvec *env,
			     struct strbuf *in)
{
	strvec_pushv(argv, (const char *const[]){ "run", "--format", "json", NULL });
	if (inv->model)
		strvec_pushv(argv, (const char *const[]){ "--model", inv->model, NULL });
	if (inv->resume_id)
		strvec_pushv(argv, (const char *const[]){ "--session", inv->resume_id, NULL });
	opencode_environment(inv, env);
	strbuf_addstr(in, inv->prompt);
}

static void opencode_tool(json_t *part, agent_emit_fn emit, void *arg)
{
	json_t *state = json_object_get(part, "state");
	const char *status = str_or(state, "status", "");
	emit("tool_use",
	     json_pack("{s:O?,s:O?,s:O?}", "id", json_object_get(part, "callID"), "name", json_object_get(part, "tool"),
		       "input", json_object_get(state, "input")),
	     arg);
	if (!strcmp(status, "completed") || !strcmp(status, "error"))
		emit("tool_result",
		     json_pack("{s:O?,s:O?,s:b}", "tool_use_id", json_object_get(part, "callID"), "content",
			       json_object_get(state, !strcmp(status, "error") ? "error" : "output"), "is_error",
			       !strcmp(status, "error")),
		     arg);
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
static const char *const opencode_state[] = { ".local/share/opencode", ".config/opencode", ".local/state/opencode",
					      ".cache/opencode", NULL };

/* OpenCode cannot ask agor before a tool runs: it has no "default" mode. */
static const char *const opencode_modes[] = { "acceptEdits", "bypassPermissions", "plan", NULL };

static const struct agent_adapter adapters[] = {
	{ "claude-code", "claude_code", "anthropic", "claude", claude_command, claude_map, NULL, claude_state,
	  "https://api.anthropic.com" },
	{ "codex", "codex", "openai", "codex", codex_command, codex_map, codex_prepare, codex_state,
	  "https://api.openai.com/v1", 1 },
	{ "gemini", "gemini", "google", "gemini", gemini_command, gemini_map, gemini_prepare, gemini_state,
	  "https://generativelanguage.googleapis.com", 0, gemini_acp_command, NULL },
	{ "opencode", "opencode", "anthropic", "opencode", opencode_command, opencode_map, NULL, opencode_state,
	  "https://api.anthropic.com", 0, NULL, opencode_modes },
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

int agent_check_mode(const struct agent_adapter *a, const char *mode, struct err *e)
{
	for (const char *const *m = a->modes; m && *m; m++)
		if (!strcmp(*m, mode))
			return 0;
	if (!a->modes)
		return 0;
	struct strbuf names = STRBUF_INIT;
	for (const char *const *m = a->modes; *m; m++)
		strbuf_addf(&names, "%s%s", m == a->modes ? "" : "|", *m);
	err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "permission_mode"),
		 "permission_mode %s: %s cannot ask agor before it runs a tool, so it runs only in %s; choose one of "
		 "those",
		 mode, a->tool, names.buf);
	strbuf_release(&names);
	return -1;
}

int agent_uses_acp(const struct agent_adapter *a, const char *mode)
{
	return a->acp_command && !strcmp(mode, "default");
}

void agent_command(const struct agent_adapter *a, const struct agent_invocation *inv, struct strvec *argv,
		   struct strvec *env, struct strbuf *stdin_text)
{
	strvec_push(argv, inv->program ? inv->program : a->program);
	if (agent_uses_acp(a, inv->permission_mode))
		a->acp_command(inv, argv, env);
	else
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
		count_and_emit("garbage",
			       json_pack("{s:o}", "line",
					 json_string_lossy(line, len < GARBAGE_LINE_KEEP ? len : GARBAGE_LINE_KEEP)),
			       &c);
	} else {
		a->map(event, st, count_and_emit, &c);
	}
	if (event)
		json_decref(event);
}
