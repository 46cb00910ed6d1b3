/* payload.h — the executor's typed input (docs/payloads.md#commands): strict schema validation of one JSON payload.
 * Never accepts an unknown field, a wrong type, a missing field or an empty required string; every
 * refusal is E_INVALID_PAYLOAD with details {"path":"params.url","reason":…} naming the field.
 *
 * Contract:
 *   payload_parse(text, len, &p, e) → 0 and a filled struct payload, or -1 with e set to
 *     E_INVALID_JSON, E_INVALID_PAYLOAD or E_UNKNOWN_COMMAND (details.supportedCommands).
 *   The struct borrows strings from p.root; payload_release frees everything.
 *   env entries whose names are dangerous for a child (LD_*, DYLD_*, BASH_ENV, ENV, PATH, HOME, SHELL,
 *   IFS, NODE_OPTIONS, PYTHON*, PERL5*, RUBYOPT, GIT_CONFIG*) are refused, not silently dropped.
 *   policy (optional): the daemon's execution policy, {"execution.sandbox.enabled":"true", …}: only
 *   the policy keys of config.h (execution.sandbox.*, execution.fallback_to_unified,
 *   execution.timeout_ms), each with its canonical text (a string; null for a nullable key);
 *   anything else is refused naming policy.KEY (config_policy_check). The executor applies it over
 *   the config of the user it runs as, which may only make it stricter (config_apply_policy).
 */
#ifndef AGOR_PAYLOAD_H
#define AGOR_PAYLOAD_H

#include <jansson.h>

#include "err.h"

#define PAYLOAD_MAX_BYTES (4u << 20)

enum payload_command {
	CMD_PROMPT,
	CMD_GIT_CLONE,
	CMD_GIT_WORKTREE_ADD,
	CMD_GIT_WORKTREE_REMOVE,
	CMD_ZELLIJ_ATTACH,
	CMD_TMUX_ATTACH,
	CMD_TMUX_CLOSE,
	CMD_EXEC_RUN,
};

struct payload {
	json_t *root; /* owned */
	enum payload_command command;
	const char *command_name;
	json_t *params;			/* borrowed from root: the validated params object */
	json_t *env;			/* borrowed; may be NULL */
	const char *as_user;		/* NULL when absent */
	const char *daemon_url;		/* NULL when absent */
	const char *daemon_ca;		/* PEM: what a remote daemonUrl's certificate chains to; NULL when absent */
	const char *daemon_fingerprint; /* the SHA-256 a remote daemonUrl's certificate must have; NULL when absent */
	const char *session_token;	/* NULL when absent; a secret: never log it */
	const char *data_home;		/* NULL when absent */
	const char *data_home_id;	/* the daemon's data home's id (paths.h), or NULL: not known yet */
	json_t *policy;			/* borrowed; NULL when absent: the daemon's execution policy */
};

int payload_parse(const char *text, size_t len, struct payload *p, struct err *e);
void payload_release(struct payload *p);

/* A string param, or NULL when absent. */
const char *payload_str(const struct payload *p, const char *name);
/* Any param (borrowed), or NULL when absent. */
json_t *payload_param(const struct payload *p, const char *name);
/* A boolean param, or dflt when absent. */
int payload_bool(const struct payload *p, const char *name, int dflt);
/* The supported command names as a new JSON array. */
json_t *payload_supported_commands(void);
/* True when s is a valid Unix user name for asUser (^[a-z_][a-z0-9_-]{0,31}$). */
int payload_valid_user_name(const char *s);

#endif
