/* daemon_exec_params.h — exec.run's shared parameter checks, for every host (sandbox, gateway, node). Services
 * layer (daemon.h). */
#ifndef AGOR_DAEMON_EXEC_PARAMS_H
#define AGOR_DAEMON_EXEC_PARAMS_H

#include <jansson.h>

#include "err.h"
#include "rpc.h"

/* exec.run's shared parameter checks: argv a non-empty array of strings; a level
 * (absent → dflt); params.session_id a session of the caller (*owner, may be NULL: its creator); the run's
 * worktree (params.worktree_id, owned by the caller or the caller an admin). The judge of runs whose
 * program ended badly (exit ≠ 0, timeout, limits). */
int daemon_need_argv(json_t *params, json_t **argv, struct err *e);
int daemon_level_param(json_t *params, const char *key, int (*parse)(const char *), const char *names, const char *dflt,
		       const char **out, struct err *e);
/* params.session_id, when given, must be a session the caller may see (else an unknown id, NOT_FOUND). */
int daemon_visible_session_param(struct rpc_ctx *rc, json_t *params, struct err *e);
int daemon_session_param(struct rpc_ctx *rc, json_t *params, const char **session_id, char **owner, struct err *e);
/* params.env of exec.run on a node or the gateway (*env borrowed, NULL when absent): every name must pass
 * execution.exec_env_allow (exec_env.h), else INVALID_PAYLOAD "params.env.NAME: not allowed: …" naming it. */
int daemon_exec_env_param(struct rpc_ctx *rc, json_t *params, json_t **env, struct err *e);
json_t *daemon_run_worktree(struct rpc_ctx *rc, json_t *params, struct err *e);
int daemon_exec_outcome(const json_t *data, struct err *why);

#endif
