/* executor.c — command dispatch for validated executor payloads (executor.h): confine, plan, run.
 * Never operates on a path that confine_path() has not resolved inside the data home, and never resolves it twice:
 * what a command changes is reached from a descriptor confine_hold() keeps (docs/security.md §11). */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "callback.h"
#include "confine.h"
#include "execrun.h"
#include "fault.h"
#include "rpcclient.h"
#include "executor.h"
#include "fsutil.h"
#include "gitlayout.h"
#include "gitops.h"
#include "impersonate.h"
#include "json.h"
#include "paths.h"
#include "prompt.h"
#include "terminal.h"
#include "unixperm.h"
#include "unixperm_tree.h"
#include "banned.h"

/* Only the stable codes of docs/payloads.md#results leave the executor: an internal code is mapped onto one. */
void executor_publish_error(struct err *e)
{
	if (!strcmp(e->code, E_SYSTEM)) {
		int errnum = (int)json_integer_value(json_object_get(e->details, "errno"));
		e->code = errnum == EACCES || errnum == EPERM || errnum == EROFS ? E_PERMISSION_DENIED : E_INTERNAL;
	} else if (!strcmp(e->code, E_USAGE)) {
		e->code = E_INVALID_PAYLOAD;
	} else if (strcmp(err_code_intern(e->code), e->code) || !strcmp(e->code, E_CONFIG) ||
		   !strcmp(e->code, E_EXECUTOR_RESULT_MISSING)) {
		e->code = E_INTERNAL;
	}
}

int executor_exit_status(const char *code)
{
	static const char *const invalid_input[] = { E_INVALID_JSON, E_INVALID_PAYLOAD, E_UNKNOWN_COMMAND,
						     E_PAYLOAD_TOO_LARGE };
	for (size_t i = 0; i < ARRAY_SIZE(invalid_input); i++)
		if (code && !strcmp(code, invalid_input[i]))
			return 2;
	return 1;
}

static int invalid_param(struct err *e, const char *path, const char *reason)
{
	return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s,s:s}", "path", path, "reason", reason), "%s: %s", path,
			reason);
}

/* Records a step of a dry run's plan (a real run keeps no plan: the step is dropped). */
static void plan_add(json_t *plan, json_t *step)
{
	if (plan)
		json_array_append_new(plan, step);
	else
		json_decref(step);
}

/* Where and how this payload's executor reaches its daemon (callback.h). */
#define CALLBACK_TARGET(p) ((struct callback_target){ (p)->daemon_url, (p)->daemon_ca, (p)->daemon_fingerprint })

/* --- the data home ------------------------------------------------------------------------ */

static int ensure_data_dirs(const struct config *cfg, struct err *e)
{
	struct agor_paths paths;
	paths_from_config(&paths, cfg);
	int rc = paths_ensure_data(&paths, e);
	paths_release(&paths);
	return rc;
}

/* For a dry run under a root that does not exist yet: the path, checked lexically (nothing can be a
 * symlink below a missing directory). */
static int confine_lexically(const char *root, const char *given, char **out, struct err *e)
{
	size_t n = strlen(root);
	const char *rel = given;
	if (given[0] == '/') {
		if (strncmp(given, root, n) || (given[n] != '/' && given[n]))
			return err_setd(e, E_PATH_OUTSIDE_DATA_HOME,
					json_pack("{s:s,s:s}", "path", given, "root", root), "%s is outside %s", given,
					root);
		rel = given[n] ? given + n + 1 : "";
	}
	if (!strcmp(rel, "..") || !strncmp(rel, "../", 3) || strstr(rel, "/../") ||
	    (strlen(rel) >= 3 && !strcmp(rel + strlen(rel) - 3, "/..")))
		return err_setd(e, E_PATH_OUTSIDE_DATA_HOME, json_pack("{s:s,s:s}", "path", given, "root", root),
				"%s leaves %s through '..'", given, root);
	*out = *rel ? xasprintf("%s/%s", root, rel) : xstrdup(root);
	return 0;
}

/* Names params.FIELD in e's details and message. */
static int blame_field(struct err *e, const char *field)
{
	if (e->details && json_is_object(e->details))
		json_object_set_new(e->details, "field", json_sprintf("params.%s", field));
	err_prefix(e, "params.%s", field);
	return -1;
}

/* Holds the resolved params.FIELD by descriptor (confine_hold): what is done there is done relative to it. */
static int hold_path(const char *field, const char *root, const char *path, int make_parents,
		     struct confined_path *held, struct err *e)
{
	return confine_hold(root, path, make_parents, held, e) < 0 ? blame_field(e, field) : 0;
}

/* Resolves params.FIELD (or `given`) beneath root and records it in the plan. */
static int resolve_path(const char *field, const char *given, const char *root, int must_exist,
			const struct executor_context *ctx, json_t *plan, char **out, struct err *e)
{
	int rc = confine_path(root, given, must_exist, out, e);
	if (rc < 0 && ctx->dry_run && !fs_exists(root)) { /* the run would make root: the plan says so */
		err_clear(e);
		plan_add(plan, json_pack("{s:s,s:s}", "step", "mkdir", "path", root));
		rc = must_exist
			     ? err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "path", given), "%s does not exist", given)
			     : confine_lexically(root, given, out, e);
	}
	if (rc < 0)
		return blame_field(e, field);
	plan_add(plan, json_pack("{s:s,s:s,s:s,s:s}", "step", "resolve", "field", field, "given", given, "path", *out));
	return 0;
}

/* --- git.clone ---------------------------------------------------------------------------- */

/* A call to the daemon with the task's token: params gets session_token; 0 and *result, or -1. */
static int ask_daemon(const struct payload *p, const char *method, const char *url, json_t **result, struct err *e)
{
	if (!p->daemon_url || !p->session_token)
		return err_set(e, E_AUTH_FAILED,
			       "%s requires credentials or host keys: they come just in time from the "
			       "daemon, and this payload has no daemonUrl/sessionToken",
			       url);
	struct rpc_client_options opts = { .call_timeout_ms = 30000 };
	struct rpc_client *c = callback_connect(&CALLBACK_TARGET(p), &opts, e);
	if (!c)
		return -1;
	json_t *params = json_pack("{s:s,s:s}", "session_token", p->session_token, "url", url);
	int rc = rpc_client_call(c, method, params, result, e);
	json_decref(params);
	rpc_client_close(c);
	return rc;
}

/* Credentials just in time: asked of the daemon (get_credential with the task's token) only when the
 * server demands them, held only for libgit2's copy (or, an ssh key, parsed in memory), then wiped. */
static int credentials_from_daemon(void *arg, const char *url, char **username, char **password, struct err *e)
{
	json_t *result = NULL;
	int ssh = !strncmp(url, "ssh://", 6);
	int rc = ask_daemon(arg, "get_credential", url, &result, e);
	const char *user = rc == 0 ? json_get_str(result, "username") : NULL;
	const char *pass = rc == 0 ? json_get_str(result, ssh ? "private_key" : "password") : NULL;
	if (rc == 0 && ((!ssh && !user) || !pass))
		rc = err_set(e, E_AUTH_FAILED, "the daemon gave no credentials for %s", url);
	if (rc == 0) {
		*username = user ? xstrdup(user) : NULL;
		*password = xstrdup(pass);
		explicit_bzero((char *)pass, strlen(pass));
	}
	json_decref(result);
	return rc;
}

/* The ssh host keys the daemon's execution.git.known_hosts lists for url (get_known_hosts). */
static int host_keys_from_daemon(void *arg, const char *url, json_t **keys, struct err *e)
{
	json_t *result = NULL;
	int rc = ask_daemon(arg, "get_known_hosts", url, &result, e);
	json_t *list = rc == 0 ? json_object_get(result, "keys") : NULL;
	if (rc == 0 && !json_is_array(list))
		rc = err_set(e, E_AUTH_FAILED, "the daemon gave no host key list for %s", url);
	if (rc == 0)
		*keys = json_incref(list);
	json_decref(result);
	return rc;
}

static int run_clone(const struct payload *p, const struct executor_context *ctx, json_t *plan, json_t **data,
		     struct err *e)
{
	const char *url = payload_str(p, "url");
	if (gitops_check_clone_url(url, e) < 0)
		return -1;
	_cleanup_free_ char *derived = NULL;
	const char *given = payload_str(p, "outputPath");
	if (!given && !(given = derived = gitops_default_repo_subpath(url, e))) {
		json_decref(e->details);
		e->details = json_pack("{s:s,s:s}", "path", "params.outputPath", "reason",
				       "required: cannot derive it from the URL");
		return -1;
	}
	_cleanup_free_ char *path = NULL;
	if (resolve_path("outputPath", given, ctx->cfg->paths.repos_dir, 0, ctx, plan, &path, e) < 0)
		return -1;
	struct gitops_clone o = {
		.url = url,
		.path = path,
		.branch = payload_str(p, "branch"),
		.bare = payload_bool(p, "bare", 1),
		.resume = payload_bool(p, "resume", 0),
		.progress = ctx->progress,
		.credentials = credentials_from_daemon,
		.host_keys = host_keys_from_daemon,
		.credentials_arg = (void *)p,
	};
	plan_add(plan, json_pack("{s:s,s:s,s:s,s:b,s:o}", "step", "git.clone", "url", url, "path", path, "bare", o.bare,
				 "branch", o.branch ? json_string(o.branch) : json_null()));
	if (ctx->dry_run)
		return 0;
	struct confined_path held;
	if (hold_path("outputPath", ctx->cfg->paths.repos_dir, path, 1, &held, e) < 0)
		return -1;
	o.path = held.path;
	o.parent_fd = held.parent_fd;
	o.name = held.name;
	o.stage_fd = held.root_fd;
	o.stage_dir = ctx->cfg->paths.repos_dir;
	int rc = gitops_clone(&o, data, e);
	confined_path_release(&held);
	return rc;
}

/* --- git.worktree.add / remove ------------------------------------------------------------ */

/* initUnixGroup: a worktree's managed group (agor_wt_ + SHA-256 of its id) is made by `agor admin`, which
 * only the daemon reaches (docs/admin.md; sudoers grant `agor admin *` to the daemon user alone, and the
 * daemon knows the id and who may ask). An executor is untrusted and may run as the session's user, so it
 * never holds a path to root: the field is refused, saying so, rather than half done. */
static int refuse_init_unix_group(const struct payload *p, struct err *e)
{
	if (!payload_bool(p, "initUnixGroup", 0))
		return 0;
	return err_setd(e, E_PERMISSION_DENIED, json_pack("{s:s}", "path", "params.initUnixGroup"),
			"params.initUnixGroup: worktree Unix groups are made by the daemon through `sudo -n agor admin "
			"create-worktree-group` (worktrees.add with execution.worktree_rbac on), never by an executor; "
			"omit this field (othersFsAccess alone is applied by the executor as the worktree's owner)");
}

/* othersFsAccess without a managed group: the new tree, which the execution user owns, gets the same
 * modes and ACLs admin gives (directories 2770|2775|2777, files group rw, others ---|r--|rw-), with the
 * owner's primary group as the group, so no privilege is needed. */
static int apply_others_access(const struct confined_path *held, const char *level, json_t *data, struct err *e)
{
	struct unixperm_tree_spec spec = { .gid = getegid() };
	if (unixperm_access_parse(level, &spec.others) < 0)
		return invalid_param(e, "params.othersFsAccess", "expected none|read|write");
	const char *path = held->path;
	int fd = openat(held->parent_fd, held->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, errno, "open %s", path);
	struct unixperm_tree_stats stats = { 0 };
	int rc = unixperm_apply_tree(fd, &spec, &stats, e);
	close(fd);
	if (rc == 0)
		json_object_set_new(data, "othersFsAccess",
				    json_pack("{s:s,s:i,s:i,s:i}", "level", level, "dirs", (json_int_t)stats.dirs,
					      "files", (json_int_t)stats.files, "changed", (json_int_t)stats.changed));
	return rc;
}

/* git.worktree.add with o->repo_path and o->path held by descriptor (what gitops_worktree_add needs), then
 * othersFsAccess applied to the new tree through its held parent. */
static int add_held(struct gitops_worktree_add *o, const struct config *cfg, const char *others, json_t **data,
		    struct err *e)
{
	struct confined_path repo_held, held;
	if (hold_path("repoPath", cfg->paths.repos_dir, o->repo_path, 0, &repo_held, e) < 0)
		return -1;
	int rc = -1, repo_fd = confine_openat(repo_held.parent_fd, repo_held.name, O_PATH | O_DIRECTORY);
	if (repo_fd < 0) {
		err_setd(e, E_PATH_OUTSIDE_DATA_HOME,
			 json_pack("{s:s,s:s}", "path", o->repo_path, "field", "params.repoPath"),
			 "params.repoPath: %s cannot be opened without following a link (%s)", o->repo_path,
			 strerror(errno));
	} else if (hold_path("worktreePath", cfg->paths.worktrees_dir, o->path, 1, &held, e) == 0) {
		o->repo_fd = repo_fd;
		o->path = held.path;
		o->parent_fd = held.parent_fd;
		o->leaf = held.name;
		o->stage_fd = held.root_fd;
		o->stage_dir = cfg->paths.worktrees_dir;
		rc = gitops_worktree_add(o, data, e);
		if (rc == 0 && others)
			rc = apply_others_access(&held, others, *data, e);
		confined_path_release(&held);
	}
	if (repo_fd >= 0)
		close(repo_fd);
	confined_path_release(&repo_held);
	return rc;
}

static int run_worktree_add(const struct payload *p, const struct executor_context *ctx, json_t *plan, json_t **data,
			    struct err *e)
{
	struct gitops_worktree_add o = {
		.name = payload_str(p, "worktreeName"),
		.branch = payload_str(p, "branch"),
		.source_branch = payload_str(p, "sourceBranch"),
		.create_branch = payload_bool(p, "createBranch", 0),
	};
	if (o.create_branch && !o.branch)
		return invalid_param(e, "params.branch", "required when createBranch is true");
	if (refuse_init_unix_group(p, e) < 0)
		return -1;
	_cleanup_free_ char *repo = NULL, *path = NULL;
	const struct config *cfg = ctx->cfg;
	if (resolve_path("repoPath", payload_str(p, "repoPath"), cfg->paths.repos_dir, 1, ctx, plan, &repo, e) < 0 ||
	    resolve_path("worktreePath", payload_str(p, "worktreePath"), cfg->paths.worktrees_dir, 0, ctx, plan, &path,
			 e) < 0)
		return -1;
	o.repo_path = repo;
	o.path = path;
	plan_add(plan, json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:b}", "step", "git.worktree.add", "repoPath", repo, "path",
				 path, "name", o.name, "branch", o.branch ? json_string(o.branch) : json_null(),
				 "sourceBranch", o.source_branch ? json_string(o.source_branch) : json_null(),
				 "createBranch", o.create_branch));
	const char *others = payload_str(p, "othersFsAccess");
	if (others)
		plan_add(plan, json_pack("{s:s,s:s,s:s,s:i}", "step", "others-fs-access", "path", path, "level", others,
					 "gid", (json_int_t)getegid()));
	if (ctx->dry_run)
		return 0;
	return git_layout_check_repository(cfg, repo, e) < 0 ? -1 : add_held(&o, cfg, others, data, e);
}

/* git.worktree.remove of the worktree at path (its layout checked): the worktree held by descriptor beneath
 * worktrees/, its repository beneath repos/; gitops_worktree_remove unlinks beneath both. */
static int remove_held(const struct config *cfg, const char *path, const struct git_layout *layout, int force,
		       json_t **data, struct err *e)
{
	struct confined_path held;
	if (hold_path("worktreePath", cfg->paths.worktrees_dir, path, 0, &held, e) < 0)
		return -1;
	int rc = -1, cfd = git_layout_open_common(cfg, layout);
	if (cfd < 0) {
		err_errno(e, errno, "opening %s (no symlink is followed there)", layout->common);
	} else {
		struct gitops_worktree_remove o = {
			.path = held.path,
			.parent_fd = held.parent_fd,
			.leaf = held.name,
			.common_fd = cfd,
			.common = layout->common,
			.admin_name = strrchr(layout->admin, '/') + 1,
			.force = force,
		};
		rc = gitops_worktree_remove(&o, data, e);
		close(cfd);
	}
	confined_path_release(&held);
	return rc;
}

/* The repository's admin entry worktrees/NAME, when it is there: removed beneath repos/, no symlink followed. */
static int remove_admin_entry(const struct config *cfg, const char *repo, const char *name, json_t *data, struct err *e)
{
	if (!unixperm_link_name_valid(name))
		return invalid_param(e, "params.worktreeName", "not a worktree name");
	_cleanup_free_ char *admin = xasprintf("%s/worktrees/%s", repo, name);
	struct confined_path held;
	if (confine_hold(cfg->paths.repos_dir, admin, 0, &held, e) < 0) {
		if (strcmp(e->code, E_NOT_FOUND))
			return blame_field(e, "repoPath");
		err_clear(e); /* no worktrees/ left: nothing to remove */
		return 0;
	}
	int rc = faccessat(held.parent_fd, held.name, F_OK, AT_SYMLINK_NOFOLLOW) == 0
			 ? fs_remove_at(held.parent_fd, held.name, held.path, e)
			 : 0;
	if (rc == 0)
		json_object_set_new(data, "adminEntry", json_string(held.path));
	confined_path_release(&held);
	return rc;
}

/* git.worktree.remove {finish: true}: a removal the daemon recorded and that was interrupted — the worktree's
 * directory may be half gone, its .git file first. Whatever is left of it goes (held beneath worktrees/, nothing
 * in it read), and so does the repository's admin entry the daemon names; neither being there is no error. */
static int finish_removal(const struct payload *p, const struct executor_context *ctx, const char *path, json_t **data,
			  struct err *e)
{
	struct confined_path held;
	if (hold_path("worktreePath", ctx->cfg->paths.worktrees_dir, path, 0, &held, e) < 0) {
		if (strcmp(e->code, E_NOT_FOUND))
			return -1;
		err_clear(e); /* its parent is gone too */
	} else {
		int there = faccessat(held.parent_fd, held.name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
		int rc = there ? fs_remove_at(held.parent_fd, held.name, held.path, e) : 0;
		confined_path_release(&held);
		if (rc < 0)
			return -1;
	}
	*data = json_pack("{s:s,s:b,s:b}", "worktreePath", path, "removed", 1, "finished", 1);
	const char *repo = payload_str(p, "repoPath"), *name = payload_str(p, "worktreeName");
	if (!repo || !name)
		return 0;
	_cleanup_free_ char *canonical = NULL;
	if (confine_path(ctx->cfg->paths.repos_dir, repo, 1, &canonical, e) < 0) {
		if (strcmp(e->code, E_NOT_FOUND))
			return blame_field(e, "repoPath");
		err_clear(e); /* the repository went first */
		return 0;
	}
	return remove_admin_entry(ctx->cfg, canonical, name, *data, e);
}

static int run_worktree_remove(const struct payload *p, const struct executor_context *ctx, json_t *plan, json_t **data,
			       struct err *e)
{
	if (payload_bool(p, "finish", 0)) {
		_cleanup_free_ char *path = NULL;
		if (resolve_path("worktreePath", payload_str(p, "worktreePath"), ctx->cfg->paths.worktrees_dir, 0, ctx,
				 plan, &path, e) < 0)
			return -1;
		if (!strcmp(path, ctx->cfg->paths.worktrees_dir))
			return invalid_param(e, "params.worktreePath",
					     "must name a worktree, not the worktrees directory");
		plan_add(plan, json_pack("{s:s,s:s,s:b}", "step", "git.worktree.remove", "path", path, "finish", 1));
		return ctx->dry_run ? 0 : finish_removal(p, ctx, path, data, e);
	}
	_cleanup_free_ char *path = NULL;
	if (resolve_path("worktreePath", payload_str(p, "worktreePath"), ctx->cfg->paths.worktrees_dir, 1, ctx, plan,
			 &path, e) < 0)
		return -1;
	if (!strcmp(path, ctx->cfg->paths.worktrees_dir))
		return invalid_param(e, "params.worktreePath", "must name a worktree, not the worktrees directory");
	int force = payload_bool(p, "force", 0);
	plan_add(plan, json_pack("{s:s,s:s,s:b}", "step", "git.worktree.remove", "path", path, "force", force));
	if (ctx->dry_run)
		return 0;
	struct git_layout layout; /* libgit2 follows the .git file: only one agor made is followed */
	int rc = git_layout_find(ctx->cfg, path, NULL, 0, &layout, e);
	if (rc == 0 && !layout.common)
		rc = err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "path", path),
			      "%s is not a linked worktree (no .git file): nothing removed", path);
	if (rc == 0)
		rc = remove_held(ctx->cfg, path, &layout, force, data, e);
	git_layout_release(&layout);
	return rc;
}

/* --- exec.run ------------------------------------------------------------------------------ */

/* The environment overrides the daemon granted and the payload's are the same (none and {} alike). */
static int same_env(json_t *granted, json_t *given)
{
	if (!json_object_size(granted) || !json_object_size(given))
		return !json_object_size(granted) && !json_object_size(given);
	return json_equal(granted, given);
}

/*
 * host "gateway" runs without the kernel sandbox, so the executor does not take the payload's word for it:
 * the payload must carry the task's session token, and the daemon, asked with that token
 * (exec.gateway_grant), must answer the very argv, cwd and env of this payload — a run its gateway policy (or a
 * person) approved. A payload from anyone else (a user running `agor executor --stdin`, an agent, a
 * replayed payload whose task ended and whose token is revoked) is refused before anything runs, whatever
 * execution.sandbox says. Only the daemon holds the JWT secret, so only it can mint such a token.
 */
static int gateway_granted(const struct payload *p, struct err *e)
{
	if (!p->session_token || !p->daemon_url)
		return invalid_param(e, "params.host",
				     "\"gateway\" runs without the sandbox only for the daemon: "
				     "sessionToken and daemonUrl are required");
	struct rpc_client_options opt = { .connect_timeout_ms = 10000, .call_timeout_ms = 30000 };
	struct rpc_client *c = callback_connect(&CALLBACK_TARGET(p), &opt, e);
	if (!c)
		return err_prefix(e, "exec.run host gateway"), -1;
	_cleanup_json_ json_t *grant = NULL;
	json_t *params = json_pack("{s:s}", "session_token", p->session_token);
	int rc = rpc_client_call(c, "exec.gateway_grant", params, &grant, e);
	json_decref(params);
	rpc_client_close(c);
	if (rc < 0)
		return err_prefix(e, "exec.run host gateway: the daemon did not grant this run"), -1;
	const char *cwd = json_get_str(grant, "cwd");
	if (!json_equal(json_object_get(grant, "argv"), payload_param(p, "argv")) || !cwd ||
	    strcmp(cwd, payload_str(p, "cwd")) || !same_env(json_object_get(grant, "env"), p->env))
		return err_set(e, E_PERMISSION_DENIED,
			       "exec.run host gateway: the payload's argv, cwd or env is not what "
			       "the daemon approved for this task");
	return 0;
}

/* params.repoPath: the repository the daemon recorded for the worktree (optional; confined beneath repos/). */
static int resolve_repo(const struct payload *p, const struct executor_context *ctx, json_t *plan, char **repo,
			struct err *e)
{
	const char *given = payload_str(p, "repoPath");
	*repo = NULL;
	return given ? resolve_path("repoPath", given, ctx->cfg->paths.repos_dir, 1, ctx, plan, repo, e) : 0;
}

static int run_exec(const struct payload *p, const struct executor_context *ctx, json_t *plan, json_t **data,
		    struct err *e)
{
	_cleanup_free_ char *cwd = NULL, *repo = NULL;
	const char *host = payload_str(p, "host");
	if (host && strcmp(host, "sandbox") && strcmp(host, "gateway"))
		return invalid_param(e, "params.host", "expected sandbox or gateway");
	int gateway = host && !strcmp(host, "gateway");
	if (gateway && gateway_granted(p, e) < 0)
		return -1;
	if (resolve_path("cwd", payload_str(p, "cwd"), ctx->cfg->paths.worktrees_dir, 1, ctx, plan, &cwd, e) < 0 ||
	    resolve_repo(p, ctx, plan, &repo, e) < 0)
		return -1;
	json_t *timeout = payload_param(p, "timeoutMs");
	struct execrun_request req = {
		.cfg = ctx->cfg,
		.cwd = cwd,
		.argv = payload_param(p, "argv"),
		.env = p->env,
		.timeout_ms = timeout ? json_integer_value(timeout) : 0,
		.home = payload_str(p, "home"),
		.repo_path = repo,
		.unsandboxed = gateway ? "host gateway: approved by the gateway's exec approvals (the daemon granted "
					 "this argv and cwd)"
				       : NULL,
	};
	if (!ctx->dry_run)
		return execrun(&req, data, e);
	json_t *step;
	if (execrun_plan(&req, &step, e) < 0)
		return -1;
	plan_add(plan, step);
	return 0;
}

/* --- prompt -------------------------------------------------------------------------------- */

static int run_prompt(const struct payload *p, const struct executor_context *ctx, json_t *plan, json_t **data,
		      struct err *e)
{
	_cleanup_free_ char *cwd = NULL, *repo = NULL;
	if (resolve_path("cwd", payload_str(p, "cwd"), ctx->cfg->paths.worktrees_dir, 1, ctx, plan, &cwd, e) < 0 ||
	    resolve_repo(p, ctx, plan, &repo, e) < 0)
		return -1;
	if (!p->session_token)
		return invalid_param(e, "sessionToken", "required for prompt (the daemon issues one per task)");
	if (!p->daemon_url)
		return invalid_param(e, "daemonUrl", "required for prompt (where to report the agent's messages)");
	struct prompt_request req = {
		.cfg = ctx->cfg,
		.daemon = CALLBACK_TARGET(p),
		.session_token = p->session_token,
		.session_id = payload_str(p, "sessionId"),
		.task_id = payload_str(p, "taskId"),
		.prompt = payload_str(p, "prompt"),
		.tool = payload_str(p, "tool"),
		.permission_mode = payload_str(p, "permissionMode"),
		.cwd = cwd,
		.env = p->env,
		.home = payload_str(p, "home"),
		.repo_path = repo,
	};
	if (!ctx->dry_run)
		return prompt_run(&req, data, e);
	json_t *receipt;
	if (prompt_plan(&req, &receipt, e) < 0)
		return -1;
	plan_add(plan, json_pack("{s:s,s:s,s:s,s:s?,s:o}", "step", "prompt", "tool", req.tool, "cwd", cwd, "daemonUrl",
				 req.daemon.url, "sandbox", receipt));
	return 0;
}

/* --- tmux.attach ------------------------------------------------------------------------- */

/* *cwd and *server (tmux's) are the caller's to free. */
static int terminal_request_for(const struct payload *p, const struct executor_context *ctx, json_t *plan, char **cwd,
				char **server, struct terminal_request *r, struct err *e)
{
	if (resolve_path("cwd", payload_str(p, "cwd"), ctx->cfg->paths.worktrees_dir, 1, ctx, plan, cwd, e) < 0)
		return -1;
	struct passwd *pw = getpwuid(geteuid());
	if (!pw)
		return err_set(e, E_IMPERSONATION_FAILED,
			       "uid %u has no passwd entry: a terminal needs the user's home and "
			       "shell",
			       (unsigned)geteuid());
	if (!ctx->dry_run && (!p->daemon_url || !p->session_token))
		return invalid_param(e, "sessionToken",
				     "a terminal is handed to the daemon: daemonUrl and sessionToken "
				     "are required (the daemon's terminal.open fills them)");
	if (!ctx->dry_run && callback_is_remote(p->daemon_url) && !p->daemon_ca && !p->daemon_fingerprint)
		return invalid_param(e, "daemonCa",
				     "a terminal relayed to a remote daemonUrl verifies it with daemonCa or "
				     "daemonFingerprint, and the payload has neither (the daemon's "
				     "execution.executor_daemon_ca_file or _fingerprint fills them)");
	*server = terminal_tmux_server_name(pw->pw_name, ctx->cfg->paths.data_home);
	*r = (struct terminal_request){
		.pw = pw,
		.server = *server,
		.shell = terminal_shell(pw, ctx->cfg->execution.terminal_shell),
		.session = payload_str(p, "sessionName"),
		.cwd = *cwd,
		.create = payload_bool(p, "create", 1),
		.env = p->env,
		.daemon_url = p->daemon_url,
		.daemon_ca = p->daemon_ca,
		.daemon_fingerprint = p->daemon_fingerprint,
		.session_token = p->session_token,
		.zellij_dir = ctx->cfg->paths.zellij_dir,
		.dry_run = ctx->dry_run,
		.plan = plan,
	};
	return 0;
}

/* The execution policy in force here (the daemon's, tightened by this user's config), as compact JSON. */
static char *policy_text(const struct config *cfg)
{
	_cleanup_json_ json_t *policy = config_execution_policy(cfg);
	return json_to_compact(policy);
}

/* A pane reports its egress refusals to a daemon on this host's Unix socket (a remote daemon: they are only shown
 * on the pane), with the payload's ticket: the pane outlives this task and its token. */
static void add_pane_report(struct strbuf *shell, const struct payload *p)
{
	const char *ticket = payload_str(p, "paneTicket");
	if (!ticket || !p->daemon_url || strncmp(p->daemon_url, "unix:", 5))
		return;
	strbuf_addstr(shell, " --report-to ");
	strbuf_add_shell_quoted(shell, p->daemon_url);
	strbuf_addstr(shell, " --ticket ");
	strbuf_add_shell_quoted(shell, ticket);
}

/* ctx->cfg has the payload's policy applied: whether panes are sandboxed is the daemon's to say, and each pane's
 * sandbox-shell gets the same policy (--policy), never deciding from this user's config alone. */
static int run_tmux_attach(const struct payload *p, const struct executor_context *ctx, json_t *plan, json_t **data,
			   struct err *e)
{
	_cleanup_free_ char *cwd = NULL, *server = NULL;
	struct terminal_request r;
	if (terminal_request_for(p, ctx, plan, &cwd, &server, &r, e) < 0)
		return -1;
	r.window = payload_str(p, "windowName");
	r.shell_command = r.shell; /* explicit: a tmux server started earlier keeps its own default-shell */
	_cleanup_free_ char *self = impersonate_self_path();
	_cleanup_strbuf_ struct strbuf shell = STRBUF_INIT;
	if (ctx->cfg->execution.sandbox.enabled) { /* each pane's shell starts inside the worktree's sandbox */
		if (!self)
			return err_set(e, E_INTERNAL,
				       "cannot find this executable (/proc/self/exe) for the sandboxed shell");
		strbuf_add_shell_quoted(&shell, self);
		strbuf_addstr(&shell, " executor sandbox-shell --data-home ");
		strbuf_add_shell_quoted(&shell, ctx->cfg->paths.data_home);
		strbuf_addstr(&shell, " --cwd ");
		strbuf_add_shell_quoted(&shell, cwd);
		_cleanup_free_ char *policy = policy_text(ctx->cfg);
		strbuf_addstr(&shell, " --policy ");
		strbuf_add_shell_quoted(&shell, policy);
		add_pane_report(&shell, p);
		r.shell_command = shell.buf;
	}
	return terminal_tmux_attach(&r, data, e);
}

/* tmux.close: the windows of removed worktrees (windowName), or all but keepWindows (the daemon's sweep at start).
 * Nothing is sandboxed here: it only talks to this user's own tmux server. */
static int run_tmux_close(const struct payload *p, const struct executor_context *ctx, json_t *plan, json_t **data,
			  struct err *e)
{
	struct passwd *pw = getpwuid(geteuid());
	if (!pw)
		return err_set(e, E_IMPERSONATION_FAILED, "uid %u has no passwd entry", (unsigned)geteuid());
	_cleanup_free_ char *server = terminal_tmux_server_name(pw->pw_name, ctx->cfg->paths.data_home);
	struct terminal_request r = {
		.pw = pw,
		.server = server,
		.shell = terminal_shell(pw, ctx->cfg->execution.terminal_shell),
		.session = payload_str(p, "sessionName"),
		.window = payload_str(p, "windowName"),
		.cwd = "/",
		.dry_run = ctx->dry_run,
		.plan = plan,
	};
	const json_t *keep = json_object_get(p->params, "keepWindows");
	if (!r.window && !keep)
		return invalid_param(e, "params.windowName", "give windowName (one window) or keepWindows (the sweep)");
	return terminal_tmux_close(&r, keep, data, e);
}

static int run_zellij_attach(const struct payload *p, const struct executor_context *ctx, json_t *plan, json_t **data,
			     struct err *e)
{
	_cleanup_free_ char *cwd = NULL, *server = NULL;
	struct terminal_request r;
	if (terminal_request_for(p, ctx, plan, &cwd, &server, &r, e) < 0)
		return -1;
	if (!r.create)
		return invalid_param(e, "params.create", "zellij attaches with --create; false is not supported");
	if (!ctx->dry_run && strncmp(p->daemon_url, "unix:", 5))
		return invalid_param(e, "daemonUrl",
				     "a zellij terminal hands its PTY over on the daemon's Unix socket: unix:PATH");
	r.window = payload_str(p, "tabName");
	return terminal_zellij_attach(&r, data, e);
}

/* --- dispatch ----------------------------------------------------------------------------- */

typedef int (*command_fn)(const struct payload *, const struct executor_context *, json_t *, json_t **, struct err *);

static command_fn command_handler(enum payload_command cmd)
{
	switch (cmd) {
	case CMD_GIT_CLONE:
		return run_clone;
	case CMD_GIT_WORKTREE_ADD:
		return run_worktree_add;
	case CMD_GIT_WORKTREE_REMOVE:
		return run_worktree_remove;
	case CMD_EXEC_RUN:
		return run_exec;
	case CMD_PROMPT:
		return run_prompt;
	case CMD_TMUX_ATTACH:
		return run_tmux_attach;
	case CMD_TMUX_CLOSE:
		return run_tmux_close;
	case CMD_ZELLIJ_ATTACH:
		return run_zellij_attach;
	}
	return NULL; /* payload_parse admits only the commands above */
}

static json_t *dry_run_result(const struct payload *p, const struct config *cfg, const char *me, json_t *plan)
{
	const char *user = p->as_user ? p->as_user : (me ? me : "?");
	int impersonate = p->as_user && (!me || strcmp(p->as_user, me));
	json_t *data = json_pack("{s:b,s:s,s:s,s:b,s:s,s:O}", "dryRun", 1, "command", p->command_name, "user", user,
				 "impersonate", impersonate, "dataHome", cfg->paths.data_home, "plan", plan);
	if (impersonate) {
		struct strvec argv = STRVEC_INIT;
		_cleanup_free_ char *self = impersonate_self_path();
		impersonate_argv(p->as_user, self ? self : "agor", &argv);
		json_t *a = json_array();
		for (size_t i = 0; i < argv.nr; i++)
			json_array_append_new(a, json_string(argv.v[i]));
		json_array_insert_new(plan, 0,
				      json_pack("{s:s,s:s,s:o}", "step", "impersonate", "user", p->as_user, "argv", a));
		strvec_clear(&argv);
	}
	return data;
}

/* The daemon's data home must be the one at paths.data_home here (paths.h): on a host that mounts another volume
 * there, or none, nothing runs — never another data home's repositories. */
static int check_data_home(const struct payload *p, const struct config *cfg, struct err *e)
{
	char here[33];
	struct err why = ERR_INIT;
	const char *home = cfg->paths.data_home, *want = p->data_home_id;
	if (!want || !strcmp(want, PATHS_DATA_HOME_ID_ASK))
		return 0; /* a local daemon (same mounts), or one that asks for the id */
	if (paths_data_home_id(home, 0, here, &why) < 0) {
		err_setd(e, E_PATH_OUTSIDE_DATA_HOME, json_pack("{s:s,s:s}", "dataHome", home, "daemon", want),
			 "paths.data_home: %s on this host is not the daemon's data home (%s): mount the daemon's data "
			 "home (id %s) at %s, the same path as on the daemon's host",
			 home, why.message, want, home);
		err_clear(&why);
		return -1;
	}
	if (!strcmp(here, want))
		return 0;
	return err_setd(e, E_PATH_OUTSIDE_DATA_HOME,
			json_pack("{s:s,s:s,s:s}", "dataHome", home, "here", here, "daemon", want),
			"paths.data_home: %s on this host is another data home (its %s says %s, the daemon's is %s): "
			"mount the daemon's data home at %s, the same path as on the daemon's host",
			home, PATHS_DATA_HOME_ID_FILE, here, want, home);
}

/* A remote daemon asks for the data home's id (dataHomeId "unknown"): the answer tells it (made when missing). */
static void tell_data_home_id(const struct config *cfg, json_t *data)
{
	char id[33];
	struct err e = ERR_INIT;
	if (json_is_object(data) && paths_data_home_id(cfg->paths.data_home, 1, id, &e) == 0)
		json_object_set_new(data, "dataHomeId", json_string(id));
	err_clear(&e); /* a data home this user cannot write: no id, no check */
}

int executor_execute(const struct payload *p, const struct executor_context *ctx, json_t **data, struct err *e)
{
	*data = NULL;
	fault_init("executor"); /* test builds only (fault.h) */
	fault_step("executor.start");
	if (!ctx->dry_run && (check_data_home(p, ctx->cfg, e) < 0 || ensure_data_dirs(ctx->cfg, e) < 0))
		return -1;
	_cleanup_json_ json_t *plan = ctx->dry_run ? json_array() : NULL;
	command_fn run = command_handler(p->command);
	if (!run)
		return err_set(e, E_UNKNOWN_COMMAND, "command %s has no handler", p->command_name);
	if (run(p, ctx, plan, data, e) < 0)
		return -1;
	fault_step("executor.done");
	if (ctx->dry_run)
		*data = dry_run_result(p, ctx->cfg, ctx->current_user, plan);
	else if (p->data_home_id && !strcmp(p->data_home_id, PATHS_DATA_HOME_ID_ASK))
		tell_data_home_id(ctx->cfg, *data);
	return 0;
}

int executor_needs_impersonation(const struct payload *p, char **current_user, struct err *e)
{
	*current_user = impersonate_current_user();
	if (!p->as_user || (*current_user && !strcmp(*current_user, p->as_user)))
		return 0;
	const char *marker = getenv(IMPERSONATED_ENV);
	if (marker && !strcmp(marker, "1"))
		return err_set(e, E_IMPERSONATION_FAILED,
			       "impersonated executor runs as %s, not %s (refusing to re-enter sudo)",
			       *current_user ? *current_user : "an unknown user", p->as_user);
	if (!getpwnam(p->as_user))
		return err_setd(e, E_IMPERSONATION_FAILED, json_pack("{s:s}", "user", p->as_user),
				"asUser: no such user '%s'", p->as_user);
	return 1;
}

char *executor_forward_payload(const struct payload *p, const struct config *cfg)
{
	json_t *copy = json_deep_copy(p->root);
	json_object_set_new(copy, "dataHome", json_string(cfg->paths.data_home));
	if (!p->policy) /* this executor runs as the daemon's user: its config is the daemon's */
		json_object_set_new(copy, "policy", config_execution_policy(cfg));
	char *s = json_to_compact(copy);
	json_decref(copy);
	return s;
}
