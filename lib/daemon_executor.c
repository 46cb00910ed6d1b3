/* daemon_executor.c — the executor methods (daemon_executor.h, docs/rpc.md), authenticated by a task-bound session
 * token: verified (HS256, iss/aud/exp), known (jti recorded), not revoked, for a task still running; counted. Never
 * returns a secret to anyone but the token's task, never writes a secret to the audit log or logs. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "agent.h"
#include "crypto.h"
#include "daemon_executor.h"
#include "daemon_limits.h"
#include "daemon_peer.h"
#include "daemon_permissions.h"
#include "daemon_taskauth.h"
#include "daemon_tasks.h"
#include "fault.h"
#include "json.h"
#include "knownhosts.h"
#include "log.h"
#include "report_scan.h"
#include "rpc.h"
#include "token.h"
#include "url.h"
#include "banned.h"

#define API_KEY_FETCHES_PER_TOKEN 20

/* A call naming a task (task, may be NULL) must name the token's own task. */
static int check_task(struct daemon *d, const char *method, const char *task, struct daemon_token_auth *a,
		      struct err *e)
{
	if (task && strcmp(task, a->claims.tid))
		return daemon_token_refuse(d, method, a->claims.tid, "the token belongs to another task", e);
	return 0;
}

static int check_task_param(struct daemon *d, const char *method, json_t *params, struct daemon_token_auth *a,
			    struct err *e)
{
	return check_task(d, method, json_get_str(params, "task_id"), a, e);
}

/* The connection belongs to a task's executor: its token checked, it is no longer an unauthenticated caller, and its
 * task is alive (daemon_task_heard). */
static void heard_from_executor(struct rpc_ctx *rc, const struct daemon_token_auth *a)
{
	struct daemon_peer *p = rc->peer;
	if (p)
		p->executor = 1;
	daemon_task_heard(rc->app, a->claims.tid);
}

/* The daemon's agents.<tool> settings for the executor: program, provider endpoint, model. */
static json_t *model_config(const struct config *cfg, const char *tool)
{
	const struct config_agent *a = agent_config(cfg, tool);
	if (!a)
		return json_null();
	return json_pack("{s:s?,s:s?,s:s?}", "command", a->command, "base_url", a->base_url, "model", a->model);
}

int method_get_execution_context(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct daemon_token_auth a;
	if (daemon_token_authenticate(d, "get_execution_context", params, &a, e) < 0) {
		daemon_token_auth_release(&a);
		return -1;
	}
	heard_from_executor(rc, &a);
	json_t *s =
		db_query_one(d->db, e,
			     "SELECT s.id, s.tool, s.permission_mode, s.agent_session_id, w.path AS cwd FROM sessions s"
			     " JOIN worktrees w ON w.id = s.worktree_id WHERE s.id = ?",
			     "s", a.claims.sid);
	int rv = -1;
	if (s && !json_is_null(s)) {
		*result = json_pack("{s:s,s:s,s:O,s:O,s:O,s:O,s:O,s:[],s:o,s:I,s:I}", "session_id", a.claims.sid,
				    "task_id", a.claims.tid, "prompt", json_object_get(a.task, "prompt"), "tool",
				    json_object_get(s, "tool"), "permission_mode",
				    json_object_get(s, "permission_mode"), "cwd", json_object_get(s, "cwd"),
				    "agent_session_id", json_object_get(s, "agent_session_id"), "conversation_history",
				    "model_config", model_config(d->cfg, json_get_str(s, "tool")), "heartbeat_ms",
				    (json_int_t)d->cfg->execution.executor_heartbeat_ms, "permission_timeout_ms",
				    (json_int_t)d->cfg->execution.permission_timeout_ms);
		daemon_audit(d, a.claims.sub, "get_execution_context", a.claims.tid, "ok", NULL);
		rv = 0;
	} else if (s) {
		err_set(e, E_NOT_FOUND, "the token's session no longer exists");
	}
	if (s)
		json_decref(s);
	daemon_token_auth_release(&a);
	return rv;
}

/* --- stored keys: who may use them ---------------------------------------------------------------
 * Every stored key has a scope, set with it by an admin (api_keys.set, `agor api-key set --scope`):
 *   members  any agor user's task (the default, and what every key stored before scopes were kept gets);
 *   admins   tasks of admins only;
 *   owner    tasks of the user who stored the value (api_keys.set_by) only.
 * A task's user is its token's subject: the user the task runs for. */
static const char *const key_scopes[] = { "owner", "admins", "members", NULL };

int daemon_api_key_scope_valid(const char *scope)
{
	for (size_t i = 0; key_scopes[i]; i++)
		if (!strcmp(scope, key_scopes[i]))
			return 1;
	return 0;
}

static int user_is_admin(struct daemon *d, const char *user, struct err *e)
{
	_cleanup_json_ json_t *row = db_query_one(d->db, e, "SELECT role FROM users WHERE id = ?", "s", user);
	return json_is_object(row) && !strcmp(json_get_str(row, "role"), "admin");
}

static int check_scope(struct daemon *d, const char *service, const char *scope, const char *set_by, const char *user,
		       struct err *e)
{
	int ok = !strcmp(scope, "members") || (!strcmp(scope, "owner") && set_by && user && !strcmp(set_by, user)) ||
		 (!strcmp(scope, "admins") && user && user_is_admin(d, user, e));
	if (ok)
		return 0;
	return err_setd(
		e, E_PERMISSION_DENIED, json_pack("{s:s,s:s}", "service", service, "scope", scope),
		"the key %s has scope %s: this task's user may not use it (an admin changes it with `agor api-key "
		"set %s --scope members|admins|owner`)",
		service, scope, service);
}

/* The audit outcome of a key handed out (ok), refused by its scope, or not found (failed). */
static const char *outcome_of(int rv, const struct err *e)
{
	return rv == 0 ? "ok" : !strcmp(e->code, E_PERMISSION_DENIED) ? "refused" : "failed";
}

/* A key handed out or not: a refusal goes through the refusal window (daemon_audit_refusal), the rest is written. */
static void audit_key_use(struct daemon *d, const char *actor, const char *action, const char *target,
			  const char *outcome, json_t *details)
{
	if (!strcmp(outcome, "refused"))
		daemon_audit_refusal(d, actor, action, target, details);
	else
		daemon_audit(d, actor, action, target, outcome, details);
}

/* The sealed value of service, opened with the master key (aad = the service name), when its scope admits
 * user (the task's); *scope (may be NULL) gets the key's scope (malloc'd) when the key exists. */
int daemon_open_api_key(struct daemon *d, const char *service, const char *user, struct strbuf *out, char **scope,
			struct err *e)
{
	sqlite3_stmt *st =
		db_prepare(d->db, "SELECT sealed, scope, set_by FROM api_keys WHERE service = ?", e, "s", service);
	if (!st)
		return -1;
	int rc;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *key_scope = (const char *)sqlite3_column_text(st, 1);
		const char *set_by = (const char *)sqlite3_column_text(st, 2);
		if (scope)
			*scope = xstrdup(key_scope);
		rc = check_scope(d, service, key_scope, set_by, user, e);
		if (rc == 0)
			rc = crypto_open(d->master_key, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
					 service, strlen(service), out, e);
	} else {
		rc = err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "service", service),
			      "no API key is set for %s (agor api-key set %s)", service, service);
	}
	sqlite3_finalize(st);
	return rc;
}

int method_get_api_key(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct daemon_token_auth a;
	const char *service = json_get_str(params, "service");
	int rv = daemon_token_authenticate(d, "get_api_key", params, &a, e);
	if (rv == 0 && !service)
		rv = err_set(e, E_INVALID_PAYLOAD, "params.service: required (anthropic, openai, google, github, …)");
	if (rv == 0) {
		json_t *row =
			db_query_one(d->db, e, "SELECT api_key_uses FROM tokens WHERE jti = ?", "s", a.claims.jti);
		long long uses = row ? json_integer_value(json_object_get(row, "api_key_uses")) : 0;
		if (row)
			json_decref(row);
		if (uses >= API_KEY_FETCHES_PER_TOKEN)
			rv = daemon_token_refuse(d, "get_api_key", a.claims.tid,
						 "rate limited: too many API key requests for one task", e);
	}
	if (rv == 0) {
		struct strbuf key = STRBUF_INIT;
		db_run(d->db, e, "UPDATE tokens SET api_key_uses = api_key_uses + 1 WHERE jti = ?", "s", a.claims.jti);
		_cleanup_free_ char *scope = NULL;
		rv = daemon_open_api_key(d, service, a.claims.sub, &key, &scope, e);
		daemon_audit(d, a.claims.sub, "get_api_key", a.claims.tid, outcome_of(rv, e),
			     json_pack("{s:s,s:s?}", "service", service, "scope", scope));
		if (rv == 0)
			*result = json_pack("{s:s%}", "api_key", key.buf, key.len);
		crypto_strbuf_wipe(&key);
	}
	daemon_token_auth_release(&a);
	return rv;
}

/* --- git credentials: one key per exact origin ------------------------------------------------------
 * A git credential is stored as git:HOST (https://HOST:443) or git:HOST:PORT (https on another port), an ssh key
 * as git-ssh:HOST (ssh://HOST:22) or git-ssh:HOST:PORT; HOST lower-cased and an IPv6 literal in brackets: the key
 * of an origin is one string, and get_credential hands out only the key of the very origin asked about (url.h
 * parses it; userinfo is refused). Either may carry a user name (api_keys.username): https defaults to
 * x-access-token, ssh to the clone URL's user, else git. */

static const struct {
	const char *prefix, *scheme, *user;
	int port;
} git_services[] = {
	{ "git:", "https", "x-access-token", 443 },
	{ "git-ssh:", "ssh", NULL, 22 },
};

static int git_service_index(const char *scheme)
{
	for (size_t i = 0; i < ARRAY_SIZE(git_services); i++)
		if (!strcmp(scheme, git_services[i].scheme))
			return (int)i;
	return -1;
}

static char *git_service_for(const struct url *u)
{
	_cleanup_free_ char *host = url_host_text(u);
	int i = git_service_index(u->scheme);
	return u->port == git_services[i].port ? xasprintf("%s%s", git_services[i].prefix, host)
					       : xasprintf("%s%s:%d", git_services[i].prefix, host, u->port);
}

int daemon_git_service(const char *service)
{
	for (size_t i = 0; i < ARRAY_SIZE(git_services); i++)
		if (!strncmp(service, git_services[i].prefix, strlen(git_services[i].prefix)))
			return 1;
	return 0;
}

int daemon_canonical_service(const char *service, char **out, struct err *e)
{
	*out = NULL;
	size_t i = 0;
	while (i < ARRAY_SIZE(git_services) && strncmp(service, git_services[i].prefix, strlen(git_services[i].prefix)))
		i++;
	if (i == ARRAY_SIZE(git_services)) {
		*out = xstrdup(service);
		return 0;
	}
	_cleanup_free_ char *text =
		xasprintf("%s://%s", git_services[i].scheme, service + strlen(git_services[i].prefix));
	_cleanup_url_ struct url u = URL_INIT;
	struct err why = ERR_INIT;
	const char *reason = url_parse(text, &u, &why) < 0 ? why.message
			     : u.userinfo || *u.path	   ? "only a host and a port may follow the prefix"
							   : NULL;
	if (!reason)
		*out = git_service_for(&u);
	else
		err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "service"),
			 "params.service: a git credential is named git:HOST[:PORT] (an https origin) or "
			 "git-ssh:HOST[:PORT] "
			 "(an ssh server), got %s: %s",
			 service, reason);
	err_clear(&why);
	return *out ? 0 : -1;
}

/* params.url of get_credential and get_known_hosts: an https or ssh URL without userinfo (the origin asked). */
static int credential_url(const char *text, const char *scheme, struct url *u, struct err *e)
{
	struct err why = ERR_INIT;
	const char *reason = !text ? "required (the https:// or ssh:// URL of the server asking for credentials)"
			     : url_parse(text, u, &why) < 0 ? why.message
			     : git_service_index(u->scheme) < 0 || (scheme && strcmp(u->scheme, scheme))
				     ? "credentials go over https:// or ssh:// only"
			     : u->userinfo
				     ? "user information (user@ or user:password@ before the host) is refused: the "
				       "host is what follows the '@'"
				     : NULL;
	if (reason)
		err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "url"), "params.url: %s", reason);
	err_clear(&why);
	return reason ? -1 : 0;
}

/* The user name stored with service (NULL when none). */
static char *stored_username(struct daemon *d, const char *service)
{
	struct err ignored = ERR_INIT;
	_cleanup_json_ json_t *row =
		db_query_one(d->db, &ignored, "SELECT username FROM api_keys WHERE service = ?", "s", service);
	err_clear(&ignored);
	const char *user = json_is_object(row) ? json_get_str(row, "username") : NULL;
	return user ? xstrdup(user) : NULL;
}

int method_get_credential(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct daemon_token_auth a;
	_cleanup_url_ struct url u = URL_INIT;
	int rv = daemon_token_authenticate(d, "get_credential", params, &a, e);
	if (rv == 0 && credential_url(json_get_str(params, "url"), NULL, &u, e) < 0) {
		rv = -1;
		daemon_audit_refusal(d, a.claims.sub, "get_credential", a.claims.tid,
				     json_pack("{s:s}", "reason", e->message));
	}
	if (rv == 0) {
		_cleanup_free_ char *origin = url_origin(&u), *service = git_service_for(&u), *scope = NULL;
		_cleanup_free_ char *user = stored_username(d, service);
		int ssh = !strcmp(u.scheme, "ssh");
		struct strbuf secret = STRBUF_INIT;
		rv = daemon_open_api_key(d, service, a.claims.sub, &secret, &scope, e);
		audit_key_use(d, a.claims.sub, "get_credential", a.claims.tid, outcome_of(rv, e),
			      json_pack("{s:s,s:s,s:s?,s:s?}", "origin", origin, "service", service, "scope", scope,
					"reason", rv == 0 ? NULL : e->message));
		if (rv == 0)
			*result = json_pack("{s:s?,s:s%}", "username", user ? user : git_services[ssh].user,
					    ssh ? "private_key" : "password", secret.buf, secret.len);
		crypto_strbuf_wipe(&secret);
	}
	daemon_token_auth_release(&a);
	return rv;
}

/* get_known_hosts {url: ssh://HOST:PORT}: the keys execution.git.known_hosts lists for that server, read from the
 * operator's file at each call (knownhosts.h); the executor refuses a server whose key is not among them. */
int method_get_known_hosts(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct daemon_token_auth a;
	_cleanup_url_ struct url u = URL_INIT;
	const char *file = d->cfg->execution.git.known_hosts;
	int rv = daemon_token_authenticate(d, "get_known_hosts", params, &a, e);
	if (rv == 0)
		rv = credential_url(json_get_str(params, "url"), "ssh", &u, e);
	if (rv == 0 && !file)
		rv = err_set(e, E_AUTH_FAILED,
			     "ssh host keys cannot be checked: execution.git.known_hosts is not set (the "
			     "operator points it at a known_hosts file listing each git server's key)");
	struct stat sb;
	if (rv == 0 && stat(file, &sb) == 0 && (sb.st_mode & (S_IWGRP | S_IWOTH)))
		rv = err_set(e, E_AUTH_FAILED,
			     "ssh host keys cannot be checked: execution.git.known_hosts %s is writable by "
			     "others than its owner (chmod go-w %s)",
			     file, file);
	struct strbuf text = STRBUF_INIT;
	if (rv == 0 && strbuf_read_file(&text, file, 4 << 20) < 0)
		rv = err_set(e, E_AUTH_FAILED,
			     "ssh host keys cannot be checked: execution.git.known_hosts: cannot read %s: "
			     "%s",
			     file, strerror(errno));
	if (rv == 0)
		*result = json_pack("{s:o}", "keys", known_hosts_keys(text.buf ? text.buf : "", u.host, u.port));
	strbuf_release(&text);
	daemon_token_auth_release(&a);
	return rv;
}

int method_request_permission(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon_token_auth a;
	int rv = daemon_token_authenticate(rc->app, "request_permission", params, &a, e);
	if (rv == 0)
		rv = check_task_param(rc->app, "request_permission", params, &a, e);
	if (rv == 0)
		heard_from_executor(rc, &a);
	if (rv == 0)
		rv = daemon_permission_request(rc, a.task, a.claims.sid, params, result, e);
	daemon_token_auth_release(&a);
	return rv;
}

/* report_message's work, whether its line was read by jansson or by report_scan: data_text is params.data
 * as compact JSON (NULL when missing). */
static int store_message(struct daemon *d, const char *jwt, const char *task, const char *type, const char *data_text,
			 struct err *e)
{
	struct daemon_token_auth a;
	int rv = daemon_token_authenticate_jwt(d, "report_message", jwt, &a, e);
	if (rv == 0)
		rv = check_task(d, "report_message", task, &a, e);
	if (rv == 0 && (!type || !data_text))
		rv = err_set(e, E_INVALID_PAYLOAD, "params.message_type and params.data are required");
	if (rv == 0) {
		rv = db_run(d->db, e,
			    "INSERT INTO messages (task_id, session_id, message_type, data, created_at) VALUES "
			    "(?,?,?,?,?)",
			    "ssssi", a.claims.tid, a.claims.sid, type, data_text, daemon_now()) < 0
			     ? -1
			     : 0;
		if (rv == 0)
			fault_step("message.stored"); /* test builds: a crash point (docs/recovery.md) */
		if (rv == 0)
			daemon_task_message(d, a.claims.tid, json_get_str(a.task, "created_by"), a.claims.sid, type,
					    data_text);
	}
	daemon_token_auth_release(&a);
	return rv;
}

int method_report_message(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	json_t *data = json_object_get(params, "data");
	_cleanup_free_ char *text = data ? json_to_compact(data) : NULL;
	int rv = store_message(rc->app, json_get_str(params, "session_token"), json_get_str(params, "task_id"),
			       json_get_str(params, "message_type"), text, e);
	if (rv == 0)
		*result = json_object();
	return rv;
}

int daemon_report_message_line(struct daemon *d, const char *line, size_t len)
{
	if (!d->report_line) {
		d->report_line = xmalloc(sizeof(*d->report_line));
		*d->report_line = (struct report_line)REPORT_LINE_INIT;
	}
	struct report_line *r = d->report_line;
	if (!report_scan(line, len, r))
		return 0;
	struct err e = ERR_INIT; /* a notification: a refusal is audited, never answered */
	store_message(d, report_line_field(r, r->token), report_line_field(r, r->task_id),
		      report_line_field(r, r->message_type), report_line_field(r, r->data), &e);
	err_clear(&e);
	return 1;
}

/* report_egress {session_token, task_id, refused: [{host, port, reason, count}]}: what the run's egress proxy
 * refused since the last call (egress.h), audited and announced while the run lives. */
int method_report_egress(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct daemon_token_auth a;
	json_t *refused = json_object_get(params, "refused"), *one;
	int rv = daemon_token_authenticate(d, "report_egress", params, &a, e);
	if (rv == 0)
		rv = check_task_param(d, "report_egress", params, &a, e);
	if (rv == 0 && (!json_is_array(refused) || json_array_size(refused) > 100))
		rv = err_set(e, E_INVALID_PAYLOAD, "params.refused: expected an array of at most 100 refusals");
	if (rv == 0) {
		size_t i;
		json_array_foreach(refused, i, one) daemon_egress_refused_live(d, a.claims.tid, a.claims.sub,
									       json_get_str(a.task, "created_by"), one);
		*result = json_object();
	}
	daemon_token_auth_release(&a);
	return rv;
}

int method_report_completion(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = rc->app;
	struct daemon_token_auth a;
	const char *status = json_get_str(params, "status");
	int rv = daemon_token_authenticate(d, "report_completion", params, &a, e);
	if (rv == 0)
		rv = check_task_param(d, "report_completion", params, &a, e);
	if (rv == 0 &&
	    (!status || (strcmp(status, "completed") && strcmp(status, "failed") && strcmp(status, "cancelled"))))
		rv = err_set(e, E_INVALID_PAYLOAD, "params.status: expected completed, failed or cancelled");
	if (rv == 0) {
		json_t *usage = json_object_get(params, "token_usage");
		const char *agent_session = json_get_str(params, "agent_session_id");
		_cleanup_free_ char *usage_text = usage && !json_is_null(usage) ? json_to_compact(usage) : NULL;
		rv = db_run(d->db, e, "UPDATE tasks SET token_usage = ? WHERE id = ?", "ss", usage_text, a.claims.tid) <
				     0
			     ? -1
			     : 0;
		if (rv == 0 && agent_session) /* conversation continuity: the next prompt resumes this one */
			rv = db_run(d->db, e, "UPDATE sessions SET agent_session_id = ? WHERE id = ?", "ss",
				    agent_session, a.claims.sid) < 0
				     ? -1
				     : 0;
		daemon_audit(d, a.claims.sub, "report_completion", a.claims.tid, status, NULL);
		*result = json_pack("{s:b}", "acknowledged", 1);
	}
	daemon_token_auth_release(&a);
	return rv;
}

int method_heartbeat(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon_token_auth a;
	int rv = daemon_token_authenticate(rc->app, "heartbeat", params, &a, e);
	if (rv == 0) {
		heard_from_executor(rc, &a);
		*result = json_object();
	}
	daemon_token_auth_release(&a);
	return rv;
}
