/* daemon_nodes.h — the gateway side of paired nodes: pairing requests, node connections and their auth,
 * exec.run routed to a node (system.run) and the node's exec events. Never lets a node act as a user. */
#ifndef AGOR_DAEMON_NODES_H
#define AGOR_DAEMON_NODES_H

/*
 * Contract
 * --------
 * Pairing: node.pair {displayName, tokenSha256} (any caller, TCP included) stores a pending node and
 * answers {nodeId, status:"pending"}; the node keeps the token, the daemon only its SHA-256. An admin
 * approves or revokes with nodes.approve|nodes.revoke {id} (id: a node query, see node_select.h).
 * node.hello {nodeId, token} answers {status:"pending"} while pending; once approved the connection
 * becomes that node (a newer connection of the same node replaces the older one); a revoked, unknown or
 * wrong token is AUTH_FAILED; a connection is one node: node.hello naming another node on a connection that
 * already is one is INVALID_PAYLOAD. Revoking closes the node's live connection at once; the status lives in
 * the database, so it survives a restart.
 *
 * Runs: daemon_node_exec selects an approved, connected node, stores a task row (command exec.run,
 * status running, execution_user "node:<id>"), and sends {"id":runId,"method":"system.run",...} on the
 * node's connection. The node's response ends the run: completed when the command succeeded, failed
 * otherwise (denied, exit ≠ 0, timeout). The node disconnecting or not answering within the run's
 * timeout + NODE_ANSWER_GRACE_MS fails it with the reason. on_done gets the result data (when the node
 * answered) and the failure (when the run failed), like task_done_fn.
 * Events: node.event {runId, type: exec.started|exec.finished|exec.denied, data} from the node that
 * runs runId is stored as a message of the run's task (and session) and pushed to its creator.
 * Asks: node.ask {runId, argvSha256} from the node that runs runId, when its own policy asks: argvSha256
 * must be the hash of the run's argv; the gateway's exec approval (daemon_gateway.h, host "node:<id>")
 * answers {decision: approved|denied|unanswered, argvSha256, reason} — approved only by an approval record.
 */

#include <jansson.h>

#include "daemon.h"
#include "daemon_peer.h"
#include "daemon_tasks.h"
#include "rpc.h"

#define NODE_ANSWER_GRACE_MS	30000
#define NODE_DEFAULT_TIMEOUT_MS 300000

RPC_METHOD(method_node_ask);	  /* node.ask */
RPC_METHOD(method_node_event);	  /* node.event */
RPC_METHOD(method_node_hello);	  /* node.hello */
RPC_METHOD(method_node_pair);	  /* node.pair */
RPC_METHOD(method_nodes_approve); /* nodes.approve */
RPC_METHOD(method_nodes_list);	  /* nodes.list */
RPC_METHOD(method_nodes_revoke);  /* nodes.revoke */

struct node_exec {
	const char *query;	/* params.node (NULL: the only approved node) */
	json_t *argv;		/* borrowed */
	const char *cwd;	/* may be NULL */
	json_t *env;		/* borrowed; may be NULL */
	long long timeout_ms;	/* ≤ 0: NODE_DEFAULT_TIMEOUT_MS */
	const char *security;	/* deny|allowlist|full */
	const char *ask;	/* off|on-miss|always, or NULL */
	const char *agent_id;	/* may be NULL */
	const char *session_id; /* may be NULL */
	const char *created_by;
	const char *owner; /* who is asked when the node's policy asks (the session's creator); NULL: created_by */
	task_done_fn on_done;
	void *arg;
};

/* Starts a run on a node; *run_id is the task id (caller frees). */
int daemon_node_exec(struct daemon *d, const struct node_exec *x, char **run_id, struct err *e);
/* 1 when msg was a node's answer to a system.run (consumed), 0 when it is an ordinary message. */
int daemon_node_take_answer(struct daemon *d, struct daemon_peer *p, const char *msg, size_t len);
/* A connection closed: when it was a node, its runs fail with the reason. */
void daemon_node_closed(struct daemon *d, struct daemon_peer *p);
/* Frees the in-memory state of paired nodes (daemon_nodes.c; daemon_release). */
void daemon_nodes_release(struct daemon *d);

#endif
