/* test_config.c — unit tests of lib/config (types, precedence, error forms) and lib/paths.
 * Never reads the real environment or ~/.agor: each load gets its own env and HOME. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adminconf.h"
#include "config.h"
#include "execrun.h"
#include "json.h"
#include "paths.h"
#include "strbuf.h"
#include "strvec.h"
#include "unit.h"
#include "yaml_depth.h"
#include "banned.h"

/* ---- helpers --------------------------------------------------------------------------- */

static char *home_dir(void)
{
	return xasprintf("%s/home", unit_tmpdir());
}

/* <tmp>/home/.agor/config.yaml, the default file under the scratch HOME. */
static char *default_config_path(void)
{
	return xasprintf("%s/home/.agor/config.yaml", unit_tmpdir());
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	_cleanup_free_ char *dir = xstrdup(path);
	*strrchr(dir, '/') = '\0';
	_cleanup_free_ char *parent = xstrdup(dir);
	*strrchr(parent, '/') = '\0';
	mkdir(parent, 0700);
	mkdir(dir, 0700);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, text, strlen(text)), strlen(text));
	close(fd);
	CHECK_INT(chmod(path, mode), 0);
}

/* Writes yaml (unless NULL) to the default config path, then loads with HOME=<tmp>/home plus
 * extra "NAME=value" strings (NULL-terminated, may be NULL). */
static int load_env(struct config *cfg, const char *yaml, const char *const *extra, struct err *e)
{
	_cleanup_free_ char *home = home_dir();
	mkdir(home, 0700);
	if (yaml) {
		_cleanup_free_ char *path = default_config_path();
		write_file(path, yaml, 0600);
	}
	struct strvec env = STRVEC_INIT;
	strvec_pushf(&env, "HOME=%s", home);
	if (extra)
		strvec_pushv(&env, extra);
	int rc = config_load(cfg, &(struct config_overrides){ .env = env.v }, e);
	strvec_clear(&env);
	return rc;
}

static int load(struct config *cfg, const char *yaml, struct err *e)
{
	return load_env(cfg, yaml, NULL, e);
}

/* The error message of loading yaml, with the scratch file path replaced by "F". */
static char *load_error(const char *yaml)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg, yaml, &e), -1);
	CHECK_STR(e.code, E_CONFIG);
	_cleanup_free_ char *path = default_config_path();
	struct strbuf sb = STRBUF_INIT;
	const char *m = e.message ? e.message : "(no message)";
	const char *at = strstr(m, path);
	if (at) {
		strbuf_add(&sb, m, (size_t)(at - m));
		strbuf_addstr(&sb, "F");
		strbuf_addstr(&sb, at + strlen(path));
	} else {
		strbuf_addstr(&sb, m);
	}
	err_clear(&e);
	config_free(cfg);
	return strbuf_detach(&sb, NULL);
}

#define CHECK_LOAD_ERROR(yaml, expected)                                                                               \
	do {                                                                                                           \
		char *_msg = load_error(yaml);                                                                         \
		CHECK_STR(_msg, expected);                                                                             \
		free(_msg);                                                                                            \
	} while (0)

#define CHECK_LOAD_ERROR_PREFIX(yaml, prefix)                                                                          \
	do {                                                                                                           \
		char *_msg = load_error(yaml);                                                                         \
		if (strncmp(_msg, prefix, strlen(prefix)))                                                             \
			unit_fail(__FILE__, __LINE__, "\"%s\" does not start with \"%s\"", _msg, prefix);              \
		free(_msg);                                                                                            \
	} while (0)

static struct config_entry entry(const struct config *cfg, const char *key)
{
	struct config_entry en = { 0 };
	CHECK_INT(config_entry_get(cfg, key, &en), 0);
	return en;
}

/* ---- defaults and file values ---------------------------------------------------------- */

TEST(config_defaults_without_a_file)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg, NULL, &e), 0);
	_cleanup_free_ char *home = xasprintf("%s/home/.agor", unit_tmpdir());
	_cleanup_free_ char *path = default_config_path();
	_cleanup_free_ char *sock = xasprintf("%s/run/agor.sock", home);
	_cleanup_free_ char *repos = xasprintf("%s/repos", home);
	_cleanup_free_ char *wt = xasprintf("%s/worktrees", home);
	_cleanup_free_ char *zj = xasprintf("%s/zellij", home);
	CHECK_STR(cfg->config_file, path);
	CHECK(!cfg->config_file_found);
	CHECK_STR(cfg->paths.agor_home, home);
	CHECK_STR(cfg->paths.data_home, home);
	CHECK_STR(cfg->paths.repos_dir, repos);
	CHECK_STR(cfg->paths.worktrees_dir, wt);
	CHECK_STR(cfg->paths.zellij_dir, zj);
	CHECK_STR(cfg->daemon.host, "127.0.0.1");
	CHECK_INT(cfg->daemon.port, 3030);
	CHECK_STR(cfg->daemon.unix_user, "agor");
	CHECK_STR(cfg->daemon.socket_path, sock);
	CHECK_INT(cfg->execution.unix_user_mode, CONFIG_MODE_SIMPLE);
	CHECK_STR(cfg->execution.executor_unix_user, "agor_executor");
	CHECK(cfg->execution.executor_command_template == NULL);
	CHECK(!cfg->execution.worktree_rbac);
	CHECK(!cfg->execution.fallback_to_unified);
	CHECK_INT(cfg->execution.executor_pool.max_executors, 10);
	CHECK_INT(cfg->execution.executor_pool.idle_timeout_ms, 60000);
	CHECK_INT(cfg->execution.session_tokens.expiration_ms, 86400000);
	CHECK_INT(cfg->execution.timeout_ms, 300000);
	for (size_t i = 0; i < config_count(); i++) {
		struct config_entry en;
		CHECK_INT(config_entry_at(cfg, i, &en), 0);
		CHECK_INT(en.source, CONFIG_SOURCE_DEFAULT);
		CHECK_INT(en.line, 0);
		CHECK(en.file == NULL);
	}
	struct config_entry en;
	CHECK_INT(config_entry_at(cfg, config_count(), &en), -1);
	CHECK_INT(config_entry_get(cfg, "daemon", &en), -1);
	config_free(cfg);
}

TEST(config_file_values_carry_source_and_line)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg,
		       "# agor\n"
		       "daemon:\n"
		       "  port: 4000\n"
		       "\n"
		       "execution:\n"
		       "  unix_user_mode: insulated\n"
		       "  fallback_to_unified: true\n"
		       "  executor_pool: {max_executors: 3, idle_timeout_ms: 0}\n"
		       "  session_tokens:\n"
		       "    expiration_ms: 60000\n",
		       &e),
		  0);
	CHECK(e.message == NULL);
	CHECK(cfg->config_file_found);
	CHECK_INT(cfg->daemon.port, 4000);
	CHECK_INT(cfg->execution.unix_user_mode, CONFIG_MODE_INSULATED);
	CHECK(cfg->execution.fallback_to_unified);
	CHECK_INT(cfg->execution.executor_pool.max_executors, 3);
	CHECK_INT(cfg->execution.executor_pool.idle_timeout_ms, 0);
	CHECK_INT(cfg->execution.session_tokens.expiration_ms, 60000);
	struct config_entry en = entry(cfg, "daemon.port");
	CHECK_INT(en.source, CONFIG_SOURCE_FILE);
	CHECK_INT(en.line, 3);
	CHECK_STR(en.file, cfg->config_file);
	CHECK_STR(en.value, "4000");
	CHECK_INT(entry(cfg, "execution.executor_pool.idle_timeout_ms").line, 8);
	CHECK_INT(entry(cfg, "execution.session_tokens.expiration_ms").line, 10);
	CHECK_INT(entry(cfg, "daemon.host").source, CONFIG_SOURCE_DEFAULT);
	CHECK_STR(config_str(cfg, "execution.unix_user_mode"), "insulated");
	CHECK_INT(config_int(cfg, "daemon.port"), 4000);
	CHECK(config_bool(cfg, "execution.fallback_to_unified"));
	config_free(cfg);
}

TEST(config_empty_file_comments_and_null_sections_are_fine)
{
	const char *const ok[] = { "",	  "# nothing\n",  "daemon:\n# port: 1\nexecution:\n", "---\n",
				   "~\n", "daemon: {}\n", "execution:\n  executor_pool:\n" };
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		struct config *cfg = config_new();
		struct err e = ERR_INIT;
		if (load(cfg, ok[i], &e) < 0)
			unit_fail(__FILE__, __LINE__, "\"%s\": %s", ok[i], e.message);
		CHECK(cfg->config_file_found);
		CHECK_INT(cfg->daemon.port, 3030);
		err_clear(&e);
		config_free(cfg);
	}
}

/* ---- types ----------------------------------------------------------------------------- */

/* Sets key by flag on a fresh config; returns the canonical value, or the error message. */
static char *flag_result(const char *key, const char *value)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	char *out;
	if (config_set_flag(cfg, key, value, &e) < 0) {
		out = xasprintf("error: %s", e.message);
	} else {
		CHECK_INT(load(cfg, NULL, &e), 0);
		struct config_entry en = entry(cfg, key);
		CHECK_INT(en.source, CONFIG_SOURCE_FLAG);
		out = xstrdup(en.value ? en.value : "(null)");
	}
	err_clear(&e);
	config_free(cfg);
	return out;
}

#define CHECK_FLAG(key, value, expected)                                                                               \
	do {                                                                                                           \
		char *_r = flag_result(key, value);                                                                    \
		CHECK_STR(_r, expected);                                                                               \
		free(_r);                                                                                              \
	} while (0)

TEST(config_integers_parse_in_range_and_reject_the_rest)
{
	CHECK_FLAG("daemon.port", "1", "1");
	CHECK_FLAG("daemon.port", "65535", "65535");
	CHECK_FLAG("daemon.port", "+80", "80");
	CHECK_FLAG("daemon.port", "0080", "error: daemon.port: expected an integer 0..65535, got \"0080\"");
	CHECK_FLAG("execution.executor_pool.idle_timeout_ms", "-0", "0");
	CHECK_FLAG("daemon.port", "0", "0"); /* 0: any free port */
	CHECK_FLAG("daemon.port", "70000", "error: daemon.port: expected an integer 0..65535, got \"70000\"");
	CHECK_FLAG("daemon.port", "-1", "error: daemon.port: expected an integer 0..65535, got \"-1\"");
	CHECK_FLAG("daemon.port", "abc", "error: daemon.port: expected an integer 0..65535, got \"abc\"");
	CHECK_FLAG("daemon.port", "0x10", "error: daemon.port: expected an integer 0..65535, got \"0x10\"");
	CHECK_FLAG("daemon.port", "30 30", "error: daemon.port: expected an integer 0..65535, got \"30 30\"");
	CHECK_FLAG("daemon.port", "", "error: daemon.port: expected an integer 0..65535, got \"\"");
	CHECK_FLAG("daemon.port", "99999999999999999999999",
		   "error: daemon.port: expected an integer 0..65535, got "
		   "\"99999999999999999999999\"");
	CHECK_FLAG("execution.session_tokens.expiration_ms", "2592000000", "2592000000");
	CHECK_FLAG("execution.executor_pool.idle_timeout_ms", "0", "0");
	CHECK_FLAG("execution.executor_pool.max_executors", "1025",
		   "error: execution.executor_pool.max_executors: expected an integer 1..1024, got "
		   "\"1025\"");
}

TEST(config_booleans_are_exactly_true_or_false)
{
	CHECK_FLAG("execution.fallback_to_unified", "true", "true");
	CHECK_FLAG("execution.fallback_to_unified", "false", "false");
	const char *const bad[] = { "True", "yes", "1", "on", "" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *r = flag_result("execution.fallback_to_unified", bad[i]);
		CHECK_CONTAINS(r, "error: execution.fallback_to_unified: expected true or false, got \"");
		free(r);
	}
	CHECK_LOAD_ERROR("execution:\n  worktree_rbac: yes\n",
			 "F:2: execution.worktree_rbac: expected true or false, got \"yes\"");
	CHECK_LOAD_ERROR("execution:\n  worktree_rbac: \"true\"\n",
			 "F:2: execution.worktree_rbac: expected true or false, got the quoted "
			 "string \"true\" "
			 "(write it without quotes)");
}

TEST(config_enums_accept_only_their_words)
{
	CHECK_FLAG("execution.unix_user_mode", "strict", "strict");
	CHECK_FLAG("execution.unix_user_mode", "Strict",
		   "error: execution.unix_user_mode: expected one of simple|insulated|strict|sandbox, got "
		   "\"Strict\"");
	CHECK_LOAD_ERROR("execution:\n  unix_user_mode: paranoid\n",
			 "F:2: execution.unix_user_mode: expected one of simple|insulated|strict|sandbox, "
			 "got \"paranoid\"");
	CHECK_LOAD_ERROR("execution:\n  unix_user_mode:\n",
			 "F:2: execution.unix_user_mode: expected one of simple|insulated|strict|sandbox, got null");
}

TEST(config_strings_and_user_names)
{
	CHECK_FLAG("daemon.host", "::1", "::1");
	CHECK_FLAG("daemon.host", "agor.example.com", "agor.example.com");
	CHECK_FLAG("daemon.host", "a b", "error: daemon.host: expected a host name or IP address, got \"a b\"");
	CHECK_FLAG("daemon.host", "", "error: daemon.host: expected a non-empty string, got \"\"");
	CHECK_FLAG("daemon.host", "x\ny", "error: daemon.host: expected a non-empty string, got \"x\\x0ay\"");
	CHECK_FLAG("daemon.unix_user", "_agor-1", "_agor-1");
	CHECK_FLAG("execution.executor_unix_user", "Bob",
		   "error: execution.executor_unix_user: expected a user name matching "
		   "^[a-z_][a-z0-9_-]{0,31}$, "
		   "got \"Bob\"");
	CHECK_FLAG("daemon.unix_user", "a234567890123456789012345678901234",
		   "error: daemon.unix_user: expected a user name matching "
		   "^[a-z_][a-z0-9_-]{0,31}$, got "
		   "\"a234567890123456789012345678901234\"");
	CHECK_FLAG("daemon.host", "\xff", "error: daemon.host: the value is not valid UTF-8");
	/* what jansson refuses: an overlong form, a surrogate, past U+10FFFF, a cut sequence */
	CHECK_FLAG("execution.terminal_shell", "/bin/\xc0\xafsh",
		   "error: execution.terminal_shell: the value is not valid UTF-8");
	CHECK_FLAG("execution.terminal_shell", "/bin/\xed\xa0\x80",
		   "error: execution.terminal_shell: the value is not valid UTF-8");
	CHECK_FLAG("execution.terminal_shell", "/bin/\xf4\x90\x80\x80",
		   "error: execution.terminal_shell: the value is not valid UTF-8");
	CHECK_FLAG("execution.terminal_shell", "/bin/\xe2\x82",
		   "error: execution.terminal_shell: the value is not valid UTF-8");
	CHECK_FLAG("execution.terminal_shell", "/bin/\xf0\x9f\x90\x9a", "/bin/\xf0\x9f\x90\x9a");
	/* messages stay UTF-8: a long value is cut between characters, stray bytes are escaped */
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(config_set_flag(cfg, "no\xffkey", "1", &e), -1);
	CHECK_STR(e.message, "unknown setting \"no\\xffkey\" (see 'agor config show' for every key)");
	struct strbuf long_value = STRBUF_INIT;
	strbuf_addch(&long_value, 'x');
	for (int i = 0; i < 60; i++)
		strbuf_addstr(&long_value, "é");
	CHECK_INT(config_set_flag(cfg, "daemon.port", long_value.buf, &e), -1);
	json_t *j = err_to_json(&e);
	CHECK(json_string_value(json_object_get(j, "message")) != NULL);
	CHECK_CONTAINS(e.message, "é…\"");
	json_decref(j);
	strbuf_release(&long_value);
	err_clear(&e);
	config_free(cfg);
	CHECK_LOAD_ERROR("daemon:\n  host:\n", "F:2: daemon.host: expected a non-empty string, got null");
	CHECK_LOAD_ERROR("daemon:\n  host: \"a\\0b\"\n", "F:2: daemon.host: the value contains a NUL byte");
}

TEST(config_nullable_strings_take_null_forms)
{
	const char *const nulls[] = { "null", "~", "", "Null", "NULL" };
	for (size_t i = 0; i < ARRAY_SIZE(nulls); i++) {
		struct config *cfg = config_new();
		struct err e = ERR_INIT;
		_cleanup_free_ char *yaml = xasprintf("execution:\n  executor_command_template: %s\n", nulls[i]);
		CHECK_INT(load(cfg, yaml, &e), 0);
		CHECK(cfg->execution.executor_command_template == NULL);
		CHECK_INT(entry(cfg, "execution.executor_command_template").source, CONFIG_SOURCE_FILE);
		config_free(cfg);
	}
	/* "null" in quotes is a string (and here a command line). */
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg, "execution:\n  executor_command_template: \"null\"\n", &e), 0);
	CHECK_STR(cfg->execution.executor_command_template, "null");
	config_free(cfg);
	/* From a flag, the empty string is null. */
	CHECK_FLAG("execution.executor_command_template", "", "(null)");
}

TEST(config_paths_expand_tilde_and_refuse_relative)
{
	_cleanup_free_ char *home = home_dir();
	_cleanup_free_ char *want = xasprintf("%s/data", home);
	setenv("HOME", home, 1); /* flags are expanded with the process environment */
	CHECK_FLAG("paths.data_home", "~/data", want);
	CHECK_FLAG("paths.data_home", "~", home);
	CHECK_FLAG("paths.data_home", "/srv/agor//", "/srv/agor");
	CHECK_FLAG("paths.data_home", "/", "/");
	CHECK_FLAG("paths.data_home", "data",
		   "error: paths.data_home: expected an absolute path (or ~/…), got \"data\"");
	CHECK_FLAG("paths.data_home", "~bob/data",
		   "error: paths.data_home: expected an absolute path (or ~/…), got \"~bob/data\"");
	CHECK_FLAG("paths.data_home", "./x", "error: paths.data_home: expected an absolute path (or ~/…), got \"./x\"");
	CHECK_LOAD_ERROR("paths:\n  repos_dir: repos\n",
			 "F:2: paths.repos_dir: expected an absolute path (or ~/…), got \"repos\"");

	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg, "paths:\n  worktrees_dir: ~/wt\n", &e), 0);
	_cleanup_free_ char *wt = xasprintf("%s/wt", home);
	CHECK_STR(cfg->paths.worktrees_dir, wt);
	config_free(cfg);

	/* Without HOME, ~ is the passwd entry's home. */
	cfg = config_new();
	unsetenv("HOME");
	char *env[] = { NULL };
	CHECK_INT(config_load(cfg, &(struct config_overrides){ .env = env }, &e), 0);
	CHECK(cfg->paths.agor_home[0] == '/');
	CHECK(strstr(cfg->paths.agor_home, "/.agor") != NULL);
	config_free(cfg);
}

/* ---- precedence ------------------------------------------------------------------------ */

TEST(config_precedence_flag_env_file_default)
{
	const char *yaml = "daemon:\n  port: 4000\n  host: 10.0.0.1\npaths:\n  data_home: /file/data\n";
	const char *const env[] = { "AGOR_DAEMON_PORT=5000", "AGOR_DATA_HOME=/env/data", NULL };

	/* file > default */
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg, yaml, &e), 0);
	CHECK_INT(cfg->daemon.port, 4000);
	CHECK_STR(cfg->paths.data_home, "/file/data");
	config_free(cfg);

	/* env > file */
	cfg = config_new();
	CHECK_INT(load_env(cfg, yaml, env, &e), 0);
	CHECK_INT(cfg->daemon.port, 5000);
	CHECK_INT(entry(cfg, "daemon.port").source, CONFIG_SOURCE_ENV);
	CHECK_STR(entry(cfg, "daemon.port").env, "AGOR_DAEMON_PORT");
	CHECK_STR(cfg->daemon.host, "10.0.0.1");
	CHECK_STR(cfg->paths.data_home, "/env/data");
	config_free(cfg);

	/* flag > env, set before or after the load */
	cfg = config_new();
	CHECK_INT(config_set_flag(cfg, "daemon.port", "6000", &e), 0);
	CHECK_INT(load_env(cfg, yaml, env, &e), 0);
	CHECK_INT(cfg->daemon.port, 6000);
	CHECK_INT(entry(cfg, "daemon.port").source, CONFIG_SOURCE_FLAG);
	CHECK_INT(config_set_flag_assignment(cfg, "daemon.host=0.0.0.0", &e), 0);
	CHECK_STR(cfg->daemon.host, "0.0.0.0");
	CHECK_INT(config_set_flag(cfg, "paths.data_home", "/flag/data", &e), 0);
	CHECK_STR(cfg->paths.data_home, "/flag/data");
	CHECK_STR(cfg->paths.repos_dir, "/flag/data/repos");
	config_free(cfg);

	/* an empty variable counts as unset */
	cfg = config_new();
	const char *const empty[] = { "AGOR_DAEMON_PORT=", NULL };
	CHECK_INT(load_env(cfg, yaml, empty, &e), 0);
	CHECK_INT(cfg->daemon.port, 4000);
	config_free(cfg);
}

TEST(config_reload_keeps_flags_and_forgets_old_file_values)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(config_set_flag(cfg, "daemon.host", "::1", &e), 0);
	CHECK_INT(load(cfg, "daemon:\n  port: 4000\n  host: 10.0.0.1\n", &e), 0);
	CHECK_INT(cfg->daemon.port, 4000);
	CHECK_INT(load(cfg, "daemon:\n  unix_user: other\n", &e), 0);
	CHECK_INT(cfg->daemon.port, 3030);
	CHECK_STR(cfg->daemon.host, "::1");
	CHECK_STR(cfg->daemon.unix_user, "other");
	config_free(cfg);
}

TEST(config_derived_defaults_follow_their_base)
{
	/* AGOR_DATA_HOME moves repos/worktrees/zellij, not what the file sets explicitly. */
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	const char *const env[] = { "AGOR_DATA_HOME=/data", NULL };
	CHECK_INT(load_env(cfg, "paths:\n  worktrees_dir: /wt\n", env, &e), 0);
	CHECK_STR(cfg->paths.repos_dir, "/data/repos");
	CHECK_STR(cfg->paths.zellij_dir, "/data/zellij");
	CHECK_STR(cfg->paths.worktrees_dir, "/wt");
	CHECK_INT(entry(cfg, "paths.repos_dir").source, CONFIG_SOURCE_DEFAULT);
	config_free(cfg);

	/* AGOR_HOME moves data_home, socket_path and where config.yaml is looked for. */
	cfg = config_new();
	_cleanup_free_ char *ahome = xasprintf("%s/elsewhere", unit_tmpdir());
	_cleanup_free_ char *ahome_env = xasprintf("AGOR_HOME=%s", ahome);
	_cleanup_free_ char *cfile = xasprintf("%s/config.yaml", ahome);
	write_file(cfile, "daemon:\n  port: 4444\n", 0600);
	const char *const env2[] = { ahome_env, NULL };
	CHECK_INT(load_env(cfg, NULL, env2, &e), 0);
	CHECK_STR(cfg->config_file, cfile);
	CHECK_INT(cfg->daemon.port, 4444);
	CHECK_STR(cfg->paths.data_home, ahome);
	_cleanup_free_ char *sock = xasprintf("%s/run/agor.sock", ahome);
	CHECK_STR(cfg->daemon.socket_path, sock);
	config_free(cfg);

	/* paths.agor_home set in the file moves the socket, not the file already read */
	cfg = config_new();
	CHECK_INT(load(cfg, "paths:\n  agor_home: /srv/agor\n", &e), 0);
	CHECK_STR(cfg->daemon.socket_path, "/srv/agor/run/agor.sock");
	CHECK_STR(cfg->paths.repos_dir, "/srv/agor/repos");
	_cleanup_free_ char *def = default_config_path();
	CHECK_STR(cfg->config_file, def);
	config_free(cfg);
}

TEST(config_worktree_rbac_follows_strict_mode)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg, "execution:\n  unix_user_mode: strict\n", &e), 0);
	CHECK(cfg->execution.worktree_rbac);
	CHECK_INT(cfg->execution.unix_user_mode, CONFIG_MODE_STRICT);
	CHECK_STR(config_user_mode_name(cfg->execution.unix_user_mode), "strict");
	config_free(cfg);
	CHECK_LOAD_ERROR("execution:\n  unix_user_mode: strict\n  worktree_rbac: false\n",
			 "F:3: execution.worktree_rbac: must be true when execution.unix_user_mode "
			 "is strict (docs/modes.md)");
}

/* ---- error forms ----------------------------------------------------------------------- */

/* The daemon's limits and origins (docs/security.md section 9), after tls_key in the table. */
#define DAEMON_LIMIT_KEYS                                                                                              \
	", allowed_origins, max_connections, max_connections_per_ip, max_unauthenticated, auth_timeout_ms, "           \
	"fd_reserve, audit_refusals_window_ms, audit_refusals_max, wal_max_mb, db_size_alarm_mb, "                     \
	"node_pair_per_minute, node_pair_pending_per_ip"

TEST(config_unknown_keys_name_the_known_ones)
{
	CHECK_LOAD_ERROR("daemon:\n  port: 1\n  prot: 2\n",
			 "F:3: daemon.prot: unknown key (known: host, port, unix_user, socket_path, tls_cert, "
			 "tls_key" DAEMON_LIMIT_KEYS ")");
	CHECK_LOAD_ERROR("demon:\n  port: 1\n", "F:1: demon: unknown key (known: paths, daemon, execution, agents)");
	CHECK_LOAD_ERROR("execution:\n  executor_pool:\n    max: 1\n",
			 "F:3: execution.executor_pool.max: unknown key (known: max_executors, "
			 "idle_timeout_ms)");
	CHECK_LOAD_ERROR(
		"execution:\n  nope: 1\n",
		"F:2: execution.nope: unknown key (known: unix_user_mode, executor_unix_user, "
		"executor_command_template, privileged_socket, executor_daemon_url, executor_daemon_ca_file, "
		"executor_daemon_fingerprint, executor_heartbeat_ms, worktree_rbac, fallback_to_unified, "
		"executor_pool, "
		"session_tokens, terminal_shell, git, timeout_ms, permission_timeout_ms, exec_env_allow, sandbox)");
	CHECK_LOAD_ERROR("daemon.port: 1\n", "F:1: daemon.port: unknown key (known: paths, daemon, execution, agents)");
	CHECK_LOAD_ERROR("daemon:\n  <<: {port: 1}\n", "F:2: daemon.<<: unknown key (known: host, port, unix_user, "
						       "socket_path, tls_cert, tls_key" DAEMON_LIMIT_KEYS ")");
}

TEST(config_wrong_shapes_are_errors)
{
	CHECK_LOAD_ERROR("daemon: 3030\n",
			 "F:1: daemon: expected a mapping (keys: host, port, "
			 "unix_user, socket_path, tls_cert, tls_key" DAEMON_LIMIT_KEYS "), got a scalar");
	CHECK_LOAD_ERROR("daemon:\n  - port\n",
			 "F:2: daemon: expected a mapping (keys: host, "
			 "port, unix_user, socket_path, tls_cert, tls_key" DAEMON_LIMIT_KEYS "), got a list");
	CHECK_LOAD_ERROR("daemon:\n  port:\n    x: 1\n",
			 "F:3: daemon.port: expected an integer 0..65535, got a mapping");
	CHECK_LOAD_ERROR("daemon:\n  host: [a, b]\n", "F:2: daemon.host: expected a non-empty string, got a list");
	CHECK_LOAD_ERROR("- a\n- b\n", "F:1: expected a mapping of settings (paths, daemon, "
				       "execution, agents) at the top level, got a list");
	CHECK_LOAD_ERROR("just text\n", "F:1: expected a mapping of settings (paths, daemon, "
					"execution, agents) at the top level, got a scalar");
	CHECK_LOAD_ERROR("daemon:\n  ? [a]\n  : 1\n", "F:2: daemon: expected a key name, got a list");
	CHECK_LOAD_ERROR("daemon:\n  port: abc\n", "F:2: daemon.port: expected an integer 0..65535, got \"abc\"");
	CHECK_LOAD_ERROR("daemon:\n  port: 70000\n", "F:2: daemon.port: expected an integer 0..65535, got \"70000\"");
	CHECK_LOAD_ERROR("daemon:\n  port: \"3030\"\n",
			 "F:2: daemon.port: expected an integer 0..65535, got the quoted string \"3030\" "
			 "(write it without quotes)");
}

TEST(config_duplicate_keys_and_documents_are_errors)
{
	CHECK_LOAD_ERROR("daemon:\n  port: 1\n  host: h\n  port: 2\n",
			 "F:4: daemon.port: duplicate key (first on line 2)");
	CHECK_LOAD_ERROR("daemon:\n  port: 1\nexecution: {}\ndaemon:\n  host: h\n",
			 "F:4: daemon: duplicate key (first on line 1)");
	CHECK_LOAD_ERROR("daemon: {port: 1}\n---\ndaemon: {port: 2}\n", "F:2: only one YAML document is allowed");
}

TEST(config_yaml_syntax_errors_have_the_parser_line)
{
	CHECK_LOAD_ERROR("daemon:\n  port: [1\n  host: x\n",
			 "F:3: invalid YAML: did not find expected ',' or ']' (while parsing a "
			 "flow sequence that "
			 "starts on line 2)");
	CHECK_LOAD_ERROR_PREFIX("daemon:\n  port: 1\n   host: x\n", "F:3: invalid YAML: ");
	CHECK_LOAD_ERROR_PREFIX("daemon:\n  port: 1\nexecution: *nope\n", "F:3: invalid YAML: found undefined alias");
	CHECK_LOAD_ERROR("daemon:\n  host: \xff\n", "F:2: invalid YAML: invalid leading UTF-8 octet");
	/* an error after a valid first document is still found */
	CHECK_LOAD_ERROR_PREFIX("daemon: {}\n---\n  a: [\n", "F:");
}

TEST(config_environment_values_are_validated)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	const char *const port[] = { "AGOR_DAEMON_PORT=abc", NULL };
	CHECK_INT(load_env(cfg, NULL, port, &e), -1);
	CHECK_STR(e.message, "AGOR_DAEMON_PORT: daemon.port: expected an integer 0..65535, got \"abc\"");
	const char *const home[] = { "AGOR_HOME=relative", NULL };
	CHECK_INT(load_env(cfg, NULL, home, &e), -1);
	CHECK_STR(e.message, "AGOR_HOME: paths.agor_home: expected an absolute path (or ~/…), got \"relative\"");
	const char *const host[] = { "AGOR_DAEMON_HOST=a;b", NULL };
	CHECK_INT(load_env(cfg, NULL, host, &e), -1);
	CHECK_STR(e.message, "AGOR_DAEMON_HOST: daemon.host: expected a host name or IP address, got \"a;b\"");
	const char *const cpath[] = { "AGOR_CONFIG_PATH=rel.yaml", NULL };
	CHECK_INT(load_env(cfg, NULL, cpath, &e), -1);
	CHECK_STR(e.message, "AGOR_CONFIG_PATH: expected an absolute path (or ~/…), got \"rel.yaml\"");
	err_clear(&e);
	config_free(cfg);
}

TEST(config_flags_reject_unknown_keys_and_bad_assignments)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(config_set_flag(cfg, "daemon.prot", "1", &e), -1);
	CHECK_STR(e.message, "unknown setting \"daemon.prot\" (see 'agor config show' for every key)");
	CHECK_INT(config_set_flag(cfg, "daemon", "1", &e), -1);
	CHECK_INT(config_set_flag_assignment(cfg, "daemon.port", &e), -1);
	CHECK_STR(e.message, "expected KEY=VALUE, got \"daemon.port\"");
	CHECK_INT(config_set_flag_assignment(cfg, "=1", &e), -1);
	CHECK_INT(config_set_flag_assignment(cfg, "daemon.port=", &e), -1);
	CHECK_STR(e.message, "daemon.port: expected an integer 0..65535, got \"\"");
	err_clear(&e);
	config_free(cfg);
}

/* ---- executor_command_template ---------------------------------------------------------- */

TEST(config_template_placeholders_are_checked)
{
	CHECK_FLAG("execution.executor_command_template",
		   "kubectl run --rm -i agor-{task_id} "
		   "--env=U={unix_user}:{unix_user_uid}:{unix_user_gid} -- "
		   "agor executor --stdin # {payload_json} {command} {session_id} {worktree_id} "
		   "{daemon_url}",
		   "kubectl run --rm -i agor-{task_id} "
		   "--env=U={unix_user}:{unix_user_uid}:{unix_user_gid} -- "
		   "agor executor --stdin # {payload_json} {command} {session_id} {worktree_id} "
		   "{daemon_url}");
	/* shell syntax that is not a placeholder */
	CHECK_FLAG("execution.executor_command_template", "echo ${HOME} {a,b} {} awk '{print $1}' {x-y}",
		   "echo ${HOME} {a,b} {} awk '{print $1}' {x-y}");
	CHECK_FLAG("execution.executor_command_template", "run {task}",
		   "error: execution.executor_command_template: unknown placeholder {task} "
		   "(allowed: {payload_json} "
		   "{command} {task_id} {session_id} {worktree_id} {unix_user} {unix_user_uid} "
		   "{unix_user_gid} "
		   "{daemon_url})");
	CHECK_FLAG("execution.executor_command_template", "  ",
		   "error: execution.executor_command_template: expected a shell command line or "
		   "null, got an "
		   "empty string");
	CHECK_LOAD_ERROR_PREFIX("execution:\n  executor_command_template: ssh x {Task_id}\n",
				"F:2: execution.executor_command_template: unknown placeholder "
				"{Task_id} (allowed: ");
	/* in a literal block, the line of the placeholder itself */
	CHECK_LOAD_ERROR_PREFIX("execution:\n"
				"  executor_command_template: |\n"
				"    set -e\n"
				"    kubectl run {task_id} \\\n"
				"      --image {image}\n",
				"F:5: execution.executor_command_template: unknown placeholder {image}");
	const char *name;
	size_t len;
	const char *s = "a ${X} {task_id}{b,c}{command}";
	const char *p = config_template_next(s, &name, &len);
	CHECK(p == s + 7);
	CHECK_INT(len, 7);
	p = config_template_next(name + len + 1, &name, &len);
	CHECK(p != NULL && !strncmp(name, "command", len) && len == 7);
	CHECK(config_template_next(name + len + 1, &name, &len) == NULL);
	CHECK(config_template_placeholder_known("daemon_url", 10));
	CHECK(!config_template_placeholder_known("daemon_ur", 9));
}

/* ---- the file itself ------------------------------------------------------------------- */

TEST(config_refuses_files_others_can_write)
{
	_cleanup_free_ char *path = default_config_path();
	const mode_t bad[] = { 0666, 0620, 0602, 0660 };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		write_file(path, "daemon: {port: 4000}\n", bad[i]);
		struct config *cfg = config_new();
		struct err e = ERR_INIT;
		CHECK_INT(load(cfg, NULL, &e), -1);
		_cleanup_free_ char *want = xasprintf("%s: refusing a config file writable by group or others "
						      "(mode %04o); fix: chmod 600 %s",
						      path, (unsigned)bad[i], path);
		CHECK_STR(e.message, want);
		err_clear(&e);
		config_free(cfg);
	}
	/* readable by others is allowed */
	write_file(path, "daemon: {port: 4000}\n", 0644);
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg, NULL, &e), 0);
	CHECK_INT(cfg->daemon.port, 4000);
	config_free(cfg);
	/* owned by another user (only root can arrange that) */
	if (geteuid() == 0) {
		CHECK_INT(chown(path, 4242, 4242), 0);
		cfg = config_new();
		CHECK_INT(load(cfg, NULL, &e), -1);
		CHECK_CONTAINS(e.message, ": refusing a config file owned by uid 4242 (it must "
					  "belong to root); fix: chown 0 ");
		err_clear(&e);
		config_free(cfg);
	}
	struct stat st = { .st_mode = S_IFDIR | 0700, .st_uid = geteuid() };
	CHECK_INT(config_check_file_security(&st, "/x", &e), -1);
	CHECK_STR(e.message, "/x: not a regular file");
	err_clear(&e);
}

TEST(config_missing_file_is_an_error_only_when_named)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	_cleanup_free_ char *missing = xasprintf("%s/missing.yaml", unit_tmpdir());
	CHECK_INT(config_load(cfg, &(struct config_overrides){ .config_path = missing, .env = (char *[]){ NULL } }, &e),
		  -1);
	_cleanup_free_ char *want =
		xasprintf("%s: cannot open the config file named by --config: %s", missing, strerror(ENOENT));
	CHECK_STR(e.message, want);
	CHECK_STR(e.code, E_CONFIG);
	_cleanup_free_ char *envv = xasprintf("AGOR_CONFIG_PATH=%s", missing);
	const char *const env[] = { envv, NULL };
	CHECK_INT(load_env(cfg, NULL, env, &e), -1);
	CHECK_CONTAINS(e.message, "named by AGOR_CONFIG_PATH");
	/* AGOR_CONFIG_PATH names the file; --config beats it */
	_cleanup_free_ char *other = xasprintf("%s/other.yaml", unit_tmpdir());
	write_file(other, "daemon: {port: 4001}\n", 0600);
	_cleanup_free_ char *envo = xasprintf("AGOR_CONFIG_PATH=%s", other);
	const char *const env2[] = { envo, NULL };
	CHECK_INT(load_env(cfg, NULL, env2, &e), 0);
	CHECK_INT(cfg->daemon.port, 4001);
	CHECK_STR(cfg->config_file, other);
	/* a directory is not a config file */
	CHECK_INT(config_load(cfg,
			      &(struct config_overrides){ .config_path = unit_tmpdir(), .env = (char *[]){ NULL } },
			      &e),
		  -1);
	CHECK_CONTAINS(e.message, ": not a regular file");
	err_clear(&e);
	config_free(cfg);
}

TEST(config_relative_config_flag_is_resolved_against_the_working_directory)
{
	CHECK_INT(chdir(unit_tmpdir()), 0);
	_cleanup_free_ char *path = xasprintf("%s/c.yaml", unit_tmpdir());
	write_file(path, "daemon: {port: 4002}\n", 0600);
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(
		config_load(cfg, &(struct config_overrides){ .config_path = "c.yaml", .env = (char *[]){ NULL } }, &e),
		0);
	CHECK_STR(cfg->config_file, path);
	CHECK_INT(cfg->daemon.port, 4002);
	CHECK_STR(entry(cfg, "daemon.port").file, path);
	config_free(cfg);
}

/* ---- show ------------------------------------------------------------------------------ */

TEST(config_show_text_and_json)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	const char *const env[] = { "AGOR_DAEMON_HOST=::1", NULL };
	CHECK_INT(config_set_flag(cfg, "execution.timeout_ms", "1000", &e), 0);
	CHECK_INT(load_env(cfg, "daemon:\n  port: 4000\n", env, &e), 0);
	struct strbuf sb = STRBUF_INIT;
	config_format_text(cfg, &sb);
	_cleanup_free_ char *file_line = xasprintf("(file, %s:2)\n", cfg->config_file);
	CHECK_CONTAINS(sb.buf, "# config file: ");
	CHECK_CONTAINS(sb.buf, "\ndaemon.port                              4000 ");
	CHECK_CONTAINS(sb.buf, file_line);
	CHECK_CONTAINS(sb.buf, "(env, AGOR_DAEMON_HOST)\n");
	CHECK_CONTAINS(sb.buf, "  (flag)\n");
	CHECK_CONTAINS(sb.buf, "execution.executor_command_template      null ");
	strbuf_release(&sb);

	json_t *j = config_to_json(cfg);
	CHECK_STR(json_string_value(json_object_get(j, "configFile")), cfg->config_file);
	CHECK(json_is_true(json_object_get(j, "configFileFound")));
	json_t *settings = json_object_get(j, "settings");
	CHECK_INT(json_array_size(settings), config_count());
	size_t i;
	json_t *s;
	json_array_foreach(settings, i, s)
	{
		const char *key = json_string_value(json_object_get(s, "key"));
		json_t *v = json_object_get(s, "value");
		if (!strcmp(key, "daemon.port")) {
			CHECK_INT(json_integer_value(v), 4000);
			CHECK_STR(json_string_value(json_object_get(s, "source")), "file");
			CHECK_INT(json_integer_value(json_object_get(s, "line")), 2);
			CHECK_STR(json_string_value(json_object_get(s, "file")), cfg->config_file);
		} else if (!strcmp(key, "daemon.host")) {
			CHECK_STR(json_string_value(v), "::1");
			CHECK_STR(json_string_value(json_object_get(s, "env")), "AGOR_DAEMON_HOST");
		} else if (!strcmp(key, "execution.worktree_rbac")) {
			CHECK(json_is_false(v));
			CHECK(json_object_get(s, "line") == NULL);
		} else if (!strcmp(key, "execution.executor_command_template")) {
			CHECK(json_is_null(v));
		} else if (!strcmp(key, "execution.timeout_ms")) {
			CHECK_STR(json_string_value(json_object_get(s, "source")), "flag");
			CHECK_INT(json_integer_value(v), 1000);
		}
	}
	json_decref(j);
	config_free(cfg);
}

/* ---- execution policy ------------------------------------------------------------------ */

/* Parses policy_json and applies it over cfg; the result of config_apply_policy. */
static int apply_policy(struct config *cfg, const char *policy_json, struct err *e)
{
	json_t *policy = json_parse(policy_json, strlen(policy_json), e);
	CHECK(policy != NULL);
	int rc = config_apply_policy(cfg, policy, e);
	json_decref(policy);
	return rc;
}

TEST(config_policy_keys_are_the_sandbox_the_fallback_the_timeout_and_the_roots)
{
	CHECK(config_is_policy_key("execution.sandbox.enabled"));
	CHECK(config_is_policy_key("execution.sandbox.cgroup_parent"));
	CHECK(config_is_policy_key("execution.fallback_to_unified"));
	CHECK(config_is_policy_key("execution.timeout_ms"));
	CHECK(config_is_policy_key("execution.privileged_socket"));
	CHECK(!config_is_policy_key("execution.sandbox.no_such_key"));
	CHECK(!config_is_policy_key("execution.unix_user_mode"));
	CHECK(!config_is_policy_key("execution.permission_timeout_ms"));
	CHECK(!config_is_policy_key("daemon.port"));

	/* the policy object: every policy key of the table (new sandbox keys included), its
	 * canonical text */
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg, "execution:\n  sandbox:\n    pids_max: 64\n", &e), 0);
	json_t *policy = config_execution_policy(cfg);
	size_t n = 0;
	for (size_t i = 0; i < config_count(); i++) {
		struct config_entry en;
		CHECK_INT(config_entry_at(cfg, i, &en), 0);
		json_t *v = json_object_get(policy, en.key);
		if (!config_is_policy_key(en.key)) {
			CHECK(v == NULL);
			continue;
		}
		n++;
		CHECK(!strncmp(en.key, "execution.sandbox.", 18) || !strcmp(en.key, "execution.fallback_to_unified") ||
		      !strcmp(en.key, "execution.timeout_ms") || !strcmp(en.key, "paths.repos_dir") ||
		      !strcmp(en.key, "paths.worktrees_dir") || !strcmp(en.key, "execution.terminal_shell") ||
		      !strcmp(en.key, "execution.privileged_socket"));
		if (en.value)
			CHECK_STR(json_string_value(v), en.value);
		else
			CHECK(json_is_null(v));
	}
	CHECK_INT(json_object_size(policy), n);
	CHECK_STR(json_string_value(json_object_get(policy, "execution.sandbox.pids_max")), "64");
	/* what the daemon sends always passes the executor's check, and applies as is */
	CHECK_INT(config_policy_check(policy, &e), 0);
	struct config *other = config_new();
	CHECK_INT(load(other, NULL, &e), 0);
	CHECK_INT(config_apply_policy(other, policy, &e), 0);
	CHECK_INT(other->execution.sandbox.pids_max, 64);
	CHECK_INT(entry(other, "execution.sandbox.pids_max").source, CONFIG_SOURCE_POLICY);
	CHECK_STR(config_source_name(CONFIG_SOURCE_POLICY), "policy");
	json_decref(policy);
	config_free(other);
	config_free(cfg);
}

TEST(config_policy_wins_where_the_user_config_is_looser)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg,
		       "execution:\n  fallback_to_unified: true\n  timeout_ms: 900000\n  sandbox:\n"
		       "    enabled: false\n    fail_closed: false\n    network: host\n    "
		       "memory_max_mb: 0\n"
		       "    pids_max: 5000\n    read_only_paths: /opt\n    cgroup_parent: mine\n",
		       &e),
		  0);
	CHECK_INT(apply_policy(cfg,
			       "{\"execution.sandbox.enabled\":\"true\",\"execution.sandbox.fail_"
			       "closed\":\"true\","
			       "\"execution.sandbox.network\":\"none\",\"execution.sandbox.memory_"
			       "max_mb\":\"300\","
			       "\"execution.sandbox.pids_max\":\"100\",\"execution.fallback_to_"
			       "unified\":\"false\","
			       "\"execution.timeout_ms\":\"60000\",\"execution.sandbox.read_only_"
			       "paths\":null}",
			       &e),
		  0);
	CHECK(cfg->execution.sandbox.enabled);
	CHECK(cfg->execution.sandbox.fail_closed);
	CHECK_INT(cfg->execution.sandbox.network, CONFIG_SANDBOX_NETWORK_NONE);
	CHECK_INT(cfg->execution.sandbox.memory_max_mb, 300);
	CHECK_INT(cfg->execution.sandbox.pids_max, 100);
	CHECK(!cfg->execution.fallback_to_unified);
	CHECK_INT(cfg->execution.timeout_ms, 60000);
	CHECK(cfg->execution.sandbox.read_only_paths == NULL);	 /* paths: the daemon's, whatever */
	CHECK_STR(cfg->execution.sandbox.cgroup_parent, "agor"); /* left out: the built-in default */
	CHECK_INT(entry(cfg, "execution.sandbox.enabled").source, CONFIG_SOURCE_POLICY);
	config_free(cfg);
}

TEST(config_policy_is_only_tightened_by_the_user_config)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg,
		       "execution:\n  timeout_ms: 2000\n  sandbox:\n    network: none\n    "
		       "memory_max_mb: 256\n"
		       "    nofile: 128\n    cpu_max_percent: 50\n",
		       &e),
		  0);
	CHECK_INT(apply_policy(cfg,
			       "{\"execution.sandbox.enabled\":\"false\",\"execution.sandbox.fail_"
			       "closed\":\"false\","
			       "\"execution.sandbox.network\":\"host\",\"execution.sandbox.memory_"
			       "max_mb\":\"512\","
			       "\"execution.sandbox.nofile\":\"0\",\"execution.sandbox.cpu_max_"
			       "percent\":\"200\","
			       "\"execution.sandbox.pids_max\":\"0\",\"execution.sandbox.fsize_"
			       "mb\":\"10\","
			       "\"execution.fallback_to_unified\":\"true\",\"execution.timeout_"
			       "ms\":\"60000\"}",
			       &e),
		  0);
	CHECK_INT(cfg->execution.sandbox.network, CONFIG_SANDBOX_NETWORK_NONE); /* the user's: stricter */
	CHECK_INT(cfg->execution.sandbox.memory_max_mb, 256);
	CHECK_INT(cfg->execution.sandbox.nofile, 128); /* 0 is no limit: any limit is stricter */
	CHECK_INT(cfg->execution.sandbox.cpu_max_percent, 50);
	CHECK_INT(cfg->execution.timeout_ms, 2000);
	CHECK_INT(entry(cfg, "execution.sandbox.memory_max_mb").source, CONFIG_SOURCE_FILE);
	/* not set by the user: built-in defaults are not the user's word, the policy stands */
	CHECK(!cfg->execution.sandbox.enabled);
	CHECK(!cfg->execution.sandbox.fail_closed);
	CHECK(cfg->execution.fallback_to_unified);
	CHECK_INT(cfg->execution.sandbox.pids_max, 0);
	CHECK_INT(cfg->execution.sandbox.fsize_mb, 10);
	config_free(cfg);

	cfg = config_new();
	CHECK_INT(load(cfg,
		       "execution:\n  fallback_to_unified: false\n  sandbox:\n    enabled: true\n  "
		       "  fail_closed: true\n",
		       &e),
		  0);
	CHECK_INT(apply_policy(cfg,
			       "{\"execution.sandbox.enabled\":\"false\",\"execution.sandbox.fail_"
			       "closed\":\"false\","
			       "\"execution.fallback_to_unified\":\"true\"}",
			       &e),
		  0);
	CHECK(cfg->execution.sandbox.enabled);
	CHECK(cfg->execution.sandbox.fail_closed);
	CHECK(!cfg->execution.fallback_to_unified);
	config_free(cfg);
}

#define CHECK_POLICY_ERROR(policy_json, path, reason_part)                                                             \
	do {                                                                                                           \
		struct config *_cfg = config_new();                                                                    \
		struct err _e = ERR_INIT;                                                                              \
		CHECK_INT(load(_cfg, NULL, &_e), 0);                                                                   \
		CHECK_INT(apply_policy(_cfg, policy_json, &_e), -1);                                                   \
		CHECK_STR(_e.code, E_INVALID_PAYLOAD);                                                                 \
		CHECK_STR(json_string_value(json_object_get(_e.details, "path")), path);                               \
		CHECK_CONTAINS(json_string_value(json_object_get(_e.details, "reason")), reason_part);                 \
		CHECK_CONTAINS(_e.message, path ": ");                                                                 \
		err_clear(&_e);                                                                                        \
		config_free(_cfg);                                                                                     \
	} while (0)

TEST(config_policy_refuses_other_keys_and_values_not_in_canonical_text)
{
	CHECK_POLICY_ERROR("{\"daemon.port\":\"1\"}", "policy.daemon.port", "not an execution policy setting");
	CHECK_POLICY_ERROR("{\"execution.sandbox.nope\":\"1\"}", "policy.execution.sandbox.nope", "unknown setting");
	CHECK_POLICY_ERROR("{\"execution.sandbox.enabled\":\"yes\"}", "policy.execution.sandbox.enabled",
			   "expected true or false");
	CHECK_POLICY_ERROR("{\"execution.sandbox.enabled\":true}", "policy.execution.sandbox.enabled", "JSON string");
	CHECK_POLICY_ERROR("{\"execution.sandbox.network\":null}", "policy.execution.sandbox.network",
			   "null only for a nullable");
	CHECK_POLICY_ERROR("{\"execution.timeout_ms\":\"10\"}", "policy.execution.timeout_ms", "1000..604800000");
	CHECK_POLICY_ERROR("{\"execution.sandbox.pids_max\":\"010\"}", "policy.execution.sandbox.pids_max", "integer");
	CHECK_POLICY_ERROR("{\"execution.sandbox.cgroup_root\":\"~/cg\"}", "policy.execution.sandbox.cgroup_root",
			   "canonical");
	CHECK_POLICY_ERROR("{\"execution.sandbox.read_write_paths\":\"/a:rel\"}",
			   "policy.execution.sandbox.read_write_paths", "absolute paths");
	CHECK_POLICY_ERROR("[\"execution.sandbox.enabled\"]", "policy", "expected an object");
}

/* ---- paths ----------------------------------------------------------------------------- */

static void paths_for_home(struct agor_paths *p, const char *home, const char *data)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(config_set_flag(cfg, "paths.agor_home", home, &e), 0);
	if (data)
		CHECK_INT(config_set_flag(cfg, "paths.data_home", data, &e), 0);
	CHECK_INT(config_load(cfg, &(struct config_overrides){ .env = (char *[]){ NULL } }, &e), 0);
	paths_from_config(p, cfg);
	config_free(cfg);
}

/* Runs paths_ensure_home with stderr (where log_warn writes) captured into *log. */
static int ensure_home_capturing_log(const struct agor_paths *p, struct strbuf *log, struct err *e)
{
	_cleanup_free_ char *path = xasprintf("%s/stderr.log", unit_tmpdir());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	CHECK(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	int rc = paths_ensure_home(p, e);
	dup2(saved, 2);
	close(saved);
	close(fd);
	strbuf_reset(log);
	CHECK_INT(strbuf_read_file(log, path, 0), 0);
	return rc;
}

static unsigned mode_of(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 01000000; /* never a mode */
	return (unsigned)(st.st_mode & 07777);
}

TEST(paths_are_resolved_from_the_config)
{
	struct agor_paths p = AGOR_PATHS_INIT;
	paths_for_home(&p, "/h/.agor", "/d");
	CHECK_STR(p.home, "/h/.agor");
	CHECK_STR(p.config_file, "/h/.agor/config.yaml");
	CHECK_STR(p.db, "/h/.agor/agor.db");
	CHECK_STR(p.logs, "/h/.agor/logs");
	CHECK_STR(p.cache, "/h/.agor/cache");
	CHECK_STR(p.run, "/h/.agor/run");
	CHECK_STR(p.pid_file, "/h/.agor/run/agor.pid");
	CHECK_STR(p.socket, "/h/.agor/run/agor.sock");
	CHECK_STR(p.data_home, "/d");
	CHECK_STR(p.repos, "/d/repos");
	CHECK_STR(p.worktrees, "/d/worktrees");
	CHECK_STR(p.zellij_sessions, "/d/zellij/sessions");
	paths_release(&p);
	CHECK(p.home == NULL);
}

TEST(paths_ensure_home_creates_private_directories)
{
	umask(0);
	_cleanup_free_ char *home = xasprintf("%s/a/b/.agor", unit_tmpdir());
	struct agor_paths p = AGOR_PATHS_INIT;
	paths_for_home(&p, home, NULL);
	struct err e = ERR_INIT;
	struct strbuf log = STRBUF_INIT;
	CHECK_INT(ensure_home_capturing_log(&p, &log, &e), 0);
	CHECK_INT(mode_of(p.home), 0700);
	CHECK_INT(mode_of(p.logs), 0700);
	CHECK_INT(mode_of(p.cache), 0700);
	CHECK_INT(mode_of(p.run), 0700);
	CHECK_STR(log.buf, "");				       /* creating is not worth a warning */
	CHECK_INT(ensure_home_capturing_log(&p, &log, &e), 0); /* idempotent */
	CHECK_STR(log.buf, "");
	/* a looser mode is tightened, with a warning */
	CHECK_INT(chmod(p.home, 0755), 0);
	CHECK_INT(chmod(p.run, 0777), 0);
	CHECK_INT(ensure_home_capturing_log(&p, &log, &e), 0);
	CHECK_INT(mode_of(p.home), 0700);
	CHECK_INT(mode_of(p.run), 0700);
	_cleanup_free_ char *warn_home = xasprintf("%s had mode 0755; tightened to 0700", p.home);
	_cleanup_free_ char *warn_run = xasprintf("%s had mode 0777; tightened to 0700", p.run);
	CHECK_CONTAINS(log.buf, warn_home);
	CHECK_CONTAINS(log.buf, warn_run);
	strbuf_release(&log);
	/* the data home is separate and shared */
	CHECK_INT(paths_ensure_data(&p, &e), 0);
	CHECK_INT(mode_of(p.repos), 0755);
	CHECK_INT(mode_of(p.worktrees), 0755);
	CHECK_INT(mode_of(p.home), 0700);
	paths_release(&p);
}

TEST(paths_ensure_home_refuses_symlinks_and_strangers)
{
	struct err e = ERR_INIT;
	_cleanup_free_ char *real = xasprintf("%s/real", unit_tmpdir());
	_cleanup_free_ char *link = xasprintf("%s/link", unit_tmpdir());
	CHECK_INT(mkdir(real, 0700), 0);
	CHECK_INT(symlink(real, link), 0);
	struct agor_paths p = AGOR_PATHS_INIT;
	paths_for_home(&p, link, NULL);
	CHECK_INT(paths_ensure_home(&p, &e), -1);
	_cleanup_free_ char *want = xasprintf("%s is a symbolic link; refusing it (use the real path)", link);
	CHECK_STR(e.message, want);
	paths_release(&p);

	/* a symlinked run/ inside a good home */
	paths_for_home(&p, real, NULL);
	CHECK_INT(symlink("/tmp", p.run), 0);
	CHECK_INT(paths_ensure_home(&p, &e), -1);
	CHECK_CONTAINS(e.message, "/real/run is a symbolic link");
	CHECK_INT(unlink(p.run), 0);

	/* a file where the home should be */
	_cleanup_free_ char *file = xasprintf("%s/file", unit_tmpdir());
	write_file(file, "x", 0600);
	paths_release(&p);
	p.home = xstrdup(file); /* config_load already refuses it: config.yaml cannot be opened */
	CHECK_INT(paths_ensure_home(&p, &e), -1);
	CHECK_CONTAINS(e.message, "exists and is not a directory");
	paths_release(&p);

	if (geteuid() == 0) {
		CHECK_INT(chown(real, 4242, 4242), 0);
		paths_for_home(&p, real, NULL);
		CHECK_INT(paths_ensure_home(&p, &e), -1);
		_cleanup_free_ char *want2 = xasprintf("%s is owned by uid 4242, not by the running user (uid 0); "
						       "refusing to use it",
						       real);
		CHECK_STR(e.message, want2);
		CHECK_INT(mode_of(real), 0700);
		paths_release(&p);
	}
	err_clear(&e);
}

TEST(paths_create_private_file_is_exclusive_and_0600)
{
	umask(0);
	struct err e = ERR_INIT;
	_cleanup_free_ char *path = xasprintf("%s/agor.db", unit_tmpdir());
	int fd = paths_create_private_file(path, &e);
	CHECK(fd >= 0);
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	CHECK_INT(mode_of(path), 0600);
	CHECK_INT(paths_create_private_file(path, &e), -1);
	CHECK_STR(e.code, E_ALREADY_EXISTS);
	_cleanup_free_ char *link = xasprintf("%s/link.db", unit_tmpdir());
	_cleanup_free_ char *target = xasprintf("%s/target", unit_tmpdir());
	CHECK_INT(symlink(target, link), 0);
	CHECK_INT(paths_create_private_file(link, &e), -1); /* a dangling symlink is not followed */
	CHECK(access(target, F_OK) < 0);
	err_clear(&e);
}

/* The run's $HOME moves aside when the passwd home holds the data home, however the passwd entry spells it. */
TEST(execrun_home_moves_aside_when_the_passwd_home_holds_the_data_home)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(config_set_flag(cfg, "paths.data_home", "/nonexistent-u2/.agor", &e), 0);
	CHECK_INT(load(cfg, NULL, &e), 0);
	static const struct {
		const char *passwd_home, *inside;
	} cases[] = {
		{ "/nonexistent-u2", EXECRUN_SHARED_HOME },    { "/nonexistent-u2/", EXECRUN_SHARED_HOME },
		{ "//nonexistent-u2//", EXECRUN_SHARED_HOME }, { "/nonexistent-u3/", "/nonexistent-u3" },
		{ "/nonexistent-u2x", "/nonexistent-u2x" },    { "/", "/" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *inside = execrun_home_inside(cfg, cases[i].passwd_home);
		CHECK_STR(inside, cases[i].inside);
		free(inside);
	}
	config_free(cfg);
}

TEST(config_network_proxy_sits_between_none_and_host)
{
	static const struct {
		const char *user, *policy;
		int want;
	} cases[] = {
		{ "proxy", "host", CONFIG_SANDBOX_NETWORK_PROXY }, /* the user's: stricter */
		{ "host", "proxy", CONFIG_SANDBOX_NETWORK_PROXY }, /* the daemon's: the user may not loosen it */
		{ "proxy", "none", CONFIG_SANDBOX_NETWORK_NONE },
		{ "none", "proxy", CONFIG_SANDBOX_NETWORK_NONE },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct config *cfg = config_new();
		struct err e = ERR_INIT;
		_cleanup_free_ char *yaml = xasprintf("execution:\n  sandbox:\n    network: %s\n    egress_allow: "
						      "\"*.npmjs.org, 127.0.0.1:8080\"\n",
						      cases[i].user);
		_cleanup_free_ char *policy = xasprintf("{\"execution.sandbox.network\":\"%s\"}", cases[i].policy);
		CHECK_INT(load(cfg, yaml, &e), 0);
		CHECK_INT(apply_policy(cfg, policy, &e), 0);
		CHECK_INT(cfg->execution.sandbox.network, cases[i].want);
		config_free(cfg);
	}
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(load(cfg, "execution:\n  sandbox:\n    egress_allow: \"ok.example, bad host:x\"\n", &e), -1);
	CHECK_CONTAINS(e.message, "execution.sandbox.egress_allow");
	CHECK_CONTAINS(e.message, "\"host:x\" is not one");
	err_clear(&e);
	config_free(cfg);
}

/* text, then n "[" and n "]": flow sequences nested n deep. */
static char *nested(const char *text, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, text);
	for (size_t i = 0; i < 2 * n; i++)
		strbuf_addch(&sb, i < n ? '[' : ']');
	return strbuf_detach(&sb, NULL);
}

TEST(yaml_too_deep_counts_collections_as_libyaml_reads_them)
{
	static const char block[] = "a:\n  b:\n    - c:\n        d: 1\n";
	CHECK_INT(yaml_too_deep(block, strlen(block), 5), 0); /* {a: {b: [{c: {d: 1}}]}} */
	CHECK_INT(yaml_too_deep(block, strlen(block), 4), 1);
	static const char quoted[] = "a: '[[[[[[' # [[[[[[\nb: \"{{{{{{\"\n";
	CHECK_INT(yaml_too_deep(quoted, strlen(quoted), 1), 0); /* brackets in scalars and comments are text */
	static const char broken[] = "a: [1, 2\n";
	CHECK_INT(yaml_too_deep(broken, strlen(broken), 64), 0); /* the load reports the syntax error */
}

/* config_fuzz: 30,000 nested "[" took seconds of CPU in libyaml's scanner (its cost is the square of the
 * nesting); such a file is refused before it is loaded, in time that does not grow with the nesting. */
TEST(config_refuses_collections_nested_past_64_levels_in_linear_time)
{
	_cleanup_free_ char *at_limit = nested("daemon:\n  port: ", 62); /* 2 mappings + 62 sequences */
	CHECK_LOAD_ERROR_PREFIX(at_limit, "F:2: daemon.port:");
	_cleanup_free_ char *past = nested("daemon:\n  port: ", 63);
	CHECK_LOAD_ERROR(past, "F: invalid YAML: nested more than 64 levels deep");
	_cleanup_free_ char *huge = nested("daemon:\n  port: ", 400000);
	clock_t start = clock();
	CHECK_LOAD_ERROR(huge, "F: invalid YAML: nested more than 64 levels deep");
	double cpu = (double)(clock() - start) / CLOCKS_PER_SEC;
	if (cpu > 2)
		unit_fail(__FILE__, __LINE__, "%.1f s of CPU to refuse 400,000 levels", cpu);
	struct adminconf c = { 0 };
	struct err e = ERR_INIT;
	_cleanup_free_ char *admin = nested("worktrees_dir: ", 100000);
	CHECK_INT(adminconf_parse(admin, strlen(admin), "admin.yaml", &c, &e), -1);
	CHECK_STR(e.message, "admin.yaml: invalid YAML: nested more than 64 levels deep");
	err_clear(&e);
	adminconf_release(&c);
}
