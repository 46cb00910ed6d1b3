/* approvals_store.h — the exec-approvals file: $AGOR_HOME/exec-approvals.json, schema version 1.
 * Never follows a symlink, never writes in place, never silently coerces a bad value. */
#ifndef AGOR_APPROVALS_STORE_H
#define AGOR_APPROVALS_STORE_H

/*
 * Contract
 * --------
 * The file (mode 0600, in AGOR_HOME, a 0700 directory owned by the effective uid):
 *   {"version":1,
 *    "socket":{"path":ABS,"token":64 hex},                         (written on first need)
 *    "defaults":{"security"?,"ask"?,"askFallback"?},
 *    "agents":{"<id>"|"*":{"security"?,"ask"?,"askFallback"?,
 *                          "allowlist":[{"id","pattern","lastUsedAt","lastUsedCommand",
 *                                        "lastResolvedPath"}]}}}
 * Unknown keys and bad values are refused with a message naming the field path, e.g.
 * `agents.ci.security: "maybe" is not one of deny|allowlist|full`. Missing levels fall back to the
 * built-in defaults: security deny, ask on-miss, askFallback deny. A missing file is an empty
 * policy (nothing is written until something changes).
 *
 * Safety: every component of AGOR_HOME is opened with O_NOFOLLOW from "/" (a symlinked parent is
 * refused), and the file itself with O_NOFOLLOW; a file that is not regular, not ours, or has any
 * group/other permission bit is refused. Writes go to a fresh temporary file (O_EXCL, 0600) that
 * is fsync'ed and renamed over the file, so a reader sees the old or the new content, never a mix.
 *
 * Concurrency: `hash` is the SHA-256 (hex) of the bytes read ("" for a missing file).
 * appr_store_update takes an exclusive flock on exec-approvals.json.lock (waiting at most
 * APPR_LOCK_WAIT_MS), re-reads the file, refuses with a retry error when expected_hash is given
 * and differs, applies the mutation, validates and writes. A retry error has details
 * {"retry":true} (appr_err_is_retry): the caller re-reads and tries again.
 */

#include <jansson.h>

#include "approvals_policy.h"
#include "crypto.h"
#include "err.h"
#include "strvec.h"

#define APPR_FILE_NAME	   "exec-approvals.json"
#define APPR_SOCKET_NAME   "approvals.sock"
#define APPR_TOKEN_HEX_LEN 64
#define APPR_LOCK_WAIT_MS  10000
#define APPR_FILE_MAX	   (4 * 1024 * 1024)

extern const struct appr_levels appr_builtin_defaults;

struct appr_store {
	char *home;			      /* AGOR_HOME */
	char *path;			      /* home/exec-approvals.json */
	json_t *root;			      /* the validated document */
	char hash[CRYPTO_SHA256_HEX_LEN + 1]; /* of the bytes read; "" when there was no file */
	int no_wait;			      /* appr_store_update: a busy lock is a retry error at once */
};
#define APPR_STORE_INIT                                                                                                \
	{                                                                                                              \
		NULL, NULL, NULL, { 0 }, 0                                                                             \
	}

/* Reads (or, when missing, starts) the document; never writes. Creates AGOR_HOME (0700) when missing. */
int appr_store_load(struct appr_store *s, const char *home, struct err *e);
void appr_store_release(struct appr_store *s);

/* A mutation applied under the lock by appr_store_update; returns 0 or -1 with e set. */
typedef int (*appr_store_mutator)(json_t *root, void *arg, struct err *e);
/* Locks, re-reads, checks expected_hash (NULL: none), mutates, validates, writes atomically.
 * s (which must have been loaded for home) is refreshed with what was written. */
int appr_store_update(struct appr_store *s, const char *expected_hash, appr_store_mutator fn, void *arg, struct err *e);
int appr_err_is_retry(const struct err *e);

/* Checks a whole document; -1 with E_CONFIG and a message naming the field path. */
int appr_store_validate(const json_t *root, struct err *e);

/* The levels set by defaults (agent NULL) or by agents.<agent> (unset fields APPR_UNSET). */
void appr_store_levels(const json_t *root, const char *agent, struct appr_levels *out);
/* Effective defaults: the file's defaults over the built-in ones (every field set). */
void appr_store_defaults(const json_t *root, struct appr_levels *out);
/* The patterns that apply to agent: agents.<agent>.allowlist then agents."*".allowlist. */
void appr_store_patterns(const json_t *root, const char *agent, struct strvec *out);
/* Socket path and token (NULL when not yet written). */
const char *appr_store_socket_path(const json_t *root);
const char *appr_store_token(const json_t *root);

/* Valid agent ids: "*" or 1-64 of [A-Za-z0-9._-]. */
int appr_agent_id_check(const char *agent, struct err *e);

/* Mutators (for appr_store_update or direct use on a root). */
/* Adds socket {path: home/approvals.sock, token: 32 random bytes} unless both are present. */
int appr_store_ensure_socket(json_t *root, const char *home, struct err *e);
/* field: "security" | "ask" | "askFallback"; value NULL removes it. agent NULL: defaults. */
int appr_store_set_level(json_t *root, const char *agent, const char *field, const char *value, struct err *e);
/* Adds pattern to agents.<agent>.allowlist (an existing equal pattern is kept, not duplicated);
 * *id_out (may be NULL) receives the entry id (caller frees). */
int appr_store_allowlist_add(json_t *root, const char *agent, const char *pattern, char **id_out, struct err *e);
/* Removes the entry whose id or pattern equals key; E_NOT_FOUND when none does. */
int appr_store_allowlist_remove(json_t *root, const char *agent, const char *key, struct err *e);
/* Records a use of pattern (lastUsedAt ms, lastUsedCommand, lastResolvedPath) in agent's or "*"'s list. */
void appr_store_touch(json_t *root, const char *agent, const char *pattern, const char *command, const char *resolved);

/* The SHA-256 (hex) of an argv's canonical form — its compact JSON array text, ASCII-escaped — the key of
 * the gateway's approval records (issue 8): the gateway and a node compute it the same way. -1 when argv is
 * not a non-empty array of strings. */
int appr_argv_sha256(const json_t *argv, char out[CRYPTO_SHA256_HEX_LEN + 1]);

/* A copy of root with the socket token replaced by "<redacted>". */
json_t *appr_store_redacted(const json_t *root);

#endif
