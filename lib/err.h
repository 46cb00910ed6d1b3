/* err.h — the error object every lib/ function fills instead of dying: a stable code (docs/payloads.md#results
 * strings), a human message, optional JSON details. lib/ never exits; applets turn errors into exit codes. */
#ifndef AGOR_ERR_H
#define AGOR_ERR_H

#include <jansson.h>

#include "common.h"

/* Stable codes (docs/payloads.md#results); the pointer identity is not significant, compare with strcmp. */
#define E_INVALID_JSON		  "INVALID_JSON"
#define E_INVALID_PAYLOAD	  "INVALID_PAYLOAD"
#define E_UNKNOWN_COMMAND	  "UNKNOWN_COMMAND"
#define E_PAYLOAD_TOO_LARGE	  "PAYLOAD_TOO_LARGE"
#define E_PATH_OUTSIDE_DATA_HOME  "PATH_OUTSIDE_DATA_HOME"
#define E_NOT_FOUND		  "NOT_FOUND"
#define E_ALREADY_EXISTS	  "ALREADY_EXISTS"
#define E_WORKTREE_DIRTY	  "WORKTREE_DIRTY"
#define E_GIT_ERROR		  "GIT_ERROR"
#define E_AUTH_FAILED		  "AUTH_FAILED"
#define E_IMPERSONATION_FAILED	  "IMPERSONATION_FAILED"
#define E_ISOLATION_UNAVAILABLE	  "ISOLATION_UNAVAILABLE"
#define E_PERMISSION_DENIED	  "PERMISSION_DENIED"
#define E_TIMEOUT		  "TIMEOUT"
#define E_CANCELLED		  "CANCELLED"
#define E_NOT_BUILT		  "NOT_BUILT"
#define E_INTERNAL		  "INTERNAL"
#define E_CONFIG		  "CONFIG_ERROR"
#define E_USAGE			  "USAGE"
#define E_SYSTEM		  "SYSTEM_ERROR"
#define E_EXECUTOR_RESULT_MISSING "EXECUTOR_RESULT_MISSING"
#define E_IN_USE		  "IN_USE" /* refused before anything changed: something still depends on it (named in details) */
#define E_EXEC_FAILED		  "EXEC_FAILED" /* a task whose program ran and ended badly (exit, timeout, limits) */

struct err {
	const char *code; /* NULL when no error is set */
	char *message;
	json_t *details; /* owned; may be NULL */
};
#define ERR_INIT                                                                                                       \
	{                                                                                                              \
		NULL, NULL, NULL                                                                                       \
	}

/* Sets the error (replacing any previous one) and returns -1, so `return err_set(...)` reads well. */
int err_set(struct err *e, const char *code, const char *fmt, ...) PRINTF_LIKE(3, 4);
/* Same, taking ownership of details (may be NULL). */
int err_setd(struct err *e, const char *code, json_t *details, const char *fmt, ...) PRINTF_LIKE(4, 5);
/* Sets E_SYSTEM (or code) with ": strerror(errnum)" appended. */
int err_errno(struct err *e, int errnum, const char *fmt, ...) PRINTF_LIKE(3, 4);
/* Prepends "prefix: " to the message, keeping code and details. */
void err_prefix(struct err *e, const char *fmt, ...) PRINTF_LIKE(2, 3);
void err_clear(struct err *e);
/* The stable code constant equal to code (from another process's JSON), or E_INTERNAL when unknown. */
const char *err_code_intern(const char *code);
static inline int err_is_set(const struct err *e)
{
	return e->code != NULL;
}
/* {"code":…,"message":…,"details"?:…} — a new reference. */
json_t *err_to_json(const struct err *e);

static inline void cleanup_err(struct err *e)
{
	err_clear(e);
}
#define _cleanup_err_ __attribute__((cleanup(cleanup_err)))

#endif
