/* adminconf.h — the root-owned /etc/agor/admin.yaml: the directories `agor admin` may act in.
 * Never accepts a file or parent directory that a non-root user owns or may write. */
#ifndef AGOR_ADMINCONF_H
#define AGOR_ADMINCONF_H

/*
 * Contract
 * --------
 * Format (YAML, one mapping, every value a clean absolute path other than "/"):
 *
 *     # /etc/agor/admin.yaml — where `agor admin` may act
 *     worktrees_dir: /home/agor/.agor/worktrees   # required
 *     repos_dir: /home/agor/.agor/repos           # required
 *     archive_dir: /var/backups/agor              # optional: delete-unix-user --archive
 *
 * Unknown keys, duplicate keys, non-scalar values, more than one document, the two roots
 * nested in one another, or archive_dir inside a root are errors (E_CONFIG, "file:line: key: …").
 *
 * Trust: the file is opened by walking from "/" with O_NOFOLLOW at every component (no symlink
 * anywhere on the way); every directory on the way and the file itself must be owned by root
 * and not writable by group or others; the file must be a regular file of at most 64 KiB.
 * The roots named inside are opened later by unixperm_open_root() (no symlinks either).
 *
 * A different file (--root-config) is accepted only when root runs agor directly: not when any
 * of SUDO_UID, SUDO_GID, SUDO_USER, SUDO_COMMAND is set, and only with real and effective uid 0.
 */

#include "err.h"
#include "strbuf.h"

#define ADMINCONF_DEFAULT_PATH "/etc/agor/admin.yaml"
#define ADMINCONF_MAX_BYTES    (64u << 10)

struct adminconf {
	char *path;
	char *worktrees_dir;
	char *repos_dir;
	char *archive_dir; /* NULL when not configured */
};

/* 0 when a --root-config override may be used by this process, else -1 (E_PERMISSION_DENIED). */
int adminconf_override_allowed(struct err *e);
/* Opens path read-only after the ownership checks above; the descriptor is O_CLOEXEC. */
int adminconf_open_trusted(const char *path, struct err *e);
/* The same checks for a directory (itself included): an O_PATH|O_DIRECTORY descriptor. */
int adminconf_open_trusted_dir(const char *path, struct err *e);
/* adminconf_open_trusted + read + adminconf_parse. */
int adminconf_load(const char *path, struct adminconf *c, struct err *e);
/* Parses text (origin names it in messages); c is filled only on success. */
int adminconf_parse(const char *text, size_t len, const char *origin, struct adminconf *c, struct err *e);
/* The file text for c (what `agor setup isolation` writes). */
void adminconf_format(const struct adminconf *c, struct strbuf *out);
void adminconf_release(struct adminconf *c);

#endif
