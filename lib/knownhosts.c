/* knownhosts.c — matching an OpenSSH known_hosts text against one ssh server (knownhosts.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/md.h>

#include "common.h"
#include "crypto.h"
#include "knownhosts.h"
#include "strbuf.h"
#include "banned.h"

#define SHA1_LEN 20

/* A hashed name |1|SALT|HASH: HASH = HMAC-SHA1(SALT, name), both base64. */
static int hashed_matches(const char *pattern, const char *name)
{
	const char *salt = pattern + 3, *bar = strchr(salt, '|');
	if (!bar)
		return 0;
	struct strbuf s = STRBUF_INIT, h = STRBUF_INIT;
	struct err ignored = ERR_INIT;
	unsigned char mac[SHA1_LEN];
	const mbedtls_md_info_t *sha1 = mbedtls_md_info_from_type(MBEDTLS_MD_SHA1);
	int ok = sha1 && crypto_base64_decode(salt, (size_t)(bar - salt), &s, &ignored) == 0 &&
		 crypto_base64_decode(bar + 1, strlen(bar + 1), &h, &ignored) == 0 && h.len == SHA1_LEN &&
		 mbedtls_md_hmac(sha1, (const unsigned char *)s.buf, s.len, (const unsigned char *)name, strlen(name),
				 mac) == 0 &&
		 crypto_equal(mac, h.buf, SHA1_LEN);
	strbuf_release(&s);
	strbuf_release(&h);
	err_clear(&ignored);
	return ok;
}

/* ssh's wildcards: '*' any run, '?' any one character, case-insensitive; everything else literal ('[' too).
 * Greedy with one resume point, the last '*': time len(p) * len(s) at worst, however many stars a hostile
 * pattern holds (the recursive form took exponential time on "a*a*a*…b"). */
static int glob_matches(const char *p, const char *s)
{
	const char *star = NULL, *resume = NULL;
	while (*s) {
		if (*p == '*') {
			star = p++;
			resume = s;
		} else if (*p && (*p == '?' || tolower((unsigned char)*p) == tolower((unsigned char)*s))) {
			p++;
			s++;
		} else if (star) {
			p = star + 1;
			s = ++resume;
		} else {
			return 0;
		}
	}
	while (*p == '*')
		p++;
	return !*p;
}

/* ssh's rule: a name matches a comma-separated list when some pattern matches it and no negated one does. */
static int hosts_match(const char *field, const char *name)
{
	if (!strncmp(field, "|1|", 3))
		return hashed_matches(field, name);
	int matched = 0;
	_cleanup_free_ char *list = xstrdup(field);
	for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		int negated = *p == '!';
		if (!glob_matches(p + negated, name))
			continue;
		if (negated)
			return 0;
		matched = 1;
	}
	return matched;
}

/* One line's words: [@marker] hosts type key [comment]. */
struct entry {
	const char *marker, *hosts, *type, *key;
};

static int split_entry(char *line, struct entry *en)
{
	char *save = NULL, *w[4];
	int n = 0;
	for (char *p = strtok_r(line, " \t", &save); p && n < 4; p = strtok_r(NULL, " \t", &save))
		w[n++] = p;
	int marked = n > 0 && w[0][0] == '@';
	if (n < 3 + marked)
		return -1;
	*en = (struct entry){ marked ? w[0] : NULL, w[marked], w[marked + 1], w[marked + 2] };
	return 0;
}

static int contains(json_t *a, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) if (!strcmp(json_string_value(v), s)) return 1;
	return 0;
}

json_t *known_hosts_keys(const char *text, const char *host, int port)
{
	_cleanup_free_ char *name = port == 22 ? xstrdup(host) : xasprintf("[%s]:%d", host, port);
	_cleanup_free_ char *copy = xstrdup(text);
	json_t *keys = json_array(), *revoked = json_array();
	for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct entry en;
		line[strcspn(line, "\r")] = '\0';
		if (line[strspn(line, " \t")] == '#' || split_entry(line, &en) < 0 || !hosts_match(en.hosts, name))
			continue;
		if (en.marker && strcmp(en.marker, "@revoked"))
			continue; /* @cert-authority: not a key of this host */
		json_array_append_new(en.marker ? revoked : keys, json_sprintf("%s %s", en.type, en.key));
	}
	json_t *trusted = json_array();
	size_t i;
	json_t *v;
	json_array_foreach(keys, i, v) if (!contains(revoked, json_string_value(v)) &&
					   !contains(trusted, json_string_value(v))) json_array_append(trusted, v);
	json_decref(keys);
	json_decref(revoked);
	return trusted;
}
