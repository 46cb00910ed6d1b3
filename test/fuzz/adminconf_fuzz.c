/* adminconf_fuzz.c — libFuzzer target over adminconf_parse, the reader of /etc/agor/admin.yaml that bounds where
 * the root applet may act. Invariants: a refusal carries a message; an accepted file has both roots, each a clean
 * absolute path other than "/", and its formatted text parses again to the same three paths (a round trip). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adminconf.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_root(const char *path)
{
	if (!path || path[0] != '/' || !strcmp(path, "/") || strstr(path, "//") || strstr(path, "/./") ||
	    strstr(path, "/../"))
		abort();
}

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct adminconf c = { 0 }, again = { 0 };
	struct err e = ERR_INIT;
	if (adminconf_parse((const char *)data, size, "fuzz.yaml", &c, &e) < 0) {
		if (!e.message)
			abort();
		err_clear(&e);
		return 0;
	}
	check_root(c.worktrees_dir);
	check_root(c.repos_dir);
	struct strbuf text = STRBUF_INIT;
	adminconf_format(&c, &text);
	if (adminconf_parse(text.buf, text.len, "formatted", &again, &e) < 0 ||
	    !same(c.worktrees_dir, again.worktrees_dir) || !same(c.repos_dir, again.repos_dir) ||
	    !same(c.archive_dir, again.archive_dir))
		abort(); /* what `agor setup isolation` writes must read back as itself */
	strbuf_release(&text);
	adminconf_release(&c);
	adminconf_release(&again);
	return 0;
}
