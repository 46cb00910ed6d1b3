/* repo.c — `agor repo`: clone, list, show and forget repositories through the daemon.
 * Never touches the data home itself: the daemon runs an executor for every clone. */
#include <stdio.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "banned.h"

static int print_repo(const json_t *r)
{
	const json_t *repo = json_object_get(r, "repo") ? json_object_get(r, "repo") : r;
	printf("repo %s\n  url     %s\n  path    %s\n  branch  %s\n", json_get_str(repo, "id") ?: "?",
	       json_get_str(repo, "url") ?: "?", json_get_str(repo, "path") ?: "?",
	       json_get_str(repo, "default_branch") ?: "-");
	if (json_get_str(r, "task_id"))
		printf("  task    %s\n", json_get_str(r, "task_id"));
	return 0;
}

static int print_repos(const json_t *rows)
{
	client_print_table(rows, (const char *const[]){ "id", "default_branch", "created_at", "url", NULL });
	return 0;
}

static int print_removed(const json_t *r)
{
	(void)r;
	printf("removed\n");
	return 0;
}

static const char *const url_arg[] = { "url", NULL }, *const id_arg[] = { "id", NULL };
static const struct client_flag clone_flags[] = {
	{ "--branch", "branch", CLIENT_FLAG_STRING, "the branch to check out (default: the remote's HEAD)", "BRANCH" },
	{ "--path", "path", CLIENT_FLAG_STRING,
	  "where under repos/ to clone it (default: HOST/ORG/REPO.git from the URL)", "PATH" },
	{ NULL },
};

static const struct client_command commands[] = {
	{ "clone", "repos.clone", url_arg, clone_flags, "URL [--branch BRANCH] [--path PATH]", print_repo,
	  .progress = 1, .example = "agor repo clone https://github.com/org/repo --branch main" },
	{ "list", "repos.list", NULL, NULL, "", print_repos, .example = "agor repo list --json" },
	{ "get", "repos.get", id_arg, NULL, "ID", print_repo,
	  .example = "agor repo get 1aa81221cfd6801c17b9ffe254ab4e63" },
	{ "remove", "repos.remove", id_arg, NULL, "ID", print_removed,
	  .example = "agor repo remove 1aa81221cfd6801c17b9ffe254ab4e63" },
};

static int repo_main(int argc, char **argv)
{
	return client_main("repo", commands, ARRAY_SIZE(commands), argc, argv);
}

const struct applet applet_repo = {
	.name = "repo",
	.summary = "clone and list repositories (through the daemon)",
	.usage = "Usage: agor repo clone URL [--branch BRANCH] [--path PATH] | list | get ID | remove ID   [--json] "
		 "[--url "
		 "URL]\n"
		 "(clone shows git's progress as one updating line when stderr is a terminal, never with --json)\n",
	.main = repo_main,
	.flags = APPLET_SUBCOMMAND_HELP,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
