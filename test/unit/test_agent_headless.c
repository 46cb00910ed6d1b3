/* test_agent_headless.c — unit tests of lib/agent for the CLIs that cannot ask agor before a tool runs (Gemini
 * CLI, OpenCode): "default" refused with the modes they support, each mode mapped to allow or deny outright, the
 * prompt on stdin, and OpenCode kept from the worktree's own opencode.json. */
#include <string.h>

#include "agent.h"
#include "strbuf.h"
#include "strvec.h"
#include "unit.h"
#include "banned.h"

TEST(agent_headless_clis_refuse_default_and_name_their_modes)
{
	static const char *const tools[] = { "gemini", "opencode" };
	for (size_t t = 0; t < 2; t++) {
		struct err e = ERR_INIT;
		CHECK(agent_check_mode(agent_find(tools[t]), "default", &e) < 0);
		CHECK(strstr(e.message, "acceptEdits|bypassPermissions|plan") != NULL);
		CHECK(strstr(e.message, tools[t]) != NULL);
		err_clear(&e);
		CHECK(agent_check_mode(agent_find(tools[t]), "plan", &e) == 0);
		CHECK(agent_check_mode(agent_find(tools[t]), "acceptEdits", &e) == 0);
	}
	struct err e = ERR_INIT;
	CHECK(agent_check_mode(agent_find("claude-code"), "default", &e) == 0);
	CHECK(agent_check_mode(agent_find("codex"), "default", &e) == 0);
}

static void command(const char *tool, const char *mode, struct strvec *argv, struct strvec *env, struct strbuf *in)
{
	struct agent_invocation inv = { .prompt = "do it", .permission_mode = mode, .api_key = "sk-1",
					.base_url = "http://127.0.0.1:9", .run_dir = "/tmp/r" };
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
