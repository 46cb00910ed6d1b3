/* audit.c — `agor audit`: list the audit log and verify its hash chain through the daemon.
 * Never edits the log; verification exits 1 when the chain is broken. */
#include <stdio.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "banned.h"

static int print_rows(const json_t *rows)
{
	client_print_table(rows, (const char *const[]){ "id", "at", "actor", "action", "target", "outcome", NULL });
	return 0;
}

static int print_verify(const json_t *r)
{
	if (json_is_true(json_object_get(r, "ok"))) {
		printf("ok: %lld rows, the hash chain verifies\n",
		       (long long)json_integer_value(json_object_get(r, "rows")));
		return 0;
	}
	printf("FAIL: %s\n", json_get_str(r, "reason") ?: "broken chain");
	return 1;
}

static const struct client_command commands[] = {
	{ "list", "audit.list", NULL, NULL, "", print_rows, .example = "agor audit list --json | jq '.[-1]'" },
	{ "verify", "audit.verify", NULL, NULL, "", print_verify, .example = "agor audit verify" },
};

static int audit_main(int argc, char **argv)
{
	return client_main("audit", commands, ARRAY_SIZE(commands), argc, argv);
}

const struct applet applet_audit = {
	.name = "audit",
	.summary = "list the audit log and verify its hash chain (through the daemon)",
	.usage = "Usage: agor audit list | verify   [--json] [--url URL]\n",
	.main = audit_main,
	.flags = APPLET_SUBCOMMAND_HELP,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
