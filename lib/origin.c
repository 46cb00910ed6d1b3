/* origin.c — the daemon's browser origins (origin.h): canonical "scheme://host:port" strings built from its own
 * listener and daemon.allowed_origins, and the check of an Origin header against them. Never resolves a name. */
#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

#include "origin.h"
#include "strbuf.h"
#include "strvec.h"
#include "url.h"
#include "banned.h"

#define LIST_SEPARATORS ", \t"

struct origin_set {
	struct strvec origins;
};

/* The canonical origin of text, or NULL with why set when text is not an http(s) origin. */
static char *canonical_origin(const char *text, struct err *why)
{
	_cleanup_url_ struct url u = URL_INIT;
	if (url_parse(text, &u, why) < 0)
		return NULL;
	if (strcmp(u.scheme, "http") && strcmp(u.scheme, "https")) {
		err_set(why, E_INVALID_PAYLOAD, "only http:// and https:// origins exist here");
		return NULL;
	}
	if (u.userinfo || *u.path) {
		err_set(why, E_INVALID_PAYLOAD,
			"an origin is scheme://host[:port], with no user, path, query or fragment");
		return NULL;
	}
	if (u.ipv6) { /* one spelling per address: "[0:0::1]" is "[::1]" */
		unsigned char addr[16];
		char text6[INET6_ADDRSTRLEN];
		if (inet_pton(AF_INET6, u.host, addr) == 1 && inet_ntop(AF_INET6, addr, text6, sizeof(text6))) {
			free(u.host);
			u.host = xstrdup(text6);
		}
	}
	return url_origin(&u);
}

int origin_list_check(const char *list, size_t *at, struct err *e)
{
	for (const char *p = list + strspn(list, LIST_SEPARATORS); *p; p += strspn(p, LIST_SEPARATORS)) {
		size_t n = strcspn(p, LIST_SEPARATORS);
		_cleanup_free_ char *entry = xstrndup(p, n);
		struct err why = ERR_INIT;
		char *origin = canonical_origin(entry, &why);
		*at = (size_t)(p - list);
		if (!origin) {
			err_set(e, E_CONFIG,
				"expected origins like https://agor.example.com:3030 separated by commas or spaces; "
				"\"%.60s\" is not one: %s",
				entry, why.message);
			err_clear(&why);
			return -1;
		}
		free(origin);
		p += n;
	}
	return 0;
}

static void add_origin(struct origin_set *set, const char *text)
{
	struct err why = ERR_INIT;
	char *origin = canonical_origin(text, &why);
	err_clear(&why);
	if (!origin)
		return;
	if (strvec_find(&set->origins, origin) >= 0)
		free(origin);
	else
		strvec_push_nodup(&set->origins, origin);
}

static void add_host(struct origin_set *set, const char *scheme, const char *host, int port)
{
	_cleanup_free_ char *text = strchr(host, ':') ? xasprintf("%s://[%s]:%d", scheme, host, port)
						      : xasprintf("%s://%s:%d", scheme, host, port);
	add_origin(set, text);
}

static int is_wildcard(const char *host)
{
	return !*host || !strcmp(host, "0.0.0.0") || !strcmp(host, "::") || !strcmp(host, "[::]");
}

static int is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (!strcasecmp(host, "localhost"))
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

struct origin_set *origin_set_new(int tls, const char *host, int port, const char *list)
{
	struct origin_set *set = xcalloc(1, sizeof(*set));
	strvec_init(&set->origins);
	const char *scheme = tls ? "https" : "http";
	if (!host)
		host = "";
	if (!is_wildcard(host))
		add_host(set, scheme, host, port);
	if (is_wildcard(host) || is_loopback(host)) {
		add_host(set, scheme, "localhost", port);
		add_host(set, scheme, "127.0.0.1", port);
		add_host(set, scheme, "::1", port);
	}
	for (const char *p = list ? list + strspn(list, LIST_SEPARATORS) : ""; *p; p += strspn(p, LIST_SEPARATORS)) {
		size_t n = strcspn(p, LIST_SEPARATORS);
		_cleanup_free_ char *entry = xstrndup(p, n);
		add_origin(set, entry);
		p += n;
	}
	return set;
}

void origin_set_free(struct origin_set *set)
{
	if (!set)
		return;
	strvec_clear(&set->origins);
	free(set);
}

int origin_allowed(const struct origin_set *set, const char *value)
{
	struct err why = ERR_INIT;
	_cleanup_free_ char *origin = canonical_origin(value, &why);
	err_clear(&why);
	return origin && strvec_find(&set->origins, origin) >= 0;
}

char *origin_set_text(const struct origin_set *set)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < set->origins.nr; i++)
		strbuf_addf(&sb, "%s%s", i ? " " : "", set->origins.v[i]);
	return strbuf_detach(&sb, NULL);
}
