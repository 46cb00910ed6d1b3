/* unixmode.h — the modes of docs/modes.md: who a session executes as, and the sudoers rules allowing it.
 * Never picks root or the daemon user for isolation; never grants sudo beyond executor/admin. */
#ifndef AGOR_UNIXMODE_H
#define AGOR_UNIXMODE_H

/*
 * Contract
 * --------
 * unix_mode_execution_user() is the one decision (the daemon calls it for every session):
 *   simple    → the daemon user (no impersonation);
 *   sandbox   → the daemon user too: no sudo; what the executor starts runs in the kernel sandbox
 *               (sandbox.h) with a per-user home from the data home's homes/;
 *   insulated → executor_user, which must be a valid name other than root and the daemon user;
 *   strict    → the session *creator's* unix_username (never the prompter's); a creator without
 *               one is refused with E_ISOLATION_UNAVAILABLE naming the admin command that fixes
 *               it; root and the daemon user are refused (E_PERMISSION_DENIED).
 * The returned pointer borrows from the settings or the creator.
 *
 * unix_mode_sudoers() renders /etc/sudoers.d/agor for a mode: the daemon user may run
 *   `<bin> executor --stdin` as the execution user(s) — insulated: (executor_user); strict:
 *   (%agor_users, !root); simple, sandbox: nobody — and `<bin> admin *` as root, NOPASSWD, nothing else.
 *   Names are checked against the user-name rule; bin must be a clean absolute path made of
 *   [A-Za-z0-9._/+-] only, so nothing in it is special to sudoers.
 */

#include <stdbool.h>

#include "err.h"
#include "strbuf.h"

enum unix_mode { UNIX_MODE_SIMPLE, UNIX_MODE_INSULATED, UNIX_MODE_STRICT, UNIX_MODE_SANDBOX };

#define UNIX_MODE_DEFAULT_DAEMON_USER	"agor"
#define UNIX_MODE_DEFAULT_EXECUTOR_USER "agor_executor"
#define UNIX_MODE_DEFAULT_BIN		"/usr/local/bin/agor"

int unix_mode_parse(const char *s, enum unix_mode *out); /* -1 when not simple|insulated|strict|sandbox */
const char *unix_mode_name(enum unix_mode m);
/* execution.worktree_rbac when not configured: true in strict. */
bool unix_mode_worktree_rbac_default(enum unix_mode m);

struct unix_mode_settings {
	enum unix_mode mode;
	const char *daemon_user;   /* the user the daemon runs as */
	const char *executor_user; /* execution.executor_unix_user */
};

struct unix_mode_creator {
	const char *label;	   /* how messages name the agor user (email or id) */
	const char *unix_username; /* NULL or "" when the user has none */
};

int unix_mode_execution_user(const struct unix_mode_settings *s, const struct unix_mode_creator *creator,
			     const char **user, struct err *e);
/* True when the execution user differs from the daemon user (the executor must impersonate). */
bool unix_mode_impersonates(const struct unix_mode_settings *s, const char *execution_user);

struct unix_mode_sudoers {
	enum unix_mode mode;
	const char *daemon_user;
	const char *executor_user;
	const char *bin;
};
int unix_mode_sudoers(const struct unix_mode_sudoers *s, struct strbuf *out, struct err *e);
/* True when bin is acceptable in a sudoers rule (see above). */
bool unix_mode_bin_valid(const char *bin);

#endif
