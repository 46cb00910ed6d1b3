/* spawn.h — starting executors (docs/payloads.md#spawning) for the daemon and the CLI: local, sudo-wrapped, or through
 * the operator's command template; the payload goes on stdin, one result line comes back.
 * Never passes the daemon's environment on (only PATH, HOME, LANG, TERM), never builds a shell command
 * from data except the template, whose every substitution is shell-quoted.
 *
 * Modes:
 *   SPAWN_LOCAL     `<agor> executor --stdin`; when the execution user differs, the payload's asUser
 *                   makes the executor impersonate it itself (§3.5).
 *   SPAWN_SUDO      `sudo -n -u USER -- <agor> executor --stdin` started directly (one exec less).
 *   SPAWN_TEMPLATE  `/bin/sh -c <template rendered>` (e.g. kubectl run -i … -- agor executor --stdin).
 *   SPAWN_ADMIN     `sudo -n -- <agor> admin ARGS… --json` (just `<agor> admin …` when already root): the
 *                   daemon's one way to root (docs/admin.md), with the fixed argv it validated; stdin is
 *                   empty and admin's --json line has the executor's result shape. With admin_socket set,
 *                   the same argv goes to the root `agor admin serve` there instead (no process started,
 *                   docs/admin.md#socket).
 * Template placeholders: {payload_json} {command} {task_id} {session_id} {worktree_id} {unix_user}
 * {unix_user_uid} {unix_user_gid} {daemon_url}; each value is single-quoted for the shell, uid/gid come
 * from the passwd database; an unknown placeholder is an error (config load checks it first).
 *
 * Result: the last non-empty stdout line must be a JSON object with a boolean "success" (any size:
 * stdout is read whole). Otherwise E_EXECUTOR_RESULT_MISSING with details {exitStatus, stderrTail}.
 * The timeout kills the executor's whole process group (SIGTERM, then SIGKILL after 5 s) → E_TIMEOUT.
 */
#ifndef AGOR_SPAWN_H
#define AGOR_SPAWN_H

#include <jansson.h>

#include "err.h"
#include "strbuf.h"

enum spawn_mode { SPAWN_LOCAL, SPAWN_SUDO, SPAWN_TEMPLATE, SPAWN_ADMIN };

struct spawn_request {
	enum spawn_mode mode;
	const char *agor_path;	       /* the agor binary (LOCAL, SUDO) */
	const char *template;	       /* SPAWN_TEMPLATE: execution.executor_command_template */
	const char *unix_user;	       /* the execution user (SUDO: required; TEMPLATE: {unix_user}) */
	const char *const *admin_args; /* SPAWN_ADMIN: subcommand and arguments, NULL-terminated */
	const char *admin_socket;      /* SPAWN_ADMIN: execution.privileged_socket, or NULL for sudo */
	const char *payload;	       /* JSON text for stdin (may hold a session token: never in argv) */
	size_t payload_len;
	/* Template values (NULL → empty string). */
	const char *command, *task_id, *session_id, *worktree_id, *daemon_url;
	int dry_run;				  /* LOCAL/SUDO: add --dry-run (plan only) */
	void (*on_started)(pid_t pid, void *arg); /* the executor's pid (leader of its process group) */
	void *on_started_arg;
	void (*on_stderr)(const char *data, size_t len, void *arg); /* its stderr as it arrives (progress) */
	void *on_stderr_arg;
	int timeout_ms;	   /* 0 = none */
	int kill_grace_ms; /* 0 = 5000 */
};

struct spawn_result {
	json_t *result;	   /* the parsed result line (owned) */
	int exit_status;   /* the executor's exit code, 128+signal for a signal death */
	char *stderr_tail; /* last bytes of its stderr (owned) */
	pid_t pid;
};

int spawn_executor(const struct spawn_request *r, struct spawn_result *out, struct err *e);
void spawn_result_release(struct spawn_result *out);

/* Renders the template with shell-quoted values into out (exposed for tests and dry runs). */
int spawn_render_template(const struct spawn_request *r, struct strbuf *out, struct err *e);

#endif
