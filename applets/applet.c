/* applet.c — helpers every applet shares for argument errors and --help.
 * Never decides policy (privilege checks are main.c's). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "applet.h"
#include "client.h"
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

/* 1 when argv's first words are name's ("clone", or "allowlist add": two words). */
static int names_command(const char *name, int argc, char **argv)
{
	const char *space = strchr(name, ' ');
	if (!space)
		return !strcmp(name, argv[0]);
	size_t n = (size_t)(space - name);
	return argc > 1 && strlen(argv[0]) == n && !strncmp(name, argv[0], n) && !strcmp(space + 1, argv[1]);
}

const struct client_command *applet_command(const struct applet *a, int argc, char **argv)
{
	const struct client_command *bare = NULL;
	for (unsigned i = 0; i < a->ncommands; i++) {
		const char *name = a->commands[i].name;
		if (!*name)
			bare = &a->commands[i];
		else if (argc > 1 && names_command(name, argc - 1, argv + 1))
			return &a->commands[i];
	}
	return bare;
}

/* `agor NAME --help` of an applet with commands: its usage, then the options and example of its "" command, or
 * for a group of subcommands the common options, an example and where each subcommand's help is. */
static void print_applet_help(const struct applet *a)
{
	const struct client_command *bare = applet_command(a, 1, NULL);
	fputs(a->usage, stdout);
	if (bare && a->ncommands == 1) {
		fputc('\n', stdout);
		client_print_help(stdout, a->name, bare);
		return;
	}
	if (bare) {
		printf("\nOptions (agor %s without a subcommand):\n", a->name);
		client_print_flags(stdout, bare->flags);
	}
	if (!(bare ? bare : &a->commands[0])->local) {
		fputs("\nOptions (every subcommand):\n", stdout);
		client_print_flags(stdout, client_common_flags);
	}
	printf("\nSubcommands:\n");
	for (unsigned i = 0; i < a->ncommands; i++)
		printf("  agor %s%s%s%s%s\n", a->name, *a->commands[i].name ? " " : "", a->commands[i].name,
		       a->commands[i].usage && *a->commands[i].usage ? " " : "",
		       a->commands[i].usage ? a->commands[i].usage : "");
	printf("\nExample:\n  %s\n\nRun 'agor %s SUBCOMMAND --help' for a subcommand's options and example.\n",
	       a->commands[0].example ? a->commands[0].example : "", a->name);
}

int applet_command_help(const struct applet *a, int argc, char **argv)
{
	int asked = 0;
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		asked |= is_help(argv[i]);
	if (!asked || !a->ncommands)
		return 0;
	if (argc == 2) {
		print_applet_help(a);
		return 1;
	}
	const struct client_command *c = applet_command(a, argc, argv);
	if (!c)
		return 0;
	client_print_help(stdout, a->name, c);
	return 1;
}
