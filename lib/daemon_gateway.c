/* daemon_gateway.c — exec.run on the gateway host and exec approval records (daemon_gateway.h). The daemon
 * decides and an executor runs: nothing here executes a command, and no approval comes from a caller's params. */
#include <pwd.h>
#include <string.h>

#include "approvals_exec.h"
#include "approvals_policy.h"
#include "approvals_socket.h"
#include "approvals_store.h"
#include "daemon_access.h"
#include "daemon_exec_params.h"
#include "daemon_gateway.h"
#include "daemon_limits.h"
#include "daemon_peer.h"
#include "daemon_permissions.h"
#include "daemon_taskauth.h"
#include "daemon_tasks.h"
#include "json.h"
#include "log.h"
#include "rpc.h"
#include "strbuf.h"
#include "banned.h"

#define ALLOW_ONCE_TTL_S 600				/* an allow-once record outlives its ask only for this long */
#define EXEC_PATH	 "/usr/local/bin:/usr/bin:/bin" /* the PATH execrun gives the program */

/* --- events ---------------------------------------------------------------------------------------- */

void daemon_exec_event(struct daemon *d, const char *task_id, const char *session_id, const char *user_id,
		       const char *type, json_t *data)
{
	json_object_set_new(data, "runId", json_string(task_id));
	if (session_id)
		json_object_set_new(data, "sessionId", json_string(session_id));
	_cleanup_free_ char *text = json_to_compact(data);
	struct err e = ERR_INIT;
	if (db_run(d->db, &e,
		   "INSERT INTO messages (task_id, session_id, message_type, data, created_at) "
		   "VALUES (?, ?, ?, ?, ?)",
		   "ssssi", task_id, session_id, type, text, daemon_now()) < 0)
		log_error("exec event %s of %s: %s", type, task_id, e.message);
	err_clear(&e);
	daemon_broadcast_to(d, user_id, type, data);
}

/* --- approval records -------------------------------------------------------------------------------- */

/* 1 when a live record approves a (consuming an allow-once record), 0 when none does, -1 on error. */
static int take_record(struct daemon *d, const struct exec_approval_ask *a, char **record_id, struct err *e)
{
	json_t *row = db_query_one(
		d->db, e,
		"SELECT id, scope FROM exec_approvals WHERE argv_sha256 = ? AND host = ? AND session_id IS ? "
		"AND user_id = ? AND expires_at > ? AND used_at IS NULL ORDER BY scope DESC, created_at LIMIT 1",
		"ssssi", a->argv_sha256, a->host, a->session_id, a->user_id, daemon_now());
	if (!row)
		return -1;
	int found = !json_is_null(row);
	if (found && !strcmp(json_get_str(row, "scope"), "allow-once") &&
	    db_run(d->db, e, "UPDATE exec_approvals SET used_at = ? WHERE id = ?", "is", daemon_now(),
		   json_get_str(row, "id")) < 0)
		found = -1;
	if (found > 0)
		*record_id = xstrdup(json_get_str(row, "id"));
	json_decref(row);
	return found;
}

static int store_record(struct daemon *d, const struct exec_approval_ask *a, const char *scope, const char *decider,
			struct err *e)
{
	long long ttl = !strcmp(scope, "allow-always") ? d->cfg->execution.session_tokens.expiration_ms / 1000
						       : ALLOW_ONCE_TTL_S;
	_cleanup_free_ char *id = daemon_new_id();
	long long now = daemon_now();
	if (db_run(d->db, e,
		   "INSERT INTO exec_approvals (id, argv_sha256, host, session_id, user_id, scope, decided_by, "
		   "created_at, expires_at) VALUES (?,?,?,?,?,?,?,?,?)",
		   "sssssssii", id, a->argv_sha256, a->host, a->session_id, a->user_id, scope, decider, now,
		   now + (ttl > 0 ? ttl : 1)) < 0)
		return -1;
	daemon_audit(d, decider, "exec.approval", id, scope,
		     json_pack("{s:s,s:s,s:s?,s:s,s:s}", "argvSha256", a->argv_sha256, "host", a->host, "session",
			       a->session_id, "user", a->user_id, "run", a->run_id));
	return 0;
}

struct pending_ask { /* a copy of the ask while a person decides */
	struct exec_approval_ask a;
	char *host, *run_id, *session_id, *user_id, *owner, *where;
	json_t *argv, *executables;
	char argv_sha256[CRYPTO_SHA256_HEX_LEN + 1];
};

static struct pending_ask *ask_copy(const struct exec_approval_ask *a)
{
	struct pending_ask *p = xcalloc(1, sizeof(*p));
	p->host = xstrdup(a->host);
	p->run_id = xstrdup(a->run_id);
	p->session_id = a->session_id ? xstrdup(a->session_id) : NULL;
	p->user_id = xstrdup(a->user_id);
	p->owner = xstrdup(a->owner);
	p->where = xstrdup(a->where);
	p->argv = json_deep_copy(a->argv);
	snprintf(p->argv_sha256, sizeof(p->argv_sha256), "%s", a->argv_sha256);
	p->executables = a->executables ? json_deep_copy(a->executables) : NULL;
	p->a = (struct exec_approval_ask){ p->host,	   p->run_id, p->session_id,  p->user_id, p->owner, p->argv,
					   p->argv_sha256, p->where,  p->executables, a->done,	  a->arg };
	return p;
}

static void ask_free(struct pending_ask *p)
{
	free(p->host);
	free(p->run_id);
	free(p->session_id);
	free(p->user_id);
	free(p->owner);
	free(p->where);
	json_decref(p->argv);
	json_decref(p->executables);
	free(p);
}

/* A person answered: an approval is recorded first, and the run is approved only by finding that record. */
static void ask_decided(struct daemon *d, int approved, const char *scope, const char *decider, const char *reason,
			void *arg)
{
	struct pending_ask *p = arg;
	struct err e = ERR_INIT;
	_cleanup_free_ char *record = NULL;
	int verdict = 0;
	if (approved && store_record(d, &p->a, scope ? scope : "allow-once", decider, &e) == 0)
		verdict = take_record(d, &p->a, &record, &e) > 0;
	if (approved && !verdict)
		log_error("exec approval for run %s: %s", p->run_id, e.message ? e.message : "the record vanished");
	_cleanup_free_ char *why =
		verdict ? xasprintf("approved by %s (%s, record %s)", decider, scope ? scope : "allow-once", record)
			: xstrdup(reason);
	p->a.done(d, verdict, why, p->a.arg);
	err_clear(&e);
	ask_free(p);
}

void daemon_exec_approval(struct daemon *d, const struct exec_approval_ask *a)
{
	struct err e = ERR_INIT;
	_cleanup_free_ char *record = NULL;
	int found = take_record(d, a, &record, &e);
	if (found != 0) {
		_cleanup_free_ char *why = found > 0 ? xasprintf("approval record %s", record) : xstrdup(e.message);
		err_clear(&e);
		a->done(d, found > 0, why, a->arg);
		return;
	}
	struct pending_ask *p = ask_copy(a);
	json_t *input = json_pack("{s:O,s:s,s:s,s:s,s:O?}", "argv", a->argv, "argvSha256", a->argv_sha256, "host",
				  a->host, "where", a->where, "executables", a->executables);
	struct permission_ask pa = { a->owner, a->run_id, a->session_id, "exec", "exec.run", input, ask_decided, p };
	int asked = daemon_permission_ask(d, &pa);
	json_decref(input);
	if (!asked) {
		ask_free(p);
		a->done(d, -1, "nobody who may decide is connected", a->arg);
	}
}

/* --- the gateway's policy ------------------------------------------------------------------------- */

struct gateway_run {
	struct gateway_run *next; /* in `granted` while its executor runs */
	struct daemon *d;
	struct pending_reply *pr;
	char *run_id, *session_id, *user_id, *owner, *worktree_id, *execution_user, *cwd, *agent, *home;
	json_t *argv, *exec_argv;
	json_t *executables; /* what the run starts, as checked: shown to whoever is asked */
	json_t *env;	     /* exec.run's env, every name on execution.exec_env_allow; may be NULL */
	json_t *timeout_ms;  /* may be NULL */
	char argv_sha256[CRYPTO_SHA256_HEX_LEN + 1];
	struct appr_effective eff;
	enum appr_decision fallback; /* what an unanswered ask becomes */
	const char *fallback_reason;
	char *detail; /* why the analysis failed, when it did */
};

static struct gateway_run *granted; /* runs whose executor may ask exec.gateway_grant (loop thread only) */

static void run_free(struct gateway_run *r)
{
	free(r->run_id);
	free(r->session_id);
	free(r->user_id);
	free(r->owner);
	free(r->worktree_id);
	free(r->execution_user);
	free(r->cwd);
	free(r->agent);
	free(r->home);
	free(r->detail);
	json_decref(r->argv);
	json_decref(r->exec_argv);
	json_decref(r->executables);
	json_decref(r->env);
	json_decref(r->timeout_ms);
	free(r);
}

static json_t *strvec_json(const struct strvec *v)
{
	json_t *a = json_array();
	for (size_t i = 0; i < v->nr; i++)
		json_array_append_new(a, json_string_lossy(v->v[i], strlen(v->v[i])));
	return a;
}

/* The verdict of the daemon's own exec-approvals.json for r (r->eff, r->exec_argv, r->fallback set). */
static int decide(struct daemon *d, struct gateway_run *r, const struct appr_levels *request, enum appr_decision *out,
		  const char **reason, struct err *e)
{
	struct appr_store s = APPR_STORE_INIT;
	if (appr_store_load(&s, d->paths.home, e) < 0)
		return -1;
	struct appr_levels agent, star, defaults;
	appr_store_levels(s.root, r->agent, &agent);
	appr_store_levels(s.root, "*", &star);
	appr_store_defaults(s.root, &defaults);
	appr_policy_resolve(request, &agent, &star, &defaults, &r->eff);
	size_t n = json_array_size(r->argv);
	const char **argv = xcalloc(n + 1, sizeof(*argv));
	for (size_t i = 0; i < n; i++)
		argv[i] = json_string_value(json_array_get(r->argv, i));
	struct appr_analysis a;
	appr_analyze(argv, r->cwd, EXEC_PATH, &a);
	free(argv);
	struct strvec patterns = STRVEC_INIT;
	appr_store_patterns(s.root, r->agent, &patterns);
	struct passwd *pw = getpwuid(d->uid); /* `~` in the daemon's patterns: the daemon user's home */
	struct appr_verdict v;
	appr_decide(&r->eff, &a, (const char *const *)patterns.v, patterns.nr, pw ? pw->pw_dir : NULL, &v);
	*out = v.decision;
	*reason = v.reason;
	r->fallback = appr_fallback(&r->eff, &v, &r->fallback_reason);
	if (a.top_resolved)
		r->exec_argv = strvec_json(&a.exec_argv);
	r->executables = appr_executables_json(&a);
	if (!a.ok && a.reason)
		r->detail = xstrdup(a.reason);
	for (size_t i = 0; !r->detail && i < a.nr; i++) /* an executable-only entry did not cover it: why */
		if (a.cmds[i].code)
			r->detail = xstrdup(a.cmds[i].code);
	appr_verdict_release(&v);
	appr_analysis_release(&a);
	strvec_clear(&patterns);
	appr_store_release(&s);
	return 0;
}

/* --- runs ------------------------------------------------------------------------------------------ */

static void reply_error(struct gateway_run *r, const struct err *e)
{
	daemon_reply_finish(r->pr, NULL, e);
	r->pr = NULL;
}

/* A denied run still has a task row (failed) so that its exec.denied event belongs somewhere. */
static void deny(struct daemon *d, struct gateway_run *r, const char *reason, const char *detail)
{
	struct err e = ERR_INIT;
	err_setd(&e, E_PERMISSION_DENIED,
		 json_pack("{s:s,s:s,s:s,s:s?}", "host", "gateway", "task_id", r->run_id, "reason", reason, "detail",
			   detail),
		 "denied by the gateway's exec approvals (%s)%s%s", reason, detail ? ": " : "", detail ? detail : "");
	json_t *err_json = err_to_json(&e);
	_cleanup_free_ char *error_text = json_to_compact(err_json);
	json_decref(err_json);
	struct err ignored = ERR_INIT;
	long long now = daemon_now();
	if (db_run(d->db, &ignored,
		   "INSERT INTO tasks (id, session_id, command, status, created_by, execution_user, "
		   "error, created_at, finished_at) VALUES (?, ?, 'exec.run', 'failed', ?, 'gateway', ?, ?, ?)",
		   "ssssii", r->run_id, r->session_id, r->user_id, error_text, now, now) < 0)
		log_error("exec.run %s: %s", r->run_id, ignored.message);
	err_clear(&ignored);
	daemon_exec_event(d, r->run_id, r->session_id, r->user_id, "exec.denied",
			  json_pack("{s:s,s:s?,s:O,s:s}", "reason", reason, "detail", detail, "argv", r->argv, "host",
				    "gateway"));
	daemon_audit(d, r->user_id, "exec.run", r->run_id, "denied",
		     json_pack("{s:s,s:s,s:s?}", "host", "gateway", "reason", reason, "detail", detail));
	reply_error(r, &e);
	err_clear(&e);
	run_free(r);
}

static void unlink_granted(struct gateway_run *r)
{
	for (struct gateway_run **p = &granted; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			return;
		}
}

static json_t *finished_event(const json_t *data)
{
	const char *out = json_get_str(data, "stdout");
	struct strbuf tail = STRBUF_INIT;
	appr_event_output(out ? out : "", out ? strlen(out) : 0, &tail);
	json_t *ev = json_pack("{s:O?,s:O?,s:b,s:s%,s:s}", "exitCode", json_object_get(data, "exitCode"), "timedOut",
			       json_object_get(data, "timedOut"), "success",
			       json_is_string(json_object_get(data, "outcome")) &&
				       !strcmp(json_get_str(data, "outcome"), "ok"),
			       "output", tail.buf ? tail.buf : "", tail.len, "host", "gateway");
	strbuf_release(&tail);
	return ev;
}

static void gateway_ran(struct daemon *d, const char *task_id, const json_t *data, const struct err *error, void *arg)
{
	struct gateway_run *r = arg;
	unlink_granted(r);
	json_t *ev = data ? finished_event(data)
			  : json_pack("{s:b,s:s,s:s}", "success", 0, "host", "gateway", "error",
				      error ? error->message : "no result");
	daemon_exec_event(d, task_id, r->session_id, r->user_id, "exec.finished", ev);
	json_t *result = NULL;
	if (data) {
		result = json_deep_copy(data);
		json_object_set_new(result, "task_id", json_string(task_id));
		json_object_set_new(result, "runId", json_string(task_id));
		json_object_set_new(result, "host", json_string("gateway"));
	}
	daemon_reply_finish(r->pr, result, result ? NULL : error);
	r->pr = NULL;
	run_free(r);
}

static void submit(struct daemon *d, struct gateway_run *r, const char *why)
{
	if (!r->exec_argv) {
		struct err e = ERR_INIT;
		err_setd(&e, E_NOT_FOUND, json_pack("{s:s}", "path", "argv"), "%s: command not found on the gateway",
			 json_string_value(json_array_get(r->argv, 0)));
		reply_error(r, &e);
		err_clear(&e);
		run_free(r);
		return;
	}
	json_t *p = json_pack("{s:O,s:s,s:s}", "argv", r->exec_argv, "cwd", r->cwd, "host", "gateway");
	if (r->timeout_ms)
		json_object_set(p, "timeoutMs", r->timeout_ms);
	if (r->home)
		json_object_set_new(p, "home", json_string(r->home));
	struct task_spec spec = { .command = "exec.run",
				  .params = p,
				  .env = r->env,
				  .session_id = r->session_id,
				  .created_by = r->user_id,
				  .execution_user = r->execution_user,
				  .worktree_id = r->worktree_id,
				  .with_token = 1,
				  .task_id = r->run_id,
				  .judge = daemon_exec_outcome,
				  .on_done = gateway_ran,
				  .arg = r };
	struct err e = ERR_INIT;
	_cleanup_free_ char *task_id = NULL;
	r->next = granted; /* before the executor can ask */
	granted = r;
	int rv = daemon_task_submit(d, &spec, &task_id, &e);
	json_decref(p);
	if (rv < 0) {
		unlink_granted(r);
		reply_error(r, &e);
		err_clear(&e);
		run_free(r);
		return;
	}
	daemon_audit(d, r->user_id, "exec.run", r->run_id, "started",
		     json_pack("{s:s,s:s,s:s}", "host", "gateway", "decision", why, "argvSha256", r->argv_sha256));
	daemon_exec_event(d, r->run_id, r->session_id, r->user_id, "exec.started",
			  json_pack("{s:O,s:O,s:s,s:s,s:s}", "argv", r->argv, "execArgv", r->exec_argv, "cwd", r->cwd,
				    "host", "gateway", "decision", why));
}

static void asked(struct daemon *d, int verdict, const char *why, void *arg)
{
	struct gateway_run *r = arg;
	if (verdict > 0)
		submit(d, r, why);
	else if (verdict == 0)
		deny(d, r, "approval-denied", why);
	else if (r->fallback == APPR_ALLOW)
		submit(d, r, "askFallback (nobody who may decide is connected)");
	else
		deny(d, r, r->fallback_reason, "nobody who may decide is connected; askFallback denies");
}

/* --- the method ------------------------------------------------------------------------------------- */

static int run_params(struct rpc_ctx *rc, json_t *params, struct gateway_run *r, struct appr_levels *request,
		      struct err *e)
{
	json_t *argv, *env, *timeout = json_object_get(params, "timeout_ms");
	const char *security, *ask, *agent = json_get_str(params, "agent_id");
	if (daemon_need_argv(params, &argv, e) < 0 || daemon_exec_env_param(rc, params, &env, e) < 0 ||
	    daemon_level_param(params, "security", appr_security_parse, "deny|allowlist|full", "deny", &security, e) <
		    0 ||
	    daemon_level_param(params, "ask", appr_ask_parse, "off|on-miss|always", NULL, &ask, e) < 0 ||
	    (agent && appr_agent_id_check(agent, e) < 0))
		return -1;
	static const char *const not_here[] = { "node", "cwd", NULL };
	for (size_t i = 0; not_here[i]; i++)
		if (json_object_get(params, not_here[i]))
			return err_setd(
				e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", not_here[i]),
				"params.%s: not for host \"gateway\" (it runs in the worktree with the executor's "
				"environment)",
				not_here[i]);
	if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) < 1))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "timeout_ms"),
				"params.timeout_ms: expected a positive integer (milliseconds)");
	*request = (struct appr_levels){ appr_security_parse(security), ask ? appr_ask_parse(ask) : APPR_UNSET,
					 APPR_UNSET };
	r->argv = json_deep_copy(argv);
	r->env = env && json_object_size(env) ? json_deep_copy(env) : NULL;
	r->timeout_ms = timeout ? json_incref(timeout) : NULL;
	r->agent = xstrdup(agent ? agent : "default");
	appr_argv_sha256(r->argv, r->argv_sha256);
	return 0;
}

int daemon_gateway_exec(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon *d = D(rc);
	struct appr_levels request;
	struct gateway_run *r = xcalloc(1, sizeof(*r));
	r->d = d;
	_cleanup_json_ json_t *wt = NULL;
	_cleanup_free_ char *owner = NULL;
	const char *session_id = NULL, *reason = NULL;
	enum appr_decision decision;
	if (daemon_need_user(rc, e) < 0 || run_params(rc, params, r, &request, e) < 0 ||
	    !(wt = daemon_run_worktree(rc, params, e)) ||
	    daemon_session_param(rc, params, &session_id, &owner, e) < 0 ||
	    daemon_execution_user_for(d, json_get_str(wt, "created_by"), &r->execution_user, e) < 0) {
		run_free(r);
		return -1;
	}
	r->run_id = daemon_new_id();
	r->user_id = xstrdup(P(rc)->user_id);
	r->owner = xstrdup(owner ? owner : P(rc)->user_id);
	r->session_id = session_id ? xstrdup(session_id) : NULL;
	r->worktree_id = xstrdup(json_get_str(wt, "id"));
	r->cwd = xstrdup(json_get_str(wt, "path"));
	if (d->cfg->execution.unix_user_mode == CONFIG_MODE_SANDBOX) /* one kept home per agor user, as for sandbox */
		r->home = xstrdup(json_get_str(wt, "created_by"));
	if (decide(d, r, &request, &decision, &reason, e) < 0) {
		run_free(r);
		return -1;
	}
	_cleanup_free_ char *run_id = xstrdup(r->run_id);
	int deferred = rc->id && !rc->in_batch; /* else the caller gets the run's id now */
	r->pr = daemon_reply_defer(rc);
	if (decision == APPR_ALLOW) {
		submit(d, r, reason);
	} else if (decision == APPR_DENY) {
		deny(d, r, reason, r->detail);
	} else {
		struct exec_approval_ask a = { "gateway", r->run_id,	  r->session_id, r->user_id,	 r->owner,
					       r->argv,	  r->argv_sha256, "the gateway", r->executables, asked,
					       r };
		daemon_exec_approval(d, &a);
	}
	if (deferred)
		return RPC_DEFERRED;
	*result = json_pack("{s:s}", "task_id", run_id);
	return 0;
}

/* exec.gateway_grant {session_token} → {argv, cwd, env?}: what the token's gateway run may run without the sandbox,
 * with which environment overrides (none: no env). */
int method_gateway_grant(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	_cleanup_free_ char *task_id = NULL;
	if (daemon_executor_authenticate(D(rc), "exec.gateway_grant", params, &task_id, e) < 0)
		return -1;
	struct gateway_run *r = granted;
	while (r && strcmp(r->run_id, task_id))
		r = r->next;
	if (!r) {
		daemon_audit_refusal(D(rc), "executor", "exec.gateway_grant", task_id, NULL);
		return err_set(e, E_PERMISSION_DENIED, "task %s is not a gateway run the daemon approved", task_id);
	}
	*result = json_pack("{s:O,s:s,s:O?}", "argv", r->exec_argv, "cwd", r->cwd, "env", r->env);
	return 0;
}
