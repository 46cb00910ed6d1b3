/* terminal_client.h — `agor terminal`'s engine: a local TTY in raw mode attached to a daemon terminal over
 * JSON-RPC (terminal.open, terminal.attach, terminal.input / terminal.output events, terminal.resize).
 * Never leaves the TTY in raw mode behind, never sends the detach key to the shell.
 *
 * Contract
 *   terminal_client_run() opens (or rejoins) the terminal of worktree through the daemon at url (over TCP first
 *   presenting the user token with auth.token, as every TCP client must), attaches,
 *   and relays: bytes read from in_fd are typed into the terminal, its output is written to out_fd. When
 *   in_fd is a TTY it is put in raw mode (restored on every way out) and its size is sent at start and on
 *   every SIGWINCH. The detach key (a byte, e.g. 0x1d for C-]) detaches: the shell and its tmux session go
 *   on. Returns 0 when detached or when the terminal exited (*exit_reason says which, malloc'd), -1 with e.
 *   terminal_client_parse_key("C-]") → 0x1d; "C-a" → 0x01; -1 for anything else.
 */
#ifndef AGOR_TERMINAL_CLIENT_H
#define AGOR_TERMINAL_CLIENT_H

#include "err.h"

struct terminal_client_options {
	/* the daemon: unix:PATH (output comes as terminal.output events there), or over TCP ws(s)://HOST:PORT[/PATH]
	 * or http(s)://HOST:PORT (a WebSocket at /terminal: output comes as binary frames) */
	const char *url;
	const char *token; /* over TCP: a user token (`agor user token`); NULL = $AGOR_TOKEN */
	const char *worktree;
	int detach_key;
	int in_fd, out_fd;
};

int terminal_client_parse_key(const char *spec);
int terminal_client_run(const struct terminal_client_options *o, char **exit_reason, struct err *e);

#endif
