/* web.c — lookup of the embedded web terminal files and their response headers (web.h).
 * Never maps a request path onto the filesystem: only exact matches of the built-in table are served. */
#include <string.h>

#include "web.h"
#include "banned.h"

const struct web_asset *web_find(const char *path)
{
	for (size_t i = 0; path && i < web_nassets; i++)
		if (!strcmp(web_assets[i].path, path))
			return &web_assets[i];
	return NULL;
}

static int is_page(const struct web_asset *a)
{
	return !strncmp(a->content_type, "text/html", 9);
}

void web_response_headers(struct strbuf *headers, const struct web_asset *a)
{
	strbuf_addstr(headers, "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
			       "X-Frame-Options: DENY\r\n");
	if (is_page(a))
		strbuf_addstr(headers,
			      "Content-Security-Policy: default-src 'none'; script-src 'self'; "
			      "style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; "
			      "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n");
}
