/* nodes.c — `agor nodes`: the gateway operator's view of paired nodes (list, approve, revoke) through the daemon.
 * Never decides anything itself: approval and revocation are the daemon's, for admins only. */
#include <stdio.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "banned.h"

static int print_nodes(const json_t *rows)
{
	client_print_table(rows, (const char *const[]){ "id", "display_name", "status", "connected", "last_ip",
							"last_seen_at", NULL });
	return 0;
}

static int print_decision(const json_t *r)
{
	printf("%s %s (%s)\n", json_get_str(r, "status"), json_get_str(r, "id"), json_get_str(r, "display_name"));
	return 0;
}

static const char *const id_arg[] = { "id", NULL };

static const struct client_command commands[] = {
	{ "list", "nodes.list", NULL, NULL, "", print_nodes, .example = "agor nodes list" },
	{ "approve", "nodes.approve", id_arg, NULL, "ID", print_decision, .example = "agor nodes approve 3f2a9c1e" },
	{ "revoke", "nodes.revoke", id_arg, NULL, "ID", print_decision, .example = "agor nodes revoke 3f2a9c1e" },
};

static int nodes_main(int argc, char **argv)
{
	return client_main("nodes", commands, ARRAY_SIZE(commands), argc, argv);
}

const struct applet applet_nodes = {
	.name = "nodes",
	.summary = "list, approve and revoke paired nodes (through the daemon; admins only)",
	.usage = "Usage: agor nodes list | approve ID | revoke ID   [--json] [--url URL]\n"
		 "ID is a node id, an id prefix of 6+ characters, an IP or a display name.\n",
	.main = nodes_main,
	.flags = APPLET_SUBCOMMAND_HELP,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
