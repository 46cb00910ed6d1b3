/* config.c — the settings table and its sources: defaults, config.yaml (libyaml), env, flags.
 * Never stores a value not parsed by its key's type; never reads a config others can write. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "cgroup.h"
#include "config.h"
#include "egress_allow.h"
#include "exec_env.h"
#include "fsutil.h"
#include "json.h"
#include "origin.h"
#include "yaml_depth.h"
#include "banned.h"

#define CONFIG_FILE_MAX (1u << 20) /* config.yaml larger than 1 MiB is refused */

extern char **environ;

/* ---- the table ------------------------------------------------------------------------ */

struct config_key;
struct config_state;

/* Extra validation of a parsed value: -1 with e set; *at = byte offset of the problem. */
typedef int (*config_check_fn)(const char *value, size_t *at, struct err *e);
/* A default computed from settings earlier in the table; returns malloc'd text. */
typedef char *(*config_derive_fn)(const struct config_state *st);

struct config_key {
	const char *key;
	enum config_type type;
	const char *def; /* built-in default (parsed like any value); NULL: derived, or null */
	const char *env; /* environment variable, or NULL */
	long long min, max;
	const char *const *choices; /* CONFIG_ENUM: NULL-terminated */
	config_check_fn check;
	config_derive_fn derive;
	size_t offset, size; /* the field of struct config */
};

static int check_user_name(const char *value, size_t *at, struct err *e);
static int check_path_list(const char *value, size_t *at, struct err *e);
static int check_home_entries(const char *value, size_t *at, struct err *e);
static int check_one_path(const char *value, size_t *at, struct err *e);
static int check_cgroup_name(const char *value, size_t *at, struct err *e);
static int check_host(const char *value, size_t *at, struct err *e);
static int check_template(const char *value, size_t *at, struct err *e);
static int check_base_url(const char *value, size_t *at, struct err *e);
static int check_executor_daemon_url(const char *value, size_t *at, struct err *e);
static int check_fingerprint(const char *value, size_t *at, struct err *e);
static char *derive_data_home(const struct config_state *st);
static char *derive_repos_dir(const struct config_state *st);
static char *derive_worktrees_dir(const struct config_state *st);
static char *derive_zellij_dir(const struct config_state *st);
static char *derive_socket_path(const struct config_state *st);
static char *derive_worktree_rbac(const struct config_state *st);

static const char *const user_modes[] = { "simple", "insulated", "strict", "sandbox", NULL };
static const char *const sandbox_networks[] = { "none", "proxy", "host", NULL }; /* strictest first (policy) */
_Static_assert(sizeof(enum config_user_mode) == sizeof(int), "enum fields are stored as int");

#define FIELD(member) .offset = offsetof(struct config, member), .size = sizeof(((struct config *)0)->member)

/* Derived defaults refer only to rows above them (they are computed in table order). */
/* clang-format off */
static const struct config_key keys[] = {
	{ .key = "paths.agor_home", .type = CONFIG_PATH, .def = "~/.agor",
	  .env = "AGOR_HOME", FIELD(paths.agor_home) },
	{ .key = "paths.data_home", .type = CONFIG_PATH, .derive = derive_data_home,
	  .env = "AGOR_DATA_HOME", FIELD(paths.data_home) },
	{ .key = "paths.repos_dir", .type = CONFIG_PATH, .derive = derive_repos_dir,
	  FIELD(paths.repos_dir) },
	{ .key = "paths.worktrees_dir", .type = CONFIG_PATH, .derive = derive_worktrees_dir,
	  FIELD(paths.worktrees_dir) },
	{ .key = "paths.zellij_dir", .type = CONFIG_PATH, .derive = derive_zellij_dir,
	  FIELD(paths.zellij_dir) },
	{ .key = "daemon.host", .type = CONFIG_STRING, .def = "127.0.0.1", .check = check_host,
	  .env = "AGOR_DAEMON_HOST", FIELD(daemon.host) },
	{ .key = "daemon.port", .type = CONFIG_INT, .def = "3030", .min = 0, .max = 65535, /* 0: any free port (tests) */
	  .env = "AGOR_DAEMON_PORT", FIELD(daemon.port) },
	{ .key = "daemon.unix_user", .type = CONFIG_STRING, .def = "agor", .check = check_user_name,
	  FIELD(daemon.unix_user) },
	{ .key = "daemon.socket_path", .type = CONFIG_PATH, .derive = derive_socket_path,
	  FIELD(daemon.socket_path) },
	{ .key = "daemon.tls_cert", .type = CONFIG_NULLABLE_STRING, FIELD(daemon.tls_cert) },
	{ .key = "daemon.tls_key", .type = CONFIG_NULLABLE_STRING, FIELD(daemon.tls_key) },
	{ .key = "daemon.allowed_origins", .type = CONFIG_NULLABLE_STRING, .check = origin_list_check,
	  FIELD(daemon.allowed_origins) },
	{ .key = "daemon.max_connections", .type = CONFIG_INT, .def = "4096",
	  .min = 1, .max = 1048576, FIELD(daemon.max_connections) },
	{ .key = "daemon.max_connections_per_ip", .type = CONFIG_INT, .def = "256",
	  .min = 0, .max = 1048576, FIELD(daemon.max_connections_per_ip) },
	{ .key = "daemon.max_unauthenticated", .type = CONFIG_INT, .def = "512",
	  .min = 0, .max = 1048576, FIELD(daemon.max_unauthenticated) },
	{ .key = "daemon.auth_timeout_ms", .type = CONFIG_INT, .def = "10000",
	  .min = 0, .max = 3600000, FIELD(daemon.auth_timeout_ms) },
	{ .key = "daemon.fd_reserve", .type = CONFIG_INT, .def = "1024",
	  .min = 64, .max = 1048576, FIELD(daemon.fd_reserve) },
	{ .key = "daemon.audit_refusals_window_ms", .type = CONFIG_INT, .def = "60000",
	  .min = 1000, .max = 86400000LL /* 1 day */, FIELD(daemon.audit_refusals_window_ms) },
	{ .key = "daemon.audit_refusals_max", .type = CONFIG_INT, .def = "100",
	  .min = 1, .max = 100000, FIELD(daemon.audit_refusals_max) },
	{ .key = "daemon.wal_max_mb", .type = CONFIG_INT, .def = "64",
	  .min = 1, .max = 1048576, FIELD(daemon.wal_max_mb) },
	{ .key = "daemon.db_size_alarm_mb", .type = CONFIG_INT, .def = "1024",
	  .min = 0, .max = 1048576 * 16, FIELD(daemon.db_size_alarm_mb) },
	{ .key = "daemon.node_pair_per_minute", .type = CONFIG_INT, .def = "10",
	  .min = 1, .max = 100000, FIELD(daemon.node_pair_per_minute) },
	{ .key = "daemon.node_pair_pending_per_ip", .type = CONFIG_INT, .def = "4",
	  .min = 1, .max = 64, FIELD(daemon.node_pair_pending_per_ip) },
	{ .key = "execution.unix_user_mode", .type = CONFIG_ENUM, .def = "simple",
	  .choices = user_modes, FIELD(execution.unix_user_mode) },
	{ .key = "execution.executor_unix_user", .type = CONFIG_STRING, .def = "agor_executor",
	  .check = check_user_name, FIELD(execution.executor_unix_user) },
	{ .key = "execution.executor_command_template", .type = CONFIG_NULLABLE_STRING,
	  .check = check_template, FIELD(execution.executor_command_template) },
	{ .key = "execution.privileged_socket", .type = CONFIG_NULLABLE_STRING, .check = check_one_path,
	  FIELD(execution.privileged_socket) },
	{ .key = "execution.executor_daemon_url", .type = CONFIG_NULLABLE_STRING,
	  .check = check_executor_daemon_url, FIELD(execution.executor_daemon_url) },
	{ .key = "execution.executor_daemon_ca_file", .type = CONFIG_NULLABLE_STRING,
	  .check = check_one_path, FIELD(execution.executor_daemon_ca_file) },
	{ .key = "execution.executor_daemon_fingerprint", .type = CONFIG_NULLABLE_STRING,
	  .check = check_fingerprint, FIELD(execution.executor_daemon_fingerprint) },
	{ .key = "execution.executor_heartbeat_ms", .type = CONFIG_INT, .def = "10000",
	  .min = 200, .max = 600000, FIELD(execution.executor_heartbeat_ms) },
	{ .key = "execution.worktree_rbac", .type = CONFIG_BOOL, .derive = derive_worktree_rbac,
	  FIELD(execution.worktree_rbac) },
	{ .key = "execution.fallback_to_unified", .type = CONFIG_BOOL, .def = "false",
	  FIELD(execution.fallback_to_unified) },
	{ .key = "execution.executor_pool.max_executors", .type = CONFIG_INT, .def = "10",
	  .min = 1, .max = 1024, FIELD(execution.executor_pool.max_executors) },
	{ .key = "execution.executor_pool.idle_timeout_ms", .type = CONFIG_INT, .def = "60000",
	  .min = 0, .max = 86400000LL /* 1 day */, FIELD(execution.executor_pool.idle_timeout_ms) },
	{ .key = "execution.session_tokens.expiration_ms", .type = CONFIG_INT, .def = "86400000",
	  .min = 60000, .max = 2592000000LL /* 30 days */,
	  FIELD(execution.session_tokens.expiration_ms) },
	{ .key = "execution.terminal_shell", .type = CONFIG_NULLABLE_STRING,
	  .check = check_one_path, FIELD(execution.terminal_shell) },
	{ .key = "execution.git.known_hosts", .type = CONFIG_NULLABLE_STRING,
	  .check = check_one_path, FIELD(execution.git.known_hosts) },
	{ .key = "execution.timeout_ms", .type = CONFIG_INT, .def = "300000",
	  .min = 1000, .max = 604800000LL /* 7 days */, FIELD(execution.timeout_ms) },
	{ .key = "execution.permission_timeout_ms", .type = CONFIG_INT, .def = "120000",
	  .min = 1000, .max = 86400000LL /* 1 day */, FIELD(execution.permission_timeout_ms) },
	{ .key = "execution.exec_env_allow", .type = CONFIG_NULLABLE_STRING, .def = EXEC_ENV_DEFAULT,
	  .check = exec_env_list_check, FIELD(execution.exec_env_allow) },
	{ .key = "execution.sandbox.enabled", .type = CONFIG_BOOL, .def = "true",
	  FIELD(execution.sandbox.enabled) },
	{ .key = "execution.sandbox.fail_closed", .type = CONFIG_BOOL, .def = "true",
	  FIELD(execution.sandbox.fail_closed) },
	{ .key = "execution.sandbox.network", .type = CONFIG_ENUM, .def = "none",
	  .choices = sandbox_networks, FIELD(execution.sandbox.network) },
	{ .key = EGRESS_ALLOW_KEY, .type = CONFIG_NULLABLE_STRING, .check = egress_allow_check,
	  FIELD(execution.sandbox.egress_allow) },
	{ .key = "execution.sandbox.upstream_ca_file", .type = CONFIG_NULLABLE_STRING, .check = check_path_list,
	  FIELD(execution.sandbox.upstream_ca_file) },
	{ .key = "execution.sandbox.home_expose", .type = CONFIG_NULLABLE_STRING,
	  .check = check_home_entries, FIELD(execution.sandbox.home_expose) },
	{ .key = "execution.sandbox.read_only_paths", .type = CONFIG_NULLABLE_STRING,
	  .check = check_path_list, FIELD(execution.sandbox.read_only_paths) },
	{ .key = "execution.sandbox.read_write_paths", .type = CONFIG_NULLABLE_STRING,
	  .check = check_path_list, FIELD(execution.sandbox.read_write_paths) },
	{ .key = "execution.sandbox.memory_max_mb", .type = CONFIG_INT, .def = "4096",
	  .min = 0, .max = 1048576, FIELD(execution.sandbox.memory_max_mb) },
	{ .key = "execution.sandbox.pids_max", .type = CONFIG_INT, .def = "1024",
	  .min = 0, .max = 4194304, FIELD(execution.sandbox.pids_max) },
	{ .key = "execution.sandbox.cpu_max_percent", .type = CONFIG_INT, .def = "0",
	  .min = 0, .max = 100000, FIELD(execution.sandbox.cpu_max_percent) },
	{ .key = "execution.sandbox.nofile", .type = CONFIG_INT, .def = "4096",
	  .min = 0, .max = 1048576, FIELD(execution.sandbox.nofile) },
	{ .key = "execution.sandbox.fsize_mb", .type = CONFIG_INT, .def = "0",
	  .min = 0, .max = 1048576, FIELD(execution.sandbox.fsize_mb) },
	{ .key = "execution.sandbox.disk_max_mb", .type = CONFIG_INT, .def = "4096",
	  .min = 0, .max = 1048576, FIELD(execution.sandbox.disk_max_mb) },
	{ .key = "execution.sandbox.cgroup_root", .type = CONFIG_PATH, .def = CGROUP_DEFAULT_ROOT,
	  FIELD(execution.sandbox.cgroup_root) },
	{ .key = "execution.sandbox.cgroup_parent", .type = CONFIG_STRING, .def = CGROUP_DEFAULT_PARENT,
	  .check = check_cgroup_name, FIELD(execution.sandbox.cgroup_parent) },
	{ .key = "execution.sandbox.root_maps_to", .type = CONFIG_INT, .def = "65534",
	  .min = 1, .max = 2147483646, FIELD(execution.sandbox.root_maps_to) },
	{ .key = "agents.claude_code.command", .type = CONFIG_NULLABLE_STRING, FIELD(agents.claude_code.command) },
	{ .key = "agents.claude_code.base_url", .type = CONFIG_NULLABLE_STRING, .check = check_base_url,
	  FIELD(agents.claude_code.base_url) },
	{ .key = "agents.claude_code.model", .type = CONFIG_NULLABLE_STRING, FIELD(agents.claude_code.model) },
	{ .key = "agents.codex.command", .type = CONFIG_NULLABLE_STRING, FIELD(agents.codex.command) },
	{ .key = "agents.codex.base_url", .type = CONFIG_NULLABLE_STRING, .check = check_base_url,
	  FIELD(agents.codex.base_url) },
	{ .key = "agents.codex.model", .type = CONFIG_NULLABLE_STRING, FIELD(agents.codex.model) },
	{ .key = "agents.gemini.command", .type = CONFIG_NULLABLE_STRING, FIELD(agents.gemini.command) },
	{ .key = "agents.gemini.base_url", .type = CONFIG_NULLABLE_STRING, .check = check_base_url,
	  FIELD(agents.gemini.base_url) },
	{ .key = "agents.gemini.model", .type = CONFIG_NULLABLE_STRING, FIELD(agents.gemini.model) },
	{ .key = "agents.opencode.command", .type = CONFIG_NULLABLE_STRING, FIELD(agents.opencode.command) },
	{ .key = "agents.opencode.base_url", .type = CONFIG_NULLABLE_STRING, .check = check_base_url,
	  FIELD(agents.opencode.base_url) },
	{ .key = "agents.opencode.model", .type = CONFIG_NULLABLE_STRING, FIELD(agents.opencode.model) },
};
/* clang-format on */
#define NKEYS ARRAY_SIZE(keys)

/* ---- runtime state -------------------------------------------------------------------- */

struct config_slot {
	char *value; /* canonical text; NULL = null */
	enum config_source source;
	int line; /* source FILE: line of the key */
};

struct config_state {
	struct config_slot slots[NKEYS];
	char *config_file;
	bool loaded;
	char *const *env; /* during config_load only; NULL = process environment */
};

/* A value as it arrives from YAML, the environment or a flag. */
struct raw_value {
	const char *text;
	size_t len;
	bool null;   /* YAML null (or the empty string for a nullable key outside YAML) */
	bool quoted; /* YAML: not a plain scalar, so never an integer or a boolean */
};

static int find_key(const char *key)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].key, key))
			return (int)i;
	return -1;
}

/* ---- environment and home ------------------------------------------------------------- */

/* name's value in env (NULL = process environment); empty values count as unset. */
static const char *env_lookup(char *const *env, const char *name)
{
	const char *v = NULL;
	if (!env) {
		v = getenv(name);
	} else {
		size_t n = strlen(name);
		for (char *const *p = env; *p && !v; p++) /* the first one, as getenv(3) */
			if (!strncmp(*p, name, n) && (*p)[n] == '=')
				v = *p + n + 1;
	}
	return v && *v ? v : NULL;
}

/* The running user's home: $HOME when absolute, else the passwd entry of the effective uid. */
static int user_home(char *const *env, const char **home, struct err *e)
{
	const char *h = env_lookup(env, "HOME");
	if (h && h[0] == '/') {
		*home = h;
		return 0;
	}
	struct passwd *pw = getpwuid(geteuid());
	if (pw && pw->pw_dir && pw->pw_dir[0] == '/') {
		*home = pw->pw_dir;
		return 0;
	}
	return err_set(e, E_CONFIG, "cannot expand ~: HOME is not an absolute path and uid %u has no home directory",
		       (unsigned)geteuid());
}

/* ---- parsing values by type ----------------------------------------------------------- */

static void describe_expected(const struct config_key *k, struct strbuf *sb)
{
	switch (k->type) {
	case CONFIG_STRING:
		strbuf_addstr(sb, "a non-empty string");
		break;
	case CONFIG_PATH:
		strbuf_addstr(sb, "an absolute path (or ~/…)");
		break;
	case CONFIG_INT:
		strbuf_addf(sb, "an integer %lld..%lld", k->min, k->max);
		break;
	case CONFIG_BOOL:
		strbuf_addstr(sb, "true or false");
		break;
	case CONFIG_ENUM:
		strbuf_addstr(sb, "one of ");
		for (const char *const *c = k->choices; *c; c++)
			strbuf_addf(sb, "%s%s", c == k->choices ? "" : "|", *c);
		break;
	case CONFIG_NULLABLE_STRING:
		strbuf_addstr(sb, "a string or null");
		break;
	}
}

/* Values end up in JSON (config show, config.get), which carries UTF-8 only: jansson's rule (no overlong form, no
 * surrogate, nothing past U+10FFFF), checked in place rather than by making a JSON string of each value. */
static bool is_utf8(const char *s, size_t len)
{
	for (size_t i = 0, n; i < len; i += n)
		if (!(n = utf8_sequence_length((const unsigned char *)s + i, len - i)))
			return false;
	return true;
}

/* A value quoted for a message: about 60 bytes, cut between characters, control characters
 * escaped, and every byte above 0x7f escaped too unless the whole value is UTF-8 (messages
 * travel in JSON). */
static void add_quoted_excerpt(struct strbuf *sb, const char *s, size_t len)
{
	bool utf8 = is_utf8(s, len);
	size_t i;
	strbuf_addch(sb, '"');
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (i >= 60 && (!utf8 || (c & 0xc0) != 0x80))
			break;
		if (c == '"' || c == '\\')
			strbuf_addf(sb, "\\%c", c);
		else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8))
			strbuf_addf(sb, "\\x%02x", c);
		else
			strbuf_addch(sb, (char)c);
	}
	strbuf_addstr(sb, i < len ? "…\"" : "\"");
}

static int type_error(const struct config_key *k, const struct raw_value *raw, struct err *e)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "expected ");
	describe_expected(k, &sb);
	if (raw->null) {
		strbuf_addstr(&sb, ", got null");
	} else {
		strbuf_addstr(&sb, raw->quoted ? ", got the quoted string " : ", got ");
		add_quoted_excerpt(&sb, raw->text, raw->len);
		if (raw->quoted && (k->type == CONFIG_INT || k->type == CONFIG_BOOL))
			strbuf_addstr(&sb, " (write it without quotes)");
	}
	err_set(e, E_CONFIG, "%s", sb.buf);
	strbuf_release(&sb);
	return -1;
}

static bool has_control_chars(const char *s, bool allow_newlines)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c < 0x20 || c == 0x7f) && !(allow_newlines && (c == '\n' || c == '\t')))
			return true;
	}
	return false;
}

static int parse_int(const struct config_key *k, const struct raw_value *raw, char **out, struct err *e)
{
	const char *s = raw->text;
	size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
	size_t digits = strspn(s + i, "0123456789");
	/* no leading zeros: YAML 1.1 readers take 010 for octal */
	if (raw->null || raw->quoted || !digits || digits != strlen(s + i) || digits > 18 ||
	    (s[i] == '0' && digits > 1))
		return type_error(k, raw, e);
	long long v = strtoll(s, NULL, 10);
	if (v < k->min || v > k->max)
		return type_error(k, raw, e);
	/* digits without leading zeros are canonical already; only "+N" and "-0" are rewritten (every start
	 * parses about 25 integer defaults: printf for each was a fifth of the executor's own work) */
	*out = s[0] == '+' || v == 0 ? xasprintf("%lld", v) : xstrdup(s);
	return 0;
}

static int parse_bool(const struct config_key *k, const struct raw_value *raw, char **out, struct err *e)
{
	if (raw->null || raw->quoted || (strcmp(raw->text, "true") && strcmp(raw->text, "false")))
		return type_error(k, raw, e);
	*out = xstrdup(raw->text);
	return 0;
}

static int parse_enum(const struct config_key *k, const struct raw_value *raw, char **out, struct err *e)
{
	if (!raw->null)
		for (const char *const *c = k->choices; *c; c++)
			if (!strcmp(raw->text, *c)) {
				*out = xstrdup(*c);
				return 0;
			}
	return type_error(k, raw, e);
}

static int parse_path(const struct config_key *k, const struct raw_value *raw, char *const *env, char **out,
		      struct err *e)
{
	const char *s = raw->text;
	if (raw->null || !*s || has_control_chars(s, false))
		return type_error(k, raw, e);
	char *path;
	if (s[0] == '~' && (s[1] == '/' || s[1] == '\0')) {
		const char *home = NULL;
		if (user_home(env, &home, e) < 0)
			return -1;
		path = xasprintf("%s%s", home, s + 1);
	} else if (s[0] == '/') {
		path = xstrdup(s);
	} else {
		return type_error(k, raw, e);
	}
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	*out = path;
	return 0;
}

static int parse_string(const struct config_key *k, const struct raw_value *raw, char **out, struct err *e)
{
	if (raw->null)
		return type_error(k, raw, e);
	if (!raw->text[0] || has_control_chars(raw->text, false))
		return type_error(k, raw, e);
	*out = xstrdup(raw->text);
	return 0;
}

static int parse_nullable(const struct config_key *k, const struct raw_value *raw, char **out, struct err *e)
{
	if (raw->null) {
		*out = NULL;
		return 0;
	}
	if (has_control_chars(raw->text, true))
		return type_error(k, raw, e);
	*out = xstrdup(raw->text);
	return 0;
}

/* Parses raw by k's type into canonical text (*out, NULL for null), then k's own check.
 * On error the message has no prefix; *at is the byte offset of the problem (0 if unknown). */
static int parse_value(const struct config_key *k, const struct raw_value *raw, char *const *env, char **out,
		       size_t *at, struct err *e)
{
	*out = NULL;
	*at = 0;
	if (!raw->null && strlen(raw->text) != raw->len)
		return err_set(e, E_CONFIG, "the value contains a NUL byte");
	if (!raw->null && !is_utf8(raw->text, raw->len))
		return err_set(e, E_CONFIG, "the value is not valid UTF-8");
	int rc = 0;
	switch (k->type) {
	case CONFIG_STRING:
		rc = parse_string(k, raw, out, e);
		break;
	case CONFIG_PATH:
		rc = parse_path(k, raw, env, out, e);
		break;
	case CONFIG_INT:
		rc = parse_int(k, raw, out, e);
		break;
	case CONFIG_BOOL:
		rc = parse_bool(k, raw, out, e);
		break;
	case CONFIG_ENUM:
		rc = parse_enum(k, raw, out, e);
		break;
	case CONFIG_NULLABLE_STRING:
		rc = parse_nullable(k, raw, out, e);
		break;
	}
	if (rc == 0 && *out && k->check && k->check(*out, at, e) < 0) {
		free(*out);
		*out = NULL;
		rc = -1;
	}
	return rc;
}

/* ---- checks of particular keys -------------------------------------------------------- */

/* docs/payloads.md#impersonation: ^[a-z_][a-z0-9_-]{0,31}$ */
static int check_user_name(const char *value, size_t *at, struct err *e)
{
	(void)at;
	size_t len = strlen(value);
	bool ok = len >= 1 && len <= 32 && strchr("abcdefghijklmnopqrstuvwxyz_", value[0]) &&
		  strspn(value, "abcdefghijklmnopqrstuvwxyz0123456789_-") == len;
	if (ok)
		return 0;
	struct strbuf sb = STRBUF_INIT;
	add_quoted_excerpt(&sb, value, len);
	err_set(e, E_CONFIG, "expected a user name matching ^[a-z_][a-z0-9_-]{0,31}$, got %s", sb.buf);
	strbuf_release(&sb);
	return -1;
}

/* ':'-separated absolute paths without "..": extra paths of the sandbox's mount view. */
/* ':'-separated paths relative to a home: plain names joined by '/', none of them "." or "..", nothing absolute. */
static int check_home_entries(const char *value, size_t *at, struct err *e)
{
	for (const char *p = value; *p;) {
		size_t len = strcspn(p, ":");
		*at = (size_t)(p - value);
		_cleanup_free_ char *entry = xstrndup(p, len);
		if (!fs_relative_path_is_clean(entry))
			return err_set(e, E_CONFIG,
				       "expected ':'-separated paths relative to the home (\".ssh\", "
				       "\".config/gh\"), got \"%s\" at byte %zu: no '/' at either end, no '.', '..' or "
				       "empty component",
				       entry, *at);
		p += len + (p[len] == ':');
	}
	return 0;
}

static int check_path_list(const char *value, size_t *at, struct err *e)
{
	for (const char *p = value; *p;) {
		size_t len = strcspn(p, ":");
		*at = (size_t)(p - value);
		if (len == 0 || *p != '/')
			return err_set(e, E_CONFIG,
				       "expected ':'-separated absolute paths, got an entry at "
				       "byte %zu that does not start with '/'",
				       *at);
		for (const char *d = p; (d = strstr(d, "/..")) && d < p + len; d += 3)
			if (d[3] == '/' || d[3] == ':' || !d[3])
				return err_set(e, E_CONFIG, "paths must not contain '..' (entry at byte %zu)", *at);
		p += len;
		if (*p == ':')
			p++;
	}
	return 0;
}

/* One absolute path (no ':' list, no ".."). */
static int check_one_path(const char *value, size_t *at, struct err *e)
{
	if (strchr(value, ':'))
		return (*at = (size_t)(strchr(value, ':') - value)),
		       err_set(e, E_CONFIG, "expected one absolute path, like /bin/bash (no ':')");
	return check_path_list(value, at, e);
}

/* A cgroup directory name: letters, digits, '-', '_', '.', not starting with '.'. */
static int check_cgroup_name(const char *value, size_t *at, struct err *e)
{
	size_t len = strlen(value);
	size_t ok = strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.");
	if (ok == len && value[0] != '.' && len <= 64)
		return 0;
	*at = ok;
	return err_set(e, E_CONFIG,
		       "expected a cgroup name of letters, digits, '-', '_' and '.' (not starting "
		       "with '.'), got \"%.60s\"",
		       value);
}

/* A host name or an IP address: letters, digits, . - _ : % (IPv6 zone), at most 253 bytes. */
static int check_host(const char *value, size_t *at, struct err *e)
{
	size_t len = strlen(value);
	size_t ok = strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:%");
	if (ok == len && len <= 253)
		return 0;
	*at = ok;
	struct strbuf sb = STRBUF_INIT;
	add_quoted_excerpt(&sb, value, len);
	err_set(e, E_CONFIG, "expected a host name or IP address, got %s", sb.buf);
	strbuf_release(&sb);
	return -1;
}

/* An agent provider endpoint: http:// or https://, nothing that could smuggle a second argument. */
static int check_base_url(const char *value, size_t *at, struct err *e)
{
	*at = 0;
	if ((!strncmp(value, "http://", 7) || !strncmp(value, "https://", 8)) && !strpbrk(value, " \t\"'"))
		return 0;
	struct strbuf sb = STRBUF_INIT;
	add_quoted_excerpt(&sb, value, strlen(value));
	err_set(e, E_CONFIG, "expected an http:// or https:// URL, got %s", sb.buf);
	strbuf_release(&sb);
	return -1;
}

/* Where remote executors call back: TLS only (wss:// or https://), nothing that could split a shell word. */
static int check_executor_daemon_url(const char *value, size_t *at, struct err *e)
{
	*at = 0;
	if ((!strncmp(value, "wss://", 6) || !strncmp(value, "https://", 8)) && !strpbrk(value, " \t\"'\\"))
		return 0;
	struct strbuf sb = STRBUF_INIT;
	add_quoted_excerpt(&sb, value, strlen(value));
	err_set(e, E_CONFIG,
		"expected a wss:// or https:// URL of the daemon's TLS listener (executors never call back "
		"in clear text), got %s",
		sb.buf);
	strbuf_release(&sb);
	return -1;
}

/* A certificate's SHA-256: 64 hex digits, colons between them allowed. */
static int check_fingerprint(const char *value, size_t *at, struct err *e)
{
	size_t digits = 0;
	for (const char *p = value; *p; p++) {
		if (isxdigit((unsigned char)*p))
			digits++;
		else if (*p != ':')
			return (*at = (size_t)(p - value)),
			       err_set(e, E_CONFIG,
				       "expected the SHA-256 of the daemon's certificate: 64 hex digits "
				       "(colons allowed), as `openssl x509 -noout -fingerprint -sha256` prints");
	}
	if (digits == 64)
		return 0;
	*at = 0;
	return err_set(e, E_CONFIG, "expected 64 hex digits (a SHA-256), got %zu", digits);
}

static const char *const template_placeholders[] = {
	"payload_json", "command",	 "task_id",	  "session_id", "worktree_id",
	"unix_user",	"unix_user_uid", "unix_user_gid", "daemon_url",
};

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

const char *config_template_next(const char *s, const char **name, size_t *name_len)
{
	for (const char *p = s; *p; p++) {
		if (p[0] == '$' && p[1] == '{') {
			p++; /* ${…} is the shell's */
			continue;
		}
		if (*p != '{')
			continue;
		size_t n = 0;
		while (is_name_char(p[1 + n]))
			n++;
		if (n > 0 && p[1 + n] == '}') {
			*name = p + 1;
			*name_len = n;
			return p;
		}
	}
	return NULL;
}

bool config_template_placeholder_known(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(template_placeholders); i++)
		if (strlen(template_placeholders[i]) == len && !memcmp(template_placeholders[i], name, len))
			return true;
	return false;
}

static int check_template(const char *value, size_t *at, struct err *e)
{
	if (strspn(value, " \t\n") == strlen(value))
		return err_set(e, E_CONFIG, "expected a shell command line or null, got an empty string");
	const char *name, *p = value;
	size_t len;
	while ((p = config_template_next(p, &name, &len))) {
		if (!config_template_placeholder_known(name, len)) {
			*at = (size_t)(p - value);
			struct strbuf allowed = STRBUF_INIT;
			for (size_t i = 0; i < ARRAY_SIZE(template_placeholders); i++)
				strbuf_addf(&allowed, "%s{%s}", i ? " " : "", template_placeholders[i]);
			err_set(e, E_CONFIG, "unknown placeholder {%.*s} (allowed: %s)", (int)len, name, allowed.buf);
			strbuf_release(&allowed);
			return -1;
		}
		p = name + len + 1;
	}
	return 0;
}

/* ---- derived defaults ----------------------------------------------------------------- */

static const char *slot_value(const struct config_state *st, const char *key)
{
	int i = find_key(key);
	return i < 0 ? NULL : st->slots[i].value;
}

static char *path_join(const char *dir, const char *name)
{
	return xasprintf("%s/%s", strcmp(dir, "/") ? dir : "", name);
}

static char *derive_data_home(const struct config_state *st)
{
	return xstrdup(slot_value(st, "paths.agor_home"));
}
static char *derive_repos_dir(const struct config_state *st)
{
	return path_join(slot_value(st, "paths.data_home"), "repos");
}
static char *derive_worktrees_dir(const struct config_state *st)
{
	return path_join(slot_value(st, "paths.data_home"), "worktrees");
}
static char *derive_zellij_dir(const struct config_state *st)
{
	return path_join(slot_value(st, "paths.data_home"), "zellij");
}
static char *derive_socket_path(const struct config_state *st)
{
	return path_join(slot_value(st, "paths.agor_home"), "run/agor.sock");
}
static char *derive_worktree_rbac(const struct config_state *st)
{
	return xstrdup(strcmp(slot_value(st, "execution.unix_user_mode"), "strict") ? "false" : "true");
}

/* ---- slots ---------------------------------------------------------------------------- */

static void slot_store(struct config_slot *slot, char *value, enum config_source source, int line)
{
	free(slot->value);
	slot->value = value;
	slot->source = source;
	slot->line = line;
}

/* Stores value when source ranks at least as high as what the slot holds; frees it otherwise. */
static void slot_offer(struct config_slot *slot, char *value, enum config_source source, int line)
{
	if (source >= slot->source)
		slot_store(slot, value, source, line);
	else
		free(value);
}

/* Forgets everything config_load put in (file and environment), keeping flags. */
static void reset_loaded_slots(struct config_state *st)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (st->slots[i].source != CONFIG_SOURCE_FLAG)
			slot_store(&st->slots[i], NULL, CONFIG_SOURCE_DEFAULT, 0);
}

/* "file:line: key: " / "key: " — where a slot's value came from, for cross-key errors. */
static void slot_where(const struct config_state *st, int i, struct strbuf *sb)
{
	const struct config_slot *slot = &st->slots[i];
	if (slot->source == CONFIG_SOURCE_FILE)
		strbuf_addf(sb, "%s:%d: ", st->config_file, slot->line);
	else if (slot->source == CONFIG_SOURCE_ENV)
		strbuf_addf(sb, "%s: ", keys[i].env);
	strbuf_addf(sb, "%s: ", keys[i].key);
}

static int apply_defaults(struct config_state *st, struct err *e)
{
	for (size_t i = 0; i < NKEYS; i++) {
		struct config_slot *slot = &st->slots[i];
		if (slot->source != CONFIG_SOURCE_DEFAULT)
			continue;
		char *value = NULL;
		if (keys[i].derive) {
			value = keys[i].derive(st);
		} else if (keys[i].def) {
			struct raw_value raw = { keys[i].def, strlen(keys[i].def), false, false };
			size_t at;
			if (parse_value(&keys[i], &raw, st->env, &value, &at, e) < 0) {
				err_prefix(e, "%s (default %s)", keys[i].key, keys[i].def);
				return -1;
			}
		}
		slot_store(slot, value, CONFIG_SOURCE_DEFAULT, 0);
	}
	return 0;
}

static int check_cross_key_rules(const struct config_state *st, struct err *e)
{
	int rbac = find_key("execution.worktree_rbac");
	if (!strcmp(slot_value(st, "execution.unix_user_mode"), "strict") && !strcmp(st->slots[rbac].value, "false")) {
		struct strbuf sb = STRBUF_INIT;
		slot_where(st, rbac, &sb);
		err_set(e, E_CONFIG, "%smust be true when execution.unix_user_mode is strict (docs/modes.md)", sb.buf);
		strbuf_release(&sb);
		return -1;
	}
	int sandbox = find_key("execution.sandbox.enabled");
	if (!strcmp(slot_value(st, "execution.unix_user_mode"), "sandbox") &&
	    !strcmp(st->slots[sandbox].value, "false")) {
		struct strbuf sb = STRBUF_INIT;
		slot_where(st, sandbox, &sb);
		err_set(e, E_CONFIG,
			"%smust be true when execution.unix_user_mode is sandbox (the sandbox is its isolation)",
			sb.buf);
		strbuf_release(&sb);
		return -1;
	}
	return 0;
}

static void fill_field(struct config *cfg, const struct config_key *k, const char *value)
{
	char *field = (char *)cfg + k->offset;
	switch (k->type) {
	case CONFIG_STRING:
	case CONFIG_PATH:
	case CONFIG_NULLABLE_STRING:
		memcpy(field, &value, sizeof(value));
		break;
	case CONFIG_INT: {
		long long v = strtoll(value, NULL, 10);
		if (k->size == sizeof(int)) {
			int iv = (int)v;
			memcpy(field, &iv, sizeof(iv));
		} else {
			memcpy(field, &v, sizeof(v));
		}
		break;
	}
	case CONFIG_BOOL: {
		bool b = !strcmp(value, "true");
		memcpy(field, &b, sizeof(b));
		break;
	}
	case CONFIG_ENUM: {
		int idx = 0;
		while (k->choices[idx] && strcmp(k->choices[idx], value))
			idx++;
		memcpy(field, &idx, sizeof(idx));
		break;
	}
	}
}

/* Derives what is still default, checks rules between keys, fills the typed fields. */
static int finalize(struct config *cfg, struct err *e)
{
	if (apply_defaults(cfg->state, e) < 0 || check_cross_key_rules(cfg->state, e) < 0)
		return -1;
	for (size_t i = 0; i < NKEYS; i++)
		fill_field(cfg, &keys[i], cfg->state->slots[i].value);
	cfg->config_file = cfg->state->config_file;
	return 0;
}

/* ---- config file ---------------------------------------------------------------------- */

int config_check_file_security(const struct stat *st, const char *path, struct err *e)
{
	if (!S_ISREG(st->st_mode))
		return err_set(e, E_CONFIG, "%s: not a regular file", path);
	uid_t me = geteuid();
	if (st->st_uid != me && st->st_uid != 0) {
		_cleanup_free_ char *owners = me ? xasprintf("uid %u or root", (unsigned)me) : xstrdup("root");
		return err_set(e, E_CONFIG,
			       "%s: refusing a config file owned by uid %u (it must belong to %s); "
			       "fix: chown %u %s && chmod 600 %s",
			       path, (unsigned)st->st_uid, owners, (unsigned)me, path, path);
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return err_set(e, E_CONFIG,
			       "%s: refusing a config file writable by group or others (mode "
			       "%04o); fix: chmod 600 %s",
			       path, (unsigned)(st->st_mode & 07777), path);
	return 0;
}

/* Reads the file into sb. A missing file is fine (*found = false) unless named_by says who
 * asked for it explicitly. */
static int read_config_file(const char *path, const char *named_by, struct strbuf *sb, bool *found, struct err *e)
{
	*found = false;
	/* O_NONBLOCK: a FIFO must not hang us; it is refused below as not a regular file. */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT && !named_by)
			return 0;
		err_errno(e, errno, "%s: cannot open the config file%s%s", path, named_by ? " named by " : "",
			  named_by ? named_by : "");
		e->code = E_CONFIG;
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		err_errno(e, errno, "%s: stat", path);
		e->code = E_CONFIG;
		return -1;
	}
	if (config_check_file_security(&st, path, e) < 0)
		return -1;
	ssize_t n = strbuf_read_fd(sb, fd, CONFIG_FILE_MAX);
	if (n == -2)
		return err_set(e, E_CONFIG, "%s: larger than %u bytes", path, CONFIG_FILE_MAX);
	if (n < 0) {
		err_errno(e, errno, "%s: read", path);
		e->code = E_CONFIG;
		return -1;
	}
	*found = true;
	return 0;
}

struct yaml_walk {
	struct config_state *st;
	yaml_document_t *doc;
	const char *path;
};

static int node_line(const yaml_node_t *n)
{
	return (int)n->start_mark.line + 1;
}

static const char *node_kind(const yaml_node_t *n)
{
	return n->type == YAML_MAPPING_NODE ? "a mapping" : n->type == YAML_SEQUENCE_NODE ? "a list" : "a scalar";
}

static bool node_is_null(const yaml_node_t *n)
{
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	const char *v = (const char *)n->data.scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* The names under prefix ("" = top level), in table order: "host, port, unix_user, socket_path". */
static void add_known_children(struct strbuf *sb, const char *prefix)
{
	size_t plen = strlen(prefix), start = sb->len;
	for (size_t i = 0; i < NKEYS; i++) {
		const char *rest = keys[i].key;
		if (plen) {
			if (strncmp(rest, prefix, plen) || rest[plen] != '.')
				continue;
			rest += plen + 1;
		}
		size_t n = strcspn(rest, ".");
		char *child = xstrndup(rest, n);
		bool seen = false;
		for (const char *p = sb->buf + start; (p = strstr(p, child)); p += n)
			if ((p == sb->buf + start || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
				seen = true;
		if (!seen)
			strbuf_addf(sb, "%s%s", sb->len > start ? ", " : "", child);
		free(child);
	}
}

static bool is_section(const char *full)
{
	size_t n = strlen(full);
	for (size_t i = 0; i < NKEYS; i++)
		if (!strncmp(keys[i].key, full, n) && keys[i].key[n] == '.')
			return true;
	return false;
}

static int walk_error(const struct yaml_walk *w, struct err *e, int line, const char *key, const char *fmt, ...)
	PRINTF_LIKE(5, 6);
/* Sets "path:line: key: message" (key may be NULL); fmt may refer to e->message. */
static int walk_error(const struct yaml_walk *w, struct err *e, int line, const char *key, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s:%d: ", w->path, line);
	if (key)
		strbuf_addf(&sb, "%s: ", key);
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	err_set(e, E_CONFIG, "%s", sb.buf);
	strbuf_release(&sb);
	return -1;
}

/* The line of byte `at` of a scalar: exact inside literal blocks (`|`), else the value's line. */
static int value_problem_line(const yaml_node_t *v, size_t at)
{
	int line = node_line(v);
	if (v->data.scalar.style != YAML_LITERAL_SCALAR_STYLE)
		return line;
	line++; /* the content starts below the `|` */
	for (size_t i = 0; i < at && i < v->data.scalar.length; i++)
		if (v->data.scalar.value[i] == '\n')
			line++;
	return line;
}

static int apply_file_value(struct yaml_walk *w, int idx, const yaml_node_t *kn, const yaml_node_t *vn, struct err *e)
{
	const struct config_key *k = &keys[idx];
	if (vn->type != YAML_SCALAR_NODE) {
		struct strbuf expected = STRBUF_INIT;
		describe_expected(k, &expected);
		walk_error(w, e, node_line(vn), k->key, "expected %s, got %s", expected.buf, node_kind(vn));
		strbuf_release(&expected);
		return -1;
	}
	struct raw_value raw = { (const char *)vn->data.scalar.value, vn->data.scalar.length, node_is_null(vn),
				 vn->data.scalar.style != YAML_PLAIN_SCALAR_STYLE };
	char *value;
	size_t at;
	if (parse_value(k, &raw, w->st->env, &value, &at, e) < 0)
		return walk_error(w, e, value_problem_line(vn, at), k->key, "%s", e->message);
	slot_offer(&w->st->slots[idx], value, CONFIG_SOURCE_FILE, node_line(kn));
	return 0;
}

/* The line where `name` first appears as a key of map before pair p, or 0. */
static int earlier_key_line(const struct yaml_walk *w, const yaml_node_t *map, const yaml_node_pair_t *p,
			    const char *name)
{
	for (const yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
		const yaml_node_t *kn = yaml_document_get_node(w->doc, q->key);
		if (kn && kn->type == YAML_SCALAR_NODE && !strcmp((const char *)kn->data.scalar.value, name))
			return node_line(kn);
	}
	return 0;
}

static int walk_mapping(struct yaml_walk *w, const yaml_node_t *map, const char *prefix, struct err *e);

static int walk_section(struct yaml_walk *w, const yaml_node_t *vn, const char *full, struct err *e)
{
	if (node_is_null(vn))
		return 0; /* `daemon:` with every key commented out */
	if (vn->type == YAML_MAPPING_NODE)
		return walk_mapping(w, vn, full, e);
	struct strbuf known = STRBUF_INIT;
	add_known_children(&known, full);
	walk_error(w, e, node_line(vn), full, "expected a mapping (keys: %s), got %s", known.buf, node_kind(vn));
	strbuf_release(&known);
	return -1;
}

static int walk_pair(struct yaml_walk *w, const yaml_node_t *map, const yaml_node_pair_t *p, const char *prefix,
		     struct err *e)
{
	const yaml_node_t *kn = yaml_document_get_node(w->doc, p->key);
	const yaml_node_t *vn = yaml_document_get_node(w->doc, p->value);
	if (kn->type != YAML_SCALAR_NODE)
		return walk_error(w, e, node_line(kn), *prefix ? prefix : NULL, "expected a key name, got %s",
				  node_kind(kn));
	const char *name = (const char *)kn->data.scalar.value;
	if (strlen(name) != kn->data.scalar.length || has_control_chars(name, false) || !*name) {
		struct strbuf sb = STRBUF_INIT;
		add_quoted_excerpt(&sb, name, kn->data.scalar.length);
		walk_error(w, e, node_line(kn), *prefix ? prefix : NULL, "invalid key %s", sb.buf);
		strbuf_release(&sb);
		return -1;
	}
	_cleanup_free_ char *full = *prefix ? xasprintf("%s.%s", prefix, name) : xstrdup(name);
	int first = earlier_key_line(w, map, p, name);
	if (first)
		return walk_error(w, e, node_line(kn), full, "duplicate key (first on line %d)", first);
	bool dotted = strchr(name, '.') != NULL; /* `daemon.port: 1` is not a way to spell daemon: {port: 1} */
	int idx = dotted ? -1 : find_key(full);
	if (idx >= 0)
		return apply_file_value(w, idx, kn, vn, e);
	if (!dotted && is_section(full))
		return walk_section(w, vn, full, e);
	struct strbuf known = STRBUF_INIT;
	add_known_children(&known, prefix);
	walk_error(w, e, node_line(kn), full, "unknown key (known: %s)", known.buf);
	strbuf_release(&known);
	return -1;
}

static int walk_mapping(struct yaml_walk *w, const yaml_node_t *map, const char *prefix, struct err *e)
{
	for (const yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++)
		if (walk_pair(w, map, p, prefix, e) < 0)
			return -1;
	return 0;
}

static int walk_document(struct yaml_walk *w, struct err *e)
{
	const yaml_node_t *root = yaml_document_get_root_node(w->doc);
	if (!root || node_is_null(root))
		return 0; /* an empty file, or only comments */
	if (root->type == YAML_MAPPING_NODE)
		return walk_mapping(w, root, "", e);
	struct strbuf known = STRBUF_INIT;
	add_known_children(&known, "");
	walk_error(w, e, node_line(root), NULL, "expected a mapping of settings (%s) at the top level, got %s",
		   known.buf, node_kind(root));
	strbuf_release(&known);
	return -1;
}

static int yaml_syntax_error(const yaml_parser_t *p, const char *path, const struct strbuf *text, struct err *e)
{
	size_t line = p->problem_mark.line + 1;
	if (p->error == YAML_READER_ERROR) { /* no mark: count lines up to the offset */
		line = 1;
		for (size_t i = 0; i < p->problem_offset && i < text->len; i++)
			line += text->buf[i] == '\n';
	}
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s:%zu: invalid YAML: %s", path, line, p->problem ? p->problem : "cannot parse");
	if (p->context)
		strbuf_addf(&sb, " (%s that starts on line %zu)", p->context, p->context_mark.line + 1);
	err_set(e, E_CONFIG, "%s", sb.buf);
	strbuf_release(&sb);
	return -1;
}

/* Parses text as YAML (one document) and offers every setting in it at source FILE. */
static int apply_config_text(struct config_state *st, const char *path, const struct strbuf *text, struct err *e)
{
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	if (yaml_check_depth(path, text->buf, text->len, e) < 0)
		return -1;
	if (!yaml_parser_initialize(&parser))
		return err_set(e, E_INTERNAL, "libyaml: cannot initialize the parser");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text->buf, text->len);
	int rc = -1;
	if (!yaml_parser_load(&parser, &doc)) {
		yaml_syntax_error(&parser, path, text, e);
		goto out_parser;
	}
	if (yaml_document_get_root_node(&doc)) {
		/* Loading what follows also reports syntax errors anywhere later in the file. */
		if (!yaml_parser_load(&parser, &extra)) {
			yaml_syntax_error(&parser, path, text, e);
			goto out_doc;
		}
		bool more = yaml_document_get_root_node(&extra) != NULL;
		size_t extra_line = extra.start_mark.line + 1;
		yaml_document_delete(&extra);
		if (more) {
			err_set(e, E_CONFIG, "%s:%zu: only one YAML document is allowed", path, extra_line);
			goto out_doc;
		}
	}
	struct yaml_walk w = { st, &doc, path };
	rc = walk_document(&w, e);
out_doc:
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
	return rc;
}

/* ---- loading -------------------------------------------------------------------------- */

static int apply_environment(struct config_state *st, struct err *e)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const char *v = keys[i].env ? env_lookup(st->env, keys[i].env) : NULL;
		if (!v)
			continue;
		struct raw_value raw = { v, strlen(v), false, false };
		char *value;
		size_t at;
		if (parse_value(&keys[i], &raw, st->env, &value, &at, e) < 0) {
			err_prefix(e, "%s: %s", keys[i].env, keys[i].key);
			return -1;
		}
		slot_offer(&st->slots[i], value, CONFIG_SOURCE_ENV, 0);
	}
	return 0;
}

/* --config: relative to the working directory, `~/` expanded. */
static int config_flag_path(const char *arg, char *const *env, char **out, struct err *e)
{
	static const struct config_key flag = { .key = "--config", .type = CONFIG_PATH };
	struct raw_value raw = { arg, strlen(arg), false, false };
	if (arg[0] && arg[0] != '/' && arg[0] != '~') {
		char cwd[4096];
		if (!getcwd(cwd, sizeof(cwd))) {
			err_errno(e, errno, "--config %s: cannot find the working directory", arg);
			e->code = E_CONFIG;
			return -1;
		}
		*out = path_join(cwd, arg);
		return 0;
	}
	if (parse_path(&flag, &raw, env, out, e) < 0) {
		err_prefix(e, "--config");
		return -1;
	}
	return 0;
}

/* --config > AGOR_CONFIG_PATH > <agor_home>/config.yaml (agor_home from flag, env or default). */
static int choose_config_file(struct config_state *st, const struct config_overrides *ov, const char **named_by,
			      struct err *e)
{
	free(st->config_file);
	st->config_file = NULL;
	*named_by = NULL;
	if (ov->config_path) {
		*named_by = "--config";
		return config_flag_path(ov->config_path, st->env, &st->config_file, e);
	}
	const char *env_path = env_lookup(st->env, "AGOR_CONFIG_PATH");
	if (env_path) {
		static const struct config_key k = { .key = "AGOR_CONFIG_PATH", .type = CONFIG_PATH };
		struct raw_value raw = { env_path, strlen(env_path), false, false };
		*named_by = "AGOR_CONFIG_PATH";
		if (parse_path(&k, &raw, st->env, &st->config_file, e) < 0) {
			err_prefix(e, "AGOR_CONFIG_PATH");
			return -1;
		}
		return 0;
	}
	int home = find_key("paths.agor_home");
	_cleanup_free_ char *def = NULL;
	const char *dir = st->slots[home].value;
	if (st->slots[home].source == CONFIG_SOURCE_DEFAULT) {
		struct raw_value raw = { keys[home].def, strlen(keys[home].def), false, false };
		size_t at;
		if (parse_value(&keys[home], &raw, st->env, &def, &at, e) < 0)
			return -1;
		dir = def;
	}
	st->config_file = path_join(dir, "config.yaml");
	return 0;
}

static int load_sources(struct config *cfg, const struct config_overrides *ov, struct err *e)
{
	struct config_state *st = cfg->state;
	reset_loaded_slots(st);
	cfg->config_file_found = false;
	if (apply_environment(st, e) < 0)
		return -1;
	const char *named_by;
	if (choose_config_file(st, ov, &named_by, e) < 0)
		return -1;
	_cleanup_strbuf_ struct strbuf text = STRBUF_INIT;
	bool found;
	if (read_config_file(st->config_file, named_by, &text, &found, e) < 0)
		return -1;
	cfg->config_file_found = found;
	if (found && apply_config_text(st, st->config_file, &text, e) < 0)
		return -1;
	return finalize(cfg, e);
}

const char *config_chosen_file(const struct config *cfg)
{
	return cfg->state->config_file;
}

int config_load(struct config *cfg, const struct config_overrides *ov, struct err *e)
{
	static const struct config_overrides none;
	cfg->state->env = (ov ? ov : &none)->env;
	int rc = load_sources(cfg, ov ? ov : &none, e);
	cfg->state->env = NULL; /* the caller's vector may not outlive this call */
	cfg->state->loaded = rc == 0;
	return rc;
}

/* ---- flags ---------------------------------------------------------------------------- */

int config_set_flag(struct config *cfg, const char *key, const char *value, struct err *e)
{
	int idx = find_key(key);
	if (idx < 0) {
		struct strbuf sb = STRBUF_INIT;
		add_quoted_excerpt(&sb, key, strlen(key));
		err_set(e, E_CONFIG, "unknown setting %s (see 'agor config show' for every key)", sb.buf);
		strbuf_release(&sb);
		return -1;
	}
	const struct config_key *k = &keys[idx];
	struct raw_value raw = { value, strlen(value), k->type == CONFIG_NULLABLE_STRING && !*value, false };
	char *parsed;
	size_t at;
	if (parse_value(k, &raw, NULL, &parsed, &at, e) < 0) {
		err_prefix(e, "%s", k->key);
		return -1;
	}
	slot_store(&cfg->state->slots[idx], parsed, CONFIG_SOURCE_FLAG, 0);
	return cfg->state->loaded ? finalize(cfg, e) : 0;
}

int config_set_flag_assignment(struct config *cfg, const char *assignment, struct err *e)
{
	const char *eq = strchr(assignment, '=');
	if (!eq || eq == assignment) {
		struct strbuf sb = STRBUF_INIT;
		add_quoted_excerpt(&sb, assignment, strlen(assignment));
		err_set(e, E_CONFIG, "expected KEY=VALUE, got %s", sb.buf);
		strbuf_release(&sb);
		return -1;
	}
	_cleanup_free_ char *key = xstrndup(assignment, (size_t)(eq - assignment));
	return config_set_flag(cfg, key, eq + 1, e);
}

/* ---- access --------------------------------------------------------------------------- */

/* A config and its state in one allocation: each alone is the first block of its size class in a short run (an
 * executor), which the allocator gives a page of its own — a page fault, a mapping and an unmapping more. */
struct config_with_state {
	struct config cfg;
	struct config_state state;
};

struct config *config_new(void)
{
	struct config_with_state *c = xcalloc(1, sizeof(*c));
	c->cfg.state = &c->state;
	return &c->cfg;
}

void config_free(struct config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < NKEYS; i++)
		free(cfg->state->slots[i].value);
	free(cfg->state->config_file);
	free(cfg); /* and its state (config_new) */
}

static int require_key(const char *key, unsigned type_mask)
{
	int i = find_key(key);
	if (i < 0 || !(type_mask & (1u << keys[i].type))) {
		fprintf(stderr, "agor: internal error: config key '%s' is unknown or of another type\n", key);
		abort();
	}
	return i;
}

const char *config_str(const struct config *cfg, const char *key)
{
	unsigned mask = 1u << CONFIG_STRING | 1u << CONFIG_PATH | 1u << CONFIG_ENUM | 1u << CONFIG_NULLABLE_STRING;
	return cfg->state->slots[require_key(key, mask)].value;
}

long long config_int(const struct config *cfg, const char *key)
{
	const char *v = cfg->state->slots[require_key(key, 1u << CONFIG_INT)].value;
	return v ? strtoll(v, NULL, 10) : 0;
}

bool config_bool(const struct config *cfg, const char *key)
{
	const char *v = cfg->state->slots[require_key(key, 1u << CONFIG_BOOL)].value;
	return v && !strcmp(v, "true");
}

size_t config_count(void)
{
	return NKEYS;
}

int config_entry_at(const struct config *cfg, size_t i, struct config_entry *out)
{
	if (i >= NKEYS)
		return -1;
	const struct config_slot *slot = &cfg->state->slots[i];
	*out = (struct config_entry){
		.key = keys[i].key,
		.type = keys[i].type,
		.value = slot->value,
		.source = slot->source,
		.env = keys[i].env,
		.file = slot->source == CONFIG_SOURCE_FILE ? cfg->state->config_file : NULL,
		.line = slot->source == CONFIG_SOURCE_FILE ? slot->line : 0,
	};
	return 0;
}

int config_entry_get(const struct config *cfg, const char *key, struct config_entry *out)
{
	int i = find_key(key);
	return i < 0 ? -1 : config_entry_at(cfg, (size_t)i, out);
}

const char *config_source_name(enum config_source source)
{
	static const char *const names[] = { "default", "file", "env", "flag", "policy" };
	return (size_t)source < ARRAY_SIZE(names) ? names[source] : "unknown";
}

const char *config_user_mode_name(enum config_user_mode mode)
{
	return (size_t)mode < ARRAY_SIZE(user_modes) - 1 ? user_modes[mode] : "unknown";
}

/* ---- execution policy ----------------------------------------------------------------- */

#define SANDBOX_PREFIX "execution.sandbox."
#define POLICY_KEYS_TEXT                                                                                               \
	"a policy holds execution.sandbox.*, execution.fallback_to_unified, "                                          \
	"execution.terminal_shell and execution.timeout_ms"

static bool is_policy_key(const char *key)
{
	return !strncmp(key, SANDBOX_PREFIX, strlen(SANDBOX_PREFIX)) || !strcmp(key, "execution.fallback_to_unified") ||
	       !strcmp(key, "execution.timeout_ms") || !strcmp(key, "execution.terminal_shell") ||
	       /* how the executor reaches another user: the daemon's way, sudo or its privileged socket */
	       !strcmp(key, "execution.privileged_socket") ||
	       /* the roots every payload path is confined to, and the git layout checked against */
	       !strcmp(key, "paths.repos_dir") || !strcmp(key, "paths.worktrees_dir");
}

int config_is_policy_key(const char *key)
{
	return find_key(key) >= 0 && is_policy_key(key);
}

/* When the executing user's own value of a policy key beats the daemon's: only when stricter. */
enum tighten {
	TIGHTEN_NEVER,		/* the daemon's value stands */
	TIGHTEN_TRUE,		/* a boolean: true is stricter */
	TIGHTEN_FALSE,		/* a boolean: false is stricter */
	TIGHTEN_EARLIER_CHOICE, /* an enum whose words are listed strictest first */
	TIGHTEN_SMALLER,	/* an integer: the smaller */
	TIGHTEN_LIMIT,		/* an integer limit where 0 means none: the smaller non-zero */
};

/* The keys that have a stricter direction, one row each (a new boolean where false is stricter:
 * one TIGHTEN_FALSE row). A policy key without a row takes the daemon's value, except an
 * execution.sandbox integer named like a limit (tighten_rule). */
static const struct {
	const char *key;
	enum tighten how;
} tighten_rules[] = {
	{ "execution.sandbox.enabled", TIGHTEN_TRUE },
	{ "execution.sandbox.fail_closed", TIGHTEN_TRUE },
	{ "execution.fallback_to_unified", TIGHTEN_FALSE },
	{ "execution.sandbox.network", TIGHTEN_EARLIER_CHOICE }, /* sandbox_networks: none, proxy, host */
	{ "execution.timeout_ms", TIGHTEN_SMALLER },
	{ "execution.sandbox.memory_max_mb", TIGHTEN_LIMIT },
	{ "execution.sandbox.pids_max", TIGHTEN_LIMIT },
	{ "execution.sandbox.cpu_max_percent", TIGHTEN_LIMIT },
	{ "execution.sandbox.nofile", TIGHTEN_LIMIT },
	{ "execution.sandbox.fsize_mb", TIGHTEN_LIMIT },
};

/* A limit by its name: the last part ends in _mb or holds "max" (memory_max_mb, pids_max). */
static bool named_like_a_limit(const char *key)
{
	const char *name = strrchr(key, '.') + 1;
	size_t len = strlen(name);
	return (len > 3 && !strcmp(name + len - 3, "_mb")) || strstr(name, "max");
}

static enum tighten tighten_rule(const struct config_key *k)
{
	for (size_t i = 0; i < ARRAY_SIZE(tighten_rules); i++)
		if (!strcmp(tighten_rules[i].key, k->key))
			return tighten_rules[i].how;
	if (k->type == CONFIG_INT && !strncmp(k->key, SANDBOX_PREFIX, strlen(SANDBOX_PREFIX)) &&
	    named_like_a_limit(k->key))
		return TIGHTEN_LIMIT;
	return TIGHTEN_NEVER;
}

static size_t choice_rank(const struct config_key *k, const char *v)
{
	size_t i = 0;
	while (k->choices[i] && strcmp(k->choices[i], v))
		i++;
	return i;
}

static long long limit_rank(const char *v)
{
	long long n = strtoll(v, NULL, 10);
	return n ? n : LLONG_MAX; /* 0: no limit, the loosest */
}

/* True when mine (a value the user set) is stricter than the daemon's under k's rule. */
static bool user_value_is_stricter(const struct config_key *k, const char *daemon, const char *mine)
{
	if (!daemon || !mine)
		return false;
	switch (tighten_rule(k)) {
	case TIGHTEN_NEVER:
		return false;
	case TIGHTEN_TRUE:
		return !strcmp(mine, "true") && strcmp(daemon, "true");
	case TIGHTEN_FALSE:
		return !strcmp(mine, "false") && strcmp(daemon, "false");
	case TIGHTEN_EARLIER_CHOICE:
		return k->type == CONFIG_ENUM && choice_rank(k, mine) < choice_rank(k, daemon);
	case TIGHTEN_SMALLER:
		return strtoll(mine, NULL, 10) < strtoll(daemon, NULL, 10);
	case TIGHTEN_LIMIT:
		return limit_rank(mine) < limit_rank(daemon);
	}
	return false;
}

static int policy_invalid(struct err *e, const char *key, const char *reason)
{
	_cleanup_free_ char *path = xasprintf("policy.%s", key);
	return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s,s:s}", "path", path, "reason", reason), "%s: %s", path,
			reason);
}

/* One member of a policy as canonical text (*out, NULL for null). */
static int policy_member(const char *key, const json_t *v, char **out, struct err *e)
{
	*out = NULL;
	int i = find_key(key);
	if (i < 0 || !is_policy_key(key))
		return policy_invalid(e, key,
				      i < 0 ? "unknown setting (" POLICY_KEYS_TEXT ")"
					    : "not an execution policy setting (" POLICY_KEYS_TEXT ")");
	const struct config_key *k = &keys[i];
	if (json_is_null(v) && k->type == CONFIG_NULLABLE_STRING)
		return 0;
	if (!json_is_string(v))
		return policy_invalid(e, key,
				      "expected the setting's text as a JSON string (\"true\", "
				      "\"4096\"; null only for a nullable setting)");
	struct raw_value raw = { json_string_value(v), json_string_length(v), false, false };
	struct err pe = ERR_INIT;
	size_t at;
	if (parse_value(k, &raw, NULL, out, &at, &pe) < 0) {
		policy_invalid(e, key, pe.message);
		err_clear(&pe);
		return -1;
	}
	if (!strcmp(*out, raw.text))
		return 0;
	struct strbuf sb = STRBUF_INIT; /* "~/x", "/x/": the daemon sends what config show prints */
	strbuf_addstr(&sb, "not in canonical form (give it as `agor config show` prints it, here ");
	add_quoted_excerpt(&sb, *out, strlen(*out));
	strbuf_addch(&sb, ')');
	policy_invalid(e, key, sb.buf);
	strbuf_release(&sb);
	free(*out);
	*out = NULL;
	return -1;
}

int config_policy_check(const json_t *policy, struct err *e)
{
	if (!json_is_object(policy))
		return err_setd(e, E_INVALID_PAYLOAD,
				json_pack("{s:s,s:s}", "path", "policy", "reason", "expected an object of settings"),
				"policy: expected an object of settings "
				"{\"execution.sandbox.enabled\": \"true\", …}");
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)policy, key, v)
	{
		char *value;
		if (policy_member(key, v, &value, e) < 0)
			return -1;
		free(value);
	}
	return 0;
}

/* keys[i]'s value in the policy, or its built-in default when the policy leaves it out. */
static int policy_value(const struct config_state *st, const json_t *policy, size_t i, char **out, struct err *e)
{
	const json_t *v = json_object_get(policy, keys[i].key);
	if (v)
		return policy_member(keys[i].key, v, out, e);
	*out = NULL;
	if (keys[i].derive) {
		*out = keys[i].derive(st);
		return 0;
	}
	if (!keys[i].def)
		return 0;
	struct raw_value raw = { keys[i].def, strlen(keys[i].def), false, false };
	size_t at;
	return parse_value(&keys[i], &raw, NULL, out, &at, e);
}

int config_apply_policy(struct config *cfg, const json_t *policy, struct err *e)
{
	if (config_policy_check(policy, e) < 0)
		return -1;
	struct config_state *st = cfg->state;
	for (size_t i = 0; i < NKEYS; i++) {
		if (!is_policy_key(keys[i].key))
			continue;
		char *value;
		if (policy_value(st, policy, i, &value, e) < 0)
			return -1;
		/* a built-in default is not the user's word: only what the user set may tighten */
		const struct config_slot *mine = &st->slots[i];
		if (mine->source != CONFIG_SOURCE_DEFAULT && user_value_is_stricter(&keys[i], value, mine->value))
			free(value);
		else
			slot_store(&st->slots[i], value, CONFIG_SOURCE_POLICY, 0);
	}
	return finalize(cfg, e);
}

json_t *config_execution_policy(const struct config *cfg)
{
	json_t *policy = json_object();
	for (size_t i = 0; i < NKEYS; i++) {
		const char *v = cfg->state->slots[i].value;
		if (is_policy_key(keys[i].key))
			json_object_set_new(policy, keys[i].key, v ? json_string(v) : json_null());
	}
	return policy;
}

/* ---- show ----------------------------------------------------------------------------- */

/* The value as shown to people: null, bare text, or a JSON string when bare would mislead. */
static char *display_value(const char *v)
{
	if (!v)
		return xstrdup("null");
	size_t len = strlen(v);
	if (len && !has_control_chars(v, false) && v[0] != ' ' && v[len - 1] != ' ' && v[0] != '"')
		return xstrdup(v);
	json_t *j = json_string(v);
	char *s = json_to_compact(j);
	json_decref(j);
	return s;
}

static void add_source_text(struct strbuf *sb, const struct config_entry *en)
{
	strbuf_addf(sb, "(%s", config_source_name(en->source));
	if (en->source == CONFIG_SOURCE_FILE)
		strbuf_addf(sb, ", %s:%d", en->file, en->line);
	else if (en->source == CONFIG_SOURCE_ENV)
		strbuf_addf(sb, ", %s", en->env);
	strbuf_addch(sb, ')');
}

void config_format_text(const struct config *cfg, struct strbuf *out)
{
	char *shown[NKEYS];
	int key_width = 0, value_width = 0;
	for (size_t i = 0; i < NKEYS; i++) {
		shown[i] = display_value(cfg->state->slots[i].value);
		int kw = (int)strlen(keys[i].key), vw = (int)strlen(shown[i]);
		key_width = kw > key_width ? kw : key_width;
		value_width = vw > value_width && vw <= 40 ? vw : value_width;
	}
	strbuf_addf(out, "# config file: %s%s\n", cfg->config_file ? cfg->config_file : "(none)",
		    cfg->config_file_found ? "" : " (not found: built-in defaults apply)");
	for (size_t i = 0; i < NKEYS; i++) {
		struct config_entry en;
		config_entry_at(cfg, i, &en);
		strbuf_addf(out, "%-*s  %-*s  ", key_width, en.key, value_width, shown[i]);
		add_source_text(out, &en);
		strbuf_addch(out, '\n');
		free(shown[i]);
	}
}

static json_t *typed_json_value(const struct config_entry *en)
{
	if (!en->value)
		return json_null();
	if (en->type == CONFIG_INT)
		return json_integer(strtoll(en->value, NULL, 10));
	if (en->type == CONFIG_BOOL)
		return json_boolean(!strcmp(en->value, "true"));
	return json_string(en->value);
}

static json_t *entry_to_json(const struct config_entry *en)
{
	json_t *o = json_pack("{s:s,s:o,s:s}", "key", en->key, "value", typed_json_value(en), "source",
			      config_source_name(en->source));
	if (en->source == CONFIG_SOURCE_ENV)
		json_object_set_new(o, "env", json_string(en->env));
	if (en->source == CONFIG_SOURCE_FILE) {
		json_object_set_new(o, "file", json_string(en->file));
		json_object_set_new(o, "line", json_integer(en->line));
	}
	return o;
}

json_t *config_entry_to_json(const struct config *cfg, const char *key)
{
	struct config_entry en;
	return config_entry_get(cfg, key, &en) < 0 ? NULL : entry_to_json(&en);
}

json_t *config_to_json(const struct config *cfg)
{
	json_t *settings = json_array();
	for (size_t i = 0; i < NKEYS; i++) {
		struct config_entry en;
		config_entry_at(cfg, i, &en);
		json_array_append_new(settings, entry_to_json(&en));
	}
	return json_pack("{s:o,s:s,s:b}", "settings", settings, "configFile", cfg->config_file ? cfg->config_file : "",
			 "configFileFound", cfg->config_file_found);
}
