/* node_runner.h — the headless node's engine: one authenticated WebSocket to its gateway at a time, the gateway's
 * system.run requests run through `agor approvals exec` under this host's own approvals file, every descriptor
 * on lib/loop. Never runs a request its own policy has not admitted; the gateway's security/ask only tighten it.
 */
#ifndef AGOR_NODE_RUNNER_H
#define AGOR_NODE_RUNNER_H

/*
 * Contract
 * --------
 * node_runner_run(cfg, e) connects to cfg->url (pinning cfg->fingerprint when given), says node.hello with the
 * node's id and token, and while approved serves the connection:
 *   - system.run {runId, argv, cwd?, env?, security?, ask?, agentId?, timeoutMs?}: at most NODE_MAX_RUNS at
 *     once; runs `SELF approvals exec --ask-stdin --agent A [--security S] [--ask K] [--timeout T] -- ARGV…`
 *     (security deny when the request names none) in its own process group, with only the env overrides
 *     cfg->env_allow lists (exec_env.h) and AGOR_HOME; its exec.* events go to the gateway as node.event, an
 *     exec.ask becomes node.ask and the gateway's answer the child's stdin; the answer to system.run is
 *     {runId, exitCode, output, success, timedOut, denied?, reason?, error?}, cut to fit the gateway's limit.
 *     A run outliving timeoutMs by NODE_BACKSTOP_GRACE_MS is killed.
 *   - anything else with an id is answered UNKNOWN_COMMAND.
 * When the connection ends its runs are killed; the runner reconnects with jittered exponential backoff
 * (NODE_BACKOFF_MIN_MS .. NODE_BACKOFF_MAX_MS). A pending pairing is waited for the same way.
 * Returns -1 with E_AUTH_FAILED when the gateway refuses the token (revoked); with cfg->once, after the first
 * attempt: 0 when a connection was served, else -1 with why. It never returns otherwise.
 */

#define NODE_MAX_RUNS	       8
#define NODE_BACKOFF_MIN_MS    500
#define NODE_BACKOFF_MAX_MS    30000
#define NODE_BACKSTOP_GRACE_MS 10000

#include <jansson.h>

#include "err.h"
#include "strbuf.h"
#include "strvec.h"

struct node_runner_config {
	const char *url, *fingerprint;		    /* the gateway; fingerprint: its certificate's SHA-256, or NULL */
	const char *node_id, *display_name, *token; /* from node.json */
	const char *home;			    /* this host's AGOR_HOME (the runs get it) */
	const char *env_allow;			    /* this host's execution.exec_env_allow, or NULL */
	const char *self;			    /* the agor binary */
	int once;
};

int node_runner_run(const struct node_runner_config *cfg, struct err *e);

/* The line reader of a run's stderr (exported for its unit test): each complete line of pending goes to fn (without
 * its '\n'), then they are dropped at once; *scanned (0 at first) is how much of what is left is known to hold no
 * newline, so a long line arriving in many pieces is looked at once, not once per piece. */
void node_split_lines(struct strbuf *pending, size_t *scanned, void (*fn)(const char *line, size_t len, void *arg),
		      void *arg);

/* The `SELF approvals exec …` command line for a system.run request's params (the gateway's, untrusted): 0 and
 * args filled, or -1 with E_INVALID_PAYLOAD naming the field. Every word of params.argv comes after "--". */
int node_run_args(const char *self, json_t *params, struct strvec *args, struct err *e);

#endif
