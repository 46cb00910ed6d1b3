/* daemon_nodes.c — paired nodes on the gateway (daemon_nodes.h): pairing, node auth, exec.run routed to a
 * node and its events. Never stores a node token (only its SHA-256); never runs anything itself. */
#include <string.h>

#include "approvals_socket.h"
#include "approvals_store.h"
#include "crypto.h"
#include "daemon_access.h"
#include "daemon_gateway.h"
#include "daemon_limits.h"
#include "daemon_nodes.h"
#include "daemon_peer.h"
#include "daemon_tasks.h"
#include "json.h"
#include "log.h"
#include "net.h"
#include "node_select.h"
#include "rpc.h"
#include "rpcclient.h"
#include "banned.h"

#define MAX_PENDING_NODES   64
#define DISPLAY_NAME_MAX    64
#define PAIR_RATE_WINDOW_MS 60000
#define PAIR_RATE_ADDRESSES 256 /* addresses whose node.pair calls are counted at once */

struct node_link { /* a connected, approved node */
	struct node_link *next;
	char *node_id;
	char *display_name;
	char ip[64];
	struct daemon_peer *peer;
};

struct node_run { /* a system.run waiting for its node's answer */
	struct node_run *next;
	struct daemon *d;
	char *run_id;
	char *node_id;
	char *node_name;
	char *session_id;
	char *created_by;
	char *owner;
	json_t *argv;
	char argv_sha256[CRYPTO_SHA256_HEX_LEN + 1];
	struct loop_timer *timer;
	task_done_fn on_done;
	void *arg;
};

struct node_ask_reply { /* a node.ask waiting for a person */
	struct pending_reply *pr;
	char argv_sha256[CRYPTO_SHA256_HEX_LEN + 1];
};

struct pair_rate { /* node.pair calls from one address in its current minute */
	char ip[64];
	uint64_t window_start;
	unsigned calls;
};

struct node_state {
	struct node_link *links;
	struct node_run *runs;
	struct pair_rate pair_rates[PAIR_RATE_ADDRESSES];
};

static struct node_state *state(struct daemon *d)
{
	if (!d->nodes)
		d->nodes = xcalloc(1, sizeof(*d->nodes));
	return d->nodes;
}

static struct node_link *link_of(struct daemon *d, const char *node_id)
{
	for (struct node_link *l = state(d)->links; l; l = l->next)
		if (!strcmp(l->node_id, node_id))
			return l;
	return NULL;
}

static void link_free(struct node_link *l)
{
	free(l->node_id);
	free(l->display_name);
	free(l);
}

static void unlink_node(struct daemon *d, struct node_link *gone)
{
	for (struct node_link **p = &state(d)->links; *p; p = &(*p)->next)
		if (*p == gone) {
			*p = gone->next;
			link_free(gone);
			return;
		}
}

static int need_node_admin(struct rpc_ctx *rc, struct err *e)
{
	if (daemon_peer_token_live(D(rc), P(rc), e) < 0)
		return -1;
	if (!P(rc)->user_id || !P(rc)->is_admin)
		return err_set(e, E_PERMISSION_DENIED,
			       "only an admin may manage nodes (on the daemon's host: agor nodes …)");
	return 0;
}

/* --- pairing -------------------------------------------------------------------------------- */

static int valid_display_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > DISPLAY_NAME_MAX)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static int valid_sha256_hex(const char *s)
{
	if (!s || strlen(s) != CRYPTO_SHA256_HEX_LEN)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

/* Pending pairing requests: all of them, or those from one address. -1 on a database error. */
static long long pending_count(struct daemon *d, const char *from, struct err *e)
{
	json_t *row = from ? db_query_one(d->db, e,
					  "SELECT count(*) AS n FROM nodes WHERE status = 'pending' AND "
					  "requested_from = ?",
					  "s", from)
			   : db_query_one(d->db, e, "SELECT count(*) AS n FROM nodes WHERE status = 'pending'", "");
	if (!row)
		return -1;
	long long n = json_integer_value(json_object_get(row, "n"));
	json_decref(row);
	return n;
}

static int too_many_pending(struct daemon *d, const char *from, struct err *e)
{
	long long per_ip = d->cfg->daemon.node_pair_pending_per_ip, n = pending_count(d, from, e);
	if (n < 0)
		return -1;
	if (n >= per_ip)
		return err_set(e, E_PERMISSION_DENIED,
			       "%lld pending pairing requests from %s already "
			       "(daemon.node_pair_pending_per_ip): an admin approves or revokes them "
			       "first (agor nodes list)",
			       n, from);
	if ((n = pending_count(d, NULL, e)) < 0)
		return -1;
	if (n >= MAX_PENDING_NODES)
		return err_set(e, E_PERMISSION_DENIED,
			       "too many pending pairing requests (%d): an admin must approve or "
			       "revoke some first (agor nodes list)",
			       MAX_PENDING_NODES);
	return 0;
}

/* The count of node.pair calls from ip in its current minute, with this one; 0 when no slot is free (every slot
 * counts another address whose minute is not over). */
static unsigned count_pair_call(struct daemon *d, const char *ip)
{
	struct pair_rate *free_slot = NULL;
	uint64_t now = loop_now_ms();
	for (size_t i = 0; i < PAIR_RATE_ADDRESSES; i++) {
		struct pair_rate *r = &state(d)->pair_rates[i];
		int expired = !r->ip[0] || now - r->window_start >= PAIR_RATE_WINDOW_MS;
		if (r->ip[0] && !strcmp(r->ip, ip)) {
			if (expired) {
				r->window_start = now;
				r->calls = 0;
			}
			return ++r->calls;
		}
		if (expired && !free_slot)
			free_slot = r;
	}
	if (!free_slot)
		return 0;
	snprintf(free_slot->ip, sizeof(free_slot->ip), "%s", ip);
	free_slot->window_start = now;
	free_slot->calls = 1;
	return 1;
}

/* Who may file a pairing request, and how often: not a page in a browser without a user token, at most
 * daemon.node_pair_per_minute calls per address. */
static int pairing_allowed(struct rpc_ctx *rc, const char *from, struct err *e)
{
	long long per_minute = D(rc)->cfg->daemon.node_pair_per_minute;
	if (net_conn_from_browser(P(rc)->conn) && !P(rc)->user_id)
		return err_set(e, E_PERMISSION_DENIED,
			       "node.pair from a browser needs a user token (auth.token first): "
			       "a web page may not file pairing requests; a node pairs with `agor "
			       "node pair`");
	unsigned calls = count_pair_call(D(rc), from);
	if (!calls)
		return err_set(e, E_PERMISSION_DENIED,
			       "too many addresses are pairing right now: try again in a minute");
	if (calls > per_minute)
		return err_set(e, E_PERMISSION_DENIED,
			       "more than %lld node.pair calls per minute from %s "
			       "(daemon.node_pair_per_minute): try again in a minute",
			       per_minute, from);
	return 0;
}

/* node.pair {displayName, tokenSha256} → {nodeId, status: "pending"}. */
int method_node_pair(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *name = json_get_str(params, "displayName"), *hash = json_get_str(params, "tokenSha256");
	if (!name || !valid_display_name(name))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "displayName"),
				"params.displayName: required, 1..%d printable characters", DISPLAY_NAME_MAX);
	if (!valid_sha256_hex(hash))
		return err_setd(
			e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "tokenSha256"),
			"params.tokenSha256: required, 64 lowercase hex digits (the SHA-256 of the node's token)");
	const char *from = net_conn_remote_ip(P(rc)->conn);
	if (pairing_allowed(rc, from, e) < 0 || too_many_pending(D(rc), from, e) < 0) {
		if (!strcmp(e->code, E_PERMISSION_DENIED))
			daemon_audit_refusal(D(rc), from, "node.pair", NULL, json_pack("{s:s}", "reason", e->message));
		return -1;
	}
	_cleanup_free_ char *id = daemon_new_id();
	if (db_run(D(rc)->db, e,
		   "INSERT INTO nodes (id, display_name, token_sha256, status, requested_from, created_at) "
		   "VALUES (?, ?, ?, 'pending', ?, ?)",
		   "ssssi", id, name, hash, from, daemon_now()) < 0)
		return -1;
	daemon_audit(D(rc), from, "node.pair", id, "pending", json_pack("{s:s}", "displayName", name));
	log_info("node pairing request %s (%s) from %s: approve with `agor nodes approve %s`", id, name, from, id);
	*result = json_pack("{s:s,s:s}", "nodeId", id, "status", "pending");
	return 0;
}

/* The node's row when token is its token (any status), else NULL with AUTH_FAILED. */
static json_t *node_with_token(struct daemon *d, const char *node_id, const char *token, struct err *e)
{
	json_t *row = db_query_one(d->db, e, "SELECT id, display_name, status, token_sha256 FROM nodes WHERE id = ?",
				   "s", node_id);
	if (!row)
		return NULL;
	char hex[CRYPTO_SHA256_HEX_LEN + 1];
	crypto_sha256_hex(token, strlen(token), hex);
	const char *want = json_get_str(row, "token_sha256");
	if (!want || strlen(want) != CRYPTO_SHA256_HEX_LEN || !crypto_equal(hex, want, CRYPTO_SHA256_HEX_LEN)) {
		json_decref(row);
		err_set(e, E_AUTH_FAILED, "node.hello: unknown node or wrong token (pair again: agor node pair)");
		return NULL;
	}
	return row;
}

static void become_node(struct daemon *d, struct daemon_peer *p, const json_t *row)
{
	const char *id = json_get_str(row, "id");
	struct node_link *old = link_of(d, id);
	if (old) { /* a reconnecting node: the older connection is stale, and so are its runs */
		struct daemon_peer *stale = old->peer;
		daemon_node_closed(d, stale);
		net_conn_close(stale->conn);
	}
	struct node_link *l = xcalloc(1, sizeof(*l));
	l->node_id = xstrdup(id);
	l->display_name = xstrdup(json_get_str(row, "display_name"));
	snprintf(l->ip, sizeof(l->ip), "%s", net_conn_remote_ip(p->conn));
	l->peer = p;
	l->next = state(d)->links;
	state(d)->links = l;
	free(p->node_id);
	p->node_id = xstrdup(id);
	struct err e = ERR_INIT;
	db_run(d->db, &e, "UPDATE nodes SET last_ip = ?, last_seen_at = ? WHERE id = ?", "sis", l->ip, daemon_now(),
	       id);
	err_clear(&e);
	log_info("node %s (%s) connected from %s", id, l->display_name, l->ip);
}

/* node.hello {nodeId, token} → {status, nodeId, displayName}. */
int method_node_hello(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *id = json_get_str(params, "nodeId"), *token = json_get_str(params, "token");
	if (!id || !token)
		return err_set(e, E_INVALID_PAYLOAD, "node.hello: params.nodeId and params.token are required");
	if (P(rc)->user_id)
		return err_set(e, E_INVALID_PAYLOAD, "node.hello: this connection already acts as an agor user");
	if (P(rc)->node_id && strcmp(P(rc)->node_id, id)) /* its link and runs would outlive the connection */
		return err_set(e, E_INVALID_PAYLOAD, "node.hello: this connection is already node %s", P(rc)->node_id);
	json_t *row = node_with_token(D(rc), id, token, e);
	const char *status = row ? json_get_str(row, "status") : NULL;
	if (status && !strcmp(status, "revoked")) {
		err_set(e, E_AUTH_FAILED, "node.hello: node %s was revoked (pair again: agor node pair)", id);
		json_decref(row);
		row = NULL;
	}
	if (!row) {
		daemon_audit_refusal(D(rc), net_conn_remote_ip(P(rc)->conn), "node.hello", id, NULL);
		return -1;
	}
	if (!strcmp(status, "approved"))
		become_node(D(rc), P(rc), row);
	*result = json_pack("{s:s,s:s,s:s}", "status", status, "nodeId", id, "displayName",
			    json_get_str(row, "display_name"));
	json_decref(row);
	return 0;
}

/* --- the operator's commands ------------------------------------------------------------------- */

int method_nodes_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)params;
	if (need_node_admin(rc, e) < 0)
		return -1;
	*result = db_query_json(D(rc)->db, e,
				"SELECT id, display_name, status, requested_from, last_ip, created_at, "
				"decided_at, last_seen_at FROM nodes ORDER BY created_at",
				"");
	if (!*result)
		return -1;
	size_t i;
	json_t *row;
	json_array_foreach(*result, i, row)
		json_object_set_new(row, "connected", json_boolean(link_of(D(rc), json_get_str(row, "id")) != NULL));
	return 0;
}

/* The node a query names among the rows sql selects (no parameters). */
static json_t *node_by_query(struct daemon *d, const char *sql, const char *query, struct err *e)
{
	json_t *rows = db_query_json(d->db, e, sql, "");
	if (!rows)
		return NULL;
	size_t n = json_array_size(rows);
	struct node_candidate *c = xcalloc(n ? n : 1, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		json_t *row = json_array_get(rows, i);
		struct node_link *l = link_of(d, json_get_str(row, "id"));
		c[i] = (struct node_candidate){ json_get_str(row, "id"), json_get_str(row, "display_name"),
						l ? l->ip : json_get_str(row, "last_ip"), l != NULL };
	}
	int picked = node_select(c, n, query, e);
	json_t *row = picked >= 0 ? json_incref(json_array_get(rows, (size_t)picked)) : NULL;
	free(c);
	json_decref(rows);
	return row;
}

static int decide(struct rpc_ctx *rc, json_t *params, const char *from_sql, const char *status, json_t **result,
		  struct err *e)
{
	const char *query = json_get_str(params, "id");
	if (need_node_admin(rc, e) < 0)
		return -1;
	if (!query)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "id"),
				"params.id: required (a node id, "
				"id prefix of 6+ characters, IP or display name)");
	json_t *row = node_by_query(D(rc), from_sql, query, e);
	if (!row)
		return -1;
	const char *id = json_get_str(row, "id");
	int rv = db_run(D(rc)->db, e, "UPDATE nodes SET status = ?, decided_at = ?, decided_by = ? WHERE id = ?",
			"siss", status, daemon_now(), P(rc)->user_id, id);
	if (rv >= 0) {
		daemon_audit(D(rc), P(rc)->user_id, strcmp(status, "revoked") ? "nodes.approve" : "nodes.revoke", id,
			     "ok", NULL);
		*result = json_pack("{s:s,s:s,s:s}", "id", id, "display_name", json_get_str(row, "display_name"),
				    "status", status);
	}
	struct node_link *l = rv >= 0 && !strcmp(status, "revoked") ? link_of(D(rc), id) : NULL;
	if (l) { /* the token stops working now, not at the next connection */
		struct net_conn *conn = l->peer->conn;
		log_info("node %s revoked: closing its connection", id);
		net_conn_close(conn);
	}
	json_decref(row);
	return rv < 0 ? -1 : 0;
}

int method_nodes_approve(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	return decide(rc, params,
		      "SELECT id, display_name, requested_from AS last_ip FROM nodes WHERE status = 'pending' "
		      "ORDER BY created_at",
		      "approved", result, e);
}

int method_nodes_revoke(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	return decide(rc, params,
		      "SELECT id, display_name, last_ip FROM nodes WHERE status != 'revoked' "
		      "ORDER BY created_at",
		      "revoked", result, e);
}

/* --- runs ----------------------------------------------------------------------------------- */

static struct node_run *run_of(struct daemon *d, const char *run_id)
{
	for (struct node_run *r = state(d)->runs; r; r = r->next)
		if (!strcmp(r->run_id, run_id))
			return r;
	return NULL;
}

static void run_free(struct node_run *r)
{
	free(r->run_id);
	free(r->node_id);
	free(r->node_name);
	free(r->session_id);
	free(r->created_by);
	free(r->owner);
	json_decref(r->argv);
	free(r);
}

/* Ends a run: task row, audit, on_done, task.updated; data and failure may each be NULL. */
static void finish_run(struct daemon *d, struct node_run *run, json_t *data, const struct err *failure)
{
	for (struct node_run **p = &state(d)->runs; *p; p = &(*p)->next)
		if (*p == run) {
			*p = run->next;
			break;
		}
	if (run->timer)
		loop_timer_cancel(d->loop, run->timer);
	const char *status = failure ? "failed" : "completed";
	_cleanup_free_ char *result_text = data ? json_to_compact(data) : NULL;
	json_t *err_json = failure ? err_to_json(failure) : NULL;
	_cleanup_free_ char *error_text = err_json ? json_to_compact(err_json) : NULL;
	struct err e = ERR_INIT;
	if (db_run(d->db, &e, "UPDATE tasks SET status = ?, result = ?, error = ?, finished_at = ? WHERE id = ?",
		   "sssis", status, result_text, error_text, daemon_now(), run->run_id) < 0)
		daemon_tasks_ending_lost(d, run->run_id, &e);
	daemon_note_task_ending(d, run->run_id);
	err_clear(&e);
	daemon_audit(d, run->created_by, "exec.run", run->run_id, status,
		     json_pack("{s:s,s:s,s:O?}", "host", "node", "node", run->node_id, "error", err_json));
	if (run->on_done)
		run->on_done(d, run->run_id, data, failure, run->arg);
	json_t *event = json_pack("{s:s,s:s,s:s}", "id", run->run_id, "status", status, "command", "exec.run");
	if (err_json)
		json_object_set_new(event, "error", err_json);
	daemon_broadcast_to(d, run->created_by, "task.updated", event);
	run_free(run);
}

static void fail_run(struct daemon *d, struct node_run *run, const char *what, const char *why)
{
	struct err e = ERR_INIT;
	err_setd(&e, E_EXEC_FAILED, json_pack("{s:s,s:s}", "node", run->node_id, "reason", what), "node %s (%s) %s",
		 run->node_name, run->node_id, why);
	finish_run(d, run, NULL, &e);
	err_clear(&e);
}

static void run_timed_out(struct loop *l, void *arg)
{
	(void)l;
	struct node_run *run = arg;
	run->timer = NULL; /* the loop frees a timer once it fired */
	fail_run(run->d, run, "no-answer", "did not answer within the run's timeout");
}

static json_t *system_run_params(const struct node_exec *x, const char *run_id, long long timeout_ms)
{
	json_t *p = json_pack("{s:O,s:s,s:I,s:s}", "argv", x->argv, "runId", run_id, "timeoutMs",
			      (json_int_t)timeout_ms, "security", x->security);
	if (x->cwd)
		json_object_set_new(p, "cwd", json_string(x->cwd));
	if (x->env)
		json_object_set(p, "env", x->env);
	if (x->ask)
		json_object_set_new(p, "ask", json_string(x->ask));
	if (x->agent_id)
		json_object_set_new(p, "agentId", json_string(x->agent_id));
	return p;
}

/* The approved node query names. One it names that is not approved (pending, revoked) is named with its state
 * and what to do, rather than as unknown. */
static json_t *approved_node(struct daemon *d, const char *approved_sql, const char *query, struct err *e)
{
	json_t *row = node_by_query(d, approved_sql, query, e);
	if (row || strcmp(e->code, E_NOT_FOUND))
		return row;
	struct err other = ERR_INIT;
	_cleanup_json_ json_t *any = node_by_query(d,
						   "SELECT id, display_name, last_ip, status FROM nodes ORDER BY "
						   "created_at",
						   query, &other);
	err_clear(&other);
	const char *status = json_get_str(any, "status"), *id = json_get_str(any, "id");
	if (!status)
		return NULL;
	err_clear(e);
	if (!strcmp(status, "pending"))
		err_set(e, E_NOT_FOUND, "node %s (%.8s) waits for approval: an admin runs `agor nodes approve %.8s`",
			query, id, id);
	else
		err_set(e, E_NOT_FOUND,
			"node %s (%.8s) is %s: on the node, pair it again (`agor node pair --gateway "
			"URL`), then approve it here (`agor nodes approve ID`)",
			query, id, status);
	return NULL;
}

static json_t *target_node(struct daemon *d, const char *query, struct err *e)
{
	static const char approved[] = "SELECT id, display_name, last_ip FROM nodes WHERE status = 'approved' "
				       "ORDER BY created_at";
	if (query)
		return approved_node(d, approved, query, e);
	json_t *rows = db_query_json(d->db, e, approved, "");
	if (!rows)
		return NULL;
	json_t *only = json_array_size(rows) == 1 ? json_incref(json_array_get(rows, 0)) : NULL;
	if (!json_array_size(rows))
		err_set(e, E_NOT_FOUND,
			"host \"node\": no node is paired (on the node: agor node pair --gateway URL; "
			"then here: agor nodes approve ID)");
	else if (!only)
		err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "node"),
			 "params.node: required when %zu nodes are paired (a node id, id prefix, IP or display name; "
			 "see agor nodes list)",
			 json_array_size(rows));
	json_decref(rows);
	return only;
}

static int store_run_task(struct daemon *d, const struct node_exec *x, const char *run_id, const char *node_id,
			  struct err *e)
{
	_cleanup_free_ char *who = xasprintf("node:%s", node_id);
	long long now = daemon_now();
	return db_run(d->db, e,
		      "INSERT INTO tasks (id, session_id, command, status, created_by, execution_user, "
		      "created_at, started_at) VALUES (?, ?, 'exec.run', 'running', ?, ?, ?, ?)",
		      "ssssii", run_id, x->session_id, x->created_by, who, now, now) < 0
		       ? -1
		       : 0;
}

int daemon_node_exec(struct daemon *d, const struct node_exec *x, char **run_id, struct err *e)
{
	_cleanup_json_ json_t *node = target_node(d, x->query, e);
	if (!node)
		return -1;
	const char *node_id = json_get_str(node, "id"), *name = json_get_str(node, "display_name");
	struct node_link *l = link_of(d, node_id);
	if (!l)
		return err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "node", node_id),
				"node %s (%s) is paired but not connected (is `agor node run` running there?)", name,
				node_id);
	long long timeout_ms = x->timeout_ms > 0 ? x->timeout_ms : NODE_DEFAULT_TIMEOUT_MS;
	char *id = daemon_new_id();
	if (store_run_task(d, x, id, node_id, e) < 0) {
		free(id);
		return -1;
	}
	struct node_run *run = xcalloc(1, sizeof(*run));
	*run = (struct node_run){ .next = state(d)->runs,
				  .d = d,
				  .run_id = xstrdup(id),
				  .node_id = xstrdup(node_id),
				  .node_name = xstrdup(name),
				  .session_id = x->session_id ? xstrdup(x->session_id) : NULL,
				  .created_by = xstrdup(x->created_by),
				  .on_done = x->on_done,
				  .arg = x->arg };
	run->owner = xstrdup(x->owner ? x->owner : x->created_by);
	run->argv = json_deep_copy(x->argv);
	appr_argv_sha256(run->argv, run->argv_sha256);
	state(d)->runs = run;
	run->timer = loop_timer_add(d->loop, (uint64_t)(timeout_ms + NODE_ANSWER_GRACE_MS), run_timed_out, run);
	json_t *req = json_pack("{s:s,s:s,s:s,s:o}", "jsonrpc", "2.0", "id", id, "method", "system.run", "params",
				system_run_params(x, id, timeout_ms));
	_cleanup_free_ char *text = json_to_compact(req);
	json_decref(req);
	net_send(l->peer->conn, text, strlen(text));
	*run_id = id;
	return 0;
}

/* The node's answer: {exitCode, timedOut, success, output, denied?, reason?} → the run's data. */
static void answer_run(struct daemon *d, struct node_run *run, json_t *msg)
{
	json_t *res = json_object_get(msg, "result");
	struct err e = ERR_INIT;
	if (!json_is_object(res)) {
		rpc_error_to_err(json_object_get(msg, "error"), &e);
		err_prefix(&e, "node %s could not run the command", run->node_name);
		finish_run(d, run, NULL, &e);
		err_clear(&e);
		return;
	}
	json_t *data = json_deep_copy(res);
	json_object_set_new(data, "host", json_string("node"));
	json_object_set_new(data, "node", json_pack("{s:s,s:s}", "id", run->node_id, "displayName", run->node_name));
	json_object_set_new(data, "runId", json_string(run->run_id));
	if (json_is_true(json_object_get(res, "denied")))
		err_set(&e, E_PERMISSION_DENIED, "denied by node %s's local policy (%s)", run->node_name,
			json_get_str(res, "reason") ? json_get_str(res, "reason") : "no reason given");
	else if (!json_is_true(json_object_get(res, "success")))
		err_set(&e, E_EXEC_FAILED, "the program ended with outcome %s (exit code %lld) on node %s",
			json_is_true(json_object_get(res, "timedOut")) ? "timeout" : "failed",
			(long long)json_integer_value(json_object_get(res, "exitCode")), run->node_name);
	finish_run(d, run, data, e.code ? &e : NULL);
	json_decref(data);
	err_clear(&e);
}

int daemon_node_take_answer(struct daemon *d, struct daemon_peer *p, const char *msg, size_t len)
{
	if (!p || !p->node_id)
		return 0;
	struct err e = ERR_INIT;
	json_t *m = json_parse(msg, len, &e);
	err_clear(&e);
	if (!json_is_object(m) || json_object_get(m, "method")) {
		json_decref(m);
		return 0;
	}
	const char *id = json_get_str(m, "id");
	struct node_run *run = id ? run_of(d, id) : NULL;
	if (run && !strcmp(run->node_id, p->node_id))
		answer_run(d, run, m);
	else
		log_warn("node %s answered an unknown run %s: ignored", p->node_id, id ? id : "(no id)");
	json_decref(m);
	return 1;
}

void daemon_node_closed(struct daemon *d, struct daemon_peer *p)
{
	if (!p->node_id)
		return;
	struct node_link *l = link_of(d, p->node_id);
	if (l && l->peer == p)
		unlink_node(d, l);
	log_info("node %s disconnected", p->node_id);
	struct node_run *run = state(d)->runs;
	while (run) {
		struct node_run *next = run->next;
		if (!strcmp(run->node_id, p->node_id))
			fail_run(d, run, "disconnected",
				 "disconnected during the run: the command's outcome is unknown");
		run = next;
	}
	free(p->node_id);
	p->node_id = NULL;
}

/* --- events --------------------------------------------------------------------------------- */

static int is_exec_event(const char *type)
{
	return type &&
	       (!strcmp(type, "exec.started") || !strcmp(type, "exec.finished") || !strcmp(type, "exec.denied"));
}

/* node.event {runId, type, data}: only from the node that runs runId. */
int method_node_event(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *run_id = json_get_str(params, "runId"), *type = json_get_str(params, "type");
	json_t *data = json_object_get(params, "data");
	if (!P(rc)->node_id)
		return err_set(e, E_AUTH_FAILED,
			       "node.event: this connection is not an authenticated node (node.hello)");
	struct node_run *run = run_id ? run_of(D(rc), run_id) : NULL;
	if (!run || strcmp(run->node_id, P(rc)->node_id))
		return err_set(e, E_NOT_FOUND, "node.event: no run %s on this node",
			       run_id ? run_id : "(missing runId)");
	if (!is_exec_event(type) || !json_is_object(data))
		return err_set(e, E_INVALID_PAYLOAD,
			       "node.event: params.type must be exec.started|exec.finished|exec.denied "
			       "and params.data an object");
	json_t *event = json_deep_copy(data);
	json_object_set_new(event, "runId", json_string(run->run_id));
	json_object_set_new(event, "node", json_pack("{s:s,s:s}", "id", run->node_id, "displayName", run->node_name));
	if (run->session_id)
		json_object_set_new(event, "sessionId", json_string(run->session_id));
	_cleanup_free_ char *text = json_to_compact(event);
	if (db_run(D(rc)->db, e,
		   "INSERT INTO messages (task_id, session_id, message_type, data, created_at) "
		   "VALUES (?, ?, ?, ?, ?)",
		   "ssssi", run->run_id, run->session_id, type, text, daemon_now()) < 0) {
		json_decref(event);
		return -1;
	}
	daemon_broadcast_to(D(rc), run->created_by, type, event);
	*result = json_pack("{s:b}", "stored", 1);
	return 0;
}

static void node_asked(struct daemon *d, int verdict, const char *why, void *arg)
{
	(void)d;
	struct node_ask_reply *r = arg;
	const char *decision = verdict > 0 ? "approved" : verdict == 0 ? "denied" : "unanswered";
	daemon_reply_finish(
		r->pr, json_pack("{s:s,s:s,s:s}", "decision", decision, "argvSha256", r->argv_sha256, "reason", why),
		NULL);
	free(r);
}

/* node.ask {runId, argvSha256, executables?}: the node's own policy asks; the gateway's approval records decide.
 * executables (what the node's approvals exec checked) is shown to whoever is asked, as the node's claim. */
int method_node_ask(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)result;
	const char *run_id = json_get_str(params, "runId"), *hash = json_get_str(params, "argvSha256");
	if (!P(rc)->node_id)
		return err_set(e, E_AUTH_FAILED, "node.ask: this connection is not an authenticated node (node.hello)");
	struct node_run *run = run_id ? run_of(D(rc), run_id) : NULL;
	if (!run || strcmp(run->node_id, P(rc)->node_id))
		return err_set(e, E_NOT_FOUND, "node.ask: no run %s on this node", run_id ? run_id : "(missing runId)");
	if (!hash || strcmp(hash, run->argv_sha256))
		return err_set(e, E_PERMISSION_DENIED, "node.ask: params.argvSha256 is not the hash of run %s's argv",
			       run_id);
	if (!rc->id || rc->in_batch)
		return err_set(e, E_INVALID_PAYLOAD, "node.ask: a call with an id, outside a batch");
	struct node_ask_reply *r = xcalloc(1, sizeof(*r));
	r->pr = daemon_reply_defer(rc);
	snprintf(r->argv_sha256, sizeof(r->argv_sha256), "%s", run->argv_sha256);
	_cleanup_free_ char *host = xasprintf("node:%s", run->node_id), *where = xasprintf("node %s", run->node_name);
	json_t *exes = json_object_get(params, "executables"); /* what the node checked, shown as its claim */
	_cleanup_err_ struct err bad = ERR_INIT;
	if (exes && appr_executables_check(exes, &bad) < 0)
		exes = NULL;
	struct exec_approval_ask a = { host,
				       run->run_id,
				       run->session_id,
				       run->created_by,
				       run->owner,
				       run->argv,
				       run->argv_sha256,
				       where,
				       exes,
				       node_asked,
				       r };
	daemon_exec_approval(D(rc), &a);
	return RPC_DEFERRED;
}

void daemon_nodes_release(struct daemon *d)
{
	if (!d->nodes)
		return;
	while (d->nodes->links) {
		struct node_link *l = d->nodes->links;
		d->nodes->links = l->next;
		link_free(l);
	}
	while (d->nodes->runs) {
		struct node_run *r = d->nodes->runs;
		d->nodes->runs = r->next;
		run_free(r);
	}
	free(d->nodes);
	d->nodes = NULL;
}
