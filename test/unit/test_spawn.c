/* test_spawn.c — the executor spawner (lib/spawn) driving the real agor binary ($AGOR_BIN): local and
 * template modes, quoting, result sizes, missing results, timeouts, secrecy of argv and environment. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>

#include "json.h"
#include "spawn.h"
#include "strbuf.h"
#include "unit.h"
#include "banned.h"

static const char *agor_bin(void)
{
	const char *bin = getenv("AGOR_BIN");
	return bin && *bin ? bin : "./agor";
}

static char *tmp_path(const char *name)
{
	return xasprintf("%s/%s", unit_tmpdir(), name);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, mode);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, text, strlen(text)), strlen(text));
	close(fd);
}

static char *read_file(const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	if (strbuf_read_file(&sb, path, 0) < 0)
		return NULL;
	return strbuf_detach(&sb, NULL);
}

static struct spawn_request dry_clone(const char *payload)
{
	return (struct spawn_request){ .mode = SPAWN_LOCAL,
				       .agor_path = agor_bin(),
				       .payload = payload,
				       .payload_len = strlen(payload),
				       .timeout_ms = 20000 };
}

TEST(spawn_local_runs_the_executor_and_parses_its_result)
{
	const char *payload = "{\"command\":\"git.clone\",\"params\":{\"url\":\"/nonexistent/o/r\"}}";
	char *cmd = xasprintf("%s/home", unit_tmpdir());
	setenv("HOME", cmd, 1);
	unsetenv("AGOR_HOME");
	struct spawn_request r = dry_clone(payload);
	char *dry = xasprintf("%.*s,\"dataHome\":\"%s/dh\"}", (int)strlen(payload) - 1, payload, unit_tmpdir());
	r.payload = dry;
	r.payload_len = strlen(dry);
	/* a real (non-dry) clone of a missing repository fails: the result is still one parsed line */
	struct spawn_result res;
	struct err e = ERR_INIT;
	CHECK_INT(spawn_executor(&r, &res, &e), 0);
	CHECK(json_is_false(json_object_get(res.result, "success")));
	CHECK_INT(res.exit_status, 1);
	spawn_result_release(&res);
	free(dry);
	free(cmd);
}

TEST(spawn_gives_the_executor_a_minimal_environment_and_no_secret_in_argv)
{
	char *wrapper = tmp_path("wrapper.sh");
	char *env_out = tmp_path("environ"), *argv_out = tmp_path("cmdline");
	char *script = xasprintf("#!/bin/sh\ntr '\\0' '\\n' < /proc/$$/environ > %s\n"
				 "tr '\\0' ' ' < /proc/$$/cmdline > %s\nexec %s \"$@\"\n",
				 env_out, argv_out, agor_bin());
	write_file(wrapper, script, 0755);
	setenv("AGOR_TEST_DAEMON_SECRET", "daemon-only", 1);
	const char *payload = "{\"command\":\"git.clone\",\"params\":{\"url\":\"https://h.example/o/r\"},"
			      "\"sessionToken\":\"SECRET-TOKEN-123\"}";
	struct spawn_request r = dry_clone(payload);
	r.agor_path = wrapper;
	struct spawn_result res;
	struct err e = ERR_INIT;
	CHECK_INT(spawn_executor(&r, &res, &e), 0);
	char *env = read_file(env_out), *argv = read_file(argv_out);
	CHECK(env && argv);
	CHECK(strstr(env, "daemon-only") == NULL);
	CHECK(strstr(env, "SECRET-TOKEN") == NULL);
	CHECK(strstr(argv, "SECRET-TOKEN") == NULL);
	CHECK_CONTAINS(argv, "executor --stdin");
	int lines = 0;
	for (char *p = env; *p; p++)
		lines += *p == '\n';
	CHECK_INT(lines, 4); /* PATH HOME LANG TERM */
	CHECK_CONTAINS(env, "PATH=");
	CHECK_CONTAINS(env, "LANG=");
	spawn_result_release(&res);
	free(env);
	free(argv);
	free(script);
	free(wrapper);
	free(env_out);
	free(argv_out);
}

TEST(spawn_template_quotes_every_substitution)
{
	const char *payload = "{\"command\":\"git.clone\",\"params\":{\"url\":\"https://h.example/o/r\","
			      "\"branch\":\"it's \\\"q\\\" $(touch pwned) `id` \\n ünïcødé ${HOME};|&\"}}";
	char *seen = tmp_path("seen.json"), *vars = tmp_path("vars");
	char *tmpl = xasprintf("printf '%%s' {payload_json} > %s; printf '%%s|%%s|%%s|%%s|%%s' {command} {task_id} "
			       "{unix_user} {unix_user_uid} {daemon_url} > %s; exec %s executor --stdin --dry-run",
			       seen, vars, agor_bin());
	struct spawn_request r = dry_clone(payload);
	r.mode = SPAWN_TEMPLATE;
	r.template = tmpl;
	r.unix_user = "root";
	r.command = "git.clone";
	r.task_id = "task 'one'";
	r.daemon_url = "http://127.0.0.1:3030/$(x)";
	struct spawn_result res;
	struct err e = ERR_INIT;
	CHECK_INT(chdir(unit_tmpdir()), 0);
	CHECK_INT(spawn_executor(&r, &res, &e), 0);
	if (e.message)
		fprintf(stderr, "%s\n", e.message);
	char *got = read_file(seen), *v = read_file(vars);
	CHECK_STR(got, payload);
	CHECK_STR(v, "git.clone|task 'one'|root|0|http://127.0.0.1:3030/$(x)");
	CHECK(json_is_true(json_object_get(res.result, "success")));
	CHECK(access("pwned", F_OK) != 0);
	spawn_result_release(&res);
	free(got);
	free(v);
	free(tmpl);
	free(seen);
	free(vars);
}

TEST(spawn_template_rejects_unknown_placeholders_and_unknown_users)
{
	struct spawn_request r = dry_clone("{}");
	r.mode = SPAWN_TEMPLATE;
	r.template = "run {payload} now";
	r.unix_user = "root";
	struct strbuf out = STRBUF_INIT;
	struct err e = ERR_INIT;
	CHECK_INT(spawn_render_template(&r, &out, &e), -1);
	CHECK_CONTAINS(e.message, "{payload}");
	err_clear(&e);
	r.template = "echo {unix_user_uid}";
	r.unix_user = "no-such-user-xyz";
	CHECK_INT(spawn_render_template(&r, &out, &e), -1);
	err_clear(&e);
	strbuf_reset(&out);
	r.template = "echo ${HOME} {unix_user} {a,b}";
	r.unix_user = "root";
	CHECK_INT(spawn_render_template(&r, &out, &e), 0);
	CHECK_STR(out.buf, "echo ${HOME} 'root' {a,b}");
	strbuf_release(&out);
}

TEST(spawn_reads_a_4_mib_result_whole)
{
	struct spawn_request r = dry_clone("{}");
	r.mode = SPAWN_TEMPLATE;
	r.unix_user = "root";
	r.template =
		"cat >/dev/null; printf '{\"success\":true,\"data\":{\"x\":\"'; head -c 4194304 /dev/zero | tr '\\0' a;"
		" printf '\"}}\\n'";
	struct spawn_result res;
	struct err e = ERR_INIT;
	CHECK_INT(spawn_executor(&r, &res, &e), 0);
	CHECK_INT(json_string_length(json_object_get(json_object_get(res.result, "data"), "x")), 4194304);
	spawn_result_release(&res);
}

TEST(spawn_maps_a_dead_or_garbled_executor_to_result_missing)
{
	struct spawn_request r = dry_clone("{}");
	r.mode = SPAWN_TEMPLATE;
	r.unix_user = "root";
	r.template = "echo 'boom: disk on fire' >&2; exit 3";
	struct spawn_result res;
	struct err e = ERR_INIT;
	CHECK_INT(spawn_executor(&r, &res, &e), -1);
	CHECK_STR(e.code, E_EXECUTOR_RESULT_MISSING);
	CHECK_INT(json_integer_value(json_object_get(e.details, "exitStatus")), 3);
	CHECK_CONTAINS(json_string_value(json_object_get(e.details, "stderrTail")), "disk on fire");
	spawn_result_release(&res);
	err_clear(&e);
	r.template = "echo 'not json'";
	CHECK_INT(spawn_executor(&r, &res, &e), -1);
	CHECK_STR(e.code, E_EXECUTOR_RESULT_MISSING);
	CHECK_CONTAINS(e.message, "malformed");
	spawn_result_release(&res);
	err_clear(&e);
	r.template = "kill -9 $$";
	CHECK_INT(spawn_executor(&r, &res, &e), -1);
	CHECK_INT(json_integer_value(json_object_get(e.details, "exitStatus")), 137);
	spawn_result_release(&res);
	err_clear(&e);
}

TEST(spawn_timeout_kills_the_whole_process_group)
{
	char *pidfile = tmp_path("bg.pid");
	char *tmpl = xasprintf("sleep 60 & echo $! > %s; trap '' TERM; sleep 60", pidfile);
	struct spawn_request r = dry_clone("{}");
	r.mode = SPAWN_TEMPLATE;
	r.unix_user = "root";
	r.template = tmpl;
	r.timeout_ms = 300;
	r.kill_grace_ms = 300;
	struct spawn_result res;
	struct err e = ERR_INIT;
	CHECK_INT(spawn_executor(&r, &res, &e), -1);
	CHECK_STR(e.code, E_TIMEOUT);
	CHECK(json_is_true(json_object_get(e.details, "timedOut")));
	char *pid = read_file(pidfile);
	CHECK(pid != NULL);
	usleep(100000);
	CHECK(pid && kill(atoi(pid), 0) != 0);
	spawn_result_release(&res);
	err_clear(&e);
	free(pid);
	free(tmpl);
	free(pidfile);
}

TEST(spawn_template_runs_an_executor_in_fresh_mount_and_network_namespaces)
{
	if (geteuid() != 0 || access("/usr/bin/unshare", X_OK) != 0)
		return; /* stands in for `kubectl run -i --rm … -- agor executor --stdin`; needs root */
	char *payload = xasprintf("{\"command\":\"git.clone\",\"params\":{\"url\":\"https://h.example/o/r\"},"
				  "\"dataHome\":\"%s/dh\"}",
				  unit_tmpdir());
	char *tmpl = xasprintf("exec /usr/bin/unshare --mount --net -- %s executor --stdin --dry-run", agor_bin());
	struct spawn_request r = dry_clone(payload);
	r.mode = SPAWN_TEMPLATE;
	r.unix_user = "root";
	r.template = tmpl;
	struct spawn_result res;
	struct err e = ERR_INIT;
	CHECK_INT(spawn_executor(&r, &res, &e), 0);
	CHECK(json_is_true(json_object_get(res.result, "success")));
	spawn_result_release(&res);
	free(payload);
	free(tmpl);
}
