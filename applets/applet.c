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

int applet_wants_help(int argc, char **argv)
{
	return argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
}
