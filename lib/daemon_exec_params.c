/* daemon_exec_params.c — exec.run's shared checks (daemon_exec_params.h), used by the sandbox, gateway and node
 * hosts alike. Never passes a parameter it did not check: a bad one is refused naming params.KEY. */
#include <string.h>

#include "daemon_access.h"
#include "daemon_exec_params.h"
#include "exec_env.h"
#include "json.h"
#include "banned.h"

/* A run whose program did not end well (exit ≠ 0, timeout, OOM, pids limit) fails its task; the output
 * and the sandbox receipt stay in the task's result. */
int daemon_exec_outcome(const json_t *data, struct err *why)
{
	const char *outcome = json_get_str(data, "outcome");
	if (!outcome || !strcmp(outcome, "ok"))
		return 0;
	return err_set(why, E_EXEC_FAILED, "the program ended with outcome %s (exit code %lld)", outcome,
		       (long long)json_integer_value(json_object_get(data, "exitCode")));
}

int daemon_need_argv(json_t *params, json_t **argv, struct err *e)
{
	*argv = json_object_get(params, "argv");
	size_t i;
	json_t *item;
	int ok = json_is_array(*argv) && json_array_size(*argv) > 0;
	json_array_foreach(*argv, i, item) ok = ok && json_is_string(item);
	return ok ? 0
		  : err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "argv"),
			     "params.argv: expected a non-empty array of strings");
}

/* The worktree params.worktree_id names, when the caller owns it (or is an admin). */
json_t *daemon_run_worktree(struct rpc_ctx *rc, json_t *params, struct err *e)
{
	const char *id;
	if (daemon_need_str(params, "worktree_id", &id, e) < 0)
		return NULL;
	json_t *wt =
		daemon_one_row(D(rc), e, "worktree",
			       "SELECT w.*, r.path AS repo_path FROM worktrees w LEFT JOIN repos r ON r.id = w.repo_id "
			       "WHERE w.id = ?1 OR w.name = ?1",
			       id);
	if (wt && daemon_need_worktree_access(rc, json_get_str(wt, "id"), WT_OWNER, "worktree", id,
					      "run commands in it", e) < 0) {
		json_decref(wt);
		return NULL;
	}
	return wt;
}

/* A level parameter: absent → dflt; else one of the names parse() knows. */
int daemon_level_param(json_t *params, const char *key, int (*parse)(const char *), const char *names, const char *dflt,
		       const char **out, struct err *e)
{
	json_t *v = json_object_get(params, key);
	*out = v ? json_string_value(v) : dflt;
	if (v && (!*out || parse(*out) < 0))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", key), "params.%s: expected one of %s",
				key, names);
	return 0;
}

/* params.env of exec.run on a node or the gateway: an object of strings whose every name passes
 * execution.exec_env_allow (exec_env.h); anything else is refused naming the variable and the setting. */
int daemon_exec_env_param(struct rpc_ctx *rc, json_t *params, json_t **env, struct err *e)
{
	struct daemon *d = D(rc);
	*env = json_object_get(params, "env");
	if (!*env)
		return 0;
	if (!json_is_object(*env))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "env"),
				"params.env: expected an object of strings");
	const char *name, *allow = d->cfg->execution.exec_env_allow;
	json_t *value;
	json_object_foreach(*env, name, value)
	{
		const char *why = exec_env_refusal(allow, name);
		if (!json_is_string(value) || strlen(json_string_value(value)) != json_string_length(value))
			return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s+}", "path", "env.", name),
					"params.env.%s: expected a string value (without NUL bytes)", name);
		if (why)
			return err_setd(e, E_INVALID_PAYLOAD,
					json_pack("{s:s+,s:s,s:s?}", "path", "env.", name, "setting", EXEC_ENV_SETTING,
						  "allowed", allow),
					"params.env.%s: not allowed: %s (%s: %s)", name, why, EXEC_ENV_SETTING,
					allow ? allow : "null, no name passes");
	}
	return 0;
}

/* params.session_id, when given, must be a session the caller may see: a hidden one answers as an unknown
 * id (NOT_FOUND "no session with id ID"), before anything of it (its exec defaults) is used. */
int daemon_visible_session_param(struct rpc_ctx *rc, json_t *params, struct err *e)
{
	const char *sid = daemon_opt_str(params, "session_id");
	return sid ? daemon_need_session_access(rc, sid, WT_VIEW, "", NULL, e) : 0;
}

/* params.session_id, when given, must be a session of the caller (or the caller an admin); one the caller
 * may not even see answers as an unknown id. *owner (may be NULL) gets its creator. */
int daemon_session_param(struct rpc_ctx *rc, json_t *params, const char **session_id, char **owner, struct err *e)
{
	*session_id = daemon_opt_str(params, "session_id");
	if (!*session_id)
		return 0;
	if (daemon_visible_session_param(rc, params, e) < 0)
		return -1;
	_cleanup_json_ json_t *s =
		daemon_one_row(D(rc), e, "session", "SELECT id, created_by FROM sessions WHERE id = ?", *session_id);
	if (!s)
		return -1;
	if (!P(rc)->is_admin && strcmp(json_get_str(s, "created_by"), P(rc)->user_id))
		return err_set(e, E_PERMISSION_DENIED,
			       "session %s is not yours: exec.run in a session is for its creator "
			       "(or an admin)",
			       *session_id);
	if (owner)
		*owner = xstrdup(json_get_str(s, "created_by"));
	return 0;
}
