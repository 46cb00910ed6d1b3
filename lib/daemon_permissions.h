/* daemon_permissions.h — asking a person: an agent's request_permission decided by the session's mode or by its
 * creator (permissions.respond), and the permission requests the daemon raises itself (exec approvals). Services
 * layer (daemon.h). A request nobody answers is denied at its timeout; a cancelled task's are denied at once. */
#ifndef AGOR_DAEMON_PERMISSIONS_H
#define AGOR_DAEMON_PERMISSIONS_H

#include <jansson.h>
#include "daemon.h"
#include "rpc.h"

RPC_METHOD(method_permissions_respond); /* permissions.respond */

/* Permission requests of agents (daemon_permissions.c): request_permission's decision, and
 * permissions.respond for the clients that decide. */
int daemon_permission_request(struct rpc_ctx *rc, const json_t *task, const char *session_id, json_t *params,
			      json_t **result, struct err *e);
void daemon_permissions_cancel_task(struct daemon *d, const char *task_id);
/* A permission request the daemon raises itself (exec approvals, issue 8): asked of owner (or an admin) with
 * permission.requested {request_id, task_id, session_id?, kind, tool_name, tool_input, timeout_ms}. Returns 0
 * when nobody who may decide is connected (nothing asked, decided never runs), else 1: decided then runs
 * exactly once — approved or not, scope (allow-once|allow-always, NULL unless a person answered), who decided
 * and why — also on timeout and cancellation (denied). */
typedef void (*permission_decided_fn)(struct daemon *d, int approved, const char *scope, const char *decider,
				      const char *reason, void *arg);
struct permission_ask {
	const char *owner, *task_id, *session_id; /* session_id may be NULL */
	const char *kind;			  /* e.g. "exec" (also the audited mode) */
	const char *tool;			  /* e.g. "exec.run" */
	const json_t *input;			  /* borrowed: what the decider is shown */
	permission_decided_fn decided;
	void *arg;
};
int daemon_permission_ask(struct daemon *d, const struct permission_ask *a);

#endif
