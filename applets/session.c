/* session.c — `agor session`: create, list and show agent sessions on a worktree through the daemon.
 * Never runs an agent itself: prompting is a daemon task (`agor prompt`, docs/usage.md#prompts). */
#include <stdio.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "banned.h"

static int print_session(const json_t *s)
{
	char worktree[256];
	printf("session %s\n  worktree  %s\n  tool      %s\n  mode      %s\n", json_get_str(s, "id") ?: "?",
	       client_value_text("worktree_id", json_object_get(s, "worktree_id"), worktree, sizeof(worktree)),
	       json_get_str(s, "tool") ?: "?", json_get_str(s, "permission_mode") ?: "default");
	if (json_get_str(s, "egress_allow"))
		printf("  egress    %s (besides execution.sandbox.egress_allow)\n", json_get_str(s, "egress_allow"));
	return 0;
}

static int print_egress(const json_t *r)
{
	const json_t *list = json_object_get(r, "egress_allow");
	printf("session %s may also reach: %s", json_get_str(r, "session_id") ?: "?",
	       json_array_size(list) ? "" : "nothing more\n");
	for (size_t i = 0; i < json_array_size(list); i++)
		printf("%s%s", json_string_value(json_array_get(list, i)), i + 1 < json_array_size(list) ? ", " : "\n");
	return 0;
}

static int print_sessions(const json_t *rows)
{
	client_print_table(rows,
			   (const char *const[]){ "id", "worktree_id", "tool", "permission_mode", "created_at", NULL });
	return 0;
}

static const char *const create_args[] = { "worktree_id", NULL }, *const id_arg[] = { "id", NULL },
			 *const egress_args[] = { "session_id", "entry", NULL };
static const struct client_flag create_flags[] = {
	{ "--tool", "tool", CLIENT_FLAG_STRING, "the agent CLI: claude-code, codex, gemini or opencode", "TOOL" },
	{ "--permission-mode", "permission_mode", CLIENT_FLAG_STRING,
	  "default (ask the prompter), acceptEdits, bypassPermissions or plan (read-only)", "MODE" },
	{ NULL },
};

static const struct client_command commands[] = {
	{ "create", "sessions.create", create_args, create_flags,
	  "WORKTREE --tool claude-code|codex|gemini|opencode [--permission-mode "
	  "default|acceptEdits|bypassPermissions|plan]",
	  print_session, .example = "agor session create feature --tool claude-code --permission-mode default" },
	{ "list", "sessions.list", NULL, NULL, "", print_sessions, .example = "agor session list" },
	{ "get", "sessions.get", id_arg, NULL, "ID", print_session,
	  .example = "agor session get 8c1d0e6b3f7a4b2c9d5e1f0a2b3c4d5e" },
	{ "allow-host", "sessions.egress.add", egress_args, NULL, "ID HOST[:PORT]|*.SUFFIX[:PORT]", print_egress,
	  .example = "agor session allow-host 8c1d0e6b3f7a4b2c9d5e1f0a2b3c4d5e registry.npmjs.org" },
	{ "disallow-host", "sessions.egress.remove", egress_args, NULL, "ID ENTRY", print_egress,
	  .example = "agor session disallow-host 8c1d0e6b3f7a4b2c9d5e1f0a2b3c4d5e registry.npmjs.org" },
};

static int session_main(int argc, char **argv)
{
	return client_main("session", commands, ARRAY_SIZE(commands), argc, argv);
}

const struct applet applet_session = {
	.name = "session",
	.summary = "create, list and show agent sessions (through the daemon)",
	.usage =
		"Usage: agor session create WORKTREE --tool T [--permission-mode M] | list | get ID\n"
		"       agor session allow-host ID ENTRY | disallow-host ID ENTRY   [--json] [--url URL]\n"
		"allow-host: the session's runs (prompts, exec.run naming it) may also reach ENTRY through the egress\n"
		"proxy (its creator or an admin; ENTRY as in execution.sandbox.egress_allow).\n",
	.main = session_main,
	.flags = APPLET_SUBCOMMAND_HELP,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
