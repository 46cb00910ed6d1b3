/* client.h — what every client command (agor repo|worktree|user|task|audit …) shares: option parsing of
 * --url/--config/--json, the connection to the daemon, one call, and printing the answer for humans or
 * machines. Never sends anything but the JSON-RPC request it was asked to; never prints secrets.
 *
 * A command group is a table of subcommands; each names its JSON-RPC method, its positional arguments
 * (mapped to params keys) and its flags (mapped to params keys, typed). client_main() does the rest:
 * usage errors exit 2, daemon/connection errors exit 1 with the daemon's message, success exits 0.
 *
 * The same table shape is every applet's one way to parse its arguments (client_parse_args: a local command has
 * no method) and the one source of `agor APPLET SUB --help` (client_print_help), the man pages and the shell
 * completion (`agor completion bash|zsh`): an applet lists its commands in struct applet (applets/applet.h).
 */
#ifndef AGOR_CLIENT_H
#define AGOR_CLIENT_H

#include <jansson.h>
#include <stdio.h>

#include "err.h"

/* A string flag sets params[param] to its value (given again: the last one), a bool flag to true, a list flag
 * appends each value to the array params[param]. */
enum client_flag_type { CLIENT_FLAG_STRING, CLIENT_FLAG_BOOL, CLIENT_FLAG_LIST };

struct client_flag {
	const char *name;  /* "--branch" */
	const char *param; /* "branch" */
	enum client_flag_type type;
	const char *help;  /* "the branch to check out": --help and the man pages show it (t0001: never empty) */
	const char *value; /* what the value is, as --help shows it: "BRANCH" (a STRING or LIST flag; t0001 checks) */
};

struct client_command {
	const char *name;   /* "clone" */
	const char *method; /* "repos.clone" */
	/* params keys for the positional arguments, NULL-terminated; "?key": optional (the last ones only) */
	const char *const *positional;
	const struct client_flag *flags; /* NULL-terminated by name == NULL; may be NULL */
	const char *usage;		 /* "URL [--branch B]" */
	/* Prints the result for humans (NULL: indented JSON); returns the exit status (0 ok, 1 failed). */
	int (*print)(const json_t *result);
	/* The method takes {progress: true} and then sends task.progress events while it waits: shown as one
	 * updating line on stderr when it is a terminal and --json is not given (never otherwise). */
	int progress;
	const char *example; /* one line a person could type: `agor GROUP NAME --help` shows it */
	const char *rest; /* params key of the words after "--" (an array): `agor exec W -- ARGV…`; NULL: no "--" */
	int rest_at_word; /* the first word past the positional ones starts rest, as "--" would */
	int local;	  /* takes none of the common options (--url, --token, --config, --json): daemon, executor */
};

/* --json, --url, --token, --config: what every command that is not local takes (NULL-terminated by name). */
extern const struct client_flag client_common_flags[];

/* Parses argv (argc words after the command's name; "" commands: after the applet's) against c: its flags set
 * params[flag.param], its positional arguments params[positional[i]] in order, and the common options go to o
 * (o NULL or c->local: they are unknown options). "--help"/"-h" are not taken here (main.c answers them).
 * 0, or EXIT_USAGE after printing "agor WHO: what is wrong" and the --help to try on stderr. */
struct client_opts;
int client_parse_args(const char *who, const struct client_command *c, int argc, char **argv, struct client_opts *o,
		      json_t *params);
/* `agor GROUP NAME --help`: the usage line, what it calls, every option with its help, the common options
 * unless c->local, and the example. */
/* How many words the command's name has: 0 (""), 1 ("clone") or 2 ("allowlist add"). */
int client_command_words(const struct client_command *c);
void client_print_help(FILE *out, const char *group, const struct client_command *c);
/* One "  --name VALUE   help" line per flag (a LIST flag's help ends "(repeatable)"). */
void client_print_flags(FILE *out, const struct client_flag *flags);

/* argv[0] is the group name ("repo"). */
int client_main(const char *group, const struct client_command *commands, size_t ncommands, int argc, char **argv);
struct rpc_client;
struct err;
/* The options every client command takes: --url URL, --config PATH, --token T, --json. */
struct client_opts {
	const char *url;
	const char *config_path;
	const char *token; /* --token, else AGOR_TOKEN: a user token for TCP URLs */
	int json;
};
/* When argv[*i] is one of those options, takes it (and its value, advancing *i) and returns 1; returns 0 for
 * anything else and -1 when the option's value is missing. */
int client_take_option(struct client_opts *o, int argc, char **argv, int *i);
/* Connects to url (NULL: the configured Unix socket of config_path's config) and, over TCP, authenticates
 * with token (NULL: $AGOR_TOKEN). NULL with e set (naming `agor daemon`) when the daemon is unreachable. */
struct rpc_client *client_connect(const char *url, const char *config_path, const char *token, struct err *e);
/* Over TCP (url not unix:), presents token (NULL: $AGOR_TOKEN) with auth.token so cl acts as its user; nothing
 * to do without a token or on the Unix socket (the daemon knows its peer there). 0, or -1 with e. */
int client_authenticate(struct rpc_client *cl, const char *url, const char *token, struct err *e);
/* Replaces params[key], a unique prefix (6 to 31 lowercase hex digits) of an id list_method lists, by that id;
 * an id or name in the list, or what matches nothing (or cannot be listed), stays as given (the daemon answers
 * it). An ambiguous prefix: -1 with e naming the candidates. client_main does this for every command's ids. */
int client_expand_id(struct rpc_client *cl, const char *list_method, json_t *params, const char *key, struct err *e);
/* "unix:<daemon.socket_path>" of the configuration (config_path may be NULL); NULL with e on a config error. */
char *client_default_url(const char *config_path, struct err *e);
/* Human output. A value shows the same wherever it is printed: times (keys "at", "*_at", "*At") as local
 * "YYYY-MM-DD HH:MM:SS", user ids (created_by, set_by, decided_by, by, user_id, owner, actor) by name once
 * client_learn_user_names ran (client_main does, without --json), booleans yes/no, null "-".
 * client_print_table: rows of objects as aligned columns of the given keys (at most 16).
 * client_print_object: one "key  value" line per field, skipping nulls; a nested object, or a string holding
 * one (a task's result), as "key.inner  value" lines. */
void client_print_table(const json_t *rows, const char *const *keys);
void client_print_object(const json_t *obj);
/* Learns the names of the agor users (worktrees) the caller may list (nothing when it may not): user ids, and
 * worktree_id values, then show as names. */
void client_learn_user_names(struct rpc_client *cl);
void client_learn_worktree_names(struct rpc_client *cl);
/* The text of v, the value of key, as tables and objects show it (in buf, or v's own string). */
const char *client_value_text(const char *key, const json_t *v, char *buf, size_t size);
/* After an error code NOT_FOUND with "no THING with id …" or "unknown THING: …" (a repo, worktree, session,
 * task, user, node or token), the line that says what to type to see them: "`agor repo list` shows them (…)".
 * Nothing for other errors. */
void client_print_fix_hint(FILE *out, const char *code, const char *message);

#endif
