/* daemon_permissions.c — agents' tool-permission requests (request_permission, docs/rpc.md): decided by
 * the session's permission mode, or asked of the task's creator (or an admin) through events, with a timeout
 * that denies. Every decision and its decider go to the audit log; nobody unasked can answer. */
#include <string.h>

#include "daemon_access.h"
#include "daemon_peer.h"
#include "daemon_permissions.h"
#include "fault.h"
#include "json.h"
#include "log.h"
#include "rpc.h"
#include "banned.h"

struct permission_request {
	struct daemon_pending base;
	struct daemon *d;
	struct daemon_peer *peer; /* the executor's connection; NULL once closed */
	json_t *rpc_id;
	char *id, *task_id, *session_id, *owner, *tool, *mode;
	permission_decided_fn decided; /* a request the daemon raised itself (else the executor is answered) */
	void *decided_arg;
	struct loop_timer *timer;
	struct permission_request *next;
};

static struct permission_request *requests; /* the daemon's pending requests (loop thread only) */

static int is_edit_tool(const char *tool)
{
	static const char *const edits[] = { "Edit", "Write", "MultiEdit", "NotebookEdit", "file_change" /* Codex */ };
	for (size_t i = 0; i < ARRAY_SIZE(edits); i++)
		if (!strcmp(tool, edits[i]))
			return 1;
	return 0;
}

/* The mode's own answer: 1 approve, 0 deny, -1 ask someone. */
static int decide_by_mode(const char *mode, const char *tool, const char **reason)
{
	if (!strcmp(mode, "bypassPermissions"))
		return *reason = "the session's permission mode is bypassPermissions", 1;
	if (!strcmp(mode, "acceptEdits") && is_edit_tool(tool))
		return *reason = "the session's permission mode acceptEdits allows file edits", 1;
	if (!strcmp(mode, "plan"))
		return *reason = "the session is in plan mode: nothing may change", 0;
	return -1;
}

static void unlink_request(struct permission_request *r)
{
	for (struct permission_request **p = &requests; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			return;
		}
}

static void request_free(struct permission_request *r)
{
	unlink_request(r);
	if (r->timer)
		loop_timer_cancel(r->d->loop, r->timer);
	if (r->peer)
		daemon_peer_forget(r->peer, r);
	if (r->rpc_id)
		json_decref(r->rpc_id);
	free(r->id);
	free(r->task_id);
	free(r->session_id);
	free(r->owner);
	free(r->tool);
	free(r->mode);
	free(r);
}

static void request_detach(struct daemon_pending *p)
{
	struct permission_request *r = (struct permission_request *)p;
	r->peer = NULL;
	request_free(r); /* the executor is gone: nobody is waiting for the answer */
}

static void record(struct daemon *d, const char *actor, const char *task, const char *tool, const char *mode,
		   int approved, const char *decider, const char *reason)
{
	daemon_audit(d, actor, "request_permission", task, approved ? "approved" : "denied",
		     json_pack("{s:s,s:s,s:s,s:s}", "tool", tool, "mode", mode, "decider", decider, "reason", reason));
}

/* Answers the executor (or the daemon's own asker), tells the watchers, forgets the request. */
/* The decider as a reason names them: their agor user name (the id stays in the audit row), else the id. */
static char *decider_name(struct daemon *d, const char *user_id)
{
	struct err e = ERR_INIT;
	_cleanup_json_ json_t *row = db_query_one(d->db, &e, "SELECT name FROM users WHERE id = ?", "s", user_id);
	err_clear(&e);
	return xstrdup(json_get_str(row, "name") ? json_get_str(row, "name") : user_id);
}

static void resolve(struct permission_request *r, int approved, const char *scope, const char *decider,
		    const char *reason)
{
	struct daemon *d = r->d;
	record(d, r->owner, r->task_id, r->tool, r->mode, approved, decider, reason);
	if (r->decided)
		r->decided(d, approved, scope, decider, reason, r->decided_arg);
	else if (r->peer) {
		char *text = rpc_result_text(r->rpc_id, json_pack("{s:b,s:s}", "approved", approved, "reason", reason));
		daemon_peer_reply(r->peer, text);
		free(text);
	}
	daemon_broadcast_to(d, r->owner, "permission.resolved",
			    json_pack("{s:s,s:s,s:b,s:s,s:s}", "request_id", r->id, "task_id", r->task_id, "approved",
				      approved, "decider", decider, "reason", reason));
	request_free(r);
}

static void on_timeout(struct loop *l, void *arg)
{
	(void)l;
	struct permission_request *r = arg;
	r->timer = NULL;
	resolve(r, 0, NULL, "timeout", "nobody answered the permission request in time (denied)");
}

static struct permission_request *request_new(struct daemon *d, const char *task_id, const char *session_id,
					      const char *owner, const char *tool, const char *mode)
{
	struct permission_request *r = xcalloc(1, sizeof(*r));
	r->base.detach = request_detach;
	r->d = d;
	r->id = daemon_new_id();
	r->task_id = xstrdup(task_id);
	r->session_id = session_id ? xstrdup(session_id) : NULL;
	r->owner = xstrdup(owner);
	r->tool = xstrdup(tool);
	r->mode = xstrdup(mode);
	r->next = requests;
	requests = r;
	return r;
}

/* Starts the timeout and tells the owner (and admins): permission.requested. */
static void announce(struct permission_request *r, const char *kind, const json_t *input)
{
	long long timeout = r->d->cfg->execution.permission_timeout_ms;
	r->timer = loop_timer_add(r->d->loop, (uint64_t)timeout, on_timeout, r);
	daemon_broadcast_to(r->d, r->owner, "permission.requested",
			    json_pack("{s:s,s:s,s:s?,s:s,s:s,s:O?,s:I}", "request_id", r->id, "task_id", r->task_id,
				      "session_id", r->session_id, "kind", kind, "tool_name", r->tool, "tool_input",
				      input, "timeout_ms", (json_int_t)timeout));
	fault_step("permission.asked"); /* test builds: a crash point (docs/recovery.md) */
}

static void ask(struct rpc_ctx *rc, const json_t *task, const char *session_id, const char *mode, const char *tool,
		json_t *params)
{
	struct permission_request *r =
		request_new(D(rc), json_get_str(task, "id"), session_id, json_get_str(task, "created_by"), tool, mode);
	r->peer = P(rc);
	r->rpc_id = json_incref(rc->id);
	daemon_peer_remember(r->peer, r);
	announce(r, "tool", json_object_get(params, "tool_input"));
}

int daemon_permission_ask(struct daemon *d, const struct permission_ask *a)
{
	if (!daemon_has_watcher(d, a->owner))
		return 0;
	struct permission_request *r = request_new(d, a->task_id, a->session_id, a->owner, a->tool, a->kind);
	r->decided = a->decided;
	r->decided_arg = a->arg;
	announce(r, a->kind, a->input);
	return 1;
}

int daemon_permission_request(struct rpc_ctx *rc, const json_t *task, const char *session_id, json_t *params,
			      json_t **result, struct err *e)
{
	struct daemon *d = D(rc);
	const char *tool = json_get_str(params, "tool_name");
	if (!tool || !*tool)
		return err_set(e, E_INVALID_PAYLOAD, "params.tool_name: required (the tool the agent wants to use)");
	json_t *s = db_query_one(d->db, e, "SELECT permission_mode FROM sessions WHERE id = ?", "s", session_id);
	if (!s)
		return -1;
	const char *mode = json_is_null(s) ? "default" : json_get_str(s, "permission_mode");
	const char *reason = NULL, *owner = json_get_str(task, "created_by");
	int verdict = decide_by_mode(mode, tool, &reason);
	if (verdict < 0 && (!rc->id || rc->in_batch || !daemon_has_watcher(d, owner))) {
		verdict = 0;
		reason = "nobody who may decide is connected (fail closed)";
	}
	if (verdict < 0) {
		ask(rc, task, session_id, mode, tool, params);
		json_decref(s);
		return RPC_DEFERRED;
	}
	record(d, owner, json_get_str(task, "id"), tool, mode, verdict, "policy", reason);
	*result = json_pack("{s:b,s:s}", "approved", verdict, "reason", reason);
	json_decref(s);
	return 0;
}

void daemon_permissions_cancel_task(struct daemon *d, const char *task_id)
{
	(void)d;
	struct permission_request *r = requests, *next;
	for (; r; r = next) {
		next = r->next;
		if (!strcmp(r->task_id, task_id))
			resolve(r, 0, NULL, "cancel", "the task was cancelled");
	}
}

/* permissions.respond {request_id, approved, reason?, scope?}: only the task's creator or an admin. scope
 * (allow-once, the default, or allow-always) matters to exec approvals only. */
int method_permissions_respond(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon_peer *p = P(rc);
	const char *id = json_get_str(params, "request_id");
	json_t *approved = json_object_get(params, "approved");
	if (!p->user_id)
		return err_set(e, E_AUTH_FAILED, "this connection is not an agor user");
	if (!id || !json_is_boolean(approved))
		return err_set(e, E_INVALID_PAYLOAD,
			       "params.request_id (string) and params.approved (true|false) are required");
	struct permission_request *r = requests;
	while (r && strcmp(r->id, id))
		r = r->next;
	if (!r || (!p->is_admin && strcmp(p->user_id, r->owner))) /* another's answers as an unknown id */
		return err_set(e, E_NOT_FOUND, "no pending permission request %s (answered, timed out or cancelled)",
			       id);
	const char *reason = json_get_str(params, "reason"), *scope = json_get_str(params, "scope");
	if (scope && strcmp(scope, "allow-once") && strcmp(scope, "allow-always"))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "scope"),
				"params.scope: expected allow-once or allow-always");
	_cleanup_free_ char *decider = decider_name(D(rc), p->user_id);
	_cleanup_free_ char *why = xasprintf("%s by %s", json_is_true(approved) ? "approved" : "denied", decider);
	resolve(r, json_is_true(approved), scope ? scope : "allow-once", p->user_id, reason && *reason ? reason : why);
	*result = json_pack("{s:s,s:b}", "request_id", id, "approved", json_is_true(approved));
	return 0;
}
