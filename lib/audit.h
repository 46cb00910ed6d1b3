/* audit.h — the tamper-evident audit log: every executor call and privileged action appended with who,
 * what, when and outcome; each row carries SHA-256(previous row's hash ‖ canonical row), so editing,
 * reordering or deleting a row breaks the chain. Never stores a secret (callers pass redacted details).
 *
 * The canonical row is the compact JSON array [id, at, actor, action, target, outcome, details] (details
 * as the stored JSON text or null); the first row's previous hash is 64 zeros.
 */
#ifndef AGOR_AUDIT_H
#define AGOR_AUDIT_H

#include <jansson.h>

#include "db.h"

/* details may be NULL (borrowed). Returns 0 or -1 with e set. */
int audit_append(struct db *db, const char *actor, const char *action, const char *target, const char *outcome,
		 const json_t *details, struct err *e);

struct audit_report {
	long long rows;
	long long first_bad_id; /* 0 when the chain verifies */
	char reason[160];
};

/* Recomputes the whole chain. 0 with report filled (first_bad_id 0: intact), -1 on a database error. */
int audit_verify(struct db *db, struct audit_report *report, struct err *e);

#endif
