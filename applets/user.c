/* user.c — `agor user`: create, list, update, link and remove agor users (admins change them), and their TCP
 * access tokens. Never maps a user to a Unix account the daemon has not checked; never touches a Unix user. */
#include <stdio.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "banned.h"

static int print_user(const json_t *u)
{
	printf("user %s\n  name  %s\n  unix  %s\n  role  %s\n", json_get_str(u, "id") ?: "?",
	       json_get_str(u, "name") ?: "?", json_get_str(u, "unix_username") ?: "-", json_get_str(u, "role") ?: "?");
	if (json_get_str(u, "email"))
		printf("  email %s\n", json_get_str(u, "email"));
	return 0;
}

/* What went with the user and who took the rest over; the Unix user stays as it was. */
static int print_user_removed(const json_t *r)
{
	const json_t *refs = json_object_get(r, "references");
	printf("removed (its Unix user, if any, is untouched)\n");
	if (json_get_str(r, "reassigned_to"))
		printf("  reassigned to %s: repos %lld, worktrees %lld, sessions %lld, tasks %lld, worktree ownerships "
		       "%lld\n",
		       json_get_str(r, "reassigned_to"), json_integer_value(json_object_get(refs, "repos")),
		       json_integer_value(json_object_get(refs, "worktrees")),
		       json_integer_value(json_object_get(refs, "sessions")),
		       json_integer_value(json_object_get(refs, "tasks")),
		       json_integer_value(json_object_get(refs, "owned_worktrees")));
	return 0;
}

static int print_users(const json_t *rows)
{
	client_print_table(rows, (const char *const[]){ "id", "name", "unix_username", "role", NULL });
	return 0;
}

/* The token itself on stdout (for AGOR_TOKEN=$(agor user token)); what it is on stderr. */
static int print_token(const json_t *r)
{
	puts(json_get_str(r, "token") ?: "");
	fprintf(stderr,
		"token %s (expires at %lld): keep it secret; use it with --token or AGOR_TOKEN over TCP; "
		"revoke it with `agor user revoke-token %s`\n",
		json_get_str(r, "jti") ?: "?", (long long)json_integer_value(json_object_get(r, "expires_at")),
		json_get_str(r, "jti") ?: "?");
	return 0;
}

static int print_tokens(const json_t *rows)
{
	client_print_table(rows, (const char *const[]){ "jti", "user_id", "label", NULL });
	return 0;
}

static int print_revoked(const json_t *r)
{
	(void)r;
	puts("revoked");
	return 0;
}

static const char *const name_arg[] = { "name", NULL }, *const id_arg[] = { "id", NULL };
static const char *const jti_arg[] = { "jti", NULL };
static const char *const link_args[] = { "id", "unix_username", NULL };
static const struct client_flag update_flags[] = {
	{ "--unix-user", "unix_username", CLIENT_FLAG_STRING,
	  "the Unix user whose uid maps to this agor user (\"\" to unlink, with update)", "LOGIN" },
	{ "--role", "role", CLIENT_FLAG_STRING, "admin or member (the default for a new user)", "ROLE" },
	{ "--email", "email", CLIENT_FLAG_STRING, "the address shown with the user (\"\" to clear)", "EMAIL" },
	{ NULL },
};
static const struct client_flag remove_flags[] = {
	{ "--reassign-to", "reassign_to", CLIENT_FLAG_STRING,
	  "the user (id or name) who takes over their repos, worktrees, sessions and tasks", "USER" },
	{ NULL },
};
static const struct client_flag token_flags[] = {
	{ "--label", "label", CLIENT_FLAG_STRING, "a name for the token, shown by `agor user tokens`", "LABEL" },
	{ "--for", "user_id", CLIENT_FLAG_STRING, "make the token for this user (id or name; admins only)", "USER" },
	{ NULL },
};
static const struct client_flag create_flags[] = {
	{ "--unix-user", "unix_username", CLIENT_FLAG_STRING,
	  "the Unix user whose uid maps to this agor user (\"\" to unlink, with update)", "LOGIN" },
	{ "--role", "role", CLIENT_FLAG_STRING, "admin or member (the default for a new user)", "ROLE" },
	{ NULL },
};

static const struct client_command commands[] = {
	{ "create", "users.create", name_arg, create_flags, "NAME [--unix-user LOGIN] [--role admin|member]",
	  print_user, .example = "agor user create alice --unix-user alice --role member" },
	{ "list", "users.list", NULL, NULL, "", print_users, .example = "agor user list" },
	{ "get", "users.get", id_arg, NULL, "ID|NAME", print_user, .example = "agor user get alice" },
	{ "update", "users.update", id_arg, update_flags,
	  "ID|NAME [--unix-user LOGIN|\"\"] [--role admin|member] [--email EMAIL|\"\"]", print_user,
	  .example = "agor user update alice --role admin --email alice@example.org" },
	{ "link", "users.update", link_args, NULL, "ID|NAME LOGIN   (maps the agor user to Unix user LOGIN)",
	  print_user, .example = "agor user link alice alice" },
	{ "remove", "users.remove", id_arg, remove_flags, "ID|NAME [--reassign-to USER]", print_user_removed,
	  .example = "agor user remove alice --reassign-to bob" },
	{ "token", "tokens.create", NULL, token_flags,
	  "[--label LABEL] [--for USER]   (a token for TCP clients, 30 days; --for: admins)", print_token,
	  .example = "AGOR_TOKEN=$(agor user token --label laptop)" },
	{ "tokens", "tokens.list", NULL, NULL, "", print_tokens, .example = "agor user tokens" },
	{ "revoke-token", "tokens.revoke", jti_arg, NULL, "JTI", print_revoked,
	  .example = "agor user revoke-token 5b0c2d9e8f7a6b5c4d3e2f1a0b9c8d7e" },
};

static int user_main(int argc, char **argv)
{
	return client_main("user", commands, ARRAY_SIZE(commands), argc, argv);
}

const struct applet applet_user = {
	.name = "user",
	.summary = "create, list, update, link and remove agor users (through the daemon)",
	.usage = "Usage: agor user create NAME [--unix-user LOGIN] [--role admin|member] | list | get ID\n"
		 "       agor user update ID [--unix-user LOGIN|\"\"] [--role admin|member] [--email EMAIL|\"\"]\n"
		 "       agor user link ID LOGIN | remove ID [--reassign-to USER]\n"
		 "       agor user token [--label LABEL] [--for USER] | tokens | revoke-token JTI\n"
		 "       (every subcommand: [--json] [--url URL] [--token T])\n",
	.main = user_main,
	.flags = APPLET_SUBCOMMAND_HELP,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
