/* client.c — the shared machinery of the client commands (client.h): parse, connect, call, print.
 * Never guesses a daemon address: --url, else the configured Unix socket. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "json.h"
#include "rpcclient.h"
#include "banned.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

const struct client_flag client_common_flags[] = {
	{ "--json", "json", CLIENT_FLAG_BOOL, "print the answer as JSON (for scripts)" },
	{ "--url", "url", CLIENT_FLAG_STRING,
	  "the daemon: unix:/path, http://host:port or ws://host:port/ws (default: daemon.socket_path)", "URL" },
	{ "--token", "token", CLIENT_FLAG_STRING,
	  "over TCP, act as the user of this token (`agor user token`); default: $AGOR_TOKEN", "TOKEN" },
	{ "--config", "config", CLIENT_FLAG_STRING, "the config.yaml that names the daemon's socket", "PATH" },
	{ NULL },
};

/* "  --name VALUE   help": the help column starts at one place in every --help. */
static void print_option_line(FILE *out, const char *left, const char *help)
{
	fprintf(out, "  %-26s %s\n", left, help);
}

void client_print_flags(FILE *out, const struct client_flag *flags)
{
	for (const struct client_flag *f = flags; f && f->name; f++) {
		const char *value = f->value ? f->value : "VALUE";
		_cleanup_free_ char *left =
			f->type == CLIENT_FLAG_BOOL ? xasprintf("%s", f->name) : xasprintf("%s %s", f->name, value);
		_cleanup_free_ char *help =
			xasprintf("%s%s", f->help ? f->help : "", f->type == CLIENT_FLAG_LIST ? " (repeatable)" : "");
		print_option_line(out, left, help);
	}
}

static void print_common_options(FILE *out)
{
	client_print_flags(out, client_common_flags);
}

static void print_group_usage(FILE *out, const char *group, const struct client_command *cmds, size_t n)
{
	fprintf(out, "Usage: agor %s SUBCOMMAND [--json] [--url URL] [--config PATH]\n\n", group);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "  agor %s %s%s%s\n", group, cmds[i].name, cmds[i].usage && *cmds[i].usage ? " " : "",
			cmds[i].usage ? cmds[i].usage : "");
	fputc('\n', out);
	print_common_options(out);
	fprintf(out, "\n'agor %s SUBCOMMAND --help' shows one subcommand with an example.\n", group);
}

int client_command_words(const struct client_command *c)
{
	return !*c->name ? 0 : strchr(c->name, ' ') ? 2 : 1;
}

void client_print_help(FILE *out, const char *group, const struct client_command *c)
{
	const char *sep = c->name && *c->name ? " " : "";
	const char *usage = c->usage ? c->usage : "";
	fprintf(out, "Usage: agor %s%s%s%s%s\n\n", group, sep, c->name, *usage ? " " : "", usage);
	if (c->method)
		fprintf(out, "Calls the daemon's %s.\n\n", c->method);
	fprintf(out, "Options:\n");
	client_print_flags(out, c->flags);
	if (!c->local)
		print_common_options(out);
	print_option_line(out, "--help", "this text");
	fprintf(out, "\nExample:\n  %s\n", c->example ? c->example : "");
}

/* 1 when argv (a subcommand's arguments) asks for help before any "--" that starts a command's own argv. */
static int asks_for_help(int argc, char **argv)
{
	for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

static int usage_error(const char *group, const char *what, const char *arg)
{
	fprintf(stderr, "agor %s: %s '%s'\nTry 'agor %s --help'.\n", group, what, arg, group);
	return EXIT_USAGE;
}

static int missing_value(const char *group, const char *flag)
{
	fprintf(stderr, "agor %s: %s needs an argument\nTry 'agor %s --help'.\n", group, flag, group);
	return EXIT_USAGE;
}

/* "--name=value" of a flag that takes a value: that flag, else NULL. */
static const struct client_flag *find_flag_with_value(const struct client_command *c, const char *arg)
{
	const char *eq = strchr(arg, '=');
	for (const struct client_flag *f = c->flags; eq && f && f->name; f++)
		if (f->type != CLIENT_FLAG_BOOL && !strncmp(f->name, arg, (size_t)(eq - arg)) && !f->name[eq - arg])
			return f;
	return NULL;
}

static const struct client_flag *find_flag(const struct client_command *c, const char *name)
{
	for (const struct client_flag *f = c->flags; f && f->name; f++)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

int client_take_option(struct client_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	if (!strcmp(a, "--json")) {
		o->json = 1;
		return 1;
	}
	const char **target = !strcmp(a, "--url")      ? &o->url
			      : !strcmp(a, "--token")  ? &o->token
			      : !strcmp(a, "--config") ? &o->config_path
						       : NULL;
	if (!target)
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*target = argv[++*i];
	return 1;
}

/* Sets params[f->param] from flag f (its value, when it takes one, is argv[*i + 1]); -1 when the value is missing. */
static int take_flag(const struct client_flag *f, int argc, char **argv, int *i, json_t *params)
{
	if (f->type == CLIENT_FLAG_BOOL)
		return json_object_set_new(params, f->param, json_true()), 0;
	if (*i + 1 >= argc)
		return -1;
	json_t *value = json_string(argv[++*i]);
	if (f->type == CLIENT_FLAG_STRING)
		return json_object_set_new(params, f->param, value), 0;
	json_t *list = json_object_get(params, f->param);
	if (!json_is_array(list))
		json_object_set_new(params, f->param, list = json_array());
	json_array_append_new(list, value);
	return 0;
}

int client_parse_args(const char *group, const struct client_command *c, int argc, char **argv, struct client_opts *o,
		      json_t *params)
{
	const char *const *pos = c->positional;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const struct client_flag *f;
		int taken = o && !c->local ? client_take_option(o, argc, argv, &i) : 0;
		if (taken < 0) {
			return missing_value(group, a);
		} else if (taken) {
			continue;
		} else if ((f = find_flag(c, a))) {
			if (take_flag(f, argc, argv, &i, params) < 0)
				return missing_value(group, a);
		} else if ((f = find_flag_with_value(c, a))) {
			json_t *list = json_object_get(params, f->param), *value = json_string(strchr(a, '=') + 1);
			if (f->type == CLIENT_FLAG_LIST && json_is_array(list))
				json_array_append_new(list, value);
			else
				json_object_set_new(params, f->param,
						    f->type == CLIENT_FLAG_LIST ? json_pack("[o]", value) : value);
		} else if (c->rest && (!strcmp(a, "--") || (c->rest_at_word && a[0] != '-' && !(pos && *pos)))) {
			json_t *rest = json_array();
			for (i += !strcmp(a, "--"); i < argc;
			     i++) /* byte for byte: a command's argv need not be UTF-8 */
				json_array_append_new(rest, json_string_nocheck(argv[i]));
			json_object_set_new(params, c->rest, rest);
		} else if (a[0] == '-' && a[1]) {
			return usage_error(group, "unknown option", a);
		} else if (pos && *pos) {
			const char *key = *pos++;
			json_object_set_new(params, key + (key[0] == '?'), json_string(a));
		} else {
			return usage_error(group, "unexpected argument", a);
		}
	}
	if (pos && *pos && **pos != '?') {
		fprintf(stderr, "agor %s: missing argument '%s': usage: agor %s%s%s %s\nTry 'agor %s --help'.\n", group,
			*pos, group, *c->name ? " " : "", c->name, c->usage ? c->usage : "", group);
		return EXIT_USAGE;
	}
	return 0;
}

char *client_default_url(const char *config_path, struct err *e)
{
	struct config *cfg = config_new();
	char *url = NULL;
	if (config_load(cfg, &(struct config_overrides){ .config_path = config_path }, e) == 0)
		url = xasprintf("unix:%s", cfg->daemon.socket_path);
	config_free(cfg);
	return url;
}

static struct rpc_client *connect_with(const char *url_flag, const char *config_path, const char *token,
				       const struct rpc_client_options *opts, struct err *e)
{
	_cleanup_free_ char *url = url_flag ? xstrdup(url_flag) : client_default_url(config_path, e);
	if (!url)
		return NULL;
	struct rpc_client *cl = rpc_client_connect(url, opts, e);
	if (!cl) {
		err_prefix(e, "cannot reach the agor daemon at %s (is it running? start it with `agor daemon`)", url);
		return NULL;
	}
	if (client_authenticate(cl, url, token, e) < 0) {
		rpc_client_close(cl);
		return NULL;
	}
	return cl;
}

int client_authenticate(struct rpc_client *cl, const char *url, const char *token, struct err *e)
{
	token = token ? token : getenv("AGOR_TOKEN");
	if (!token || !*token || !strncmp(url, "unix:", 5) || url[0] == '/') /* the Unix socket knows its peer */
		return 0;
	json_t *auth = NULL, *auth_params = json_pack("{s:s}", "token", token);
	int rc = rpc_client_call(cl, "auth.token", auth_params, &auth, e);
	json_decref(auth_params);
	json_decref(auth);
	return rc;
}

struct rpc_client *client_connect(const char *url_flag, const char *config_path, const char *token, struct err *e)
{
	struct rpc_client_options opts = { 0 };
	return connect_with(url_flag, config_path, token, &opts, e);
}

/* A task.progress event: its line replaces the previous one on the terminal (stderr). */
static void show_progress(json_t *msg, void *arg)
{
	int *shown = arg;
	json_t *ev = json_object_get(msg, "params");
	const char *type = json_get_str(ev, "type"), *line = json_get_str(json_object_get(ev, "data"), "line");
	if (!type || strcmp(type, "task.progress") || !line)
		return;
	fputs("\r", stderr);
	for (size_t i = 0; line[i] && i < 200; i++)
		if ((unsigned char)line[i] >= 0x20 && line[i] != 0x7f)
			fputc(line[i], stderr);
	fputs("\033[K", stderr);
	fflush(stderr);
	*shown = 1;
}

/* Where the ids a params key takes are listed, so a unique prefix can stand for an id: any group's key
 * (group NULL), or the key of one group; field is the rows' id column. Every id argument and id flag of every
 * client command is here (t0033 walks them). */
static const struct id_list {
	const char *group, *param, *method, *field;
} id_lists[] = {
	{ NULL, "repo_id", "repos.list", "id" },       { NULL, "worktree_id", "worktrees.list", "id" },
	{ NULL, "session_id", "sessions.list", "id" }, { NULL, "user_id", "users.list", "id" },
	{ NULL, "reassign_to", "users.list", "id" },   { "repo", "id", "repos.list", "id" },
	{ "worktree", "id", "worktrees.list", "id" },  { "session", "id", "sessions.list", "id" },
	{ "task", "id", "tasks.list", "id" },	       { "user", "id", "users.list", "id" },
	{ "user", "jti", "tokens.list", "jti" },       { "nodes", "id", "nodes.list", "id" },
};
enum { ID_LEN = 32, ID_PREFIX_MIN = 6 };

/* 1 when v could be a shortened id: ID_PREFIX_MIN to ID_LEN - 1 lowercase hex digits. */
static int is_id_prefix(const char *v)
{
	size_t n = strlen(v);
	return n >= ID_PREFIX_MIN && n < ID_LEN && strspn(v, "0123456789abcdef") == n;
}

/* The rows (of the caller's own list method) whose field starts with v, or none when one is v or is named v. */
static json_t *ids_matching(const json_t *rows, const char *field, const char *v)
{
	json_t *found = json_array(), *row;
	size_t i;
	json_array_foreach(rows, i, row)
	{
		const char *id = json_get_str(row, field), *name = json_get_str(row, "name");
		if ((id && !strcmp(id, v)) || (name && !strcmp(name, v))) {
			json_array_clear(found);
			break;
		}
		if (id && !strncmp(id, v, strlen(v)))
			json_array_append_new(found, json_string(id));
	}
	return found;
}

/* client_expand_id with the rows' id column named. */
static int expand_id(struct rpc_client *cl, const char *list_method, const char *field, json_t *params, const char *key,
		     struct err *e)
{
	const char *v = json_get_str(params, key);
	json_t *rows = NULL;
	struct err ignored = ERR_INIT;
	if (!v || !is_id_prefix(v) || rpc_client_call(cl, list_method, NULL, &rows, &ignored) < 0) {
		err_clear(&ignored);
		return 0;
	}
	_cleanup_json_ json_t *found = ids_matching(rows, field, v);
	json_decref(rows);
	if (json_array_size(found) == 1) {
		json_object_set(params, key, json_array_get(found, 0));
		return 0;
	}
	if (json_array_size(found) < 2)
		return 0;
	_cleanup_free_ char *list = json_dumps(found, JSON_COMPACT);
	return err_set(e, E_USAGE, "%s: the id prefix %s is ambiguous, it begins %s: give more characters", key, v,
		       list);
}

int client_expand_id(struct rpc_client *cl, const char *list_method, json_t *params, const char *key, struct err *e)
{
	return expand_id(cl, list_method, "id", params, key, e);
}

/* Expands every id prefix among params (positional arguments and flags alike). */
static int expand_id_prefixes(struct rpc_client *cl, const char *group, json_t *params, struct err *e)
{
	for (size_t i = 0; i < ARRAY_SIZE(id_lists); i++) {
		const struct id_list *l = &id_lists[i];
		if ((!l->group || !strcmp(l->group, group)) &&
		    expand_id(cl, l->method, l->field, params, l->param, e) < 0)
			return -1;
	}
	return 0;
}

static void learn_names_shown_in(struct rpc_client *cl, const json_t *result);

/* One call. A command with progress, for a person (no --json, stderr a terminal), asks the daemon for
 * task.progress events and draws them as one updating line, ended with a newline before the answer. */
static int call_daemon(const char *group, const struct client_command *c, const struct client_opts *o, json_t *params,
		       json_t **result, struct err *e)
{
	int shown = 0, progress = c->progress && !o->json && isatty(STDERR_FILENO);
	struct rpc_client_options opts = { .on_notification = progress ? show_progress : NULL, .arg = &shown };
	if (progress)
		json_object_set_new(params, "progress", json_true());
	struct rpc_client *cl = connect_with(o->url, o->config_path, o->token, &opts, e);
	if (!cl)
		return -1;
	int rc = expand_id_prefixes(cl, group, params, e);
	if (rc == 0)
		rc = rpc_client_call(cl, c->method, params, result, e);
	if (rc == 0 && !o->json)
		learn_names_shown_in(cl, *result);
	rpc_client_close(cl);
	if (shown)
		fputs("\n", stderr);
	return rc;
}

static void print_json(const json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY);
	puts(s ? s : "null");
	free(s);
}

/* --- human output: one way to show a value, whatever prints it ----------------------------------- */

/* Agor user ids and worktree ids by name ({id: name}), learnt once per command for human output; NULL when not
 * learnt. */
static json_t *user_names, *worktree_names;

/* {id: name} of the rows list_method answers the caller (NULL when it may not list them). */
static json_t *names_of(struct rpc_client *cl, const char *list_method)
{
	json_t *rows = NULL, *row, *names;
	struct err ignored = ERR_INIT;
	size_t i;
	if (rpc_client_call(cl, list_method, NULL, &rows, &ignored) < 0) {
		err_clear(&ignored);
		return NULL;
	}
	names = json_object();
	json_array_foreach(rows, i, row) if (json_get_str(row, "id") && json_get_str(row, "name"))
		json_object_set(names, json_get_str(row, "id"), json_object_get(row, "name"));
	json_decref(rows);
	return names;
}

void client_learn_user_names(struct rpc_client *cl)
{
	if (!user_names)
		user_names = names_of(cl, "users.list");
}

void client_learn_worktree_names(struct rpc_client *cl)
{
	if (!worktree_names)
		worktree_names = names_of(cl, "worktrees.list");
}

/* Keys whose values are user ids (shown by name), and times (seconds, or milliseconds, since the epoch). */
static const char *const user_keys[] = {
	"created_by", "set_by", "decided_by", "by", "user_id", "owner", "actor", NULL
};

static int is_user_key(const char *key)
{
	for (size_t i = 0; user_keys[i]; i++)
		if (!strcmp(key, user_keys[i]))
			return 1;
	return 0;
}

static int is_time_key(const char *key)
{
	size_t n = strlen(key);
	return !strcmp(key, "at") || (n > 3 && (!strcmp(key + n - 3, "_at") || !strcmp(key + n - 2, "At")));
}

/* Whether some object inside v has a string under a key that is_key accepts (what human output shows by name),
 * looking into strings that hold an object too (a task's result), as client_print_object does. */
static int mentions_key(const json_t *v, int (*is_key)(const char *))
{
	const char *key;
	const json_t *inner;
	size_t i;
	if (json_is_string(v) && json_string_value(v)[0] == '{') {
		json_t *held = json_loads(json_string_value(v), 0, NULL);
		int found = held && mentions_key(held, is_key);
		json_decref(held);
		return found;
	}
	json_array_foreach(v, i, inner)
	{
		if (mentions_key(inner, is_key))
			return 1;
	}
	json_object_foreach((json_t *)v, key, inner)
	{
		if ((json_is_string(inner) && is_key(key)) || mentions_key(inner, is_key))
			return 1;
	}
	return 0;
}

static int is_worktree_key(const char *key)
{
	return !strcmp(key, "worktree_id");
}

/* Lists users or worktrees only when the answer holds an id that human output shows by name: one call less
 * per command otherwise. */
static void learn_names_shown_in(struct rpc_client *cl, const json_t *result)
{
	if (mentions_key(result, is_user_key))
		client_learn_user_names(cl);
	if (mentions_key(result, is_worktree_key))
		client_learn_worktree_names(cl);
}

/* The text of v, the value of key, in buf (or v's own string): times as local "YYYY-MM-DD HH:MM:SS", user
 * ids as their names, booleans yes/no, null "-", anything else compact JSON. Never fails. */
static const char *cell_text(const char *key, const json_t *v, char *buf, size_t size)
{
	if (json_is_string(v)) {
		const json_t *names = is_user_key(key)		    ? user_names
				      : !strcmp(key, "worktree_id") ? worktree_names
								    : NULL;
		const char *name = json_get_str(names, json_string_value(v));
		return name ? name : json_string_value(v);
	}
	if (json_is_integer(v) && is_time_key(key) && json_integer_value(v) > 0) {
		json_int_t t = json_integer_value(v);
		time_t secs = (time_t)(t > 100000000000LL ? t / 1000 : t);
		struct tm tm;
		if (localtime_r(&secs, &tm) && strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm))
			return buf;
	}
	if (json_is_boolean(v) || json_is_null(v) || !v)
		return json_is_true(v) ? "yes" : json_is_false(v) ? "no" : "-";
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	snprintf(buf, size, "%s", text ? text : "?");
	free(text);
	return buf;
}

const char *client_value_text(const char *key, const json_t *v, char *buf, size_t size)
{
	return cell_text(key, v, buf, size);
}

/* A column's title: what its cells show ("worktree" for worktree_id, shown by name; "created" for created_at). */
static const char *column_title(const char *key)
{
	static const char *const titles[][2] = {
		{ "worktree_id", "worktree" }, { "session_id", "session" },	{ "repo_id", "repo" },
		{ "created_at", "created" },   { "created_by", "by" },		{ "execution_user", "runs_as" },
		{ "display_name", "name" },    { "last_seen_at", "last_seen" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(titles); i++)
		if (!strcmp(key, titles[i][0]))
			return titles[i][1];
	return key;
}

void client_print_table(const json_t *rows, const char *const *keys)
{
	size_t width[16] = { 0 }, nkeys = 0;
	char buf[256];
	for (; keys[nkeys] && nkeys < 16; nkeys++)
		width[nkeys] = strlen(column_title(keys[nkeys]));
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
	{
		for (size_t k = 0; k < nkeys; k++) {
			size_t n = strlen(cell_text(keys[k], json_object_get(row, keys[k]), buf, sizeof(buf)));
			width[k] = n > width[k] ? n : width[k];
		}
	}
	for (size_t k = 0; k < nkeys; k++)
		printf("%-*s%s", k + 1 < nkeys ? (int)width[k] : 0, column_title(keys[k]), k + 1 < nkeys ? "  " : "\n");
	json_array_foreach(rows, i, row)
	{
		for (size_t k = 0; k < nkeys; k++)
			printf("%-*s%s", k + 1 < nkeys ? (int)width[k] : 0,
			       cell_text(keys[k], json_object_get(row, keys[k]), buf, sizeof(buf)),
			       k + 1 < nkeys ? "  " : "\n");
	}
}

/* A string holding a JSON object (a task's result, its token usage): that object, else NULL. */
static json_t *nested_object(const json_t *v)
{
	const char *s = json_string_value(v);
	json_t *j = s && s[0] == '{' ? json_loads(s, 0, NULL) : NULL;
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

static void print_fields(const json_t *obj, const char *prefix, int width)
{
	const char *key;
	json_t *v;
	char buf[256];
	json_object_foreach((json_t *)obj, key, v)
	{
		_cleanup_free_ char *name = xasprintf("%s%s", prefix, key);
		_cleanup_json_ json_t *inner = json_is_object(v) ? json_incref(v) : nested_object(v);
		if (json_is_null(v))
			continue;
		if (inner) {
			_cleanup_free_ char *inner_prefix = xasprintf("%s.", name);
			print_fields(inner, inner_prefix, width);
			continue;
		}
		printf("%-*s  %s\n", width, name, cell_text(key, v, buf, sizeof(buf)));
	}
}

/* The widest "prefix.key" print_fields will show. */
static int fields_width(const json_t *obj, size_t prefix_len)
{
	const char *key;
	json_t *v;
	int width = 0;
	json_object_foreach((json_t *)obj, key, v)
	{
		_cleanup_json_ json_t *inner = json_is_object(v) ? json_incref(v) : nested_object(v);
		int w = inner		  ? fields_width(inner, prefix_len + strlen(key) + 1)
			: json_is_null(v) ? 0
					  : (int)(prefix_len + strlen(key));
		width = w > width ? w : width;
	}
	return width;
}

void client_print_object(const json_t *obj)
{
	print_fields(obj, "", fields_width(obj, 0));
}

/* What lists the things a NOT_FOUND message ("no worktree with id or name X") is about, and whether they have
 * names. */
static const struct {
	const char *noun, *list;
	int named;
} listers[] = {
	{ "repo", "agor repo list", 0 },       { "worktree", "agor worktree list", 1 },
	{ "session", "agor session list", 0 }, { "task", "agor task list", 0 },
	{ "user", "agor user list", 1 },       { "node", "agor nodes list", 1 },
	{ "token", "agor user tokens", 0 },
};

void client_print_fix_hint(FILE *out, const char *code, const char *message)
{
	char noun[16];
	if (!code || !message || strcmp(code, E_NOT_FOUND) ||
	    (sscanf(message, "no %15[a-z] ", noun) != 1 && sscanf(message, "unknown %15[a-z]: ", noun) != 1))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(listers); i++)
		if (!strcmp(noun, listers[i].noun))
			fprintf(out, "`%s` shows them (%s first %d or more characters)\n", listers[i].list,
				listers[i].named ? "a name, an id, or an id's" : "an id, or its", ID_PREFIX_MIN);
}

int client_main(const char *group, const struct client_command *cmds, size_t n, int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		print_group_usage(argc < 2 ? stderr : stdout, group, cmds, n);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	const struct client_command *c = NULL;
	for (size_t i = 0; i < n && !c; i++)
		if (!strcmp(cmds[i].name, argv[1]))
			c = &cmds[i];
	if (!c)
		return usage_error(group, "unknown subcommand", argv[1]);
	if (asks_for_help(argc - 2, argv + 2)) {
		client_print_help(stdout, group, c);
		return EXIT_OK;
	}
	struct client_opts o = { 0 };
	json_t *params = json_object(), *result = NULL;
	int status = client_parse_args(group, c, argc - 2, argv + 2, &o, params);
	if (status) {
		json_decref(params);
		return status;
	}
	struct err e = ERR_INIT;
	if (call_daemon(group, c, &o, params, &result, &e) < 0) {
		if (e.code)
			fprintf(stderr, "agor %s %s: %s [%s]\n", group, c->name, e.message, e.code);
		else
			fprintf(stderr, "agor %s %s: %s\n", group, c->name, e.message);
		client_print_fix_hint(stderr, e.code, e.message);
		status = EXIT_FAILED;
	} else if (o.json) {
		print_json(result);
	} else if (!c->print) {
		client_print_object(result);
	} else {
		status = c->print(result);
	}
	if (result)
		json_decref(result);
	json_decref(params);
	json_decref(user_names);
	user_names = NULL;
	err_clear(&e);
	return status;
}
