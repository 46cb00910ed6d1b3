/* common.h — macros every agor source file uses: cleanup attributes, sizes, branch hints.
 * It must never grow logic; anything with a body belongs in its own module. */
#ifndef AGOR_COMMON_H
#define AGOR_COMMON_H

#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a)	  (sizeof(a) / sizeof((a)[0]))
#define UNUSED		  __attribute__((unused))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define NORETURN	  __attribute__((noreturn))
#define WARN_UNUSED	  __attribute__((warn_unused_result))

/* Scope-bound cleanup (bubblewrap/systemd style): the variable is released when it goes
 * out of scope. Steal ownership with TAKE_PTR / TAKE_FD before returning it. */
static inline void cleanup_freep(void *p)
{
	free(*(void **)p);
}
static inline void cleanup_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
#define _cleanup_free_	__attribute__((cleanup(cleanup_freep)))
#define _cleanup_close_ __attribute__((cleanup(cleanup_closep)))

#define TAKE_PTR(p)                                                                                                    \
	({                                                                                                             \
		__typeof__(p) _taken = (p);                                                                            \
		(p) = NULL;                                                                                            \
		_taken;                                                                                                \
	})
#define TAKE_FD(fd)                                                                                                    \
	({                                                                                                             \
		int _taken = (fd);                                                                                     \
		(fd) = -1;                                                                                             \
		_taken;                                                                                                \
	})

/* Allocation that cannot fail: on exhaustion the process dies (there is no sane recovery
 * from malloc failure in a CLI or daemon of this size). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) PRINTF_LIKE(1, 2);

#endif
