/* impersonate.c — the sudo re-exec of the executor as another user (impersonate.h).
 * Never passes secrets in argv or environment, never trusts output that is not one result line. */
#include <limits.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>

#include "child.h"
#include "fault.h"
#include "impersonate.h"
#include "json.h"
#include "strvec.h"
#include "banned.h"

#define RESULT_MAX_BYTES  (256u << 20)
#define STDERR_TAIL_BYTES (64u << 10)

const char *impersonate_sudo_path(void)
{
	static const char *const candidates[] = { "/usr/bin/sudo", "/bin/sudo", "/usr/local/bin/sudo" };
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

char *impersonate_current_user(void)
{
	struct passwd *pw = getpwuid(geteuid());
	return pw ? xstrdup(pw->pw_name) : NULL;
}

char *impersonate_self_path(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

void impersonate_argv(const char *user, const char *self, struct strvec *argv)
{
	const char *sudo = impersonate_sudo_path();
	strvec_push(argv, sudo ? sudo : "/usr/bin/sudo");
	fault_sudo_preserve(argv); /* test builds only (fault.h) */
	strvec_pushv(argv, (const char *const[]){ "-n", "-u", user, "--", self, "executor", "--stdin", NULL });
}

/* A result line is one JSON object with a boolean "success", alone on stdout. */
static int valid_result_line(struct strbuf *out)
{
	strbuf_trim_trailing_newline(out);
	if (!out->len || memchr(out->buf, '\n', out->len))
		return 0;
	struct err ignored = ERR_INIT;
	json_t *j = json_parse(out->buf, out->len, &ignored);
	err_clear(&ignored);
	int ok = json_is_object(j) && json_is_boolean(json_object_get(j, "success"));
	if (j)
		json_decref(j);
	return ok;
}

static void set_environment(struct child *c)
{
	c->inherit_env = 0;
	strvec_push(&c->env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	strvec_pushf(&c->env, "%s=1", IMPERSONATED_ENV);
	const char *level = getenv("AGOR_LOG_LEVEL");
	if (level && *level)
		strvec_setenv(&c->env, "AGOR_LOG_LEVEL", level);
	fault_pass_on(&c->env); /* test builds only (fault.h): with sudo's --preserve-env (impersonate_argv) */
}

int impersonate_run(const char *user, const char *self, const char *payload, size_t len, int timeout_ms,
		    struct strbuf *line, int *exit_code, struct err *e)
{
	if (!impersonate_sudo_path())
		return err_set(e, E_IMPERSONATION_FAILED, "cannot run as %s: sudo is not installed", user);
	_cleanup_child_ struct child c;
	child_init(&c);
	impersonate_argv(user, self, &c.args);
	set_environment(&c);
	c.new_process_group = 1;
	c.timeout_ms = timeout_ms;
	struct strbuf err_tail = STRBUF_INIT;
	if (child_run(&c, payload, len, line, &err_tail, RESULT_MAX_BYTES, e) < 0) {
		strbuf_release(&err_tail);
		err_prefix(e, "running sudo");
		e->code = E_IMPERSONATION_FAILED;
		return -1;
	}
	(void)!write(2, err_tail.buf, err_tail.len);
	int rc = 0;
	if (!valid_result_line(line)) {
		strbuf_trim_trailing_newline(&err_tail);
		const char *last = strrchr(err_tail.buf, '\n');
		last = last ? last + 1 : err_tail.buf;
		rc = err_setd(
			e, E_IMPERSONATION_FAILED,
			json_pack("{s:s,s:i,s:s}", "user", user, "exitStatus", child_exit_code(&c), "stderr", last),
			"cannot run the executor as %s through sudo: %s", user,
			*last ? last : "no result line came back");
	}
	*exit_code = child_exit_code(&c);
	strbuf_release(&err_tail);
	return rc;
}
