/* adminops.h — the typed boundary to `agor admin`, the only root code: its operations, their arguments and
 * options in one table that both sides use. The daemon builds a call with one function per operation and turns
 * it into argv (adminops_argv); the admin applet parses argv back into the same struct (adminops_parse), refusing
 * anything the table does not allow, then validates every value itself. No admin argv is spelled anywhere else.
 */
#ifndef AGOR_ADMINOPS_H
#define AGOR_ADMINOPS_H

/*
 * Contract
 * --------
 * argv is `OPERATION POSITIONAL… [OPTION VALUE…]`, the operation one of adminops[] by name, exactly npos
 * positionals, and only the options in its opts (besides the global --dry-run/-n, --json and --root-config).
 * A valued option is `--name VALUE` or `--name=VALUE`; `--` ends options; --group and --world exclude each other.
 * adminops_parse: 0 with *c filled (its strings point into argv), or -1 with E_USAGE and a message naming the
 *   operation, the option or the expected usage.
 * adminops_argv: the argv of c, without the program name and without --json (the task runner adds it), such that
 *   adminops_parse gives c back (test_adminops checks the round trip for every operation; adminops_fuzz for any
 *   call admin accepts). A positional starting with '-' does not come back (it would need "--", after which the
 *   runner's --json would be one more positional): the daemon's positionals are ids, absolute paths and users.
 * The admin_* constructors fill a call; they check nothing: admin checks every value (paths confined by
 *   admin.yaml, agor users only), the daemon passes only values from its own config and database.
 */

#include "err.h"
#include "strvec.h"

enum admin_op {
	ADMIN_ADD_WORKTREE_OWNER,
	ADMIN_CGROUP_DELEGATE,
	ADMIN_CREATE_WORKTREE_GROUP,
	ADMIN_DELETE_UNIX_USER,
	ADMIN_DELETE_WORKTREE_GROUP,
	ADMIN_REMOVE_WORKTREE_OWNER,
	ADMIN_SET_WORKTREE_PERMISSIONS,
	ADMIN_SETUP_UNIX_USER,
	ADMIN_UPDATE_REPO_PERMISSIONS,
	ADMIN_NOPS
};

/* The options an operation may take besides the global ones. */
enum {
	ADMIN_OPT_OTHERS = 1 << 0,
	ADMIN_OPT_LINK_NAME = 1 << 1,
	ADMIN_OPT_REPO_MODE = 1 << 2,
	ADMIN_OPT_ARCHIVE = 1 << 3,
	ADMIN_OPT_PID = 1 << 4,
};

enum admin_repo_mode { ADMIN_REPO_UNSET, ADMIN_REPO_GROUP, ADMIN_REPO_WORLD };

#define ADMIN_MAX_POS 3

struct admin_op_spec {
	const char *name;
	int npos;
	unsigned opts;
	const char *args; /* for usage messages */
};
/* Indexed by enum admin_op; sorted by name. */
extern const struct admin_op_spec adminops[ADMIN_NOPS];

struct admin_call {
	enum admin_op op;
	const char *pos[ADMIN_MAX_POS];
	const char *others, *link_name, *archive, *pid; /* NULL: not given */
	enum admin_repo_mode repo_mode;
	int dry_run, json;	 /* the applet's global options */
	const char *root_config; /* NULL: the default admin.yaml */
};

int adminops_parse(int argc, char **argv, struct admin_call *c, struct err *e);
void adminops_argv(const struct admin_call *c, struct strvec *argv);
/* The operation named name, or -1. */
int adminops_find(const char *name);

/* The operations the daemon asks for. */
struct admin_call admin_create_worktree_group(const char *worktree_id, const char *path, const char *others);
struct admin_call admin_delete_worktree_group(const char *worktree_id);
struct admin_call admin_add_worktree_owner(const char *worktree_id, const char *unix_user, const char *path);
struct admin_call admin_remove_worktree_owner(const char *worktree_id, const char *unix_user);
struct admin_call admin_update_repo_permissions(const char *repo_path, enum admin_repo_mode mode);

#endif
