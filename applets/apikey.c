/* apikey.c — `agor api-key set SERVICE | list | remove SERVICE`: the provider keys the daemon seals and hands
 * to agents just in time. The value is read from stdin (never argv, where /proc and shell history show it). */
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

static int read_secret(struct strbuf *value)
{
	struct termios old, quiet;
	int tty = isatty(0) && tcgetattr(0, &old) == 0;
	if (tty) {
		fprintf(stderr, "API key (not echoed): ");
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(0, TCSANOW, &quiet);
	}
	ssize_t n = strbuf_read_fd(value, 0, 64 * 1024);
	if (tty) {
		tcsetattr(0, TCSANOW, &old);
		fputc('\n', stderr);
	}
	while (value->len && (value->buf[value->len - 1] == '\n' || value->buf[value->len - 1] == '\r'))
		strbuf_setlen(value, value->len - 1);
	return n < 0 ? -1 : 0;
}

static json_t *params_for(const char *sub, int argc, char **argv, const char *scope, const char *username,
			  struct strbuf *value, int *usage)
{
	*usage = 0;
	if (!strcmp(sub, "list") && argc == 0)
		return json_object();
	if (!strcmp(sub, "remove") && argc == 1)
		return json_pack("{s:s}", "service", argv[0]);
	if (!strcmp(sub, "set") && argc == 1) {
		if (read_secret(value) < 0 || !value->len) {
			fprintf(stderr, "agor api-key set: no key on stdin (echo \"$KEY\" | agor api-key set %s)\n",
				argv[0]);
			return NULL;
		}
		return json_pack("{s:s,s:s%,s:s?,s:s?}", "service", argv[0], "value", value->buf, value->len, "scope",
				 scope, "username", username);
	}
	*usage = 1;
	return NULL;
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
	char *words[3];
	const char *scope = NULL, *username = NULL;
	int nwords = 0;
	for (int i = 1; i < argc; i++) {
		int taken = client_take_option(&o, argc, argv, &i);
		if (taken > 0)
			continue;
		if (!strcmp(argv[i], "--scope") && i + 1 < argc) {
			scope = argv[++i];
			continue;
		}
		if (!strcmp(argv[i], "--username") && i + 1 < argc) {
			username = argv[++i];
			continue;
		}
		if (taken < 0 || argv[i][0] == '-' || nwords == 3)
			return applet_usage_error(&applet_apikey, "unexpected argument '%s'", argv[i]);
		else
			words[nwords++] = argv[i];
	}
	if (!nwords)
		return applet_usage_error(&applet_apikey, "missing subcommand (set, list, remove)");
	const char *sub = words[0];
	struct strbuf value = STRBUF_INIT;
	int usage;
	if ((scope || username) && strcmp(sub, "set"))
		return applet_usage_error(&applet_apikey, "--scope and --username go with set");
	json_t *params = params_for(sub, nwords - 1, words + 1, scope, username, &value, &usage);
	explicit_bzero(value.buf, value.len);
	strbuf_release(&value);
	if (!params)
		return usage ? applet_usage_error(&applet_apikey, "bad arguments for '%s'", sub) : 1;
	const char *method = !strcmp(sub, "set")    ? "api_keys.set"
			     : !strcmp(sub, "list") ? "api_keys.list"
						    : "api_keys.remove";
	struct err e = ERR_INIT;
	json_t *result = NULL;
	struct rpc_client *c = client_connect(o.url, o.config_path, o.token, &e);
	int rc = c ? rpc_client_call(c, method, params, &result, &e) : -1;
	if (rc == 0 && !o.json)
		client_learn_user_names(c);
	rpc_client_close(c);
	json_decref(params);
	if (rc < 0) {
		fprintf(stderr, "agor api-key %s: %s\n", sub, e.message);
		err_clear(&e);
		return 1;
	}
	print_result(sub, nwords > 1 ? words[1] : "", result, o.json);
	json_decref(result);
	return 0;
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
		"git-ssh:HOST[:PORT] an ssh private key (OpenSSH format, ECDSA: ssh-keygen -t ecdsa) for git over ssh\n"
		"(port 22 by default): agor api-key set git-ssh:github.com < ~/.ssh/id_ecdsa. --username is the user "
		"a\n"
		"git credential logs in as (https: x-access-token by default; ssh: the clone URL's user, else git),\n"
		"stored with each set (set again without it: the default).\n"
		"--scope says whose tasks may use the key: members (any agor user; the default for a new key),\n"
		"admins, or owner (the admin who sets it); setting a key again keeps its scope unless --scope is "
		"given.\n"
		"Values are sealed with the daemon's master key and never returned by any command.\n",
	.main = apikey_main,
};
