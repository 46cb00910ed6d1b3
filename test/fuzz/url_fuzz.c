/* url_fuzz.c — libFuzzer target over url.h, the strict parser that decides which origin a stored credential goes
 * to. Invariants: an accepted URL with a host has an origin that parses again to the same origin (one spelling
 * per origin; file:// and schemes without a default port and none given have no origin to compare); its host
 * holds only the characters the contract allows; a port is 1..65535 or the scheme's 0; input with '@' in the
 * authority keeps it in userinfo, never in the host. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "url.h"
#include "common.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_host(const struct url *u)
{
	for (const char *c = u->host; *c; c++)
		if (!(*c >= 'a' && *c <= 'z') && !(*c >= '0' && *c <= '9') && !strchr(".-_", *c) &&
		    !(u->ipv6 && strchr(":", *c)))
			abort();
	if (u->port < 0 || u->port > 65535 || strchr(u->host, '@'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size);
	struct url u = URL_INIT;
	struct err e = ERR_INIT;
	if (strlen(text) == size && url_parse(text, &u, &e) == 0) {
		check_host(&u);
		if (!*u.host ||
		    !u.port) /* file://, or a scheme without a default port: origin "s://h:0" is not a URL */
			goto done;
		char *origin = url_origin(&u);
		struct url again = URL_INIT;
		if (url_parse(origin, &again, &e) < 0)
			abort();
		char *origin2 = url_origin(&again);
		if (strcmp(origin, origin2))
			abort();
		free(origin2);
		free(origin);
		url_release(&again);
	}
done:
	url_release(&u);
	err_clear(&e);
	free(text);
	return 0;
}
