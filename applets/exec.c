/* exec.c — `agor exec`: one command through the daemon's exec.run (host sandbox, gateway or node), answering the
 * exec approval the gateway asks for it on the terminal or by flag. Never answers a request for another command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "applet.h"
#include "approvals_socket.h"
#include "approvals_store.h"
#include "client.h"
#include "json.h"
#include "rpcclient.h"
#include "strbuf.h"
#include "banned.h"

#define EXEC_CALL_ID 2
#define EXIT_DENIED  126

enum exec_answer { ANSWER_TTY, ANSWER_ONCE, ANSWER_ALWAYS, ANSWER_DENY };

struct exec_opts {
	json_t *params; /* exec.run's params */
	enum exec_answer answer;
	char argv_sha256[CRYPTO_SHA256_HEX_LEN + 1];
	struct client_opts client;
};

static int usage(const char *what)
{
	fprintf(stderr, "agor exec: %s\nTry 'agor exec --help'.\n", what);
	return EXIT_USAGE;
}

static const char *const worktree_arg[] = { "?worktree_id", NULL };
static const struct client_flag exec_flags[] = {
	{ "--host", "host", CLIENT_FLAG_STRING, "sandbox (this host, sandboxed), gateway or node", "WHERE" },
	{ "--node", "node", CLIENT_FLAG_STRING, "which node (id, name or query) with --host node", "NODE" },
	{ "--security", "security", CLIENT_FLAG_STRING, "deny, allowlist or full (only ever tightens)", "LEVEL" },
	{ "--ask", "ask", CLIENT_FLAG_STRING, "off, on-miss or always: when a person is asked", "WHEN" },
	{ "--session", "session_id", CLIENT_FLAG_STRING, "use the session's exec defaults (`/exec` in a prompt)",
	  "SESSION" },
	{ "--agent", "agent_id", CLIENT_FLAG_STRING, "whose exec-approvals allowlist applies", "AGENT" },
	{ "--timeout-ms", "timeout_ms", CLIENT_FLAG_STRING, "stop the run after this many milliseconds", "MS" },
	{ "--yes", "yes", CLIENT_FLAG_BOOL, "approve this run once if asked" },
	{ "--always", "always", CLIENT_FLAG_BOOL, "approve it and add it to the allowlist if asked" },
	{ "--no", "no", CLIENT_FLAG_BOOL, "deny it if asked (wins over --yes and --always)" },
	{ NULL },
};
static const struct client_command commands[] = {
	{ "", "exec.run", worktree_arg, exec_flags, "[WORKTREE] [--host H] [--security S] [--ask A] … -- ARGV…",
	  .rest = "argv", .example = "agor exec feature --host sandbox -- make test" },
};

/* --timeout-ms's text as the integer exec.run takes; -1 when it is no positive number. */
static int take_timeout(json_t *params)
{
	const char *text = json_get_str(params, "timeout_ms");
	char *end;
	long long ms = text ? strtoll(text, &end, 10) : 1;
	if (text && (!*text || *end || ms < 1))
		return -1;
	if (text)
		json_object_set_new(params, "timeout_ms", json_integer(ms));
	return 0;
}

static int parse(int argc, char **argv, struct exec_opts *o)
{
	int rc = client_parse_args("exec", &commands[0], argc - 1, argv + 1, &o->client, o->params);
	if (rc)
		return rc;
	if (take_timeout(o->params) < 0)
		return usage("--timeout-ms: expected a positive number of milliseconds");
	static const char *const answers[] = { "no", "always", "yes" };
	for (int k = 0; k < 3 && o->answer == ANSWER_TTY; k++)
		if (json_is_true(json_object_get(o->params, answers[k])))
			o->answer = (enum exec_answer)(ANSWER_DENY - k);
	for (int k = 0; k < 3; k++)
		json_object_del(o->params, answers[k]);
	json_t *cmd = json_object_get(o->params, "argv");
	if (!json_array_size(cmd))
		return usage("expected -- ARGV… (the command to run)");
	appr_argv_sha256(cmd, o->argv_sha256);
	return 0;
}

static void send_call(struct rpc_client *c, int id, const char *method, json_t *params /* stolen */)
{
	json_t *msg = json_pack("{s:s,s:i,s:s,s:o}", "jsonrpc", "2.0", "id", id, "method", method, "params", params);
	_cleanup_free_ char *text = json_to_compact(msg);
	json_decref(msg);
	struct err e = ERR_INIT;
	if (rpc_client_send(c, text, strlen(text), &e) < 0)
		fprintf(stderr, "agor exec: %s: %s\n", method, e.message);
	err_clear(&e);
}

/* The request as the terminal may show it: argv and place escaped (bidi, C1, controls), then each executable the
 * run starts with its owner, mode and SHA-256 prefix, as the deciding side checked it. */
static void show_request(const json_t *input)
{
	struct strbuf argv = STRBUF_INIT, where = STRBUF_INIT;
	appr_format_argv(json_object_get(input, "argv"), &argv);
	appr_display_escape(json_get_str(input, "where") ? json_get_str(input, "where") : "?", &where);
	fprintf(stderr, "\nApprove running %s on %s?\n", argv.buf, where.buf);
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(input, "executables"), i, x)
	{
		struct strbuf path = STRBUF_INIT, owner = STRBUF_INIT;
		appr_display_escape(json_get_str(x, "path") ? json_get_str(x, "path") : "?", &path);
		appr_display_escape(json_get_str(x, "owner") ? json_get_str(x, "owner") : "?", &owner);
		fprintf(stderr, "  runs: %s (owner %s, mode %.4s, sha256 %.16s)\n", path.buf, owner.buf,
			json_get_str(x, "mode") ? json_get_str(x, "mode") : "?",
			json_get_str(x, "sha256") ? json_get_str(x, "sha256") : "?");
		strbuf_release(&path);
		strbuf_release(&owner);
	}
	strbuf_release(&argv);
	strbuf_release(&where);
}

static enum exec_answer ask_on_tty(const json_t *data)
{
	show_request(json_object_get(data, "tool_input"));
	fprintf(stderr, "[o]nce, [a]lways, [N]o: ");
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		return ANSWER_DENY;
	return line[0] == 'o' || line[0] == 'y' ? ANSWER_ONCE : line[0] == 'a' ? ANSWER_ALWAYS : ANSWER_DENY;
}

/* Answers an exec approval request for exactly this command (its argv hash); others are not ours. */
static void answer_request(struct rpc_client *c, const struct exec_opts *o, const json_t *data)
{
	const json_t *input = json_object_get(data, "tool_input");
	const char *hash = json_get_str(input, "argvSha256"), *kind = json_get_str(data, "kind");
	if (!kind || strcmp(kind, "exec") || !hash || strcmp(hash, o->argv_sha256))
		return;
	enum exec_answer a = o->answer;
	if (a == ANSWER_TTY && !isatty(0)) {
		fprintf(stderr,
			"agor exec: the gateway asks for approval; not a terminal, denying (use --yes, --always "
			"or --no)\n");
		a = ANSWER_DENY;
	} else if (a == ANSWER_TTY) {
		a = ask_on_tty(data);
	}
	json_t *p =
		json_pack("{s:s,s:b}", "request_id", json_get_str(data, "request_id"), "approved", a != ANSWER_DENY);
	if (a != ANSWER_DENY)
		json_object_set_new(p, "scope", json_string(a == ANSWER_ALWAYS ? "allow-always" : "allow-once"));
	send_call(c, 100, "permissions.respond", p);
}

static void print_stream(FILE *f, const json_t *s)
{
	if (json_is_string(s))
		fwrite(json_string_value(s), 1, json_string_length(s), f);
}

/* Why a run was denied. The request's own security is the lower bound of the two levels compared: without
 * --security it is deny, and then the request, not the host's policy, is what denied. */
static void explain_denial(const json_t *params, const char *reason)
{
	const char *host = json_get_str(params, "host") ? json_get_str(params, "host") : "sandbox";
	if (reason && !strcmp(reason, "security=deny") && !json_get_str(params, "security"))
		fprintf(stderr,
			"agor exec: denied: this request's security defaults to deny; give --security allowlist "
			"or full (the %s's own policy may still lower it)\n",
			host);
	else
		fprintf(stderr, "agor exec: denied by the %s's policy (%s)\n", host, reason ? reason : "?");
}

/* The run's outcome for humans; returns the exit status. */
static int show_result(const struct exec_opts *o, const json_t *reply)
{
	const json_t *res = json_object_get(reply, "result"), *error = json_object_get(reply, "error");
	if (o->client.json)
		json_write_line(1, res ? res : error);
	if (!res) {
		const json_t *data = json_object_get(error, "data");
		if (!o->client.json) {
			const char *code = json_get_str(data, "code"), *message = json_get_str(error, "message");
			fprintf(stderr, "agor exec: %s [%s]\n", message ? message : "?", code ? code : "?");
			client_print_fix_hint(stderr, code, message);
		}
		return json_get_str(data, "code") && !strcmp(json_get_str(data, "code"), "PERMISSION_DENIED")
			       ? EXIT_DENIED
			       : EXIT_FAILED;
	}
	if (json_is_true(json_object_get(res, "denied"))) {
		if (!o->client.json)
			explain_denial(o->params, json_get_str(res, "reason"));
		return EXIT_DENIED;
	}
	if (!o->client.json) {
		print_stream(stdout, json_object_get(res, json_object_get(res, "output") ? "output" : "stdout"));
		print_stream(stderr, json_object_get(res, "stderr"));
	}
	return (int)json_integer_value(json_object_get(res, "exitCode")) & 0xff;
}

static int run(struct rpc_client *c, struct exec_opts *o)
{
	send_call(c, 1, "events.subscribe", json_object());
	send_call(c, EXEC_CALL_ID, "exec.run", json_incref(o->params));
	struct strbuf msg = STRBUF_INIT;
	int status = -1;
	while (status < 0) {
		struct err e = ERR_INIT;
		strbuf_reset(&msg);
		if (rpc_client_recv(c, &msg, 1000, &e) < 0) {
			int timeout = e.code && !strcmp(e.code, E_TIMEOUT);
			if (!timeout)
				fprintf(stderr, "agor exec: lost the daemon: %s\n", e.message);
			err_clear(&e);
			if (timeout)
				continue;
			status = EXIT_FAILED;
			break;
		}
		json_t *m = json_loadb(msg.buf, msg.len, 0, NULL);
		json_t *params = json_object_get(m, "params");
		const char *method = json_get_str(m, "method");
		if (method && !strcmp(method, "event") && json_get_str(params, "type") &&
		    !strcmp(json_get_str(params, "type"), "permission.requested"))
			answer_request(c, o, json_object_get(params, "data"));
		else if (!method && json_integer_value(json_object_get(m, "id")) == EXEC_CALL_ID)
			status = show_result(o, m);
		if (m)
			json_decref(m);
	}
	strbuf_release(&msg);
	return status;
}

static int exec_main(int argc, char **argv)
{
	struct exec_opts o = { .params = json_object() };
	int status = parse(argc, argv, &o);
	if (status == 0) {
		struct err e = ERR_INIT;
		struct rpc_client *c = client_connect(o.client.url, o.client.config_path, o.client.token, &e);
		if (c && (client_expand_id(c, "worktrees.list", o.params, "worktree_id", &e) < 0 ||
			  client_expand_id(c, "sessions.list", o.params, "session_id", &e) < 0)) {
			rpc_client_close(c);
			c = NULL;
		}
		if (c) {
			status = run(c, &o);
			rpc_client_close(c);
		} else {
			fprintf(stderr, "agor exec: %s\n", e.message);
			status = EXIT_FAILED;
		}
		err_clear(&e);
	}
	json_decref(o.params);
	return status;
}

const struct applet applet_exec = {
	.name = "exec",
	.summary = "run one command through the daemon on the sandbox, the gateway or a paired node",
	.usage = "Usage: agor exec [--host sandbox|gateway|node] [--node QUERY] [--security deny|allowlist|full]\n"
		 "                 [--ask off|on-miss|always] [--session ID] [--agent ID] [--timeout-ms N]\n"
		 "                 [--yes|--always|--no] [--json] [--url URL] [--token T] [--config PATH]\n"
		 "                 [WORKTREE] -- ARGV…\n"
		 "\n"
		 "Runs ARGV with the daemon's exec.run. Host sandbox (the default) runs in WORKTREE as your own "
		 "execution\n"
		 "user; gateway runs there as the worktree creator's, without the kernel sandbox, under the gateway's "
		 "own exec\n"
		 "approvals ($AGOR_HOME/exec-approvals.json of the daemon; security defaults to deny). Host node runs\n"
		 "on a paired node (--node QUERY) under the node's own approvals. --session takes the session's\n"
		 "exec defaults (set with `agor prompt SESSION \"/exec …\"` or \"/elevated on\") and puts the run's\n"
		 "events in that session. When the policy asks, the request for this command is answered on the\n"
		 "terminal ([o]nce, [a]lways, [N]o), or by --yes (allow once), --always (allow always) or --no.\n"
		 "Prints the command's output; exits with its exit status, 126 when denied, 1 on other errors.\n",
	.main = exec_main,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
