/* daemon_methods.c — the client methods (daemon_methods.h, docs/rpc.md): users, repos, worktrees, sessions, tasks,
 * messages, events, config, audit. Never lets a caller act as another user; never opens the data home itself.
 * Every git change is a task run by an executor (daemon_tasks.c); rows are written when the executor succeeds. */
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "approvals_policy.h"
#include "audit.h"
#include "crypto.h"
#include "adminops.h"
#include "daemon_access.h"
#include "daemon_exec_params.h"
#include "daemon_exec_session.h"
#include "daemon_executor.h"
#include "daemon_gateway.h"
#include "daemon_limits.h"
#include "daemon_methods.h"
#include "daemon_nodes.h"
#include "daemon_peer.h"
#include "daemon_tasks.h"
#include "daemon_terminal.h"
#include "exec_env.h"
#include "gitops.h"
#include "json.h"
#include "log.h"
#include "net.h"
#include "payload.h"
#include "rpc.h"
#include "unixmode.h"
#include "version.h"
#include "banned.h"

/* --- params and identity ------------------------------------------------------------------ */

/* --- deferred replies --------------------------------------------------------------------- */

/* Answers a deferred call (result is stolen). */
static void send_reply(struct pending_reply *pr, const char *task_id, json_t *result, const struct err *error)
{
	if (!pr->peer || !pr->id) {
		if (result)
			json_decref(result);
		return;
	}
	char *text;
	if (error) {
		text = rpc_error_text(pr->id, error);
	} else {
		json_t *r = json_pack("{s:s}", "task_id", task_id);
		if (result)
			json_object_update(r, result);
		text = rpc_result_text(pr->id, r);
	}
	if (result)
		json_decref(result);
	daemon_peer_reply(pr->peer, text);
	free(text);
}

/* Submits spec (its on_done answers through pr). A waiting caller gets the answer when the task ends
 * (RPC_DEFERRED); others get {task_id, worktree_id?} now. rv < 0 from the caller's own checks is passed
 * through. pr is freed on failure. */
static int submit_with_reply(struct rpc_ctx *rc, int rv, struct task_spec *spec, struct pending_reply *pr,
			     json_t **result, struct err *e)
{
	_cleanup_free_ char *task_id = NULL;
	spec->arg = pr;
	if (rv == 0)
		rv = daemon_task_submit(D(rc), spec, &task_id, e);
	if (rv < 0) {
		daemon_reply_free(pr);
		return -1;
	}
	if (pr->peer)
		return RPC_DEFERRED;
	*result = json_pack("{s:s}", "task_id", task_id);
	if (!strcmp(pr->kind, "worktree"))
		json_object_set_new(*result, "worktree_id", json_string(pr->row_id));
	return 0;
}

/* --- users --------------------------------------------------------------------------------- */

int method_users_create(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *name, *unix_user = daemon_opt_str(params, "unix_username"), *role = daemon_opt_str(params, "role");
	if (daemon_need_admin(rc, e) < 0 || daemon_need_str(params, "name", &name, e) < 0)
		return -1;
	if (unix_user && !payload_valid_user_name(unix_user))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "unix_username"),
				"params.unix_username: not a valid Unix user name (^[a-z_][a-z0-9_-]{0,31}$)");
	if (role && strcmp(role, "admin") && strcmp(role, "member"))
		return err_set(e, E_INVALID_PAYLOAD, "params.role: expected admin or member");
	struct passwd *pw = unix_user ? getpwnam(unix_user) : NULL;
	char uid[16];
	snprintf(uid, sizeof(uid), "%u", pw ? (unsigned)pw->pw_uid : 0);
	_cleanup_free_ char *id = daemon_new_id();
	if (db_run(D(rc)->db, e,
		   "INSERT INTO users (id, name, unix_username, unix_uid, role, created_at) VALUES (?,?,?,?,?,?)",
		   "sssssi", id, name, unix_user, pw ? uid : NULL, role ? role : "member", daemon_now()) < 0) {
		if (strstr(e->message, "UNIQUE"))
			err_set(e, E_ALREADY_EXISTS, "a user with that name or Unix account already exists");
		return -1;
	}
	daemon_audit(D(rc), P(rc)->user_id, "users.create", id, "ok",
		     json_pack("{s:s,s:s?}", "name", name, "unix_username", unix_user));
	*result = daemon_one_row(D(rc), e, "user", "SELECT * FROM users WHERE id = ?", id);
	return *result ? 0 : -1;
}

int method_users_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)params;
	return daemon_list_rows(rc, "SELECT * FROM users ORDER BY created_at, name", result, e);
}

int method_users_get(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	return daemon_get_row(rc, params, "user", "SELECT * FROM users WHERE id = ?1 OR name = ?1", result, e);
}

/* The users row named by params[key] (id or name), or NULL with NOT_FOUND. */
static json_t *user_row(struct daemon *d, json_t *params, const char *key, struct err *e)
{
	const char *id;
	if (daemon_need_str(params, key, &id, e) < 0)
		return NULL;
	return daemon_one_row(d, e, "user", "SELECT * FROM users WHERE id = ?1 OR name = ?1", id);
}

/* The daemon's own user stays an admin and stays: identify() maps its uid (and root) to it whatever the row says. */
static int refuse_owner(struct daemon *d, const json_t *user, const char *change, struct err *e)
{
	if (strcmp(json_get_str(user, "id"), d->owner_id))
		return 0;
	return err_set(e, E_PERMISSION_DENIED,
		       "user %s is the daemon's own user (it runs the daemon): its %s cannot change",
		       json_get_str(user, "name"), change);
}

static int valid_email(const char *s)
{
	const char *at = strchr(s, '@');
	if (!at || at == s || !at[1] || strchr(at + 1, '@') || strlen(s) > 254)
		return 0;
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f || strchr("<>()[],;:\\\"", *c))
			return 0;
	return 1;
}

/* params.unix_username ("" unlinks), params.role, params.email ("" clears) into the users row; each checked. */
static int apply_user_changes(struct daemon *d, const json_t *user, json_t *params, json_t *changes, struct err *e)
{
	const char *id = json_get_str(user, "id");
	const char *unix_user = daemon_opt_str(params, "unix_username"), *role = daemon_opt_str(params, "role");
	const char *email = daemon_opt_str(params, "email");
	if (!unix_user && !role && !email)
		return err_set(e, E_INVALID_PAYLOAD,
			       "nothing to change: give params.unix_username, params.role or params.email");
	if (unix_user && *unix_user && !payload_valid_user_name(unix_user))
		return err_setd(
			e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "unix_username"),
			"params.unix_username: not a valid Unix user name (^[a-z_][a-z0-9_-]{0,31}$; \"\" unlinks)");
	if (role && strcmp(role, "admin") && strcmp(role, "member"))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "role"),
				"params.role: expected admin or member");
	if (email && *email && !valid_email(email))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "email"),
				"params.email: expected one address like name@example.org (\"\" clears it)");
	if ((unix_user || (role && strcmp(role, "admin"))) && refuse_owner(d, user, "Unix user and role", e) < 0)
		return -1;
	if (unix_user) {
		struct passwd *pw = *unix_user ? getpwnam(unix_user) : NULL;
		char uid[16];
		snprintf(uid, sizeof(uid), "%u", pw ? (unsigned)pw->pw_uid : 0);
		if (db_run(d->db, e, "UPDATE users SET unix_username = ?, unix_uid = ? WHERE id = ?", "sss",
			   *unix_user ? unix_user : NULL, pw ? uid : NULL, id) < 0)
			return strstr(e->message, "UNIQUE") ? err_set(e, E_ALREADY_EXISTS,
								      "another agor user is already "
								      "linked to Unix user %s: unlink it first (agor "
								      "user update ID --unix-user \"\")",
								      unix_user)
							    : -1;
		json_object_set_new(changes, "unix_username",
				    json_pack("{s:O,s:s?}", "from", json_object_get(user, "unix_username"), "to",
					      *unix_user ? unix_user : NULL));
	}
	if (role && db_run(d->db, e, "UPDATE users SET role = ? WHERE id = ?", "ss", role, id) >= 0)
		json_object_set_new(changes, "role",
				    json_pack("{s:O,s:s}", "from", json_object_get(user, "role"), "to", role));
	if (email && !err_is_set(e) &&
	    db_run(d->db, e, "UPDATE users SET email = ? WHERE id = ?", "ss", *email ? email : NULL, id) >= 0)
		json_object_set_new(
			changes, "email",
			json_pack("{s:O,s:s?}", "from", json_object_get(user, "email"), "to", *email ? email : NULL));
	return err_is_set(e) ? -1 : 0;
}

/* users.update {id, unix_username?, role?, email?} (admins): all or nothing, audited with what changed from
 * what; connections of that user are identified again at their next call. */
int method_users_update(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	if (daemon_need_admin(rc, e) < 0)
		return -1;
	_cleanup_json_ json_t *user = user_row(D(rc), params, "id", e);
	if (!user || db_exec(D(rc)->db, "SAVEPOINT users_update", e) < 0)
		return -1;
	_cleanup_json_ json_t *changes = json_object();
	if (apply_user_changes(D(rc), user, params, changes, e) < 0) {
		db_savepoint_undo(D(rc)->db, "users_update");
		return -1;
	}
	if (db_exec(D(rc)->db, "RELEASE users_update", e) < 0)
		return -1;
	D(rc)->users_generation++;
	daemon_audit(D(rc), P(rc)->user_id, "users.update", json_get_str(user, "id"), "ok", json_incref(changes));
	*result = daemon_one_row(D(rc), e, "user", "SELECT * FROM users WHERE id = ?", json_get_str(user, "id"));
	return *result ? 0 : -1;
}

/* What still names the user: {repos, worktrees, sessions, tasks, owned_worktrees} counts. */
static json_t *user_references(struct daemon *d, const char *id, struct err *e)
{
	return db_query_one(d->db, e,
			    "SELECT (SELECT count(*) FROM repos WHERE created_by = ?1) AS repos,"
			    " (SELECT count(*) FROM worktrees WHERE created_by = ?1) AS worktrees,"
			    " (SELECT count(*) FROM sessions WHERE created_by = ?1) AS sessions,"
			    " (SELECT count(*) FROM tasks WHERE created_by = ?1) AS tasks,"
			    " (SELECT count(*) FROM worktree_owners WHERE user_id = ?1) AS owned_worktrees",
			    "s", id);
}

static int references_any(const json_t *refs)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)refs, k, v) if (json_integer_value(v)) return 1;
	return 0;
}

/* Moves everything of `from` to `to` and deletes `from` with its client tokens and exec approvals, in one
 * savepoint. Worktree ownership is added to `to` where `from` had it. */
static int reassign_and_delete_user(struct daemon *d, const char *from, const char *to, struct err *e)
{
	static const struct {
		const char *sql, *types;
	} steps[] = {
		/* ?1 from, ?2 to */
		{ "UPDATE repos SET created_by = ?2 WHERE created_by = ?1", "ss" },
		{ "UPDATE worktrees SET created_by = ?2 WHERE created_by = ?1", "ss" },
		{ "UPDATE sessions SET created_by = ?2 WHERE created_by = ?1", "ss" },
		{ "UPDATE tasks SET created_by = ?2 WHERE created_by = ?1", "ss" },
		{ "INSERT OR IGNORE INTO worktree_owners (worktree_id, user_id) "
		  "SELECT worktree_id, ?2 FROM worktree_owners WHERE user_id = ?1",
		  "ss" },
		{ "UPDATE api_keys SET set_by = ?2 WHERE set_by = ?1", "ss" },
		{ "DELETE FROM worktree_owners WHERE user_id = ?1", "s" },
		{ "DELETE FROM client_tokens WHERE user_id = ?1", "s" },
		{ "DELETE FROM exec_approvals WHERE user_id = ?1", "s" },
		{ "DELETE FROM users WHERE id = ?1", "s" },
	};
	if (db_exec(d->db, "SAVEPOINT users_remove", e) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		if (!to && steps[i].types[1]) /* nothing to move: the refusal above made sure */
			continue;
		if (db_run(d->db, e, steps[i].sql, steps[i].types, from, to) < 0) {
			db_savepoint_undo(d->db, "users_remove");
			return -1;
		}
	}
	return db_exec(d->db, "RELEASE users_remove", e);
}

/* users.remove {id, reassign_to?} (admins). A user that still created or owns something is refused (IN_USE,
 * with the counts) unless reassign_to names who takes it all over; in strict mode with worktree_rbac owners
 * are Unix group members, so their worktrees move first with worktrees.owners.add/remove. The Unix user is
 * never touched; the user's client tokens die with it and its connections lose their identity. */
int method_users_remove(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	if (daemon_need_admin(rc, e) < 0)
		return -1;
	_cleanup_json_ json_t *user = user_row(D(rc), params, "id", e);
	_cleanup_json_ json_t *heir =
		user && daemon_opt_str(params, "reassign_to") ? user_row(D(rc), params, "reassign_to", e) : NULL;
	if (!user || err_is_set(e) || refuse_owner(D(rc), user, "existence", e) < 0)
		return -1;
	const char *id = json_get_str(user, "id"), *heir_id = heir ? json_get_str(heir, "id") : NULL;
	if (heir_id && !strcmp(heir_id, id))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "reassign_to"),
				"params.reassign_to: another user than the one removed");
	_cleanup_json_ json_t *refs = user_references(D(rc), id, e);
	if (!refs)
		return -1;
	if (references_any(refs) && !heir_id)
		return err_setd(
			e, E_IN_USE, json_pack("{s:O}", "references", refs),
			"user %s still created or owns repos %lld, worktrees %lld (owns %lld), sessions %lld, tasks "
			"%lld: "
			"nothing was removed; give them to someone with `agor user remove %s --reassign-to USER`",
			json_get_str(user, "name"), json_integer_value(json_object_get(refs, "repos")),
			json_integer_value(json_object_get(refs, "worktrees")),
			json_integer_value(json_object_get(refs, "owned_worktrees")),
			json_integer_value(json_object_get(refs, "sessions")),
			json_integer_value(json_object_get(refs, "tasks")), json_get_str(user, "name"));
	if (json_integer_value(json_object_get(refs, "owned_worktrees")) && daemon_worktree_rbac_on(D(rc)))
		return err_setd(
			e, E_IN_USE, json_pack("{s:O}", "references", refs),
			"user %s owns worktrees whose Unix groups have their Unix user as a member: move each first "
			"(agor worktree add-owner W USER; agor worktree remove-owner W %s), then remove the user",
			json_get_str(user, "name"), json_get_str(user, "name"));
	if (reassign_and_delete_user(D(rc), id, heir_id, e) < 0)
		return -1;
	D(rc)->users_generation++;
	daemon_audit(D(rc), P(rc)->user_id, "users.remove", id, "ok",
		     json_pack("{s:O,s:O?,s:s?,s:O}", "name", json_object_get(user, "name"), "unix_username",
			       json_object_get(user, "unix_username"), "reassigned_to", heir_id, "references", refs));
	*result = json_pack("{s:b,s:s?,s:O}", "removed", 1, "reassigned_to", heir_id, "references", refs);
	return 0;
}

/* --- execution user --------------------------------------------------------------------- */

/* --- repos ---------------------------------------------------------------------------------- */

static void repo_cloned(struct daemon *d, const char *task_id, const json_t *data, const struct err *error, void *arg)
{
	struct pending_reply *pr = arg;
	struct err e = ERR_INIT;
	json_t *row = NULL;
	if (!error) {
		const char *branch = json_get_str(data, "defaultBranch");
		if (db_run(d->db, &e,
			   "INSERT INTO repos (id, url, path, default_branch, created_by, created_at) VALUES "
			   "(?,?,?,?,?,?)",
			   "sssssi", pr->row_id, json_get_str(data, "url"), json_get_str(data, "path"), branch,
			   json_get_str(pr->extra, "created_by"), daemon_now()) >= 0)
			row = daemon_one_row(d, &e, "repo", "SELECT * FROM repos WHERE id = ?", pr->row_id);
		if (row)
			daemon_broadcast(d, "repo.created", json_incref(row));
		else
			err_prefix(&e, "%s was cloned into %s but not recorded (cloning it again takes it)",
				   json_get_str(data, "url"), json_get_str(data, "path"));
	}
	send_reply(pr, task_id, row ? json_pack("{s:O}", "repo", row) : NULL,
		   error	    ? error
		   : err_is_set(&e) ? &e
				    : NULL);
	if (row)
		json_decref(row);
	err_clear(&e);
	daemon_reply_free(pr);
}

/* repos.clone {progress: true}: each progress line of the clone's executor (git's "Receiving objects: …")
 * goes to the waiting caller alone, as {"method":"event","params":{"type":"task.progress","data":{task_id,
 * line}}}; `agor repo clone` on a terminal renders it as one updating line. */
static void clone_progress(struct daemon *d, const char *task_id, const char *line, void *arg)
{
	(void)d;
	struct pending_reply *pr = arg;
	if (!pr->peer || !json_is_true(json_object_get(pr->extra, "progress")))
		return;
	json_t *n = json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s}}}", "jsonrpc", "2.0", "method", "event", "params", "type",
			      "task.progress", "data", "task_id", task_id, "line", line);
	char *text = json_to_compact(n);
	daemon_peer_send(pr->peer, text);
	free(text);
	json_decref(n);
}

/* The clone goes to repos/<provider>/<org>/<repo>.git: a URL without org and repo is refused before any task. */
static int check_repo_subpath(const char *url, struct err *e)
{
	_cleanup_free_ char *sub = gitops_default_repo_subpath(url, e);
	if (sub)
		return 0;
	json_decref(e->details);
	e->details = json_pack("{s:s}", "path", "params.url");
	return err_prefix(e, "params.url"), -1;
}

/* A clone's chosen place (params.path, `agor repo clone --path`): relative to repos/, its parts neither empty nor
 * "." nor "..", printable; the executor still confines it beneath repos/ after symlinks. */
static int check_clone_path(const char *path, struct err *e)
{
	const char *why = !*path || path[0] == '/' ? "it must be relative to repos/" : NULL;
	for (const char *part = path; !why && part; part = strchr(part, '/') ? strchr(part, '/') + 1 : NULL) {
		size_t n = strcspn(part, "/");
		if (!n || (n == 1 && part[0] == '.') || (n == 2 && !strncmp(part, "..", 2)))
			why = "no part of it may be empty, . or ..";
	}
	for (const char *c = path; !why && *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			why = "it holds a control character";
	if (!why && strlen(path) > 1024)
		why = "it is longer than 1024 bytes";
	if (!why)
		return 0;
	return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "params.path"),
			"params.path: %s; give a path under repos/ such as host/org/repo.git (--path)", why);
}

/* A clone whose repository already has its row is refused here; without a row, a repository at the path is an
 * interrupted clone's (its daemon died before the row was committed) and the executor takes it (resume). */
static int check_not_cloned(struct daemon *d, const char *url, const char *path_param, struct err *e)
{
	_cleanup_free_ char *sub = path_param ? xstrdup(path_param) : gitops_default_repo_subpath(url, e);
	_cleanup_free_ char *path = sub ? xasprintf("%s/%s", d->cfg->paths.repos_dir, sub) : NULL;
	_cleanup_json_ json_t *row =
		path ? db_query_one(d->db, e, "SELECT id FROM repos WHERE path = ?", "s", path) : NULL;
	if (!row)
		return -1;
	if (json_is_null(row))
		return 0;
	return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s,s:s}", "path", path, "repo", json_get_str(row, "id")),
			"%s is cloned already, as repo %s", url, json_get_str(row, "id"));
}

int method_repos_clone(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *url;
	_cleanup_free_ char *user = NULL;
	if (daemon_need_user(rc, e) < 0 || daemon_need_str(params, "url", &url, e) < 0 ||
	    gitops_check_clone_url(url, e) < 0 || check_repo_subpath(url, e) < 0 ||
	    (daemon_opt_str(params, "path") && check_clone_path(daemon_opt_str(params, "path"), e) < 0) ||
	    check_not_cloned(D(rc), url, daemon_opt_str(params, "path"), e) < 0 ||
	    daemon_execution_user_for(D(rc), P(rc)->user_id, &user, e) < 0)
		return -1;
	json_t *exec_params = json_pack("{s:s,s:b,s:b}", "url", url, "bare", 1, "resume", 1);
	if (daemon_opt_str(params, "path"))
		json_object_set_new(exec_params, "outputPath", json_string(daemon_opt_str(params, "path")));
	if (daemon_opt_str(params, "branch"))
		json_object_set_new(exec_params, "branch", json_string(daemon_opt_str(params, "branch")));
	int wait = daemon_opt_bool(params, "wait", 1);
	struct pending_reply *pr = daemon_reply_new(rc, wait, "repo",
						    json_pack("{s:s,s:b}", "created_by", P(rc)->user_id, "progress",
							      daemon_opt_bool(params, "progress", 0)));
	pr->row_id = daemon_new_id();
	/* an https or ssh clone may need credentials (and ssh, host keys): its executor gets a token to ask for them
	 * just in time */
	const char *kind = gitops_url_kind(url);
	struct task_spec spec = { .command = "git.clone",
				  .params = exec_params,
				  .created_by = P(rc)->user_id,
				  .execution_user = user,
				  .with_token = !strcmp(kind, "https") || !strcmp(kind, "ssh"),
				  .on_done = repo_cloned,
				  .on_progress =
					  pr->peer && daemon_opt_bool(params, "progress", 0) ? clone_progress : NULL };
	int rv = submit_with_reply(rc, 0, &spec, pr, result, e);
	json_decref(exec_params);
	return rv;
}

int method_repos_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)params;
	return daemon_list_rows(rc, "SELECT * FROM repos ORDER BY created_at, rowid", result, e);
}

int method_repos_get(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	return daemon_get_row(rc, params, "repo", "SELECT * FROM repos WHERE id = ?", result, e);
}

int method_repos_remove(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *id;
	if (daemon_need_admin(rc, e) < 0 || daemon_need_str(params, "id", &id, e) < 0)
		return -1;
	json_t *n = db_query_one(D(rc)->db, e, "SELECT count(*) AS n FROM worktrees WHERE repo_id = ?", "s", id);
	if (!n)
		return -1;
	long long count = json_integer_value(json_object_get(n, "n"));
	json_decref(n);
	if (count)
		return err_set(e, E_ALREADY_EXISTS, "repo %s still has %lld worktree(s): remove them first", id, count);
	int changed = db_run(D(rc)->db, e, "DELETE FROM repos WHERE id = ?", "s", id);
	if (changed < 0)
		return -1;
	if (!changed)
		return err_set(e, E_NOT_FOUND, "no repo with id %s", id);
	daemon_audit(D(rc), P(rc)->user_id, "repos.remove", id, "ok", NULL);
	*result = json_pack("{s:b}", "removed", 1);
	return 0;
}

/* --- worktrees ---------------------------------------------------------------------------- */

/* The last `segments` path segments of a repository path ".../<provider>/<org>/<repo>.git", without ".git":
 * 3 gives a worktree's directory "<provider>/<org>/<repo>" (so org/repo of two hosts never collide), 2 the
 * "<org>/<repo>" of data homes made before the host was part of it. */
static char *repo_subdir_of(const char *repo_path, int segments)
{
	_cleanup_free_ char *copy = xstrdup(repo_path);
	size_t n = strlen(copy);
	if (n > 4 && !strcmp(copy + n - 4, ".git"))
		copy[n - 4] = '\0';
	const char *start = copy + strlen(copy);
	while (segments-- > 0 && start > copy)
		for (start--; start > copy && start[-1] != '/'; start--)
			;
	return xstrdup(start);
}

/* --- worktree Unix groups: agor admin, reached by the daemon through sudo ---------------------------
 * Who calls admin: the daemon, never the executor. The daemon reaches admin (docs/admin.md) through
 * `sudo -n`, and the sudoers rules of `agor setup sudoers` grant `<agor> admin *` to the daemon user
 * only; an executor runs as the session creator or executor_unix_user, is the parent of agent code and
 * is untrusted, so it must not hold a path to root, and it does not know the worktree's id (the group is
 * agor_wt_ + SHA-256(id)). The daemon decides who may ask (owners and admins), passes admin a fixed argv
 * of values it validated or computed itself (the id from its database, the path derived from
 * worktrees_dir + the repo's provider/org/repo + the worktree's name, exactly as for git.worktree.add, never the
 * executor's report, and a level from a three-word enum), and admin distrusts it in turn (paths confined
 * by the root-owned admin.yaml). The daemon still never opens the data home: admin does, as root. */

static int refuse_without_rbac(const struct daemon *d, struct err *e)
{
	return err_setd(
		e, E_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "path", "others_fs_access"),
		"params.others_fs_access: worktree Unix groups are off (execution.unix_user_mode: %s, "
		"worktree_rbac: %s): every execution runs as one Unix user, so there is no other user to grant "
		"or deny; set unix_user_mode insulated or strict and worktree_rbac: true (see agor setup --help)",
		config_user_mode_name(d->cfg->execution.unix_user_mode),
		d->cfg->execution.worktree_rbac ? "true" : "false");
}

static int check_word(json_t *params, const char *key, const char *const *words, const char *expected, struct err *e)
{
	const char *v = daemon_opt_str(params, key);
	if (!json_object_get(params, key))
		return 0;
	for (size_t i = 0; v && words[i]; i++)
		if (!strcmp(v, words[i]))
			return 0;
	return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", key), "params.%s: expected one of %s", key,
			expected);
}

static const char *const fs_access_words[] = { "none", "read", "write", NULL };

static int check_access_params(json_t *params, struct err *e)
{
	return check_word(params, "others_fs_access", fs_access_words, "none|read|write", e) < 0 ||
			       check_word(params, "others_can", others_can_words, "none|view|prompt|all", e) < 0
		       ? -1
		       : 0;
}

/* The absolute path the daemon asked the executor to make for worktree `name` of the repo at repo_path:
 * worktrees_dir/<provider>/<org>/<repo>/<name>, or the <org>/<repo>/<name> of an older data home when the
 * worktree's stored path (row_path, may be NULL) is that one. Either way a path the daemon derives itself. */
static char *worktree_abs_path(const struct daemon *d, const char *repo_path, const char *name, const char *row_path)
{
	_cleanup_free_ char *sub = repo_subdir_of(repo_path, 3), *legacy_sub = repo_subdir_of(repo_path, 2);
	_cleanup_free_ char *legacy = xasprintf("%s/%s/%s", d->cfg->paths.worktrees_dir, legacy_sub, name);
	if (row_path && !strcmp(row_path, legacy))
		return xstrdup(legacy);
	return xasprintf("%s/%s/%s", d->cfg->paths.worktrees_dir, sub, name);
}

/* Runs `agor admin` for call as a task of created_by (its audit row names root and the operation). */
static int submit_admin(struct daemon *d, const char *created_by, const char *worktree_id,
			const struct admin_call *call, task_done_fn done, void *arg, struct err *e)
{
	_cleanup_free_ char *command = xasprintf("admin.%s", adminops[call->op].name), *task_id = NULL;
	json_t *params = json_object();
	struct task_spec spec = { .command = command,
				  .params = params,
				  .created_by = created_by,
				  .worktree_id = worktree_id,
				  .admin = call,
				  .on_done = done,
				  .arg = arg };
	int rc = daemon_task_submit(d, &spec, &task_id, e);
	json_decref(params);
	return rc;
}

/* Owners in strict mode with worktree_rbac are members of the worktree's Unix group (and get the
 * ~/agor/worktrees link), as the creator is made one by worktrees.add: the same condition. */
static int owners_via_admin(const struct daemon *d)
{
	return daemon_worktree_rbac_on(d) && d->cfg->execution.unix_user_mode == CONFIG_MODE_STRICT;
}

/* Runs `agor admin update-repo-permissions REPO --group`: the repository's agor_rp_ group gets the
 * owners of all its worktrees (admin reads them from the worktree groups), so an owner's commits can
 * write its objects and refs. REPO is repos_dir + the subpath git.clone derives from the URL (both the
 * daemon's own: config and DB), never a path an executor reported. */
static int submit_repo_sync(struct daemon *d, const char *created_by, const char *worktree_id, const char *repo_url,
			    task_done_fn done, void *arg, struct err *e)
{
	if (!repo_url)
		return err_set(e, E_INTERNAL, "the repository's Unix group was not updated: no repository URL");
	_cleanup_free_ char *sub = gitops_default_repo_subpath(repo_url, e);
	if (!sub) {
		err_prefix(e, "the repository's Unix group was not updated");
		return -1;
	}
	_cleanup_free_ char *path = xasprintf("%s/%s", d->cfg->paths.repos_dir, sub);
	struct admin_call call = admin_update_repo_permissions(path, ADMIN_REPO_GROUP);
	return submit_admin(d, created_by, worktree_id, &call, done, arg, e);
}

static json_t *worktree_row(struct daemon *d, const char *id, struct err *e)
{
	return daemon_one_row(d, e, "worktree", "SELECT * FROM worktrees WHERE id = ?", id);
}

/* Who may hear of worktree id, by the rule of worktrees.get|list: 1 everyone (its others_can is not none),
 * else 0 with its owners' user ids in *owners (admins hear of everything). Read it before the row goes:
 * its owners go with it. A failed query leaves admins only (fail closed). */
static int worktree_audience(struct daemon *d, const char *id, struct strvec *owners)
{
	struct err e = ERR_INIT;
	_cleanup_json_ json_t *rows =
		db_query_json(d->db, &e,
			      "SELECT w.others_can, o.user_id FROM worktrees w LEFT JOIN worktree_owners o "
			      "ON o.worktree_id = w.id WHERE w.id = ?",
			      "s", id);
	if (!rows) {
		log_warn("worktree %s: its events go to admins only: %s", id, e.message);
		err_clear(&e);
		return 0;
	}
	for (size_t i = 0; i < json_array_size(rows); i++) {
		const json_t *row = json_array_get(rows, i);
		const char *can = json_get_str(row, "others_can"), *owner = json_get_str(row, "user_id");
		if (can && strcmp(can, "none"))
			return 1;
		if (owner)
			strvec_push(owners, owner);
	}
	return 0;
}

static void send_worktree_event(struct daemon *d, int everyone, const struct strvec *owners, const char *type,
				json_t *data)
{
	if (everyone)
		daemon_broadcast(d, type, data);
	else
		daemon_broadcast_to_users(d, (const char *const *)owners->v, type, data);
}

/* worktree.created|updated {row}: only to whoever may see the worktree (data stolen). */
static void worktree_event(struct daemon *d, const char *id, const char *type, json_t *data)
{
	_cleanup_strvec_ struct strvec owners = STRVEC_INIT;
	send_worktree_event(d, worktree_audience(d, id, &owners), &owners, type, data);
}

/* The last step of a worktree's group set-up (or of set_access): the reply with the worktree's row. */
static void reply_with_worktree(struct daemon *d, struct pending_reply *pr, const char *task_id,
				const struct err *error)
{
	struct err e = ERR_INIT;
	json_t *row = error ? NULL : worktree_row(d, pr->row_id, &e);
	if (row)
		worktree_event(d, pr->row_id, "worktree.updated", json_incref(row));
	send_reply(pr, task_id, row ? json_pack("{s:o}", "worktree", row) : NULL,
		   error	    ? error
		   : err_is_set(&e) ? &e
				    : NULL);
	err_clear(&e);
	daemon_reply_free(pr);
}

static void worktree_repo_synced(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
				 void *arg)
{
	(void)data;
	reply_with_worktree(d, arg, task_id, error);
}

/* After add-worktree-owner of the creator: the repository's group follows (strict mode), then the reply. */
static void worktree_owner_added(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
				 void *arg)
{
	(void)data;
	struct pending_reply *pr = arg;
	struct err e = ERR_INIT;
	if (!error && owners_via_admin(d)) {
		if (submit_repo_sync(d, json_get_str(pr->extra, "created_by"), pr->row_id,
				     json_get_str(pr->extra, "repo_url"), worktree_repo_synced, pr, &e) == 0)
			return;
		error = &e;
	}
	reply_with_worktree(d, pr, task_id, error);
	err_clear(&e);
}

/* After create-worktree-group of a new worktree: strict mode also makes its creator's Unix user a
 * member (and gives it the ~/agor/worktrees link); other modes are done. */
static void worktree_group_made(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
				void *arg)
{
	(void)data;
	struct pending_reply *pr = arg;
	struct err e = ERR_INIT;
	const char *unix_user = json_get_str(pr->extra, "owner_unix_user");
	if (!error && db_run(d->db, &e, "UPDATE worktrees SET others_fs_access = ? WHERE id = ?", "ss",
			     json_get_str(pr->extra, "others_fs_access"), pr->row_id) < 0)
		error = &e;
	if (!error && unix_user) {
		struct admin_call call =
			admin_add_worktree_owner(pr->row_id, unix_user, json_get_str(pr->extra, "group_path"));
		if (submit_admin(d, json_get_str(pr->extra, "created_by"), pr->row_id, &call, worktree_owner_added, pr,
				 &e) == 0)
			return;
		error = &e;
	}
	reply_with_worktree(d, pr, task_id, error);
	err_clear(&e);
}

/* A new worktree under worktree_rbac gets its group: create-worktree-group ID PATH --others LEVEL. */
static int start_worktree_group(struct daemon *d, struct pending_reply *pr, struct err *e)
{
	struct admin_call call = admin_create_worktree_group(pr->row_id, json_get_str(pr->extra, "group_path"),
							     json_get_str(pr->extra, "others_fs_access"));
	return submit_admin(d, json_get_str(pr->extra, "created_by"), pr->row_id, &call, worktree_group_made, pr, e);
}

static void worktree_added(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
			   void *arg)
{
	struct pending_reply *pr = arg;
	struct err e = ERR_INIT;
	json_t *row = NULL;
	const char *creator = json_get_str(pr->extra, "created_by");
	if (!error &&
	    db_run(d->db, &e,
		   "INSERT INTO worktrees (id, repo_id, name, path, branch, created_by, created_at, others_can) "
		   "VALUES (?,?,?,?,?,?,?,coalesce(?,'none'))",
		   "ssssssis", pr->row_id, json_get_str(pr->extra, "repo_id"), json_get_str(data, "worktreeName"),
		   json_get_str(data, "worktreePath"), json_get_str(data, "branch"), creator, daemon_now(),
		   json_get_str(pr->extra, "others_can")) >= 0 &&
	    db_run(d->db, &e, "INSERT INTO worktree_owners (worktree_id, user_id) VALUES (?,?)", "ss", pr->row_id,
		   creator) >= 0)
		row = daemon_one_row(d, &e, "worktree", "SELECT * FROM worktrees WHERE id = ?", pr->row_id);
	if (row) /* others_can is in the row already: a hidden worktree is announced to its creator and admins only */
		worktree_event(d, pr->row_id, "worktree.created", json_incref(row));
	else if (!error)
		err_prefix(&e, "worktree %s was made at %s but not recorded (adding it again takes it)",
			   json_get_str(data, "worktreeName"), json_get_str(data, "worktreePath"));
	if (row && json_get_str(pr->extra, "group_path") && !err_is_set(&e)) {
		json_decref(row);
		if (start_worktree_group(d, pr, &e) == 0)
			return;
		err_prefix(&e, "worktree %s was added but its Unix group was not", pr->row_id);
		row = NULL;
	}
	send_reply(pr, task_id, row ? json_pack("{s:O}", "worktree", row) : NULL,
		   error	    ? error
		   : err_is_set(&e) ? &e
				    : NULL);
	if (row)
		json_decref(row);
	err_clear(&e);
	daemon_reply_free(pr);
}

static json_t *worktree_add_params(json_t *params, const char *repo_path, const char *name, const char *path)
{
	json_t *p = json_pack("{s:s,s:s,s:s}", "repoPath", repo_path, "worktreeName", name, "worktreePath", path);
	static const char *const copy[][2] = { { "branch", "branch" }, { "source_branch", "sourceBranch" } };
	for (size_t i = 0; i < ARRAY_SIZE(copy); i++)
		if (daemon_opt_str(params, copy[i][0]))
			json_object_set_new(p, copy[i][1], json_string(daemon_opt_str(params, copy[i][0])));
	if (json_is_boolean(json_object_get(params, "create_branch")))
		json_object_set(p, "createBranch", json_object_get(params, "create_branch"));
	return p;
}

/* Under worktree_rbac, what the new worktree's group set-up needs (pr->extra: group_path,
 * others_fs_access, owner_unix_user in strict mode); without it, others_fs_access is refused. */
static int plan_worktree_group(struct rpc_ctx *rc, json_t *params, const char *repo_path, const char *name,
			       struct pending_reply *pr, struct err *e)
{
	struct daemon *d = D(rc);
	const char *level = daemon_opt_str(params, "others_fs_access");
	if (!daemon_worktree_rbac_on(d))
		return level ? refuse_without_rbac(d, e) : 0;
	_cleanup_free_ char *path = worktree_abs_path(d, repo_path, name, NULL);
	json_object_set_new(pr->extra, "group_path", json_string(path));
	json_object_set_new(pr->extra, "others_fs_access", json_string(level ? level : "none"));
	if (d->cfg->execution.unix_user_mode != CONFIG_MODE_STRICT)
		return 0;
	json_t *me = daemon_one_row(d, e, "user", "SELECT unix_username FROM users WHERE id = ?", P(rc)->user_id);
	if (!me)
		return -1;
	const char *unix_user = json_get_str(me, "unix_username");
	if (unix_user && *unix_user)
		json_object_set_new(pr->extra, "owner_unix_user", json_string(unix_user));
	json_decref(me);
	return 0;
}

/* A worktree name already recorded in the repository is refused here: the executor takes a worktree it finds
 * of that name and path as an interrupted add's (docs/recovery.md), which only a missing row makes true. */
static int check_no_worktree_named(struct daemon *d, const char *repo_id, const char *name, struct err *e)
{
	_cleanup_json_ json_t *row =
		db_query_one(d->db, e, "SELECT id FROM worktrees WHERE repo_id = ? AND name = ?", "ss", repo_id, name);
	if (!row)
		return -1;
	if (json_is_null(row))
		return 0;
	return err_setd(
		e, E_ALREADY_EXISTS, json_pack("{s:s,s:s}", "worktreeName", name, "worktree", json_get_str(row, "id")),
		"a worktree named '%s' already exists in this repository (worktree %s)", name, json_get_str(row, "id"));
}

int method_worktrees_add(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *repo_id, *name;
	_cleanup_free_ char *user = NULL;
	if (daemon_need_user(rc, e) < 0 || daemon_need_str(params, "repo_id", &repo_id, e) < 0 ||
	    daemon_need_str(params, "name", &name, e) < 0)
		return -1;
	json_t *repo = daemon_one_row(D(rc), e, "repo", "SELECT * FROM repos WHERE id = ?1 OR url = ?1", repo_id);
	if (!repo || check_no_worktree_named(D(rc), json_get_str(repo, "id"), name, e) < 0) {
		json_decref(repo);
		return -1;
	}
	const char *repo_path = json_get_str(repo, "path");
	_cleanup_free_ char *subdir = repo_subdir_of(repo_path, 3);
	_cleanup_free_ char *path = xasprintf("%s/%s", subdir, name);
	json_t *exec_params = worktree_add_params(params, repo_path, name, path);
	struct pending_reply *pr = daemon_reply_new(rc, daemon_opt_bool(params, "wait", 1), "worktree",
						    json_pack("{s:s,s:O,s:s?,s:O}", "created_by", P(rc)->user_id,
							      "repo_id", json_object_get(repo, "id"), "others_can",
							      daemon_opt_str(params, "others_can"), "repo_url",
							      json_object_get(repo, "url")));
	pr->row_id = daemon_new_id();
	int rv = check_access_params(params, e);
	if (rv == 0)
		rv = plan_worktree_group(rc, params, repo_path, name, pr, e);
	if (rv == 0)
		rv = daemon_execution_user_for(D(rc), P(rc)->user_id, &user, e);
	struct task_spec spec = { .command = "git.worktree.add",
				  .params = exec_params,
				  .created_by = P(rc)->user_id,
				  .execution_user = user,
				  .worktree_id = pr->row_id,
				  .on_done = worktree_added };
	rv = submit_with_reply(rc, rv, &spec, pr, result, e);
	json_decref(exec_params);
	json_decref(repo);
	return rv;
}

/* The worktree's row and everything that names it, in one step (a savepoint: all or nothing, inside or outside
 * the write batch): its sessions, their tasks, the tasks' messages and tokens, the sessions' exec approvals.
 * worktrees.remove refused beforehand when sessions were there and force was not given. */
static int delete_worktree_rows(struct daemon *d, const char *worktree_id, struct err *e)
{
	static const char *const steps[] = {
#define SESSIONS_OF_WT "(SELECT id FROM sessions WHERE worktree_id = ?1)"
#define TASKS_OF_WT    "(SELECT id FROM tasks WHERE session_id IN " SESSIONS_OF_WT ")"
		"DELETE FROM messages WHERE task_id IN " TASKS_OF_WT,
		"DELETE FROM tokens WHERE task_id IN " TASKS_OF_WT,
		"DELETE FROM exec_approvals WHERE session_id IN " SESSIONS_OF_WT,
		"DELETE FROM tasks WHERE session_id IN " SESSIONS_OF_WT,
		"DELETE FROM sessions WHERE worktree_id = ?1",
		"DELETE FROM worktrees WHERE id = ?1",
#undef TASKS_OF_WT
#undef SESSIONS_OF_WT
	};
	if (db_exec(d->db, "SAVEPOINT worktree_remove", e) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++)
		if (db_run(d->db, e, steps[i], "s", worktree_id) < 0) {
			db_savepoint_undo(d->db, "worktree_remove");
			return -1;
		}
	return db_exec(d->db, "RELEASE worktree_remove", e);
}

/* --- worktrees.remove: recorded first, then the executor, admin's groups and the rows, each step repeatable ----
 * The row's removing_since is set before anything is deleted, and the rows go last: a removal interrupted at any
 * step (a failure, a kill -9 of the executor or the daemon) leaves the mark, `agor worktree remove ID` finishes it
 * (git.worktree.remove {finish}: whatever is left of the directory and the admin entry), and the daemon's next
 * start does so by itself (daemon_worktrees_finish_removals). */

static void mark_removing(struct daemon *d, const char *id, int force, struct err *e)
{
	db_run(d->db, e, "UPDATE worktrees SET removing_since = ?, removing_force = ? WHERE id = ?", "iis",
	       daemon_now(), (long long)force, id);
}

static void removal_failed(struct daemon *d, struct pending_reply *pr, const char *task_id, const struct err *error)
{
	struct err told = ERR_INIT;
	err_setd(&told, error->code, error->details ? json_incref(error->details) : NULL,
		 "%s; worktree %s is marked as being removed: `agor worktree remove %s` finishes it", error->message,
		 pr->row_id, pr->row_id);
	log_warn("worktree %s: removal unfinished: %s", pr->row_id, error->message);
	daemon_audit(d, json_get_str(pr->extra, "by"), "worktrees.remove", pr->row_id, "failed",
		     json_pack("{s:s,s:s}", "step", json_get_str(pr->extra, "step"), "error", error->message));
	send_reply(pr, task_id, NULL, &told);
	err_clear(&told);
	daemon_reply_free(pr);
}

/* The last step: the rows (sessions, their tasks and messages with them), the events, the terminals. */
static void removal_rows(struct daemon *d, struct pending_reply *pr)
{
	const char *task_id = json_get_str(pr->extra, "task_id");
	struct err e = ERR_INIT;
	_cleanup_strvec_ struct strvec owners = STRVEC_INIT;
	int everyone = worktree_audience(d, pr->row_id, &owners); /* before its owners go with it */
	_cleanup_json_ json_t *openers = daemon_terminal_openers(d, pr->row_id);
	json_object_set_new(pr->extra, "step", json_string("rows"));
	if (delete_worktree_rows(d, pr->row_id, &e) < 0) {
		removal_failed(d, pr, task_id, &e);
		err_clear(&e);
		return;
	}
	send_worktree_event(d, everyone, &owners, "worktree.removed", json_pack("{s:s}", "id", pr->row_id));
	daemon_terminals_worktree_removed(d, pr->row_id, json_get_str(pr->extra, "name"), openers);
	daemon_audit(d, json_get_str(pr->extra, "by"), "worktrees.remove", pr->row_id, "ok",
		     json_pack("{s:b}", "finished", json_is_true(json_object_get(pr->extra, "finishing"))));
	send_reply(pr, task_id, json_pack("{s:b}", "removed", 1), NULL);
	daemon_reply_free(pr);
}

static void removal_repo_synced(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
				void *arg)
{
	(void)task_id, (void)data;
	struct pending_reply *pr = arg;
	if (error)
		removal_failed(d, pr, json_get_str(pr->extra, "task_id"), error);
	else
		removal_rows(d, pr);
}

/* Strict mode: the repository's group loses the owners of the worktree whose group just went. */
static void removal_group_deleted(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
				  void *arg)
{
	(void)task_id, (void)data;
	struct pending_reply *pr = arg;
	struct err e = ERR_INIT;
	const char *url = owners_via_admin(d) ? json_get_str(pr->extra, "repo_url") : NULL;
	json_object_set_new(pr->extra, "step", json_string("repository group"));
	if (error)
		removal_failed(d, pr, json_get_str(pr->extra, "task_id"), error);
	else if (!url)
		removal_rows(d, pr);
	else if (submit_repo_sync(d, NULL, NULL, url, removal_repo_synced, pr, &e) < 0)
		removal_failed(d, pr, json_get_str(pr->extra, "task_id"), &e);
	err_clear(&e);
}

/* After the executor: the worktree's Unix group (worktree_rbac), then the rest. */
static void worktree_removed(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
			     void *arg)
{
	(void)data;
	struct pending_reply *pr = arg;
	struct err e = ERR_INIT;
	json_object_set_new(pr->extra, "task_id", json_string(task_id));
	json_object_set_new(pr->extra, "step", json_string("worktree group"));
	if (error && !strcmp(error->code, E_WORKTREE_DIRTY)) { /* refused before anything was deleted */
		db_run(d->db, &e, "UPDATE worktrees SET removing_since = NULL WHERE id = ?", "s", pr->row_id);
		err_clear(&e);
		send_reply(pr, task_id, NULL, error);
		daemon_reply_free(pr);
		return;
	}
	struct admin_call call = admin_delete_worktree_group(pr->row_id);
	if (error)
		removal_failed(d, pr, task_id, error);
	else if (!daemon_worktree_rbac_on(d))
		removal_rows(d, pr);
	else if (submit_admin(d, NULL, pr->row_id, &call, removal_group_deleted, pr, &e) < 0)
		removal_failed(d, pr, task_id, &e);
	err_clear(&e);
}

/* --- who may do what with a worktree: owners, admins, and others_can for everyone else --------------
 * Owners and admins may do everything. Every other agor user gets the worktree's others_can:
 *   none    the worktree, its sessions, their messages and tasks do not exist for them: NOT_FOUND, the
 *           same answer as for an unknown id, so existence does not leak (lists leave them out);
 *   view    worktrees.get|list, worktrees.owners.list, sessions.get|list, messages.list and tasks.get of
 *           its sessions;
 *   prompt  also sessions.prompt on its sessions and tasks.cancel of their tasks — the executions still
 *           run as the session creator's execution user (docs/rpc.md), and the prompter is audited;
 *   all     also sessions.create in it (new sessions, run as their creator's execution user).
 * Whatever others_can says, only owners and admins may run exec.run or open a terminal in a worktree (a
 * command or shell outside any session, as the caller's own execution user: in strict mode an owner's Unix
 * user reaches the files through the worktree's group), remove it, change its access or its owners: sharing
 * those is what worktrees.owners.add is for. */

/* SQL condition "the caller may see worktree w" (?1 the caller's user id, ?2 1 for an admin). */
#define VISIBLE_WORKTREE_SQL                                                                                           \
	"(?2 OR w.others_can <> 'none' OR EXISTS (SELECT 1 FROM worktree_owners o WHERE o.worktree_id = w.id AND "     \
	"o.user_id = ?1))"

/* Before anything is deleted: a worktree with a queued or running task is refused (cancel it first); one with
 * sessions is refused unless force, naming them. IN_USE, with the ids in details. */
/* No task is queued or running in the worktree (its directory must not go from under one). */
static int check_worktree_idle(struct daemon *d, const char *worktree_id, struct err *e)
{
	_cleanup_json_ json_t *busy =
		db_query_json(d->db, e,
			      "SELECT t.id FROM tasks t JOIN sessions s ON s.id = t.session_id WHERE s.worktree_id = ? "
			      "AND t.status IN ('queued','running') ORDER BY t.created_at",
			      "s", worktree_id);
	if (!busy)
		return -1;
	const char *live = daemon_worktree_busy(d, worktree_id); /* exec.run outside a session has no session row */
	if (live)
		json_array_append_new(busy, json_pack("{s:s}", "id", live));
	if (json_array_size(busy))
		return err_setd(
			e, E_IN_USE, json_pack("{s:O}", "tasks", busy),
			"worktree %s has %zu task(s) queued or running, first %s: cancel them (agor task cancel ID) "
			"or wait, then remove it",
			worktree_id, json_array_size(busy), json_get_str(json_array_get(busy, 0), "id"));
	return 0;
}

/* Idle, and without sessions unless forced (they go with it). */
static int check_worktree_free(struct daemon *d, const char *worktree_id, int force, struct err *e)
{
	if (check_worktree_idle(d, worktree_id, e) < 0)
		return -1;
	_cleanup_json_ json_t *sessions = db_query_json(
		d->db, e, "SELECT id FROM sessions WHERE worktree_id = ? ORDER BY created_at", "s", worktree_id);
	if (!sessions)
		return -1;
	if (!json_array_size(sessions) || force)
		return 0;
	return err_setd(e, E_IN_USE, json_pack("{s:O}", "sessions", sessions),
			"worktree %s has %zu session(s), first %s: nothing was removed; remove the worktree with its "
			"sessions, their tasks and messages by `agor worktree remove %s --force` (force also discards "
			"uncommitted changes)",
			worktree_id, json_array_size(sessions), json_get_str(json_array_get(sessions, 0), "id"),
			worktree_id);
}

/* The payload of git.worktree.remove: a plain one, or {finish} for a removal recorded earlier. */
static json_t *removal_params(const json_t *wt, int finishing, int force)
{
	if (!finishing)
		return json_pack("{s:s,s:b}", "worktreePath", json_get_str(wt, "path"), "force", force);
	return json_pack("{s:s,s:b,s:s?,s:s}", "worktreePath", json_get_str(wt, "path"), "finish", 1, "repoPath",
			 json_get_str(wt, "repo_path"), "worktreeName", json_get_str(wt, "name"));
}

#define REMOVAL_ROW                                                                                                    \
	"SELECT w.*, r.url AS repo_url, r.path AS repo_path FROM worktrees w LEFT JOIN repos r ON r.id = w.repo_id "   \
	"WHERE w.id = ?"

/* Submits the removal of worktree row wt by user `by` (NULL: the daemon finishing one on its own); pr answers. */
static int submit_removal(struct daemon *d, struct rpc_ctx *rc, const json_t *wt, const char *by, int force,
			  struct pending_reply *pr, json_t **result, struct err *e)
{
	const char *id = json_get_str(wt, "id");
	int finishing = json_integer_value(json_object_get(wt, "removing_since")) > 0;
	_cleanup_free_ char *user = NULL;
	json_object_set_new(pr->extra, "finishing", json_boolean(finishing));
	pr->row_id = xstrdup(id);
	int rv = daemon_execution_user_for(d, json_get_str(wt, "created_by"), &user, e);
	if (rv == 0 && !finishing)
		mark_removing(d, id, force, e); /* before anything is deleted */
	if (rv == 0 && err_is_set(e))
		rv = -1;
	json_t *params = removal_params(wt, finishing, force);
	struct task_spec spec = { .command = "git.worktree.remove",
				  .params = params,
				  .created_by = by,
				  .execution_user = user,
				  .worktree_id = id,
				  .on_done = worktree_removed };
	if (rc) {
		rv = submit_with_reply(rc, rv, &spec, pr, result, e);
	} else {
		spec.arg = pr;
		_cleanup_free_ char *task_id = NULL;
		if (rv == 0)
			rv = daemon_task_submit(d, &spec, &task_id, e);
		if (rv < 0)
			daemon_reply_free(pr);
	}
	json_decref(params);
	return rv;
}

int method_worktrees_remove(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *id;
	if (daemon_need_user(rc, e) < 0 || daemon_need_str(params, "id", &id, e) < 0)
		return -1;
	_cleanup_json_ json_t *wt = daemon_one_row(D(rc), e, "worktree", REMOVAL_ROW, id);
	if (!wt)
		return -1;
	int finishing = json_integer_value(json_object_get(wt, "removing_since")) > 0;
	int force = daemon_opt_bool(params, "force", 0) ||
		    (finishing && json_integer_value(json_object_get(wt, "removing_force")));
	if (daemon_need_worktree_access(rc, id, WT_OWNER, "worktree", id, "remove it", e) < 0 ||
	    (finishing ? check_worktree_idle(D(rc), id, e) : check_worktree_free(D(rc), id, force, e)) < 0)
		return -1;
	struct pending_reply *pr =
		daemon_reply_new(rc, daemon_opt_bool(params, "wait", 1), "worktree.remove",
				 json_pack("{s:s?,s:s,s:s?,s:s}", "repo_url", json_get_str(wt, "repo_url"), "name",
					   json_get_str(wt, "name"), "created_by", json_get_str(wt, "created_by"), "by",
					   P(rc)->user_id));
	return submit_removal(D(rc), rc, wt, P(rc)->user_id, force, pr, result, e);
}

void daemon_worktrees_finish_removals(struct daemon *d)
{
	struct err e = ERR_INIT;
	_cleanup_json_ json_t *ids =
		db_query_json(d->db, &e, "SELECT id FROM worktrees WHERE removing_since IS NOT NULL", "");
	size_t i;
	json_t *row;
	json_array_foreach(ids, i, row)
	{
		const char *id = json_get_str(row, "id");
		_cleanup_json_ json_t *wt = daemon_one_row(d, &e, "worktree", REMOVAL_ROW, id);
		log_warn("worktree %s: its removal was interrupted; finishing it", id);
		daemon_audit(d, "daemon", "worktrees.remove.resume", id, "ok", NULL);
		struct pending_reply *pr =
			daemon_reply_new(NULL, 0, "worktree.remove",
					 json_pack("{s:s?,s:s?,s:s}", "repo_url", json_get_str(wt, "repo_url"), "name",
						   json_get_str(wt, "name"), "by", "daemon"));
		if (!wt || submit_removal(d, NULL, wt, NULL, 1, pr, NULL, &e) < 0)
			log_warn("worktree %s: cannot finish its removal now: %s", id, e.message);
		err_clear(&e);
	}
	err_clear(&e);
}

/* --- worktree owners ---------------------------------------------------------------------------- */

static json_t *owner_rows(struct daemon *d, const char *worktree_id, struct err *e)
{
	return db_query_json(
		d->db, e,
		"SELECT u.id, u.name, u.unix_username FROM worktree_owners o JOIN users u ON u.id = o.user_id "
		"WHERE o.worktree_id = ? ORDER BY u.name",
		"s", worktree_id);
}

int method_worktrees_owners_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *id;
	if (daemon_need_user(rc, e) < 0 || daemon_need_str(params, "worktree_id", &id, e) < 0)
		return -1;
	_cleanup_json_ json_t *wt =
		daemon_one_row(D(rc), e, "worktree", "SELECT id FROM worktrees WHERE id = ?1 OR name = ?1", id);
	if (!wt || daemon_need_worktree_access(rc, json_get_str(wt, "id"), WT_VIEW, "worktree", id, "", e) < 0)
		return -1;
	*result = owner_rows(D(rc), json_get_str(wt, "id"), e);
	return *result ? 0 : -1;
}

/* The worktree (id, name, path, repo_path) and user (id, unix_username) rows named by params, after checking
 * that the caller owns the worktree (or is an admin). */
static int owner_change_rows(struct rpc_ctx *rc, json_t *params, json_t **wt, json_t **user, struct err *e)
{
	const char *id, *who;
	*wt = *user = NULL;
	if (daemon_need_user(rc, e) < 0 || daemon_need_str(params, "worktree_id", &id, e) < 0 ||
	    daemon_need_str(params, "user_id", &who, e) < 0)
		return -1;
	if (!(*wt = daemon_one_row(D(rc), e, "worktree",
				   "SELECT w.id, w.name, w.path, r.path AS repo_path, r.url AS repo_url FROM worktrees "
				   "w JOIN repos r "
				   "ON r.id = w.repo_id WHERE w.id = ?1 OR w.name = ?1",
				   id)) ||
	    daemon_need_worktree_access(rc, json_get_str(*wt, "id"), WT_OWNER, "worktree", id, "change its owners", e) <
		    0)
		return -1;
	*user = daemon_one_row(D(rc), e, "user", "SELECT id, unix_username FROM users WHERE id = ?1 OR name = ?1", who);
	return *user ? 0 : -1;
}

/* Owners in the DB: "add" inserts (idempotent), "remove" deletes; the number of rows changed. */
static int write_owner_change(struct daemon *d, const char *action, const char *wt_id, const char *user_id,
			      struct err *e)
{
	if (!strcmp(action, "add"))
		return db_run(d->db, e, "INSERT OR IGNORE INTO worktree_owners (worktree_id, user_id) VALUES (?,?)",
			      "ss", wt_id, user_id);
	return db_run(d->db, e, "DELETE FROM worktree_owners WHERE worktree_id = ? AND user_id = ?", "ss", wt_id,
		      user_id);
}

static void audit_owner_change(struct daemon *d, const char *by, const char *action, const char *wt_id,
			       const char *user_id, const char *unix_user, const struct err *error)
{
	_cleanup_free_ char *what = xasprintf("worktrees.owners.%s", action);
	daemon_audit(d, by, what, wt_id, error ? "failed" : "ok",
		     json_pack("{s:s,s:s?,s:s?}", "owner", user_id, "unix_user", unix_user, "error",
			       error ? error->message : NULL));
}

/* After admin's add-/remove-worktree-owner, and then after its update-repo-permissions (pr->extra's
 * repo_url, taken when that step starts): the DB follows only when both admin calls succeeded, so a
 * failed admin call leaves the owner list as it was. The waiting caller gets {task_id, owners}. */
static void owner_changed_by_admin(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
				   void *arg)
{
	(void)data;
	struct pending_reply *pr = arg;
	struct err e = ERR_INIT;
	const char *action = json_get_str(pr->extra, "action"), *owner = json_get_str(pr->extra, "owner");
	_cleanup_json_ json_t *url = json_incref(json_object_get(pr->extra, "repo_url"));
	if (!error && url) {
		json_object_del(pr->extra, "repo_url"); /* the next call of this is the last step */
		if (submit_repo_sync(d, json_get_str(pr->extra, "by"), pr->row_id, json_string_value(url),
				     owner_changed_by_admin, pr, &e) == 0)
			return;
		error = &e;
	}
	if (!error && write_owner_change(d, action, pr->row_id, owner, &e) < 0)
		error = &e;
	audit_owner_change(d, json_get_str(pr->extra, "by"), action, pr->row_id, owner,
			   json_get_str(pr->extra, "unix_user"), error);
	json_t *owners = error ? NULL : owner_rows(d, pr->row_id, &e);
	send_reply(pr, task_id, owners ? json_pack("{s:o}", "owners", owners) : NULL,
		   error	    ? error
		   : err_is_set(&e) ? &e
				    : NULL);
	err_clear(&e);
	daemon_reply_free(pr);
}

/* Runs `agor admin add-worktree-owner ID UNIX_USER PATH` or `remove-worktree-owner ID UNIX_USER` —
 * the id from the DB, the Unix user from the users table (checked at users.create, checked again here),
 * the path computed as for worktrees.add — and changes the owner list once it succeeded. */
static int change_owner_via_admin(struct rpc_ctx *rc, json_t *params, const char *action, json_t *wt, json_t *user,
				  json_t **result, struct err *e)
{
	const char *wt_id = json_get_str(wt, "id"), *unix_user = json_get_str(user, "unix_username");
	if (!unix_user || !payload_valid_user_name(unix_user))
		return err_setd(
			e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "user_id"),
			"user %s has no valid Unix user, and in strict mode an owner of worktree %s is a member of its "
			"Unix group: an admin runs `agor user create NAME --unix-user LOGIN`",
			json_get_str(user, "id"), wt_id);
	_cleanup_free_ char *path = worktree_abs_path(D(rc), json_get_str(wt, "repo_path"), json_get_str(wt, "name"),
						      json_get_str(wt, "path"));
	struct admin_call call = strcmp(action, "add") ? admin_remove_worktree_owner(wt_id, unix_user)
						       : admin_add_worktree_owner(wt_id, unix_user, path);
	struct pending_reply *pr = daemon_reply_new(
		rc, daemon_opt_bool(params, "wait", 1), "worktree.owners",
		json_pack("{s:s,s:s,s:s,s:s,s:s?}", "action", action, "owner", json_get_str(user, "id"), "unix_user",
			  unix_user, "by", P(rc)->user_id, "repo_url", json_get_str(wt, "repo_url")));
	pr->row_id = xstrdup(wt_id);
	if (submit_admin(D(rc), P(rc)->user_id, wt_id, &call, owner_changed_by_admin, pr, e) < 0) {
		daemon_reply_free(pr);
		return -1;
	}
	return pr->peer ? RPC_DEFERRED : (*result = json_pack("{s:s}", "worktree_id", wt_id), 0);
}

/* worktrees.owners.add {worktree_id, user_id}: owners and admins only. In strict mode with worktree_rbac
 * admin makes the user's Unix user a member first (deferred reply {task_id, owners}); otherwise the list
 * changes at once (reply: the owners). */
int method_worktrees_owners_add(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	_cleanup_json_ json_t *wt = NULL, *user = NULL;
	if (owner_change_rows(rc, params, &wt, &user, e) < 0)
		return -1;
	if (owners_via_admin(D(rc)))
		return change_owner_via_admin(rc, params, "add", wt, user, result, e);
	if (write_owner_change(D(rc), "add", json_get_str(wt, "id"), json_get_str(user, "id"), e) < 0)
		return -1;
	audit_owner_change(D(rc), P(rc)->user_id, "add", json_get_str(wt, "id"), json_get_str(user, "id"), NULL, NULL);
	return method_worktrees_owners_list(rc, params, result, e);
}

/* worktrees.owners.remove {worktree_id, user_id}: as add; the last owner stays. */
int method_worktrees_owners_remove(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	_cleanup_json_ json_t *wt = NULL, *user = NULL, *count = NULL;
	if (owner_change_rows(rc, params, &wt, &user, e) < 0)
		return -1;
	const char *wt_id = json_get_str(wt, "id"), *user_id = json_get_str(user, "id");
	if (!(count = db_query_one(D(rc)->db, e, "SELECT count(*) AS n FROM worktree_owners WHERE worktree_id = ?", "s",
				   wt_id)))
		return -1;
	if (!daemon_owns_worktree(D(rc), wt_id, user_id, e))
		return err_is_set(e) ? -1
				     : err_set(e, E_NOT_FOUND, "%s is not an owner of worktree %s", user_id, wt_id);
	if (json_integer_value(json_object_get(count, "n")) <= 1)
		return err_set(e, E_PERMISSION_DENIED,
			       "worktree %s keeps at least one owner: add another before removing this one", wt_id);
	if (owners_via_admin(D(rc)) && json_get_str(user, "unix_username")) /* else never in the group */
		return change_owner_via_admin(rc, params, "remove", wt, user, result, e);
	if (write_owner_change(D(rc), "remove", wt_id, user_id, e) < 0)
		return -1;
	audit_owner_change(D(rc), P(rc)->user_id, "remove", wt_id, user_id, NULL, NULL);
	return method_worktrees_owners_list(rc, params, result, e);
}

/* --- worktrees.set_access ------------------------------------------------------------------------- */

static void access_applied(struct daemon *d, const char *task_id, const json_t *data, const struct err *error,
			   void *arg)
{
	(void)data;
	struct pending_reply *pr = arg;
	struct err e = ERR_INIT;
	const char *can = json_get_str(pr->extra, "others_can"), *fs = json_get_str(pr->extra, "others_fs_access");
	if (!error && db_run(d->db, &e,
			     "UPDATE worktrees SET others_fs_access = ?, others_can = coalesce(?, others_can) "
			     "WHERE id = ?",
			     "sss", fs, can, pr->row_id) < 0)
		error = &e;
	daemon_audit(d, json_get_str(pr->extra, "by"), "worktrees.set_access", pr->row_id, error ? "failed" : "ok",
		     json_pack("{s:s?,s:s,s:s?}", "others_can", can, "others_fs_access", fs, "error",
			       error ? error->message : NULL));
	reply_with_worktree(d, pr, task_id, error);
	err_clear(&e);
}

/* worktrees.set_access {worktree_id, others_can?, others_fs_access?}: owners and admins only. others_can
 * (none|view|prompt|all) is the application-level setting, stored as is; others_fs_access
 * (none|read|write) is applied by `agor admin create-worktree-group ID PATH --others LEVEL` — idempotent,
 * and it also makes the group of a worktree created before worktree_rbac was on — and stored once admin
 * succeeded. Without worktree groups (simple, sandbox, worktree_rbac false) others_fs_access is refused. */
int method_worktrees_set_access(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *id;
	if (daemon_need_user(rc, e) < 0 || daemon_need_str(params, "worktree_id", &id, e) < 0 ||
	    check_access_params(params, e) < 0)
		return -1;
	const char *can = daemon_opt_str(params, "others_can"), *fs = daemon_opt_str(params, "others_fs_access");
	if (!can && !fs)
		return err_set(e, E_INVALID_PAYLOAD, "params: give others_can, others_fs_access or both");
	_cleanup_json_ json_t *wt =
		daemon_one_row(D(rc), e, "worktree",
			       "SELECT w.id, w.name, w.path, r.path AS repo_path FROM worktrees w JOIN repos r ON "
			       "r.id = w.repo_id WHERE w.id = ?1 OR w.name = ?1",
			       id);
	if (!wt)
		return -1;
	const char *wt_id = json_get_str(wt, "id");
	if (daemon_need_worktree_access(rc, wt_id, WT_OWNER, "worktree", id, "change its access", e) < 0) {
		daemon_audit_refusal(D(rc), P(rc)->user_id, "worktrees.set_access", wt_id,
				     json_pack("{s:s}", "reason", "not an owner"));
		return -1;
	}
	if (fs && !daemon_worktree_rbac_on(D(rc)))
		return refuse_without_rbac(D(rc), e);
	if (!fs) {
		if (db_run(D(rc)->db, e, "UPDATE worktrees SET others_can = ? WHERE id = ?", "ss", can, wt_id) < 0)
			return -1;
		daemon_audit(D(rc), P(rc)->user_id, "worktrees.set_access", wt_id, "ok",
			     json_pack("{s:s}", "others_can", can));
		json_t *row = worktree_row(D(rc), wt_id, e);
		if (!row)
			return -1;
		worktree_event(D(rc), wt_id, "worktree.updated", json_incref(row));
		*result = json_pack("{s:o}", "worktree", row);
		return 0;
	}
	struct pending_reply *pr = daemon_reply_new(
		rc, daemon_opt_bool(params, "wait", 1), "worktree.access",
		json_pack("{s:s?,s:s,s:s}", "others_can", can, "others_fs_access", fs, "by", P(rc)->user_id));
	pr->row_id = xstrdup(wt_id);
	_cleanup_free_ char *path = worktree_abs_path(D(rc), json_get_str(wt, "repo_path"), json_get_str(wt, "name"),
						      json_get_str(wt, "path"));
	struct admin_call call = admin_create_worktree_group(wt_id, path, fs);
	if (submit_admin(D(rc), P(rc)->user_id, wt_id, &call, access_applied, pr, e) < 0) {
		daemon_reply_free(pr);
		return -1;
	}
	return pr->peer ? RPC_DEFERRED : (*result = json_pack("{s:s}", "worktree_id", wt_id), 0);
}

/* --- exec.run (hosts sandbox and node) ------------------------------------------------------- */

/* The caller gets the run's result whenever the program ran (its outcome says how it ended). */
static void exec_ran(struct daemon *d, const char *task_id, const json_t *data, const struct err *error, void *arg)
{
	(void)d;
	struct pending_reply *pr = arg;
	send_reply(pr, task_id, data ? json_incref((json_t *)data) : NULL, data ? NULL : error);
	daemon_reply_free(pr);
}

/* params.session_id of a sandboxed exec.run: a session of the caller's (or the caller an admin) on the run's very
 * worktree, whose egress additions the run gets; *session NULL when none is named. */
static int run_session(struct rpc_ctx *rc, json_t *params, const char *wt_id, json_t **session, struct err *e)
{
	const char *sid;
	if (daemon_session_param(rc, params, &sid, NULL, e) < 0)
		return -1;
	if (!sid)
		return 0;
	*session = daemon_one_row(D(rc), e, "session",
				  "SELECT id, worktree_id, egress_allow FROM sessions WHERE id = ?", sid);
	if (!*session)
		return -1;
	if (strcmp(json_get_str(*session, "worktree_id"), wt_id))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "session_id"),
				"params.session_id: session %s is on another worktree than params.worktree_id %s", sid,
				wt_id);
	return 0;
}

static int exec_run_sandbox(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	json_t *argv;
	_cleanup_free_ char *user = NULL;
	if (daemon_need_user(rc, e) < 0 || daemon_need_argv(params, &argv, e) < 0)
		return -1;
	static const char *const node_only[] = { "node", "security", "ask", "env", "cwd", "agent_id", NULL };
	for (size_t i = 0; node_only[i]; i++)
		if (json_object_get(params, node_only[i]))
			return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", node_only[i]),
					"params.%s: only for hosts \"gateway\" and \"node\" (the sandbox runs in the "
					"worktree under its own controls)",
					node_only[i]);
	json_t *wt = daemon_run_worktree(rc, params, e);
	if (!wt)
		return -1;
	const char *wt_id = json_get_str(wt, "id");
	_cleanup_json_ json_t *session = NULL;
	if (run_session(rc, params, wt_id, &session, e) < 0) {
		json_decref(wt);
		return -1;
	}
	json_t *exec_params = json_pack("{s:O,s:s}", "argv", argv, "cwd", json_get_str(wt, "path"));
	if (json_get_str(wt, "repo_path")) /* the executor checks the worktree's .git against it */
		json_object_set_new(exec_params, "repoPath", json_string(json_get_str(wt, "repo_path")));
	json_t *timeout = json_object_get(params, "timeout_ms");
	if (json_is_integer(timeout))
		json_object_set(exec_params, "timeoutMs", timeout);
	if (D(rc)->cfg->execution.unix_user_mode == CONFIG_MODE_SANDBOX) /* one kept home per agor user: the caller's */
		json_object_set_new(exec_params, "home", json_string(P(rc)->user_id));
	struct pending_reply *pr = daemon_reply_new(rc, daemon_opt_bool(params, "wait", 1), "exec.run", NULL);
	/* a command outside a session is the caller's own act: it runs as the caller's execution user (an owner
	 * other than the creator reaches the files through the worktree's group), never as the creator */
	int rv = daemon_execution_user_for(D(rc), P(rc)->user_id, &user, e);
	struct task_spec spec = { .command = "exec.run",
				  .params = exec_params,
				  .created_by = P(rc)->user_id,
				  .execution_user = user,
				  .worktree_id = wt_id,
				  .judge = daemon_exec_outcome,
				  .on_done = exec_ran,
				  .session_id = json_get_str(session, "id"),
				  .egress_allow = json_get_str(session, "egress_allow") };
	rv = submit_with_reply(rc, rv, &spec, pr, result, e);
	json_decref(exec_params);
	json_decref(wt);
	return rv;
}

/* host=node: the command goes to a paired node, which decides under its own approvals file. */
static int exec_run_node(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct node_exec x = { .query = daemon_opt_str(params, "node"),
			       .cwd = daemon_opt_str(params, "cwd"),
			       .agent_id = daemon_opt_str(params, "agent_id"),
			       .on_done = exec_ran };
	_cleanup_free_ char *owner = NULL;
	if (daemon_need_user(rc, e) < 0 || daemon_need_argv(params, &x.argv, e) < 0 ||
	    daemon_exec_env_param(rc, params, &x.env, e) < 0 ||
	    daemon_level_param(params, "security", appr_security_parse, "deny|allowlist|full", "deny", &x.security, e) <
		    0 ||
	    daemon_level_param(params, "ask", appr_ask_parse, "off|on-miss|always", NULL, &x.ask, e) < 0 ||
	    daemon_session_param(rc, params, &x.session_id, &owner, e) < 0)
		return -1;
	x.created_by = P(rc)->user_id;
	x.owner = owner;
	json_t *timeout = json_object_get(params, "timeout_ms");
	if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) < 1))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "timeout_ms"),
				"params.timeout_ms: expected a positive integer (milliseconds)");
	x.timeout_ms = timeout ? json_integer_value(timeout) : 0;
	struct pending_reply *pr = daemon_reply_new(rc, daemon_opt_bool(params, "wait", 1), "exec.run", NULL);
	x.arg = pr;
	_cleanup_free_ char *run_id = NULL;
	if (daemon_node_exec(D(rc), &x, &run_id, e) < 0) {
		daemon_reply_free(pr);
		return -1;
	}
	if (pr->peer)
		return RPC_DEFERRED;
	*result = json_pack("{s:s}", "task_id", run_id);
	return 0;
}

/* exec.run's parameters: anything else — an approval or a decision above all — is refused, never ignored. */
static int known_exec_params(json_t *params, struct err *e)
{
	static const char *const known[] = { "host",	 "worktree_id", "argv", "timeout_ms", "wait",
					     "node",	 "security",	"ask",	"env",	      "cwd",
					     "agent_id", "session_id",	NULL };
	const char *key = json_unknown_key(params, known);
	if (key)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", key),
				"params.%s: unknown (approvals are granted by a person on the gateway, never by a "
				"caller's params)",
				key);
	return 0;
}

/* The session's exec defaults (/exec, /elevated) fill what an exec.run in that session leaves out. */
static json_t *with_session_defaults(struct rpc_ctx *rc, json_t *params, struct err *e)
{
	const char *sid = daemon_opt_str(params, "session_id");
	if (!sid)
		return json_incref(params);
	_cleanup_json_ json_t *row =
		db_query_one(D(rc)->db, e, "SELECT exec_defaults FROM sessions WHERE id = ?", "s", sid);
	if (!row)
		return NULL;
	const char *text = json_is_object(row) ? json_get_str(row, "exec_defaults") : NULL;
	json_t *defaults = text ? json_loads(text, 0, NULL) : NULL;
	json_t *merged = json_deep_copy(params);
	const char *host = json_get_str(defaults, "host");
	/* an explicit host takes none of them; without a gateway or node host they have nothing to set */
	if (host && strcmp(host, "sandbox") && !json_object_get(params, "host")) {
		json_object_del(defaults, "elevated");
		json_object_update_missing(merged, defaults);
	}
	if (defaults)
		json_decref(defaults);
	return merged;
}

int method_exec_run(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	if (known_exec_params(params, e) < 0 || daemon_visible_session_param(rc, params, e) < 0)
		return -1;
	_cleanup_json_ json_t *p = with_session_defaults(rc, params, e);
	if (!p)
		return -1;
	const char *host = daemon_opt_str(p, "host");
	if (!host || !strcmp(host, "sandbox"))
		return exec_run_sandbox(rc, p, result, e);
	if (!strcmp(host, "node"))
		return exec_run_node(rc, p, result, e);
	if (!strcmp(host, "gateway"))
		return daemon_gateway_exec(rc, p, result, e);
	return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "host"),
			"params.host: \"%s\" is not one of sandbox|gateway|node", host);
}

int method_worktrees_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	if (daemon_need_user(rc, e) < 0)
		return -1;
	*result = db_query_json(
		D(rc)->db, e,
		"SELECT w.* FROM worktrees w WHERE (?3 IS NULL OR w.repo_id = ?3) AND " VISIBLE_WORKTREE_SQL
		" ORDER BY w.created_at, w.rowid",
		"sis", P(rc)->user_id, (long long)P(rc)->is_admin, daemon_opt_str(params, "repo_id"));
	return *result ? 0 : -1;
}

int method_worktrees_get(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	if (daemon_get_row(rc, params, "worktree", "SELECT * FROM worktrees WHERE id = ?1 OR name = ?1", result, e) < 0)
		return -1;
	if (daemon_need_worktree_access(rc, json_get_str(*result, "id"), WT_VIEW, "worktree",
					json_get_str(params, "id"), "", e) == 0)
		return 0;
	json_decref(*result);
	*result = NULL;
	return -1;
}

/* --- tasks, messages, events, config, audit ---------------------------------------------- */

int method_tasks_get(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *id;
	if (daemon_need_str(params, "id", &id, e) < 0 || daemon_need_task_access(rc, id, WT_VIEW, "", e) < 0)
		return -1;
	return daemon_get_row(rc, params, "task", "SELECT * FROM tasks WHERE id = ?", result, e);
}

int method_tasks_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	if (daemon_need_user(rc, e) < 0)
		return -1;
	const char *status = daemon_opt_str(params, "status"), *mine = P(rc)->is_admin ? NULL : P(rc)->user_id;
	*result = db_query_json(
		D(rc)->db, e,
		"SELECT * FROM tasks WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR created_by = ?2)"
		" ORDER BY created_at DESC, rowid DESC LIMIT 500",
		"ss", status, mine); /* ties: newest first too */
	return *result ? 0 : -1;
}

int method_tasks_cancel(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *id;
	if (daemon_need_str(params, "id", &id, e) < 0 ||
	    daemon_need_task_access(rc, id, WT_PROMPT, "cancel its task", e) < 0 ||
	    daemon_task_cancel(D(rc), id, e) < 0)
		return -1;
	daemon_audit(D(rc), P(rc)->user_id, "tasks.cancel", id, "ok", NULL);
	*result = json_pack("{s:b}", "cancelling", 1);
	return 0;
}

int method_messages_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	if (daemon_need_user(rc, e) < 0)
		return -1;
	const char *task = daemon_opt_str(params, "task_id"), *session = daemon_opt_str(params, "session_id");
	json_int_t after = json_integer_value(json_object_get(params, "after"));
	if (!task == !session)
		return err_set(e, E_INVALID_PAYLOAD, "give exactly one of params.task_id and params.session_id");
	if (task ? daemon_need_task_access(rc, task, WT_VIEW, "", e) < 0
		 : daemon_need_session_access(rc, session, WT_VIEW, "", NULL, e) < 0)
		return -1;
	*result = task ? db_query_json(D(rc)->db, e,
				       "SELECT * FROM messages WHERE task_id = ? AND id > ? ORDER BY id LIMIT 1000",
				       "si", task, (long long)after)
		       : db_query_json(D(rc)->db, e,
				       "SELECT * FROM messages WHERE session_id = ? AND id > ? ORDER BY id LIMIT 1000",
				       "si", session, (long long)after);
	return *result ? 0 : -1;
}

int method_events_subscribe(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)params;
	if (daemon_need_user(rc, e) < 0)
		return -1;
	daemon_peer_subscribe(P(rc));
	*result = json_pack("{s:b}", "subscribed", 1);
	return 0;
}

/* config.get {} → every setting (as `agor config show --json`); {key} → that one (as `agor config get
 * --json KEY`): the daemon's effective values, which a later `agor config set` changes only on restart. */
int method_config_get(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	if (daemon_need_user(rc, e) < 0)
		return -1;
	const char *key = daemon_opt_str(params, "key");
	if (!key) {
		*result = config_to_json(D(rc)->cfg);
		return 0;
	}
	*result = config_entry_to_json(D(rc)->cfg, key);
	return *result ? 0 : err_set(e, E_INVALID_PAYLOAD, "params.key: unknown setting %s", key);
}

int method_audit_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	if (daemon_need_admin(rc, e) < 0)
		return -1;
	daemon_flush_refusals(D(rc)); /* the refusals counted so far are part of what is read */
	json_int_t after = json_integer_value(json_object_get(params, "after"));
	*result = db_query_json(D(rc)->db, e, "SELECT * FROM audit_log WHERE id > ? ORDER BY id LIMIT 1000", "i",
				(long long)after);
	return *result ? 0 : -1;
}

int method_audit_verify(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)params;
	struct audit_report r;
	if (daemon_need_admin(rc, e) < 0 || audit_verify(D(rc)->db, &r, e) < 0)
		return -1;
	*result = json_pack("{s:b,s:I,s:I,s:s}", "ok", r.first_bad_id == 0, "rows", (json_int_t)r.rows, "firstBadId",
			    (json_int_t)r.first_bad_id, "reason", r.reason);
	return 0;
}

/* --- sessions ------------------------------------------------------------------------------ */

static const char *const tools[] = { "claude-code", "codex", "gemini", "opencode", NULL };
static const char *const permission_modes[] = { "default", "acceptEdits", "bypassPermissions", "plan", NULL };

static int one_of(const char *value, const char *const *allowed)
{
	for (; *allowed; allowed++)
		if (!strcmp(value, *allowed))
			return 1;
	return 0;
}

int method_sessions_create(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *wt_id, *tool, *mode = daemon_opt_str(params, "permission_mode");
	if (daemon_need_user(rc, e) < 0 || daemon_need_str(params, "worktree_id", &wt_id, e) < 0 ||
	    daemon_need_str(params, "tool", &tool, e) < 0)
		return -1;
	if (!one_of(tool, tools))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "tool"),
				"params.tool: expected one of claude-code|codex|gemini|opencode");
	if (mode && !one_of(mode, permission_modes))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "permission_mode"),
				"params.permission_mode: expected one of default|acceptEdits|bypassPermissions|plan");
	if (agent_check_mode(agent_find(tool), mode ? mode : "default", e) < 0)
		return -1;
	json_t *wt = daemon_one_row(D(rc), e, "worktree", "SELECT * FROM worktrees WHERE id = ?1 OR name = ?1", wt_id);
	if (!wt)
		return -1;
	if (daemon_need_worktree_access(rc, json_get_str(wt, "id"), WT_ALL, "worktree", wt_id, "create a session in it",
					e) < 0) {
		json_decref(wt);
		return -1;
	}
	_cleanup_free_ char *id = daemon_new_id();
	int rv = db_run(D(rc)->db, e,
			"INSERT INTO sessions (id, worktree_id, tool, permission_mode, created_by, created_at) VALUES "
			"(?,?,?,?,?,?)",
			"sssssi", id, json_get_str(wt, "id"), tool, mode ? mode : "default", P(rc)->user_id,
			daemon_now());
	json_decref(wt);
	if (rv < 0)
		return -1;
	daemon_audit(D(rc), P(rc)->user_id, "sessions.create", id, "ok", json_pack("{s:s}", "tool", tool));
	*result = daemon_one_row(D(rc), e, "session", "SELECT * FROM sessions WHERE id = ?", id);
	return *result ? 0 : -1;
}

int method_sessions_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)params;
	if (daemon_need_user(rc, e) < 0)
		return -1;
	*result = db_query_json(
		D(rc)->db, e,
		"SELECT s.* FROM sessions s JOIN worktrees w ON w.id = s.worktree_id WHERE " VISIBLE_WORKTREE_SQL
		" ORDER BY s.created_at, s.rowid",
		"si", P(rc)->user_id, (long long)P(rc)->is_admin);
	return *result ? 0 : -1;
}

int method_sessions_get(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *id;
	if (daemon_need_str(params, "id", &id, e) < 0 || daemon_need_session_access(rc, id, WT_VIEW, "", NULL, e) < 0)
		return -1;
	return daemon_get_row(rc, params, "session", "SELECT * FROM sessions WHERE id = ?", result, e);
}

/* A session's executions run as its creator's execution user, whoever prompts (docs/rpc.md): owners,
 * admins, and others when the worktree's others_can is prompt or all. */
int method_sessions_prompt(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *sid, *prompt;
	_cleanup_free_ char *user = NULL, *task_id = NULL;
	if (daemon_need_user(rc, e) < 0 || daemon_need_str(params, "session_id", &sid, e) < 0 ||
	    daemon_need_str(params, "prompt", &prompt, e) < 0 ||
	    daemon_need_session_access(rc, sid, WT_PROMPT, "prompt its sessions", NULL, e) < 0)
		return -1;
	json_t *s = daemon_one_row(D(rc), e, "session",
				   "SELECT s.*, w.path AS cwd, r.path AS repo_path FROM sessions s JOIN worktrees w ON "
				   "w.id = s.worktree_id "
				   "LEFT JOIN repos r ON r.id = w.repo_id WHERE s.id = ?",
				   sid);
	if (!s)
		return -1;
	int may_set = P(rc)->is_admin || !strcmp(json_get_str(s, "created_by"), P(rc)->user_id);
	int rv = daemon_session_directive(D(rc), s, prompt, may_set, result, e);
	if (rv != 0) {
		json_decref(s);
		return rv < 0 ? -1 : 0;
	}
	rv = daemon_execution_user_for(D(rc), json_get_str(s, "created_by"), &user, e);
	long long seen = 0;
	_cleanup_free_ char *note = daemon_session_events_note(D(rc), sid, &seen);
	_cleanup_free_ char *text = note ? xasprintf("%s%s", note, prompt) : NULL;
	if (rv == 0) {
		json_t *p = json_pack("{s:s,s:s,s:O,s:O,s:O}", "sessionId", sid, "prompt", text ? text : prompt, "tool",
				      json_object_get(s, "tool"), "permissionMode",
				      json_object_get(s, "permission_mode"), "cwd", json_object_get(s, "cwd"));
		if (D(rc)->cfg->execution.unix_user_mode ==
		    CONFIG_MODE_SANDBOX) /* the creator's kept home, as exec.run */
			json_object_set(p, "home", json_object_get(s, "created_by"));
		if (json_get_str(s, "repo_path")) /* the executor checks the worktree's .git against it */
			json_object_set(p, "repoPath", json_object_get(s, "repo_path"));
		struct task_spec spec = { .command = "prompt",
					  .params = p,
					  .session_id = sid,
					  .created_by = json_get_str(s, "created_by"),
					  .prompted_by = P(rc)->user_id,
					  .execution_user = user,
					  .worktree_id = json_get_str(s, "worktree_id"),
					  .with_token = 1,
					  .egress_allow = json_get_str(s, "egress_allow") };
		rv = daemon_task_submit(D(rc), &spec, &task_id, e);
		json_decref(p);
	}
	if (rv == 0) {
		if (note)
			daemon_session_events_seen(D(rc), sid, seen);
		daemon_audit(D(rc), P(rc)->user_id, "sessions.prompt", task_id, "ok",
			     json_pack("{s:s}", "session_id", sid));
		*result = json_pack("{s:s}", "task_id", task_id);
	}
	json_decref(s);
	return rv;
}

/* --- API keys (values sealed with the master key; never returned) ---------------------------- */

/* api_keys.set {service, value, scope?}: scope owner | admins | members says whose tasks may use the key
 * (daemon_methods.h); a new key gets members, a key set again keeps its scope unless one is given. */
int method_api_keys_set(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *given, *value, *scope = daemon_opt_str(params, "scope"),
				   *username = daemon_opt_str(params, "username");
	_cleanup_free_ char *service = NULL;
	if (daemon_need_admin(rc, e) < 0 || daemon_need_str(params, "service", &given, e) < 0 ||
	    daemon_need_str(params, "value", &value, e) < 0 || daemon_canonical_service(given, &service, e) < 0)
		return -1;
	if (username && (!daemon_git_service(service) || !*username || strpbrk(username, "@:/ \t\r\n")))
		return err_setd(
			e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "username"),
			"params.username: a user name goes with a git credential (git:HOST or git-ssh:HOST) only, "
			"and has no '@', ':', '/' or white space");
	json_t *given_scope = json_object_get(params, "scope"); /* null: as absent (keep, or members when new) */
	if (given_scope && !json_is_null(given_scope) && (!scope || !daemon_api_key_scope_valid(scope)))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "scope"),
				"params.scope: expected owner, admins or members (whose tasks may use the key)");
	struct strbuf sealed = STRBUF_INIT;
	int rv = crypto_seal(D(rc)->master_key, value, strlen(value), service, strlen(service), &sealed, e);
	if (rv == 0)
		rv = db_run(D(rc)->db, e,
			    "INSERT INTO api_keys (service, sealed, scope, set_by, created_at, updated_at, username) "
			    "VALUES (?1, ?2, coalesce(?3, 'members'), ?4, ?5, ?5, ?6) ON CONFLICT(service) DO UPDATE "
			    "SET "
			    "sealed = excluded.sealed, scope = coalesce(?3, api_keys.scope), set_by = excluded.set_by, "
			    "updated_at = excluded.updated_at, username = excluded.username",
			    "sbssis", service, sealed.buf, sealed.len, scope, P(rc)->user_id, daemon_now(),
			    username) < 0
			     ? -1
			     : 0;
	strbuf_release(&sealed);
	_cleanup_json_ json_t *row =
		rv == 0 ? db_query_one(D(rc)->db, e, "SELECT scope FROM api_keys WHERE service = ?", "s", service)
			: NULL;
	if (rv == 0 && json_is_object(row)) {
		daemon_audit(D(rc), P(rc)->user_id, "api_keys.set", service, "ok",
			     json_pack("{s:O}", "scope", json_object_get(row, "scope")));
		*result = json_pack("{s:s,s:b,s:O}", "service", service, "stored", 1, "scope",
				    json_object_get(row, "scope"));
		return 0;
	}
	return -1;
}

int method_api_keys_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)params;
	if (daemon_need_admin(rc, e) < 0)
		return -1;
	*result = db_query_json(
		D(rc)->db, e,
		"SELECT service, scope, username, set_by, created_at, updated_at FROM api_keys ORDER BY service", "");
	return *result ? 0 : -1;
}

int method_api_keys_remove(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *service;
	if (daemon_need_admin(rc, e) < 0 || daemon_need_str(params, "service", &service, e) < 0)
		return -1;
	int n = db_run(D(rc)->db, e, "DELETE FROM api_keys WHERE service = ?", "s", service);
	if (n < 0)
		return -1;
	if (!n)
		return err_set(e, E_NOT_FOUND, "no API key is set for %s", service);
	daemon_audit(D(rc), P(rc)->user_id, "api_keys.remove", service, "ok", NULL);
	*result = json_pack("{s:b}", "removed", 1);
	return 0;
}

/* ping: {pong: true} for anyone; a user (`agor daemon status`) also hears the version, pid, TCP port and start. */
int method_ping(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)params;
	(void)e;
	struct daemon *d = D(rc);
	*result = json_pack("{s:b}", "pong", 1);
	if (P(rc)->user_id)
		json_object_update_new(*result,
				       json_pack("{s:s,s:i,s:i,s:I}", "version", agor_version(), "pid", (int)getpid(),
						 "port", d->server ? net_server_tcp_port(d->server) : 0, "started_at",
						 (json_int_t)d->started_at));
	return 0;
}
