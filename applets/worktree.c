/* worktree.c — `agor worktree`: add, list, show and remove worktrees through the daemon.
 * Never touches the data home itself: the daemon runs an executor for every change. */
#include <stdio.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "banned.h"

static int print_worktree(const json_t *r)
{
	const json_t *w = json_object_get(r, "worktree") ? json_object_get(r, "worktree") : r;
	printf("worktree %s\n  name    %s\n  path    %s\n  branch  %s\n  others  can %s, files %s\n",
	       json_get_str(w, "id") ?: "?", json_get_str(w, "name") ?: "?", json_get_str(w, "path") ?: "?",
	       json_get_str(w, "branch") ?: "(detached)", json_get_str(w, "others_can") ?: "?",
	       json_get_str(w, "others_fs_access") ?: "?");
	return 0;
}

static int print_worktrees(const json_t *rows)
{
	client_print_table(rows, (const char *const[]){ "id", "name", "branch", "created_at", "path", NULL });
	return 0;
}

static int print_removed(const json_t *r)
{
	(void)r;
	printf("removed\n");
	return 0;
}

/* The owners: the reply's array, or {task_id, owners} when agor admin changed the worktree's group first. */
static int print_owners(const json_t *rows)
{
	if (json_is_object(rows))
		rows = json_object_get(rows, "owners");
	client_print_table(rows, (const char *const[]){ "id", "name", "unix_username", NULL });
	return 0;
}

static const char *const add_args[] = { "repo_id", "name", NULL }, *const id_arg[] = { "id", NULL };
static const char *const owners_arg[] = { "worktree_id", NULL }, *const owner_args[] = { "worktree_id", "user_id",
											 NULL };
static const struct client_flag add_flags[] = {
	{ "--branch", "branch", CLIENT_FLAG_STRING, "the branch to check out (default: a detached HEAD)", "BRANCH" },
	{ "--source-branch", "source_branch", CLIENT_FLAG_STRING,
	  "where a new branch or detached HEAD starts (default: the repository's HEAD)", "BRANCH" },
	{ "--create-branch", "create_branch", CLIENT_FLAG_BOOL, "create --branch first (it must not exist yet)" },
	{ "--others-can", "others_can", CLIENT_FLAG_STRING, "what other agor users may do: none, view, prompt or all",
	  "WHAT" },
	{ "--others-fs-access", "others_fs_access", CLIENT_FLAG_STRING,
	  "others' Unix access to the files: none, read or write (insulated/strict, worktree_rbac)", "ACCESS" },
	{ NULL },
};
static const struct client_flag access_flags[] = {
	{ "--others-can", "others_can", CLIENT_FLAG_STRING, "what other agor users may do: none, view, prompt or all",
	  "WHAT" },
	{ "--others-fs-access", "others_fs_access", CLIENT_FLAG_STRING,
	  "others' Unix access to the files: none, read or write (insulated/strict, worktree_rbac)", "ACCESS" },
	{ NULL },
};
static const struct client_flag list_flags[] = { { "--repo", "repo_id", CLIENT_FLAG_STRING,
						   "only worktrees of this repository (id or prefix)", "REPO" },
						 { NULL } };
static const struct client_flag remove_flags[] = {
	{ "--force", "force", CLIENT_FLAG_BOOL, "also remove its sessions and tasks and discard uncommitted changes" },
	{ NULL }
};

static const struct client_command commands[] = {
	{ "add", "worktrees.add", add_args, add_flags,
	  "REPO NAME [--branch BRANCH] [--source-branch BRANCH] [--create-branch]", print_worktree,
	  .example = "agor worktree add 1aa81221 feature --branch feat --create-branch" },
	{ "list", "worktrees.list", NULL, list_flags, "[--repo REPO]", print_worktrees,
	  .example = "agor worktree list --repo 1aa81221cfd6801c17b9ffe254ab4e63" },
	{ "get", "worktrees.get", id_arg, NULL, "ID", print_worktree, .example = "agor worktree get feature" },
	{ "remove", "worktrees.remove", id_arg, remove_flags, "ID [--force]", print_removed,
	  .example = "agor worktree remove feature --force" },
	{ "owners", "worktrees.owners.list", owners_arg, NULL, "ID", print_owners,
	  .example = "agor worktree owners feature" },
	{ "add-owner", "worktrees.owners.add", owner_args, NULL, "ID USER", print_owners,
	  .example = "agor worktree add-owner feature bob" },
	{ "remove-owner", "worktrees.owners.remove", owner_args, NULL, "ID USER", print_owners,
	  .example = "agor worktree remove-owner feature bob" },
	{ "set-access", "worktrees.set_access", owners_arg, access_flags,
	  "ID [--others-can none|view|prompt|all] [--others-fs-access none|read|write]", print_worktree,
	  .example = "agor worktree set-access feature --others-can view --others-fs-access read" },
};

static int worktree_main(int argc, char **argv)
{
	return client_main("worktree", commands, ARRAY_SIZE(commands), argc, argv);
}

const struct applet applet_worktree = {
	.name = "worktree",
	.summary = "add, list and remove worktrees (through the daemon)",
	.usage = "Usage: agor worktree add REPO NAME [--branch BRANCH] [--source-branch BRANCH] [--create-branch]\n"
		 "                         [--others-can C] [--others-fs-access none|read|write]\n"
		 "       agor worktree list [--repo REPO] | get ID | remove ID [--force]\n"
		 "       agor worktree owners ID | add-owner ID USER | remove-owner ID USER   [--json] [--url URL]\n"
		 "       agor worktree set-access ID [--others-can none|view|prompt|all] [--others-fs-access L]\n"
		 "(others-fs-access needs worktree Unix groups: unix_user_mode insulated|strict, worktree_rbac)\n",
	.main = worktree_main,
	.flags = APPLET_SUBCOMMAND_HELP,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
