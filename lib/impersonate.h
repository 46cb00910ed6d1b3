/* impersonate.h — docs/payloads.md#impersonation: re-executes the executor as another Unix user through `sudo -n -u
 * USER`, feeds it the payload on stdin and hands back its one result line and exit status. Never puts the payload
 * (which may hold a session token) in argv or the environment.
 *
 * impersonate_run(): runs `sudo -n -u USER -- SELF executor --stdin` with a minimal environment
 * (PATH, AGOR_IMPERSONATED=1, AGOR_LOG_LEVEL when set) — sudo's env_reset applies on top; the
 * inner executor's stderr is passed on to ours. Returns 0 with *line (the inner result, validated
 * as one JSON object with a boolean "success") and *exit_code, or -1 with E_IMPERSONATION_FAILED
 * carrying sudo's message (e.g. "a password is required") when no valid result came back.
 */
#ifndef AGOR_IMPERSONATE_H
#define AGOR_IMPERSONATE_H

#include <sys/types.h>

#include "err.h"
#include "strbuf.h"
#include "strvec.h"

#define IMPERSONATED_ENV "AGOR_IMPERSONATED"

/* The sudo binary used (absolute path), or NULL when none is installed. */
const char *impersonate_sudo_path(void);
/* The name of the effective user (malloc'd), or NULL when it has no passwd entry. */
char *impersonate_current_user(void);
/* The name of the first entry of uid in a passwd file (*name malloc'd): 0 when found; 1 when the file does not
 * settle it (missing, unreadable, no entry, a line over 4 KiB), and getpwuid, which may ask more than the file,
 * decides instead. */
int impersonate_passwd_name(const char *file, uid_t uid, char **name);
/* The absolute path of the running agor binary (malloc'd), or NULL. */
char *impersonate_self_path(void);
/* The exact argv used, for dry-run plans and tests. */
void impersonate_argv(const char *user, const char *self, struct strvec *argv);

int impersonate_run(const char *user, const char *self, const char *payload, size_t len, int timeout_ms,
		    struct strbuf *line, int *exit_code, struct err *e);

/* The same through the root `agor admin serve` at socket_path instead of sudo (docs/admin.md#socket): the executor's
 * stdin and stdout are socket pairs whose far ends travel with the request, its stderr is ours; the answer gives
 * its exit status. At timeout_ms the connection is closed, and the server kills the executor's process group. */
int impersonate_run_socket(const char *socket_path, const char *user, const char *payload, size_t len, int timeout_ms,
			   struct strbuf *line, int *exit_code, struct err *e);

#endif
