/* applet.h — what every applet exports: one `const struct applet`, registered in main.c's table.
 * Applets hold no logic another applet needs (that goes to lib/); privilege checks live in main.c only. */
#ifndef AGOR_APPLET_H
#define AGOR_APPLET_H

enum applet_flags {
	APPLET_ROOT_ONLY = 1 << 0,	 /* main.c refuses to run it unless euid is 0 */
	APPLET_SUBCOMMAND_HELP = 1 << 1, /* answers `agor NAME SUB --help` itself (client_main: one subcommand) */
};

struct client_command;

struct applet {
	const char *name;
	const char *summary;		    /* one line for --list --verbose and --help */
	const char *usage;		    /* full text for `agor NAME --help` */
	int (*main)(int argc, char **argv); /* argv[0] is the applet name */
	unsigned flags;
	/* Its subcommands (lib/client.h; a command named "" is the applet without one): how it parses them, what
	 * `agor NAME SUB --help`, the man page and the shell completion show. */
	const struct client_command *commands;
	unsigned ncommands;
};

/* main.c's table of every applet, sorted by name; *n gets its length. */
const struct applet *const *applet_table(unsigned *n);
/* The command of a the arguments name: argv[1] when it is one of its commands, else its "" command; NULL when
 * a has no commands or neither matches. */
const struct client_command *applet_command(const struct applet *a, int argc, char **argv);

/* Exit statuses shared by every applet (docs/architecture.md#applets, docs/payloads.md#results). */
enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_UNKNOWN_APPLET = 127 };

/* Prints "agor NAME: message" and a hint to stderr; returns EXIT_USAGE. */
int applet_usage_error(const struct applet *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True when `agor NAME --help` (or -h) is asked, or, unless a has APPLET_SUBCOMMAND_HELP or is root-only (those
 * answer `agor NAME SUB --help` with the subcommand's own usage), when --help or -h is among the arguments before
 * a "--" (`agor setup isolation --help`): main.c then prints a's usage, exit 0. */
int applet_wants_help(const struct applet *a, int argc, char **argv);
/* `agor NAME [SUB] … --help` for an applet with commands: prints that command's help (client_print_help) and
 * returns 1; 0 when help is not asked (before a "--") or no command matches. */
int applet_command_help(const struct applet *a, int argc, char **argv);

#endif
