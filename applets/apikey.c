/* apikey.c — `agor api-key set SERVICE | list | remove SERVICE`: the provider keys the daemon seals and hands
 * to agents just in time. The value is read from stdin (never argv, where /proc and shell history show it): a pipe or
 * a file whole, a terminal one line typed without echo. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "rpcclient.h"
#include "strbuf.h"
#include "banned.h"

extern const struct applet applet_apikey;

/* One line typed on the terminal fd (Enter ends it, as at any password prompt): at most max bytes. */
static ssize_t read_typed_line(struct strbuf *sb, int fd, size_t max)
{
	char c;
	ssize_t n;
	while (sb->len < max && (n = read(fd, &c, 1)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (c == '\n')
			break;
		strbuf_addch(sb, c);
	}
	return (ssize_t)sb->len;
}

/* The key: on a terminal one line typed without echo, else all of stdin (a pipe or a file). */
static int read_secret(struct strbuf *value)
{
	struct termios old, quiet;
	int tty = isatty(0) && tcgetattr(0, &old) == 0;
	if (tty) { /* echo off before the prompt shows: a key typed as soon as it appears is never echoed */
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(0, TCSANOW, &quiet);
		fprintf(stderr, "API key (not echoed): ");
	}
	ssize_t n = tty ? read_typed_line(value, 0, 64 * 1024) : strbuf_read_fd(value, 0, 64 * 1024);
	if (tty) {
		tcsetattr(0, TCSANOW, &old);
		fputc('\n', stderr);
	}
	while (value->len && (value->buf[value->len - 1] == '\n' || value->buf[value->len - 1] == '\r'))
		strbuf_setlen(value, value->len - 1);
	return n < 0 ? -1 : 0;
}

static const char *const service_arg[] = { "service", NULL };
static const struct client_flag set_flags[] = {
	{ "--scope", "scope", CLIENT_FLAG_STRING,
	  "whose tasks may use it: members (default for a new key), admins or owner", "SCOPE" },
	{ "--username", "username", CLIENT_FLAG_STRING,
	  "the user a git credential logs in as (https: x-access-token; ssh: the URL's, else git)", "LOGIN" },
	{ NULL },
};
static const struct client_command commands[] = {
	{ "set", "api_keys.set", service_arg, set_flags,
	  "SERVICE [--scope SCOPE] [--username LOGIN]   (the key on stdin)",
	  .example = "echo \"$KEY\" | agor api-key set anthropic --scope members" },
	{ "list", "api_keys.list", NULL, NULL, "", .example = "agor api-key list --json" },
	{ "remove", "api_keys.remove", service_arg, NULL, "SERVICE", .example = "agor api-key remove anthropic" },
};

/* The subcommand: the first word that is not a common option (`agor api-key --json list` as `agor api-key list
 * --json`); its index in *at, or NULL. */
static const struct client_command *find_command(int argc, char **argv, int *at)
{
	struct client_opts ignored = { 0 };
	int i = 1;
	while (i < argc && client_take_option(&ignored, argc, argv, &i) > 0)
		i++;
	*at = i;
	for (size_t k = 0; i < argc && k < ARRAY_SIZE(commands); k++)
		if (!strcmp(commands[k].name, argv[i]))
			return &commands[k];
	return NULL;
}

/* The key set reads from stdin into params.value; 0, or -1 after saying how to give it. */
static int add_secret(json_t *params, struct strbuf *value)
{
	if (read_secret(value) < 0 || !value->len) {
		fprintf(stderr, "agor api-key set: no key on stdin (echo \"$KEY\" | agor api-key set %s)\n",
			json_get_str(params, "service"));
		return -1;
	}
	json_object_set_new(params, "value", json_stringn(value->buf, value->len));
	return 0;
}

static void print_result(const char *sub, const char *service, const json_t *result, int json)
{
	if (json) {
		char *text = json_dumps(result, JSON_COMPACT);
		printf("%s\n", text);
		free(text);
	} else if (!strcmp(sub, "list")) {
		client_print_table(result, (const char *const[]){ "service", "scope", "set_by", "updated_at", NULL });
	} else if (!strcmp(sub, "set")) {
		printf("stored the key of %s (scope %s)\n", json_get_str(result, "service") ?: "?",
		       json_get_str(result, "scope") ?: "?");
	} else {
		printf("removed the key of %s\n", service);
	}
}

static int apikey_main(int argc, char **argv)
{
	struct client_opts o = { 0 };
	int at;
	const struct client_command *c = find_command(argc, argv, &at);
	if (!c)
		return applet_usage_error(&applet_apikey,
					  at < argc ? "unknown subcommand '%s'" : "missing subcommand%s",
					  at < argc ? argv[at] : " (set, list, remove)");
	_cleanup_json_ json_t *params = json_object();
	_cleanup_free_ char **rest = xcalloc((size_t)argc, sizeof(*rest));
	int nrest = 0;
	for (int i = 1; i < argc; i++)
		if (i != at)
			rest[nrest++] = argv[i];
	int status = client_parse_args("api-key", c, nrest, rest, &o, params);
	if (status)
		return status;
	struct strbuf value = STRBUF_INIT;
	int rc = !strcmp(c->name, "set") ? add_secret(params, &value) : 0;
	explicit_bzero(value.buf, value.len);
	strbuf_release(&value);
	if (rc < 0)
		return EXIT_FAILED;
	struct err e = ERR_INIT;
	json_t *result = NULL;
	struct rpc_client *cl = client_connect(o.url, o.config_path, o.token, &e);
	rc = cl ? rpc_client_call(cl, c->method, params, &result, &e) : -1;
	if (rc == 0 && !o.json)
		client_learn_user_names(cl);
	rpc_client_close(cl);
	json_t *secret = json_object_get(params, "value");
	if (secret)
		explicit_bzero((char *)json_string_value(secret), json_string_length(secret));
	if (rc < 0) {
		fprintf(stderr, "agor api-key %s: %s\n", c->name, e.message);
		err_clear(&e);
		return EXIT_FAILED;
	}
	print_result(c->name, json_get_str(params, "service") ?: "", result, o.json);
	json_decref(result);
	return EXIT_OK;
}

const struct applet applet_apikey = {
	.name = "api-key",
	.summary = "set, list and remove the provider API keys agents get just in time (admin)",
	.usage =
		"Usage: agor api-key [--json] [--url URL] [--token T] [--config PATH] set SERVICE [--scope S]\n"
		"       [--username U] | list | remove SERVICE\n"
		"\n"
		"set reads the key from stdin (not echoed on a terminal): echo \"$KEY\" | agor api-key set anthropic\n"
		"Services: anthropic (claude-code, opencode), openai (codex), google (gemini), git:HOST (HTTPS git on\n"
		"port 443) and git:HOST:PORT (on another port): a git credential goes to that exact origin only;\n"
		"git-ssh:HOST[:PORT] an ssh private key (OpenSSH format, Ed25519 or ECDSA) for git over ssh\n"
		"(port 22 by default): agor api-key set git-ssh:github.com < ~/.ssh/id_ed25519.\n"
		"--username is the user a git credential logs in as (https: x-access-token by default; ssh: the\n"
		"clone URL's user, else git),\n"
		"stored with each set (set again without it: the default).\n"
		"--scope says whose tasks may use the key: members (any agor user; the default for a new key),\n"
		"admins, or owner (the admin who sets it); setting a key again keeps its scope unless --scope is "
		"given.\n"
		"Values are sealed with the daemon's master key and never returned by any command.\n",
	.main = apikey_main,
	.flags = APPLET_SUBCOMMAND_HELP,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
