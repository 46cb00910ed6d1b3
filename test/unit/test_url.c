/* test_url.c — unit tests of the strict URL parser (url.h): origins, userinfo, IPv6, ports, refusals.
 * Never touches the network. */
#include "url.h"
#include "unit.h"
#include "banned.h"

/* The origin of text, or "ERR: message". */
static char *origin_of(const char *text)
{
	struct url u;
	struct err e = ERR_INIT;
	if (url_parse(text, &u, &e) < 0) {
		char *s = xasprintf("ERR: %s", e.message);
		err_clear(&e);
		return s;
	}
	char *o = url_origin(&u);
	url_release(&u);
	return o;
}

#define CHECK_ORIGIN(text, want)                                                                                       \
	do {                                                                                                           \
		char *_o = origin_of(text);                                                                            \
		CHECK_STR(_o, want);                                                                                   \
		free(_o);                                                                                              \
	} while (0)

#define CHECK_REFUSED(text, why)                                                                                       \
	do {                                                                                                           \
		char *_o = origin_of(text);                                                                            \
		CHECK(!strncmp(_o, "ERR: ", 5));                                                                       \
		CHECK_CONTAINS(_o, why);                                                                               \
		free(_o);                                                                                              \
	} while (0)

TEST(url_origin_fills_default_ports_and_lowers_the_host)
{
	CHECK_ORIGIN("https://GitHub.COM/acme/x.git", "https://github.com:443");
	CHECK_ORIGIN("HTTPS://github.com:443/x", "https://github.com:443");
	CHECK_ORIGIN("https://github.com:8443", "https://github.com:8443");
	CHECK_ORIGIN("http://h/x", "http://h:80");
	CHECK_ORIGIN("ssh://git@h/x", "ssh://h:22");
	CHECK_ORIGIN("git://h/x", "git://h:9418");
	CHECK_ORIGIN("https://h?x@evil/", "https://h:443");
	CHECK_ORIGIN("https://h#@evil/", "https://h:443");
	CHECK_ORIGIN("https://h/a@b:1/c", "https://h:443");
}

TEST(url_userinfo_is_kept_apart_and_never_the_host)
{
	struct url u;
	struct err e = ERR_INIT;
	CHECK_INT(url_parse("https://github.com@evil:8443/acme/x.git", &u, &e), 0);
	CHECK_STR(u.userinfo, "github.com");
	CHECK_STR(u.host, "evil");
	CHECK_INT(u.port, 8443);
	CHECK_STR(u.path, "/acme/x.git");
	url_release(&u);
	CHECK_INT(url_parse("https://user:pw@host/x", &u, &e), 0);
	CHECK_STR(u.userinfo, "user:pw");
	CHECK_STR(u.host, "host");
	url_release(&u);
	CHECK_INT(url_parse("https://host/x", &u, &e), 0);
	CHECK(u.userinfo == NULL);
	url_release(&u);
	CHECK_REFUSED("https://a@b@c/x", "more than one '@'");
}

TEST(url_ipv6_literals_in_brackets)
{
	CHECK_ORIGIN("https://[::1]:8443/x", "https://[::1]:8443");
	CHECK_ORIGIN("https://[2001:DB8::1]/x", "https://[2001:db8::1]:443");
	CHECK_REFUSED("https://[::1/x", "missing its ']'");
	CHECK_REFUSED("https://[fe80::1%25eth0]/x", "zone");
	CHECK_REFUSED("https://[not-v6]/x", "not an IPv6 address");
	CHECK_REFUSED("https://[::1]x/", "only ':' and a port");
}

TEST(url_refuses_what_two_parsers_could_read_differently)
{
	CHECK_REFUSED("https://evil%2ecom/x", "percent-encoding");
	CHECK_REFUSED("https://gith\xc3\xbc"
		      "b.com/x",
		      "non-ASCII");
	CHECK_REFUSED("https://evil\\@github.com/x", "backslash");
	CHECK_REFUSED("https://a b/x", "space");
	CHECK_REFUSED("https://h:/x", "port");
	CHECK_REFUSED("https://h:0443/x", "leading zeros");
	CHECK_REFUSED("https://h:65536/x", "1..65535");
	CHECK_REFUSED("https://h:0/x", "1..65535");
	CHECK_REFUSED("https://h:12ab/x", "port");
	CHECK_REFUSED("https:///x", "host is empty");
	CHECK_REFUSED("https://.h/x", "empty label");
	CHECK_REFUSED("https://h../x", "empty label");
	CHECK_REFUSED("https://h!x/", "character other than");
	CHECK_REFUSED("github.com/x", "scheme://");
	CHECK_REFUSED("https:/h/x", "scheme://");
	CHECK_ORIGIN("file:///srv/x.git", "file://:0");
}
