/* prompt.c — `agor prompt SESSION "text"`: starts a prompt task through the daemon and streams its messages
 * until it ends, answering the agent's permission requests (y/n on a TTY, or --yes/--no); Ctrl-C cancels. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "applet.h"
#include "client.h"
#include "json.h"
#include "rpcclient.h"
#include "strbuf.h"
#include "banned.h"

enum answer_policy { ASK_TTY, ALWAYS_YES, ALWAYS_NO };

struct prompt_opts {
	const char *session, *text;
	enum answer_policy answers;
	struct client_opts client; /* --url, --config, --token, --json */
};

struct stream {
	struct rpc_client *rpc;
	const struct prompt_opts *o;
	const char *task_id;
	int in_delta; /* text deltas were printed without their final newline */
	int next_id;
	int exit_status; /* -1 while the task runs */
};

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int usage(const char *what)
{
	fprintf(stderr, "agor prompt: %s\nTry 'agor prompt --help'.\n", what);
	return EXIT_USAGE;
}

static const char *const prompt_args[] = { "session_id", "prompt", NULL };
static const struct client_flag prompt_flags[] = {
	{ "--yes", "yes", CLIENT_FLAG_BOOL, "allow every permission request of the agent" },
	{ "--no", "no", CLIENT_FLAG_BOOL, "deny every permission request (wins over --yes)" },
	{ NULL },
};
static const struct client_command commands[] = {
	{ "", "sessions.prompt", prompt_args, prompt_flags,
	  "SESSION \"TEXT\" [--yes|--no] [--json] [--url URL] [--token T] [--config PATH]",
	  .example = "agor prompt 8c1d0e \"add a test for the parser\" --no" },
};

static int parse(int argc, char **argv, struct prompt_opts *o, json_t *params)
{
	if (argc < 3)
		return usage("expected SESSION and the prompt text");
	int rc = client_parse_args("prompt", &commands[0], argc - 1, argv + 1, &o->client, params);
	if (rc)
		return rc;
	o->session = json_get_str(params, "session_id");
	o->text = json_get_str(params, "prompt");
	o->answers = json_is_true(json_object_get(params, "no"))    ? ALWAYS_NO
		     : json_is_true(json_object_get(params, "yes")) ? ALWAYS_YES
								    : ASK_TTY;
	if (!*o->text)
		return usage("expected SESSION and the prompt text");
	return 0;
}

/* --- sending without waiting (answers arrive among the events and are ignored) ---------------------- */

static void send_call(struct stream *s, const char *method, json_t *params /* stolen */)
{
	json_t *msg = json_pack("{s:s,s:i,s:s,s:o}", "jsonrpc", "2.0", "id", 1000 + s->next_id++, "method", method,
				"params", params);
	_cleanup_free_ char *text = json_to_compact(msg);
	json_decref(msg);
	struct err e = ERR_INIT;
	if (rpc_client_send(s->rpc, text, strlen(text), &e) < 0)
		fprintf(stderr, "agor prompt: %s: %s\n", method, e.message);
	err_clear(&e);
}

/* --- printing messages for humans ------------------------------------------------------------------ */

static void end_delta(struct stream *s)
{
	if (s->in_delta)
		putchar('\n');
	s->in_delta = 0;
}

static void print_short(const char *label, const json_t *value)
{
	char *text = json_is_string(value) ? xstrdup(json_string_value(value)) : json_to_compact(value);
	size_t len = strlen(text);
	printf("[%s] %.*s%s\n", label, (int)(len > 300 ? 300 : len), text, len > 300 ? " …" : "");
	free(text);
}

static void print_message(struct stream *s, const char *type, const json_t *data)
{
	if (!strcmp(type, "text_delta")) {
		fputs(json_get_str(data, "text") ? json_get_str(data, "text") : "", stdout);
		s->in_delta = 1;
	} else if (!strcmp(type, "text")) {
		if (s->in_delta)
			end_delta(s); /* the deltas already showed this text */
		else
			printf("%s\n", json_get_str(data, "text") ? json_get_str(data, "text") : "");
	} else if (!strcmp(type, "tool_use")) {
		end_delta(s);
		printf("[tool] %s ", json_get_str(data, "name") ? json_get_str(data, "name") : "?");
		print_short("input", json_object_get(data, "input"));
	} else if (!strcmp(type, "tool_result")) {
		end_delta(s);
		print_short(json_is_true(json_object_get(data, "is_error")) ? "tool error" : "tool result",
			    json_object_get(data, "content"));
	} else if (!strcmp(type, "error") || !strcmp(type, "garbage")) {
		/* an error the agent retries by itself (Codex's reconnects) is a warning: the turn goes on */
		int retried = json_is_true(json_object_get(data, "will_retry"));
		end_delta(s);
		print_short(retried ? "warning" : type, json_object_get(data, type[0] == 'g' ? "line" : "message"));
	}
	fflush(stdout);
}

/* --- permission requests ------------------------------------------------------------------------------ */

static int ask_on_tty(const json_t *data)
{
	char *input = json_to_compact(json_object_get(data, "tool_input"));
	fprintf(stderr, "\nThe agent wants to use %s with %s\nAllow? [y/N] ", json_get_str(data, "tool_name"), input);
	free(input);
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	return line[0] == 'y' || line[0] == 'Y';
}

static void answer_permission(struct stream *s, const json_t *data)
{
	int approved;
	if (s->o->answers != ASK_TTY)
		approved = s->o->answers == ALWAYS_YES;
	else if (isatty(0))
		approved = ask_on_tty(data);
	else {
		fprintf(stderr, "agor prompt: denying %s: not a terminal (use --yes or --no)\n",
			json_get_str(data, "tool_name"));
		approved = 0;
	}
	if (!s->o->client.json)
		printf("[permission] %s %s\n", json_get_str(data, "tool_name"), approved ? "allowed" : "denied");
	send_call(s, "permissions.respond",
		  json_pack("{s:s,s:b}", "request_id", json_get_str(data, "request_id"), "approved", approved));
}

/* --- the event loop ------------------------------------------------------------------------------------ */

static int is_final(const char *status)
{
	return status && (!strcmp(status, "completed") || !strcmp(status, "failed") || !strcmp(status, "cancelled"));
}

static void task_ended(struct stream *s, const json_t *data)
{
	const char *status = json_get_str(data, "status");
	end_delta(s);
	json_t *error = json_object_get(data, "error");
	if (!s->o->client.json) {
		if (error)
			fprintf(stderr, "agor prompt: task %s %s: %s\n", s->task_id, status,
				json_get_str(error, "message"));
		else
			printf("[%s]\n", status);
	}
	s->exit_status = !strcmp(status, "completed") ? EXIT_OK : EXIT_FAILED;
}

static void on_event(struct stream *s, const char *type, const json_t *data)
{
	const char *task = json_get_str(data, "task_id");
	if (!strncmp(type, "task.", 5)) /* task.updated, task.egress_refused, … name the task "id" */
		task = json_get_str(data, "id");
	if (!task || strcmp(task, s->task_id))
		return;
	if (s->o->client.json) {
		json_t *line = json_pack("{s:s,s:O}", "type", type, "data", data);
		json_write_line(1, line);
		json_decref(line);
	}
	if (!strcmp(type, "message") && !s->o->client.json)
		print_message(s, json_get_str(data, "message_type"), json_object_get(data, "data"));
	else if (!strcmp(type, "permission.requested"))
		answer_permission(s, data);
	else if (!strcmp(type, "task.egress_refused") && !s->o->client.json)
		printf("[egress] refused %s:%lld (%s)\n", json_get_str(data, "host"),
		       (long long)json_integer_value(json_object_get(data, "port")), json_get_str(data, "reason"));
	else if (!strcmp(type, "task.updated") && is_final(json_get_str(data, "status")))
		task_ended(s, data);
}

static int follow(struct stream *s)
{
	int cancel_sent = 0;
	struct strbuf msg = STRBUF_INIT;
	while (s->exit_status < 0) {
		if (interrupted && !cancel_sent) {
			fprintf(stderr, "\nagor prompt: cancelling task %s\n", s->task_id);
			send_call(s, "tasks.cancel", json_pack("{s:s}", "id", s->task_id));
			cancel_sent = 1;
		}
		struct err e = ERR_INIT;
		strbuf_reset(&msg);
		if (rpc_client_recv(s->rpc, &msg, 250, &e) < 0) {
			int timeout = e.code && !strcmp(e.code, E_TIMEOUT);
			if (!timeout)
				fprintf(stderr, "agor prompt: lost the daemon: %s\n", e.message);
			err_clear(&e);
			if (timeout)
				continue;
			break;
		}
		json_t *m = json_loadb(msg.buf, msg.len, 0, NULL);
		json_t *params = json_object_get(m, "params");
		if (m && !strcmp(json_get_str(m, "method") ? json_get_str(m, "method") : "", "event"))
			on_event(s, json_get_str(params, "type"), json_object_get(params, "data"));
		if (m)
			json_decref(m);
	}
	strbuf_release(&msg);
	return s->exit_status < 0 ? EXIT_FAILED : s->exit_status;
}

/* A directive (/exec, /elevated) changed the session's exec defaults instead of starting a task. */
static void show_directive(const struct prompt_opts *o, const json_t *r)
{
	if (o->client.json) {
		json_write_line(1, r);
		return;
	}
	const json_t *exec = json_object_get(r, "exec");
	printf("session %s exec defaults:", o->session);
	const char *key;
	const json_t *value;
	json_object_foreach((json_t *)exec, key, value)
	{
		char *v = json_is_string(value) ? xstrdup(json_string_value(value)) : json_to_compact(value);
		printf(" %s=%s", key, v);
		free(v);
	}
	printf("%s\n", json_object_size(exec) ? "" : " none (host sandbox)");
}

/* 0 with *task_id, 1 when the prompt was a directive (shown), -1 with e. */
static int start_task(struct stream *s, char **task_id, struct err *e)
{
	json_t *r = NULL, *p = json_object();
	int rc = rpc_client_call(s->rpc, "events.subscribe", p, &r, e);
	json_decref(p);
	if (r)
		json_decref(r);
	r = NULL;
	p = json_pack("{s:s,s:s}", "session_id", s->o->session, "prompt", s->o->text);
	if (rc == 0)
		rc = client_expand_id(s->rpc, "sessions.list", p, "session_id", e);
	if (rc == 0)
		rc = rpc_client_call(s->rpc, "sessions.prompt", p, &r, e);
	json_decref(p);
	if (rc == 0 && json_get_str(r, "directive")) {
		show_directive(s->o, r);
		json_decref(r);
		return 1;
	}
	if (rc == 0 && !json_get_str(r, "task_id"))
		rc = err_set(e, E_INTERNAL, "the daemon answered without a task_id");
	if (rc == 0)
		*task_id = xstrdup(json_get_str(r, "task_id"));
	if (r)
		json_decref(r);
	return rc;
}

static int prompt_main(int argc, char **argv)
{
	struct prompt_opts o = { 0 };
	_cleanup_json_ json_t *params = json_object();
	int status = parse(argc, argv, &o, params);
	if (status)
		return status;
	struct err e = ERR_INIT;
	struct stream s = { .o = &o, .exit_status = -1 };
	_cleanup_free_ char *task_id = NULL;
	s.rpc = client_connect(o.client.url, o.client.config_path, o.client.token, &e);
	int started = s.rpc ? start_task(&s, &task_id, &e) : -1;
	if (started == 1) {
		rpc_client_close(s.rpc);
		return EXIT_OK;
	}
	if (started < 0) {
		fprintf(stderr, "agor prompt: %s%s%s%s\n", e.message, e.code ? " [" : "", e.code ? e.code : "",
			e.code ? "]" : "");
		client_print_fix_hint(stderr, e.code, e.message);
		rpc_client_close(s.rpc);
		err_clear(&e);
		return EXIT_FAILED;
	}
	s.task_id = task_id;
	if (!o.client.json)
		fprintf(stderr, "task %s\n", task_id);
	struct sigaction sa = { .sa_handler = on_interrupt };
	sigaction(SIGINT, &sa, NULL);
	status = follow(&s);
	rpc_client_close(s.rpc);
	return status;
}

const struct applet applet_prompt = {
	.name = "prompt",
	.summary = "send a prompt to a session's agent and stream its answer (through the daemon)",
	.usage = "Usage: agor prompt SESSION \"TEXT\" [--yes|--no] [--json] [--url URL] [--token T] [--config PATH]\n"
		 "\n"
		 "Starts a prompt task in SESSION (as the session creator's execution user) and prints the agent's\n"
		 "messages as they arrive. Permission requests are asked on the terminal (y/N); --yes or --no\n"
		 "answers every one of them. Ctrl-C cancels the task. Exit status: 0 when the task completed,\n"
		 "1 when it failed or was cancelled, 2 for usage errors.\n"
		 "\n"
		 "Directives change the session's exec defaults (used by `agor exec --session` and exec.run calls\n"
		 "naming the session) instead of prompting; they last as long as the session, never in config:\n"
		 "  /exec [host=sandbox|gateway|node] [security=deny|allowlist|full] [ask=off|on-miss|always]\n"
		 "        [node=QUERY]        (alone: show them; /exec reset: clear them)\n"
		 "  /elevated on|off         host gateway with security full (up to the gateway's exec approvals)\n",
	.main = prompt_main,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
