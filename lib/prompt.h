/* prompt.h — the executor's prompt command (docs/usage.md#prompts): the agent's own CLI run in the worktree, its event
 * stream relayed to the daemon, its permission requests brokered, its end reported with token usage.
 * Never puts the API key anywhere but the egress proxy (network proxy: the agent holds a per-task sentinel, egress.h)
 * or, with network host, the agent's environment; never gives the agent the session token. */
#ifndef AGOR_PROMPT_H
#define AGOR_PROMPT_H

/*
 * Contract
 * --------
 * prompt_run(req, &data, e): connects to req->daemon_url, asks get_execution_context (the CLI's
 * resume id and the daemon's agents.<tool> settings: command, base_url, model), fetches the API key
 * just in time (get_api_key; absent → the run fails with the daemon's NOT_FOUND naming the fix) — handed to the
 * run's egress proxy with a fresh sentinel for the agent when the network is proxy (execrun.h), then
 * runs the CLI (agent.h) in req->cwd in its own process group, with PATH/HOME/USER/LOGNAME/LANG/TERM,
 * the payload's filtered env and the adapter's variables only. Every line of its stdout becomes
 * report_message notifications in order; Claude Code's permission prompt tool (`agor executor
 * mcp-permission --socket S`, see mcp_permission.h) reaches a Unix socket of this executor in a private
 * 0700 run directory, and each request becomes a blocking request_permission call. SIGTERM/SIGINT/SIGHUP
 * (daemon cancellation) end the agent's process group (SIGTERM, SIGKILL after 3 s) and the run is
 * cancelled; the agent is killed too when this executor dies (parent-death signal).
 * The end is one report_completion {status completed|failed|cancelled, token_usage, agent_session_id,
 * error?}. data = {status, exitCode, messages, agentSessionId, tokenUsage, garbageLines}; a failed run is
 * E_EXEC_FAILED (details: reason, exitCode, stderrTail), a cancelled one E_CANCELLED.
 */

#include <jansson.h>

#include "callback.h"
#include "config.h"
#include "err.h"
#include "strbuf.h"

struct prompt_request {
	const struct config *cfg;
	struct callback_target daemon; /* daemonUrl and how a remote one is verified */
	const char *session_token;     /* secret */
	const char *session_id, *task_id;
	const char *prompt;
	const char *tool;
	const char *permission_mode; /* NULL: the session's */
	const char *cwd;	     /* confined worktree path */
	json_t *env;		     /* the payload's filtered env, or NULL */
	const char *home;	     /* unix_user_mode sandbox: the agor user's kept home (as exec.run's), or NULL */
	const char *repo_path;	     /* the repository the daemon recorded for the worktree (confined), or NULL */
};

int prompt_run(const struct prompt_request *req, json_t **data, struct err *e);
/* The dry run: the sandbox receipt the agent CLI (agents.<tool>.command of req->cfg) would run under. */
int prompt_plan(const struct prompt_request *req, json_t **receipt, struct err *e);

/* Signal handlers that end every started child (their groups) and remember the request to stop. */
void prompt_install_stop_handlers(void);

/* The permission broker's reader (exported for its unit test): reads fd until line holds a '\n' (0), or -1 on end
 * of file, an error, 5 s of silence or more than 1 MiB. Each byte read is looked at once, however it is cut up. */
int prompt_read_request_line(int fd, struct strbuf *line);

#endif
