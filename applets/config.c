/* config.c — `agor config show|get|set`: the effective settings and their sources (lib/config), and one
 * key changed in config.yaml (lib/config_edit). Never writes anything but that key; never prints anything but the
 * result on stdout. */
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

#include "applet.h"
#include "client.h"
#include "config.h"
#include "config_edit.h"
#include "json.h"
#include "paths.h"
#include "banned.h"

extern const struct applet applet_config;

#define CONFIG_USAGE                                                                                                   \
	"Usage: agor config show [--json] [--config PATH] [--home DIR] [--data-home DIR]\n"                            \
	"                        [--host HOST] [--port N] [--set KEY=VALUE]…\n"                                      \
	"       agor config get KEY [--json] [same options as show]\n"                                                 \
	"       agor config set KEY VALUE [--config PATH] [--home DIR]\n"                                              \
	"\n"                                                                                                           \
	"show prints every effective setting, its value and where it came from:\n"                                     \
	"flag > environment > config.yaml > built-in default. get prints one (--json:\n"                               \
	"{key,value,source,file?,line?,env?}). set writes KEY: VALUE into config.yaml, keeping\n"                      \
	"every other line and comment; the value is checked like the file's own (nothing is\n"                         \
	"written when it is refused), the write is atomic and the file stays 0600. An\n"                               \
	"environment variable or flag still overrides what set wrote (get shows the source).\n"                        \
	"A running daemon reads config.yaml at start: restart it to apply.\n"                                          \
	"\n"                                                                                                           \
	"  --json             one JSON object: "                                                                       \
	"{\"settings\":[{key,value,source,file?,line?,env?}…],\n"                                                    \
	"                     \"configFile\":PATH,\"configFileFound\":BOOL}\n"                                         \
	"  --config PATH      read this file (it must exist); default $AGOR_CONFIG_PATH,\n"                            \
	"                     else $AGOR_HOME/config.yaml\n"                                                           \
	"  --home DIR         paths.agor_home (also moves the default config file)\n"                                  \
	"  --data-home DIR    paths.data_home\n"                                                                       \
	"  --host HOST        daemon.host\n"                                                                           \
	"  --port N           daemon.port\n"                                                                           \
	"  --set KEY=VALUE    any setting by its dotted key (repeatable)\n"                                            \
	"\n"                                                                                                           \
	"Environment: AGOR_HOME AGOR_DATA_HOME AGOR_CONFIG_PATH AGOR_DAEMON_HOST "                                     \
	"AGOR_DAEMON_PORT\n"                                                                                           \
	"Exit status: 0 ok, 1 configuration error, 2 usage error.\n"

#define LOAD_FLAGS                                                                                                     \
	{ "--json", "json", CLIENT_FLAG_BOOL, "one JSON object (show: {settings, configFile, configFileFound})" },     \
		{ "--config", "config", CLIENT_FLAG_STRING,                                                            \
		  "this config.yaml (it must exist); default $AGOR_CONFIG_PATH, else $AGOR_HOME/config.yaml",          \
		  "PATH" },                                                                                            \
		{ "--home", "paths.agor_home", CLIENT_FLAG_STRING,                                                     \
		  "paths.agor_home (also moves the default config file)", "DIR" },                                     \
		{ "--data-home", "paths.data_home", CLIENT_FLAG_STRING, "paths.data_home", "DIR" },                    \
		{ "--host", "daemon.host", CLIENT_FLAG_STRING, "daemon.host", "ADDRESS" },                             \
		{ "--port", "daemon.port", CLIENT_FLAG_STRING, "daemon.port", "PORT" },                                \
		{ "--set", "set", CLIENT_FLAG_LIST, "any setting by its dotted key", "KEY=VALUE" },                    \
	{                                                                                                              \
		NULL                                                                                                   \
	}

static const struct client_flag load_flags[] = { LOAD_FLAGS };
static const char *const key_arg[] = { "key", NULL }, *const key_value_args[] = { "key", "value", NULL };

static const struct client_command commands[] = {
	{ "show", NULL, NULL, load_flags,
	  "[--json] [--config PATH] [--home DIR] [--data-home DIR] [--host HOST] "
	  "[--port N] [--set KEY=VALUE]…",
	  .local = 1, .example = "agor config show --set daemon.port=7777" },
	{ "get", NULL, key_arg, load_flags, "KEY [--json] [same options as show]", .local = 1,
	  .example = "agor config get execution.unix_user_mode --json" },
	{ "set", NULL, key_value_args, load_flags, "KEY VALUE [--config PATH] [--home DIR]", .local = 1,
	  .example = "agor config set execution.sandbox.enabled true" },
};

/* The keys the flags --home, --data-home, --host and --port set (after every --set, so they win over it). */
static const char *const flag_keys[] = { "paths.agor_home", "paths.data_home", "daemon.host", "daemon.port" };

struct show_options {
	bool json;
	const char *config_path;
	json_t *params; /* what the arguments gave */
};

/* A flag whose value is a setting: a bad value is a usage error naming the flag. */
static int set_from_flag(struct config *cfg, const char *flag, const char *key, const char *value)
{
	_cleanup_err_ struct err e = ERR_INIT;
	int rc = key ? config_set_flag(cfg, key, value, &e) : config_set_flag_assignment(cfg, value, &e);
	if (rc < 0)
		return applet_usage_error(&applet_config, "%s: %s", flag, e.message);
	return 0;
}

/* argv (from the subcommand's name on) against command c into opt->params, then the settings they give into
 * cfg; 0 or EXIT_USAGE. */
static int parse_show_args(const struct client_command *c, int argc, char **argv, struct config *cfg,
			   struct show_options *opt)
{
	int rc = client_parse_args("config", c, argc - 1, argv + 1, NULL, opt->params);
	if (rc)
		return rc;
	opt->json = json_is_true(json_object_get(opt->params, "json"));
	opt->config_path = json_get_str(opt->params, "config");
	json_t *v;
	size_t i;
	json_array_foreach(json_object_get(opt->params, "set"), i,
			   v) if (set_from_flag(cfg, "--set", NULL, json_string_value(v))) return EXIT_USAGE;
	for (i = 0; i < ARRAY_SIZE(flag_keys); i++) {
		const char *value = json_get_str(opt->params, flag_keys[i]);
		if (value && set_from_flag(cfg, load_flags[i + 2].name, flag_keys[i], value))
			return EXIT_USAGE;
	}
	return 0;
}

static int print_config(const struct config *cfg, bool json)
{
	if (json) {
		json_t *j = config_to_json(cfg);
		int rc = json_write_line(1, j);
		json_decref(j);
		return rc < 0 ? EXIT_FAILED : EXIT_OK;
	}
	struct strbuf sb = STRBUF_INIT;
	config_format_text(cfg, &sb);
	fwrite(sb.buf, 1, sb.len, stdout);
	strbuf_release(&sb);
	return fflush(stdout) ? EXIT_FAILED : EXIT_OK;
}

static int config_show(int argc, char **argv)
{
	struct config *cfg = config_new();
	_cleanup_json_ json_t *params = json_object();
	struct show_options opt = { .params = params };
	int rc = parse_show_args(&commands[0], argc, argv, cfg, &opt);
	if (rc == 0) {
		_cleanup_err_ struct err e = ERR_INIT;
		if (config_load(cfg, &(struct config_overrides){ .config_path = opt.config_path }, &e) < 0) {
			fprintf(stderr, "agor config: %s\n", e.message);
			rc = EXIT_FAILED;
		} else {
			rc = print_config(cfg, opt.json);
		}
	}
	config_free(cfg);
	return rc;
}

static int print_entry(const struct config *cfg, const char *key, bool json)
{
	struct config_entry en;
	if (config_entry_get(cfg, key, &en) < 0) {
		fprintf(stderr, "agor config get: unknown setting '%s' (see 'agor config show')\n", key);
		return EXIT_FAILED;
	}
	if (json) {
		json_t *j = config_entry_to_json(cfg, key);
		int rc = json_write_line(1, j);
		json_decref(j);
		return rc < 0 ? EXIT_FAILED : EXIT_OK;
	}
	printf("%s\n", en.value ? en.value : "null");
	return fflush(stdout) ? EXIT_FAILED : EXIT_OK;
}

/* `get KEY` loads like show (same flags), then prints one entry. */
static int config_get(int argc, char **argv)
{
	struct config *cfg = config_new();
	_cleanup_json_ json_t *params = json_object();
	struct show_options opt = { .params = params };
	int rc = parse_show_args(&commands[1], argc, argv, cfg, &opt);
	const char *key = json_get_str(params, "key");
	if (rc == 0) {
		_cleanup_err_ struct err e = ERR_INIT;
		if (config_load(cfg, &(struct config_overrides){ .config_path = opt.config_path }, &e) < 0) {
			fprintf(stderr, "agor config: %s\n", e.message);
			rc = EXIT_FAILED;
		} else {
			rc = print_entry(cfg, key, opt.json);
		}
	}
	config_free(cfg);
	return rc;
}

/* Before the first daemon start the default config.yaml's directory, AGOR_HOME, does not exist yet: for a setting
 * that will be accepted, it is made as the daemon makes it (0700, with logs/, cache/, run/). Never any other
 * directory, never for a refused setting, never when AGOR_HOME exists. */
static int ensure_home_for(const struct config *cfg, const char *path, const char *key, const char *value,
			   struct err *e)
{
	const char *home = cfg->paths.agor_home;
	struct stat st;
	if (!home || stat(home, &st) == 0)
		return 0;
	_cleanup_free_ char *in_home = xasprintf("%s/config.yaml", home);
	if (strcmp(path, in_home))
		return 0;
	struct config *check = config_new();
	struct err ignored = ERR_INIT;
	int acceptable = config_set_flag(check, key, value, &ignored) == 0;
	config_free(check);
	err_clear(&ignored);
	struct agor_paths paths = { .home = (char *)home };
	return acceptable ? paths_ensure_home(&paths, e) : 0; /* a refused one is reported by config_file_set */
}

/* `set KEY VALUE` edits the file config_load would read (even one that does not load now: the
 * edit may be its fix; the edited file must load). */
static int config_set(int argc, char **argv)
{
	struct config *cfg = config_new();
	_cleanup_json_ json_t *params = json_object();
	struct show_options opt = { .params = params };
	int rc = parse_show_args(&commands[2], argc, argv, cfg, &opt);
	const char *pos[2] = { json_get_str(params, "key"), json_get_str(params, "value") };
	if (rc == 0) {
		_cleanup_err_ struct err e = ERR_INIT, ignored = ERR_INIT;
		(void)config_load(cfg, &(struct config_overrides){ .config_path = opt.config_path }, &ignored);
		const char *path = config_chosen_file(cfg);
		if (!path) {
			fprintf(stderr, "agor config set: %s\n", ignored.message);
			rc = EXIT_FAILED;
		} else if (ensure_home_for(cfg, path, pos[0], pos[1], &e) < 0 ||
			   config_file_set(path, pos[0], pos[1], &e) < 0) {
			fprintf(stderr, "agor config set: %s\n", e.message);
			rc = EXIT_FAILED;
		} else if (opt.json) {
			json_t *j = json_pack("{s:s,s:s,s:s}", "file", path, "key", pos[0], "value", pos[1]);
			rc = json_write_line(1, j) < 0 ? EXIT_FAILED : EXIT_OK;
			json_decref(j);
		} else {
			printf("%s: %s = %s\n", path, pos[0], pos[1]);
		}
	}
	config_free(cfg);
	return rc;
}

static int config_main(int argc, char **argv)
{
	if (argc < 2)
		return applet_usage_error(&applet_config, "missing subcommand (show, get, set)");
	if (!strcmp(argv[1], "show"))
		return config_show(argc - 1, argv + 1);
	if (!strcmp(argv[1], "get"))
		return config_get(argc - 1, argv + 1);
	if (!strcmp(argv[1], "set"))
		return config_set(argc - 1, argv + 1);
	return applet_usage_error(&applet_config, "unknown subcommand '%s'", argv[1]);
}

const struct applet applet_config = {
	.name = "config",
	.summary = "show, get or set the configuration (and where each setting came from)",
	.usage = CONFIG_USAGE,
	.main = config_main,
	.flags = APPLET_SUBCOMMAND_HELP,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
