/* exec_env.h — which environment overrides a command on a node or the gateway may get (exec.run's env): only
 * names on the operator's list, execution.exec_env_allow, and never a name agor keeps for itself.
 *
 * Contract:
 *   The list is ':'-separated; an entry is a name ([A-Za-z_][A-Za-z0-9_]*) or a name prefix ending in '*'
 *   ("LC_*"); a lone "*" is refused (it would pass GIT_*, SSH_*, LD_*, …). NULL (the setting null) passes none.
 *   exec_env_refusal(list, name) → NULL when name may pass, else why not, one of the EXEC_ENV_* texts below:
 *     not a valid name; kept by agor whatever the list says (exec_env_name_ours's names — loader, shell
 *     and interpreter variables, PATH, HOME, GIT_CONFIG* — and AGOR_*); or not on the list.
 *   The daemon refuses an exec.run naming a refused variable (INVALID_PAYLOAD, params.env.NAME, naming the
 *   setting); a node drops it from what it runs and logs it, whatever its gateway sent.
 */
#ifndef AGOR_EXEC_ENV_H
#define AGOR_EXEC_ENV_H

#include <stddef.h>

#include "err.h"

#define EXEC_ENV_SETTING "execution.exec_env_allow"
#define EXEC_ENV_DEFAULT "LANG:LC_*:TZ:TERM:NO_COLOR:COLUMNS:LINES"

#define EXEC_ENV_INVALID "not a valid environment variable name (letters, digits, _)"
#define EXEC_ENV_KEPT                                                                                                  \
	"agor keeps it for itself whatever " EXEC_ENV_SETTING " says (loader, shell and interpreter variables, "       \
	"PATH, HOME, GIT_CONFIG* and AGOR_*)"
#define EXEC_ENV_UNLISTED                                                                                              \
	EXEC_ENV_SETTING " does not list it (an operator adds a name only if no program reads it as code to run "      \
			 "or as where to connect: GIT_*, SSH_*, *_PROXY, PAGER, EDITOR never qualify)"

const char *exec_env_refusal(const char *list, const char *name);
/* 1 when name is one agor never lets a payload's env set (loader, shell and interpreter variables, PATH, HOME,
 * GIT_CONFIG*): the executor refuses a payload naming it, exec_env_refusal keeps it whatever the list says. */
int exec_env_name_ours(const char *name);
/* The setting's check (config.c): 0, or -1 with e set and *at the byte offset of the bad entry. */
int exec_env_list_check(const char *list, size_t *at, struct err *e);

#endif
