/* test_exec_directive.c — unit tests of exec_directive.h: /exec and /elevated parsed into session exec defaults.
 * Never accepts a guess: every bad key and value must be refused with a message naming it. */
#include <stdlib.h>

#include "err.h"
#include "exec_directive.h"
#include "json.h"
#include "unit.h"
#include "banned.h"

/* The defaults text gives from current_json (NULL: none) as compact JSON, or the error message. */
static char *apply(const char *text, const char *current_json, int *rc)
{
	json_t *current = current_json ? json_loads(current_json, 0, NULL) : NULL, *next = NULL;
	struct err e = ERR_INIT;
	*rc = exec_directive_apply(text, current, &next, &e);
	char *out = *rc > 0 ? json_dumps(next, JSON_COMPACT | JSON_SORT_KEYS) : xstrdup(e.message ? e.message : "");
	json_decref(next);
	json_decref(current);
	err_clear(&e);
	return out;
}

static void check(const char *text, const char *current, int want_rc, const char *want)
{
	int rc;
	char *got = apply(text, current, &rc);
	CHECK_INT(rc, want_rc);
	if (want_rc > 0)
		CHECK_STR(got, want);
	else if (want_rc < 0)
		CHECK_CONTAINS(got, want);
	free(got);
}

TEST(exec_directive_not_a_directive)
{
	check("fix the tests", NULL, 0, NULL);
	check("/execute now", NULL, 0, NULL);
	check("please /exec host=gateway", NULL, 0, NULL);
}

TEST(exec_directive_sets_keys)
{
	check("/exec host=gateway security=full ask=always", NULL, 1,
	      "{\"ask\":\"always\",\"host\":\"gateway\",\"security\":\"full\"}");
	check("  /exec node=build-box", NULL, 1, "{\"host\":\"node\",\"node\":\"build-box\"}");
	check("/exec", "{\"host\":\"gateway\"}", 1, "{\"host\":\"gateway\"}");
	check("/exec reset", "{\"host\":\"gateway\"}", 1, "{}");
	check("/exec host=sandbox", "{\"host\":\"node\",\"node\":\"x\",\"security\":\"full\"}", 1,
	      "{\"host\":\"sandbox\"}");
	check("/exec host=gateway", "{\"host\":\"node\",\"node\":\"x\"}", 1, "{\"host\":\"gateway\"}");
}

TEST(exec_directive_refuses_bad_words)
{
	check("/exec host=moon", NULL, -1, "host=moon: expected one of sandbox|gateway|node");
	check("/exec security=max host=gateway", NULL, -1, "security=max: expected one of deny|allowlist|full");
	check("/exec host=gateway ask=sometimes", NULL, -1, "ask=sometimes: expected one of off|on-miss|always");
	check("/exec colour=red", NULL, -1, "unknown key \"colour\"");
	check("/exec gateway", NULL, -1, "expected KEY=VALUE");
	check("/exec =x", NULL, -1, "expected KEY=VALUE");
	check("/exec security=full", NULL, -1, "add host=gateway or host=node");
	check("/elevated", NULL, -1, "/elevated: expected on or off");
	check("/elevated on now", NULL, -1, "/elevated: expected on or off");
}

TEST(exec_directive_elevated)
{
	check("/elevated on", "{\"ask\":\"always\"}", 1,
	      "{\"ask\":\"always\",\"elevated\":true,\"host\":\"gateway\",\"security\":\"full\"}");
	check("/elevated off", "{\"ask\":\"always\",\"elevated\":true,\"host\":\"gateway\",\"security\":\"full\"}", 1,
	      "{\"ask\":\"always\"}");
}
