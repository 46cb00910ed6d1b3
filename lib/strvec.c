/* strvec.c — the string vector of strvec.h.
 * Never leaves v without its NULL terminator. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "strvec.h"
#include "banned.h"

char *strvec_empty[1];

void strvec_init(struct strvec *sv)
{
	sv->v = strvec_empty;
	sv->nr = sv->alloc = 0;
}

void strvec_clear(struct strvec *sv)
{
	if (sv->alloc) {
		for (size_t i = 0; i < sv->nr; i++)
			free(sv->v[i]);
		free(sv->v);
	}
	strvec_init(sv);
}

void strvec_push_nodup(struct strvec *sv, char *s)
{
	if (sv->nr + 2 > sv->alloc) {
		size_t alloc = sv->alloc ? sv->alloc * 2 : 8;
		char **v = sv->alloc ? sv->v : NULL;
		sv->v = xrealloc(v, alloc * sizeof(*v));
		sv->alloc = alloc;
	}
	sv->v[sv->nr++] = s;
	sv->v[sv->nr] = NULL;
}

void strvec_push(struct strvec *sv, const char *s)
{
	strvec_push_nodup(sv, xstrdup(s));
}

void strvec_pushf(struct strvec *sv, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = xmalloc((size_t)(len < 0 ? 0 : len) + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)(len < 0 ? 0 : len) + 1, fmt, ap);
	va_end(ap);
	strvec_push_nodup(sv, s);
}

void strvec_pushv(struct strvec *sv, const char *const *v)
{
	for (; v && *v; v++)
		strvec_push(sv, *v);
}

void strvec_pop(struct strvec *sv)
{
	if (!sv->nr)
		return;
	free(sv->v[--sv->nr]);
	sv->v[sv->nr] = NULL;
}

long strvec_find(const struct strvec *sv, const char *s)
{
	for (size_t i = 0; i < sv->nr; i++)
		if (!strcmp(sv->v[i], s))
			return (long)i;
	return -1;
}

static long env_index(const struct strvec *sv, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < sv->nr; i++)
		if (!strncmp(sv->v[i], name, n) && sv->v[i][n] == '=')
			return (long)i;
	return -1;
}

void strvec_setenv(struct strvec *sv, const char *name, const char *value)
{
	long i = env_index(sv, name);
	char *entry = xasprintf("%s=%s", name, value);
	if (i < 0) {
		strvec_push_nodup(sv, entry);
		return;
	}
	free(sv->v[i]);
	sv->v[i] = entry;
}

const char *strvec_getenv(const struct strvec *sv, const char *name)
{
	long i = env_index(sv, name);
	return i < 0 ? NULL : sv->v[i] + strlen(name) + 1;
}
