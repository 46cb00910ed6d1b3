/* err.c — the error object of err.h.
 * Never aborts and never logs: reporting is the caller's decision. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "banned.h"

static char *vformat(const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int len = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	char *s = xmalloc((size_t)(len < 0 ? 0 : len) + 1);
	vsnprintf(s, (size_t)(len < 0 ? 0 : len) + 1, fmt, ap);
	return s;
}

static int vset(struct err *e, const char *code, json_t *details, const char *fmt, va_list ap)
{
	char *msg = vformat(fmt, ap); /* format first: an argument may point into the old message */
	err_clear(e);
	e->code = code;
	e->message = msg;
	e->details = details;
	return -1;
}

int err_set(struct err *e, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(e, code, NULL, fmt, ap);
	va_end(ap);
	return -1;
}

int err_setd(struct err *e, const char *code, json_t *details, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(e, code, details, fmt, ap);
	va_end(ap);
	return -1;
}

int err_errno(struct err *e, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *what = vformat(fmt, ap);
	va_end(ap);
	err_setd(e, E_SYSTEM, json_pack("{s:i}", "errno", errnum), "%s: %s", what, strerror(errnum));
	free(what);
	return -1;
}

void err_prefix(struct err *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *prefix = vformat(fmt, ap);
	va_end(ap);
	char *msg = xasprintf("%s: %s", prefix, e->message ? e->message : "");
	free(prefix);
	free(e->message);
	e->message = msg;
}

void err_clear(struct err *e)
{
	free(e->message);
	if (e->details)
		json_decref(e->details);
	e->code = NULL;
	e->message = NULL;
	e->details = NULL;
}

json_t *err_to_json(const struct err *e)
{
	json_t *o = json_object();
	json_object_set_new(o, "code", json_string(e->code ? e->code : E_INTERNAL));
	json_object_set_new(o, "message", json_string(e->message ? e->message : "unknown error"));
	if (e->details)
		json_object_set(o, "details", e->details);
	return o;
}

const char *err_code_intern(const char *code)
{
	static const char *const known[] = {
		E_INVALID_JSON,
		E_INVALID_PAYLOAD,
		E_UNKNOWN_COMMAND,
		E_PAYLOAD_TOO_LARGE,
		E_PATH_OUTSIDE_DATA_HOME,
		E_NOT_FOUND,
		E_ALREADY_EXISTS,
		E_WORKTREE_DIRTY,
		E_GIT_ERROR,
		E_AUTH_FAILED,
		E_IMPERSONATION_FAILED,
		E_ISOLATION_UNAVAILABLE,
		E_PERMISSION_DENIED,
		E_TIMEOUT,
		E_CANCELLED,
		E_NOT_BUILT,
		E_INTERNAL,
		E_CONFIG,
		E_USAGE,
		E_SYSTEM,
		E_EXECUTOR_RESULT_MISSING,
		E_EXEC_FAILED,
		E_IN_USE,
	};
	for (size_t i = 0; code && i < ARRAY_SIZE(known); i++)
		if (!strcmp(code, known[i]))
			return known[i];
	return E_INTERNAL;
}
