/* node.c — `agor node`: the headless node runner. `pair` asks a gateway (an agor daemon) to pair; `run` keeps
 * a WebSocket to it and runs its system.run requests under this host's own approvals file, never the gateway's. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "applet.h"
#include "approvals_exec.h"
#include "approvals_policy.h"
#include "approvals_store.h"
#include "child.h"
#include "config.h"
#include "crypto.h"
#include "exec_env.h"
#include "fsutil.h"
#include "impersonate.h"
#include "json.h"
#include "log.h"
#include "rpcclient.h"
#include "strbuf.h"
#include "banned.h"

#define NODE_FILE "node.json"
#define MAX_RUNS 8
#define POLL_MS 50
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000
#define BACKSTOP_GRACE_MS 10000
#define MAX_ANSWER_BYTES (768u << 10) /* the gateway refuses messages over 1 MiB */

extern const struct applet applet_node;

#define NODE_USAGE                                                                                      \
	"Usage: agor node pair --gateway URL [--name NAME] [--tls-fingerprint SHA256] [--force]\n"      \
	"       agor node run [--once]\n"                                                               \
	"       agor node show\n"                                                                       \
	"\n"                                                                                            \
	"pair sends a pairing request to the gateway (an agor daemon: ws://HOST:PORT/ws or wss://…)\n"   \
	"and stores $AGOR_HOME/node.json (0600) with the node's id and its token; an admin approves\n"  \
	"it on the gateway with `agor nodes approve ID`. --tls-fingerprint pins the gateway's\n"        \
	"certificate (SHA-256, 64 hex digits). run connects, authenticates, and runs the gateway's\n"   \
	"system.run requests through `agor approvals exec` under this host's exec-approvals.json:\n"    \
	"the gateway's security/ask can only tighten it. Environment overrides pass only when this\n"    \
	"host's execution.exec_env_allow lists them (default LANG:LC_*:TZ:TERM:NO_COLOR:COLUMNS:LINES;\n" \
	"never LD_*, PATH, HOME, AGOR_*, …); others are ignored and logged. It reconnects with jittered\n" \
	"backoff and exits 1 when the gateway refuses its token (revoked). --once exits when the\n"     \
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
		return err_set(e, E_CONFIG, "%s: expected {version:1, nodeId, displayName, gateway:{url}, token} (pair "
					    "again with --force)", path);
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
	struct rpc_client_options opt = { .pin_sha256 = fingerprint, .connect_timeout_ms = 10000,
					   .call_timeout_ms = 30000, .max_message = 2u << 20 };
	return rpc_client_connect(url, &opt, e);
}

struct pair_opts {
	const char *gateway, *name, *fingerprint;
	int force;
};

static int parse_pair(int argc, char **argv, struct pair_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--force")) {
			o->force = 1;
			continue;
		}
		if (i + 1 >= argc)
			return applet_usage_error(&applet_node, "pair: unknown option or missing value: %s", a);
		const char *v = argv[++i];
		if (!strcmp(a, "--gateway"))
			o->gateway = v;
		else if (!strcmp(a, "--name"))
			o->name = v;
		else if (!strcmp(a, "--tls-fingerprint"))
			o->fingerprint = v;
		else
			return applet_usage_error(&applet_node, "pair: unknown option %s", a);
	}
	if (!o->gateway)
		return applet_usage_error(&applet_node, "pair: --gateway URL is required (ws://HOST:PORT/ws or wss://…)");
	if (strncmp(o->gateway, "ws://", 5) && strncmp(o->gateway, "wss://", 6))
		return applet_usage_error(&applet_node, "pair: --gateway: expected a ws:// or wss:// URL, got %s", o->gateway);
	if (o->fingerprint && !valid_fingerprint(o->fingerprint))
		return applet_usage_error(&applet_node, "pair: --tls-fingerprint: expected 64 hex digits (the SHA-256 of "
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
	int rc = parse_pair(argc, argv, &o);
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
	printf("%s\n", node_id);
	fprintf(stderr, "pairing request %s (%s) sent to %s; approve it on the gateway with: agor nodes approve %s\n",
		node_id, name, o.gateway, node_id);
	return EXIT_OK;
}

static int cmd_show(void)
{
	_cleanup_err_ struct err e = ERR_INIT;
	_cleanup_free_ char *home = node_config(NULL, &e);
	struct node_identity id = { 0 };
	if (!home || identity_load(home, &id, &e) < 0) {
		identity_release(&id);
		return fail("show", &e);
	}
	printf("nodeId: %s\ndisplayName: %s\ngateway: %s%s%s\n", id.node_id, id.display_name ? id.display_name : "",
	       id.url, id.fingerprint ? " pinned " : "", id.fingerprint ? id.fingerprint : "");
	identity_release(&id);
	return EXIT_OK;
}

/* --- runs ---------------------------------------------------------------------------------------- */

struct run {
	json_t *rpc_id;
	char *run_id;
	struct child child;
	struct strbuf out, err_line;
	int out_open, err_open;
	long long backstop_ms; /* monotonic ms after which the approvals process is killed */
	json_t *denied;	       /* the exec.denied event, once seen */
	json_t *finished;      /* the exec.finished event, once seen */
	struct strbuf diagnostics;
};

struct runner {
	struct node_identity id;
	char *home;
	char *env_allow; /* this host's execution.exec_env_allow; NULL: no override passes */
	char *self;
	struct rpc_client *c;
	struct run *runs[MAX_RUNS];
};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void send_json(struct runner *r, json_t *msg)
{
	_cleanup_free_ char *text = json_to_compact(msg);
	_cleanup_err_ struct err e = ERR_INIT;
	json_decref(msg);
	if (r->c && rpc_client_send(r->c, text, strlen(text), &e) < 0)
		log_warn("node: cannot send to the gateway: %s", e.message);
}

static void answer_error(struct runner *r, json_t *rpc_id, const struct err *e)
{
	send_json(r, json_pack("{s:s,s:O,s:{s:i,s:s,s:{s:s}}}", "jsonrpc", "2.0", "id", rpc_id, "error", "code",
			       -32000, "message", e->message, "data", "code", e->code));
}

static int level_arg(json_t *params, const char *key, int (*parse)(const char *), const char *flag,
		     struct strvec *args, struct err *e)
{
	json_t *v = json_object_get(params, key);
	if (!v)
		return 0;
	if (!json_is_string(v) || parse(json_string_value(v)) < 0)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", key), "system.run: params.%s: not a "
											 "valid level", key);
	strvec_push(args, flag);
	strvec_push(args, json_string_value(v));
	return 0;
}

/* The `agor approvals exec …` command line for a system.run request. */
static int approvals_args(struct runner *r, json_t *params, struct strvec *args, struct err *e)
{
	json_t *argv = json_object_get(params, "argv"), *timeout = json_object_get(params, "timeoutMs");
	const char *agent = json_get_str(params, "agentId");
	size_t i;
	json_t *w;
	int ok = json_is_array(argv) && json_array_size(argv) > 0;
	json_array_foreach(argv, i, w) ok = ok && json_is_string(w) && strlen(json_string_value(w)) == json_string_length(w);
	if (!ok)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "argv"),
				"system.run: params.argv: expected a non-empty array of strings");
	if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) < 1))
		return err_set(e, E_INVALID_PAYLOAD, "system.run: params.timeoutMs: expected a positive integer");
	if (agent && appr_agent_id_check(agent, e) < 0)
		return -1;
	/* an ask goes to the gateway (node.ask), where only an approval record for this argv's hash approves */
	strvec_pushv(args, (const char *const[]){ r->self, "approvals", "exec", "--ask-stdin", "--agent",
						  agent ? agent : "default", NULL });
	/* a request without security gets the gateway's default for remote hosts: deny */
	if (!json_object_get(params, "security"))
		strvec_pushv(args, (const char *const[]){ "--security", "deny", NULL });
	if (level_arg(params, "security", appr_security_parse, "--security", args, e) < 0 ||
	    level_arg(params, "ask", appr_ask_parse, "--ask", args, e) < 0)
		return -1;
	long long ms = timeout ? json_integer_value(timeout) : 0;
	if (ms) {
		_cleanup_free_ char *secs = xasprintf("%lld", (ms + 999) / 1000);
		strvec_pushv(args, (const char *const[]){ "--timeout", secs, NULL });
	}
	strvec_push(args, "--");
	json_array_foreach(argv, i, w) strvec_push(args, json_string_value(w));
	return 0;
}

/* The run's environment overrides: only names on this host's execution.exec_env_allow (exec_env.h) — the gateway
 * refuses the others, and a gateway that sends them anyway (forged, or configured otherwise) is not obeyed. */
static void child_env(struct runner *r, json_t *params, const char *run_id, struct strvec *env)
{
	const char *name;
	json_t *v;
	json_t *overrides = json_object_get(params, "env");
	json_object_foreach(overrides, name, v) {
		const char *why = json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)
					  ? exec_env_refusal(r->env_allow, name)
					  : "not a string";
		if (why) {
			log_warn("node: system.run %s: environment override %s ignored: %s", run_id, name, why);
			continue;
		}
		strvec_pushf(env, "%s=%s", name, json_string_value(v));
	}
	strvec_pushf(env, "AGOR_HOME=%s", r->home);
}

static void run_free(struct run *run)
{
	if (!run)
		return;
	child_release(&run->child);
	strbuf_release(&run->out);
	strbuf_release(&run->err_line);
	strbuf_release(&run->diagnostics);
	json_decref(run->rpc_id);
	if (run->denied)
		json_decref(run->denied);
	if (run->finished)
		json_decref(run->finished);
	free(run->run_id);
	free(run);
}

static int start_run(struct runner *r, struct run *run, json_t *params, struct err *e)
{
	struct strvec args = STRVEC_INIT, env = STRVEC_INIT;
	int rv = approvals_args(r, params, &args, e);
	if (rv == 0) {
		child_env(r, params, run->run_id, &env);
		run->child.args = args;
		run->child.env = env;
		run->child.inherit_env = 1;
		run->child.cwd = json_get_str(params, "cwd");
		run->child.stdin_io = CHILD_IO_PIPE; /* the gateway's answer to an exec.ask */
		run->child.stdout_io = CHILD_IO_PIPE;
		run->child.stderr_io = CHILD_IO_PIPE;
		run->child.new_process_group = 1;
		run->child.before_exec = child_die_with_parent; /* the node killed: its runs end too */
		rv = child_start(&run->child, e);
		run->child.cwd = NULL; /* borrowed from params */
	} else {
		strvec_clear(&args);
	}
	if (rv < 0)
		return -1;
	fcntl(run->child.out, F_SETFL, O_NONBLOCK);
	fcntl(run->child.err, F_SETFL, O_NONBLOCK);
	run->out_open = run->err_open = 1;
	json_t *timeout = json_object_get(params, "timeoutMs");
	run->backstop_ms = timeout ? now_ms() + json_integer_value(timeout) + BACKSTOP_GRACE_MS : 0;
	return 0;
}

static void system_run(struct runner *r, json_t *rpc_id, json_t *params)
{
	_cleanup_err_ struct err e = ERR_INIT;
	const char *run_id = json_get_str(params, "runId");
	size_t slot = 0;
	while (slot < MAX_RUNS && r->runs[slot])
		slot++;
	if (!run_id)
		err_set(&e, E_INVALID_PAYLOAD, "system.run: params.runId is required");
	else if (slot == MAX_RUNS)
		err_set(&e, E_PERMISSION_DENIED, "system.run: this node already runs %d commands; try again later", MAX_RUNS);
	struct run *run = xcalloc(1, sizeof(*run));
	child_init(&run->child); /* run_free releases it on every path */
	run->rpc_id = json_incref(rpc_id);
	run->run_id = xstrdup(run_id ? run_id : "");
	if (e.code || start_run(r, run, params, &e) < 0) {
		log_warn("node: system.run %s refused: %s", run->run_id, e.message);
		answer_error(r, rpc_id, &e);
		run_free(run);
		return;
	}
	log_info("node: run %s started (pid %d)", run->run_id, (int)run->child.pid);
	r->runs[slot] = run;
}

/* The node's policy asks: the gateway decides (node.ask); its answer goes to approvals exec's stdin. */
static void ask_gateway(struct runner *r, struct run *run, const json_t *ev)
{
	send_json(r, json_pack("{s:s,s:s+,s:s,s:{s:s,s:s?,s:O?}}", "jsonrpc", "2.0", "id", "ask:", run->run_id, "method",
			       "node.ask", "params", "runId", run->run_id, "argvSha256", json_get_str(ev, "argvSha256"),
			       "executables", json_object_get(ev, "executables")));
}

static struct run *run_by_id(struct runner *r, const char *run_id)
{
	for (size_t i = 0; i < MAX_RUNS; i++)
		if (r->runs[i] && !strcmp(r->runs[i]->run_id, run_id))
			return r->runs[i];
	return NULL;
}

/* The gateway's answer to node.ask, handed to the waiting approvals exec (one line, then EOF). */
static void on_ask_answer(struct runner *r, const char *run_id, json_t *msg)
{
	struct run *run = run_by_id(r, run_id);
	if (!run || run->child.in < 0)
		return;
	json_t *res = json_object_get(msg, "result");
	json_t *answer = json_is_object(res) ? json_incref(res)
					      : json_pack("{s:s,s:s?}", "decision", "unanswered", "reason",
							  json_get_str(json_object_get(msg, "error"), "message"));
	json_write_line(run->child.in, answer);
	json_decref(answer);
	close(run->child.in);
	run->child.in = -1;
}

/* One line of `approvals exec`'s stderr: an exec.* event goes to the gateway, anything else is kept. */
static void on_err_line(struct runner *r, struct run *run, const char *line, size_t len)
{
	struct err e = ERR_INIT;
	json_t *ev = len && line[0] == '{' ? json_parse(line, len, &e) : NULL;
	err_clear(&e);
	const char *type = ev ? json_get_str(ev, "type") : NULL;
	if (type && !strcmp(type, "exec.ask")) {
		ask_gateway(r, run, ev);
		json_decref(ev);
		return;
	}
	if (!type || strncmp(type, "exec.", 5)) {
		if (ev)
			json_decref(ev);
		strbuf_add(&run->diagnostics, line, len);
		strbuf_addch(&run->diagnostics, '\n');
		return;
	}
	json_t *data = json_deep_copy(ev);
	json_object_del(data, "type");
	send_json(r, json_pack("{s:s,s:s,s:{s:s,s:s,s:o}}", "jsonrpc", "2.0", "method", "node.event", "params", "runId",
			       run->run_id, "type", type, "data", data));
	json_t **keep = !strcmp(type, "exec.denied") ? &run->denied : !strcmp(type, "exec.finished") ? &run->finished
												   : NULL;
	if (keep && !*keep)
		*keep = json_incref(ev);
	json_decref(ev);
}

static void split_err_lines(struct runner *r, struct run *run)
{
	char *nl;
	while (run->err_line.len && (nl = memchr(run->err_line.buf, '\n', run->err_line.len))) {
		size_t n = (size_t)(nl - run->err_line.buf);
		on_err_line(r, run, run->err_line.buf, n);
		strbuf_remove_front(&run->err_line, n + 1);
	}
}

/* Reads what is available; 0 at EOF. */
static int drain(int fd, struct strbuf *sb, size_t cap)
{
	char buf[16384];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			if (sb->len < cap)
				strbuf_add(sb, buf, (size_t)n < cap - sb->len ? (size_t)n : cap - sb->len);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN ? 1 : 0;
	}
}

static json_t *run_result(struct run *run)
{
	int code = child_exit_code(&run->child);
	json_t *res = json_pack("{s:s,s:i,s:o}", "runId", run->run_id, "exitCode", code, "output",
				json_string_lossy(run->out.buf ? run->out.buf : "", run->out.len));
	if (run->denied) {
		json_object_set_new(res, "denied", json_true());
		json_object_set(res, "reason", json_object_get(run->denied, "reason"));
		if (json_is_string(json_object_get(run->denied, "detail")))
			json_object_set(res, "detail", json_object_get(run->denied, "detail"));
	}
	int timed_out = run->finished && json_is_true(json_object_get(run->finished, "timedOut"));
	json_object_set_new(res, "timedOut", json_boolean(timed_out || run->child.timed_out));
	json_object_set_new(res, "success", json_boolean(run->finished && !run->denied && code == 0));
	if (!run->finished && !run->denied)
		json_object_set_new(res, "error", json_string_lossy(run->diagnostics.buf ? run->diagnostics.buf : "",
								   run->diagnostics.len));
	return res;
}

/* Output full of control characters can grow sixfold as JSON: an answer that would pass the gateway's
 * message limit carries the event-sized tail of the output instead (and says so). */
static json_t *fit_answer(json_t *res)
{
	_cleanup_free_ char *text = json_to_compact(res);
	if (strlen(text) <= MAX_ANSWER_BYTES)
		return res;
	const char *out = json_string_value(json_object_get(res, "output"));
	struct strbuf tail = STRBUF_INIT;
	appr_event_output(out ? out : "", out ? strlen(out) : 0, &tail);
	json_object_set_new(res, "output", json_string_lossy(tail.buf ? tail.buf : "", tail.len));
	json_object_set_new(res, "outputShortened", json_true());
	strbuf_release(&tail);
	return res;
}

static void finish_if_done(struct runner *r, size_t slot)
{
	struct run *run = r->runs[slot];
	if (run->out_open || run->err_open)
		return;
	_cleanup_err_ struct err e = ERR_INIT;
	int status;
	child_wait(&run->child, &status, &e);
	if (run->err_line.len)
		on_err_line(r, run, run->err_line.buf, run->err_line.len);
	send_json(r, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", run->rpc_id, "result", fit_answer(run_result(run))));
	log_info("node: run %s finished (exit %d)", run->run_id, child_exit_code(&run->child));
	run_free(run);
	r->runs[slot] = NULL;
}

static void poll_runs(struct runner *r)
{
	for (size_t i = 0; i < MAX_RUNS; i++) {
		struct run *run = r->runs[i];
		if (!run)
			continue;
		if (run->out_open)
			run->out_open = drain(run->child.out, &run->out, APPR_OUTPUT_MAX + 64);
		if (run->err_open) {
			run->err_open = drain(run->child.err, &run->err_line, 4u << 20);
			split_err_lines(r, run);
		}
		if (run->backstop_ms && now_ms() > run->backstop_ms) {
			log_warn("node: run %s outlived its timeout: killing it", run->run_id);
			child_kill_group(&run->child, SIGKILL);
			run->child.timed_out = 1;
			run->backstop_ms = 0;
		}
		finish_if_done(r, i);
	}
}

static void stop_runs(struct runner *r)
{
	for (size_t i = 0; i < MAX_RUNS; i++) {
		if (r->runs[i])
			log_warn("node: gateway connection lost: killing run %s", r->runs[i]->run_id);
		run_free(r->runs[i]);
		r->runs[i] = NULL;
	}
}

/* --- the connection --------------------------------------------------------------------------------- */

static void on_message(struct runner *r, const char *text, size_t len)
{
	_cleanup_err_ struct err e = ERR_INIT;
	_cleanup_json_ json_t *m = json_parse(text, len, &e);
	const char *method = m ? json_get_str(m, "method") : NULL;
	json_t *id = m ? json_object_get(m, "id") : NULL;
	if (method && !strcmp(method, "system.run") && id) {
		system_run(r, id, json_object_get(m, "params"));
	} else if (method && id) {
		err_set(&e, E_UNKNOWN_COMMAND, "this node answers system.run only, not %s", method);
		answer_error(r, id, &e);
	} else if (!method && json_is_string(id) && !strncmp(json_string_value(id), "ask:", 4)) {
		on_ask_answer(r, json_string_value(id) + 4, m);
	} else if (json_object_get(m, "error")) {
		log_warn("node: the gateway refused a message: %s", json_get_str(json_object_get(m, "error"), "message"));
	}
}

enum hello { HELLO_APPROVED, HELLO_PENDING, HELLO_REFUSED, HELLO_UNREACHABLE };

static enum hello hello(struct runner *r, struct err *e)
{
	r->c = connect_gateway(r->id.url, r->id.fingerprint, e);
	if (!r->c)
		return HELLO_UNREACHABLE;
	_cleanup_json_ json_t *res = NULL;
	json_t *params = json_pack("{s:s,s:s}", "nodeId", r->id.node_id, "token", r->id.token);
	int rc = rpc_client_call(r->c, "node.hello", params, &res, e);
	json_decref(params);
	if (rc == 0 && !strcmp(json_get_str(res, "status"), "approved"))
		return HELLO_APPROVED;
	rpc_client_close(r->c);
	r->c = NULL;
	if (rc == 0)
		return HELLO_PENDING;
	return !strcmp(e->code, E_AUTH_FAILED) ? HELLO_REFUSED : HELLO_UNREACHABLE;
}

/* Serves one authenticated connection until it ends. */
static void serve(struct runner *r)
{
	struct strbuf msg = STRBUF_INIT;
	for (;;) {
		_cleanup_err_ struct err e = ERR_INIT;
		int rc = rpc_client_recv(r->c, &msg, POLL_MS, &e);
		if (rc == 0)
			on_message(r, msg.buf, msg.len);
		else if (strcmp(e.code, E_TIMEOUT) && strcmp(e.code, E_PAYLOAD_TOO_LARGE)) {
			log_warn("node: connection to %s lost: %s", r->id.url, e.message);
			break;
		}
		strbuf_reset(&msg);
		poll_runs(r);
	}
	strbuf_release(&msg);
	stop_runs(r);
	rpc_client_close(r->c);
	r->c = NULL;
}

static int jittered(int backoff_ms)
{
	uint32_t rnd = 0;
	struct err e = ERR_INIT;
	crypto_random(&rnd, sizeof(rnd), &e);
	err_clear(&e);
	return backoff_ms / 2 + (int)(rnd % (uint32_t)(backoff_ms / 2 + 1)); /* 50%..100% of the backoff */
}

static int run_loop(struct runner *r, int once)
{
	int backoff = BACKOFF_MIN_MS;
	for (;;) {
		_cleanup_err_ struct err e = ERR_INIT;
		enum hello h = hello(r, &e);
		if (h == HELLO_REFUSED) {
			fprintf(stderr, "agor node run: the gateway refused this node: %s\n", e.message);
			return EXIT_FAILED;
		}
		if (h == HELLO_APPROVED) {
			log_info("node %s (%s) connected to %s", r->id.node_id, r->id.display_name, r->id.url);
			backoff = BACKOFF_MIN_MS;
			serve(r);
		} else if (h == HELLO_PENDING) {
			log_info("node %s: pairing not approved yet (on the gateway: agor nodes approve %s)", r->id.node_id,
				 r->id.node_id);
		} else {
			log_warn("node: cannot reach %s: %s", r->id.url, e.message);
		}
		if (once)
			return h == HELLO_APPROVED ? EXIT_OK : EXIT_FAILED;
		int wait = jittered(backoff);
		usleep((useconds_t)wait * 1000);
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
}

static int cmd_run(int argc, char **argv)
{
	int once = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--once"))
			return applet_usage_error(&applet_node, "run: unknown option %s", argv[i]);
		once = 1;
	}
	signal(SIGPIPE, SIG_IGN);
	struct runner r = { 0 };
	_cleanup_err_ struct err e = ERR_INIT;
	r.home = node_config(&r.env_allow, &e);
	r.self = impersonate_self_path();
	int rc;
	if (!r.home || identity_load(r.home, &r.id, &e) < 0)
		rc = fail("run", &e);
	else if (!r.self)
		rc = fail("run", (err_set(&e, E_INTERNAL, "cannot find the agor binary (/proc/self/exe)"), &e));
	else
		rc = run_loop(&r, once);
	identity_release(&r.id);
	free(r.home);
	free(r.env_allow);
	free(r.self);
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
	if (!strcmp(argv[1], "show") && argc == 2)
		return cmd_show();
	return applet_usage_error(&applet_node, "unknown subcommand '%s'", argv[1]);
}

const struct applet applet_node = {
	.name = "node",
	.summary = "headless node runner: pairs with a gateway and runs system.run under local policy",
	.usage = NODE_USAGE,
	.main = node_main,
};
