/* url.h — the one strict parser of network URLs (scheme://[userinfo@]host[:port][path]): what the daemon and the
 * executor compare before a stored credential goes to a server. Never guesses: anything unusual is refused.
 *
 * Contract:
 *   url_parse(text, &u, e) → 0 and u filled, or -1 with e set to E_INVALID_PAYLOAD and a message saying what is
 *     wrong (no field prefix: callers add "params.url: "). Refused: no "scheme://"; a space, a control, a
 *     backslash or a non-ASCII byte anywhere (an internationalised name is given in its xn-- form); more than
 *     one '@' before the path; percent-encoding or any character but letters, digits, '.', '-' and '_' in a
 *     host name; an empty label; an IPv6 literal that inet_pton refuses or with a zone ("%"); an empty port, a
 *     port with a leading zero or outside 1..65535; an empty host (except for file://).
 *   u.scheme and u.host are lower-cased; u.host of an IPv6 literal has no brackets (u.ipv6 is set); u.port is
 *     the explicit port or the scheme's default (https 443, http 80, ssh 22, git 9418; 0 for any other);
 *     u.userinfo is whatever came before '@' (NULL when none): callers that hand out credentials refuse it.
 *   url_origin(&u) → "scheme://host:port" (a new string; "[…]" around an IPv6 host), the port always written,
 *     so two URLs have the same origin exactly when their origins are the same string.
 */
#ifndef AGOR_URL_H
#define AGOR_URL_H

#include "err.h"

struct url {
	char *scheme;
	char *userinfo; /* NULL when absent */
	char *host;
	int ipv6;
	int port;
	char *path; /* from the first '/', '?' or '#' after the authority; "" when none */
};
#define URL_INIT                                                                                                       \
	{                                                                                                              \
		NULL, NULL, NULL, 0, 0, NULL                                                                           \
	}

int url_parse(const char *text, struct url *u, struct err *e);
void url_release(struct url *u);
char *url_origin(const struct url *u);
/* The host as written in an authority: "[::1]" for an IPv6 literal, else the host itself (a new string). */
char *url_host_text(const struct url *u);
/* The scheme's default port (see above), 0 when it has none. */
int url_default_port(const char *scheme);

static inline void cleanup_url(struct url *u)
{
	url_release(u);
}
#define _cleanup_url_ __attribute__((cleanup(cleanup_url)))

#endif
