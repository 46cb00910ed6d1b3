/* url.c — the strict URL parser of url.h: scheme, userinfo, host (names and IPv6 literals), port, path.
 * Never accepts a URL two programs could read as different hosts; never resolves or percent-decodes anything. */
#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>

#include "url.h"
#include "banned.h"

static const struct {
	const char *scheme;
	int port;
} default_ports[] = {
	{ "https", 443 },
	{ "http", 80 },
	{ "ssh", 22 },
	{ "git", 9418 },
};

int url_default_port(const char *scheme)
{
	for (size_t i = 0; i < ARRAY_SIZE(default_ports); i++)
		if (!strcmp(scheme, default_ports[i].scheme))
			return default_ports[i].port;
	return 0;
}

static int refuse(struct err *e, const char *reason)
{
	return err_set(e, E_INVALID_PAYLOAD, "%s", reason);
}

static char *lower_copy(const char *s, size_t n)
{
	char *c = xstrndup(s, n);
	for (char *p = c; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return c;
}

/* Every byte printable ASCII and no backslash (which some parsers read as '/'). */
static int plain_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || *s == '\\')
			return 0;
	return 1;
}

static size_t scheme_length(const char *s)
{
	if (!isalpha((unsigned char)s[0]))
		return 0;
	size_t n = 1;
	while (isalnum((unsigned char)s[n]) || s[n] == '+' || s[n] == '-' || s[n] == '.')
		n++;
	return strncmp(s + n, "://", 3) ? 0 : n;
}

/* A host name: labels of letters, digits, '-' and '_', separated by single dots, at most 253 bytes. */
static int parse_name(const char *s, size_t n, struct url *u, struct err *e)
{
	if (memchr(s, '%', n))
		return refuse(e, "percent-encoding in the host is refused: write the host name as it is");
	if (n > 253)
		return refuse(e, "the host name is longer than 253 bytes");
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!isalnum((unsigned char)c) && c != '-' && c != '_' && c != '.')
			return refuse(e, "the host has a character other than letters, digits, '.', '-' and '_' "
					 "(an internationalised name is given in its xn-- form)");
		if (c == '.' && (i == 0 || i == n - 1 || s[i + 1] == '.'))
			return refuse(e, "the host has an empty label (a leading, trailing or doubled '.')");
	}
	u->host = lower_copy(s, n);
	return 0;
}

/* "[…]" at s: an IPv6 literal without a zone; *len gets the bytes taken, brackets included. */
static int parse_ipv6(const char *s, size_t n, size_t *len, struct url *u, struct err *e)
{
	const char *close = memchr(s, ']', n);
	if (!close)
		return refuse(e, "an IPv6 literal is missing its ']'");
	size_t inner = (size_t)(close - s - 1);
	if (memchr(s + 1, '%', inner))
		return refuse(e, "an IPv6 zone (%) in the host is refused");
	char text[64];
	unsigned char addr[16];
	if (inner == 0 || inner >= sizeof(text))
		return refuse(e, "not an IPv6 address between '[' and ']'");
	memcpy(text, s + 1, inner);
	text[inner] = '\0';
	if (inet_pton(AF_INET6, text, addr) != 1)
		return refuse(e, "not an IPv6 address between '[' and ']'");
	u->host = lower_copy(text, inner);
	u->ipv6 = 1;
	*len = inner + 2;
	return 0;
}

static int parse_port(const char *s, size_t n, struct url *u, struct err *e)
{
	if (n == 0 || n > 5 || strspn(s, "0123456789") < n || s[0] == '0')
		return refuse(e, "the port must be a number 1..65535 without leading zeros");
	int port = 0;
	for (size_t i = 0; i < n; i++)
		port = port * 10 + (s[i] - '0');
	if (port > 65535)
		return refuse(e, "the port must be a number 1..65535 without leading zeros");
	u->port = port;
	return 0;
}

/* host[:port] of the authority (userinfo already taken off). */
static int parse_host_port(const char *s, size_t n, struct url *u, struct err *e)
{
	size_t host_len = 0;
	if (n && s[0] == '[') {
		if (parse_ipv6(s, n, &host_len, u, e) < 0)
			return -1;
		if (host_len < n && s[host_len] != ':')
			return refuse(e, "only ':' and a port may follow an IPv6 literal");
	} else {
		const char *colon = memchr(s, ':', n);
		host_len = colon ? (size_t)(colon - s) : n;
		if (host_len && parse_name(s, host_len, u, e) < 0)
			return -1;
	}
	if (!u->host)
		u->host = xstrdup("");
	if (host_len < n)
		return parse_port(s + host_len + 1, n - host_len - 1, u, e);
	u->port = url_default_port(u->scheme);
	return 0;
}

static int parse_authority(const char *s, size_t n, struct url *u, struct err *e)
{
	const char *at = memchr(s, '@', n);
	if (at) {
		if (memchr(at + 1, '@', n - (size_t)(at - s) - 1))
			return refuse(e, "more than one '@' before the path");
		u->userinfo = xstrndup(s, (size_t)(at - s));
		n -= (size_t)(at - s) + 1;
		s = at + 1;
	}
	if (parse_host_port(s, n, u, e) < 0)
		return -1;
	if (!*u->host && strcmp(u->scheme, "file"))
		return refuse(e, "the host is empty");
	return 0;
}

int url_parse(const char *text, struct url *u, struct err *e)
{
	*u = (struct url)URL_INIT;
	int rc;
	size_t scheme_len = scheme_length(text);
	if (!plain_ascii(text))
		rc = refuse(e, "a space, a control character, a backslash or a non-ASCII byte is refused "
			       "(an internationalised host is given in its xn-- form)");
	else if (!scheme_len)
		rc = refuse(e, "expected scheme://host[:port]/path");
	else {
		u->scheme = lower_copy(text, scheme_len);
		const char *authority = text + scheme_len + 3;
		size_t n = strcspn(authority, "/?#");
		u->path = xstrdup(authority + n);
		rc = parse_authority(authority, n, u, e);
	}
	if (rc < 0)
		url_release(u);
	return rc;
}

void url_release(struct url *u)
{
	free(u->scheme);
	free(u->userinfo);
	free(u->host);
	free(u->path);
	*u = (struct url)URL_INIT;
}

char *url_host_text(const struct url *u)
{
	return u->ipv6 ? xasprintf("[%s]", u->host) : xstrdup(u->host);
}

char *url_origin(const struct url *u)
{
	_cleanup_free_ char *host = url_host_text(u);
	return xasprintf("%s://%s:%d", u->scheme, host, u->port);
}
