/* node.c — `agor node`: the headless node runner. `pair` asks a gateway (an agor daemon) to pair; `run` keeps
 * a WebSocket to it and runs its system.run requests under this host's own approvals file, never the gateway's. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "applet.h"
#include "client.h"
#include "config.h"
#include "crypto.h"
#include "fsutil.h"
#include "impersonate.h"
#include "json.h"
#include "log.h"
#include "node_runner.h"
#include "rpcclient.h"
#include "banned.h"

#define NODE_FILE "node.json"

extern const struct applet applet_node;

#define NODE_USAGE                                                                                                     \
	"Usage: agor node pair --gateway URL [--name NAME] [--tls-fingerprint SHA256] [--force]\n"                     \
	"       agor node run [--once]\n"                                                                              \
	"       agor node show\n"                                                                                      \
	"\n"                                                                                                           \
	"pair sends a pairing request to the gateway (an agor daemon: ws://HOST:PORT/ws or wss://…)\n"               \
	"and stores $AGOR_HOME/node.json (0600) with the node's id and its token; an admin approves\n"                 \
	"it on the gateway with `agor nodes approve ID`. --tls-fingerprint pins the gateway's\n"                       \
	"certificate (SHA-256, 64 hex digits). run connects, authenticates, and runs the gateway's\n"                  \
	"system.run requests through `agor approvals exec` under this host's exec-approvals.json:\n"                   \
	"the gateway's security/ask can only tighten it. Environment overrides pass only when this\n"                  \
	"host's execution.exec_env_allow lists them (default LANG:LC_*:TZ:TERM:NO_COLOR:COLUMNS:LINES;\n"              \
	"never LD_*, PATH, HOME, AGOR_*, …); others are ignored and logged. It reconnects with jittered\n"           \
	"backoff and exits 1 when the gateway refuses its token (revoked). --once exits when the\n"                    \
	"connection ends.\n"

/* --- node.json --------------------------------------------------------------------------------- */

struct node_identity {
	json_t *root; /* {version, nodeId, displayName, gateway:{url, tlsFingerprint?}, token} */
	const char *node_id, *display_name, *url, *fingerprint, *token;
};

/* This host's agor home (made 0700 when missing); *env_allow (may be NULL) gets its execution.exec_env_allow
 * (malloc'd; NULL when the setting is null): what the node lets a run's env overrides set, whatever the gateway
 * sent. */
static char *node_config(char **env_allow, struct err *e)
{
	struct config *cfg = config_new();
	char *home = NULL;
	if (config_load(cfg, NULL, e) == 0) {
		home = xstrdup(config_str(cfg, "paths.agor_home"));
		if (env_allow && cfg->execution.exec_env_allow)
			*env_allow = xstrdup(cfg->execution.exec_env_allow);
	}
	config_free(cfg);
	if (home && fs_mkdir_p(home, 0700, e) < 0) {
		free(home);
		home = NULL;
	}
	return home;
}

static int identity_load(const char *home, struct node_identity *id, struct err *e)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", home, NODE_FILE);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, errno, "%s (pair first: agor node pair --gateway URL)", path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return err_set(e, E_PERMISSION_DENIED, "%s: must be a regular file of this user with mode 0600", path);
	}
	json_error_t je;
	id->root = json_loadfd(fd, 0, &je);
	close(fd);
	json_t *gw = id->root ? json_object_get(id->root, "gateway") : NULL;
	id->node_id = json_get_str(id->root, "nodeId");
	id->display_name = json_get_str(id->root, "displayName");
	id->token = json_get_str(id->root, "token");
	id->url = json_get_str(gw, "url");
	id->fingerprint = json_get_str(gw, "tlsFingerprint");
	if (!id->root || json_integer_value(json_object_get(id->root, "version")) != 1 || !id->node_id || !id->token ||
	    !id->url)
		return err_set(e, E_CONFIG,
			       "%s: expected {version:1, nodeId, displayName, gateway:{url}, token} (pair "
			       "again with --force)",
			       path);
	return 0;
}

static void identity_release(struct node_identity *id)
{
	if (id->root)
		json_decref(id->root);
	memset(id, 0, sizeof(*id));
}

/* --- pair ---------------------------------------------------------------------------------------- */

static int valid_fingerprint(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))
			return 0;
	return 1;
}

static struct rpc_client *connect_gateway(const char *url, const char *fingerprint, struct err *e)
{
	struct rpc_client_options opt = { .pin_sha256 = fingerprint,
					  .connect_timeout_ms = 10000,
					  .call_timeout_ms = 30000,
					  .max_message = 2u << 20 };
	return rpc_client_connect(url, &opt, e);
}

struct pair_opts {
	const char *gateway, *name, *fingerprint;
	int force;
};

static const struct client_flag pair_flags[] = {
	{ "--gateway", "gateway", CLIENT_FLAG_STRING, "the gateway: ws://HOST:PORT/ws or wss://…", "URL" },
	{ "--name", "name", CLIENT_FLAG_STRING, "this node's display name (default: the host name)", "NAME" },
	{ "--tls-fingerprint", "tls_fingerprint", CLIENT_FLAG_STRING,
	  "pin the gateway's certificate: its SHA-256, 64 hex digits", "SHA256" },
	{ "--force", "force", CLIENT_FLAG_BOOL, "pair again although node.json exists" },
	{ "--json", "json", CLIENT_FLAG_BOOL, "print {nodeId, status} as JSON" },
	{ NULL },
};
static const struct client_flag run_flags[] = {
	{ "--once", "once", CLIENT_FLAG_BOOL, "exit when the connection ends (no reconnecting)" },
	{ NULL },
};
static const struct client_flag show_flags[] = {
	{ "--json", "json", CLIENT_FLAG_BOOL,
	  "print {nodeId, displayName, gateway: {url, tlsFingerprint}} (never the token)" },
	{ NULL },
};
static const struct client_command commands[] = {
	{ "pair", NULL, NULL, pair_flags, "--gateway URL [--name NAME] [--tls-fingerprint SHA256] [--force]",
	  .local = 1, .example = "agor node pair --gateway ws://gateway.example:7777/ws --name build-1" },
	{ "run", NULL, NULL, run_flags, "[--once]", .local = 1, .example = "agor node run" },
	{ "show", NULL, NULL, show_flags, "[--json]", .local = 1, .example = "agor node show --json" },
};

/* argv (from the subcommand's name on) against its entry of commands; 0 or EXIT_USAGE. */
static int parse_command(int index, int argc, char **argv, json_t *params)
{
	return client_parse_args("node", &commands[index], argc - 1, argv + 1, NULL, params);
}

static int parse_pair(int argc, char **argv, struct pair_opts *o, json_t *params)
{
	int rc = parse_command(0, argc, argv, params);
	if (rc)
		return rc;
	o->gateway = json_get_str(params, "gateway");
	o->name = json_get_str(params, "name");
	o->fingerprint = json_get_str(params, "tls_fingerprint");
	o->force = json_is_true(json_object_get(params, "force"));
	if (!o->gateway)
		return applet_usage_error(&applet_node,
					  "pair: --gateway URL is required (ws://HOST:PORT/ws or wss://…)");
	if (strncmp(o->gateway, "ws://", 5) && strncmp(o->gateway, "wss://", 6))
		return applet_usage_error(&applet_node, "pair: --gateway: expected a ws:// or wss:// URL, got %s",
					  o->gateway);
	if (o->fingerprint && !valid_fingerprint(o->fingerprint))
		return applet_usage_error(&applet_node,
					  "pair: --tls-fingerprint: expected 64 hex digits (the SHA-256 of "
					  "the gateway's certificate)");
	return 0;
}

static int fail(const char *what, const struct err *e)
{
	fprintf(stderr, "agor node %s: %s\n", what, e->message);
	return EXIT_FAILED;
}

static json_t *identity_json(const char *node_id, const struct pair_opts *o, const char *name, const char *token)
{
	json_t *gw = json_pack("{s:s}", "url", o->gateway);
	if (o->fingerprint)
		json_object_set_new(gw, "tlsFingerprint", json_string(o->fingerprint));
	return json_pack("{s:i,s:s,s:s,s:o,s:s}", "version", 1, "nodeId", node_id, "displayName", name, "gateway", gw,
			 "token", token);
}

static int cmd_pair(int argc, char **argv)
{
	struct pair_opts o = { 0 };
	_cleanup_json_ json_t *flags = json_object();
	int rc = parse_pair(argc, argv, &o, flags);
	if (rc)
		return rc;
	_cleanup_err_ struct err e = ERR_INIT;
	_cleanup_free_ char *home = node_config(NULL, &e);
	if (!home)
		return fail("pair", &e);
	_cleanup_free_ char *path = xasprintf("%s/%s", home, NODE_FILE);
	if (!o.force && fs_exists(path)) {
		fprintf(stderr, "agor node pair: %s exists (this host is already paired); --force pairs again\n", path);
		return EXIT_FAILED;
	}
	char hostname[256] = "node";
	gethostname(hostname, sizeof(hostname) - 1);
	const char *name = o.name ? o.name : hostname;
	uint8_t raw[32];
	char token[65], token_hash[CRYPTO_SHA256_HEX_LEN + 1];
	if (crypto_random(raw, sizeof(raw), &e) < 0)
		return fail("pair", &e);
	crypto_hex(raw, sizeof(raw), token);
	crypto_sha256_hex(token, strlen(token), token_hash);
	struct rpc_client *c = connect_gateway(o.gateway, o.fingerprint, &e);
	_cleanup_json_ json_t *res = NULL;
	json_t *params = json_pack("{s:s,s:s}", "displayName", name, "tokenSha256", token_hash);
	rc = c ? rpc_client_call(c, "node.pair", params, &res, &e) : -1;
	json_decref(params);
	rpc_client_close(c);
	if (rc < 0)
		return fail("pair", &e);
	const char *node_id = json_get_str(res, "nodeId");
	if (!node_id)
		return fail("pair", (err_set(&e, E_INTERNAL, "the gateway answered without a nodeId"), &e));
	_cleanup_json_ json_t *doc = identity_json(node_id, &o, name, token);
	_cleanup_free_ char *text = json_dumps(doc, JSON_INDENT(2));
	crypto_wipe(token, sizeof(token));
	if (fs_write_file_atomic(path, text, strlen(text), 0600, &e) < 0)
		return fail("pair", &e);
	crypto_wipe(text, strlen(text));
	if (json_is_true(json_object_get(flags, "json")))
		printf("{\"nodeId\":\"%s\",\"status\":\"pending\"}\n", node_id); /* node ids are hex */
	else
		printf("%s\n", node_id);
	fprintf(stderr, "pairing request %s (%s) sent to %s; approve it on the gateway with: agor nodes approve %s\n",
		node_id, name, o.gateway, node_id);
	return EXIT_OK;
}

/* node.json without its token, as --json shows it. */
static void print_identity_json(const struct node_identity *id)
{
	json_t *j = json_pack("{s:s,s:s?,s:{s:s,s:s?}}", "nodeId", id->node_id, "displayName", id->display_name,
			      "gateway", "url", id->url, "tlsFingerprint", id->fingerprint);
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	printf("%s\n", text ? text : "{}");
	free(text);
	json_decref(j);
}

static int cmd_show(int json)
{
	_cleanup_err_ struct err e = ERR_INIT;
	_cleanup_free_ char *home = node_config(NULL, &e);
	struct node_identity id = { 0 };
	if (!home || identity_load(home, &id, &e) < 0) {
		identity_release(&id);
		return fail("show", &e);
	}
	if (json)
		print_identity_json(&id);
	else
		printf("nodeId: %s\ndisplayName: %s\ngateway: %s%s%s\n", id.node_id,
		       id.display_name ? id.display_name : "", id.url, id.fingerprint ? " pinned " : "",
		       id.fingerprint ? id.fingerprint : "");
	identity_release(&id);
	return EXIT_OK;
}

static int cmd_run(int argc, char **argv)
{
	_cleanup_json_ json_t *flags = json_object();
	int status = parse_command(1, argc, argv, flags), once = json_is_true(json_object_get(flags, "once"));
	if (status)
		return status;
	signal(SIGPIPE, SIG_IGN);
	struct node_identity id = { 0 };
	_cleanup_err_ struct err e = ERR_INIT;
	char *env_allow = NULL, *home = node_config(&env_allow, &e), *self = impersonate_self_path();
	int rc;
	if (!home || identity_load(home, &id, &e) < 0) {
		rc = fail("run", &e);
	} else if (!self) {
		rc = fail("run", (err_set(&e, E_INTERNAL, "cannot find the agor binary (/proc/self/exe)"), &e));
	} else {
		struct node_runner_config cfg = { .url = id.url,
						  .fingerprint = id.fingerprint,
						  .node_id = id.node_id,
						  .display_name = id.display_name,
						  .token = id.token,
						  .home = home,
						  .env_allow = env_allow,
						  .self = self,
						  .once = once };
		rc = node_runner_run(&cfg, &e) == 0 ? EXIT_OK : fail("run", &e);
	}
	identity_release(&id);
	free(home);
	free(env_allow);
	free(self);
	return rc;
}

static int node_main(int argc, char **argv)
{
	if (argc < 2)
		return applet_usage_error(&applet_node, "missing subcommand (pair, run or show)");
	log_init("node");
	if (!strcmp(argv[1], "pair"))
		return cmd_pair(argc - 1, argv + 1);
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "show")) {
		_cleanup_json_ json_t *flags = json_object();
		int status = parse_command(2, argc - 1, argv + 1, flags);
		return status ? status : cmd_show(json_is_true(json_object_get(flags, "json")));
	}
	return applet_usage_error(&applet_node, "unknown subcommand '%s'", argv[1]);
}

const struct applet applet_node = {
	.name = "node",
	.summary = "headless node runner: pairs with a gateway and runs system.run under local policy",
	.usage = NODE_USAGE,
	.main = node_main,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
