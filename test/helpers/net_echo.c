/* net_echo.c — a test server on lib/net: echoes every message (text and binary) back, serves /healthz and /stats,
 * prints its TCP port. Never used in production; never echoes anything but what it was sent.
 *
 *   net-echo [--unix PATH] [--host H] [--port N|--no-tcp] [--tls-cert F --tls-key F] [--max-message N]
 *            [--high-water N] [--idle-timeout MS] [--header-timeout MS]
 * Prints "port N" (0 without TCP) then "ready" on stdout. SIGTERM/SIGINT: stop accepting, close gracefully,
 * exit 0 once every connection is gone (at most 3 s). Oversize messages are answered {"error":"oversize"}. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "loop.h"
#include "net.h"
#include "banned.h"

static struct net_server *server;
static int stopping;
static uint64_t stop_deadline;

static void on_message(struct net_conn *c, const char *data, size_t len, void *arg)
{
	(void)arg;
	net_send(c, data, len);
}

static void on_binary(struct net_conn *c, const void *data, size_t len, void *arg)
{
	(void)arg;
	net_send_binary(c, data, len);
}

static void on_oversize(struct net_conn *c, void *arg)
{
	(void)arg;
	static const char msg[] = "{\"error\":\"oversize\"}";
	net_send(c, msg, sizeof(msg) - 1);
}

static int on_http_get(struct net_conn *c, const char *path, struct strbuf *body, const char **ct,
		       struct strbuf *headers, void *arg)
{
	(void)c;
	(void)headers;
	(void)arg;
	struct net_stats st;
	if (!strcmp(path, "/healthz")) {
		strbuf_addstr(body, "ok\n");
		return 200;
	}
	if (strcmp(path, "/stats"))
		return 404;
	net_server_stats(server, &st);
	strbuf_addf(body,
		    "{\"connections_open\":%llu,\"connections_total\":%llu,\"messages_in\":%llu,\"messages_out\":%llu,"
		    "\"bytes_in\":%llu,\"bytes_out\":%llu,\"slow_drops\":%llu,\"oversize_refusals\":%llu,"
		    "\"protocol_errors\":%llu,\"tls_failures\":%llu,\"timeouts\":%llu,\"refused\":%llu}\n",
		    (unsigned long long)st.connections_open, (unsigned long long)st.connections_total,
		    (unsigned long long)st.messages_in, (unsigned long long)st.messages_out,
		    (unsigned long long)st.bytes_in, (unsigned long long)st.bytes_out,
		    (unsigned long long)st.slow_drops, (unsigned long long)st.oversize_refusals,
		    (unsigned long long)st.protocol_errors, (unsigned long long)st.tls_failures,
		    (unsigned long long)st.timeouts, (unsigned long long)st.refused);
	*ct = "application/json";
	return 200;
}

static void check_drained(struct loop *l, void *arg)
{
	(void)arg;
	struct net_stats st;
	net_server_stats(server, &st);
	if (st.connections_open == 0 || loop_now_ms() >= stop_deadline)
		loop_stop(l);
	else
		loop_timer_add(l, 20, check_drained, NULL);
}

static void on_signal(struct loop *l, int signo, void *arg)
{
	(void)arg;
	(void)signo;
	if (stopping++)
		return;
	net_server_stop_accepting(server);
	net_server_close_all(server);
	stop_deadline = loop_now_ms() + 3000;
	check_drained(l, NULL);
}

static int usage(void)
{
	fprintf(stderr,
		"usage: net-echo [--unix PATH] [--host H] [--port N|--no-tcp] [--tls-cert F --tls-key F]\n"
		"                [--max-message N] [--high-water N] [--idle-timeout MS] [--header-timeout MS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct net_server_config cfg = { .tcp_port = NET_TCP_EPHEMERAL };
	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(opt, "--no-tcp")) {
			cfg.tcp_port = 0;
			continue;
		}
		if (!val)
			return usage();
		i++;
		if (!strcmp(opt, "--unix"))
			cfg.unix_path = val;
		else if (!strcmp(opt, "--host"))
			cfg.tcp_host = val;
		else if (!strcmp(opt, "--port"))
			cfg.tcp_port = atoi(val) ? atoi(val) : NET_TCP_EPHEMERAL;
		else if (!strcmp(opt, "--tls-cert"))
			cfg.tls_cert = val;
		else if (!strcmp(opt, "--tls-key"))
			cfg.tls_key = val;
		else if (!strcmp(opt, "--max-message"))
			cfg.max_message = (size_t)strtoull(val, NULL, 10);
		else if (!strcmp(opt, "--high-water"))
			cfg.out_high_water = (size_t)strtoull(val, NULL, 10);
		else if (!strcmp(opt, "--idle-timeout"))
			cfg.idle_timeout_ms = (unsigned)atoi(val);
		else if (!strcmp(opt, "--header-timeout"))
			cfg.header_timeout_ms = (unsigned)atoi(val);
		else
			return usage();
	}
	log_init("net-echo");
	signal(SIGPIPE, SIG_IGN);
	struct err e = ERR_INIT;
	struct loop *l = loop_new(&e);
	static const struct net_callbacks cb = {
		.on_message = on_message,
		.on_binary = on_binary,
		.on_oversize = on_oversize,
		.on_http_get = on_http_get,
	};
	if (!l || loop_add_signal(l, SIGTERM, on_signal, NULL, &e) < 0 ||
	    loop_add_signal(l, SIGINT, on_signal, NULL, &e) < 0 || !(server = net_server_start(l, &cfg, &cb, &e))) {
		fprintf(stderr, "net-echo: %s\n", e.message);
		return 1;
	}
	printf("port %d\nready\n", net_server_tcp_port(server));
	fflush(stdout);
	int rc = loop_run(l, &e) < 0 ? 1 : 0;
	net_server_free(server);
	loop_free(l);
	return rc;
}
