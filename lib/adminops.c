/* adminops.c — agor admin's operations and options in one table, parsed and built the same way (adminops.h).
 * Never accepts an option an operation does not list, nor a positional too many or too few. */
#include <stddef.h>
#include <string.h>

#include "adminops.h"
#include "common.h"
#include "banned.h"

const struct admin_op_spec adminops[ADMIN_NOPS] = {
	[ADMIN_ADD_WORKTREE_OWNER] = { "add-worktree-owner", 3, ADMIN_OPT_LINK_NAME,
				       "<worktree-id> <unix-user> <worktree-path> [--link-name NAME]" },
	[ADMIN_CGROUP_DELEGATE] = { "cgroup-delegate", 1, ADMIN_OPT_PID, "<unix-user> [--pid DAEMON_PID]" },
	[ADMIN_CREATE_WORKTREE_GROUP] = { "create-worktree-group", 2, ADMIN_OPT_OTHERS,
					  "<worktree-id> <worktree-path> [--others none|read|write]" },
	[ADMIN_DELETE_UNIX_USER] = { "delete-unix-user", 1, ADMIN_OPT_ARCHIVE, "<unix-user> [--archive DIR]" },
	[ADMIN_DELETE_WORKTREE_GROUP] = { "delete-worktree-group", 1, 0, "<worktree-id>" },
	[ADMIN_REMOVE_WORKTREE_OWNER] = { "remove-worktree-owner", 2, 0, "<worktree-id> <unix-user>" },
	[ADMIN_SET_WORKTREE_PERMISSIONS] = { "set-worktree-permissions", 3, 0,
					     "<worktree-id> <worktree-path> <none|read|write>" },
	[ADMIN_SETUP_UNIX_USER] = { "setup-unix-user", 1, 0, "<unix-user>" },
	[ADMIN_UPDATE_REPO_PERMISSIONS] = { "update-repo-permissions", 1, ADMIN_OPT_REPO_MODE,
					    "<repo-path> [--group|--world]" },
};

/* The valued options: their name, the operation flag that admits them (0: any operation), their slot. */
static const struct {
	const char *name;
	unsigned opt;
	size_t slot;
} valued[] = {
	{ "--root-config", 0, offsetof(struct admin_call, root_config) },
	{ "--others", ADMIN_OPT_OTHERS, offsetof(struct admin_call, others) },
	{ "--link-name", ADMIN_OPT_LINK_NAME, offsetof(struct admin_call, link_name) },
	{ "--archive", ADMIN_OPT_ARCHIVE, offsetof(struct admin_call, archive) },
	{ "--pid", ADMIN_OPT_PID, offsetof(struct admin_call, pid) },
};

static const char **slot_of(struct admin_call *c, size_t k)
{
	return (const char **)((char *)c + valued[k].slot);
}

static const char *const *slot_in(const struct admin_call *c, size_t k)
{
	return (const char *const *)((const char *)c + valued[k].slot);
}

int adminops_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(adminops); i++)
		if (!strcmp(adminops[i].name, name))
			return (int)i;
	return -1;
}

/* "--opt VALUE" or "--opt=VALUE": 1 taken (advancing *i past a separate value), 0 not this option, -1 no value. */
static int take_value(int argc, char **argv, int *i, const char *opt, const char **out)
{
	size_t n = strlen(opt);
	if (!strncmp(argv[*i], opt, n) && argv[*i][n] == '=') {
		*out = argv[*i] + n + 1;
		return 1;
	}
	if (strcmp(argv[*i], opt))
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*out = argv[++*i];
	return 1;
}

/* One option at argv[*i], its operation's admission checked later: 1 taken, 0 unknown, -1 e set. */
static int parse_option(int argc, char **argv, int *i, struct admin_call *c, unsigned *used, struct err *e)
{
	const char *arg = argv[*i];
	if (!strcmp(arg, "--dry-run") || !strcmp(arg, "-n"))
		return c->dry_run = 1;
	if (!strcmp(arg, "--json"))
		return c->json = 1;
	if (!strcmp(arg, "--group") || !strcmp(arg, "--world")) {
		if (c->repo_mode)
			return err_set(e, E_USAGE, "--group and --world exclude each other");
		c->repo_mode = arg[2] == 'g' ? ADMIN_REPO_GROUP : ADMIN_REPO_WORLD;
		*used |= ADMIN_OPT_REPO_MODE;
		return 1;
	}
	for (size_t k = 0; k < ARRAY_SIZE(valued); k++) {
		const char *value = NULL;
		int r = take_value(argc, argv, i, valued[k].name, &value);
		if (r < 0)
			return err_set(e, E_USAGE, "%s needs a value", valued[k].name);
		if (r == 0)
			continue;
		*slot_of(c, k) = value;
		*used |= valued[k].opt;
		return 1;
	}
	return 0;
}

static int check_shape(const struct admin_call *c, unsigned used, int npos, struct err *e)
{
	const struct admin_op_spec *s = &adminops[c->op];
	for (size_t k = 0; k < ARRAY_SIZE(valued); k++)
		if (valued[k].opt && (used & valued[k].opt & ~s->opts))
			return err_set(e, E_USAGE, "%s does not take %s", s->name, valued[k].name);
	if (used & ~s->opts)
		return err_set(e, E_USAGE, "%s does not take --group or --world", s->name);
	if (npos != s->npos)
		return err_set(e, E_USAGE, "usage: agor admin %s %s", s->name, s->args);
	return 0;
}

int adminops_parse(int argc, char **argv, struct admin_call *c, struct err *e)
{
	memset(c, 0, sizeof(*c));
	int have_op = 0, npos = 0, options_done = 0;
	unsigned used = 0;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!options_done && !strcmp(arg, "--")) {
			options_done = 1;
			continue;
		}
		if (!options_done && arg[0] == '-' && arg[1]) {
			int r = parse_option(argc, argv, &i, c, &used, e);
			if (r < 0)
				return -1;
			if (r == 0)
				return err_set(e, E_USAGE, "unknown option '%s'", arg);
			continue;
		}
		if (!have_op) {
			int op = adminops_find(arg);
			if (op < 0)
				return err_set(e, E_USAGE, "unknown subcommand '%s'", arg);
			c->op = (enum admin_op)op;
			have_op = 1;
			continue;
		}
		if (npos == ADMIN_MAX_POS)
			return err_set(e, E_USAGE, "usage: agor admin %s %s", adminops[c->op].name,
				       adminops[c->op].args);
		c->pos[npos++] = arg;
	}
	if (!have_op)
		return err_set(e, E_USAGE, "missing subcommand");
	return check_shape(c, used, npos, e);
}

void adminops_argv(const struct admin_call *c, struct strvec *argv)
{
	const struct admin_op_spec *s = &adminops[c->op];
	strvec_push(argv, s->name);
	for (int i = 0; i < s->npos; i++)
		strvec_push(argv, c->pos[i]);
	for (size_t k = 0; k < ARRAY_SIZE(valued); k++)
		if (*slot_in(c, k))
			strvec_pushv(argv, (const char *const[]){ valued[k].name, *slot_in(c, k), NULL });
	if (c->repo_mode)
		strvec_push(argv, c->repo_mode == ADMIN_REPO_WORLD ? "--world" : "--group");
	if (c->dry_run)
		strvec_push(argv, "--dry-run");
}

/* --- the operations the daemon asks for ------------------------------------------------------------- */

struct admin_call admin_create_worktree_group(const char *worktree_id, const char *path, const char *others)
{
	return (struct admin_call){ .op = ADMIN_CREATE_WORKTREE_GROUP, .pos = { worktree_id, path }, .others = others };
}

struct admin_call admin_delete_worktree_group(const char *worktree_id)
{
	return (struct admin_call){ .op = ADMIN_DELETE_WORKTREE_GROUP, .pos = { worktree_id } };
}

struct admin_call admin_add_worktree_owner(const char *worktree_id, const char *unix_user, const char *path)
{
	return (struct admin_call){ .op = ADMIN_ADD_WORKTREE_OWNER, .pos = { worktree_id, unix_user, path } };
}

struct admin_call admin_remove_worktree_owner(const char *worktree_id, const char *unix_user)
{
	return (struct admin_call){ .op = ADMIN_REMOVE_WORKTREE_OWNER, .pos = { worktree_id, unix_user } };
}

struct admin_call admin_update_repo_permissions(const char *repo_path, enum admin_repo_mode mode)
{
	return (struct admin_call){ .op = ADMIN_UPDATE_REPO_PERMISSIONS, .pos = { repo_path }, .repo_mode = mode };
}
