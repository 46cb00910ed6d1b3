/* test_adminops.c — unit tests of the typed admin boundary (adminops.h): what the daemon builds is exactly what
 * the admin applet parses back, and the parser refuses every shape the table does not allow. */
#include <string.h>

#include "adminops.h"
#include "unit.h"
#include "banned.h"

/* Parses the NULL-terminated words (argv[0] = "admin"); 0 or -1 with e set. */
static int parse(const char *const *words, struct admin_call *c, struct err *e)
{
	char *argv[16];
	int argc = 0;
	argv[argc++] = (char *)"admin";
	for (; *words; words++)
		argv[argc++] = (char *)*words;
	argv[argc] = NULL;
	return adminops_parse(argc, argv, c, e);
}

static int same_call(const struct admin_call *a, const struct admin_call *b)
{
	const char *const as[] = { a->others, a->link_name, a->archive, a->pid, a->root_config };
	const char *const bs[] = { b->others, b->link_name, b->archive, b->pid, b->root_config };
	if (a->op != b->op || a->repo_mode != b->repo_mode || a->dry_run != b->dry_run)
		return 0;
	for (int i = 0; i < adminops[a->op].npos; i++)
		if (strcmp(a->pos[i], b->pos[i]))
			return 0;
	for (size_t i = 0; i < ARRAY_SIZE(as); i++)
		if ((as[i] == NULL) != (bs[i] == NULL) || (as[i] && strcmp(as[i], bs[i])))
			return 0;
	return 1;
}

TEST(adminops_table_is_sorted_and_indexed_by_op)
{
	for (size_t i = 1; i < ADMIN_NOPS; i++)
		CHECK(strcmp(adminops[i - 1].name, adminops[i].name) < 0);
	for (size_t i = 0; i < ADMIN_NOPS; i++)
		CHECK(adminops_find(adminops[i].name) == (int)i);
	CHECK(adminops_find("rm-rf") == -1);
}

TEST(adminops_what_the_daemon_builds_parses_back)
{
	const struct admin_call calls[] = {
		admin_create_worktree_group("w1", "/srv/agor/worktrees/o/r/w", "read"),
		admin_create_worktree_group("w1", "/srv/agor/worktrees/o/r/w", NULL),
		admin_delete_worktree_group("w1"),
		admin_add_worktree_owner("w1", "alice", "/srv/agor/worktrees/o/r/w"),
		admin_remove_worktree_owner("w1", "alice"),
		admin_update_repo_permissions("/srv/agor/repos/o/r.git", ADMIN_REPO_GROUP),
		admin_update_repo_permissions("/srv/agor/repos/o/r.git", ADMIN_REPO_WORLD),
		{ .op = ADMIN_DELETE_UNIX_USER, .pos = { "bob" }, .archive = "/var/backups/agor", .dry_run = 1 },
		{ .op = ADMIN_CGROUP_DELEGATE, .pos = { "agor" }, .pid = "42" },
		{ .op = ADMIN_SET_WORKTREE_PERMISSIONS, .pos = { "w1", "/p", "none" } },
		{ .op = ADMIN_SETUP_UNIX_USER, .pos = { "carol" } },
		{ .op = ADMIN_ADD_WORKTREE_OWNER, .pos = { "w1", "alice", "/p" }, .link_name = "proj" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(calls); i++) {
		struct strvec argv = STRVEC_INIT;
		adminops_argv(&calls[i], &argv);
		CHECK_STR(argv.v[0], adminops[calls[i].op].name);
		strvec_push(&argv, "--json"); /* as the task runner adds it */
		struct admin_call back;
		struct err e = ERR_INIT;
		strvec_pushv(&argv, (const char *const[]){ NULL });
		CHECK(parse((const char *const *)argv.v, &back, &e) == 0);
		CHECK(same_call(&calls[i], &back));
		CHECK(back.json == 1);
		err_clear(&e);
		strvec_clear(&argv);
	}
}

TEST(adminops_refuses_every_shape_the_table_does_not_allow)
{
	static const struct {
		const char *words[8];
		const char *why;
	} bad[] = {
		{ { NULL }, "missing subcommand" },
		{ { "chown-everything", "/", NULL }, "unknown subcommand" },
		{ { "delete-worktree-group", NULL }, "usage: agor admin delete-worktree-group <worktree-id>" },
		{ { "delete-worktree-group", "w1", "w2", NULL }, "usage: agor admin delete-worktree-group" },
		{ { "setup-unix-user", "a", "b", "c", "d", NULL }, "usage: agor admin setup-unix-user" },
		{ { "delete-worktree-group", "w1", "--others", "write", NULL }, "does not take --others" },
		{ { "setup-unix-user", "bob", "--archive=/tmp", NULL }, "does not take --archive" },
		{ { "setup-unix-user", "bob", "--world", NULL }, "does not take --group or --world" },
		{ { "update-repo-permissions", "/r", "--group", "--world", NULL }, "exclude each other" },
		{ { "create-worktree-group", "w1", "/p", "--others", NULL }, "--others needs a value" },
		{ { "setup-unix-user", "bob", "--exec", "sh", NULL }, "unknown option '--exec'" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct admin_call c;
		struct err e = ERR_INIT;
		CHECK(parse(bad[i].words, &c, &e) == -1);
		CHECK_STR(e.code, E_USAGE);
		CHECK_CONTAINS(e.message, bad[i].why);
		err_clear(&e);
	}
}

TEST(adminops_double_dash_ends_options)
{
	struct admin_call c;
	struct err e = ERR_INIT;
	CHECK(parse((const char *const[]){ "setup-unix-user", "--", "--json", NULL }, &c, &e) == 0);
	CHECK_STR(c.pos[0], "--json"); /* a user name for admin to refuse, not an option */
	CHECK(c.json == 0);
	CHECK(parse((const char *const[]){ "delete-worktree-group", "--", "-w1", NULL }, &c, &e) == 0);
	CHECK_STR(c.pos[0], "-w1");
	CHECK(c.json == 0);
}
