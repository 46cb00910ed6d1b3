/* execrun.h — the executor's exec.run: one program in a worktree, inside the sandbox, output captured.
 * The worktree's git directories are found from its .git file and must lie in the data home's repos/. */
#ifndef AGOR_EXECRUN_H
#define AGOR_EXECRUN_H

/*
 * Contract
 * --------
 * execrun(&req, &data, e) runs req.argv with cwd = req.cwd (an already confined worktree path)
 * under the sandbox of execution.sandbox (sandbox.h), with a rebuilt environment (PATH, HOME,
 * USER, LOGNAME, LANG, TERM plus the payload's filtered env), stdin /dev/null, the timeout
 * (req.timeout_ms, else execution.timeout_ms) killing the whole run. data:
 *   {"exitCode": N, "timedOut": B, "outcome": "ok"|"exit-nonzero"|"timeout"|"oom"|"pids-limit",
 *    "stdout": S, "stderr": S, "stdoutDroppedBytes": N, "stderrDroppedBytes": N,
 *    "events": {"oomKills": N, "pidsLimitHits": N, …}, "sandbox": RECEIPT}
 * stdout keeps its first EXECRUN_MAX_CAPTURE bytes, stderr its last. A sandbox control that is
 * required and unavailable → E_ISOLATION_UNAVAILABLE and nothing runs — unless
 * execution.fallback_to_unified is true: then the program runs unsandboxed, a warning is
 * logged and the receipt says {"enabled": false, "fallback": true, "missing": …}.
 * A worktree whose .git file points outside repos/ → E_PATH_OUTSIDE_DATA_HOME.
 * req.unsandboxed (host gateway, granted by the daemon: executor.c) runs the program in the worktree with the
 * same environment, timeout and capture but no sandbox; the receipt says {"enabled": false, "host":
 * "gateway", "reason": …}.
 * req.home (unix_user_mode sandbox: one per agor user) names a directory under the data home's
 * homes/ (made 0700 when missing; confined like every path) that is $HOME, read-write and kept
 * between runs; without it $HOME is the caller's home path on an empty private tmpfs.
 *
 * execrun_plan(&req, &step, e): the dry run — the same checks and the receipt the run would
 * have (cgroup planned, not created), without side effects.
 */

#include <jansson.h>

#include "config.h"
#include "err.h"

#define EXECRUN_MAX_CAPTURE (1u << 20)

struct execrun_request {
	const struct config *cfg;
	const char *cwd; /* confined, canonical */
	json_t *argv;	 /* array of strings (validated) */
	json_t *env;	 /* object of strings (validated), or NULL */
	long long timeout_ms;
	const char *home; /* relative to DATA_HOME/homes, or absolute inside it; NULL: a private tmpfs */
	const char *unsandboxed; /* host gateway: run without the sandbox, for this reason (the caller verified
				  * that the daemon granted it); NULL: execution.sandbox decides */
};

int execrun(const struct execrun_request *req, json_t **data, struct err *e);
int execrun_plan(const struct execrun_request *req, json_t **step, struct err *e);

#endif
