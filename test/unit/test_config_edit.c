/* test_config_edit.c — unit tests of lib/config_edit's text editing: which bytes change, where new keys go.
 * Never touches a real config file: every case edits a string in memory. */
#include <string.h>

#include "config_edit.h"
#include "strbuf.h"
#include "unit.h"
#include "banned.h"

/* The text after setting key to value (rendered as `agor config set` would), or the error message. */
static char *edited(const char *text, const char *key, const char *value)
{
	struct strbuf out = STRBUF_INIT;
	struct err e = ERR_INIT;
	char *rendered = config_render_value(key, value);
	CHECK(rendered != NULL);
	char *result = config_text_set("c.yaml", text, strlen(text), key, rendered, &out, &e) == 0
			       ? strbuf_detach(&out, NULL)
			       : xstrdup(e.message);
	free(rendered);
	strbuf_release(&out);
	err_clear(&e);
	return result;
}

TEST(config_edit_replaces_only_the_value)
{
	_cleanup_free_ char *t = edited("a: 1 # x\ndaemon:\n  port: 4000  # the port\n  host: h\n", "daemon.port", "5");
	CHECK_STR(t, "a: 1 # x\ndaemon:\n  port: 5  # the port\n  host: h\n");
}

TEST(config_edit_fills_an_empty_value)
{
	_cleanup_free_ char *t = edited("daemon:\n  tls_cert:\n  port: 1\n", "daemon.tls_cert", "/c.pem");
	CHECK_STR(t, "daemon:\n  tls_cert: /c.pem\n  port: 1\n");
}

TEST(config_edit_inserts_under_its_section_with_the_siblings_indent)
{
	_cleanup_free_ char *t =
		edited("execution:\n    timeout_ms: 9000\n", "execution.executor_pool.max_executors", "3");
	CHECK_STR(t, "execution:\n    executor_pool:\n      max_executors: 3\n    timeout_ms: 9000\n");
}

TEST(config_edit_appends_a_missing_section_and_fixes_a_missing_newline)
{
	_cleanup_free_ char *t = edited("# only a comment\ndaemon:\n  port: 1", "agents.codex.model", "gpt");
	CHECK_STR(t, "# only a comment\ndaemon:\n  port: 1\nagents:\n  codex:\n    model: gpt\n");
}

TEST(config_edit_quotes_what_plain_yaml_would_misread)
{
	_cleanup_free_ char *a = edited("", "agents.codex.model", "x: #y \"z\"");
	CHECK_STR(a, "agents:\n  codex:\n    model: \"x: #y \\\"z\\\"\"\n");
	_cleanup_free_ char *b = edited("", "agents.codex.model", "true");
	CHECK_STR(b, "agents:\n  codex:\n    model: \"true\"\n");
	_cleanup_free_ char *c = edited("", "daemon.port", "3030");
	CHECK_STR(c, "daemon:\n  port: 3030\n");
}

TEST(config_edit_refuses_flow_sections_and_non_scalars)
{
	_cleanup_free_ char *a = edited("daemon: {port: 1}\n", "daemon.host", "h");
	CHECK_CONTAINS(a, "c.yaml:1: daemon.host: its section is written in flow style");
	_cleanup_free_ char *b = edited("daemon:\n  port:\n    - 1\n", "daemon.port", "2");
	CHECK_CONTAINS(b, "is a mapping or a sequence here");
	_cleanup_free_ char *c = edited("daemon: 3\n", "daemon.port", "2");
	CHECK_CONTAINS(c, "its section is not a mapping");
	_cleanup_free_ char *d = edited("a: b: c\n", "daemon.port", "2");
	CHECK_CONTAINS(d, "invalid YAML");
}
