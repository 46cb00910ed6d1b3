/* terminal.c — tmux and zellij for the executor (terminal.h): tmux session and window plus a control-mode client,
 * or zellij on a PTY; the descriptor goes to the daemon with SCM_RIGHTS. Never passes the caller's environment or a
 * secret in argv. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/ioctl.h>
#include <sys/un.h>
#include <unistd.h>

#include "callback.h"
#include "child.h"
#include "crypto.h"
#include "fdpass.h"
#include "json.h"
#include "net.h"
#include "strbuf.h"
#include "terminal.h"
#include "terminal_stream.h"
#include "zellij.h"
#include "banned.h"

#define TMUX_COMMAND_TIMEOUT_MS 10000
#define HANDOVER_TIMEOUT_S	15

char *terminal_tmux_server_name(const char *user, const char *data_home)
{
	char hash[CRYPTO_SHA256_HEX_LEN + 1];
	crypto_sha256_hex(data_home, strlen(data_home), hash);
	return xasprintf("agor-%s-%.8s", user, hash);
}

static int is_login_shell(const char *path)
{
	int listed = 0;
	setusershell();
	for (const char *s; !listed && (s = getusershell());)
		listed = !strcmp(s, path);
	endusershell();
	return listed && access(path, X_OK) == 0;
}

const char *terminal_shell(const struct passwd *pw, const char *configured)
{
	if (configured && *configured)
		return configured;
	if (pw->pw_shell && pw->pw_shell[0] == '/' && is_login_shell(pw->pw_shell))
		return pw->pw_shell;
	return access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

void terminal_user_env(const struct passwd *pw, const char *shell, json_t *extra, struct strvec *env)
{
	strvec_pushf(env, "HOME=%s", pw->pw_dir);
	strvec_pushf(env, "USER=%s", pw->pw_name);
	strvec_pushf(env, "LOGNAME=%s", pw->pw_name);
	strvec_pushf(env, "SHELL=%s", shell ? shell : terminal_shell(pw, NULL));
	strvec_push(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	const char *lang = getenv("LANG");
	strvec_pushf(env, "LANG=%s", lang && *lang ? lang : "C.UTF-8");
	strvec_push(env, "TERM=xterm-256color");
	const char *name;
	json_t *value;
	json_object_foreach(extra, name, value) if (json_is_string(value))
		strvec_pushf(env, "%s=%s", name, json_string_value(value));
}

void terminal_tmux_argv(const char *server, struct strvec *argv, const char *const *args)
{
	strvec_push(argv, "tmux");
	strvec_push(argv, "-L");
	strvec_push(argv, server);
	for (; args && *args; args++)
		strvec_push(argv, *args);
}

static json_t *argv_json(const struct strvec *argv)
{
	json_t *a = json_array();
	for (size_t i = 0; i < argv->nr; i++)
		json_array_append_new(a, json_string(argv->v[i]));
	return a;
}

/* Runs one tmux command to completion; out gets its stdout. Returns its exit code, or -1 with e set when it
 * could not run at all. */
static int run_tmux(const struct terminal_request *r, const char *const *args, struct strbuf *out, struct err *e)
{
	_cleanup_child_ struct child c;
	child_init(&c);
	terminal_tmux_argv(r->server, &c.args, args);
	terminal_user_env(r->pw, r->shell, r->env, &c.env);
	c.cwd = r->cwd;
	c.stdin_io = CHILD_IO_NULL;
	c.new_process_group = 1;
	c.timeout_ms = TMUX_COMMAND_TIMEOUT_MS;
	struct strbuf err_out = STRBUF_INIT, scratch = STRBUF_INIT;
	int rc = child_run(&c, NULL, 0, out ? out : &scratch, &err_out, 64 * 1024, e);
	if (rc == 0 && c.timed_out)
		rc = err_set(e, E_TIMEOUT, "tmux %s did not answer within %d ms", args[0], TMUX_COMMAND_TIMEOUT_MS);
	else if (rc == 0)
		rc = child_exit_code(&c);
	if (rc > 0 && !out) {
		strbuf_trim_trailing_newline(&err_out);
		rc = err_setd(e, E_INTERNAL,
			      json_pack("{s:s,s:s%}", "command", args[0], "stderr", err_out.buf, err_out.len),
			      "tmux %s failed (exit %d): %s", args[0], rc, err_out.buf);
	}
	strbuf_release(&err_out);
	strbuf_release(&scratch);
	return rc;
}

static void plan_tmux(const struct terminal_request *r, const char *step, const char *const *args)
{
	struct strvec argv = STRVEC_INIT;
	terminal_tmux_argv(r->server, &argv, args);
	json_array_append_new(r->plan, json_pack("{s:s,s:o}", "step", step, "argv", argv_json(&argv)));
	strvec_clear(&argv);
}

static const char *window_name(const struct terminal_request *r)
{
	if (r->window)
		return r->window;
	const char *slash = strrchr(r->cwd, '/');
	return slash && slash[1] ? slash + 1 : r->cwd;
}

/* --- session and window -------------------------------------------------------------------- */

static int ensure_session(const struct terminal_request *r, int *created, struct err *e)
{
	_cleanup_free_ char *target = xasprintf("=%s", r->session);
	const char *has[] = { "has-session", "-t", target, NULL };
	const char *make[] = { "new-session", "-d", "-s", r->session, "-n", window_name(r),   "-c",
			       r->cwd,	      "-x", "80", "-y",	      "24", r->shell_command, NULL };
	*created = 0;
	if (r->dry_run) {
		plan_tmux(r, "tmux.has-session", has);
		plan_tmux(r, "tmux.new-session (when missing)", make);
		return 0;
	}
	struct strbuf ignored = STRBUF_INIT;
	int rc = run_tmux(r, has, &ignored, e);
	strbuf_release(&ignored);
	if (rc <= 0)
		return rc;
	if (!r->create)
		return err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "session", r->session),
				"tmux session %s does not exist and params.create is false", r->session);
	*created = 1;
	return run_tmux(r, make, NULL, e);
}

/* The id (@N) of the window named window_name(r), "" when there is none. */
static int find_window(const struct terminal_request *r, struct strbuf *id, struct err *e)
{
	_cleanup_free_ char *target = xasprintf("=%s", r->session);
	const char *list[] = { "list-windows", "-t", target, "-F", "#{window_id} #{window_name}", NULL };
	struct strbuf out = STRBUF_INIT;
	int rc = run_tmux(r, list, &out, e);
	if (rc > 0)
		rc = err_set(e, E_INTERNAL, "tmux list-windows -t %s failed", target);
	const char *want = window_name(r);
	for (char *line = out.buf; rc == 0 && line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *space = strchr(line, ' ');
		if (space && !strcmp(space + 1, want)) {
			strbuf_add(id, line, (size_t)(space - line));
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	strbuf_release(&out);
	return rc;
}

static int ensure_window(const struct terminal_request *r, struct strbuf *id, int *created, struct err *e)
{
	_cleanup_free_ char *target = xasprintf("=%s:", r->session);
	const char *make[] = { "new-window",   "-d", "-t",   target,	       "-n",
			       window_name(r), "-c", r->cwd, r->shell_command, NULL };
	*created = 0;
	if (r->dry_run) {
		plan_tmux(r, "tmux.new-window (when missing)", make);
		return 0;
	}
	if (find_window(r, id, e) < 0)
		return -1;
	if (id->len)
		return 0;
	if (!r->create)
		return err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "window", window_name(r)),
				"tmux window %s does not exist and params.create is false", window_name(r));
	*created = 1;
	if (run_tmux(r, make, NULL, e) < 0 || find_window(r, id, e) < 0)
		return -1;
	return id->len ? 0 : err_set(e, E_INTERNAL, "tmux made window %s but does not list it", window_name(r));
}

static int active_pane(const struct terminal_request *r, const char *window, struct strbuf *pane, struct err *e)
{
	const char *ask[] = { "display-message", "-p", "-t", window, "#{pane_id}", NULL };
	if (run_tmux(r, ask, pane, e) != 0)
		return err_is_set(e) ? -1 : err_set(e, E_INTERNAL, "tmux cannot name the pane of window %s", window);
	strbuf_trim_trailing_newline(pane);
	return pane->len > 1 && pane->buf[0] == '%' ? 0 : err_set(e, E_INTERNAL, "tmux named no pane for %s", window);
}

/* --- a stop while attaching ---------------------------------------------------------------------
 * SIGTERM (the daemon stops, or cancels the task) must not leave tmux working for an executor that is gone: a
 * `new-session` finishing after the daemon stopped starts a server nobody stops, a control client whose reader is
 * gone can stick in its server. So the signal is passed to the tmux command running (its own process group), no
 * further step starts, and a control client already started is ended before the executor returns. While it relays
 * a client to a remote daemon, a stop ends that client, then the executor by the signal, as it always ended. */

static volatile sig_atomic_t attach_stop_signal;
static volatile pid_t relayed_client; /* the control client being relayed, or 0 */

static void stop_attaching(int sig)
{
	attach_stop_signal = sig;
	child_kill_all(sig);
	if (relayed_client > 0) {
		kill(relayed_client, SIGTERM); /* the client detaches cleanly: it never outlives its relay */
		signal(sig, SIG_DFL);
		raise(sig); /* delivered once this handler returns */
	}
}

static int attach_stopped(struct err *e)
{
	if (!attach_stop_signal)
		return 0;
	return err_set(e, E_CANCELLED, "stopped by signal %d while attaching the tmux window", (int)attach_stop_signal);
}

/* --- the control client and the hand-over ------------------------------------------------- */

static int become_session_leader(void *arg)
{
	(void)arg;
	return setsid() < 0 ? -1 : 0;
}

/* Starts `tmux -C attach-session` on fd (stdin and stdout) as a session leader of its own, and lets it go. */
static int start_control_client(const struct terminal_request *r, const char *window, int fd, pid_t *pid, struct err *e)
{
	_cleanup_free_ char *target = xasprintf("=%s:%s", r->session, window);
	const char *attach[] = { "-C", "attach-session", "-t", target, NULL };
	_cleanup_child_ struct child c;
	child_init(&c);
	terminal_tmux_argv(r->server, &c.args, attach);
	terminal_user_env(r->pw, r->shell, r->env, &c.env);
	c.cwd = r->cwd;
	c.stdin_io = c.stdout_io = CHILD_IO_FD;
	c.stdin_fd = c.stdout_fd = fd;
	c.stderr_io = CHILD_IO_NULL;
	c.before_exec = become_session_leader;
	if (child_start(&c, e) < 0)
		return -1;
	*pid = c.pid;
	child_detach(&c);
	return 0;
}

static int connect_daemon(const char *url, struct err *e)
{
	if (!url || strncmp(url, "unix:", 5))
		return err_set(e, E_INVALID_PAYLOAD,
			       "daemonUrl: a terminal is handed over on the daemon's Unix socket "
			       "(unix:PATH), got %s",
			       url ? url : "nothing");
	struct sockaddr_un sa;
	if (net_unix_address(url + 5, &sa, e) < 0)
		return err_prefix(e, "daemonUrl"), -1;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_errno(e, errno, "socket");
	struct timeval tv = { .tv_sec = HANDOVER_TIMEOUT_S };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int errnum = errno;
		close(fd);
		return err_errno(e, errnum, "connecting to the daemon at %s", url + 5);
	}
	return fd;
}

static int read_reply_line(int sock, struct strbuf *line, struct err *e)
{
	char buf[4096];
	while (!strchr(line->buf, '\n')) {
		ssize_t n = read(sock, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_set(e, E_AUTH_FAILED, "the daemon closed the hand-over without answering%s",
				       n < 0 ? " in time" : "");
		if (line->len + (size_t)n > 64 * 1024)
			return err_set(e, E_INTERNAL, "the daemon's hand-over answer is too long");
		strbuf_add(line, buf, (size_t)n);
	}
	return 0;
}

static int check_reply(const struct strbuf *line, struct err *e)
{
	_cleanup_json_ json_t *reply = json_parse(line->buf, (size_t)(strchr(line->buf, '\n') - line->buf), e);
	if (!reply)
		return -1;
	json_t *error = json_object_get(reply, "error");
	if (!error)
		return json_object_get(reply, "result")
			       ? 0
			       : err_set(e, E_INTERNAL, "the daemon's hand-over answer has no result");
	const char *code = json_get_str(json_object_get(error, "data"), "code");
	return err_set(e, err_code_intern(code ? code : E_INTERNAL), "the daemon refused the terminal: %s",
		       json_get_str(error, "message") ? json_get_str(error, "message") : "no reason given");
}

static int hand_over(const struct terminal_request *r, json_t *info, int fd, struct err *e)
{
	int sock = connect_daemon(r->daemon_url, e);
	if (sock < 0)
		return -1;
	json_t *params = json_deep_copy(info);
	json_object_set_new(params, "session_token", json_string(r->session_token ? r->session_token : ""));
	json_t *call = json_pack("{s:s,s:i,s:s,s:o}", "jsonrpc", "2.0", "id", 1, "method", "terminal.handover",
				 "params", params);
	char *text = json_to_compact(call);
	json_decref(call);
	struct strbuf msg = STRBUF_INIT, line = STRBUF_INIT;
	strbuf_addf(&msg, "%s\n", text);
	explicit_bzero(text, strlen(text));
	free(text);
	int rc = fdpass_send(sock, msg.buf, msg.len, fd, e);
	explicit_bzero(msg.buf, msg.len);
	if (rc == 0)
		rc = read_reply_line(sock, &line, e);
	if (rc == 0)
		rc = check_reply(&line, e);
	strbuf_release(&msg);
	strbuf_release(&line);
	close(sock);
	return rc;
}

static int attach_and_hand_over(const struct terminal_request *r, json_t *info, struct err *e)
{
	int pair[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
		return err_errno(e, errno, "socketpair");
	pid_t pid = 0;
	int rc = start_control_client(r, json_get_str(info, "window"), pair[1], &pid, e);
	close(pair[1]);
	if (rc == 0)
		json_object_set_new(info, "controlPid", json_integer(pid));
	if (rc == 0 && callback_is_remote(r->daemon_url)) { /* no descriptor crosses hosts: relay it from here */
		struct callback_target target = { r->daemon_url, r->daemon_ca, r->daemon_fingerprint };
		relayed_client = pid;
		if ((rc = attach_stopped(e)) == 0)
			rc = terminal_stream_relay(&target, r->session_token, info, pair[0], e);
		relayed_client = 0;
		kill(pid, SIGTERM); /* the relay is over: the client detaches, the session stays */
	} else if (rc == 0 && (attach_stopped(e) < 0 || hand_over(r, info, pair[0], e) < 0)) {
		kill(pid, SIGTERM); /* nobody will read it: the client detaches, the session stays */
		rc = -1;
	}
	close(pair[0]);
	return rc;
}

/* agor names a worktree's window NAME-XXXXXXXX (the worktree id's first 8 hex digits): a sweep closes only those,
 * never a window the user made by hand in the session. */
static int is_agor_window_name(const char *name)
{
	size_t n = strlen(name);
	if (n < 10 || name[n - 9] != '-')
		return 0;
	for (const char *c = name + n - 8; *c; c++)
		if (!strchr("0123456789abcdef", *c))
			return 0;
	return 1;
}

static int in_names(const json_t *names, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach((json_t *)names, i, v) if (!strcmp(json_string_value(v), name)) return 1;
	return 0;
}

static int window_to_close(const struct terminal_request *r, const json_t *keep, const char *name)
{
	if (r->window)
		return !strcmp(name, r->window);
	return keep && is_agor_window_name(name) && !in_names(keep, name);
}

int terminal_tmux_close(const struct terminal_request *r, const json_t *keep, json_t **data, struct err *e)
{
	_cleanup_free_ char *target = xasprintf("=%s", r->session);
	const char *list[] = { "list-windows", "-t", target, "-F", "#{window_id} #{window_name}", NULL };
	*data = json_pack("{s:[]}", "closed");
	if (r->dry_run) {
		plan_tmux(r, "tmux.list-windows", list);
		plan_tmux(r, "tmux.kill-window (each window to close)",
			  (const char *const[]){ "kill-window", "-t", "@N", NULL });
		return 0;
	}
	struct strbuf out = STRBUF_INIT;
	int rc = run_tmux(r, list, &out, e);
	if (rc < 0 && json_integer_value(json_object_get(e->details, "errno")) == ENOENT) {
		err_clear(e); /* no tmux here: no window of agor's either */
		rc = 1;
	}
	if (rc != 0) { /* no server or no session: nothing is open */
		strbuf_release(&out);
		return rc < 0 ? -1 : 0;
	}
	for (char *line = out.buf, *nl; rc == 0 && line && *line; line = nl ? nl + 1 : NULL) {
		if ((nl = strchr(line, '\n')))
			*nl = '\0';
		char *space = strchr(line, ' ');
		if (!space || !window_to_close(r, keep, space + 1))
			continue;
		*space = '\0';
		const char *kill[] = { "kill-window", "-t", line, NULL };
		if (run_tmux(r, kill, NULL, e) < 0)
			rc = -1;
		else
			json_array_append_new(json_object_get(*data, "closed"), json_string(space + 1));
	}
	strbuf_release(&out);
	return rc;
}

int terminal_tmux_attach(const struct terminal_request *r, json_t **data, struct err *e)
{
	int session_created = 0, window_created = 0;
	struct strbuf window = STRBUF_INIT, pane = STRBUF_INIT;
	if (!r->dry_run)
		child_on_stop_signals(stop_attaching);
	int rc = ensure_session(r, &session_created, e);
	if (rc == 0 && (rc = attach_stopped(e)) == 0)
		rc = ensure_window(r, &window, &window_created, e);
	if (rc == 0)
		rc = attach_stopped(e);
	if (rc == 0 && r->dry_run) {
		const char *attach[] = { "-C", "attach-session", "-t", "=SESSION:@WINDOW", NULL };
		plan_tmux(r, "tmux.control-client (stdin/stdout: a socket pair, its other end handed to the daemon)",
			  attach);
		json_array_append_new(r->plan,
				      json_pack("{s:s,s:s}", "step",
						callback_is_remote(r->daemon_url)
							? "terminal.handover (stream: relayed over the WebSocket)"
							: "terminal.handover (SCM_RIGHTS)",
						"daemonUrl", r->daemon_url ? r->daemon_url : "(none)"));
	} else if (rc == 0 && (rc = active_pane(r, window.buf, &pane, e)) == 0) {
		json_t *info = json_pack("{s:s,s:s,s:s,s:s,s:s}", "server", r->server, "session", r->session, "window",
					 window.buf, "windowName", window_name(r), "pane", pane.buf);
		rc = attach_and_hand_over(r, info, e);
		if (rc == 0) {
			json_object_set_new(info, "sessionCreated", json_boolean(session_created));
			json_object_set_new(info, "windowCreated", json_boolean(window_created));
			*data = json_pack("{s:o,s:b}", "terminal", info, "handedOver", 1);
		} else {
			json_decref(info);
		}
	}
	strbuf_release(&window);
	strbuf_release(&pane);
	return rc;
}

/* --- zellij: a PTY running `zellij attach SESSION --create` ---------------------------------- */

static int become_pty_session_leader(void *arg)
{
	(void)arg;
	if (setsid() < 0 || ioctl(0, TIOCSCTTY, 0) < 0)
		return -1;
	return 0;
}

static int open_pty(int *master, int *slave, struct err *e)
{
	*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*master < 0)
		return err_errno(e, errno, "posix_openpt");
	char name[128];
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	if (grantpt(*master) < 0 || unlockpt(*master) < 0 || ptsname_r(*master, name, sizeof(name)) != 0 ||
	    (*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		int errnum = errno;
		close(*master);
		return err_errno(e, errnum, "opening a pseudo-terminal");
	}
	ioctl(*master, TIOCSWINSZ, &ws);
	return 0;
}

static int start_zellij(const struct terminal_request *r, const char *config, int slave, pid_t *pid, struct err *e)
{
	_cleanup_child_ struct child c;
	child_init(&c);
	zellij_attach_argv(config, r->session, &c.args);
	terminal_user_env(r->pw, r->shell, r->env, &c.env);
	c.cwd = r->cwd;
	c.stdin_io = c.stdout_io = c.stderr_io = CHILD_IO_FD;
	c.stdin_fd = c.stdout_fd = c.stderr_fd = slave;
	c.before_exec = become_pty_session_leader;
	if (child_start(&c, e) < 0) {
		int errnum = (int)json_integer_value(json_object_get(e->details, "errno"));
		if (errnum == ENOENT)
			return err_setd(
				e, E_NOT_FOUND, json_pack("{s:s}", "program", "zellij"),
				"zellij is not installed on this host (not on PATH): install it, or use tmux.attach");
		return -1;
	}
	*pid = c.pid;
	child_detach(&c);
	return 0;
}

/* params.tabName: the session shows (or makes) that tab; zellij's own command, run once the client is up. */
static int select_tab(const struct terminal_request *r, struct err *e)
{
	_cleanup_child_ struct child c;
	child_init(&c);
	zellij_tab_argv(r->session, r->window, &c.args);
	terminal_user_env(r->pw, r->shell, r->env, &c.env);
	c.cwd = r->cwd;
	c.stdin_io = CHILD_IO_NULL;
	c.new_process_group = 1;
	c.timeout_ms = TMUX_COMMAND_TIMEOUT_MS;
	struct strbuf err_out = STRBUF_INIT;
	int rc = child_run(&c, NULL, 0, NULL, &err_out, 16 * 1024, e);
	if (rc == 0 && !child_exited_ok(&c))
		rc = err_setd(e, E_INTERNAL, json_pack("{s:s%}", "stderr", err_out.buf, err_out.len),
			      "zellij go-to-tab-name %s failed", r->window);
	strbuf_release(&err_out);
	return rc;
}

static void plan_zellij(const struct terminal_request *r, const char *config)
{
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
	zellij_attach_argv(config, r->session, &argv);
	terminal_user_env(r->pw, r->shell, r->env, &env);
	json_array_append_new(r->plan, json_pack("{s:s,s:s}", "step", "zellij.install-config", "path", config));
	json_array_append_new(r->plan,
			      json_pack("{s:s,s:o,s:o,s:s}", "step", "zellij.attach (on a new pseudo-terminal)", "argv",
					argv_json(&argv), "env", argv_json(&env), "cwd", r->cwd));
	strvec_clear(&argv);
	if (r->window) {
		zellij_tab_argv(r->session, r->window, &argv);
		json_array_append_new(r->plan, json_pack("{s:s,s:o}", "step", "zellij.tab", "argv", argv_json(&argv)));
	}
	json_array_append_new(r->plan, json_pack("{s:s,s:s}", "step", "terminal.handover (SCM_RIGHTS: the PTY master)",
						 "daemonUrl", r->daemon_url ? r->daemon_url : "(none)"));
	strvec_clear(&argv);
	strvec_clear(&env);
}

int terminal_zellij_attach(const struct terminal_request *r, json_t **data, struct err *e)
{
	_cleanup_free_ char *config = zellij_config_path(r->zellij_dir);
	if (r->dry_run) {
		plan_zellij(r, config);
		return 0;
	}
	int changed, master = -1, slave = -1;
	pid_t pid = 0;
	if (zellij_install_config(r->zellij_dir, &changed, e) < 0 || open_pty(&master, &slave, e) < 0)
		return -1;
	int rc = start_zellij(r, config, slave, &pid, e);
	close(slave);
	json_t *info = json_pack("{s:s,s:s,s:s,s:I}", "kind", "pty", "multiplexer", "zellij", "session", r->session,
				 "controlPid", (json_int_t)pid);
	if (rc == 0 && r->window)
		rc = select_tab(r, e);
	if (rc == 0)
		rc = hand_over(r, info, master, e);
	if (rc < 0 && pid > 0)
		kill(pid, SIGHUP);
	close(master);
	if (rc == 0)
		*data = json_pack("{s:o,s:b}", "terminal", info, "handedOver", 1);
	else
		json_decref(info);
	return rc;
}
