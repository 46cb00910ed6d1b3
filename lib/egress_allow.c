/* egress_allow.c — the egress allowlist (egress_allow.h): entries parsed and matched, addresses classified. */
#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "egress_allow.h"
#include "banned.h"

#define LIST_SEPARATORS ", \t\n"

static int is_name_char(int c)
{
	return isalnum(c) || c == '.' || c == '-' || c == '_';
}

static int is_literal(const char *host)
{
	unsigned char buf[16];
	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

int egress_host_normalise(char *host)
{
	size_t n = strlen(host);
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		memmove(host, host + 1, n - 2);
		host[n - 2] = 0;
		unsigned char buf[16];
		return inet_pton(AF_INET6, host, buf) == 1 ? 0 : -1;
	}
	if (n > 1 && host[n - 1] == '.')
		host[--n] = 0;
	if (!n || n > 253 || host[0] == '.' || strstr(host, ".."))
		return -1;
	for (char *c = host; *c; c++) {
		if (!is_name_char((unsigned char)*c))
			return -1;
		*c = (char)tolower((unsigned char)*c);
	}
	return 0;
}

/* "host[:port]" or "[v6][:port]" split; *port 0 when absent; -1 when malformed. */
static int split_port(char *entry, int *port)
{
	*port = 0;
	char *colon = entry[0] == '[' ? strstr(entry, "]:") : strrchr(entry, ':');
	if (colon && entry[0] == '[')
		colon++;
	if (colon && entry[0] != '[' && strchr(entry, ':') != colon)
		return -1; /* a bare IPv6 literal: it must be written in brackets */
	if (!colon)
		return 0;
	*colon = 0;
	const char *digits = colon + 1;
	if (!*digits || digits[0] == '0' || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 5)
		return -1;
	*port = atoi(digits);
	return *port >= 1 && *port <= 65535 ? 0 : -1;
}

static int parse_entry(const char *text, struct egress_rule *r)
{
	_cleanup_free_ char *entry = xstrdup(text);
	memset(r, 0, sizeof(*r));
	if (split_port(entry, &r->port) < 0)
		return -1;
	char *host = entry;
	if (!strncmp(host, "*.", 2)) {
		r->wildcard = 1;
		host++;
		if (egress_host_normalise(host + 1) < 0 || is_literal(host + 1))
			return -1;
	} else if (egress_host_normalise(host) < 0) {
		return -1;
	}
	r->literal = !r->wildcard && is_literal(host);
	r->host = xstrdup(host);
	return 0;
}

static void push_rule(struct egress_allow *a, const struct egress_rule *r)
{
	a->rules = xrealloc(a->rules, (a->n + 1) * sizeof(*a->rules));
	a->rules[a->n++] = *r;
}

/* Calls each entry of list; stops at the first bad one (its offset in *at). */
static int each_entry(const char *list, struct egress_allow *into, size_t *at, struct err *e)
{
	for (const char *p = list + strspn(list, LIST_SEPARATORS); *p; p += strspn(p, LIST_SEPARATORS)) {
		size_t n = strcspn(p, LIST_SEPARATORS);
		_cleanup_free_ char *text = xstrndup(p, n);
		struct egress_rule r;
		*at = (size_t)(p - list);
		if (parse_entry(text, &r) < 0)
			return err_set(e, E_CONFIG,
				       "expected entries like api.example.com, *.example.com:443 or "
				       "127.0.0.1:8080 separated by commas or spaces; \"%.60s\" is not one",
				       text);
		if (into)
			push_rule(into, &r);
		else
			free(r.host);
		p += n;
	}
	return 0;
}

int egress_allow_check(const char *list, size_t *at, struct err *e)
{
	return each_entry(list, NULL, at, e);
}

int egress_allow_parse(struct egress_allow *a, const char *list, struct err *e)
{
	size_t at = 0;
	return list ? each_entry(list, a, &at, e) : 0;
}

void egress_allow_add(struct egress_allow *a, const char *host, int port)
{
	struct egress_rule r = { .host = xstrdup(host), .port = port };
	if (egress_host_normalise(r.host) < 0) {
		free(r.host);
		return;
	}
	r.literal = is_literal(r.host);
	push_rule(a, &r);
}

void egress_allow_release(struct egress_allow *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->rules[i].host);
	free(a->rules);
	a->rules = NULL;
	a->n = 0;
}

static int port_allowed(const struct egress_rule *r, int port)
{
	return r->port ? r->port == port : port == 80 || port == 443;
}

static int name_matches(const struct egress_rule *r, const char *host)
{
	if (!r->wildcard)
		return !strcmp(r->host, host);
	size_t hn = strlen(host), sn = strlen(r->host); /* r->host is ".suffix" */
	return hn > sn && !strcmp(host + hn - sn, r->host);
}

const struct egress_rule *egress_allow_match(const struct egress_allow *a, const char *host, int port)
{
	for (size_t i = 0; i < a->n; i++)
		if (port_allowed(&a->rules[i], port) && name_matches(&a->rules[i], host))
			return &a->rules[i];
	return NULL;
}

/* --- addresses --------------------------------------------------------------------------------- */

static const char *ipv4_class(uint32_t a /* host order */)
{
	if ((a >> 24) == 127)
		return "loopback";
	if ((a >> 24) == 0)
		return "unspecified";
	if ((a >> 16) == 0xa9fe)
		return "link-local";
	if ((a >> 24) == 10 || (a >> 20) == 0xac1 || (a >> 16) == 0xc0a8 || (a >> 22) == (100u << 2 | 1))
		return "private"; /* 10/8, 172.16/12, 192.168/16, 100.64/10 */
	if ((a >> 28) >= 0xe)
		return "multicast"; /* and the reserved 240/4, broadcast included */
	return NULL;
}

static const char *ipv6_class(const struct in6_addr *a)
{
	if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
		uint32_t v4;
		memcpy(&v4, a->s6_addr + 12, 4);
		const char *c = ipv4_class(ntohl(v4));
		return c ? c : IN6_IS_ADDR_V4COMPAT(a) ? "private" : NULL; /* deprecated ::a.b.c.d: never */
	}
	if (IN6_IS_ADDR_LOOPBACK(a))
		return "loopback";
	if (IN6_IS_ADDR_UNSPECIFIED(a))
		return "unspecified";
	if (IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_SITELOCAL(a))
		return "link-local";
	if ((a->s6_addr[0] & 0xfe) == 0xfc)
		return "private"; /* fc00::/7 */
	if (IN6_IS_ADDR_MULTICAST(a))
		return "multicast";
	return NULL;
}

static int same_address(const struct sockaddr *x, const struct sockaddr *y)
{
	if (x->sa_family != y->sa_family)
		return 0;
	if (x->sa_family == AF_INET)
		return ((const struct sockaddr_in *)x)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)y)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)x)->sin6_addr, &((const struct sockaddr_in6 *)y)->sin6_addr, 16);
}

static int is_own_address(const struct sockaddr *sa)
{
	struct ifaddrs *list = NULL;
	if (getifaddrs(&list) < 0)
		return 1; /* unknown: judged as the host's own */
	int own = 0;
	for (struct ifaddrs *i = list; i && !own; i = i->ifa_next)
		own = i->ifa_addr && same_address(i->ifa_addr, sa);
	freeifaddrs(list);
	return own;
}

const char *egress_address_class(const struct sockaddr *sa)
{
	const char *c = NULL;
	if (sa->sa_family == AF_INET)
		c = ipv4_class(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	else if (sa->sa_family == AF_INET6)
		c = ipv6_class(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	else
		return "unspecified";
	return c ? c : is_own_address(sa) ? "host" : NULL;
}

int egress_allow_names_address(const struct egress_allow *a, const struct sockaddr *sa, int port)
{
	char text[INET6_ADDRSTRLEN];
	const void *raw = sa->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
						   : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (!inet_ntop(sa->sa_family, raw, text, sizeof(text)))
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct egress_rule *r = &a->rules[i];
		unsigned char want[16], got[16];
		if (!r->literal || r->port != port || inet_pton(sa->sa_family, r->host, want) != 1)
			continue;
		if (inet_pton(sa->sa_family, text, got) == 1 && !memcmp(want, got, sa->sa_family == AF_INET ? 4 : 16))
			return 1;
	}
	return 0;
}
