/* stubs.c — the registered applets that later issues build: their usage text and a main that refuses.
 * They must never pretend to work: the answer is "not built yet" and exit 2, until their issue lands. */
#include <stdio.h>

#include "applet.h"
#include "banned.h"

static int not_built_main(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "agor %s: not built yet\n", argv[0]);
	return EXIT_USAGE;
}

const struct applet applet_daemon = {
	.name = "daemon",
	.summary = "trusted control plane: database, tokens, JSON-RPC, executor orchestration",
	.usage = "Usage: agor daemon [--foreground] [--config PATH]\n"
		 "\n"
		 "Runs the trusted control plane: the SQLite database, JWT secret and master key,\n"
		 "JSON-RPC over the Unix socket and HTTP/WebSocket, and executor orchestration.\n"
		 "\n"
		 "  --foreground     stay attached to the terminal, log to stderr\n"
		 "  --config PATH    config.yaml to read (default: $AGOR_HOME/config.yaml)\n",
	.main = not_built_main,
	.flags = APPLET_NOT_BUILT,
	.built_by = "issue 5 (daemon)",
};

const struct applet applet_executor = {
	.name = "executor",
	.summary = "untrusted worker: one typed JSON payload on stdin, one JSON result line on stdout",
	.usage = "Usage: agor executor --stdin [--dry-run]\n"
		 "       agor executor --session-token T --session-id S --task-id K --prompt P\n"
		 "                     --tool claude-code|codex|gemini|opencode\n"
		 "                     [--permission-mode M] [--daemon-url URL]\n"
		 "\n"
		 "Reads one JSON payload {\"command\":…,\"params\":{…}} from stdin (at most 4 MiB),\n"
		 "runs it and prints exactly one result line on stdout.\n"
		 "Exit status: 0 success, 1 the command failed, 2 the input was invalid.\n"
		 "\n"
		 "  --stdin          read the payload from standard input\n"
		 "  --dry-run        validate and plan, change nothing\n",
	.main = not_built_main,
	.flags = APPLET_NOT_BUILT,
	.built_by = "issue 3 (executor)",
};

const struct applet applet_admin = {
	.name = "admin",
	.summary = "the only root code: validated user, group, ACL and symlink operations",
	.usage = "Usage: agor admin SUBCOMMAND [--dry-run] [--json] ARGS…   (root only)\n"
		 "\n"
		 "  create-worktree-group  <worktree-id> <worktree-path> [--others none|read|write]\n"
		 "  delete-worktree-group  <worktree-id>\n"
		 "  add-worktree-owner     <worktree-id> <unix-user> <worktree-path> [--link-name NAME]\n"
		 "  remove-worktree-owner  <worktree-id> <unix-user>\n"
		 "  set-worktree-permissions <worktree-id> <worktree-path> <none|read|write>\n"
		 "  update-repo-permissions  <repo-path> [--group|--world]\n"
		 "  setup-unix-user <unix-user>\n"
		 "  delete-unix-user <unix-user> [--archive DIR]\n",
	.main = not_built_main,
	.flags = APPLET_NOT_BUILT | APPLET_ROOT_ONLY,
	.built_by = "issue 4 (admin)",
};

const struct applet applet_approvals = {
	.name = "approvals",
	.summary = "exec-approval policy: allowlists, ask flow, policy-checked exec",
	.usage = "Usage: agor approvals get|set|allowlist add|rm|list\n"
		 "       agor approvals check [--json] -- ARGV…\n"
		 "       agor approvals exec -- ARGV…\n"
		 "       agor approvals serve\n",
	.main = not_built_main,
	.flags = APPLET_NOT_BUILT,
	.built_by = "issue 7 (approvals)",
};

const struct applet applet_node = {
	.name = "node",
	.summary = "headless node runner: pairs with a gateway and runs system.run under local policy",
	.usage = "Usage: agor node pair --gateway URL [--name NAME]\n"
		 "       agor node run\n",
	.main = not_built_main,
	.flags = APPLET_NOT_BUILT,
	.built_by = "issue 8 (node)",
};
