/* daemon_terminal.c — terminals in the daemon: terminal.open runs a tmux.attach executor, which hands over a
 * tmux control socket (SCM_RIGHTS) or, from another host, relays the control client's bytes over its WebSocket; the
 * daemon relays either to attached clients. Never starts a shell or tmux; never trusts a relaying executor beyond
 * the one terminal its task token opened. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "daemon_access.h"
#include "daemon_egress.h"
#include "daemon_limits.h"
#include "daemon_peer.h"
#include "daemon_taskauth.h"
#include "daemon_tasks.h"
#include "daemon_terminal.h"
#include "json.h"
#include "log.h"
#include "net.h"
#include "rpc.h"
#include "tmux_control.h"
#include "banned.h"

#define TOKEN_HEX	  64		/* a terminal token: 32 random bytes, hex */
#define INPUT_BACKLOG_MAX (1u << 20)	/* commands queued for tmux before input is refused */
#define READ_BUDGET	  (256u * 1024) /* bytes read from tmux per loop iteration */
#define STREAM_FRAME_MAX  (64u * 1024)	/* one message of a remote executor's relay (it sends 16 KiB at most) */
#define DETACH_GRACE_MS	  3000		/* how long an ended terminal's control socket is drained for tmux */

struct open_request;

struct terminal {
	struct terminal *next;
	struct daemon *d;
	char *id, *user_id, *worktree_id, *task_id;
	char token[TOKEN_HEX + 1];
	const char *multiplexer; /* "tmux" (a control-mode socket) or "zellij" (a PTY master) */
	int is_pty;
	json_t *tmux;		      /* {server, session, window, pane, controlPid} once handed over */
	const char *window, *pane;    /* borrowed from tmux */
	int fd;			      /* the control socket, -1 until handed over (and for a relayed terminal) */
	struct daemon_peer *stream;   /* a remote executor's connection relaying the control client, or NULL */
	struct open_request *opening; /* terminal.open's reply, until the executor hands over */
	int cols, rows;
	struct tmux_parser parser;
	struct strbuf out; /* commands not yet written to tmux */
	size_t out_off;
	struct daemon_peer **clients;
	size_t nclients, clients_alloc;
	/* The answers tmux owes us, one per command line we sent, in order: NULL = nothing to do with it, else the
	 * client that asked for the screen (capture-pane). Blocks tmux opens for commands of its own (flags 0)
	 * are not ours and are not counted. */
	struct daemon_peer **owed;
	size_t owed_head, owed_len, owed_alloc;
	struct daemon_peer *capture_for; /* the block being read is this client's screen */
	unsigned capture_newlines;	 /* line ends of the screen not sent yet (trailing blank rows are not) */
	int in_our_block;
	const char *end_reason; /* set inside the parser: the terminal ends after the read */
	char end_reason_buf[128];
};

static void terminal_end(struct terminal *t, const char *reason);

/* --- registry ------------------------------------------------------------------------------ */

/* The executor has handed the terminal over: its descriptor, or a remote executor's relay. */
static int handed_over(const struct terminal *t)
{
	return t->fd >= 0 || t->stream;
}

static struct terminal *find_terminal(struct daemon *d, const char *id)
{
	for (struct terminal *t = d->terminals; t; t = t->next)
		if (id && !strcmp(t->id, id))
			return t;
	return NULL;
}

static struct terminal *find_by_task(struct daemon *d, const char *task_id)
{
	for (struct terminal *t = d->terminals; t; t = t->next)
		if (t->task_id && !strcmp(t->task_id, task_id))
			return t;
	return NULL;
}

static struct terminal *find_open(struct daemon *d, const char *user_id, const char *worktree_id,
				  const char *multiplexer)
{
	for (struct terminal *t = d->terminals; t; t = t->next)
		if (!strcmp(t->user_id, user_id) && !strcmp(t->worktree_id, worktree_id) &&
		    !strcmp(t->multiplexer, multiplexer))
			return t;
	return NULL;
}

static int new_token(char out[TOKEN_HEX + 1], struct err *e)
{
	uint8_t raw[TOKEN_HEX / 2];
	if (crypto_random(raw, sizeof(raw), e) < 0)
		return -1;
	crypto_hex(raw, sizeof(raw), out);
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

static struct terminal *terminal_new(struct daemon *d, const char *user_id, const char *worktree_id,
				     const char *multiplexer, struct err *e)
{
	struct terminal *t = xcalloc(1, sizeof(*t));
	if (new_token(t->token, e) < 0) {
		free(t);
		return NULL;
	}
	t->d = d;
	t->multiplexer = multiplexer; /* a static string */
	t->id = daemon_new_id();
	t->user_id = xstrdup(user_id);
	t->worktree_id = xstrdup(worktree_id);
	t->fd = -1;
	t->cols = 80;
	t->rows = 24;
	strbuf_init(&t->out, 0);
	t->next = d->terminals;
	d->terminals = t;
	return t;
}

static void unlink_terminal(struct terminal *t)
{
	for (struct terminal **p = &t->d->terminals; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			return;
		}
}

/* --- letting a control client go ------------------------------------------------------------
 * tmux (3.2 and later) writes a control client's output to its socket itself, and lets the client go only once that
 * output is written. Were the daemon to close the socket while output is queued (a pane printing, a notification),
 * the writes would fail, the queue never empty, and the client stay in the server for good — a server that then
 * never exits, not even on kill-server, which it answers by closing the connection. So the daemon asks tmux to
 * detach the client (an empty command line) and reads the socket until tmux closes it, DETACH_GRACE_MS at most. */

struct terminal_drain {
	struct terminal_drain *next;
	struct daemon *d;
	int fd;
	struct loop_timer *deadline;
};

static void drain_unlink(struct terminal_drain *dr)
{
	for (struct terminal_drain **p = &dr->d->terminal_drains; *p; p = &(*p)->next)
		if (*p == dr) {
			*p = dr->next;
			return;
		}
}

static void drain_close(struct terminal_drain *dr)
{
	drain_unlink(dr);
	loop_del_fd(dr->d->loop, dr->fd);
	close(dr->fd);
	if (dr->deadline)
		loop_timer_cancel(dr->d->loop, dr->deadline);
	if (dr->d->stopping && !dr->d->terminal_drains)
		loop_wake(dr->d->loop); /* the stop waits for the last one */
	free(dr);
}

static void on_drain_readable(struct loop *l, int fd, unsigned events, void *arg)
{
	(void)l, (void)events;
	char buf[16384];
	for (size_t total = 0; total < READ_BUDGET;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
			break; /* tmux let the client go (or the socket failed): nothing more will come */
		total += (size_t)n;
	}
	drain_close(arg);
}

static void on_drain_deadline(struct loop *l, void *arg)
{
	(void)l;
	struct terminal_drain *dr = arg;
	dr->deadline = NULL; /* the loop frees a timer once it fired */
	log_warn("a tmux control client did not detach within %d ms: its socket is closed", DETACH_GRACE_MS);
	drain_close(dr);
}

/* Where the command line tmux has begun to read ends (off: the bytes written), or off itself between lines. */
static size_t end_of_begun_line(const struct strbuf *out, size_t off)
{
	if (off == 0 || out->buf[off - 1] == '\n')
		return off;
	const char *nl = memchr(out->buf + off, '\n', out->len - off);
	return nl ? (size_t)(nl - out->buf) + 1 : out->len;
}

/* Writes what is left of a command line tmux has begun to read (the queued ones are dropped), then the empty line
 * that detaches the client. Best effort on a non-blocking socket: a tmux that takes no input gets the deadline. */
static void request_detach(struct terminal *t)
{
	strbuf_setlen(&t->out, end_of_begun_line(&t->out, t->out_off));
	strbuf_addch(&t->out, '\n');
	while (t->out_off < t->out.len) {
		ssize_t n = write(t->fd, t->out.buf + t->out_off, t->out.len - t->out_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		t->out_off += (size_t)n;
	}
}

/* The terminal's control socket goes to the drains: detached, read until tmux closes it, then closed. */
static void detach_control_client(struct terminal *t)
{
	struct daemon *d = t->d;
	struct err e = ERR_INIT;
	loop_del_fd(d->loop, t->fd);
	request_detach(t);
	struct terminal_drain *dr = xcalloc(1, sizeof(*dr));
	dr->d = d;
	dr->fd = t->fd;
	t->fd = -1;
	if (loop_add_fd(d->loop, dr->fd, LOOP_READ, on_drain_readable, dr, &e) < 0) {
		log_warn("tmux control client: %s: its socket is closed at once", e.message);
		err_clear(&e);
		close(dr->fd);
		free(dr);
		return;
	}
	dr->deadline = loop_timer_add(d->loop, DETACH_GRACE_MS, on_drain_deadline, dr);
	dr->next = d->terminal_drains;
	d->terminal_drains = dr;
}

static void terminal_free(struct terminal *t)
{
	unlink_terminal(t);
	for (size_t i = 0; i < t->nclients; i++)
		t->clients[i]->terminal = NULL;
	if (t->fd >= 0 && !t->is_pty) {
		tmux_parser_release(&t->parser);
		detach_control_client(t); /* the session and its shell stay */
	} else if (t->fd >= 0) {
		loop_del_fd(t->d->loop, t->fd);
		close(t->fd); /* zellij sees SIGHUP and detaches; the session and its shell stay */
	}
	if (t->stream) { /* the relay ends: the executor lets its control client go, the session stays */
		struct daemon_peer *p = t->stream;
		t->stream = NULL;
		p->terminal_stream = NULL;
		tmux_parser_release(&t->parser);
		net_conn_close(p->conn);
	}
	explicit_bzero(t->token, sizeof(t->token));
	free(t->clients);
	free(t->owed);
	free(t->id);
	free(t->user_id);
	free(t->worktree_id);
	free(t->task_id);
	if (t->tmux)
		json_decref(t->tmux);
	strbuf_release(&t->out);
	free(t);
}

void daemon_terminals_detach(struct daemon *d)
{
	while (d->terminals)
		terminal_free(d->terminals);
}

int daemon_terminals_detaching(const struct daemon *d)
{
	return d->terminal_drains != NULL;
}

void daemon_terminals_release(struct daemon *d)
{
	daemon_terminals_detach(d);
	while (d->terminal_drains)
		drain_close(d->terminal_drains);
}

/* --- answers tmux owes us ---------------------------------------------------------------- */

static void owe(struct terminal *t, struct daemon_peer *p)
{
	if (t->owed_head + t->owed_len == t->owed_alloc) {
		if (t->owed_head) { /* slide what is still owed to the front */
			memmove(t->owed, t->owed + t->owed_head, t->owed_len * sizeof(*t->owed));
			t->owed_head = 0;
		}
		if (t->owed_len == t->owed_alloc) {
			t->owed_alloc = t->owed_alloc ? t->owed_alloc * 2 : 16;
			t->owed = xrealloc(t->owed, t->owed_alloc * sizeof(*t->owed));
		}
	}
	t->owed[t->owed_head + t->owed_len++] = p;
}

/* Appends commands (whole lines) to the output queue, each owing one answer (to nobody). */
static void owe_lines_since(struct terminal *t, size_t from)
{
	for (size_t i = from; i < t->out.len; i++)
		if (t->out.buf[i] == '\n')
			owe(t, NULL);
}

static struct daemon_peer *next_owed(struct terminal *t)
{
	if (!t->owed_len)
		return NULL;
	t->owed_len--;
	return t->owed[t->owed_head++];
}

/* A client that leaves is owed nothing any more. */
static void forget_owed(struct terminal *t, struct daemon_peer *p)
{
	for (size_t i = 0; i < t->owed_len; i++)
		if (t->owed[t->owed_head + i] == p)
			t->owed[t->owed_head + i] = NULL;
	if (t->capture_for == p)
		t->capture_for = NULL;
}

/* --- clients ------------------------------------------------------------------------------- */

static void add_client(struct terminal *t, struct daemon_peer *p)
{
	if (t->nclients == t->clients_alloc) {
		t->clients_alloc = t->clients_alloc ? t->clients_alloc * 2 : 4;
		t->clients = xrealloc(t->clients, t->clients_alloc * sizeof(*t->clients));
	}
	t->clients[t->nclients++] = p;
	p->terminal = t;
}

static void remove_client(struct terminal *t, struct daemon_peer *p)
{
	for (size_t i = 0; i < t->nclients; i++)
		if (t->clients[i] == p) {
			t->clients[i] = t->clients[--t->nclients];
			break;
		}
	if (!t->is_pty)
		forget_owed(t, p);
	p->terminal = NULL;
}

void daemon_terminal_on_close(struct daemon_peer *peer)
{
	if (peer->terminal)
		remove_client(peer->terminal, peer);
	struct terminal *t = peer->terminal_stream;
	if (t) { /* the remote executor's link is gone, and with it the control client */
		peer->terminal_stream = NULL;
		t->stream = NULL;
		tmux_parser_release(&t->parser);
		terminal_end(t, "the remote executor's link closed (terminal.open attaches the window again)");
	}
}

static void send_event(struct daemon_peer *p, const char *type, json_t *data)
{
	char *text = rpc_event_text(type, data);
	net_send(p->conn, text, strlen(text));
	free(text);
}

static void send_bytes(struct terminal *t, struct daemon_peer *p, const void *data, size_t len)
{
	if (net_conn_kind(p->conn) == NET_CONN_WS) {
		net_send_binary(p->conn, data, len);
		return;
	}
	struct strbuf b64 = STRBUF_INIT;
	crypto_base64_encode(data, len, &b64);
	send_event(p, "terminal.output", json_pack("{s:s,s:s}", "terminal_id", t->id, "data", b64.buf));
	strbuf_release(&b64);
}

/* Output of the pane: a binary frame to WebSocket clients, a terminal.output event (base64) to the others. */
static void relay_output(struct terminal *t, const uint8_t *data, size_t len)
{
	struct strbuf b64 = STRBUF_INIT;
	for (size_t i = 0; i < t->nclients; i++) {
		struct net_conn *c = t->clients[i]->conn;
		if (net_conn_kind(c) == NET_CONN_WS) {
			net_send_binary(c, data, len); /* a client that does not read is dropped by net */
			continue;
		}
		if (!b64.len)
			crypto_base64_encode(data, len, &b64);
		send_event(t->clients[i], "terminal.output",
			   json_pack("{s:s,s:s}", "terminal_id", t->id, "data", b64.buf));
	}
	strbuf_release(&b64);
}

/* The terminal is over: clients are told (and /terminal sockets closed), the owner gets an event. */
static void terminal_end(struct terminal *t, const char *reason)
{
	log_info("terminal %s (worktree %s) ended: %s", t->id, t->worktree_id, reason);
	for (size_t i = 0; i < t->nclients; i++) {
		struct daemon_peer *p = t->clients[i];
		send_event(p, "terminal.exited", json_pack("{s:s,s:s}", "terminal_id", t->id, "reason", reason));
		if (net_conn_is_terminal(p->conn))
			net_conn_close(p->conn);
	}
	daemon_broadcast_to(
		t->d, t->user_id, "terminal.exited",
		json_pack("{s:s,s:s,s:s}", "terminal_id", t->id, "worktree_id", t->worktree_id, "reason", reason));
	terminal_free(t);
}

/* --- the tmux side ------------------------------------------------------------------------- */

/* One line (or piece of a line) of a captured screen for the client that asked. Line ends are held back until
 * more text follows: the blank rows under the prompt would otherwise scroll a shorter client's screen away and
 * leave its cursor at the bottom instead of after the prompt. */
static void send_screen_line(struct terminal *t, const struct tmux_event *ev)
{
	if (ev->len) {
		for (; t->capture_newlines; t->capture_newlines--)
			send_bytes(t, t->capture_for, "\r\n", 2);
		send_bytes(t, t->capture_for, ev->data, ev->len);
	}
	if (ev->eol)
		t->capture_newlines++;
}

static void on_tmux_event(void *arg, const struct tmux_event *ev)
{
	struct terminal *t = arg;
	switch (ev->kind) {
	case TMUX_OUTPUT:
		if (!strcmp(ev->id, t->pane) && ev->len)
			relay_output(t, ev->data, ev->len);
		break;
	case TMUX_WINDOW_CLOSE:
		if (!strcmp(ev->id, t->window))
			t->end_reason = "exited";
		break;
	case TMUX_EXIT: /* the session ended (its last shell exited) or tmux detached the client */
		if (!t->end_reason) {
			snprintf(t->end_reason_buf, sizeof(t->end_reason_buf), "%s%s", *ev->arg ? "tmux: " : "exited",
				 ev->arg);
			t->end_reason = t->end_reason_buf;
		}
		break;
	case TMUX_BLOCK_BEGIN:
		t->in_our_block = ev->flags & 1;
		t->capture_for = t->in_our_block ? next_owed(t) : NULL;
		t->capture_newlines = 0;
		if (t->capture_for) /* the screen follows: start from a clean one */
			send_bytes(t, t->capture_for, "\033[H\033[2J", 7);
		break;
	case TMUX_BLOCK_DATA:
		if (t->capture_for)
			send_screen_line(t, ev);
		break;
	case TMUX_BLOCK_END:
		if (ev->error && t->in_our_block)
			log_debug("terminal %s: a tmux command failed", t->id);
		t->capture_for = NULL;
		t->in_our_block = 0;
		break;
	default:
		break;
	}
}

static int flush_commands(struct terminal *t)
{
	if (t->stream) { /* a relayed terminal: the commands go to the remote executor as one binary message */
		if (t->out_off < t->out.len)
			net_send_binary(t->stream->conn, t->out.buf + t->out_off, t->out.len - t->out_off);
		strbuf_setlen(&t->out, 0);
		t->out_off = 0;
		return 0;
	}
	while (t->out_off < t->out.len) {
		ssize_t n = write(t->fd, t->out.buf + t->out_off, t->out.len - t->out_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			loop_set_events(t->d->loop, t->fd, LOOP_READ | LOOP_WRITE);
			return 0;
		}
		if (n <= 0)
			return -1;
		t->out_off += (size_t)n;
	}
	strbuf_setlen(&t->out, 0);
	t->out_off = 0;
	loop_set_events(t->d->loop, t->fd, LOOP_READ);
	return 0;
}

static int queue_resize(struct terminal *t, int cols, int rows, struct err *e)
{
	if (t->is_pty) {
		struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
		if (cols < 1 || cols > 10000 || rows < 1 || rows > 10000)
			return err_set(e, E_INVALID_PAYLOAD, "params.cols/rows: a size between 1x1 and 10000x10000");
		if (ioctl(t->fd, TIOCSWINSZ, &ws) < 0)
			return err_errno(e, errno, "resizing terminal %s", t->id);
		t->cols = cols;
		t->rows = rows;
		return 0;
	}
	size_t from = t->out.len;
	if (tmux_encode_resize(&t->out, cols, rows) < 0)
		return err_set(e, E_INVALID_PAYLOAD, "params.cols/rows: a size between 1x1 and 10000x10000, got %dx%d",
			       cols, rows);
	/* the window follows this terminal's size even when the user's session shows another window */
	strbuf_addf(&t->out, "resize-window -t %s -x %d -y %d\n", t->window, cols, rows);
	owe_lines_since(t, from);
	t->cols = cols;
	t->rows = rows;
	return 0;
}

static void feed_tmux_parser(struct terminal *t, const uint8_t *data, size_t len)
{
	tmux_parser_feed(&t->parser, (const char *)data, len);
}

/* Flushes owed commands, then reads what the descriptor has (a bounded amount per wake-up) into sink;
 * returns why the terminal is gone (eof_reason at end of file), or NULL while it lives. */
static const char *pump_descriptor(struct terminal *t, int fd, unsigned events,
				   void (*sink)(struct terminal *, const uint8_t *, size_t), const char *eof_reason)
{
	char buf[16384];
	size_t total = 0;
	if ((events & LOOP_WRITE) && flush_commands(t) < 0)
		return "the terminal stopped reading its input";
	while (!t->end_reason && total < READ_BUDGET && (events & (LOOP_READ | LOOP_HUP | LOOP_ERROR))) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0)
			return eof_reason;
		total += (size_t)n;
		sink(t, (const uint8_t *)buf, (size_t)n);
	}
	return NULL;
}

/* The tmux control client: its output is parsed; %exit or EOF ends the terminal. */
static void on_tmux_readable(struct loop *l, int fd, unsigned events, void *arg)
{
	(void)l;
	struct terminal *t = arg;
	const char *gone = pump_descriptor(t, fd, events, feed_tmux_parser, "the tmux client went away");
	if (t->end_reason || gone)
		terminal_end(t, t->end_reason ? t->end_reason : gone);
}

/* A PTY master (zellij): its bytes are the screen; EOF or EIO means the program on it is gone. */
static void on_pty_readable(struct loop *l, int fd, unsigned events, void *arg)
{
	(void)l;
	struct terminal *t = arg;
	const char *gone = pump_descriptor(t, fd, events, relay_output, "exited");
	if (gone)
		terminal_end(t, gone);
}

/* --- terminal.open ------------------------------------------------------------------------- */

struct open_request {
	char *terminal_id;
	struct pending_reply *pr;
};

static json_t *terminal_json(const struct terminal *t, int with_token)
{
	json_t *j =
		json_pack("{s:s,s:s,s:s,s:i,s:i,s:I}", "terminal_id", t->id, "worktree_id", t->worktree_id, "user_id",
			  t->user_id, "cols", t->cols, "rows", t->rows, "clients", (json_int_t)t->nclients);
	if (t->tmux)
		json_object_set(j, "tmux", t->tmux);
	if (with_token)
		json_object_set_new(j, "token", json_string(t->token));
	return j;
}

/* The tmux.attach executor has ended: by now it has handed the control socket over, or it failed. */
static void terminal_opened(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
			    void *arg)
{
	(void)task_id;
	(void)data;
	struct open_request *o = arg;
	struct terminal *t = find_terminal(d, o->terminal_id);
	struct err e = ERR_INIT;
	if (t)
		t->opening = NULL;
	if (!o->pr) { /* a relayed terminal, answered at its hand-over: its executor (the relay) has ended */
		if (t)
			terminal_end(t, error ? error->message : "the remote executor ended");
		free(o->terminal_id);
		free(o);
		return;
	}
	if (!error && (!t || t->fd < 0))
		err_set(&e, E_INTERNAL, "the tmux.attach executor ended without handing its terminal over");
	const struct err *failure = error ? error : err_is_set(&e) ? &e : NULL;
	if (failure) {
		if (t && !handed_over(t))
			terminal_free(t);
		daemon_reply_finish(o->pr, NULL, failure);
	} else {
		daemon_audit(d, t->user_id, "terminal.open", t->worktree_id, "ok",
			     json_pack("{s:s}", "terminal_id", t->id));
		daemon_reply_finish(o->pr, terminal_json(t, 1), NULL);
	}
	err_clear(&e);
	free(o->terminal_id);
	free(o);
}

static int need_string(json_t *params, const char *key, const char **out, struct err *e)
{
	*out = json_get_str(params, key);
	if (*out && **out)
		return 0;
	return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", key),
			"params.%s: required (a non-empty string)", key);
}

/* params.cols/rows when given (both integers in 1..10000), else the defaults already in cols and rows. */
static int opt_size(json_t *params, int *cols, int *rows, struct err *e)
{
	json_t *c = json_object_get(params, "cols"), *r = json_object_get(params, "rows");
	if (!c && !r)
		return 0;
	if (!json_is_integer(c) || !json_is_integer(r) || json_integer_value(c) < 1 || json_integer_value(c) > 10000 ||
	    json_integer_value(r) < 1 || json_integer_value(r) > 10000)
		return err_set(e, E_INVALID_PAYLOAD, "params.cols/rows: give both, integers between 1 and 10000");
	*cols = (int)json_integer_value(c);
	*rows = (int)json_integer_value(r);
	return 0;
}

/* The worktree row of params.worktree_id (id or name), if the caller owns it or is an admin. A terminal
 * is a shell as the worktree creator's Unix user, so others_can (even all) never opens one; a worktree
 * the caller may not see (others_can none) answers as an unknown id. */
static json_t *worktree_for_caller(struct rpc_ctx *rc, json_t *params, struct err *e)
{
	const char *id;
	if (daemon_need_user(rc, e) < 0 || need_string(params, "worktree_id", &id, e) < 0)
		return NULL;
	json_t *wt = db_query_one(D(rc)->db, e, "SELECT * FROM worktrees WHERE id = ?1 OR name = ?1", "s", id);
	int hidden = wt && !json_is_null(wt) && !P(rc)->is_admin &&
		     !daemon_owns_worktree(D(rc), json_get_str(wt, "id"), P(rc)->user_id, e) &&
		     !daemon_worktree_visible(rc, json_get_str(wt, "id"), e);
	if (wt && (json_is_null(wt) || hidden)) {
		json_decref(wt);
		err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "worktree_id", id), "no worktree with id or name %s", id);
		return NULL;
	}
	if (wt && !P(rc)->is_admin && !daemon_owns_worktree(D(rc), json_get_str(wt, "id"), P(rc)->user_id, e)) {
		json_decref(wt);
		err_set(e, E_PERMISSION_DENIED, "only an owner of worktree %s (or an admin) may open a terminal in it",
			id);
		return NULL;
	}
	return wt;
}

/* The tmux window (zellij tab) of a worktree in its execution user's session: NAME-<first 8 hex of its id>. */
static char *worktree_window_name(const char *name, const char *worktree_id)
{
	return xasprintf("%s-%.8s", name, worktree_id);
}

/* Submits the tmux.attach task whose executor will hand the terminal over (terminal.handover). */
static int start_terminal(struct rpc_ctx *rc, json_t *wt, struct terminal *t, struct err *e)
{
	_cleanup_free_ char *user = NULL, *task_id = NULL;
	const char *wt_id = json_get_str(wt, "id");
	if (daemon_execution_user_for(D(rc), P(rc)->user_id, &user, e) <
	    0) /* the caller's own shell, not the creator's */
		return -1;
	_cleanup_free_ char *window = worktree_window_name(json_get_str(wt, "name"), wt_id);
	int zellij = !strcmp(t->multiplexer, "zellij");
	json_t *params = json_pack("{s:s,s:s,s:s,s:b}", "sessionName", "agor", "cwd", json_get_str(wt, "path"),
				   zellij ? "tabName" : "windowName", window, "create", 1);
	if (!zellij) { /* zellij panes are not sandboxed (sandbox.md) */
		_cleanup_free_ char *ticket = daemon_pane_ticket(D(rc), wt_id, P(rc)->user_id);
		json_object_set_new(params, "paneTicket", json_string(ticket));
	}
	struct open_request *o = xcalloc(1, sizeof(*o));
	o->terminal_id = xstrdup(t->id);
	struct task_spec spec = { .command = zellij ? "zellij.attach" : "tmux.attach",
				  .params = params,
				  .created_by = P(rc)->user_id,
				  .execution_user = user,
				  .worktree_id = wt_id,
				  .with_token = 1,
				  .on_done = terminal_opened,
				  .arg = o };
	int rv = daemon_task_submit(D(rc), &spec, &task_id, e);
	json_decref(params);
	if (rv < 0) {
		free(o->terminal_id);
		free(o);
		return -1;
	}
	t->opening = o;
	t->task_id = TAKE_PTR(task_id);
	o->pr = daemon_reply_defer(rc); /* on_done runs on this thread, later: o is complete by then */
	return 0;
}

int method_terminal_open(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	if (!rc->id || rc->in_batch)
		return err_set(e, E_INVALID_PAYLOAD,
			       "terminal.open answers when the terminal is ready: call it with an id, "
			       "outside a batch");
	_cleanup_json_ json_t *wt = worktree_for_caller(rc, params, e);
	if (!wt)
		return -1;
	int cols = 80, rows = 24;
	const char *multiplexer = json_get_str(params, "multiplexer");
	if (opt_size(params, &cols, &rows, e) < 0)
		return -1;
	if (multiplexer && strcmp(multiplexer, "tmux") && strcmp(multiplexer, "zellij"))
		return err_set(e, E_INVALID_PAYLOAD, "params.multiplexer: \"tmux\" (the default) or \"zellij\"");
	multiplexer = multiplexer && !strcmp(multiplexer, "zellij") ? "zellij" : "tmux";
	if (!strcmp(multiplexer, "zellij") && D(rc)->cfg->execution.executor_daemon_url)
		return err_set(e, E_NOT_BUILT,
			       "params.multiplexer: zellij hands its PTY over on the daemon's Unix socket, and "
			       "execution.executor_daemon_url runs executors on other hosts: use tmux (relayed)");
	struct terminal *t = find_open(D(rc), P(rc)->user_id, json_get_str(wt, "id"), multiplexer);
	if (t && handed_over(t)) { /* several clients share one terminal */
		*result = terminal_json(t, 1);
		return 0;
	}
	if (t)
		return err_set(e, E_ALREADY_EXISTS, "a terminal for worktree %s is being opened: retry in a moment",
			       json_get_str(wt, "id"));
	if (!(t = terminal_new(D(rc), P(rc)->user_id, json_get_str(wt, "id"), multiplexer, e)))
		return -1;
	t->cols = cols;
	t->rows = rows;
	if (start_terminal(rc, wt, t, e) < 0) {
		terminal_free(t);
		return -1;
	}
	return RPC_DEFERRED;
}

/* --- terminal.handover (executor, session token) ----------------------------------------------- */

static int valid_tmux_id(const char *s, char sigil)
{
	if (!s || s[0] != sigil || !s[1])
		return 0;
	for (s++; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* The descriptor must be a socket (tmux control) or a PTY master (zellij): never a file or a FIFO. */
static int check_descriptor(int fd, int is_pty, struct err *e)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(e, errno, "fstat of the handed-over descriptor");
	struct winsize ws;
	if (is_pty ? !S_ISCHR(st.st_mode) || ioctl(fd, TIOCGWINSZ, &ws) < 0 : !S_ISSOCK(st.st_mode))
		return err_set(e, E_INVALID_PAYLOAD, "the handed-over descriptor is not a %s",
			       is_pty ? "pseudo-terminal" : "socket");
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return err_errno(e, errno, "making the terminal descriptor non-blocking");
	return 0;
}

static int adopt_descriptor(struct terminal *t, int fd, json_t *params, struct err *e)
{
	t->tmux = json_pack("{s:s,s:O?,s:O?,s:O?,s:O?,s:O?}", "multiplexer", t->multiplexer, "server",
			    json_object_get(params, "server"), "session", json_object_get(params, "session"), "window",
			    json_object_get(params, "window"), "pane", json_object_get(params, "pane"), "controlPid",
			    json_object_get(params, "controlPid"));
	t->window = json_get_str(t->tmux, "window");
	t->pane = json_get_str(t->tmux, "pane");
	if (!t->is_pty)
		tmux_parser_init(&t->parser, on_tmux_event, t);
	if (loop_add_fd(t->d->loop, fd, LOOP_READ, t->is_pty ? on_pty_readable : on_tmux_readable, t, e) < 0) {
		if (!t->is_pty)
			tmux_parser_release(&t->parser);
		return -1;
	}
	t->fd = fd;
	if (queue_resize(t, t->cols, t->rows, e) == 0)
		flush_commands(t);
	err_clear(e);
	return 0;
}

/* A remote executor relays the control client on this connection (terminal_stream.h): the terminal becomes this
 * connection's, terminal.open is answered now, and the relay's bytes go where a descriptor's would. */
static int adopt_stream(struct rpc_ctx *rc, struct terminal *t, json_t *params, struct err *e)
{
	struct daemon_peer *p = P(rc);
	t->tmux = json_pack("{s:s,s:O?,s:O?,s:O?,s:O?,s:b}", "multiplexer", t->multiplexer, "server",
			    json_object_get(params, "server"), "session", json_object_get(params, "session"), "window",
			    json_object_get(params, "window"), "pane", json_object_get(params, "pane"), "relayed", 1);
	t->window = json_get_str(t->tmux, "window");
	t->pane = json_get_str(t->tmux, "pane");
	tmux_parser_init(&t->parser, on_tmux_event, t);
	t->stream = p;
	p->terminal_stream = t;
	p->executor = 1;
	if (queue_resize(t, t->cols, t->rows, e) == 0)
		flush_commands(t);
	err_clear(e);
	if (t->opening) {
		daemon_audit(D(rc), t->user_id, "terminal.open", t->worktree_id, "ok",
			     json_pack("{s:s,s:b}", "terminal_id", t->id, "relayed", 1));
		daemon_reply_finish(t->opening->pr, terminal_json(t, 1), NULL);
		t->opening->pr = NULL;
		t->opening = NULL;
	}
	return 0;
}

/* terminal.handover {stream: true}: only on a WebSocket, only a tmux terminal, only the one the task waits for. */
static int handover_stream(struct rpc_ctx *rc, const char *task_id, json_t *params, json_t **result, struct err *e)
{
	struct terminal *t = find_by_task(D(rc), task_id);
	if (!t || handed_over(t) || P(rc)->terminal_stream)
		return err_set(e, E_AUTH_FAILED, "no terminal waits for this task's hand-over");
	if (net_conn_kind(P(rc)->conn) != NET_CONN_WS)
		return err_set(e, E_INVALID_PAYLOAD,
			       "params.stream: a relayed terminal streams on the executor's WebSocket "
			       "(execution.executor_daemon_url)");
	if (strcmp(t->multiplexer, "tmux") ||
	    strcmp(json_get_str(params, "kind") ? json_get_str(params, "kind") : "", "tmux"))
		return err_set(e, E_INVALID_PAYLOAD,
			       "params.kind: only a tmux control client is relayed (kind \"tmux\"); zellij needs "
			       "the Unix socket");
	if (!valid_tmux_id(json_get_str(params, "window"), '@') || !valid_tmux_id(json_get_str(params, "pane"), '%'))
		return err_set(e, E_INVALID_PAYLOAD, "params.window/pane: tmux ids (@N, %%N) are required");
	adopt_stream(rc, t, params, e);
	daemon_audit(
		D(rc), t->user_id, "terminal.handover", t->id, "ok",
		json_pack("{s:s,s:O?,s:b}", "task_id", task_id, "pane", json_object_get(params, "pane"), "relayed", 1));
	*result = json_pack("{s:b,s:s,s:I}", "accepted", 1, "terminal_id", t->id, "heartbeat_ms",
			    (json_int_t)D(rc)->cfg->execution.executor_heartbeat_ms);
	return 0;
}

int method_terminal_handover(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	_cleanup_free_ char *task_id = NULL;
	if (daemon_executor_authenticate(D(rc), "terminal.handover", params, &task_id, e) < 0)
		return -1;
	if (json_is_true(json_object_get(params, "stream")))
		return handover_stream(rc, task_id, params, result, e);
	int fd = net_conn_take_fd(P(rc)->conn);
	struct terminal *t = find_by_task(D(rc), task_id);
	int rv = 0;
	if (!t || handed_over(t))
		rv = err_set(e, E_AUTH_FAILED, "no terminal waits for this task's hand-over");
	else if ((t->is_pty = !strcmp(t->multiplexer, "zellij")) !=
		 !strcmp(json_get_str(params, "kind") ? json_get_str(params, "kind") : "", "pty"))
		rv = err_set(e, E_INVALID_PAYLOAD, "params.kind: a %s terminal hands over %s", t->multiplexer,
			     t->is_pty ? "a PTY (kind \"pty\")" : "a tmux control socket");
	else if (fd < 0)
		rv = err_set(e, E_INVALID_PAYLOAD,
			     "terminal.handover carries its descriptor with SCM_RIGHTS on the Unix "
			     "socket: none arrived");
	else if (!t->is_pty && (!valid_tmux_id(json_get_str(params, "window"), '@') ||
				!valid_tmux_id(json_get_str(params, "pane"), '%')))
		rv = err_set(e, E_INVALID_PAYLOAD, "params.window/pane: tmux ids (@N, %%N) are required");
	else if (check_descriptor(fd, t->is_pty, e) < 0 || adopt_descriptor(t, fd, params, e) < 0)
		rv = -1;
	if (rv < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	daemon_audit(D(rc), t->user_id, "terminal.handover", t->id, "ok",
		     json_pack("{s:s,s:O?}", "task_id", task_id, "pane", json_object_get(params, "pane")));
	*result = json_pack("{s:b,s:s}", "accepted", 1, "terminal_id", t->id);
	return 0;
}

/* --- attach, input, resize, close, list ------------------------------------------------------ */

static int token_matches(const struct terminal *t, const char *token)
{
	return token && strlen(token) == TOKEN_HEX && crypto_equal(t->token, token, TOKEN_HEX);
}

int method_terminal_attach(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *id, *token;
	if (need_string(params, "terminal_id", &id, e) < 0 || need_string(params, "token", &token, e) < 0)
		return -1;
	struct daemon_peer *p = P(rc);
	struct terminal *t = find_terminal(D(rc), id);
	if (!t || !handed_over(t) || !token_matches(t, token)) {
		daemon_audit_refusal(D(rc), p->user_id ? p->user_id : "anonymous", "terminal.attach", id, NULL);
		return err_set(e, E_AUTH_FAILED, "terminal %s: no such terminal, or the token is not this terminal's",
			       id);
	}
	if (p->user_id && !p->is_admin && strcmp(p->user_id, t->user_id)) {
		daemon_audit_refusal(D(rc), p->user_id, "terminal.attach", id,
				     json_pack("{s:s}", "reason", "another user's terminal"));
		return err_set(e, E_PERMISSION_DENIED, "terminal %s belongs to another user", id);
	}
	if (p->terminal)
		remove_client(p->terminal, p);
	add_client(t, p);
	if (!t->is_pty) { /* the new client first gets what the pane shows now (escapes kept) */
		strbuf_addf(&t->out, "capture-pane -p -e -t %s\n", t->pane);
		owe(t, p);
		flush_commands(t);
	}
	*result = terminal_json(t, 0);
	json_object_set_new(*result, "attached", json_true());
	json_object_set_new(*result, "binary", json_boolean(net_conn_kind(p->conn) == NET_CONN_WS));
	return 0;
}

static int attached_terminal(struct rpc_ctx *rc, struct terminal **t, struct err *e)
{
	*t = P(rc)->terminal;
	return *t ? 0
		  : err_set(e, E_INVALID_PAYLOAD,
			    "this connection is not attached to a terminal: call terminal.attach first");
}

static int send_input(struct terminal *t, const void *data, size_t len, struct err *e)
{
	if (t->out.len - t->out_off > INPUT_BACKLOG_MAX)
		return err_set(e, E_TIMEOUT, "terminal %s: tmux is not taking input (backlog over %u bytes)", t->id,
			       INPUT_BACKLOG_MAX);
	size_t from = t->out.len;
	if (t->is_pty)
		strbuf_add(&t->out, data, len);
	else if (len && tmux_encode_send_keys(&t->out, t->pane, data, len) < 0)
		return err_set(e, E_INTERNAL, "terminal %s: pane %s cannot take keys", t->id, t->pane);
	else
		owe_lines_since(t, from);
	return flush_commands(t) < 0 ? err_set(e, E_INTERNAL, "terminal %s: writing to tmux failed", t->id) : 0;
}

/* A relaying executor's message: the control client's bytes, parsed as if read from its socket. The executor is
 * untrusted: a message over STREAM_FRAME_MAX ends the terminal (and so the relay). */
static void on_stream_bytes(struct terminal *t, const void *data, size_t len)
{
	if (len > STREAM_FRAME_MAX) {
		daemon_audit_refusal(
			t->d, t->user_id, "terminal.stream", t->id,
			json_pack("{s:s,s:I}", "reason", "a relayed message too large", "bytes", (json_int_t)len));
		terminal_end(t, "the remote executor sent a message over the relay's limit (64 KiB)");
		return;
	}
	feed_tmux_parser(t, data, len);
	if (t->end_reason)
		terminal_end(t, t->end_reason);
}

void daemon_terminal_on_binary(struct daemon_peer *peer, const void *data, size_t len)
{
	struct err e = ERR_INIT;
	if (peer->terminal_stream)
		on_stream_bytes(peer->terminal_stream, data, len);
	else if (!peer->terminal)
		send_event(peer, "terminal.error",
			   json_pack("{s:s}", "message",
				     "binary frames are keystrokes for an "
				     "attached terminal: call terminal.attach first"));
	else if (send_input(peer->terminal, data, len, &e) < 0)
		send_event(peer, "terminal.error", json_pack("{s:s}", "message", e.message));
	err_clear(&e);
}

int method_terminal_input(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct terminal *t;
	const char *data;
	if (attached_terminal(rc, &t, e) < 0 || need_string(params, "data", &data, e) < 0)
		return -1;
	struct strbuf raw = STRBUF_INIT;
	int rv = crypto_base64_decode(data, strlen(data), &raw, e);
	if (rv < 0)
		err_prefix(e, "params.data (base64 of the bytes to type)");
	else
		rv = send_input(t, raw.buf, raw.len, e);
	strbuf_release(&raw);
	if (rv == 0)
		*result = json_pack("{s:b}", "sent", 1);
	return rv;
}

int method_terminal_resize(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct terminal *t;
	int cols = 0, rows = 0;
	if (attached_terminal(rc, &t, e) < 0)
		return -1;
	if (!json_object_get(params, "cols") || !json_object_get(params, "rows"))
		return err_set(e, E_INVALID_PAYLOAD, "params.cols/rows: both are required");
	if (opt_size(params, &cols, &rows, e) < 0 || queue_resize(t, cols, rows, e) < 0)
		return -1;
	if (flush_commands(t) < 0)
		return err_set(e, E_INTERNAL, "terminal %s: writing to tmux failed", t->id);
	*result = json_pack("{s:i,s:i}", "cols", cols, "rows", rows);
	return 0;
}

/* The caller's own terminal (or any, for an admin) by params.terminal_id. */
static int owned_terminal(struct rpc_ctx *rc, json_t *params, struct terminal **t, struct err *e)
{
	const char *id;
	if (daemon_need_user(rc, e) < 0 || need_string(params, "terminal_id", &id, e) < 0)
		return -1;
	*t = find_terminal(D(rc), id);
	if (*t && (P(rc)->is_admin || !strcmp((*t)->user_id, P(rc)->user_id)))
		return 0;
	return err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "terminal_id", id), "no terminal %s of yours", id);
}

int method_terminal_close(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct terminal *t;
	if (owned_terminal(rc, params, &t, e) < 0)
		return -1;
	if (!handed_over(t))
		return err_set(e, E_ALREADY_EXISTS, "terminal %s is still being opened", t->id);
	daemon_audit(D(rc), P(rc)->user_id, "terminal.close", t->id, "ok", NULL);
	terminal_end(t, "closed (the tmux session stays: terminal.open attaches it again)");
	*result = json_pack("{s:b}", "closed", 1);
	return 0;
}

int method_terminal_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)params;
	if (daemon_need_user(rc, e) < 0)
		return -1;
	*result = json_array();
	for (struct terminal *t = D(rc)->terminals; t; t = t->next)
		if (handed_over(t) && (P(rc)->is_admin || !strcmp(t->user_id, P(rc)->user_id)))
			json_array_append_new(*result, terminal_json(t, 0));
	return 0;
}

/* --- windows of worktrees that are gone ---------------------------------------------------- */

static void tmux_closed(struct daemon *d, const char *task_id, const json_t *data, const struct err *error, void *arg)
{
	(void)d, (void)task_id;
	if (error)
		log_warn("tmux windows of %s stay open: %s", (char *)arg, error->message);
	else if (json_array_size(json_object_get(data, "closed")))
		log_info("closed the tmux windows of removed worktrees (%s): %zu", (char *)arg,
			 json_array_size(json_object_get(data, "closed")));
	free(arg);
}

/* A tmux.close task as execution_user with params (borrowed); the outcome is only logged. */
static void submit_tmux_close(struct daemon *d, const char *execution_user, json_t *params, const char *what)
{
	struct err e = ERR_INIT;
	char *label = xstrdup(what);
	struct task_spec spec = { .command = "tmux.close",
				  .params = params,
				  .created_by = d->owner_id,
				  .execution_user = execution_user,
				  .on_done = tmux_closed,
				  .arg = label };
	_cleanup_free_ char *task_id = NULL;
	if (daemon_task_submit(d, &spec, &task_id, &e) < 0) {
		log_warn("tmux windows of %s stay open: %s", what, e.message);
		free(label);
	}
	err_clear(&e);
}

json_t *daemon_terminal_openers(struct daemon *d, const char *worktree_id)
{
	struct err e = ERR_INIT;
	json_t *rows = db_query_json(d->db, &e,
				     "SELECT user_id AS id FROM worktree_owners WHERE worktree_id = ? "
				     "UNION SELECT id FROM users WHERE role = 'admin'",
				     "s", worktree_id);
	if (!rows) {
		log_warn("worktree %s: who opened its terminals is unknown: %s", worktree_id, e.message);
		err_clear(&e);
		rows = json_array();
	}
	return rows;
}

/* The distinct execution users of the agor users in rows ({id} objects); "" stands for the daemon user. */
static json_t *execution_users_of(struct daemon *d, const json_t *rows)
{
	json_t *users = json_object();
	size_t i;
	json_t *row;
	json_array_foreach((json_t *)rows, i, row)
	{
		_cleanup_free_ char *user = NULL;
		struct err e = ERR_INIT;
		if (daemon_execution_user_for(d, json_get_str(row, "id"), &user, &e) == 0)
			json_object_set_new(users, user ? user : "", json_true());
		err_clear(&e); /* a user without an execution user has no tmux server of agor's */
	}
	return users;
}

void daemon_terminals_worktree_removed(struct daemon *d, const char *worktree_id, const char *name,
				       const json_t *openers)
{
	for (struct terminal *t = d->terminals, *next; t; t = next) {
		next = t->next;
		if (!strcmp(t->worktree_id, worktree_id) && handed_over(t))
			terminal_end(t, "the worktree was removed");
	}
	_cleanup_free_ char *window = worktree_window_name(name, worktree_id);
	_cleanup_json_ json_t *params = json_pack("{s:s,s:s}", "sessionName", "agor", "windowName", window);
	_cleanup_json_ json_t *users = execution_users_of(d, openers);
	const char *user;
	json_t *yes;
	json_object_foreach(users, user, yes) submit_tmux_close(d, *user ? user : NULL, params, window);
}

void daemon_terminals_sweep(struct daemon *d)
{
	struct err e = ERR_INIT;
	_cleanup_json_ json_t *worktrees = db_query_json(d->db, &e, "SELECT id, name FROM worktrees", "");
	if (worktrees && !json_array_size(worktrees))
		return; /* nothing to sweep around: no executor at every start of a daemon without worktrees */
	_cleanup_json_ json_t *all = worktrees ? db_query_json(d->db, &e, "SELECT id FROM users", "") : NULL;
	if (!all) {
		log_warn("no sweep of tmux windows: %s", e.message);
		err_clear(&e);
		return;
	}
	_cleanup_json_ json_t *keep = json_array(); /* every live worktree's window, in every server */
	size_t i;
	json_t *row;
	json_array_foreach(worktrees, i, row)
	{
		_cleanup_free_ char *window = worktree_window_name(json_get_str(row, "name"), json_get_str(row, "id"));
		json_array_append_new(keep, json_string(window));
	}
	_cleanup_json_ json_t *params = json_pack("{s:s,s:O}", "sessionName", "agor", "keepWindows", keep);
	_cleanup_json_ json_t *users = execution_users_of(d, all);
	const char *user;
	json_t *yes;
	json_object_foreach(users, user, yes)
		submit_tmux_close(d, *user ? user : NULL, params, "worktrees removed while the daemon was down");
}
