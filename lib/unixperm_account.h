/* unixperm_account.h — accounts: looking users and groups up, the shadow-utils tools run with a fixed argv and
 * environment, and work done in a child that has dropped to another user for good. Never runs a shell. */
#ifndef AGOR_UNIXPERM_ACCOUNT_H
#define AGOR_UNIXPERM_ACCOUNT_H

/*
 * Contract
 * --------
 * Accounts. groupadd, groupdel, gpasswd, useradd, userdel (and visudo, tar for setup/admin) run
 * by absolute path with a fixed argv, no shell, an environment of only PATH and LC_ALL=C, stdin
 * /dev/null, a timeout; a non-zero exit is an E_SYSTEM error carrying the tool's stderr.
 *
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "err.h"
#include "strbuf.h"
#include "strvec.h"

/* ---- accounts -------------------------------------------------------------------------------- */
struct unixperm_user {
	char *name;
	uid_t uid;
	gid_t gid;
	char *home;
	char *shell;
};
/* 1 and u filled when the user exists, 0 when not, -1 on a lookup error. */
int unixperm_user_lookup(const char *name, struct unixperm_user *u, struct err *e);
void unixperm_user_release(struct unixperm_user *u);
/* 1 and *gid when the group exists, 0 when not. */
int unixperm_group_lookup(const char *name, gid_t *gid);
/* Appends the group's listed members (gr_mem; users whose primary group it is are not
 * listed); 1 when the group exists, 0 when not. */
int unixperm_group_members(const char *name, struct strvec *members);
/* True when user is in group (listed member, or group is the user's primary group). */
bool unixperm_user_in_group(const struct unixperm_user *u, const char *group);
/* Checks name, existence, uid != 0 and membership of agor_users; fills u. Refusals are
 * E_INVALID_PAYLOAD (bad name), E_NOT_FOUND, E_PERMISSION_DENIED. */
int unixperm_require_agor_user(const char *name, struct unixperm_user *u, struct err *e);
/* The smallest uid of a normal (non-system) account: UID_MIN in /etc/login.defs, else 1000. */
uid_t unixperm_uid_min(void);

/* The fixed-argv tool runner: argv[0] must be absolute. stdout is appended to out when not NULL. */
int unixperm_run_tool(const char *const *argv, struct strbuf *out, struct err *e);
/* The same with the tool's stdout going to out_fd (the caller keeps it). */
int unixperm_run_tool_fd(const char *const *argv, int out_fd, struct err *e);
/* Thin wrappers; each validates its names again. system: allocate from the system range. */
int unixperm_groupadd(const char *group, bool system, struct err *e);
int unixperm_groupdel(const char *group, struct err *e);
int unixperm_group_add_member(const char *group, const char *user, struct err *e);
int unixperm_group_remove_member(const char *group, const char *user, struct err *e);
/* Replaces the member list of a managed group (users comma-joined; names validated). */
int unixperm_group_set_members(const char *group, const struct strvec *users, struct err *e);
/* A login account with a home (useradd -m -U -s /bin/bash -G agor_users). */
int unixperm_useradd_login(const char *user, struct err *e);
/* A system account without login shell, home `home` created (useradd -r -m -d home -s nologin -U).
 */
int unixperm_useradd_system(const char *user, const char *home, struct err *e);
int unixperm_userdel(const char *user, bool remove_home, struct err *e);

/* ---- work done as another user -----------------------------------------------------------------
 */
/* Forks; the child drops to u's uid, gid and groups for good, runs fn, sends out and any error
 * back over a pipe and exits. Returns fn's result as seen by the parent. */
int unixperm_run_as_user(const struct unixperm_user *u, int (*fn)(void *arg, struct strbuf *out, struct err *e),
			 void *arg, struct strbuf *out, struct err *e);

#endif
