/* approvals_exec.c — running an approved command (approvals_exec.h) through lib/child.
 * Never uses a shell, never keeps more output than the caps allow. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "approvals_exec.h"
#include "child.h"
#include "banned.h"

extern char **environ;

/* Environment that names code to run, or changes which code a program loads. */
static const char *const scrubbed_prefixes[] = { "LD_", "BASH_FUNC_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_" };
static const char *const scrubbed_names[] = {
	"GCONV_PATH",
	"GLIBC_TUNABLES",
	"BASH_ENV",
	"ENV",
	"SHELLOPTS",
	"BASHOPTS",
	"PS4",
	"IFS",
	"CDPATH",
	"GLOBIGNORE",
	"EXECIGNORE",
	"BASH_LOADABLES_PATH",
	"SSH_CLIENT",
	"SSH2_CLIENT",
	"ZDOTDIR",
	"PROMPT_COMMAND",
	/* git: programs, configuration and repositories named by the environment */
	"GIT_SSH",
	"GIT_SSH_COMMAND",
	"GIT_SSH_VARIANT",
	"GIT_EXTERNAL_DIFF",
	"GIT_PAGER",
	"GIT_EDITOR",
	"GIT_SEQUENCE_EDITOR",
	"GIT_ASKPASS",
	"GIT_EXEC_PATH",
	"GIT_CONFIG",
	"GIT_CONFIG_PARAMETERS",
	"GIT_CONFIG_COUNT",
	"GIT_CONFIG_GLOBAL",
	"GIT_CONFIG_SYSTEM",
	"GIT_CONFIG_NOSYSTEM",
	"GIT_PROXY_COMMAND",
	"GIT_TEMPLATE_DIR",
	"GIT_DIR",
	"GIT_WORK_TREE",
	"GIT_COMMON_DIR",
	"GIT_INDEX_FILE",
	"GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES",
	"GIT_NAMESPACE",
	"GIT_CEILING_DIRECTORIES",
	"GIT_DISCOVERY_ACROSS_FILESYSTEM",
	"GIT_ALLOW_PROTOCOL",
	"GIT_PROTOCOL_FROM_USER",
	/* other programs' program and code variables */
	"SSH_ASKPASS",
	"PAGER",
	"MANPAGER",
	"EDITOR",
	"VISUAL",
	"BROWSER",
	"LESSOPEN",
	"LESSCLOSE",
	"LESSKEYIN",
	"TAR_OPTIONS",
	"RSYNC_RSH",
	"RSYNC_CONNECT_PROG",
	"PERL5OPT",
	"PERL5LIB",
	"PERLLIB",
	"PERL5DB",
	"PYTHONPATH",
	"PYTHONSTARTUP",
	"PYTHONHOME",
	"PYTHONINSPECT",
	"PYTHONUSERBASE",
	"NODE_OPTIONS",
	"NODE_PATH",
	"RUBYOPT",
	"RUBYLIB",
	"MAKEFLAGS",
	"MFLAGS",
	"GNUMAKEFLAGS",
	"MAKEFILES",
	"HOSTALIASES",
	"LOCPATH",
	"NLSPATH",
	"AWKPATH",
	"AWKLIBPATH",
};

int appr_env_is_scrubbed(const char *entry)
{
	size_t n = strcspn(entry, "=");
	for (size_t i = 0; i < ARRAY_SIZE(scrubbed_prefixes); i++)
		if (!strncmp(entry, scrubbed_prefixes[i], strlen(scrubbed_prefixes[i])))
			return 1;
	for (size_t i = 0; i < ARRAY_SIZE(scrubbed_names); i++)
		if (strlen(scrubbed_names[i]) == n && !strncmp(entry, scrubbed_names[i], n))
			return 1;
	return 0;
}

/* The run's environment: the caller's, minus what is scrubbed, with PATH set to path_env. */
static void run_environment(struct child *c, const char *path_env)
{
	c->inherit_env = 1;
	for (char **env = environ; env && *env; env++)
		if (appr_env_is_scrubbed(*env))
			strvec_push_nodup(&c->env, xstrndup(*env, strcspn(*env, "="))); /* unset */
	if (path_env)
		strvec_pushf(&c->env, "PATH=%s", path_env);
	/* git's editors and askpass would run what configuration the caller can write names: ":" is
	 * git's no-op editor, an empty GIT_ASKPASS stops the fallback to core.askPass and SSH_ASKPASS */
	strvec_push(&c->env, "GIT_EDITOR=:");
	strvec_push(&c->env, "GIT_SEQUENCE_EDITOR=:");
	strvec_push(&c->env, "GIT_ASKPASS=");
	strvec_push(&c->env, "GIT_TERMINAL_PROMPT=0");
}

int appr_exec_checked(const struct appr_analysis *a, struct err *e)
{
	if (a->top_fd < 0 || !a->top_id.valid)
		return err_set(e, E_INTERNAL, "the command was not opened when it was checked");
	struct appr_identity now;
	if (appr_identity_of_fd(a->top_fd, a->top_resolved, &now, e) < 0 ||
	    appr_identity_same(&a->top_id, &now, a->top_resolved, e) < 0)
		return -1;
	for (size_t i = 0; i < a->nexes; i++)
		if (!a->exes[i].direct && appr_identity_recheck_path(a->exes[i].path, &a->exes[i].id, e) < 0)
			return -1;
	return 0;
}

int appr_exec_run(const char *resolved, int exec_fd, const char *path_env, const char *const *argv, int timeout_ms,
		  struct appr_exec_result *r, struct err *e)
{
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->output, 0);
	_cleanup_child_ struct child c;
	child_init(&c);
	_cleanup_close_ int fd = -1;
	if (exec_fd >= 0) {
		fd = fcntl(exec_fd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return err_errno(e, errno, "dup the descriptor of %s", resolved);
		c.exec_fd = fd;
	}
	strvec_push(&c.args, resolved);
	for (size_t i = 1; argv[0] && argv[i]; i++)
		strvec_push(&c.args, argv[i]);
	run_environment(&c, path_env);
	c.stdin_io = CHILD_IO_NULL;
	c.stderr_io = CHILD_IO_STDOUT;
	c.new_process_group = 1;
	c.timeout_ms = timeout_ms;
	c.kill_grace_ms = 1000;
	c.before_exec = child_die_with_parent; /* `approvals exec` killed (e.g. with its node): the command too */
	if (child_run(&c, NULL, 0, &r->output, NULL, APPR_OUTPUT_MAX, e) < 0)
		return -1;
	if (c.out_dropped > 0)
		strbuf_addstr(&r->output, "\n... (truncated)");
	r->exit_code = child_exit_code(&c);
	r->timed_out = c.timed_out;
	r->success = child_exited_ok(&c);
	return 0;
}

void appr_exec_result_release(struct appr_exec_result *r)
{
	strbuf_release(&r->output);
}

size_t appr_utf8_sanitize(const char *s, size_t len, struct strbuf *out)
{
	size_t chars = 0;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_sequence_length((const unsigned char *)s + i, len - i);
		if (n == 0 || (n == 1 && s[i] == '\0')) {
			strbuf_addstr(out, "\xef\xbf\xbd");
			i++;
		} else {
			strbuf_add(out, s + i, n);
			i += n;
		}
		chars++;
	}
	return chars;
}

void appr_event_output(const char *s, size_t len, struct strbuf *out)
{
	struct strbuf clean = STRBUF_INIT;
	size_t chars = appr_utf8_sanitize(s, len, &clean);
	if (chars <= APPR_EVENT_OUTPUT_MAX) {
		strbuf_add(out, clean.buf, clean.len);
		strbuf_release(&clean);
		return;
	}
	size_t start = clean.len, kept = 0;
	while (kept < APPR_EVENT_OUTPUT_MAX) { /* walk back over whole characters */
		start--;
		if (((unsigned char)clean.buf[start] & 0xc0) != 0x80)
			kept++;
	}
	strbuf_addstr(out, "... (truncated) ");
	strbuf_add(out, clean.buf + start, clean.len - start);
	strbuf_release(&clean);
}
