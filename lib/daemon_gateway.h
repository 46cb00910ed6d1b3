/* daemon_gateway.h — exec.run on host "gateway" and the gateway's exec approval records (issue 8): the daemon
 * decides under its own exec-approvals.json and an executor runs the command. The daemon never runs it itself. */
#ifndef AGOR_DAEMON_GATEWAY_H
#define AGOR_DAEMON_GATEWAY_H

/*
 * Contract
 * --------
 * Host gateway: exec.run {host:"gateway", worktree_id, argv, security?, ask?, agent_id?, session_id?,
 * timeout_ms?} is decided by the daemon's $AGOR_HOME/exec-approvals.json (approvals_policy precedence and
 * caps; a request without security asks for deny). allow → a task runs the executor's exec.run with
 * params.host "gateway" as the worktree creator's execution user, in the worktree, without the kernel
 * sandbox; the executor runs it only after exec.gateway_grant {session_token} (the task's own token) answers
 * {argv, cwd} equal to its payload — so a payload the daemon did not make never turns the sandbox off.
 * deny → an exec.denied event and PERMISSION_DENIED. ask → an approval record for this exact argv (see
 * below) allows it; else the session's creator (or the caller, outside a session) is asked with a
 * permission request (kind "exec"); nobody connected → askFallback. Events exec.started, exec.finished and
 * exec.denied are messages of the run's task and session. The reply comes when the run ends.
 *
 * Approval records: a person approving an exec ask records {argv_sha256 (appr_argv_sha256 of the argv as
 * requested), host ("gateway" | "node:<id>"), session (or none), user, scope, expiry}. allow-once is used
 * by the run it was granted for; allow-always lasts execution.session_tokens.expiration_ms. An ask is
 * approved only by a record that matches the argv hash, host, session and user — never by anything in the
 * caller's params.
 */

#include <jansson.h>

#include "crypto.h"
#include "daemon.h"
#include "daemon_peer.h"
#include "rpc.h"

RPC_METHOD(method_gateway_grant); /* exec.gateway_grant */

/* exec.run with host "gateway" (params already known to name that host). */
int daemon_gateway_exec(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e);

/* An exec ask on the gateway for a run (gateway or node): done(verdict) with 1 approved (a record exists),
 * 0 denied, -1 nobody who may decide is connected — at once when a record exists or nobody can be asked,
 * else when the person answers. */
typedef void (*exec_approval_done_fn)(struct daemon *d, int verdict, const char *why, void *arg);
struct exec_approval_ask {
	const char *host;	/* "gateway" | "node:<id>" */
	const char *run_id;	/* the run's task id */
	const char *session_id; /* may be NULL */
	const char *user_id;	/* the run's creator */
	const char *owner;	/* who is asked (the session's creator, else user_id) */
	const json_t *argv;	/* as requested */
	const char *argv_sha256;
	const char *where;	   /* shown to the decider, e.g. "the gateway" or "node build-box" */
	const json_t *executables; /* may be NULL: what the run starts, as checked (appr_executables_json) */
	exec_approval_done_fn done;
	void *arg;
};
void daemon_exec_approval(struct daemon *d, const struct exec_approval_ask *a);

/* Stores an exec.* event as a message of task_id (and session_id) and pushes it to user_id (data stolen). */
void daemon_exec_event(struct daemon *d, const char *task_id, const char *session_id, const char *user_id,
		       const char *type, json_t *data);

#endif
