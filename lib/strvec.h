/* strvec.h — a NULL-terminated vector of owned strings (git's strvec), ready for execve.
 * Invariants: v is never NULL after init; v[nr] == NULL; every element is malloc'd and owned. */
#ifndef AGOR_STRVEC_H
#define AGOR_STRVEC_H

#include <stddef.h>

#include "common.h"

struct strvec {
	char **v;
	size_t nr;
	size_t alloc;
};

extern char *strvec_empty[];
#define STRVEC_INIT                                                                                                    \
	{                                                                                                              \
		strvec_empty, 0, 0                                                                                     \
	}

void strvec_init(struct strvec *sv);
void strvec_clear(struct strvec *sv);
void strvec_push(struct strvec *sv, const char *s);
void strvec_pushf(struct strvec *sv, const char *fmt, ...) PRINTF_LIKE(2, 3);
void strvec_pushv(struct strvec *sv, const char *const *v);
/* Takes ownership of s (malloc'd). */
void strvec_push_nodup(struct strvec *sv, char *s);
void strvec_pop(struct strvec *sv);
/* Index of the first element equal to s, or -1. */
long strvec_find(const struct strvec *sv, const char *s);
/* For environments: replaces or appends "name=value". */
void strvec_setenv(struct strvec *sv, const char *name, const char *value);
/* Value of name in an environment vector, or NULL. */
const char *strvec_getenv(const struct strvec *sv, const char *name);

static inline void cleanup_strvec(struct strvec *sv)
{
	strvec_clear(sv);
}
#define _cleanup_strvec_ __attribute__((cleanup(cleanup_strvec)))

#endif
