/* approvals_glob.c — allowlist path globs (approvals_glob.h): matching, the write-time check, escaping.
 * Never matches more than the pattern says: anchored at both ends, `*` stops at '/'. */
#include <string.h>

#include "approvals_glob.h"
#include "strbuf.h"
#include "banned.h"

int appr_glob_match(const char *pattern, const char *path, const char *home)
{
	struct strbuf pat = STRBUF_INIT;
	if (pattern[0] == '~' && (pattern[1] == '/' || pattern[1] == '\0')) {
		if (!home || home[0] != '/')
			return 0;
		strbuf_addstr(&pat, home);
		strbuf_addstr(&pat, pattern + 1);
	} else {
		strbuf_addstr(&pat, pattern);
	}
	size_t n = strlen(path);
	unsigned char *cur = xcalloc(n + 1, 1), *next = xcalloc(n + 1, 1);
	cur[0] = 1;
	for (const char *p = pat.buf; *p;) {
		memset(next, 0, n + 1);
		if (p[0] == '*' && p[1] == '*') {
			while (*p == '*')
				p++;
			unsigned char r = 0;
			for (size_t j = 0; j <= n; j++)
				next[j] = r = (unsigned char)(r | cur[j]);
			goto swap;
		}
		if (*p == '*') {
			p++;
			unsigned char r = 0;
			for (size_t j = 0; j <= n; j++) {
				if (j > 0 && path[j - 1] == '/')
					r = 0;
				next[j] = r = (unsigned char)(r | cur[j]);
			}
			goto swap;
		}
		int any = *p == '?';
		char c = *p;
		if (c == '\\' && p[1])
			c = *++p;
		p++;
		for (size_t j = 0; j < n; j++)
			if (cur[j] && (any ? path[j] != '/' : path[j] == c))
				next[j + 1] = 1;
	swap:;
		unsigned char *t = cur;
		cur = next;
		next = t;
	}
	int matched = cur[n];
	free(cur);
	free(next);
	strbuf_release(&pat);
	return matched;
}

int appr_pattern_check(const char *pattern, struct err *e)
{
	size_t len = strlen(pattern);
	if (len == 0)
		return err_set(e, E_INVALID_PAYLOAD, "pattern is empty");
	if (len > APPR_PATTERN_MAX)
		return err_set(e, E_INVALID_PAYLOAD, "pattern is longer than %d bytes", APPR_PATTERN_MAX);
	for (const unsigned char *p = (const unsigned char *)pattern; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return err_set(e, E_INVALID_PAYLOAD, "pattern contains a control character");
	if (!strchr(pattern, '/'))
		return err_set(e, E_INVALID_PAYLOAD,
			       "pattern \"%s\" has no '/': patterns match resolved paths, not names", pattern);
	if (pattern[0] == '~' && pattern[1] != '/')
		return err_set(e, E_INVALID_PAYLOAD, "pattern \"%s\": only ~/ is expanded, not ~user", pattern);
	if (pattern[0] != '/' && pattern[0] != '~')
		return err_set(e, E_INVALID_PAYLOAD, "pattern \"%s\" is not absolute (start with / or ~/)", pattern);
	return 0;
}

char *appr_pattern_for_path(const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	for (const char *p = path; *p; p++) {
		if (*p == '*' || *p == '?' || *p == '\\' || *p == ' ')
			strbuf_addch(&sb, '\\');
		strbuf_addch(&sb, *p);
	}
	return strbuf_detach(&sb, NULL);
}
