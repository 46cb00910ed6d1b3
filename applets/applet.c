/* applet.c — helpers every applet shares for argument errors and --help.
 * Never decides policy (privilege checks are main.c's). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "applet.h"
#include "banned.h"

int applet_usage_error(const struct applet *a, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "agor %s: ", a->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'agor %s --help'.\n", a->name);
	return EXIT_USAGE;
}

static int is_help(const char *arg)
{
	return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

int applet_wants_help(const struct applet *a, int argc, char **argv)
{
	if (argc == 2 && is_help(argv[1]))
		return 1;
	if (a->flags & (APPLET_SUBCOMMAND_HELP | APPLET_ROOT_ONLY)) /* they answer a subcommand's --help themselves */
		return 0;
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (is_help(argv[i]))
			return 1;
	return 0;
}
