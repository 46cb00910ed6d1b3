/* stubs.c — the registered applets that later issues build: their usage text and a main that refuses.
 * They must never pretend to work: the answer is "not built yet" and exit 2, until their issue lands. */
#include <stdio.h>

#include "applet.h"
#include "banned.h"

static int not_built_main(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "agor %s: not built yet\n", argv[0]);
	return EXIT_USAGE;
}

const struct applet applet_node = {
	.name = "node",
	.summary = "headless node runner: pairs with a gateway and runs system.run under local policy",
	.usage = "Usage: agor node pair --gateway URL [--name NAME]\n"
		 "       agor node run\n",
	.main = not_built_main,
	.flags = APPLET_NOT_BUILT,
	.built_by = "issue 8 (node)",
};
