/* task.c — `agor task`: show, list and cancel tasks through the daemon.
 * Never kills a process itself: cancellation is the daemon's (it owns the executors). */
#include <stdio.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "banned.h"

static int print_tasks(const json_t *rows)
{
	client_print_table(rows,
			   (const char *const[]){ "id", "command", "status", "created_at", "execution_user", NULL });
	return 0;
}

static int print_cancel(const json_t *r)
{
	(void)r;
	printf("cancelling\n");
	return 0;
}

static const char *const id_arg[] = { "id", NULL };
static const struct client_flag list_flags[] = {
	{ "--status", "status", CLIENT_FLAG_STRING,
	  "only tasks in this status: queued, running, completed, failed or cancelled", "STATUS" },
	{ NULL }
};

static const struct client_command commands[] = {
	{ "get", "tasks.get", id_arg, NULL, "ID", NULL,
	  .example = "agor task get 87621ef12b5714e83b2d16e2834c21b9 --json" },
	{ "list", "tasks.list", NULL, list_flags, "[--status STATUS]", print_tasks,
	  .example = "agor task list --status running" },
	{ "cancel", "tasks.cancel", id_arg, NULL, "ID", print_cancel,
	  .example = "agor task cancel 87621ef12b5714e83b2d16e2834c21b9" },
};

static int task_main(int argc, char **argv)
{
	return client_main("task", commands, ARRAY_SIZE(commands), argc, argv);
}

const struct applet applet_task = {
	.name = "task",
	.summary = "show, list and cancel tasks (through the daemon)",
	.usage = "Usage: agor task get ID | list [--status STATUS] | cancel ID   [--json] [--url URL]\n",
	.main = task_main,
	.flags = APPLET_SUBCOMMAND_HELP,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
