/* spawn.c — runs executors locally, through sudo or through the operator's template (spawn.h).
 * Never hands the daemon's own environment or a secret in argv to an executor it starts. */
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "adminsock.h"
#include "child.h"
#include "config.h"
#include "fault.h"
#include "impersonate.h"
#include "json.h"
#include "log.h"
#include "spawn.h"
#include "banned.h"

#define RESULT_MAX_BYTES  (512u << 20)
#define STDERR_TAIL_BYTES (16u << 10)

/* PATH, HOME, LANG, TERM — and nothing else of ours (docs/payloads.md#spawning). */
static void minimal_environment(struct strvec *env)
{
	strvec_push(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	const char *home = getenv("HOME");
	struct passwd *pw = getpwuid(geteuid());
	strvec_pushf(env, "HOME=%s", home && *home ? home : (pw ? pw->pw_dir : "/"));
	const char *lang = getenv("LANG");
	strvec_pushf(env, "LANG=%s", lang && *lang ? lang : "C.UTF-8");
	const char *term = getenv("TERM");
	strvec_pushf(env, "TERM=%s", term && *term ? term : "dumb");
	const char *level = getenv("AGOR_LOG_LEVEL");
	if (level && *level)
		strvec_pushf(env, "AGOR_LOG_LEVEL=%s", level);
	fault_pass_on(env); /* test builds only (fault.h) */
}

static int user_ids(const char *user, char uid[16], char gid[16], struct err *e)
{
	struct passwd *pw = user && *user ? getpwnam(user) : getpwuid(geteuid());
	if (!pw)
		return err_set(e, E_IMPERSONATION_FAILED, "template: no passwd entry for user '%s'", user ? user : "?");
	snprintf(uid, 16, "%u", (unsigned)pw->pw_uid);
	snprintf(gid, 16, "%u", (unsigned)pw->pw_gid);
	return 0;
}

static const char *placeholder_value(const struct spawn_request *r, const char *name, size_t len, const char *uid,
				     const char *gid, struct strbuf *scratch)
{
#define IS(s) (len == strlen(s) && !strncmp(name, s, len))
	if (IS("payload_json")) {
		strbuf_add(scratch, r->payload, r->payload_len);
		return scratch->buf;
	}
	const char *v = IS("command")	      ? r->command
			: IS("task_id")	      ? r->task_id
			: IS("session_id")    ? r->session_id
			: IS("worktree_id")   ? r->worktree_id
			: IS("unix_user")     ? r->unix_user
			: IS("unix_user_uid") ? uid
			: IS("unix_user_gid") ? gid
			: IS("daemon_url")    ? r->daemon_url
					      : NULL;
#undef IS
	if (!v && !config_template_placeholder_known(name, len))
		return NULL;
	return v ? v : "";
}

int spawn_render_template(const struct spawn_request *r, struct strbuf *out, struct err *e)
{
	char uid[16], gid[16];
	if (user_ids(r->unix_user, uid, gid, e) < 0)
		return -1;
	const char *s = r->template, *name;
	size_t len;
	const char *at;
	while ((at = config_template_next(s, &name, &len))) {
		strbuf_add(out, s, (size_t)(at - s));
		struct strbuf scratch = STRBUF_INIT;
		const char *v = placeholder_value(r, name, len, uid, gid, &scratch);
		if (!v) {
			strbuf_release(&scratch);
			return err_set(e, E_CONFIG, "execution.executor_command_template: unknown placeholder {%.*s}",
				       (int)len, name);
		}
		strbuf_add_shell_quoted(out, v);
		strbuf_release(&scratch);
		s = name + len + 1;
	}
	strbuf_addstr(out, s);
	return 0;
}

static int build_argv(const struct spawn_request *r, struct child *c, struct err *e)
{
	switch (r->mode) {
	case SPAWN_LOCAL:
		strvec_pushv(&c->args, (const char *const[]){ r->agor_path, "executor", "--stdin", NULL });
		if (r->dry_run)
			strvec_push(&c->args, "--dry-run");
		return 0;
	case SPAWN_SUDO:
		if (!r->unix_user)
			return err_set(e, E_IMPERSONATION_FAILED, "sudo spawn needs the execution user");
		if (!impersonate_sudo_path())
			return err_set(e, E_IMPERSONATION_FAILED, "cannot run executors as %s: sudo is not installed",
				       r->unix_user);
		if (r->dry_run) /* the sudo rule allows `executor --stdin` only: plan as ourselves */
			strvec_pushv(&c->args,
				     (const char *const[]){ r->agor_path, "executor", "--stdin", "--dry-run", NULL });
		else
			impersonate_argv(r->unix_user, r->agor_path, &c->args);
		strvec_pushf(&c->env, "%s=1", IMPERSONATED_ENV);
		return 0;
	case SPAWN_ADMIN:
		if (geteuid() != 0) {
			if (!impersonate_sudo_path())
				return err_set(e, E_ISOLATION_UNAVAILABLE,
					       "cannot run agor admin: sudo is not installed");
			strvec_pushv(&c->args, (const char *const[]){ impersonate_sudo_path(), "-n", "--", NULL });
		}
		strvec_pushv(&c->args, (const char *const[]){ r->agor_path, "admin", NULL });
		strvec_pushv(&c->args, r->admin_args);
		strvec_push(&c->args, "--json");
		return 0;
	case SPAWN_TEMPLATE: {
		struct strbuf cmd = STRBUF_INIT;
		if (spawn_render_template(r, &cmd, e) < 0) {
			strbuf_release(&cmd);
			return -1;
		}
		strvec_pushv(&c->args, (const char *const[]){ "/bin/sh", "-c", cmd.buf, NULL });
		strbuf_release(&cmd);
		return 0;
	}
	}
	return err_set(e, E_INTERNAL, "unknown spawn mode");
}

/* The last non-empty line of out, as a JSON object with a boolean "success"; NULL otherwise. */
static json_t *parse_result_line(struct strbuf *out)
{
	strbuf_trim_trailing_newline(out);
	const char *line = out->buf;
	const char *nl = memrchr(out->buf, '\n', out->len);
	if (nl) {
		line = nl + 1;
		log_warn("executor printed %zu bytes before its result line (ignored)", (size_t)(line - out->buf));
	}
	struct err ignored = ERR_INIT;
	json_t *j = json_parse(line, out->len - (size_t)(line - out->buf), &ignored);
	err_clear(&ignored);
	if (j && json_is_object(j) && json_is_boolean(json_object_get(j, "success")))
		return j;
	if (j)
		json_decref(j);
	return NULL;
}

static int missing_result(struct child *c, const char *tail, const char *why, struct err *e)
{
	return err_setd(e, c->timed_out ? E_TIMEOUT : E_EXECUTOR_RESULT_MISSING,
			json_pack("{s:i,s:b,s:s}", "exitStatus", child_exit_code(c), "timedOut", c->timed_out,
				  "stderrTail", tail),
			"%s (exit status %d)%s%s", why, child_exit_code(c), *tail ? ": " : "", tail);
}

/* SPAWN_ADMIN through the privileged socket: the same argv, typed, and admin's --json line back. */
static int spawn_admin_socket(const struct spawn_request *r, struct spawn_result *out, struct err *e)
{
	struct strbuf line = STRBUF_INIT;
	int rc = adminsock_admin(r->admin_socket, r->admin_args, r->timeout_ms, &line, e);
	if (rc == 0 && !(out->result = parse_result_line(&line)))
		rc = err_setd(e, E_EXECUTOR_RESULT_MISSING, json_pack("{s:s}", "answer", line.buf),
			      "the privileged socket %s gave no admin result line%s%.200s", r->admin_socket,
			      line.len ? ": " : "", line.buf);
	out->exit_status = out->result && json_is_true(json_object_get(out->result, "success")) ? 0 : 1;
	out->stderr_tail = xstrdup("");
	strbuf_release(&line);
	return rc;
}

int spawn_executor(const struct spawn_request *r, struct spawn_result *out, struct err *e)
{
	memset(out, 0, sizeof(*out));
	if (r->mode == SPAWN_ADMIN && r->admin_socket)
		return spawn_admin_socket(r, out, e);
	_cleanup_child_ struct child c;
	child_init(&c);
	c.inherit_env = 0;
	minimal_environment(&c.env);
	if (build_argv(r, &c, e) < 0)
		return -1;
	c.new_process_group = 1;
	c.on_started = r->on_started;
	c.on_started_arg = r->on_started_arg;
	c.on_stderr = r->on_stderr;
	c.on_stderr_arg = r->on_stderr_arg;
	c.timeout_ms = r->timeout_ms;
	if (r->kill_grace_ms)
		c.kill_grace_ms = r->kill_grace_ms;
	struct strbuf so = STRBUF_INIT, se = STRBUF_INIT;
	int rc = child_run(&c, r->payload, r->payload_len, &so, &se, RESULT_MAX_BYTES, e);
	if (rc == 0) {
		out->pid = c.pid;
		out->exit_status = child_exit_code(&c);
		if (se.len > STDERR_TAIL_BYTES)
			strbuf_remove_front(&se, se.len - STDERR_TAIL_BYTES);
		strbuf_trim_trailing_newline(&se);
		out->stderr_tail = xstrdup(se.buf);
		if (c.timed_out)
			rc = missing_result(&c, se.buf, "the executor timed out and was killed", e);
		else if (!(out->result = parse_result_line(&so)))
			rc = missing_result(&c, se.buf,
					    so.len ? "the executor's result line is malformed"
						   : "the executor ended without a result line",
					    e);
	}
	explicit_bzero(so.buf, so.len);
	strbuf_release(&so);
	strbuf_release(&se);
	return rc;
}

void spawn_result_release(struct spawn_result *out)
{
	if (out->result)
		json_decref(out->result);
	free(out->stderr_tail);
	memset(out, 0, sizeof(*out));
}
