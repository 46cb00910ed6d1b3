/* xalloc.c — allocation helpers that die on exhaustion.
 * Never used for sizes that come from untrusted input without a bound checked first. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "banned.h"

static void NORETURN out_of_memory(size_t n)
{
	static const char msg[] = "agor: out of memory\n";
	(void)n;
	(void)!write(2, msg, sizeof(msg) - 1);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		out_of_memory(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		out_of_memory(n * size);
	return p;
}

void *xrealloc(void *old, size_t n)
{
	void *p = realloc(old, n ? n : 1);
	if (!p)
		out_of_memory(n);
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	char first[256]; /* most results fit: formatted once, not measured first and formatted again */
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(first, sizeof(first), fmt, ap);
	va_end(ap);
	if (len < 0)
		out_of_memory(0);
	char *p = xmalloc((size_t)len + 1);
	if ((size_t)len < sizeof(first)) {
		memcpy(p, first, (size_t)len + 1);
		return p;
	}
	va_start(ap, fmt);
	vsnprintf(p, (size_t)len + 1, fmt, ap);
	va_end(ap);
	return p;
}
