/* terminal_stream.c — a tmux control client relayed to a remote daemon over the executor's WebSocket
 * (terminal_stream.h). Never hands the daemon anything but the control client's bytes. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "loop.h"
#include "rpcclient.h"
#include "terminal_stream.h"
#include "banned.h"

#define DEFAULT_HEARTBEAT_MS 10000

struct relay {
	struct rpc_client *c;
	const char *token;
	int fd;	       /* the control client's socket */
	int fd_failed; /* writing the daemon's commands to tmux failed */
	long long heartbeat_ms;
	uint64_t next_heartbeat;
};

/* The daemon's tmux commands, as they arrive (also while a call waits for its answer). */
static void write_to_tmux(const void *data, size_t len, void *arg)
{
	struct relay *r = arg;
	const char *p = data;
	while (len && !r->fd_failed) {
		ssize_t n = write(r->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r->fd_failed = 1;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
}

static int call_daemon(struct relay *r, const char *method, json_t *params /* stolen */, json_t **result, struct err *e)
{
	json_object_set_new(params, "session_token", json_string(r->token));
	int rv = rpc_client_call(r->c, method, params, result, e);
	json_decref(params);
	return rv;
}

static int hand_over(struct relay *r, const json_t *info, struct err *e)
{
	json_t *params = json_deep_copy(info), *result = NULL;
	json_object_set_new(params, "kind", json_string("tmux"));
	json_object_set_new(params, "stream", json_true());
	if (call_daemon(r, "terminal.handover", params, &result, e) < 0)
		return err_prefix(e, "the daemon refused the terminal"), -1;
	json_int_t hb = json_integer_value(json_object_get(result, "heartbeat_ms"));
	r->heartbeat_ms = hb > 0 ? hb : DEFAULT_HEARTBEAT_MS;
	json_decref(result);
	return 0;
}

/* Every heartbeat_ms a call the daemon must answer within three of them, or the link is lost. */
static int heartbeat_if_due(struct relay *r, struct err *e)
{
	if (loop_now_ms() < r->next_heartbeat)
		return 0;
	json_t *result = NULL;
	if (call_daemon(r, "heartbeat", json_object(), &result, e) < 0)
		return err_prefix(e, "the daemon connection was lost (a heartbeat went unanswered)"), -1;
	json_decref(result);
	r->next_heartbeat = loop_now_ms() + (uint64_t)r->heartbeat_ms;
	return 0;
}

/* Control client → daemon: 1 = relayed, 0 = the client ended, -1 = the link failed. */
static int relay_from_tmux(struct relay *r, struct err *e)
{
	char buf[TERMINAL_STREAM_FRAME_MAX];
	ssize_t n;
	do
		n = read(r->fd, buf, sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	return rpc_client_send_binary(r->c, buf, (size_t)n, e) < 0 ? -1 : 1;
}

/* Daemon → control client (binary messages go to write_to_tmux): 1 = keep going, 0 = the daemon closed. */
static int drain_daemon(struct relay *r)
{
	struct strbuf msg = STRBUF_INIT;
	struct err e = ERR_INIT;
	int rv;
	while ((rv = rpc_client_recv(r->c, &msg, 0, &e)) == 0)
		strbuf_setlen(&msg, 0); /* text messages on this link are not for the relay */
	rv = e.code && !strcmp(e.code, E_TIMEOUT) ? 1 : 0;
	err_clear(&e);
	strbuf_release(&msg);
	return rv;
}

static int relay_loop(struct relay *r, struct err *e)
{
	for (;;) {
		if (heartbeat_if_due(r, e) < 0)
			return -1;
		if (r->fd_failed)
			return 0; /* tmux stopped taking commands: the client is gone */
		uint64_t now = loop_now_ms();
		int wait = r->next_heartbeat > now ? (int)(r->next_heartbeat - now) : 0;
		struct pollfd p[2] = { { .fd = r->fd, .events = POLLIN },
				       { .fd = rpc_client_fd(r->c), .events = POLLIN } };
		if (poll(p, 2, wait) < 0 && errno != EINTR)
			return err_errno(e, errno, "poll");
		int rv = 1;
		if (p[0].revents)
			rv = relay_from_tmux(r, e);
		if (rv > 0 && p[1].revents)
			rv = drain_daemon(r);
		if (rv <= 0)
			return rv;
	}
}

int terminal_stream_relay(const struct callback_target *target, const char *session_token, const json_t *info, int fd,
			  struct err *e)
{
	struct relay r = { .token = session_token ? session_token : "", .fd = fd };
	struct rpc_client_options opt = { .on_binary = write_to_tmux, .arg = &r, .call_timeout_ms = 30000 };
	if (!(r.c = callback_connect(target, &opt, e)))
		return -1;
	int rv = hand_over(&r, info, e);
	if (rv == 0) {
		rpc_client_set_call_timeout(r.c, (int)(3 * r.heartbeat_ms));
		r.next_heartbeat = loop_now_ms() + (uint64_t)r.heartbeat_ms;
		rv = relay_loop(&r, e);
	}
	rpc_client_close(r.c);
	return rv;
}
