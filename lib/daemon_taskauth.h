/* daemon_taskauth.h — executors' session tokens: a task token's signature checked once and remembered, its task
 * and revocation read again whenever the database's tokens or tasks changed, its uses counted in memory and written
 * back with the next batch. Core layer (daemon.h). Never trusts a token the database no longer holds live. */
#ifndef AGOR_DAEMON_TASKAUTH_H
#define AGOR_DAEMON_TASKAUTH_H

#include <jansson.h>
#include "daemon.h"
#include "err.h"
#include "token.h"

/* A checked token: its claims and its task's row. Release with daemon_token_auth_release (also after a failure). */
struct daemon_token_auth {
	struct token_claims claims;
	json_t *task; /* the task row */
};
void daemon_token_auth_release(struct daemon_token_auth *a);
/* The token in params.session_token (or jwt itself) for a call of method: 0 when it is valid, known, not revoked
 * and its task running; else -1, AUTH_FAILED, and the refusal audited (daemon_token_refuse). */
int daemon_token_authenticate(struct daemon *d, const char *method, json_t *params, struct daemon_token_auth *a,
			      struct err *e);
int daemon_token_authenticate_jwt(struct daemon *d, const char *method, const char *jwt, struct daemon_token_auth *a,
				  struct err *e);
/* Audits a refused executor call and sets AUTH_FAILED "session token refused: why"; returns -1. */
int daemon_token_refuse(struct daemon *d, const char *method, const char *task, const char *why, struct err *e);
/* Writes the remembered tokens' counted uses back and frees them (daemon_release, before db_close). */
void daemon_forget_verified_tokens(struct daemon *d);
/* Watches the database for writes to tokens and tasks (and rollbacks): each bumps d->auth_generation. */
void daemon_watch_auth_state(struct daemon *d);
/* Before a batch of writes commits: adds the executor calls counted in memory to tokens.uses, and notes the
 * database's data version, against which daemon_tokens_batch_committed keeps the findings that still hold. */
void daemon_tokens_before_commit(struct daemon *d);
/* After a batch of writes committed: the findings that held as it began to commit are still good (no new reads). */
void daemon_tokens_batch_committed(struct daemon *d);
/* Verifies an executor's params.session_token (as every executor method does); *task_id is its task. */
int daemon_executor_authenticate(struct daemon *d, const char *method, json_t *params, char **task_id, struct err *e);

#endif
