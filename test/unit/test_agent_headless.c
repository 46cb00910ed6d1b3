/* test_agent_headless.c — unit tests of lib/agent for Gemini CLI (over ACP in default mode, lib/acp) and OpenCode
 * ("default" refused with the modes it supports), their other modes mapped to allow or deny outright, the prompt
 * on stdin, OpenCode kept from the worktree's own opencode.json; and of the ACP client against a scripted agent. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "acp.h"
#include "agent.h"
#include "json.h"
#include "strbuf.h"
#include "strvec.h"
#include "unit.h"
#include "banned.h"

TEST(agent_gemini_runs_over_acp_in_default_mode_only)
{
	CHECK(agent_uses_acp(agent_find("gemini"), "default"));
	CHECK(!agent_uses_acp(agent_find("gemini"), "acceptEdits"));
	CHECK(!agent_uses_acp(agent_find("claude-code"), "default"));
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
	struct strbuf in = STRBUF_INIT;
	struct agent_invocation inv = {
		.prompt = "do it", .permission_mode = "default", .api_key = "sk-1", .run_dir = "/tmp/r"
	};
	agent_command(agent_find("gemini"), &inv, &argv, &env, &in);
	CHECK(strvec_find(&argv, "--acp") >= 0);
	CHECK(strvec_find(&argv, "--approval-mode") < 0);
	CHECK(in.len == 0); /* the prompt goes over ACP */
	strvec_clear(&argv);
	strvec_clear(&env);
	strbuf_release(&in);
}

TEST(agent_opencode_refuses_default_and_names_its_modes)
{
	struct err e = ERR_INIT;
	CHECK(agent_check_mode(agent_find("opencode"), "default", &e) < 0);
	CHECK(strstr(e.message, "opencode cannot ask agor before it runs a tool, so it runs only in "
				"acceptEdits|bypassPermissions|plan") != NULL);
	err_clear(&e);
	CHECK(agent_check_mode(agent_find("opencode"), "plan", &e) == 0);
	static const char *const tools[] = { "claude-code", "codex", "gemini" };
	for (size_t t = 0; t < 3; t++)
		CHECK(agent_check_mode(agent_find(tools[t]), "default", &e) == 0);
}

/* --- the ACP client against a scripted agent ----------------------------------------------------- */

static void collect(const char *type, json_t *data, void *arg)
{
	strbuf_addf(arg, "%s;", type);
	json_decref(data);
}

static int asked;
static int deny(json_t *request, void *arg)
{
	(void)arg;
	asked++;
	CHECK_STR(json_get_str(request, "tool_name"), "execute");
	return 0;
}

/* What the client wrote since the last call, as one string. */
static char *written(int fd)
{
	static char buf[8192];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

TEST(acp_client_opens_a_session_prompts_and_answers_a_permission_with_the_reject_option)
{
	int p[2];
	CHECK(pipe(p) == 0);
	struct agent_state st = { 0 };
	struct strbuf got = STRBUF_INIT;
	struct acp_client *c = acp_start(p[1], "/w", "do it", deny, NULL);
	CHECK(strstr(written(p[0]), "\"method\":\"initialize\"") != NULL);
	const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":1}}";
	acp_on_line(c, init, strlen(init), &st, collect, &got);
	CHECK(strstr(written(p[0]), "\"method\":\"session/new\"") != NULL);
	const char *made = "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"sessionId\":\"s-1\"}}";
	acp_on_line(c, made, strlen(made), &st, collect, &got);
	CHECK(strstr(written(p[0]), "\"text\":\"do it\"") != NULL);
	CHECK_STR(st.agent_session_id, "s-1");
	const char *ask =
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"session/request_permission\",\"params\":{"
		"\"toolCall\":{\"toolCallId\":\"t1\",\"kind\":\"execute\",\"title\":\"rm -rf /\"},\"options\":["
		"{\"optionId\":\"always\",\"kind\":\"allow_always\"},{\"optionId\":\"no\",\"kind\":\"reject_once\"}]}}";
	acp_on_line(c, ask, strlen(ask), &st, collect, &got);
	CHECK(asked == 1);
	CHECK(strstr(written(p[0]), "\"optionId\":\"no\"") != NULL);
	/* the agent may not read through the client: it offers no file system and no terminal */
	const char *peek =
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"fs/read_text_file\",\"params\":{\"path\":\"/etc/shadow\"}}";
	acp_on_line(c, peek, strlen(peek), &st, collect, &got);
	char *refused = written(p[0]);
	CHECK(strstr(refused, "-32601") && strstr(refused, "\"id\":7") && !strstr(refused, "root:"));
	const char *lines[] = {
		"{\"jsonrpc\":\"2.0\",\"method\":\"session/"
		"update\",\"params\":{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"t1\","
		"\"status\":\"failed\"}}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"session/"
		"update\",\"params\":{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":"
		"\"text\",\"text\":\"hi\"}}}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"session/"
		"update\",\"params\":{\"update\":{\"sessionUpdate\":\"plan\"}}}",
		"not json",
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"stopReason\":\"end_turn\",\"usage\":{\"inputTokens\":3}}}",
	};
	for (size_t i = 0; i < 5; i++)
		acp_on_line(c, lines[i], strlen(lines[i]), &st, collect, &got);
	CHECK_STR(got.buf, "tool_result;text_delta;unknown;garbage;result;");
	CHECK(st.finished && !st.failed && st.garbage_lines == 1 && st.messages == 5);
	CHECK(json_integer_value(json_object_get(st.usage, "inputTokens")) == 3);
	CHECK(read(p[0], (char[1]){ 0 }, 1) == 0); /* the turn ended: the CLI's stdin is closed */
	acp_free(c);
	close(p[0]);
	agent_state_release(&st);
	strbuf_release(&got);
}

/* agent_fuzz found it: a session/update without its "update" member was emitted as "unknown" with no data at all
 * (json_pack refused the missing raw); it is kept, raw null. */
static void keep_data(const char *type, json_t *data, void *arg)
{
	char *text = json_to_compact(data);
	strbuf_addf(arg, "%s:%s;", type, text ? text : "NULL");
	free(text);
	json_decref(data);
}

TEST(acp_client_keeps_an_update_without_its_update_member)
{
	int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct agent_state st = { 0 };
	struct strbuf got = STRBUF_INIT;
	struct acp_client *c = acp_start(out, "/w", "do it", deny, NULL);
	const char *line = "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}";
	acp_on_line(c, line, strlen(line), &st, keep_data, &got);
	CHECK_STR(got.buf, "unknown:{\"type\":\"\",\"raw\":null};");
	acp_free(c);
	agent_state_release(&st);
	strbuf_release(&got);
}

static void command(const char *tool, const char *mode, struct strvec *argv, struct strvec *env, struct strbuf *in)
{
	struct agent_invocation inv = { .prompt = "do it",
					.permission_mode = mode,
					.api_key = "sk-1",
					.base_url = "http://127.0.0.1:9",
					.run_dir = "/tmp/r" };
	agent_command(agent_find(tool), &inv, argv, env, in);
}

TEST(agent_gemini_maps_modes_and_trusts_the_worktree_headless)
{
	static const char *const modes[] = { "acceptEdits", "bypassPermissions", "plan" };
	static const char *const flags[] = { "auto_edit", "yolo", "plan" };
	for (size_t m = 0; m < 3; m++) {
		struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
		struct strbuf in = STRBUF_INIT;
		command("gemini", modes[m], &argv, &env, &in);
		CHECK(strvec_find(&argv, flags[m]) >= 0);
		CHECK(strvec_find(&argv, "--skip-trust") >= 0);
		CHECK(strvec_find(&argv, "do it") < 0);
		CHECK_STR(in.buf, "do it");
		CHECK_STR(strvec_getenv(&env, "GEMINI_API_KEY"), "sk-1");
		CHECK_STR(strvec_getenv(&env, "GOOGLE_GEMINI_BASE_URL"), "http://127.0.0.1:9");
		strvec_clear(&argv);
		strvec_clear(&env);
		strbuf_release(&in);
	}
}

TEST(agent_opencode_denies_what_it_cannot_ask_and_ignores_the_worktree_config)
{
	static const char *const modes[] = { "acceptEdits", "bypassPermissions", "plan" };
	static const char *const bash[] = { "\"bash\":\"deny\"", "\"bash\":\"allow\"", "\"bash\":\"deny\"" };
	for (size_t m = 0; m < 3; m++) {
		struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
		struct strbuf in = STRBUF_INIT;
		command("opencode", modes[m], &argv, &env, &in);
		const char *perm = strvec_getenv(&env, "OPENCODE_PERMISSION");
		CHECK(perm && strstr(perm, bash[m]) && !strstr(perm, "ask"));
		CHECK_STR(strvec_getenv(&env, "OPENCODE_DISABLE_PROJECT_CONFIG"), "1");
		const char *cfg = strvec_getenv(&env, "OPENCODE_CONFIG_CONTENT");
		CHECK(cfg && strstr(cfg, "\"baseURL\":\"http://127.0.0.1:9/v1\""));
		CHECK(strvec_find(&argv, "do it") < 0);
		CHECK_STR(in.buf, "do it");
		strvec_clear(&argv);
		strvec_clear(&env);
		strbuf_release(&in);
	}
}
