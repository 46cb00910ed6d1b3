/* daemon_serve.c — the daemon's transports (lib/net) glued to its method table (daemon_serve.h): each connection's
 * identity at open, its messages to daemon_dispatch, /healthz, /metrics and the web terminal's files, the caps and
 * origins of daemon_limits.c, signals and graceful shutdown.
 * Never trusts what a caller claims about itself; never lets one slow subscriber stall the loop. */
#include <grp.h>
#include <signal.h>
#include <string.h>

#include "daemon_access.h"
#include "daemon_dispatch.h"
#include "daemon_limits.h"
#include "daemon_methods.h"
#include "daemon_nodes.h"
#include "daemon_peer.h"
#include "daemon_serve.h"
#include "daemon_tasks.h"
#include "daemon_terminal.h"
#include "json.h"
#include "log.h"
#include "net.h"
#include "rpc.h"
#include "web.h"
#include "banned.h"

#define MAX_MESSAGE (1u << 20)

/* --- peers ---------------------------------------------------------------------------------- */

static void on_open(struct net_conn *c, void *arg)
{
	struct daemon *d = arg;
	struct daemon_peer *p = xcalloc(1, sizeof(*p));
	p->d = d;
	p->conn = c;
	p->uid = (uid_t)-1;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	if (net_conn_peer_cred(c, &uid, &gid, &pid) == 0) {
		p->uid = uid;
		p->pid = pid;
		daemon_peer_identify(d, p);
	}
	net_conn_set_data(c, p);
}

static void on_close(struct net_conn *c, void *arg)
{
	struct daemon *d = arg;
	struct daemon_peer *p = net_conn_get_data(c);
	if (!p)
		return;
	for (size_t i = 0; i < p->npending; i++)
		daemon_pending_detach(p->pending[i]);
	daemon_terminal_on_close(p);
	if (p->subscribed)
		daemon_unsubscribe(d, c);
	daemon_node_closed(d, p);
	free(p->pending);
	free(p->user_id);
	free(p->token_jti);
	free(p);
	net_conn_set_data(c, NULL);
}

/* d->caller for the message being handled: the caller's IP address, or its uid on the Unix socket. */
static void note_caller(struct daemon *d, struct net_conn *c)
{
	uid_t uid;
	if (net_conn_peer_cred(c, &uid, NULL, NULL) == 0)
		snprintf(d->caller, sizeof(d->caller), "unix uid %u", (unsigned)uid);
	else
		snprintf(d->caller, sizeof(d->caller), "%s", net_conn_remote_ip(c));
}

/* A connection that became someone (a user token, a paired node, a terminal's token, an executor's task token)
 * leaves the caps on unauthenticated ones: a remote executor waiting on a person is never closed for its silence. */
static void note_authenticated(struct net_conn *c, const struct daemon_peer *p)
{
	if (p->user_id || p->node_id || p->terminal || p->executor)
		net_conn_set_authenticated(c);
}

static void on_message(struct net_conn *c, const char *data, size_t len, void *arg)
{
	struct daemon *d = arg;
	struct daemon_peer *p = net_conn_get_data(c);
	if (daemon_node_take_answer(d, p, data, len))
		return;
	note_caller(d, c);
	char *reply = daemon_handle_message(d, p, data, len);
	d->caller[0] = '\0';
	note_authenticated(c, p);
	if (reply) {
		daemon_send_reply(d, c, reply);
		free(reply);
	} else if (net_conn_kind(c) == NET_CONN_HTTP && !p->npending) {
		net_send(c, "", 0); /* a POST carrying only notifications still gets its answer: 204 */
	}
}

static void on_binary(struct net_conn *c, const void *data, size_t len, void *arg)
{
	(void)arg;
	struct daemon_peer *p = net_conn_get_data(c);
	if (p)
		daemon_terminal_on_binary(p, data, len);
}

static int on_origin(struct net_conn *c, const char *origin, void *arg)
{
	(void)c;
	return daemon_origin_allowed(arg, origin);
}

static void on_oversize(struct net_conn *c, void *arg)
{
	(void)arg;
	char *reply = rpc_oversize_text(MAX_MESSAGE);
	net_send(c, reply, strlen(reply));
	free(reply);
}

/* --- /healthz and /metrics ------------------------------------------------------------------ */

static void add_metric(struct strbuf *b, const char *name, const char *type, const char *help, unsigned long long v)
{
	strbuf_addf(b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

/* What daemon_limits.c watches: connections refused by cap, slowloris closes, foreign origins, the database. */
static void add_limit_metrics(struct strbuf *b, const struct daemon *d, const struct net_stats *s)
{
	add_metric(b, "agor_connections_tcp_open", "gauge", "Open TCP connections.", s->tcp_open);
	add_metric(b, "agor_connections_unauthenticated_open", "gauge", "Open TCP connections not authenticated yet.",
		   s->unauthenticated_open);
	add_metric(b, "agor_connections_refused_total", "counter", "Connections refused at the TCP or Unix-socket cap.",
		   s->refused);
	add_metric(b, "agor_connections_refused_reserve_total", "counter",
		   "TCP connections refused to keep the descriptor reserve.", s->refused_reserve);
	add_metric(b, "agor_connections_refused_per_ip_total", "counter",
		   "TCP connections refused at daemon.max_connections_per_ip.", s->refused_per_ip);
	add_metric(b, "agor_connections_refused_unauthenticated_total", "counter",
		   "TCP connections refused at daemon.max_unauthenticated.", s->refused_unauthenticated);
	add_metric(b, "agor_auth_timeouts_total", "counter",
		   "Unauthenticated connections closed at daemon.auth_timeout_ms.", s->auth_timeouts);
	add_metric(b, "agor_origin_refusals_total", "counter", "Browser requests refused for their Origin (403).",
		   s->origin_refusals);
	add_metric(b, "agor_db_bytes", "gauge", "Size of the database file.", d->db_bytes);
	add_metric(b, "agor_db_wal_bytes", "gauge", "Size of the database's write-ahead log.", d->wal_bytes);
	add_metric(b, "agor_db_size_alarm", "gauge", "1 while the database is past daemon.db_size_alarm_mb.",
		   (unsigned long long)d->db_size_alarm);
}

/* The web terminal's files (lib/web): the page at /terminal, xterm.js and the rest under /assets/. */
static int serve_web_asset(const char *path, struct strbuf *body, const char **content_type, struct strbuf *headers)
{
	const struct web_asset *a = web_find(path);
	if (!a)
		return 404;
	strbuf_add(body, a->data, a->len);
	*content_type = a->content_type;
	web_response_headers(headers, a);
	return 200;
}

static int on_http_get(struct net_conn *c, const char *path, struct strbuf *body, const char **content_type,
		       struct strbuf *headers, void *arg)
{
	(void)c;
	struct daemon *d = arg;
	if (!strcmp(path, "/healthz")) {
		*content_type = "application/json";
		strbuf_addf(body, "{\"status\":\"%s\",\"runningTasks\":%d}", d->stopping ? "stopping" : "ok",
			    d->nrunning);
		return 200;
	}
	if (strcmp(path, "/metrics"))
		return serve_web_asset(path, body, content_type, headers);
	struct net_stats s;
	net_server_stats(d->server, &s);
	*content_type = "text/plain; version=0.0.4";
	add_metric(body, "agor_connections_open", "gauge", "Open client connections.", s.connections_open);
	add_metric(body, "agor_connections_total", "counter", "Connections accepted.", s.connections_total);
	add_metric(body, "agor_messages_in_total", "counter", "Messages received.", s.messages_in);
	add_metric(body, "agor_messages_out_total", "counter", "Messages sent.", s.messages_out);
	add_metric(body, "agor_slow_subscribers_dropped_total", "counter", "Connections dropped for not reading.",
		   s.slow_drops);
	add_metric(body, "agor_oversize_messages_total", "counter", "Messages refused for size.", s.oversize_refusals);
	add_metric(body, "agor_events_total", "counter", "Events broadcast.", d->events_sent);
	add_metric(body, "agor_tasks_running", "gauge", "Executors in flight.", (unsigned long long)d->nrunning);
	add_limit_metrics(body, d, &s);
	return 200;
}

/* --- lifecycle ------------------------------------------------------------------------------ */

static void maybe_finish_stop(struct daemon *d)
{
	if (d->stopping && d->nrunning == 0 && !daemon_terminals_detaching(d))
		loop_stop(d->loop);
}

static void on_wake(struct loop *l, void *arg)
{
	(void)l;
	daemon_collect_finished(arg);
	maybe_finish_stop(arg);
}

static void force_stop(struct loop *l, void *arg)
{
	(void)arg;
	log_warn("executors did not stop in time: exiting anyway");
	loop_stop(l);
}

static void on_stop_signal(struct loop *l, int signo, void *arg)
{
	struct daemon *d = arg;
	if (d->stopping)
		return;
	log_info("signal %d: stopping (no new connections; cancelling %d running task(s))", signo, d->nrunning);
	d->stopping = 1;
	net_server_stop_accepting(d->server);
	daemon_cancel_all(d);
	daemon_terminals_detach(d); /* their tmux clients are let go while the loop still reads them */
	loop_timer_add(l, 10000, force_stop, d);
	maybe_finish_stop(d);
}

static void on_hup(struct loop *l, int signo, void *arg)
{
	(void)l;
	(void)signo;
	(void)arg;
	if (log_reopen() < 0)
		log_error("cannot reopen the log file: %m");
	else
		log_info("log file reopened");
}

/* In the isolating modes executors (other users) reach the socket through the agor_users group. */
static int socket_group(const struct daemon *d, gid_t *gid)
{
	if (d->cfg->execution.unix_user_mode == CONFIG_MODE_SIMPLE ||
	    d->cfg->execution.unix_user_mode == CONFIG_MODE_SANDBOX)
		return 0;
	struct group *g = getgrnam("agor_users");
	if (!g)
		return 0;
	*gid = g->gr_gid;
	return 1;
}

int daemon_run(struct daemon *d, struct err *e)
{
	signal(SIGPIPE, SIG_IGN);
	struct net_server_config sc = {
		.unix_path = d->cfg->daemon.socket_path,
		.unix_mode = 0660,
		.tcp_host = d->cfg->daemon.host,
		.tcp_port = d->cfg->daemon.port ? d->cfg->daemon.port : NET_TCP_EPHEMERAL,
		.tls_cert = d->cfg->daemon.tls_cert,
		.tls_key = d->cfg->daemon.tls_key,
		.max_message = MAX_MESSAGE,
		.out_high_water = 8u << 20,
	};
	if (!sc.tls_cert != !sc.tls_key)
		return err_set(e, E_CONFIG,
			       "daemon.tls_cert and daemon.tls_key go together: set both for TLS, or neither");
	if (daemon_plan_descriptors(d, &sc, e) < 0)
		return -1;
	sc.unix_gid_set = socket_group(d, &sc.unix_gid);
	struct net_callbacks cb = { .arg = d,
				    .on_open = on_open,
				    .on_close = on_close,
				    .on_message = on_message,
				    .on_binary = on_binary,
				    .on_oversize = on_oversize,
				    .on_http_get = on_http_get,
				    .on_origin = on_origin };
	if (loop_add_signal(d->loop, SIGTERM, on_stop_signal, d, e) < 0 ||
	    loop_add_signal(d->loop, SIGINT, on_stop_signal, d, e) < 0 ||
	    loop_add_signal(d->loop, SIGHUP, on_hup, d, e) < 0 || loop_set_wake(d->loop, on_wake, d, e) < 0)
		return -1;
	d->server = net_server_start(d->loop, &sc, &cb, e);
	if (!d->server)
		return -1;
	daemon_set_origins(d, net_server_tcp_port(d->server));
	daemon_watch_db_size(d);
	log_info("serving on %s and %s://%s:%d (pid %d, mode %s)", sc.unix_path, sc.tls_cert ? "https" : "http",
		 sc.tcp_host, net_server_tcp_port(d->server), (int)getpid(),
		 config_user_mode_name(d->cfg->execution.unix_user_mode));
	daemon_terminals_sweep(d);
	daemon_worktrees_finish_removals(d);
	if (d->ready_fd >= 0) {
		(void)!write(d->ready_fd, "R", 1);
		close(d->ready_fd);
		d->ready_fd = -1;
	}
	int rc = loop_run(d->loop, e);
	net_server_free(d->server);
	d->server = NULL;
	log_info("stopped");
	return rc;
}
