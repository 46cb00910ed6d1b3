/* test_web.c — the embedded web terminal files (lib/web, build/gen/web_assets.c): exact-match lookup only, a
 * Content-Type and security headers for each, a CSP on the page, and no token or secret baked into the page. */
#include <string.h>

#include "strbuf.h"
#include "unit.h"
#include "web.h"
#include "banned.h"

TEST(web_find_matches_exact_paths_only)
{
	CHECK(web_find("/terminal") != NULL);
	CHECK(web_find("/assets/xterm.mjs") != NULL);
	CHECK(web_find("/assets/xterm.css") != NULL);
	CHECK(web_find("/assets/terminal.js") != NULL);
	static const char *const refused[] = { "/",
					       "",
					       "/assets",
					       "/assets/",
					       "/assets//xterm.mjs",
					       "/assets/xterm.mjs/",
					       "/assets/../terminal",
					       "/assets/%2e%2e/terminal",
					       "/assets/./xterm.mjs",
					       "/ASSETS/xterm.mjs",
					       "/terminal/",
					       "/terminal.html",
					       "assets/xterm.mjs",
					       "/assets/xterm.mjs.map",
					       "/assets/xterm" };
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
		if (web_find(refused[i]))
			unit_fail(__FILE__, __LINE__, "web_find(\"%s\") found something", refused[i]);
	CHECK(web_find(NULL) == NULL);
}

TEST(web_assets_have_content_types_and_bodies)
{
	CHECK(web_nassets >= 6);
	for (size_t i = 0; i < web_nassets; i++) {
		const struct web_asset *a = &web_assets[i];
		CHECK(a->len > 0 && strlen(a->data) == a->len); /* text files: no NUL inside */
		CHECK(!strcmp(a->path, "/terminal") || !strncmp(a->path, "/assets/", 8));
		CHECK_CONTAINS(a->content_type, "; charset=utf-8");
		if (strstr(a->path, ".mjs") || strstr(a->path, ".js"))
			CHECK_STR(a->content_type, "text/javascript; charset=utf-8");
		if (strstr(a->path, ".css"))
			CHECK_STR(a->content_type, "text/css; charset=utf-8");
	}
	CHECK_STR(web_find("/terminal")->content_type, "text/html; charset=utf-8");
	CHECK_CONTAINS(web_find("/assets/xterm.mjs")->data, "export{");
}

/* The page loads its script from this origin and reads the token from the URL fragment; it holds none. */
TEST(web_page_has_no_token_and_a_strict_policy)
{
	const struct web_asset *page = web_find("/terminal");
	CHECK_CONTAINS(page->data, "<script type=\"module\" src=\"/assets/terminal.js\"></script>");
	CHECK(strstr(page->data, "<script>") == NULL); /* no inline script: the CSP forbids it */
	size_t run = 0, longest = 0;
	for (const char *p = page->data; *p; p++) {
		run = strchr("0123456789abcdef", *p) ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	CHECK(longest < 32);
	struct strbuf h = STRBUF_INIT;
	web_response_headers(&h, page);
	CHECK_CONTAINS(h.buf, "Content-Security-Policy: default-src 'none'; script-src 'self';");
	CHECK_CONTAINS(h.buf, "frame-ancestors 'none'");
	CHECK_CONTAINS(h.buf, "X-Content-Type-Options: nosniff\r\n");
	CHECK_CONTAINS(h.buf, "Referrer-Policy: no-referrer\r\n");
	CHECK(h.len >= 2 && !strcmp(h.buf + h.len - 2, "\r\n"));
	strbuf_reset(&h);
	web_response_headers(&h, web_find("/assets/xterm.mjs"));
	CHECK_CONTAINS(h.buf, "X-Content-Type-Options: nosniff\r\n");
	CHECK(strstr(h.buf, "Content-Security-Policy") == NULL);
	strbuf_release(&h);
}
