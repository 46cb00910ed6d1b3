/* terminal.c — `agor terminal WORKTREE`: this TTY, in raw mode, attached to the worktree's terminal through
 * the daemon (tmux as the execution user; the daemon relays). Never runs a shell itself. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "terminal_client.h"
#include "banned.h"

extern const struct applet applet_terminal;

static const char *const worktree_arg[] = { "worktree", NULL };
static const struct client_flag terminal_flags[] = {
	{ "--detach-key", "detach_key", CLIENT_FLAG_STRING,
	  "C-LETTER or C-] (the default): detaches, the shell goes on", "KEY" },
	{ NULL },
};
static const struct client_command commands[] = {
	{ "", NULL, worktree_arg, terminal_flags, "WORKTREE [--detach-key C-]] [--url URL] [--token T] [--config PATH]",
	  .example = "agor terminal feature --detach-key C-q" },
};

static int terminal_main(int argc, char **argv)
{
	struct terminal_client_options o = { .detach_key = 0x1d, .in_fd = STDIN_FILENO, .out_fd = STDOUT_FILENO };
	struct client_opts co = { 0 };
	_cleanup_json_ json_t *params = json_object();
	if (argc < 2)
		return applet_usage_error(&applet_terminal, "which worktree? give its id or name");
	int rc = client_parse_args("terminal", &commands[0], argc - 1, argv + 1, &co, params);
	if (rc)
		return rc;
	if (co.json)
		return applet_usage_error(&applet_terminal, "unexpected argument '--json'");
	o.worktree = json_get_str(params, "worktree");
	const char *key = json_get_str(params, "detach_key") ? json_get_str(params, "detach_key") : "C-]";
	if ((o.detach_key = terminal_client_parse_key(key)) < 0)
		return applet_usage_error(&applet_terminal, "--detach-key: C-LETTER or C-] (got '%s')", key);
	struct err e = ERR_INIT;
	_cleanup_free_ char *default_url = co.url ? NULL : client_default_url(co.config_path, &e);
	o.url = co.url ? co.url : default_url;
	o.token = co.token;
	char *reason = NULL;
	rc = o.url ? terminal_client_run(&o, &reason, &e) : -1;
	if (rc < 0) {
		fprintf(stderr, "agor terminal: %s [%s]\n", e.message, e.code);
		client_print_fix_hint(stderr, e.code, e.message);
		int usage = !strcmp(e.code, E_USAGE);
		err_clear(&e);
		return usage ? EXIT_USAGE : EXIT_FAILED;
	}
	fprintf(stderr, "\r\n[agor terminal: %s]\r\n", reason);
	free(reason);
	return EXIT_OK;
}

const struct applet applet_terminal = {
	.name = "terminal",
	.summary = "attach this TTY to a worktree's terminal (tmux as the execution user, through the daemon)",
	.usage =
		"Usage: agor terminal WORKTREE [--detach-key C-]] [--url URL] [--token T] [--config PATH]\n"
		"Opens (or rejoins) the tmux window of WORKTREE (id or name) through the daemon and relays this TTY "
		"to\n"
		"it in raw mode; the window follows this TTY's size. The detach key (default C-]) detaches: the shell\n"
		"goes on, and `agor terminal WORKTREE` finds it again, also after a daemon restart.\n"
		"  --url URL    the daemon: unix:PATH (default: the configured socket), or its TCP listener as\n"
		"               ws://HOST:PORT, wss://…, http://HOST:PORT or https://… (a WebSocket at /terminal)\n"
		"  --token T    over TCP, act as the user of this token (`agor user token`); default: $AGOR_TOKEN\n"
		"The web page at http://HOST:PORT/terminal is the same terminal in a browser (docs/terminals.md).\n",
	.main = terminal_main,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
