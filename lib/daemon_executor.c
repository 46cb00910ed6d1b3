/* daemon_executor.c — the executor methods of SPEC §4.3, authenticated by a task-bound session token:
 * verified (HS256, iss/aud/exp), known (jti recorded), not revoked, for a task still running; counted.
 * Never returns a secret to anyone but the token's task, never writes a secret to the audit log or logs. */
#include <string.h>

#include "agent.h"
#include "crypto.h"
#include "daemon.h"
#include "daemon_methods.h"
#include "json.h"
#include "log.h"
#include "rpc.h"
#include "token.h"
#include "banned.h"

#define API_KEY_FETCHES_PER_TOKEN 20

struct token_auth {
	struct token_claims claims;
	json_t *task; /* the task row */
};

static void auth_release(struct token_auth *a)
{
	token_claims_release(&a->claims);
	if (a->task)
		json_decref(a->task);
}

static int refuse(struct daemon *d, const char *method, const char *task, const char *why, struct err *e)
{
	daemon_audit(d, "executor", method, task, "refused", json_pack("{s:s}", "reason", why));
	return err_set(e, E_AUTH_FAILED, "session token refused: %s", why);
}

/* Executors stream with one token: its signature and claims are checked once and remembered, by the
 * exact token text, until it expires. Revocation and the task's state are still checked every call. */
#define VERIFIED_TOKENS 16

struct verified_token {
	char *jwt;
	struct token_claims claims;
};

void daemon_forget_verified_tokens(struct daemon *d)
{
	for (int i = 0; d->verified && i < VERIFIED_TOKENS; i++) {
		free(d->verified[i].jwt);
		token_claims_release(&d->verified[i].claims);
	}
	free(d->verified);
	d->verified = NULL;
}

static int verify_token(struct daemon *d, const char *jwt, struct token_claims *out, struct err *why)
{
	if (!d->verified)
		d->verified = xcalloc(VERIFIED_TOKENS, sizeof(*d->verified));
	long long now = daemon_now();
	for (int i = 0; i < VERIFIED_TOKENS; i++) {
		struct verified_token *v = &d->verified[i];
		if (v->jwt && v->claims.exp > now && !strcmp(v->jwt, jwt)) {
			token_claims_copy(out, &v->claims);
			return 0;
		}
	}
	if (token_verify_for(TOKEN_AUD_EXECUTOR, d->jwt_secret, sizeof(d->jwt_secret), jwt, TOKEN_NOW, out, why) < 0)
		return -1;
	struct verified_token *slot = &d->verified[(unsigned)out->iat % VERIFIED_TOKENS];
	free(slot->jwt);
	token_claims_release(&slot->claims);
	slot->jwt = xstrdup(jwt);
	token_claims_copy(&slot->claims, out);
	return 0;
}

/* Verifies params.session_token for method; on success a->claims and a->task are set. */
static int authenticate(struct daemon *d, const char *method, json_t *params, struct token_auth *a, struct err *e)
{
	memset(a, 0, sizeof(*a));
	const char *jwt = json_get_str(params, "session_token");
	if (!jwt)
		return refuse(d, method, NULL, "params.session_token is missing", e);
	struct err why = ERR_INIT;
	if (verify_token(d, jwt, &a->claims, &why) < 0) {
		int rc = refuse(d, method, NULL, why.message, e);
		err_clear(&why);
		return rc;
	}
	daemon_write_batch(d); /* executors stream: their writes of one read burst share one transaction */
	json_t *row = db_query_one(d->db, e, "SELECT * FROM tokens WHERE jti = ?", "s", a->claims.jti);
	if (!row)
		return -1;
	const char *tid = a->claims.tid;
	int rc = 0;
	if (json_is_null(row) || strcmp(json_get_str(row, "task_id"), tid))
		rc = refuse(d, method, tid, "unknown token", e);
	else if (!json_is_null(json_object_get(row, "revoked_at")))
		rc = refuse(d, method, tid, "revoked (its task has ended)", e);
	json_decref(row);
	if (rc < 0)
		return -1;
	a->task = db_query_one(d->db, e, "SELECT * FROM tasks WHERE id = ?", "s", tid);
	if (!a->task || json_is_null(a->task) || strcmp(json_get_str(a->task, "status"), "running"))
		return refuse(d, method, tid, "its task is not running", e);
	db_run(d->db, e, "UPDATE tokens SET uses = uses + 1 WHERE jti = ?", "s", a->claims.jti);
	return 0;
}

int daemon_executor_authenticate(struct daemon *d, const char *method, json_t *params, char **task_id, struct err *e)
{
	struct token_auth a;
	int rc = authenticate(d, method, params, &a, e);
	if (rc == 0)
		*task_id = xstrdup(a.claims.tid);
	auth_release(&a);
	return rc;
}

/* A call naming a task must name the token's own task. */
static int check_task_param(struct daemon *d, const char *method, json_t *params, struct token_auth *a, struct err *e)
{
	const char *task = json_get_str(params, "task_id");
	if (task && strcmp(task, a->claims.tid))
		return refuse(d, method, a->claims.tid, "the token belongs to another task", e);
	return 0;
}

/* The daemon's agents.<tool> settings for the executor: program, provider endpoint, model. */
static json_t *model_config(const struct config *cfg, const char *tool)
{
	const struct config_agent *a = agent_config(cfg, tool);
	if (!a)
		return json_null();
	return json_pack("{s:s?,s:s?,s:s?}", "command", a->command, "base_url", a->base_url, "model", a->model);
}

static int get_execution_context(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct token_auth a;
	if (authenticate(d, "get_execution_context", params, &a, e) < 0) {
		auth_release(&a);
		return -1;
	}
	json_t *s = db_query_one(d->db, e,
				 "SELECT s.id, s.tool, s.permission_mode, s.agent_session_id, w.path AS cwd FROM sessions s"
				 " JOIN worktrees w ON w.id = s.worktree_id WHERE s.id = ?",
				 "s", a.claims.sid);
	int rv = -1;
	if (s && !json_is_null(s)) {
		*result = json_pack("{s:s,s:s,s:O,s:O,s:O,s:O,s:O,s:[],s:o}", "session_id", a.claims.sid, "task_id", a.claims.tid,
				    "prompt", json_object_get(a.task, "prompt"), "tool", json_object_get(s, "tool"),
				    "permission_mode", json_object_get(s, "permission_mode"), "cwd", json_object_get(s, "cwd"),
				    "agent_session_id", json_object_get(s, "agent_session_id"), "conversation_history",
				    "model_config", model_config(d->cfg, json_get_str(s, "tool")));
		daemon_audit(d, a.claims.sub, "get_execution_context", a.claims.tid, "ok", NULL);
		rv = 0;
	} else if (s) {
		err_set(e, E_NOT_FOUND, "the token's session no longer exists");
	}
	if (s)
		json_decref(s);
	auth_release(&a);
	return rv;
}

/* The sealed value of service, opened with the master key (aad = the service name). */
int daemon_open_api_key(struct daemon *d, const char *service, struct strbuf *out, struct err *e)
{
	sqlite3_stmt *st = db_prepare(d->db, "SELECT sealed FROM api_keys WHERE service = ?", e, "s", service);
	if (!st)
		return -1;
	int rc;
	if (sqlite3_step(st) == SQLITE_ROW)
		rc = crypto_open(d->master_key, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), service,
				 strlen(service), out, e);
	else
		rc = err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "service", service), "no API key is set for %s (agor api-key set %s)",
			      service, service);
	sqlite3_finalize(st);
	return rc;
}

static int get_api_key(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct token_auth a;
	const char *service = json_get_str(params, "service");
	int rv = authenticate(d, "get_api_key", params, &a, e);
	if (rv == 0 && !service)
		rv = err_set(e, E_INVALID_PAYLOAD, "params.service: required (anthropic, openai, google, github, …)");
	if (rv == 0) {
		json_t *row = db_query_one(d->db, e, "SELECT api_key_uses FROM tokens WHERE jti = ?", "s", a.claims.jti);
		long long uses = row ? json_integer_value(json_object_get(row, "api_key_uses")) : 0;
		if (row)
			json_decref(row);
		if (uses >= API_KEY_FETCHES_PER_TOKEN)
			rv = refuse(d, "get_api_key", a.claims.tid, "rate limited: too many API key requests for one task", e);
	}
	if (rv == 0) {
		struct strbuf key = STRBUF_INIT;
		db_run(d->db, e, "UPDATE tokens SET api_key_uses = api_key_uses + 1 WHERE jti = ?", "s", a.claims.jti);
		rv = daemon_open_api_key(d, service, &key, e);
		daemon_audit(d, a.claims.sub, "get_api_key", a.claims.tid, rv == 0 ? "ok" : "failed",
			     json_pack("{s:s}", "service", service));
		if (rv == 0)
			*result = json_pack("{s:s%}", "api_key", key.buf, key.len);
		crypto_strbuf_wipe(&key);
	}
	auth_release(&a);
	return rv;
}

static int get_credential(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct token_auth a;
	const char *url = json_get_str(params, "url");
	int rv = authenticate(d, "get_credential", params, &a, e);
	if (rv == 0 && (!url || strncmp(url, "https://", 8)))
		rv = err_set(e, E_INVALID_PAYLOAD, "params.url: an https:// URL is required");
	if (rv == 0) {
		char host[256];
		snprintf(host, sizeof(host), "%.*s", (int)strcspn(url + 8, "/:@"), url + 8);
		_cleanup_free_ char *service = xasprintf("git:%s", host);
		struct strbuf secret = STRBUF_INIT;
		rv = daemon_open_api_key(d, service, &secret, e);
		daemon_audit(d, a.claims.sub, "get_credential", a.claims.tid, rv == 0 ? "ok" : "failed",
			     json_pack("{s:s}", "host", host));
		if (rv == 0)
			*result = json_pack("{s:s,s:s%}", "username", "x-access-token", "password", secret.buf, secret.len);
		crypto_strbuf_wipe(&secret);
	}
	auth_release(&a);
	return rv;
}

static int request_permission(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct token_auth a;
	int rv = authenticate(rc->app, "request_permission", params, &a, e);
	if (rv == 0)
		rv = check_task_param(rc->app, "request_permission", params, &a, e);
	if (rv == 0)
		rv = daemon_permission_request(rc, a.task, a.claims.sid, params, result, e);
	auth_release(&a);
	return rv;
}

static int report_message(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct token_auth a;
	const char *type = json_get_str(params, "message_type");
	json_t *data = json_object_get(params, "data");
	int rv = authenticate(d, "report_message", params, &a, e);
	if (rv == 0)
		rv = check_task_param(d, "report_message", params, &a, e);
	if (rv == 0 && (!type || !data))
		rv = err_set(e, E_INVALID_PAYLOAD, "params.message_type and params.data are required");
	if (rv == 0) {
		_cleanup_free_ char *text = json_to_compact(data);
		rv = db_run(d->db, e, "INSERT INTO messages (task_id, session_id, message_type, data, created_at) VALUES (?,?,?,?,?)",
			    "ssssi", a.claims.tid, a.claims.sid, type, text, daemon_now()) < 0 ? -1 : 0;
		if (rv == 0)
			daemon_task_event(d, a.claims.tid, json_get_str(a.task, "created_by"), "message", json_pack("{s:s,s:s,s:s,s:O}", "task_id", a.claims.tid, "session_id",
								 a.claims.sid, "message_type", type, "data", data));
		*result = json_object();
	}
	auth_release(&a);
	return rv;
}

static int report_completion(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct token_auth a;
	const char *status = json_get_str(params, "status");
	int rv = authenticate(d, "report_completion", params, &a, e);
	if (rv == 0)
		rv = check_task_param(d, "report_completion", params, &a, e);
	if (rv == 0 && (!status || (strcmp(status, "completed") && strcmp(status, "failed") && strcmp(status, "cancelled"))))
		rv = err_set(e, E_INVALID_PAYLOAD, "params.status: expected completed, failed or cancelled");
	if (rv == 0) {
		json_t *usage = json_object_get(params, "token_usage");
		const char *agent_session = json_get_str(params, "agent_session_id");
		_cleanup_free_ char *usage_text = usage && !json_is_null(usage) ? json_to_compact(usage) : NULL;
		rv = db_run(d->db, e, "UPDATE tasks SET token_usage = ? WHERE id = ?", "ss", usage_text, a.claims.tid) < 0 ? -1 : 0;
		if (rv == 0 && agent_session) /* conversation continuity: the next prompt resumes this one */
			rv = db_run(d->db, e, "UPDATE sessions SET agent_session_id = ? WHERE id = ?", "ss", agent_session,
				    a.claims.sid) < 0 ? -1 : 0;
		daemon_audit(d, a.claims.sub, "report_completion", a.claims.tid, status, NULL);
		*result = json_pack("{s:b}", "acknowledged", 1);
	}
	auth_release(&a);
	return rv;
}

static int heartbeat(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct token_auth a;
	int rv = authenticate(rc->app, "heartbeat", params, &a, e);
	if (rv == 0)
		*result = json_object();
	auth_release(&a);
	return rv;
}

const struct rpc_method daemon_executor_methods[] = {
	{ "get_api_key", get_api_key },
	{ "get_credential", get_credential },
	{ "get_execution_context", get_execution_context },
	{ "heartbeat", heartbeat },
	{ "report_completion", report_completion },
	{ "report_message", report_message },
	{ "request_permission", request_permission },
};
const size_t daemon_executor_nmethods = ARRAY_SIZE(daemon_executor_methods);
