/* payload.c — schema tables and strict validation of executor payloads (payload.h).
 * Never lets a field through that the table does not name; never guesses a type. */
#include <string.h>

#include "config.h"
#include "json.h"
#include "exec_env.h"
#include "payload.h"
#include "unixperm.h"
#include "banned.h"

enum field_type { F_STRING, F_BOOL, F_ENUM, F_STRMAP, F_OBJECT, F_ARGV, F_NAMES, F_TIMEOUT_MS, F_POLICY };
enum field_flags { REQUIRED = 1, NONEMPTY = 2, USER_NAME = 4, NO_NUL = 8 };

struct field_spec {
	const char *name;
	enum field_type type;
	unsigned flags;
	const char *const *values; /* F_ENUM: NULL-terminated */
};

struct command_spec {
	const char *name;
	enum payload_command id;
	const struct field_spec *params;
	int needs_token;
};

static const char *const tools[] = { "claude-code", "codex", "gemini", "opencode", NULL };
static const char *const permission_modes[] = { "default", "acceptEdits", "bypassPermissions", "plan", NULL };
static const char *const fs_access[] = { "none", "read", "write", NULL };

#define REQ_STR (REQUIRED | NONEMPTY | NO_NUL)
#define OPT_STR (NONEMPTY | NO_NUL)

static const struct field_spec prompt_params[] = {
	{ "sessionId", F_STRING, REQ_STR },
	{ "taskId", F_STRING, REQ_STR },
	{ "prompt", F_STRING, REQUIRED | NONEMPTY },
	{ "tool", F_ENUM, REQUIRED, tools },
	{ "permissionMode", F_ENUM, 0, permission_modes },
	{ "cwd", F_STRING, REQ_STR },
	{ "home", F_STRING, OPT_STR },
	{ "repoPath", F_STRING, OPT_STR },
	{ NULL },
};

static const struct field_spec clone_params[] = {
	{ "url", F_STRING, REQ_STR },	 { "outputPath", F_STRING, OPT_STR },
	{ "branch", F_STRING, OPT_STR }, { "bare", F_BOOL, 0 },
	{ "resume", F_BOOL, 0 },	 { NULL },
};

static const struct field_spec worktree_add_params[] = {
	{ "repoPath", F_STRING, REQ_STR },
	{ "worktreeName", F_STRING, REQ_STR },
	{ "worktreePath", F_STRING, REQ_STR },
	{ "branch", F_STRING, OPT_STR },
	{ "sourceBranch", F_STRING, OPT_STR },
	{ "createBranch", F_BOOL, 0 },
	{ "othersFsAccess", F_ENUM, 0, fs_access },
	{ "initUnixGroup", F_BOOL, 0 },
	{ NULL },
};

static const struct field_spec worktree_remove_params[] = {
	{ "worktreePath", F_STRING, REQ_STR },
	{ "force", F_BOOL, 0 },
	{ "finish", F_BOOL, 0 },	 /* an interrupted removal: whatever is left goes */
	{ "repoPath", F_STRING, 0 },	 /* finish: the repository whose admin entry goes too */
	{ "worktreeName", F_STRING, 0 }, /* finish: that entry's name */
	{ NULL },
};

static const struct field_spec zellij_params[] = {
	{ "sessionName", F_STRING, REQ_STR },
	{ "cwd", F_STRING, REQ_STR },
	{ "tabName", F_STRING, OPT_STR },
	{ "create", F_BOOL, 0 },
	{ NULL },
};

static const struct field_spec tmux_params[] = {
	{ "sessionName", F_STRING, REQ_STR },
	{ "cwd", F_STRING, REQ_STR },
	{ "windowName", F_STRING, OPT_STR },
	{ "create", F_BOOL, 0 },
	{ "paneTicket", F_STRING, OPT_STR }, /* a sandboxed pane reports its egress refusals with it */
	{ NULL },
};

static const struct field_spec tmux_close_params[] = {
	{ "sessionName", F_STRING, REQ_STR },
	{ "windowName", F_STRING, OPT_STR }, /* close this window */
	{ "keepWindows", F_NAMES, 0 },	     /* or: close agor's windows of the session not named here */
	{ NULL },
};

static const struct field_spec exec_run_params[] = {
	{ "argv", F_ARGV, REQUIRED },
	{ "cwd", F_STRING, REQ_STR },
	{ "timeoutMs", F_TIMEOUT_MS, 0 },
	{ "home", F_STRING, OPT_STR },
	{ "host", F_STRING, OPT_STR },
	{ "repoPath", F_STRING, OPT_STR },
	{ NULL },
};

static const struct command_spec commands[] = {
	{ "exec.run", CMD_EXEC_RUN, exec_run_params, 0 },
	{ "git.clone", CMD_GIT_CLONE, clone_params, 0 },
	{ "git.worktree.add", CMD_GIT_WORKTREE_ADD, worktree_add_params, 0 },
	{ "git.worktree.remove", CMD_GIT_WORKTREE_REMOVE, worktree_remove_params, 0 },
	{ "prompt", CMD_PROMPT, prompt_params, 1 },
	{ "tmux.attach", CMD_TMUX_ATTACH, tmux_params, 0 },
	{ "tmux.close", CMD_TMUX_CLOSE, tmux_close_params, 0 },
	{ "zellij.attach", CMD_ZELLIJ_ATTACH, zellij_params, 0 },
};

/* The base fields every payload may carry, besides command and params. */
static const struct field_spec base_fields[] = {
	{ "command", F_STRING, REQ_STR },
	{ "params", F_OBJECT, REQUIRED },
	{ "asUser", F_STRING, OPT_STR | USER_NAME },
	{ "daemonUrl", F_STRING, OPT_STR },
	{ "daemonCa", F_STRING, OPT_STR },
	{ "daemonFingerprint", F_STRING, OPT_STR },
	{ "sessionToken", F_STRING, OPT_STR },
	{ "env", F_STRMAP, 0 },
	{ "dataHome", F_STRING, OPT_STR },
	{ "dataHomeId", F_STRING, OPT_STR },
	{ "policy", F_POLICY, 0 },
	{ NULL },
};

static int invalid(struct err *e, const char *path, const char *reason)
{
	return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s,s:s}", "path", path, "reason", reason), "%s: %s", path,
			reason);
}

static char *join_path(const char *prefix, const char *name)
{
	return *prefix ? xasprintf("%s.%s", prefix, name) : xstrdup(name);
}

int payload_valid_user_name(const char *s)
{
	return unixperm_user_name_valid(s); /* one rule for user names (docs/payloads.md#impersonation) */
}

static int valid_env_name(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

static int check_env(json_t *env, const char *path, struct err *e)
{
	const char *name;
	json_t *value;
	json_object_foreach(env, name, value)
	{
		_cleanup_free_ char *p = join_path(path, name);
		if (!valid_env_name(name))
			return invalid(e, p, "not a valid environment variable name (letters, digits, _)");
		if (exec_env_name_ours(name))
			return invalid(e, p, "not allowed: the executor sets this variable itself (remove it)");
		if (!json_is_string(value))
			return invalid(e, p, "expected a string value");
		if (strlen(json_string_value(value)) != json_string_length(value))
			return invalid(e, p, "must not contain NUL bytes");
	}
	return 0;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	default:
		return "null";
	}
}

static int check_enum(const struct field_spec *f, const char *s, const char *path, struct err *e)
{
	struct strbuf allowed = STRBUF_INIT;
	for (const char *const *v = f->values; *v; v++) {
		if (!strcmp(*v, s)) {
			strbuf_release(&allowed);
			return 0;
		}
		strbuf_addf(&allowed, "%s%s", allowed.len ? "|" : "", *v);
	}
	char *reason = xasprintf("expected one of %s", allowed.buf);
	invalid(e, path, reason);
	free(reason);
	strbuf_release(&allowed);
	return -1;
}

/* A non-empty array of strings without NUL bytes, the first one non-empty. */
static int check_argv(json_t *v, const char *path, struct err *e)
{
	char reason[96];
	if (!json_is_array(v) || !json_array_size(v)) {
		snprintf(reason, sizeof(reason), "expected a non-empty array of strings, got %s",
			 json_is_array(v) ? "an empty array" : type_name(v));
		return invalid(e, path, reason);
	}
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item)
	{
		_cleanup_free_ char *at = xasprintf("%s[%zu]", path, i);
		if (!json_is_string(item)) {
			snprintf(reason, sizeof(reason), "expected a string, got %s", type_name(item));
			return invalid(e, at, reason);
		}
		if (strlen(json_string_value(item)) != json_string_length(item))
			return invalid(e, at, "must not contain NUL bytes");
		if (i == 0 && !json_string_length(item))
			return invalid(e, at, "the program must not be empty");
	}
	return 0;
}

/* A list of names (possibly empty): strings without NUL or control characters. */
static int check_names(json_t *v, const char *path, struct err *e)
{
	if (!json_is_array(v))
		return invalid(e, path, "expected an array of names");
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item)
	{
		_cleanup_free_ char *at = xasprintf("%s[%zu]", path, i);
		const char *s = json_string_value(item);
		if (!s || strlen(s) != json_string_length(item) || !*s)
			return invalid(e, at, "expected a non-empty string without NUL bytes");
		for (; *s; s++)
			if ((unsigned char)*s < 0x20 || *s == 0x7f)
				return invalid(e, at, "must not contain control characters");
	}
	return 0;
}

#define TIMEOUT_MS_MAX 604800000LL /* 7 days, as execution.timeout_ms */

static int check_timeout_ms(json_t *v, const char *path, struct err *e)
{
	if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= TIMEOUT_MS_MAX)
		return 0;
	return invalid(e, path, "expected an integer number of milliseconds, 1..604800000");
}

static int check_field(const struct field_spec *f, json_t *v, const char *path, struct err *e)
{
	char reason[96];
	switch (f->type) {
	case F_ARGV:
		return check_argv(v, path, e);
	case F_NAMES:
		return check_names(v, path, e);
	case F_TIMEOUT_MS:
		return check_timeout_ms(v, path, e);
	case F_POLICY:
		return config_policy_check(v, e); /* names policy.KEY itself */
	case F_BOOL:
		if (json_is_boolean(v))
			return 0;
		snprintf(reason, sizeof(reason), "expected a boolean, got %s", type_name(v));
		return invalid(e, path, reason);
	case F_OBJECT:
	case F_STRMAP:
		if (!json_is_object(v)) {
			snprintf(reason, sizeof(reason), "expected an object, got %s", type_name(v));
			return invalid(e, path, reason);
		}
		return f->type == F_STRMAP ? check_env(v, path, e) : 0;
	case F_STRING:
	case F_ENUM:
		break;
	}
	if (!json_is_string(v)) {
		snprintf(reason, sizeof(reason), "expected a string, got %s", type_name(v));
		return invalid(e, path, reason);
	}
	const char *s = json_string_value(v);
	if ((f->flags & NONEMPTY) && !*s)
		return invalid(e, path, "must not be empty");
	if ((f->flags & NO_NUL) && strlen(s) != json_string_length(v))
		return invalid(e, path, "must not contain NUL bytes");
	if ((f->flags & USER_NAME) && !payload_valid_user_name(s))
		return invalid(e, path, "not a valid Unix user name (^[a-z_][a-z0-9_-]{0,31}$)");
	return f->type == F_ENUM ? check_enum(f, s, path, e) : 0;
}

static const struct field_spec *find_field(const struct field_spec *fields, const char *name)
{
	for (; fields->name; fields++)
		if (!strcmp(fields->name, name))
			return fields;
	return NULL;
}

static int unknown_field(const struct field_spec *fields, const char *path, struct err *e)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "unknown field (allowed: ");
	for (const struct field_spec *f = fields; f->name; f++)
		strbuf_addf(&sb, "%s%s", f == fields ? "" : ", ", f->name);
	strbuf_addch(&sb, ')');
	invalid(e, path, sb.buf);
	strbuf_release(&sb);
	return -1;
}

/* Checks obj against fields: unknown keys first (typo safety), then each field in table order. */
static int check_object(json_t *obj, const struct field_spec *fields, const char *prefix, struct err *e)
{
	const char *key;
	json_t *value;
	json_object_foreach(obj, key, value)
	{
		if (!find_field(fields, key)) {
			_cleanup_free_ char *path = join_path(prefix, key);
			return unknown_field(fields, path, e);
		}
	}
	for (const struct field_spec *f = fields; f->name; f++) {
		json_t *v = json_object_get(obj, f->name);
		if (!v && !(f->flags & REQUIRED))
			continue; /* an absent optional field: no path to name */
		_cleanup_free_ char *path = join_path(prefix, f->name);
		if (!v)
			return invalid(e, path, "required");
		if (check_field(f, v, path, e) < 0)
			return -1;
	}
	return 0;
}

json_t *payload_supported_commands(void)
{
	json_t *a = json_array();
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		json_array_append_new(a, json_string(commands[i].name));
	return a;
}

static const struct command_spec *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static int resolve_command(json_t *root, const struct command_spec **out, struct err *e)
{
	json_t *cmd = json_object_get(root, "command");
	if (!cmd)
		return invalid(e, "command", "required");
	if (check_field(&base_fields[0], cmd, "command", e) < 0)
		return -1;
	*out = find_command(json_string_value(cmd));
	if (*out)
		return 0;
	return err_setd(e, E_UNKNOWN_COMMAND, json_pack("{s:o}", "supportedCommands", payload_supported_commands()),
			"unknown command '%s'", json_string_value(cmd));
}

int payload_parse(const char *text, size_t len, struct payload *p, struct err *e)
{
	memset(p, 0, sizeof(*p));
	if (len > PAYLOAD_MAX_BYTES)
		return err_setd(e, E_PAYLOAD_TOO_LARGE, json_pack("{s:I}", "maxBytes", (json_int_t)PAYLOAD_MAX_BYTES),
				"payload is larger than %u bytes", PAYLOAD_MAX_BYTES);
	json_t *root = json_parse(text, len, e);
	if (!root)
		return -1;
	p->root = root;
	const struct command_spec *spec;
	if (!json_is_object(root)) {
		invalid(e, "$", "the payload must be a JSON object {\"command\":…,\"params\":{…}}");
		goto fail;
	}
	if (resolve_command(root, &spec, e) < 0 || check_object(root, base_fields, "", e) < 0 ||
	    check_object(json_object_get(root, "params"), spec->params, "params", e) < 0)
		goto fail;
	p->command = spec->id;
	p->command_name = spec->name;
	p->params = json_object_get(root, "params");
	p->env = json_object_get(root, "env");
	p->as_user = json_get_str(root, "asUser");
	p->daemon_url = json_get_str(root, "daemonUrl");
	p->daemon_ca = json_get_str(root, "daemonCa");
	p->daemon_fingerprint = json_get_str(root, "daemonFingerprint");
	p->session_token = json_get_str(root, "sessionToken");
	p->data_home = json_get_str(root, "dataHome");
	p->data_home_id = json_get_str(root, "dataHomeId");
	p->policy = json_object_get(root, "policy");
	if (spec->needs_token && !p->session_token) {
		invalid(e, "sessionToken", "required for the prompt command");
		goto fail;
	}
	return 0;
fail:
	payload_release(p);
	return -1;
}

void payload_release(struct payload *p)
{
	if (p->root)
		json_decref(p->root);
	memset(p, 0, sizeof(*p));
}

const char *payload_str(const struct payload *p, const char *name)
{
	return json_get_str(p->params, name);
}

json_t *payload_param(const struct payload *p, const char *name)
{
	return json_object_get(p->params, name);
}

int payload_bool(const struct payload *p, const char *name, int dflt)
{
	json_t *v = json_object_get(p->params, name);
	return json_is_boolean(v) ? json_is_true(v) : dflt;
}
