/* terminal.h — the executor's half of terminals (docs/terminals.md): the execution user's tmux server,
 * session and worktree window, a control-mode client on a socket pair, and the hand-over of its descriptor.
 * Never runs tmux with the daemon's environment, never gives the daemon a child: the client it starts is a
 * session leader of its own and is let go once the daemon holds its descriptor.
 *
 * Contract
 *   One tmux server per Unix user and data home (`tmux -L agor-<user>-<hash>`), one session per user
 *   (params.sessionName), one window per worktree (params.windowName, default: the last component of cwd),
 *   created on demand when params.create is not false (else a missing session or window is NOT_FOUND).
 *   terminal_shell(): the shell a pane runs — execution.terminal_shell when set; else the passwd shell when it
 *   is a login shell (listed in /etc/shells and executable); else /bin/bash, else /bin/sh. An account whose
 *   shell is nologin or false (the executor user made by `agor setup isolation`) still gets a working pane.
 *   terminal_user_env(): exactly HOME, USER, LOGNAME, SHELL (terminal_shell's), PATH, LANG,
 *   TERM=xterm-256color, plus the payload's (already filtered) env — nothing of the caller's.
 *   terminal_tmux_attach(): ensures session and window, starts `tmux -L S -C attach-session -t =SESS:@W`
 *   on one end of a socket pair and sends the other end with SCM_RIGHTS to the daemon (daemonUrl unix:PATH)
 *   in a `terminal.handover {session_token, server, session, window, pane}` call, or, for a remote daemon,
 *   relays it over a verified WebSocket until the terminal ends (terminal_stream.h); the result data names the
 *   server, session, window id, pane id and whether anything was created.
 *   With dry_run only the plan (every argv) is produced.
 */
#ifndef AGOR_TERMINAL_H
#define AGOR_TERMINAL_H

#include <jansson.h>
#include <pwd.h>

#include "err.h"
#include "strvec.h"

struct terminal_request {
	const struct passwd *pw; /* the execution user (the current user) */
	const char *server;	 /* tmux: terminal_tmux_server_name() of pw and the data home */
	const char *session;	 /* params.sessionName */
	const char *window;	 /* tmux: params.windowName, or NULL: basename of cwd; zellij: params.tabName */
	const char *cwd;	 /* resolved inside the worktrees directory */
	int create;
	json_t *env;			/* payload env (filtered), may be NULL */
	const char *daemon_url;		/* unix:PATH, or a remote daemon's wss:// (the control client is relayed) */
	const char *daemon_ca;		/* a remote daemon: daemonCa (PEM), or NULL */
	const char *daemon_fingerprint; /* a remote daemon: daemonFingerprint, or NULL */
	const char *session_token;	/* a secret: never in argv, never logged */
	const char *zellij_dir;		/* zellij: paths.zellij_dir (config.kdl, sessions/) */
	const char *shell;		/* terminal_shell(): the user's interactive shell (SHELL), NULL: worked out */
	const char *shell_command;	/* tmux: what a new window runs (the sandboxed shell, or the shell itself) */
	int dry_run;
	json_t *plan; /* dry run: steps are appended here */
};

/* "agor-<user>-<8 hex of SHA-256(data_home)>": user's tmux server (-L) for the terminals of one data home, so
 * two daemons (two AGOR_HOMEs) never share one server for the same user. */
char *terminal_tmux_server_name(const char *user, const char *data_home);
/* The shell panes of pw run (configured: execution.terminal_shell, may be NULL); see the contract above. */
const char *terminal_shell(const struct passwd *pw, const char *configured);
/* The environment every tmux command and the user's shell get (shell NULL: terminal_shell(pw, NULL)). */
void terminal_user_env(const struct passwd *pw, const char *shell, json_t *extra, struct strvec *env);
/* argv of `tmux -L SERVER ARGS…` (NULL-terminated list of extra arguments). */
void terminal_tmux_argv(const char *server, struct strvec *argv, const char *const *args);

int terminal_tmux_attach(const struct terminal_request *r, json_t **data, struct err *e);
/* tmux.close: in r->session of r->pw's server, kills the window named r->window, or (r->window NULL) every window
 * agor named for a worktree (NAME-<8 hex>) that keep does not list. No server or session: nothing to close, 0.
 * data {closed: [names]}. */
int terminal_tmux_close(const struct terminal_request *r, const json_t *keep, json_t **data, struct err *e);
/* zellij.attach: installs config.kdl if needed, runs `zellij --config … attach SESSION --create` as a session
 * leader on a new PTY (the slave its controlling terminal), selects params.tabName when given, and hands the
 * PTY master over (terminal.handover with kind "pty"). zellij missing from PATH is NOT_FOUND. */
int terminal_zellij_attach(const struct terminal_request *r, json_t **data, struct err *e);

#endif
