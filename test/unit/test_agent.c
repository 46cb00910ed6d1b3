/* test_agent.c — unit tests of lib/agent (each CLI's documented event format mapped onto agor's messages,
 * usage, session ids, failures, unknown events kept, garbage counted) and lib/mcp_permission (the MCP
 * handshake, allow/deny answers from a broker socket, fail-closed without one). */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "agent_codex.h"
#include "common.h"
#include "fsutil.h"
#include "json.h"
#include "mcp_permission.h"
#include "strbuf.h"
#include "unit.h"
#include "banned.h"

/* Messages rendered as "type:compact-data" lines. */
static void record(const char *type, json_t *data, void *arg)
{
	struct strbuf *sb = arg;
	char *text = json_to_compact(data);
	strbuf_addf(sb, "%s:%s\n", type, text);
	free(text);
	json_decref(data);
}

static void feed(const char *tool, const char *const *lines, struct agent_state *st, struct strbuf *out)
{
	const struct agent_adapter *a = agent_find(tool);
	CHECK(a != NULL);
	for (size_t i = 0; a && lines[i]; i++)
		agent_map_line(a, lines[i], strlen(lines[i]), st, record, out);
}

#define CHECK_HAS(sb, text)                                                                                            \
	do {                                                                                                           \
		if (!strstr((sb)->buf, text))                                                                          \
			unit_fail(__FILE__, __LINE__, "missing %s in:\n%s", text, (sb)->buf);                          \
	} while (0)

TEST(agent_claude_stream_json)
{
	static const char *const lines[] = {
		"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"c-1\",\"model\":\"m\"}",
		"{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"index\":0,"
		"\"delta\":{\"type\":\"text_delta\",\"text\":\"He\"}},\"session_id\":\"c-1\"}",
		"{\"type\":\"stream_event\",\"event\":{\"type\":\"message_start\"},\"session_id\":\"c-1\"}",
		"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\"},"
		"{\"type\":\"text\",\"text\":\"Hello\"},{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\","
		"\"input\":{\"command\":\"ls\"}}]},\"session_id\":\"c-1\"}",
		"{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\","
		"\"content\":\"a\\nb\",\"is_error\":false}]}}",
		"{\"type\":\"rate_limit_event\",\"x\":1}",
		"{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\","
		"\"usage\":{\"input_tokens\":10,\"output_tokens\":5},\"total_cost_usd\":0.01}",
		NULL,
	};
	struct agent_state st = { 0 };
	struct strbuf out = STRBUF_INIT;
	feed("claude-code", lines, &st, &out);
	CHECK_HAS(&out, "text_delta:{\"text\":\"He\"}\n");
	CHECK_HAS(&out, "thinking:{\"text\":\"hmm\"}\n");
	CHECK_HAS(&out, "text:{\"text\":\"Hello\"}\n");
	CHECK_HAS(&out, "tool_use:{\"id\":\"t1\",\"name\":\"Bash\",\"input\":{\"command\":\"ls\"}}\n");
	CHECK_HAS(&out, "tool_result:{\"tool_use_id\":\"t1\",\"content\":\"a\\nb\",\"is_error\":false}\n");
	CHECK_HAS(&out, "unknown:{\"type\":\"rate_limit_event\",\"raw\":{\"type\":\"rate_limit_event\",\"x\":1}}\n");
	CHECK(!strstr(out.buf, "message_start"));
	CHECK_STR(st.agent_session_id, "c-1");
	CHECK(st.finished && !st.failed);
	CHECK_INT(json_integer_value(json_object_get(st.usage, "input_tokens")), 10);
	CHECK(json_object_get(st.usage, "total_cost_usd") != NULL);
	CHECK_INT(st.messages, 8);
	agent_state_release(&st);
	strbuf_release(&out);
}

TEST(agent_claude_error_result_and_garbage)
{
	static const char *const lines[] = {
		"not json at all",
		"[1,2]",
		"",
		"{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true,\"result\":\"\"}",
		NULL,
	};
	struct agent_state st = { 0 };
	struct strbuf out = STRBUF_INIT;
	feed("claude-code", lines, &st, &out);
	CHECK_INT(st.garbage_lines, 2);
	CHECK_HAS(&out, "garbage:{\"line\":\"not json at all\"}\n");
	CHECK(st.finished && st.failed);
	CHECK_STR(st.failure, "error_max_turns");
	agent_state_release(&st);
	strbuf_release(&out);
}

/* The daemon's stand-in for the Codex conversation: approves what names "yes", records every question. */
static json_t *ask_recorded(const char *tool, json_t *input, json_t *tool_use_id, void *arg)
{
	struct strbuf *asked = arg;
	char *text = json_to_compact(input);
	strbuf_addf(asked, "%s %s %s\n", tool, json_string_value(tool_use_id), text);
	json_t *answer = json_pack("{s:b}", "approved", strstr(text, "yes") != NULL);
	free(text);
	return answer;
}

TEST(agent_codex_app_server_conversation_and_approvals)
{
	static const char *const lines[] = {
		"{\"id\":1,\"result\":{\"userAgent\":\"x\"}}",
		"{\"id\":2,\"result\":{\"thread\":{\"id\":\"th-9\"}}}",
		"{\"method\":\"turn/started\",\"params\":{\"threadId\":\"th-9\"}}",
		"{\"method\":\"thread/status/changed\",\"params\":{}}",
		"{\"method\":\"item/started\",\"params\":{\"item\":{\"type\":\"commandExecution\",\"id\":\"c1\","
		"\"command\":\"echo yes\"}}}",
		"{\"method\":\"item/commandExecution/requestApproval\",\"id\":0,\"params\":{\"itemId\":\"c1\","
		"\"command\":\"echo yes\",\"cwd\":\"/w\"}}",
		"{\"method\":\"item/completed\",\"params\":{\"item\":{\"type\":\"commandExecution\",\"id\":\"c1\","
		"\"status\":\"completed\",\"aggregatedOutput\":\"yes\\n\",\"exitCode\":0}}}",
		"{\"method\":\"item/started\",\"params\":{\"item\":{\"type\":\"fileChange\",\"id\":\"f1\","
		"\"changes\":[{\"path\":\"/w/x\",\"diff\":\"no\"}]}}}",
		"{\"method\":\"item/fileChange/requestApproval\",\"id\":\"r2\",\"params\":{\"itemId\":\"f1\"}}",
		"{\"method\":\"item/completed\",\"params\":{\"item\":{\"type\":\"fileChange\",\"id\":\"f1\","
		"\"status\":\"declined\"}}}",
		"{\"method\":\"item/tool/requestUserInput\",\"id\":7,\"params\":{}}",
		"{\"method\":\"item/agentMessage/delta\",\"params\":{\"delta\":\"do\"}}",
		"{\"method\":\"item/"
		"completed\",\"params\":{\"item\":{\"type\":\"agentMessage\",\"id\":\"m\",\"text\":\"done\"}}}",
		"{\"method\":\"thread/tokenUsage/updated\",\"params\":{\"tokenUsage\":{\"last\":{\"inputTokens\":40,"
		"\"outputTokens\":2}}}}",
		"{\"method\":\"thread/tokenUsage/updated\",\"params\":{\"tokenUsage\":{\"last\":{\"inputTokens\":2,"
		"\"outputTokens\":1}}}}",
		"{\"method\":\"model/rerouted\",\"params\":{}}",
		"{\"method\":\"turn/completed\",\"params\":{\"turn\":{\"status\":\"completed\"}}}",
		NULL,
	};
	struct agent_invocation inv = {
		.prompt = "do it", .permission_mode = "default", .model = "gpt-5.5", .in_sandbox = 1
	};
	struct strbuf out = STRBUF_INIT, asked = STRBUF_INIT;
	struct agent_channel ch = { .inv = &inv, .ask = ask_recorded, .ask_arg = &asked, .to_cli = STRBUF_INIT };
	struct agent_state st = { .channel = &ch };
	feed("codex", lines, &st, &out);
	CHECK_STR(st.agent_session_id, "th-9");
	CHECK_HAS(&ch.to_cli, "{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}\n");
	CHECK_HAS(&ch.to_cli, "\"id\":2,\"method\":\"thread/start\",\"params\":{\"approvalPolicy\":\"untrusted\","
			      "\"sandbox\":\"danger-full-access\",\"model\":\"gpt-5.5\"}");
	CHECK_HAS(&ch.to_cli,
		  "\"id\":3,\"method\":\"turn/start\",\"params\":{\"threadId\":\"th-9\",\"input\":[{\"type\":"
		  "\"text\",\"text\":\"do it\"}]}");
	CHECK_HAS(&ch.to_cli, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"decision\":\"accept\"}}\n");
	CHECK_HAS(&ch.to_cli, "{\"jsonrpc\":\"2.0\",\"id\":\"r2\",\"result\":{\"decision\":\"decline\"}}\n");
	CHECK_HAS(&ch.to_cli, "\"id\":7,\"error\":{\"code\":-32601");
	CHECK_HAS(&asked, "command_execution c1 {\"command\":\"echo yes\",\"cwd\":\"/w\",\"reason\":null}\n");
	CHECK_HAS(&asked, "file_change f1 {\"changes\":[{\"path\":\"/w/x\",\"diff\":\"no\"}],\"reason\":null}\n");
	CHECK_HAS(&out,
		  "tool_use:{\"id\":\"c1\",\"name\":\"command_execution\",\"input\":{\"command\":\"echo yes\"}}\n");
	CHECK_HAS(&out,
		  "tool_result:{\"tool_use_id\":\"c1\",\"content\":\"yes\\n\",\"exit_code\":0,\"status\":\"completed\","
		  "\"is_error\":false}\n");
	CHECK_HAS(&out, "tool_result:{\"tool_use_id\":\"f1\",\"content\":\"declined\",\"is_error\":true}\n");
	CHECK_HAS(&out, "text_delta:{\"text\":\"do\"}\n");
	CHECK_HAS(&out, "text:{\"text\":\"done\"}\n");
	CHECK_HAS(&out, "unknown:{\"type\":\"model/rerouted\"");
	CHECK(!strstr(out.buf, "status/changed"));
	CHECK(st.finished && !st.failed && ch.done);
	CHECK_INT(json_integer_value(json_object_get(st.usage, "input_tokens")), 42);
	CHECK_INT(json_integer_value(json_object_get(st.usage, "output_tokens")), 3);
	agent_state_release(&st);
	agent_channel_release(&ch);
	strbuf_release(&out);
	strbuf_release(&asked);
}

TEST(agent_codex_resume_failure_and_mode_policies)
{
	static const char *const lines[] = {
		"{\"id\":1,\"result\":{}}",
		"{\"id\":2,\"error\":{\"code\":-1,\"message\":\"no rollout found\"}}",
		NULL,
	};
	struct agent_invocation inv = {
		.prompt = "p", .permission_mode = "plan", .resume_id = "th-1", .in_sandbox = 1
	};
	struct strbuf out = STRBUF_INIT;
	struct agent_channel ch = { .inv = &inv, .to_cli = STRBUF_INIT };
	struct agent_state st = { .channel = &ch };
	feed("codex", lines, &st, &out);
	CHECK_HAS(&ch.to_cli, "\"method\":\"thread/resume\",\"params\":{\"approvalPolicy\":\"never\","
			      "\"sandbox\":\"danger-full-access\",\"threadId\":\"th-1\"}");
	CHECK(st.failed && ch.done);
	CHECK_STR(st.failure, "no rollout found");
	agent_state_release(&st);
	agent_channel_release(&ch);
	strbuf_release(&out);

	static const char *const modes[] = { "default", "acceptEdits", "bypassPermissions", "plan" };
	static const char *const approval[] = { "untrusted", "untrusted", "never", "never" };
	static const char *const unconfined[] = { "workspace-write", "workspace-write", "danger-full-access",
						  "read-only" };
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
		const char *a, *sb;
		codex_mode_policy(modes[i], 1, &a, &sb);
		CHECK_STR(a, approval[i]);
		CHECK_STR(sb, "danger-full-access");
		codex_mode_policy(modes[i], 0, &a, &sb);
		CHECK_STR(sb, unconfined[i]);
	}
	/* without a channel nothing is approved and nothing is sent */
	static const char *const ask[] = {
		"{\"method\":\"item/commandExecution/requestApproval\",\"id\":0,\"params\":{}}", NULL
	};
	struct agent_state alone = { 0 };
	struct strbuf out2 = STRBUF_INIT;
	feed("codex", ask, &alone, &out2);
	CHECK(out2.len == 0);
	agent_state_release(&alone);
	strbuf_release(&out2);
}

TEST(agent_gemini_stream_json)
{
	static const char *const lines[] = {
		"{\"type\":\"init\",\"timestamp\":\"t\",\"session_id\":\"g-1\",\"model\":\"gemini-2.5-pro\"}",
		"{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}",
		"{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"Hel\",\"delta\":true}",
		"{\"type\":\"tool_use\",\"tool_name\":\"run_shell_command\",\"tool_id\":\"x1\",\"parameters\":{"
		"\"command\":\"ls\"}}",
		"{\"type\":\"tool_result\",\"tool_id\":\"x1\",\"status\":\"error\",\"output\":\"denied\"}",
		"{\"type\":\"error\",\"severity\":\"warning\",\"message\":\"loop detected\"}",
		"{\"type\":\"result\",\"status\":\"success\",\"stats\":{\"total_tokens\":30,\"input_tokens\":20,"
		"\"output_tokens\":10,\"duration_ms\":5,\"tool_calls\":1}}",
		NULL,
	};
	struct agent_state st = { 0 };
	struct strbuf out = STRBUF_INIT;
	feed("gemini", lines, &st, &out);
	CHECK_STR(st.agent_session_id, "g-1");
	CHECK(!strstr(out.buf, "\"hi\""));
	CHECK_HAS(&out, "text_delta:{\"text\":\"Hel\"}\n");
	CHECK_HAS(&out, "tool_use:{\"id\":\"x1\",\"name\":\"run_shell_command\",\"input\":{\"command\":\"ls\"}}\n");
	CHECK_HAS(&out, "tool_result:{\"tool_use_id\":\"x1\",\"content\":\"denied\",\"is_error\":true}\n");
	CHECK_HAS(&out, "error:{\"message\":\"loop detected\"}\n");
	CHECK(st.finished && !st.failed);
	CHECK_INT(json_integer_value(json_object_get(st.usage, "total_tokens")), 30);
	agent_state_release(&st);
	strbuf_release(&out);
}

TEST(agent_opencode_run_json)
{
	static const char *const lines[] = {
		"{\"type\":\"step_start\",\"timestamp\":1,\"sessionID\":\"ses_1\",\"part\":{\"type\":\"step-start\"}}",
		"{\"type\":\"tool_use\",\"sessionID\":\"ses_1\",\"part\":{\"tool\":\"bash\",\"callID\":\"c1\","
		"\"state\":{\"status\":\"completed\",\"input\":{\"command\":\"ls\"},\"output\":\"x\"}}}",
		"{\"type\":\"step_finish\",\"sessionID\":\"ses_1\",\"part\":{\"reason\":\"tool-calls\",\"tokens\":{"
		"\"input\":1,\"output\":1}}}",
		"{\"type\":\"text\",\"sessionID\":\"ses_1\",\"part\":{\"type\":\"text\",\"text\":\"done\"}}",
		"{\"type\":\"step_finish\",\"sessionID\":\"ses_1\",\"part\":{\"reason\":\"stop\",\"cost\":0,"
		"\"tokens\":{\"input\":9,\"output\":4,\"reasoning\":0,\"cache\":{\"read\":0,\"write\":0}}}}",
		NULL,
	};
	struct agent_state st = { 0 };
	struct strbuf out = STRBUF_INIT;
	feed("opencode", lines, &st, &out);
	CHECK_STR(st.agent_session_id, "ses_1");
	CHECK_HAS(&out, "tool_use:{\"id\":\"c1\",\"name\":\"bash\",\"input\":{\"command\":\"ls\"}}\n");
	CHECK_HAS(&out, "tool_result:{\"tool_use_id\":\"c1\",\"content\":\"x\",\"is_error\":false}\n");
	CHECK_HAS(&out, "text:{\"text\":\"done\"}\n");
	CHECK(st.finished && !st.failed);
	CHECK_INT(json_integer_value(json_object_get(st.usage, "input")), 9);
	agent_state_release(&st);
	strbuf_release(&out);
}

TEST(agent_commands_map_permission_modes_and_keep_the_key_out_of_argv)
{
	struct agent_invocation inv = { .prompt = "do it",
					.permission_mode = "bypassPermissions",
					.api_key = "sk-1",
					.base_url = "http://127.0.0.1:9",
					.resume_id = "r-1",
					.mcp_config = "/x/mcp.json",
					.run_dir = "/tmp/r" };
	static const char *const tools[] = { "claude-code", "codex", "gemini", "opencode" };
	static const char *const expect_flag[] = { "bypassPermissions", "app-server", "yolo", "run" };
	for (size_t t = 0; t < 4; t++) {
		struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
		struct strbuf in = STRBUF_INIT;
		agent_command(agent_find(tools[t]), &inv, &argv, &env, &in);
		CHECK(strvec_find(&argv, expect_flag[t]) >= 0);
		for (size_t i = 0; i < argv.nr; i++)
			CHECK(!strstr(argv.v[i], "sk-1"));
		int has_key = 0;
		for (size_t i = 0; i < env.nr; i++)
			has_key |= strstr(env.v[i], "=sk-1") != NULL;
		CHECK(has_key);
		/* bypass needs no prompt tool */
		CHECK(strvec_find(&argv, "--permission-prompt-tool") < 0);
		strvec_clear(&argv);
		strvec_clear(&env);
		strbuf_release(&in);
	}
	inv.permission_mode = "default";
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
	struct strbuf in = STRBUF_INIT;
	agent_command(agent_find("claude-code"), &inv, &argv, &env, &in);
	CHECK(strvec_find(&argv, AGENT_PERMISSION_TOOL) >= 0);
	CHECK(strvec_find(&argv, "r-1") >= 0);
	CHECK(strstr(in.buf, "\"text\":\"do it\"") != NULL);
	CHECK_STR(strvec_getenv(&env, "ANTHROPIC_BASE_URL"), "http://127.0.0.1:9");
	strvec_clear(&argv);
	strvec_clear(&env);
	strbuf_release(&in);
	CHECK(agent_find("vim") == NULL);
}

/* --- the MCP permission server ---------------------------------------------------------------- */

struct broker {
	int listen_fd;
	const char *answer;
	struct strbuf asked;
};

static void *serve_broker(void *arg)
{
	struct broker *b = arg;
	int fd = accept(b->listen_fd, NULL, NULL);
	if (fd < 0)
		return NULL;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n > 0)
		strbuf_add(&b->asked, buf, (size_t)n);
	(void)fs_write_all(fd, b->answer, strlen(b->answer));
	close(fd);
	return NULL;
}

static char *converse(const char *socket_path, const char *input)
{
	int in[2], out[2];
	CHECK(pipe(in) == 0 && pipe(out) == 0);
	(void)fs_write_all(in[1], input, strlen(input));
	close(in[1]);
	mcp_permission_serve(in[0], out[1], socket_path);
	close(in[0]);
	close(out[1]);
	struct strbuf sb = STRBUF_INIT;
	strbuf_read_fd(&sb, out[0], 1 << 20);
	close(out[0]);
	return strbuf_detach(&sb, NULL);
}

static const char *const call_line =
	"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"approve\",\"arguments\":"
	"{\"tool_name\":\"Bash\",\"input\":{\"command\":\"ls\"},\"tool_use_id\":\"t1\"}}}\n";

static char *ask_with_answer(const char *answer, struct strbuf *asked)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/b.sock", unit_tmpdir());
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, path, strlen(path) + 1);
	struct broker b = { .listen_fd = socket(AF_UNIX, SOCK_STREAM, 0), .answer = answer, .asked = STRBUF_INIT };
	CHECK(bind(b.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(b.listen_fd, 1) == 0);
	pthread_t th;
	pthread_create(&th, NULL, serve_broker, &b);
	char *reply = converse(path, call_line);
	pthread_join(th, NULL);
	close(b.listen_fd);
	unlink(path);
	strbuf_addstr(asked, b.asked.buf);
	strbuf_release(&b.asked);
	return reply;
}

TEST(mcp_permission_handshake_and_unknown_methods)
{
	char *reply = converse("/nonexistent/sock", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
						    "\"params\":{\"protocolVersion\":\"2025-11-25\"}}\n"
						    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
						    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n"
						    "garbage\n"
						    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/list\"}\n");
	CHECK(strstr(reply, "\"protocolVersion\":\"2025-11-25\"") != NULL);
	CHECK(strstr(reply, "\"name\":\"approve\"") != NULL);
	CHECK(strstr(reply, "\"id\":4,\"error\":{\"code\":-32601") != NULL);
	int lines = 0;
	for (char *p = reply; *p; p++)
		lines += *p == '\n';
	CHECK_INT(lines, 3);
	free(reply);
}

TEST(mcp_permission_allow_deny_and_fail_closed)
{
	struct strbuf asked = STRBUF_INIT;
	char *reply = ask_with_answer("{\"approved\":true,\"reason\":\"ok\"}\n", &asked);
	CHECK(strstr(asked.buf, "\"tool_name\":\"Bash\"") && strstr(asked.buf, "\"tool_use_id\":\"t1\""));
	CHECK(strstr(reply, "\\\"behavior\\\":\\\"allow\\\",\\\"updatedInput\\\":{\\\"command\\\":\\\"ls\\\"}") !=
	      NULL);
	free(reply);
	reply = ask_with_answer("{\"approved\":false,\"reason\":\"no way\"}\n", &asked);
	CHECK(strstr(reply, "\\\"behavior\\\":\\\"deny\\\",\\\"message\\\":\\\"no way\\\"") != NULL);
	free(reply);
	reply = ask_with_answer("{\"approved\":\"yes\"", &asked);
	CHECK(strstr(reply, "\\\"behavior\\\":\\\"deny\\\"") != NULL);
	free(reply);
	reply = converse("/nonexistent/sock", call_line);
	CHECK(strstr(reply, "\\\"behavior\\\":\\\"deny\\\"") && strstr(reply, "fail closed"));
	free(reply);
	strbuf_release(&asked);
}

struct relayed {
	size_t lines;
	struct strbuf last;
};

static void count_line(const char *line, size_t len, void *arg)
{
	struct relayed *r = arg;
	r->lines++;
	strbuf_reset(&r->last);
	strbuf_add(&r->last, line, len);
}

/* The agent CLI's stdout: four reads of 64 KiB of blank lines move fewer bytes than they read (a removal per line,
 * as prompt.c did, moved about 2^31 bytes per read). */
TEST(agent_relay_lines_moves_each_byte_at_most_once)
{
	struct strbuf pending = STRBUF_INIT;
	struct relayed r = { 0, STRBUF_INIT };
	int overflow = 0;
	char piece[65536];
	memset(piece, '\n', sizeof(piece));
	memcpy(piece + sizeof(piece) - 3, "abc", 3); /* a partial line, ended by the next piece */
	size_t moved = strbuf_moved_bytes(), total = 0;
	for (int i = 0; i < 4; i++) {
		strbuf_add(&pending, piece, sizeof(piece));
		total += sizeof(piece);
		agent_relay_lines(&pending, &overflow, 16u << 20, count_line, &r);
	}
	CHECK_INT(r.lines, 4 * (sizeof(piece) - 3));
	CHECK(strbuf_moved_bytes() - moved <= total);
	CHECK_STR(pending.buf, "abc");
	strbuf_release(&pending);
	strbuf_release(&r.last);
}

TEST(agent_relay_lines_hands_on_an_overlong_line_once_and_drops_its_rest)
{
	struct strbuf pending = STRBUF_INIT;
	struct relayed r = { 0, STRBUF_INIT };
	int overflow = 0;
	strbuf_addstr(&pending, "first\n0123456789AB");
	agent_relay_lines(&pending, &overflow, 10, count_line, &r);
	CHECK_INT(r.lines, 2);
	CHECK_STR(r.last.buf, "0123456789AB");
	CHECK_INT(overflow, 1);
	strbuf_addstr(&pending, "CDEFGHIJKLMN");
	agent_relay_lines(&pending, &overflow, 10, count_line, &r);
	CHECK_INT(r.lines, 2); /* still the same line: dropped */
	strbuf_addstr(&pending, "OP\nnext\n");
	agent_relay_lines(&pending, &overflow, 10, count_line, &r);
	CHECK_INT(r.lines, 3);
	CHECK_STR(r.last.buf, "next\n");
	CHECK_INT(overflow, 0);
	CHECK_INT(pending.len, 0);
	strbuf_release(&pending);
	strbuf_release(&r.last);
}
