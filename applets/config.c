/* config.c — `agor config show|get|set`: the effective settings and their sources (lib/config), and one
 * key changed in config.yaml (lib/config_edit). Never writes anything but that key; never prints anything but the
 * result on stdout. */
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

#include "applet.h"
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

/* Flags that set one key. */
static const struct {
	const char *flag;
	const char *key;
} key_flags[] = {
	{ "--home", "paths.agor_home" },
	{ "--data-home", "paths.data_home" },
	{ "--host", "daemon.host" },
	{ "--port", "daemon.port" },
};

struct show_options {
	bool json;
	const char *config_path;
};

/* Splits "--name=value" / "--name value"; returns the value or NULL (usage error printed). */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *usage_rc)
{
	const char *arg = argv[*i];
	size_t n = strlen(name);
	if (arg[n] == '=')
		return arg + n + 1;
	if (*i + 1 >= argc) {
		*usage_rc = applet_usage_error(&applet_config, "show: %s needs an argument", name);
		return NULL;
	}
	return argv[++*i];
}

static bool option_is(const char *arg, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(arg, name, n) && (arg[n] == '\0' || arg[n] == '=');
}

/* A flag whose value is a setting: a bad value is a usage error naming the flag. */
static int set_from_flag(struct config *cfg, const char *flag, const char *key, const char *value)
{
	_cleanup_err_ struct err e = ERR_INIT;
	int rc = key ? config_set_flag(cfg, key, value, &e) : config_set_flag_assignment(cfg, value, &e);
	if (rc < 0)
		return applet_usage_error(&applet_config, "%s: %s", flag, e.message);
	return 0;
}

static int parse_show_args(int argc, char **argv, struct config *cfg, struct show_options *opt)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		int rc = 0;
		if (!strcmp(arg, "--json")) {
			opt->json = true;
			continue;
		}
		if (option_is(arg, "--config")) {
			if (!(opt->config_path = option_value(argc, argv, &i, "--config", &rc)))
				return rc;
			continue;
		}
		if (option_is(arg, "--set")) {
			const char *v = option_value(argc, argv, &i, "--set", &rc);
			if (!v || set_from_flag(cfg, "--set", NULL, v))
				return v ? EXIT_USAGE : rc;
			continue;
		}
		size_t k = 0;
		while (k < ARRAY_SIZE(key_flags) && !option_is(arg, key_flags[k].flag))
			k++;
		if (k == ARRAY_SIZE(key_flags))
			return applet_usage_error(&applet_config, "show: unknown %s '%s'",
						  arg[0] == '-' ? "option" : "argument", arg);
		const char *v = option_value(argc, argv, &i, key_flags[k].flag, &rc);
		if (!v || set_from_flag(cfg, key_flags[k].flag, key_flags[k].key, v))
			return v ? EXIT_USAGE : rc;
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
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(CONFIG_USAGE, stdout);
		return EXIT_OK;
	}
	struct config *cfg = config_new();
	struct show_options opt = { 0 };
	int rc = parse_show_args(argc, argv, cfg, &opt);
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

/* Moves the first npos arguments that are not options to the front; returns how many there were. */
static int take_positionals(int argc, char **argv, char **pos, int npos)
{
	int n = 0;
	for (int i = 1; i < argc && n < npos; i++)
		if (argv[i][0] != '-' &&
		    (i == 1 || argv[i - 1][0] != '-' || strchr(argv[i - 1], '=') || !strcmp(argv[i - 1], "--json"))) {
			pos[n++] = argv[i];
			memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof(*argv)); /* keeps the NULL */
			argc--, i--;
		}
	return n;
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
	char *key = NULL;
	if (take_positionals(argc, argv, &key, 1) != 1)
		return applet_usage_error(&applet_config, "usage: agor config get KEY [--json]");
	argc--;
	struct config *cfg = config_new();
	struct show_options opt = { 0 };
	int rc = parse_show_args(argc, argv, cfg, &opt);
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
	char *pos[2] = { NULL, NULL };
	if (take_positionals(argc, argv, pos, 2) != 2)
		return applet_usage_error(&applet_config, "usage: agor config set KEY VALUE");
	argc -= 2;
	struct config *cfg = config_new();
	struct show_options opt = { 0 };
	int rc = parse_show_args(argc, argv, cfg, &opt);
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
		} else if (!opt.json) {
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
};
