/* completion.c — `agor completion bash|zsh|list`: the shell completion of every applet, subcommand and option,
 * generated from the same command tables the applets parse with (struct applet's commands, lib/client.h), so
 * it cannot drift from them. Prints text only; never reads or writes anything else. */
#include <stdio.h>
#include <string.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "banned.h"

extern const struct applet applet_completion;

/* The words a command's options complete to: its own flags, the common ones unless local, and --help. */
static void print_flag_words(const struct client_command *c)
{
	for (const struct client_flag *f = c->flags; f && f->name; f++)
		printf("%s ", f->name);
	for (const struct client_flag *f = client_common_flags; !c->local && f->name; f++)
		printf("%s ", f->name);
	printf("--help");
}

/* The first word of a command's name ("allowlist" of "allowlist add"), as *len bytes of c->name. */
static size_t first_word(const struct client_command *c)
{
	return strcspn(c->name, " ");
}

/* 1 when an earlier command of a has the same first word (it was already offered). */
static int offered_before(const struct applet *a, unsigned i)
{
	size_t n = first_word(&a->commands[i]);
	for (unsigned k = 0; k < i; k++)
		if (first_word(&a->commands[k]) == n && !strncmp(a->commands[k].name, a->commands[i].name, n))
			return 1;
	return 0;
}

/* Prints flag's name followed by "|" unless seen (at most 256 names) holds it already. */
static void print_once(const char *name, const char **seen, unsigned *nseen)
{
	for (unsigned i = 0; i < *nseen; i++)
		if (!strcmp(seen[i], name))
			return;
	if (*nseen < 256)
		seen[(*nseen)++] = name;
	printf("%s|", name);
}

/* Every value-taking flag of every table, for "no completion after such a flag": `--branch <TAB>` gets files. */
static void print_value_flags(const struct applet *const *applets, unsigned n)
{
	const char *seen[256];
	unsigned nseen = 0;
	printf("  case $prev in\n  ");
	for (const struct client_flag *f = client_common_flags; f->name; f++)
		if (f->type != CLIENT_FLAG_BOOL)
			print_once(f->name, seen, &nseen);
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < applets[i]->ncommands; k++)
			for (const struct client_flag *f = applets[i]->commands[k].flags; f && f->name; f++)
				if (f->type != CLIENT_FLAG_BOOL)
					print_once(f->name, seen, &nseen);
	printf("--no-such-flag) return ;;\n  esac\n");
}

/* One applet's case: at word 2 its subcommands (and its own options when it has a "" command); later the
 * options of the subcommand typed (two-word names: at word 3 the second words, then their options). */
static void print_applet_case(const struct applet *a)
{
	const struct client_command *bare = applet_command(a, 1, NULL);
	printf("  %s)\n    if [ \"$n\" -eq 2 ]; then candidates=\"", a->name);
	for (unsigned i = 0; i < a->ncommands; i++)
		if (*a->commands[i].name && !offered_before(a, i))
			printf("%.*s ", (int)first_word(&a->commands[i]), a->commands[i].name);
	if (bare)
		print_flag_words(bare);
	else
		printf("--help");
	printf("\"; return; fi\n    case \"$w2\" in\n");
	for (unsigned i = 0; i < a->ncommands; i++) {
		const struct client_command *c = &a->commands[i];
		const char *space = strchr(c->name, ' ');
		if (!*c->name || (space && offered_before(a, i)))
			continue;
		if (!space) {
			printf("    %s) candidates=\"", c->name);
			print_flag_words(c);
			printf("\" ;;\n");
			continue;
		}
		size_t n = first_word(c);
		printf("    %.*s)\n      if [ \"$n\" -eq 3 ]; then candidates=\"", (int)n, c->name);
		for (unsigned k = i; k < a->ncommands; k++)
			if (!strncmp(a->commands[k].name, c->name, n + 1))
				printf("%s ", a->commands[k].name + n + 1);
		printf("\"; return; fi\n      case \"$w3\" in\n");
		for (unsigned k = i; k < a->ncommands; k++)
			if (!strncmp(a->commands[k].name, c->name, n + 1)) {
				printf("      %s) candidates=\"", a->commands[k].name + n + 1);
				print_flag_words(&a->commands[k]);
				printf("\" ;;\n");
			}
		printf("      esac ;;\n");
	}
	if (bare) {
		printf("    *) candidates=\"");
		print_flag_words(bare);
		printf("\" ;;\n");
	}
	printf("    esac ;;\n");
}

/* The shell-neutral part: _agor_candidates sets $candidates from n (the index of the word being completed, 1 =
 * the applet), w1..w3 (the words typed) and prev (the word before it). */
static void print_candidates_function(void)
{
	unsigned n;
	const struct applet *const *applets = applet_table(&n);
	printf("_agor_candidates() {\n  candidates=\n");
	print_value_flags(applets, n);
	printf("  if [ \"$n\" -eq 1 ]; then candidates=\"");
	for (unsigned i = 0; i < n; i++)
		printf("%s ", applets[i]->name);
	printf("--help --list --version --install\"; return; fi\n  case \"$w1\" in\n");
	for (unsigned i = 0; i < n; i++)
		if (applets[i]->ncommands)
			print_applet_case(applets[i]);
	printf("  *) candidates=\"--help\" ;;\n  esac\n}\n");
}

static int print_bash(void)
{
	printf("# bash completion for agor: generated by `agor completion bash` from agor's command tables; do not "
	       "edit.\n# Load it with: source <(agor completion bash)   (or install it as "
	       "/usr/share/bash-completion/completions/agor)\n");
	print_candidates_function();
	printf("_agor() {\n"
	       "  local n=$COMP_CWORD w1=${COMP_WORDS[1]} w2=${COMP_WORDS[2]} w3=${COMP_WORDS[3]}\n"
	       "  local prev=${COMP_WORDS[COMP_CWORD-1]} cur=${COMP_WORDS[COMP_CWORD]} candidates\n"
	       "  _agor_candidates\n"
	       "  COMPREPLY=($(compgen -W \"$candidates\" -- \"$cur\"))\n"
	       "}\n"
	       "complete -o default -F _agor agor\n");
	return EXIT_OK;
}

static int print_zsh(void)
{
	printf("#compdef agor\n# zsh completion for agor: generated by `agor completion zsh` from agor's command "
	       "tables; do not edit.\n# Install it as _agor in a directory of $fpath (or: source <(agor completion "
	       "zsh) after compinit).\n");
	print_candidates_function();
	printf("_agor() {\n"
	       "  local n=$((CURRENT - 1)) w1=$words[2] w2=$words[3] w3=$words[4] prev=$words[CURRENT-1] candidates\n"
	       "  _agor_candidates\n"
	       "  if [ -z \"$candidates\" ]; then _files; return; fi\n"
	       "  local -a choices\n"
	       "  choices=(${=candidates})\n"
	       "  compadd -a choices\n"
	       "}\n"
	       "if [ \"$funcstack[1]\" = _agor ]; then _agor \"$@\"\n"
	       "elif (( $+functions[compdef] )); then compdef _agor agor; fi\n");
	return EXIT_OK;
}

/* `agor completion list`: one line per command of every table, "APPLET[ SUBCOMMAND]" (for tests and scripts). */
static int print_list(void)
{
	unsigned n;
	const struct applet *const *applets = applet_table(&n);
	for (unsigned i = 0; i < n; i++) {
		if (!applets[i]->ncommands)
			printf("%s\n", applets[i]->name);
		for (unsigned k = 0; k < applets[i]->ncommands; k++)
			printf("%s%s%s\n", applets[i]->name, *applets[i]->commands[k].name ? " " : "",
			       applets[i]->commands[k].name);
	}
	return EXIT_OK;
}

static const struct client_command commands[] = {
	{ "bash", NULL, NULL, NULL, "", .local = 1, .example = "source <(agor completion bash)" },
	{ "zsh", NULL, NULL, NULL, "", .local = 1, .example = "agor completion zsh > ~/.zsh/functions/_agor" },
	{ "list", NULL, NULL, NULL, "", .local = 1, .example = "agor completion list" },
};

static int completion_main(int argc, char **argv)
{
	const struct client_command *c = applet_command(&applet_completion, argc, argv);
	if (!c)
		return applet_usage_error(&applet_completion,
					  argc < 2 ? "which shell? bash or zsh%s"
						   : "unknown subcommand '%s' (bash, zsh or list)",
					  argc < 2 ? "" : argv[1]);
	_cleanup_json_ json_t *params = json_object();
	int rc = client_parse_args("completion", c, argc - 2, argv + 2, NULL, params);
	if (rc)
		return rc;
	return !strcmp(c->name, "bash") ? print_bash() : !strcmp(c->name, "zsh") ? print_zsh() : print_list();
}

const struct applet applet_completion = {
	.name = "completion",
	.summary = "print the bash or zsh completion of every applet, subcommand and option",
	.usage = "Usage: agor completion bash | zsh | list\n"
		 "\n"
		 "Prints a completion script for bash or zsh, generated from the command tables every applet parses\n"
		 "its arguments with; list prints every command of those tables, one a line.\n"
		 "dist/completion/ holds both scripts as this binary prints them (`make completion`).\n",
	.main = completion_main,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
