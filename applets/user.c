/* user.c — `agor user`: create and list agor users (admins only create) through the daemon.
 * Never maps a user to a Unix account the daemon has not checked. */
#include <stdio.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "banned.h"

static int print_user(const json_t *u)
{
	printf("user %s\n  name  %s\n  unix  %s\n  role  %s\n", json_get_str(u, "id") ?: "?", json_get_str(u, "name") ?: "?",
	       json_get_str(u, "unix_username") ?: "-", json_get_str(u, "role") ?: "?");
	return 0;
}

static int print_users(const json_t *rows)
{
	client_print_table(rows, (const char *const[]){ "id", "name", "unix_username", "role", NULL });
	return 0;
}

static const char *const name_arg[] = { "name", NULL }, *const id_arg[] = { "id", NULL };
static const struct client_flag create_flags[] = {
	{ "--unix-user", "unix_username", CLIENT_FLAG_STRING },
	{ "--role", "role", CLIENT_FLAG_STRING },
	{ NULL },
};

static const struct client_command commands[] = {
	{ "create", "users.create", name_arg, create_flags, "NAME [--unix-user LOGIN] [--role admin|member]", print_user },
	{ "list", "users.list", NULL, NULL, "", print_users },
	{ "get", "users.get", id_arg, NULL, "ID|NAME", print_user },
};

static int user_main(int argc, char **argv)
{
	return client_main("user", commands, ARRAY_SIZE(commands), argc, argv);
}

const struct applet applet_user = {
	.name = "user",
	.summary = "create and list agor users (through the daemon)",
	.usage = "Usage: agor user create NAME [--unix-user LOGIN] [--role admin|member] | list | get ID   [--json] [--url URL]\n",
	.main = user_main,
	.flags = APPLET_CLIENT,
};
