/* node_daemon_fuzz.c — libFuzzer target over the gateway's side of the node protocol (lib/daemon_nodes.c): what
 * the daemon reads from connected nodes (node.hello, node.pair, node.event, node.ask, the answers to system.run)
 * through its message path (daemon_node_take_answer, then daemon_handle_message, as daemon_serve.c's on_message).
 * A daemon with its database on tmpfs is made once, with four nodes: A and B approved, P pending, V revoked, each
 * with its token, and two TCP connections from 127.0.0.1. The input is lines: "0…"/"1…" is a message from
 * connection 0/1 (in it, $A $B $P $V stand for the node ids and $R0…$R7 for the runs' ids, $H for the runs' argv
 * hash), "a"/"b" starts a run on node A/B (daemon_node_exec, as exec.run does), "c0"/"c1" closes a connection (a
 * new one takes its place). Invariants: a connection becomes a node only when it said node.hello with that
 * approved node's own token (never P, V, an unknown id or a wrong token); a run starts only on a connected node;
 * a run ends once, answered only by the connection that is its node, failed otherwise only by its node's
 * disconnection; a node's events are stored only for its own runs; every reply is JSON; no node changes a node's
 * status; when the connections close, no run is left. The daemon's state lives across inputs (its timers are freed
 * lazily), so libFuzzer's leak check after an input that ends with more allocations than frees soon turns itself
 * off (its INFO line says so); memory lost for good is still reported at exit. */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ftw.h>

#include "approvals_store.h"
#include "common.h"
#include "crypto.h"
#include "daemon.h"
#include "daemon_dispatch.h"
#include "daemon_limits.h"
#include "daemon_main.h"
#include "daemon_nodes.h"
#include "daemon_peer.h"
#include "json.h"
#include "log.h"
#include "net.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define PEERS	   2
#define MAX_RUNS   8
#define MAX_JUDGED 64

struct fixture_node {
	const char *name, *id, *token, *status;
};
static const struct fixture_node nodes[] = {
	{ "A", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "token-a", "approved" },
	{ "B", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "token-b", "approved" },
	{ "P", "cccccccccccccccccccccccccccccccc", "token-p", "pending" },
	{ "V", "dddddddddddddddddddddddddddddddd", "token-v", "revoked" },
};

struct run {
	char *id;
	const char *node;
	int done;
};

static struct daemon d;
static struct net_server *server;
static char home[PATH_MAX];
static struct net_conn *conns[PEERS], *opened;
static int client_fds[PEERS] = { -1, -1 };
static json_t *run_argv;
static char run_argv_sha256[CRYPTO_SHA256_HEX_LEN + 1];

/* One input's state. */
static struct daemon_peer *peers[PEERS];
static unsigned presented[PEERS]; /* bit k: the peer said node.hello with node k's id and token */
static struct run runs[MAX_RUNS];
static size_t nruns;
static int total_changes; /* the database's row changes after the last reset: none since, nothing to undo */
static int speaking = -1; /* the peer whose message is being handled, or the one being closed (closing) */
static int closing;
static long long last_message_id;
struct judged_reply {
	char *reply;
	size_t len;
};
static struct judged_reply judged[MAX_JUDGED]; /* the replies parsed as JSON, kept to spot a repeat */
static size_t njudged;
static int changes_seen; /* the database's row changes at the last look at its messages */

/* --- the connections ------------------------------------------------------------------------- */

static void on_open(struct net_conn *c, void *arg)
{
	(void)arg;
	opened = c;
}

static void on_close(struct net_conn *c, void *arg)
{
	(void)arg;
	for (int i = 0; i < PEERS; i++)
		if (conns[i] == c) {
			conns[i] = NULL;
			close(client_fds[i]);
			client_fds[i] = -1;
		}
}

static void on_message(struct net_conn *c, const char *data, size_t len, void *arg)
{
	(void)c, (void)data, (void)len, (void)arg; /* the clients never send */
}

static void stop_loop(struct loop *l, void *arg)
{
	(void)arg;
	loop_stop(l);
}

/* One turn of the daemon's loop: accepts, closes, deferred work. */
static void pump(void)
{
	struct err e = ERR_INIT;
	loop_timer_add(d.loop, 0, stop_loop, NULL);
	if (loop_run(d.loop, &e) < 0)
		abort();
}

static void connect_peer(int i)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)net_server_tcp_port(server)) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	client_fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (client_fds[i] < 0 || connect(client_fds[i], (struct sockaddr *)&sa, sizeof(sa)) < 0)
		abort();
	opened = NULL;
	for (int turns = 0; !opened; turns++)
		if (turns > 1000)
			abort();
		else
			pump();
	conns[i] = opened;
}

/* --- the daemon, made once ---------------------------------------------------------------------- */

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void clean_up(void)
{
	nftw(home, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void add_fixture_nodes(void)
{
	struct err e = ERR_INIT;
	for (size_t k = 0; k < ARRAY_SIZE(nodes); k++) {
		char hash[CRYPTO_SHA256_HEX_LEN + 1];
		crypto_sha256_hex(nodes[k].token, strlen(nodes[k].token), hash);
		if (db_run(d.db, &e,
			   "INSERT INTO nodes (id, display_name, token_sha256, status, created_at) VALUES (?,?,?,?,?)",
			   "ssssi", nodes[k].id, nodes[k].name, hash, nodes[k].status, (long long)k) < 0)
			abort();
	}
	/* an approval record for the runs' argv on node A: node.ask may find it */
	if (db_run(d.db, &e,
		   "INSERT INTO exec_approvals (id, argv_sha256, host, user_id, scope, decided_by, created_at, "
		   "expires_at) VALUES ('fuzz', ?, 'node:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', ?, 'allow-always', ?, 0, "
		   "9000000000000)",
		   "sss", run_argv_sha256, d.owner_id, d.owner_id) < 0)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	log_set_level(LOG_OFF); /* a log line per refused message would be most of the time spent */
	struct stat st;
	const char *tmp = stat("/dev/shm", &st) == 0 && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(home, sizeof(home), "%s/agor-node-daemon-fuzz-%d", tmp, (int)getpid());
	if (mkdir(home, 0700) < 0)
		abort();
	atexit(clean_up);
	char *const env[] = { (char *)"HOME=/nonexistent", NULL };
	struct config_overrides ov = { .env = env };
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	if (config_set_flag(cfg, "paths.agor_home", home, &e) < 0 || config_load(cfg, &ov, &e) < 0 ||
	    daemon_init(&d, cfg, &e) < 0) {
		fprintf(stderr, "node_daemon_fuzz: %s\n", e.message);
		abort();
	}
	log_set_level(LOG_OFF);
	run_argv = json_pack("[s,s]", "echo", "hi");
	appr_argv_sha256(run_argv, run_argv_sha256);
	add_fixture_nodes();
	total_changes = changes_seen = sqlite3_total_changes(d.db->sql);
	struct net_server_config sc = { .tcp_port = NET_TCP_EPHEMERAL, .header_timeout_ms = 1u << 30 };
	struct net_callbacks cb = { .on_open = on_open, .on_message = on_message, .on_close = on_close };
	server = net_server_start(d.loop, &sc, &cb, &e);
	if (!server)
		abort();
	return 0;
}

/* --- the invariants ---------------------------------------------------------------------------- */

static int node_index(const char *id)
{
	for (size_t k = 0; k < ARRAY_SIZE(nodes); k++)
		if (id && !strcmp(id, nodes[k].id))
			return (int)k;
	return -1;
}

/* Bit k of presented[i] for every node.hello in msg (an object or a batch) naming node k with its token. */
static void note_hellos(int i, const char *msg, size_t len)
{
	if (!memmem(msg, len, "node.hello", 10) && !memchr(msg, '\\', len))
		return; /* neither the bytes of "node.hello" nor an escape: no string in it is "node.hello" */
	json_t *m = json_loadb(msg, len, 0, NULL);
	json_t *one = json_is_array(m) ? NULL : m;
	for (size_t n = 0; one || n < json_array_size(m); n++, one = NULL) {
		json_t *call = one ? one : json_array_get(m, n);
		const char *method = json_get_str(call, "method");
		json_t *params = json_object_get(call, "params");
		int k = node_index(json_get_str(params, "nodeId"));
		const char *token = json_get_str(params, "token");
		if (method && !strcmp(method, "node.hello") && k >= 0 && token && !strcmp(token, nodes[k].token))
			presented[i] |= 1u << k;
		if (one)
			break;
	}
	json_decref(m);
}

/* A connection is a node only when it presented that approved node's token. */
static void check_identities(void)
{
	for (int i = 0; i < PEERS; i++) {
		int k = node_index(peers[i]->node_id);
		if (peers[i]->node_id && (k < 0 || strcmp(nodes[k].status, "approved") || !(presented[i] & (1u << k))))
			abort();
		if (peers[i]->user_id)
			abort(); /* a node never acts as an agor user */
	}
}

static struct run *run_named(const char *id)
{
	for (size_t n = 0; n < nruns; n++)
		if (!strcmp(runs[n].id, id))
			return &runs[n];
	return NULL;
}

static int speaker_is(const char *node)
{
	return speaking >= 0 && peers[speaking]->node_id && !strcmp(peers[speaking]->node_id, node);
}

/* A run ends once: answered (data) only by its own node's connection; failed by it, or by that connection going
 * (closed, or replaced by a newer node.hello of the same node with its token). */
static void run_done(struct daemon *dd, const char *task_id, const json_t *data, const struct err *error, void *arg)
{
	(void)dd, (void)arg;
	struct run *r = run_named(task_id);
	if (!r || r->done++)
		abort();
	int k = node_index(r->node);
	int replaced = speaking >= 0 && (presented[speaking] & (1u << k));
	if (data) {
		if (!speaker_is(r->node) || closing || strcmp(json_get_str(data, "runId"), r->id) ||
		    strcmp(json_get_str(json_object_get(data, "node"), "id"), r->node) ||
		    strcmp(json_get_str(data, "host"), "node"))
			abort();
	} else if (!error || !(speaker_is(r->node) || replaced)) {
		abort();
	}
}

/* The rows of messages stored since the last look belong to runs of the speaking node. No row changed since
 * then, no row to look at: most messages store none, and the query was about a tenth of the time. */
static void check_stored_events(void)
{
	if (sqlite3_total_changes(d.db->sql) == changes_seen)
		return;
	changes_seen = sqlite3_total_changes(d.db->sql);
	struct err e = ERR_INIT;
	json_t *rows = db_query_json(d.db, &e, "SELECT id, task_id FROM messages WHERE id > ? ORDER BY id", "i",
				     last_message_id);
	size_t n;
	json_t *row;
	if (!rows)
		abort();
	json_array_foreach(rows, n, row)
	{
		struct run *r = run_named(json_get_str(row, "task_id"));
		if (!r || !speaker_is(r->node))
			abort();
		last_message_id = json_integer_value(json_object_get(row, "id"));
	}
	json_decref(rows);
}

/* --- one input ------------------------------------------------------------------------------------ */

/* What the '$' at p[0] (n bytes left) stands for, added to out; the bytes it took. */
static size_t expand_one(const char *p, size_t n, struct strbuf *out)
{
	static const char names[] = "ABPV";
	const char *at = n > 1 && p[1] ? strchr(names, p[1]) : NULL;
	if (at) {
		strbuf_addstr(out, nodes[at - names].id);
		return 2;
	}
	if (n > 1 && p[1] == 'H') {
		strbuf_addstr(out, run_argv_sha256);
		return 2;
	}
	if (n > 2 && p[1] == 'R' && p[2] >= '0' && p[2] < '0' + MAX_RUNS) {
		size_t k = (size_t)(p[2] - '0');
		strbuf_addstr(out, k < nruns ? runs[k].id : "no-such-run");
		return 3;
	}
	strbuf_addch(out, '$');
	return 1;
}

/* line with $A $B $P $V, $R0..$R7 and $H replaced; the bytes between copied at once, not one by one (6% of
 * the time in perf). */
static void expand(const char *line, size_t len, struct strbuf *out)
{
	for (size_t i = 0; i < len;) {
		const char *dollar = memchr(line + i, '$', len - i);
		size_t plain = dollar ? (size_t)(dollar - line) - i : len - i;
		strbuf_add(out, line + i, plain);
		i += plain;
		if (i < len)
			i += expand_one(line + i, len - i, out);
	}
}

/* Every reply is JSON. One with the same bytes as a reply already parsed in this input is not parsed again:
 * messages repeat in mutated inputs, and so do their replies. Takes reply. */
static void check_reply(char *reply)
{
	size_t len = strlen(reply);
	for (size_t n = 0; n < njudged; n++)
		if (judged[n].len == len && !memcmp(judged[n].reply, reply, len)) {
			free(reply);
			return;
		}
	json_t *parsed = json_loads(reply, 0, NULL);
	if (!parsed)
		abort();
	json_decref(parsed);
	if (njudged < MAX_JUDGED)
		judged[njudged++] = (struct judged_reply){ reply, len };
	else
		free(reply);
}

static void deliver(int i, const char *line, size_t len)
{
	struct strbuf msg = STRBUF_INIT;
	expand(line, len, &msg);
	note_hellos(i, msg.buf, msg.len);
	speaking = i;
	if (!daemon_node_take_answer(&d, peers[i], msg.buf, msg.len)) {
		snprintf(d.caller, sizeof(d.caller), "%s", net_conn_remote_ip(peers[i]->conn)); /* as on_message */
		char *reply = daemon_handle_message(&d, peers[i], msg.buf, msg.len);
		d.caller[0] = '\0';
		if (reply)
			check_reply(reply);
	}
	check_stored_events();
	speaking = -1;
	check_identities();
	strbuf_release(&msg);
}

static void start_run(int k)
{
	if (nruns == MAX_RUNS)
		return;
	struct node_exec x = { .query = nodes[k].id,
			       .argv = run_argv,
			       .timeout_ms = 1000,
			       .security = "allowlist",
			       .created_by = d.owner_id,
			       .on_done = run_done };
	char *id = NULL;
	struct err e = ERR_INIT;
	if (daemon_node_exec(&d, &x, &id, &e) < 0) {
		if (!e.message)
			abort();
		err_clear(&e);
		return;
	}
	int connected = 0;
	for (int i = 0; i < PEERS; i++)
		connected |= peers[i]->node_id && !strcmp(peers[i]->node_id, nodes[k].id);
	if (!connected)
		abort(); /* a run only on a connected node */
	runs[nruns++] = (struct run){ .id = id, .node = nodes[k].id };
}

/* Both connections open before any peer uses one: a turn of the loop may free one that was closing. */
static void open_connections(void)
{
	for (int again = 1; again;) {
		again = 0;
		for (int i = 0; i < PEERS; i++)
			if (!conns[i]) {
				connect_peer(i);
				again = 1;
			}
	}
}

/* A peer on connection i (open: the loop does not turn within an input). */
static struct daemon_peer *new_peer(int i)
{
	struct daemon_peer *p = xcalloc(1, sizeof(*p));
	p->d = &d;
	p->conn = conns[i];
	p->uid = (uid_t)-1;
	presented[i] = 0;
	return p;
}

/* What daemon_serve.c's on_close does for a peer. */
static void close_peer(int i)
{
	struct daemon_peer *p = peers[i];
	speaking = i;
	closing = 1;
	for (size_t n = 0; n < p->npending; n++)
		daemon_pending_detach(p->pending[n]);
	daemon_node_closed(&d, p);
	closing = 0;
	speaking = -1;
	free(p->pending);
	free(p->user_id);
	free(p->token_jti);
	free(p->node_id);
	free(p);
	peers[i] = NULL;
}

static void check_fixture_unchanged(void)
{
	struct err e = ERR_INIT;
	for (size_t k = 0; k < ARRAY_SIZE(nodes); k++) {
		json_t *row = db_query_one(d.db, &e, "SELECT status FROM nodes WHERE id = ?", "s", nodes[k].id);
		if (!row || strcmp(json_get_str(row, "status"), nodes[k].status))
			abort(); /* no node approves, revokes or re-pairs a node */
		json_decref(row);
	}
}

/* The fixture's rows unchanged; this input's rows gone. */
static void undo_rows(void)
{
	check_fixture_unchanged();
	struct err e = ERR_INIT;
	if (db_exec(d.db,
		    "DELETE FROM messages; DELETE FROM tasks; DELETE FROM audit_log; DELETE FROM nodes WHERE id NOT IN "
		    "('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', "
		    "'cccccccccccccccccccccccccccccccc', 'dddddddddddddddddddddddddddddddd');",
		    &e) < 0)
		abort();
	last_message_id = 0;
	total_changes = changes_seen = sqlite3_total_changes(d.db->sql);
}

/* Back to the fixture: no connection, no run, no row of this input's. */
static void reset(void)
{
	for (int i = 0; i < PEERS; i++)
		close_peer(i);
	for (size_t n = 0; n < nruns; n++) {
		if (runs[n].done != 1)
			abort(); /* a run left behind when its node went */
		free(runs[n].id);
	}
	nruns = 0;
	for (size_t n = 0; n < njudged; n++)
		free(judged[n].reply);
	njudged = 0;
	daemon_flush_refusals(&d); /* its window's timer would keep the cancelled ones below it alive */
	daemon_commit_write_batch(&d);
	daemon_nodes_release(&d);			       /* the node.pair rate counts, too */
	if (sqlite3_total_changes(d.db->sql) != total_changes) /* most inputs change no row: a query less each */
		undo_rows();
	pump(); /* a replaced node's connection closes here; new_peer connects another */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	open_connections();
	for (int i = 0; i < PEERS; i++)
		peers[i] = new_peer(i);
	for (size_t off = 0; off < size;) {
		const char *nl = memchr(text + off, '\n', size - off);
		size_t len = nl ? (size_t)(nl - text - off) : size - off;
		const char *line = text + off;
		if (len && (line[0] == '0' || line[0] == '1'))
			deliver(line[0] - '0', line + 1, len - 1);
		else if (len && (line[0] == 'a' || line[0] == 'b'))
			start_run(line[0] - 'a');
		else if (len > 1 && line[0] == 'c' && (line[1] == '0' || line[1] == '1')) {
			close_peer(line[1] - '0');
			peers[line[1] - '0'] = new_peer(line[1] - '0');
		}
		off += len + 1;
	}
	reset();
	return 0;
}
