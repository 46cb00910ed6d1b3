/* applet.h — what every applet exports: one `const struct applet`, registered in main.c's table.
 * Applets hold no logic another applet needs (that goes to lib/); privilege checks live in main.c only. */
#ifndef AGOR_APPLET_H
#define AGOR_APPLET_H

enum applet_flags {
	APPLET_ROOT_ONLY = 1 << 0,	 /* main.c refuses to run it unless euid is 0 */
	APPLET_SUBCOMMAND_HELP = 1 << 1, /* answers `agor NAME SUB --help` itself (client_main: one subcommand) */
};

struct applet {
	const char *name;
	const char *summary;		    /* one line for --list --verbose and --help */
	const char *usage;		    /* full text for `agor NAME --help` */
	int (*main)(int argc, char **argv); /* argv[0] is the applet name */
	unsigned flags;
};

/* Exit statuses shared by every applet (docs/architecture.md#applets, docs/payloads.md#results). */
enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_UNKNOWN_APPLET = 127 };

/* Prints "agor NAME: message" and a hint to stderr; returns EXIT_USAGE. */
int applet_usage_error(const struct applet *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True when `agor NAME --help` (or -h) is asked, or, unless a has APPLET_SUBCOMMAND_HELP or is root-only (those
 * answer `agor NAME SUB --help` with the subcommand's own usage), when --help or -h is among the arguments before
 * a "--" (`agor setup isolation --help`): main.c then prints a's usage, exit 0. */
int applet_wants_help(const struct applet *a, int argc, char **argv);

#endif
