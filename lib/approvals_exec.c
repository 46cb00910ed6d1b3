/* approvals_exec.c — running an approved command (approvals_exec.h) through lib/child.
 * Never uses a shell, never keeps more output than the caps allow. */
#include <string.h>

#include "approvals_exec.h"
#include "child.h"
#include "banned.h"

extern char **environ;

int appr_env_is_scrubbed(const char *entry)
{
	static const char *const prefixes[] = {"LD_", "BASH_FUNC_"};
	static const char *const names[] = {"GCONV_PATH", "GLIBC_TUNABLES", "BASH_ENV", "ENV",
					    "SHELLOPTS", "BASHOPTS", "PS4", "IFS"};
	size_t n = strcspn(entry, "=");
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(entry, prefixes[i], strlen(prefixes[i])))
			return 1;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strlen(names[i]) == n && !strncmp(entry, names[i], n))
			return 1;
	return 0;
}

int appr_exec_run(const char *resolved, const char *const *argv, int timeout_ms,
		  struct appr_exec_result *r, struct err *e)
{
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->output, 0);
	_cleanup_child_ struct child c;
	child_init(&c);
	strvec_push(&c.args, resolved);
	for (size_t i = 1; argv[0] && argv[i]; i++)
		strvec_push(&c.args, argv[i]);
	c.inherit_env = 1;
	for (char **env = environ; env && *env; env++)
		if (appr_env_is_scrubbed(*env))
			strvec_push_nodup(&c.env, xstrndup(*env, strcspn(*env, "="))); /* unset */
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

void appr_exec_result_release(struct appr_exec_result *r) { strbuf_release(&r->output); }

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
