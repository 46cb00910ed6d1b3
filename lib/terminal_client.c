/* terminal_client.c — the raw-mode TTY relay of `agor terminal` (terminal_client.h).
 * Never exits with the TTY still raw: every return path after raw mode goes through restore_tty(). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "client.h"
#include "crypto.h"
#include "json.h"
#include "rpcclient.h"
#include "terminal_client.h"
#include "banned.h"

struct session {
	const struct terminal_client_options *o;
	struct rpc_client *c;
	char *terminal_id;
	int raw;
	struct termios saved;
	char *exit_reason;
	int done;
	int output_failed; /* errno of a failed write of WebSocket output, 0 = none */
};

int terminal_client_parse_key(const char *spec)
{
	if (!spec || strncmp(spec, "C-", 2) || strlen(spec) != 3)
		return -1;
	char k = spec[2];
	if (k >= 'a' && k <= 'z')
		return k - 'a' + 1;
	if (k >= '@' && k <= '_') /* C-@ … C-_ : C-] is 0x1d */
		return k - '@';
	return -1;
}

static void window_size(int fd, int *cols, int *rows)
{
	struct winsize ws;
	*cols = 80;
	*rows = 24;
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

static int enter_raw(struct session *s, struct err *e)
{
	if (!isatty(s->o->in_fd))
		return 0;
	if (tcgetattr(s->o->in_fd, &s->saved) < 0)
		return err_errno(e, errno, "tcgetattr");
	struct termios raw = s->saved;
	cfmakeraw(&raw);
	if (tcsetattr(s->o->in_fd, TCSANOW, &raw) < 0)
		return err_errno(e, errno, "tcsetattr");
	s->raw = 1;
	return 0;
}

static void restore_tty(struct session *s)
{
	if (s->raw)
		tcsetattr(s->o->in_fd, TCSAFLUSH, &s->saved);
	s->raw = 0;
}

/* Sends a call without waiting: its answer is read (and dropped unless it is an error) by the relay. */
static int send_call(struct session *s, const char *method, json_t *params, struct err *e)
{
	static int next_id = 100;
	json_t *msg =
		json_pack("{s:s,s:i,s:s,s:o}", "jsonrpc", "2.0", "id", next_id++, "method", method, "params", params);
	char *text = json_to_compact(msg);
	json_decref(msg);
	int rc = rpc_client_send(s->c, text, strlen(text), e);
	free(text);
	return rc;
}

static int send_resize(struct session *s, struct err *e)
{
	int cols, rows;
	window_size(s->o->in_fd, &cols, &rows);
	return send_call(s, "terminal.resize", json_pack("{s:i,s:i}", "cols", cols, "rows", rows), e);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int handle_message(struct session *s, const struct strbuf *msg, struct err *e)
{
	_cleanup_json_ json_t *m = json_parse(msg->buf, msg->len, e);
	if (!m)
		return -1;
	json_t *error = json_object_get(m, "error");
	if (error)
		return rpc_error_to_err(error, e);
	json_t *params = json_object_get(m, "params");
	const char *type = json_get_str(params, "type");
	json_t *data = json_object_get(params, "data");
	if (!type || strcmp(json_get_str(data, "terminal_id") ? json_get_str(data, "terminal_id") : "", s->terminal_id))
		return 0;
	if (!strcmp(type, "terminal.exited")) {
		s->exit_reason = xstrdup(json_get_str(data, "reason") ? json_get_str(data, "reason") : "exited");
		s->done = 1;
	} else if (!strcmp(type, "terminal.output") && json_get_str(data, "data")) {
		struct strbuf raw = STRBUF_INIT;
		int rc = crypto_base64_decode(json_get_str(data, "data"), strlen(json_get_str(data, "data")), &raw, e);
		if (rc == 0 && write_all(s->o->out_fd, raw.buf, raw.len) < 0)
			rc = err_errno(e, errno, "writing to the terminal");
		strbuf_release(&raw);
		return rc;
	}
	return 0;
}

/* Over a WebSocket the terminal's output arrives as binary frames (rpc_client's on_binary). */
static void write_binary_output(const void *data, size_t len, void *arg)
{
	struct session *s = arg;
	if (!s->output_failed && write_all(s->o->out_fd, data, len) < 0)
		s->output_failed = errno ? errno : EIO;
}

static int drain_daemon(struct session *s, struct err *e)
{
	struct strbuf msg = STRBUF_INIT;
	int rc = 0;
	while (!s->done && rc == 0) {
		struct err t = ERR_INIT;
		if (rpc_client_recv(s->c, &msg, 0, &t) < 0) {
			if (strcmp(t.code, E_TIMEOUT))
				rc = err_set(e, t.code, "%s", t.message);
			err_clear(&t);
			break;
		}
		rc = handle_message(s, &msg, e);
	}
	strbuf_release(&msg);
	if (rc == 0 && s->output_failed)
		rc = err_errno(e, s->output_failed, "writing to the terminal");
	return rc;
}

/* Keystrokes: everything before the detach key is typed, the key itself ends the session. */
static int type_input(struct session *s, struct err *e)
{
	char buf[4096];
	ssize_t n = read(s->o->in_fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		s->exit_reason = xstrdup("detached (end of input)");
		s->done = 1;
		return 0;
	}
	char *key = memchr(buf, s->o->detach_key, (size_t)n);
	size_t len = key ? (size_t)(key - buf) : (size_t)n;
	int rc = 0;
	if (len) {
		struct strbuf b64 = STRBUF_INIT;
		crypto_base64_encode(buf, len, &b64);
		rc = send_call(s, "terminal.input", json_pack("{s:s}", "data", b64.buf), e);
		strbuf_release(&b64);
	}
	if (key) {
		s->exit_reason = xstrdup("detached");
		s->done = 1;
	}
	return rc;
}

static int relay(struct session *s, int winch_fd, struct err *e)
{
	struct pollfd p[3] = { { .fd = s->o->in_fd, .events = POLLIN },
			       { .fd = rpc_client_fd(s->c), .events = POLLIN },
			       { .fd = winch_fd, .events = POLLIN } };
	int rc = drain_daemon(s, e);
	while (rc == 0 && !s->done) {
		if (poll(p, winch_fd >= 0 ? 3 : 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return err_errno(e, errno, "poll");
		}
		if (p[0].revents)
			rc = type_input(s, e);
		if (rc == 0 && p[2].revents & POLLIN) {
			struct signalfd_siginfo si;
			(void)!read(winch_fd, &si, sizeof(si));
			rc = send_resize(s, e);
		}
		if (rc == 0)
			rc = drain_daemon(s, e);
	}
	return rc;
}

static int open_and_attach(struct session *s, struct err *e)
{
	int cols, rows;
	window_size(s->o->in_fd, &cols, &rows);
	json_t *result = NULL, *attached = NULL;
	json_t *params = json_pack("{s:s,s:i,s:i}", "worktree_id", s->o->worktree, "cols", cols, "rows", rows);
	int rc = client_expand_id(s->c, "worktrees.list", params, "worktree_id", e);
	if (rc == 0)
		rc = rpc_client_call(s->c, "terminal.open", params, &result, e);
	json_decref(params);
	if (rc == 0) {
		s->terminal_id = xstrdup(json_get_str(result, "terminal_id"));
		params = json_pack("{s:s,s:O}", "terminal_id", s->terminal_id, "token",
				   json_object_get(result, "token"));
		rc = rpc_client_call(s->c, "terminal.attach", params, &attached, e);
		json_decref(params);
	}
	if (rc == 0)
		rc = send_resize(s, e); /* a rejoined terminal takes this TTY's size */
	if (result)
		json_decref(result);
	if (attached)
		json_decref(attached);
	return rc;
}

static int winch_signalfd(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -1;
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* The daemon URL the relay uses: the Unix socket or a WebSocket as given; http(s)://HOST[:PORT][/…] becomes
 * ws(s)://HOST[:PORT]/terminal (POST /rpc cannot carry the terminal's output). NULL with e for anything else. */
static char *relay_url(const char *url, struct err *e)
{
	if (!strncmp(url, "unix:", 5) || url[0] == '/' || !strncmp(url, "ws://", 5) || !strncmp(url, "wss://", 6))
		return xstrdup(url);
	int tls = !strncmp(url, "https://", 8);
	if (!tls && strncmp(url, "http://", 7)) {
		err_set(e, E_USAGE, "--url: unix:PATH, ws(s)://HOST:PORT[/PATH] or http(s)://HOST:PORT (got '%s')",
			url);
		return NULL;
	}
	const char *authority = url + (tls ? 8 : 7);
	return xasprintf("%s://%.*s/terminal", tls ? "wss" : "ws", (int)strcspn(authority, "/?#"), authority);
}

int terminal_client_run(const struct terminal_client_options *o, char **exit_reason, struct err *e)
{
	struct session s = { .o = o };
	_cleanup_free_ char *url = relay_url(o->url, e);
	if (!url)
		return -1;
	struct rpc_client_options opts = { .call_timeout_ms = 60000, .on_binary = write_binary_output, .arg = &s };
	*exit_reason = NULL;
	if (!(s.c = rpc_client_connect(url, &opts, e)))
		return -1;
	int winch = winch_signalfd();
	int rc = client_authenticate(s.c, url, o->token, e);
	if (rc == 0)
		rc = open_and_attach(&s, e);
	if (rc == 0)
		rc = enter_raw(&s, e);
	if (rc == 0)
		rc = relay(&s, winch, e);
	restore_tty(&s);
	if (winch >= 0)
		close(winch);
	rpc_client_close(s.c);
	free(s.terminal_id);
	if (rc == 0)
		*exit_reason = s.exit_reason;
	else
		free(s.exit_reason);
	return rc;
}
