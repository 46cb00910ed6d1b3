/* unixperm_links.h — owner links ~/agor/worktrees/<name>-<id8>, made, found and removed as the owner (never as
 * root in a directory the user controls). */
#ifndef AGOR_UNIXPERM_LINKS_H
#define AGOR_UNIXPERM_LINKS_H

/*
 * Contract
 * --------
 * Home links. Owner links ~/agor/worktrees/<name>-<id8> are made and removed by a forked child
 * that has dropped to the owner's uid, gid and groups, so nothing root-only ever happens in a
 * directory the user controls.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "err.h"
#include "strvec.h"
#include "unixperm_account.h"

/* Owner links in ~/agor/worktrees (as the user). link_add replaces a stale link of that name;
 * returns 1 when something changed (or, with dry_run, would change), 0 when the link already
 * pointed at target. */
int unixperm_link_add(const struct unixperm_user *u, const char *link_name, const char *target, bool dry_run,
		      struct err *e);
/* Lists (names appended to found) the symlinks in ~/agor/worktrees whose name ends in
 * "-<suffix>" and whose target is missing or a directory of group gid. */
int unixperm_links_find(const struct unixperm_user *u, const char *suffix, gid_t gid, struct strvec *found,
			struct err *e);
/* Removes those links (by name, as the user; a name that is no longer a symlink is left alone). */
int unixperm_links_remove(const struct unixperm_user *u, const struct strvec *names, struct err *e);
/* "<home>/agor/worktrees" for messages and dry-run output. */
char *unixperm_links_dir(const struct unixperm_user *u);

#endif
