/* executor.h — runs one validated executor payload (docs/payloads.md): resolves and confines its paths, decides
 * the execution user, and performs (or, for a dry run, plans) the command.
 * Never touches anything outside the data home's repos/ and worktrees/, never prints to stdout.
 *
 * executor_execute(p, ctx, &data, e):
 *   0 with data = the command's result object (or {dryRun, command, user, impersonate, dataHome, plan}
 *   for a dry run), or -1 with e set to one of the docs/payloads.md#results codes.
 *   Impersonation (asUser ≠ the current user) is the caller's job: executor_needs_impersonation()
 *   tells, and executor_forward_payload() gives the text to hand to the impersonated executor
 *   (with dataHome pinned to this executor's effective data home, and always a policy: the
 *   payload's own, else this executor's, which runs as the daemon's user and reads its config).
 *   ctx->cfg has the payload's policy applied (config_apply_policy): tmux.attach decides from it
 *   whether panes are sandboxed and hands it to each pane's sandbox-shell (--policy).
 *   prompt runs the agent CLI (prompt.h); tmux.attach and zellij.attach hand a terminal to the
 *   daemon (terminal.h).
 */
#ifndef AGOR_EXECUTOR_H
#define AGOR_EXECUTOR_H

#include <jansson.h>

#include "config.h"
#include "err.h"
#include "payload.h"
#include "strbuf.h"

struct executor_context {
	const struct config *cfg; /* loaded with the payload's dataHome applied as a flag, then its policy */
	int dry_run;
	int progress;		  /* git progress lines on stderr */
	const char *current_user; /* the effective user's name (executor_needs_impersonation's), NULL if unknown */
};

int executor_execute(const struct payload *p, const struct executor_context *ctx, json_t **data, struct err *e);

/* 1 when p asks for a user other than the effective one (and sets *user, malloc'd); 0 otherwise;
 * -1 with E_IMPERSONATION_FAILED when asUser is unusable (no such user, or already impersonated as
 * someone else). */
int executor_needs_impersonation(const struct payload *p, char **current_user, struct err *e);
/* The payload to send to the impersonated executor: p's text with dataHome set, and policy set to
 * cfg's execution policy when p has none. */
char *executor_forward_payload(const struct payload *p, const struct config *cfg);
/* Maps internal error codes (SYSTEM_ERROR by errno, CONFIG_ERROR, …) onto the stable docs/payloads.md#results codes. */
void executor_publish_error(struct err *e);
/* Exit status for an error code (docs/payloads.md#results): 2 for invalid input, 1 otherwise. */
int executor_exit_status(const char *code);

#endif
