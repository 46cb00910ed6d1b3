/* config.c — `agor config`: shows the effective configuration and where each setting came from.
 * Never writes config.yaml without validating it first. */
#include <stdio.h>

#include "applet.h"
#include "banned.h"

static int config_main(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "agor %s: not built yet\n", argv[0]);
	return EXIT_USAGE;
}

const struct applet applet_config = {
	.name = "config",
	.summary = "show the effective configuration and where each setting came from",
	.usage = "Usage: agor config show [--json]\n",
	.main = config_main,
	.flags = APPLET_CLIENT,
};
