/* node_runner.c — the node's engine on lib/loop (node_runner.h): the gateway connection, system.run requests
 * run through `agor approvals exec`, their output and events relayed as they come. Never obeys an environment
 * override this host does not allow; never leaves a run behind when its connection ends. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "approvals_exec.h"
#include "approvals_policy.h"
#include "approvals_store.h"
#include "child.h"
#include "crypto.h"
#include "exec_env.h"
#include "json.h"
#include "log.h"
#include "loop.h"
#include "node_runner.h"
#include "rpcclient.h"
#include "strbuf.h"
#include "strvec.h"
#include "banned.h"

#define MAX_ANSWER_BYTES (768u << 10) /* the gateway refuses messages over 1 MiB */

struct runner;

struct run {
	struct runner *r;
	size_t slot;
	json_t *rpc_id;
	char *run_id;
	struct child child;
	struct strbuf out, err_line;
	size_t err_scanned; /* how much of err_line is known to hold no newline */
	int out_open, err_open;
	struct loop_timer *backstop; /* kills the approvals process when it outlives its timeout */
	json_t *denied;		     /* the exec.denied event, once seen */
	json_t *finished;	     /* the exec.finished event, once seen */
	struct strbuf diagnostics;
};

struct runner {
	const struct node_runner_config *cfg;
	struct loop *loop;
	struct rpc_client *c;
	struct run *runs[NODE_MAX_RUNS];
	struct strbuf msg;
	int backoff_ms;
	int served;	   /* a connection was served (what --once reports) */
	struct err result; /* why the loop stopped, when it is a failure */
};

static struct rpc_client *connect_gateway(const struct node_runner_config *cfg, struct err *e)
{
	struct rpc_client_options opt = { .pin_sha256 = cfg->fingerprint,
					  .connect_timeout_ms = 10000,
					  .call_timeout_ms = 30000,
					  .max_message = 2u << 20 };
	return rpc_client_connect(cfg->url, &opt, e);
}

/* --- runs ---------------------------------------------------------------------------------------- */

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
	send_json(r, json_pack("{s:s,s:O,s:{s:i,s:s,s:{s:s}}}", "jsonrpc", "2.0", "id", rpc_id, "error", "code", -32000,
			       "message", e->message, "data", "code", e->code));
}

static int level_arg(json_t *params, const char *key, int (*parse)(const char *), const char *flag, struct strvec *args,
		     struct err *e)
{
	json_t *v = json_object_get(params, key);
	if (!v)
		return 0;
	if (!json_is_string(v) || parse(json_string_value(v)) < 0)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", key),
				"system.run: params.%s: not a "
				"valid level",
				key);
	strvec_push(args, flag);
	strvec_push(args, json_string_value(v));
	return 0;
}

int node_run_args(const char *self, json_t *params, struct strvec *args, struct err *e)
{
	json_t *argv = json_object_get(params, "argv"), *timeout = json_object_get(params, "timeoutMs");
	const char *agent = json_get_str(params, "agentId");
	size_t i;
	json_t *w;
	int ok = json_is_array(argv) && json_array_size(argv) > 0;
	json_array_foreach(argv, i, w) ok =
		ok && json_is_string(w) && strlen(json_string_value(w)) == json_string_length(w);
	if (!ok)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "argv"),
				"system.run: params.argv: expected a non-empty array of strings");
	if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) < 1))
		return err_set(e, E_INVALID_PAYLOAD, "system.run: params.timeoutMs: expected a positive integer");
	if (agent && appr_agent_id_check(agent, e) < 0)
		return -1;
	/* an ask goes to the gateway (node.ask), where only an approval record for this argv's hash approves */
	strvec_pushv(args, (const char *const[]){ self, "approvals", "exec", "--ask-stdin", "--agent",
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
	json_object_foreach(overrides, name, v)
	{
		const char *why = json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)
					  ? exec_env_refusal(r->cfg->env_allow, name)
					  : "not a string";
		if (why) {
			log_warn("node: system.run %s: environment override %s ignored: %s", run_id, name, why);
			continue;
		}
		strvec_pushf(env, "%s=%s", name, json_string_value(v));
	}
	strvec_pushf(env, "AGOR_HOME=%s", r->cfg->home);
}

static void run_free(struct run *run)
{
	if (!run)
		return;
	struct loop *l = run->r->loop;
	if (run->out_open)
		loop_del_fd(l, run->child.out);
	if (run->err_open)
		loop_del_fd(l, run->child.err);
	if (run->backstop)
		loop_timer_cancel(l, run->backstop);
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

/* The node's policy asks: the gateway decides (node.ask); its answer goes to approvals exec's stdin. */
static void ask_gateway(struct runner *r, struct run *run, const json_t *ev)
{
	send_json(r, json_pack("{s:s,s:s+,s:s,s:{s:s,s:s?,s:O?}}", "jsonrpc", "2.0", "id", "ask:", run->run_id,
			       "method", "node.ask", "params", "runId", run->run_id, "argvSha256",
			       json_get_str(ev, "argvSha256"), "executables", json_object_get(ev, "executables")));
}

static struct run *run_by_id(struct runner *r, const char *run_id)
{
	for (size_t i = 0; i < NODE_MAX_RUNS; i++)
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
	json_t **keep = !strcmp(type, "exec.denied")	 ? &run->denied
			: !strcmp(type, "exec.finished") ? &run->finished
							 : NULL;
	if (keep && !*keep)
		*keep = json_incref(ev);
	json_decref(ev);
}

void node_split_lines(struct strbuf *pending, size_t *scanned, void (*fn)(const char *line, size_t len, void *arg),
		      void *arg)
{
	size_t done = 0; /* the lines handled, removed at once: a removal per line is quadratic */
	for (const char *nl; (nl = strbuf_find_newline(pending, done > *scanned ? done : *scanned));) {
		size_t len = (size_t)(nl - (pending->buf + done));
		fn(pending->buf + done, len, arg);
		done += len + 1;
	}
	strbuf_remove_front(pending, done);
	*scanned = pending->len; /* what is left holds no newline: the next read's bytes are the only new ones */
}

static void on_run_err_line(const char *line, size_t len, void *arg)
{
	struct run *run = arg;
	on_err_line(run->r, run, line, len);
}

static void split_err_lines(struct run *run)
{
	node_split_lines(&run->err_line, &run->err_scanned, on_run_err_line, run);
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
		json_object_set_new(
			res, "error",
			json_string_lossy(run->diagnostics.buf ? run->diagnostics.buf : "", run->diagnostics.len));
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

static void finish_if_done(struct run *run)
{
	struct runner *r = run->r;
	if (run->out_open || run->err_open)
		return;
	_cleanup_err_ struct err e = ERR_INIT;
	int status;
	child_wait(&run->child, &status, &e);
	if (run->err_line.len)
		on_err_line(r, run, run->err_line.buf, run->err_line.len);
	send_json(r, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", run->rpc_id, "result",
			       fit_answer(run_result(run))));
	log_info("node: run %s finished (exit %d)", run->run_id, child_exit_code(&run->child));
	r->runs[run->slot] = NULL;
	run_free(run);
}

static void on_run_output(struct loop *l, int fd, unsigned events, void *arg)
{
	(void)events;
	struct run *run = arg;
	if (fd == run->child.out && !(run->out_open = drain(fd, &run->out, APPR_OUTPUT_MAX + 64)))
		loop_del_fd(l, fd);
	if (fd == run->child.err) {
		if (!(run->err_open = drain(fd, &run->err_line, 4u << 20)))
			loop_del_fd(l, fd);
		split_err_lines(run);
	}
	finish_if_done(run);
}

static void on_backstop(struct loop *l, void *arg)
{
	(void)l;
	struct run *run = arg;
	run->backstop = NULL;
	log_warn("node: run %s outlived its timeout: killing it", run->run_id);
	child_kill_group(&run->child, SIGKILL);
	run->child.timed_out = 1;
}

static int start_run(struct runner *r, struct run *run, json_t *params, struct err *e)
{
	struct strvec args = STRVEC_INIT, env = STRVEC_INIT;
	int rv = node_run_args(r->cfg->self, params, &args, e);
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
	if (loop_add_fd(r->loop, run->child.out, LOOP_READ, on_run_output, run, e) < 0)
		return -1;
	run->out_open = 1;
	if (loop_add_fd(r->loop, run->child.err, LOOP_READ, on_run_output, run, e) < 0)
		return -1;
	run->err_open = 1;
	json_t *timeout = json_object_get(params, "timeoutMs");
	if (timeout)
		run->backstop = loop_timer_add(r->loop, (uint64_t)json_integer_value(timeout) + NODE_BACKSTOP_GRACE_MS,
					       on_backstop, run);
	return 0;
}

static void system_run(struct runner *r, json_t *rpc_id, json_t *params)
{
	_cleanup_err_ struct err e = ERR_INIT;
	const char *run_id = json_get_str(params, "runId");
	size_t slot = 0;
	while (slot < NODE_MAX_RUNS && r->runs[slot])
		slot++;
	if (!run_id)
		err_set(&e, E_INVALID_PAYLOAD, "system.run: params.runId is required");
	else if (slot == NODE_MAX_RUNS)
		err_set(&e, E_PERMISSION_DENIED, "system.run: this node already runs %d commands; try again later",
			NODE_MAX_RUNS);
	struct run *run = xcalloc(1, sizeof(*run));
	child_init(&run->child); /* run_free releases it on every path */
	run->r = r;
	run->slot = slot;
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

static void stop_runs(struct runner *r)
{
	for (size_t i = 0; i < NODE_MAX_RUNS; i++) {
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
		log_warn("node: the gateway refused a message: %s",
			 json_get_str(json_object_get(m, "error"), "message"));
	}
}

enum hello { HELLO_APPROVED, HELLO_PENDING, HELLO_REFUSED, HELLO_UNREACHABLE };

static enum hello hello(struct runner *r, struct err *e)
{
	r->c = connect_gateway(r->cfg, e);
	if (!r->c)
		return HELLO_UNREACHABLE;
	_cleanup_json_ json_t *res = NULL;
	json_t *params = json_pack("{s:s,s:s}", "nodeId", r->cfg->node_id, "token", r->cfg->token);
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

static int jittered(int backoff_ms)
{
	uint32_t rnd = 0;
	struct err e = ERR_INIT;
	crypto_random(&rnd, sizeof(rnd), &e);
	err_clear(&e);
	return backoff_ms / 2 + (int)(rnd % (uint32_t)(backoff_ms / 2 + 1)); /* 50%..100% of the backoff */
}

static void attempt(struct loop *l, void *arg);

/* The next attempt after a jittered, growing wait; with --once, none: the loop ends. */
static void retry_later(struct runner *r)
{
	if (r->cfg->once) {
		loop_stop(r->loop);
		return;
	}
	loop_timer_add(r->loop, (uint64_t)jittered(r->backoff_ms), attempt, r);
	r->backoff_ms = r->backoff_ms * 2 > NODE_BACKOFF_MAX_MS ? NODE_BACKOFF_MAX_MS : r->backoff_ms * 2;
}

static void lose_connection(struct runner *r, const struct err *why)
{
	log_warn("node: connection to %s lost: %s", r->cfg->url, why->message);
	loop_del_fd(r->loop, rpc_client_fd(r->c));
	stop_runs(r);
	rpc_client_close(r->c);
	r->c = NULL;
	retry_later(r);
}

/* Every message that has arrived (TLS may hold more than the socket shows), then back to the loop. */
static void on_gateway(struct loop *l, int fd, unsigned events, void *arg)
{
	(void)l;
	(void)fd;
	(void)events;
	struct runner *r = arg;
	while (r->c) {
		_cleanup_err_ struct err e = ERR_INIT;
		strbuf_reset(&r->msg);
		int rc = rpc_client_recv(r->c, &r->msg, 0, &e);
		if (rc == 0)
			on_message(r, r->msg.buf, r->msg.len);
		else if (!strcmp(e.code, E_TIMEOUT))
			return;
		else if (strcmp(e.code, E_PAYLOAD_TOO_LARGE))
			lose_connection(r, &e);
	}
}

static void attempt(struct loop *l, void *arg)
{
	(void)l;
	struct runner *r = arg;
	_cleanup_err_ struct err e = ERR_INIT;
	err_clear(&r->result);
	enum hello h = hello(r, &e);
	if (h == HELLO_REFUSED) {
		err_set(&r->result, E_AUTH_FAILED, "the gateway refused this node: %s", e.message);
		loop_stop(r->loop);
		return;
	}
	if (h == HELLO_APPROVED) {
		log_info("node %s (%s) connected to %s", r->cfg->node_id, r->cfg->display_name, r->cfg->url);
		r->backoff_ms = NODE_BACKOFF_MIN_MS;
		r->served = 1;
		if (loop_add_fd(r->loop, rpc_client_fd(r->c), LOOP_READ, on_gateway, r, &e) < 0) {
			lose_connection(r, &e);
			return;
		}
		on_gateway(r->loop, -1, 0, r); /* what arrived with the hello's answer */
		return;
	}
	if (h == HELLO_PENDING) {
		log_info("node %s: pairing not approved yet (on the gateway: agor nodes approve %s)", r->cfg->node_id,
			 r->cfg->node_id);
		err_set(&r->result, E_PERMISSION_DENIED, "pairing not approved yet");
	} else {
		log_warn("node: cannot reach %s: %s", r->cfg->url, e.message);
		err_set(&r->result, e.code ? e.code : E_SYSTEM, "cannot reach %s: %s", r->cfg->url, e.message);
	}
	retry_later(r);
}

int node_runner_run(const struct node_runner_config *cfg, struct err *e)
{
	struct runner r = { .cfg = cfg, .backoff_ms = NODE_BACKOFF_MIN_MS, .msg = STRBUF_INIT };
	r.loop = loop_new(e);
	if (!r.loop)
		return -1;
	loop_defer(r.loop, attempt, &r);
	int rc = loop_run(r.loop, e);
	if (r.c) {
		loop_del_fd(r.loop, rpc_client_fd(r.c));
		stop_runs(&r);
		rpc_client_close(r.c);
	}
	loop_free(r.loop);
	strbuf_release(&r.msg);
	if (rc == 0 && err_is_set(&r.result) && (!strcmp(r.result.code, E_AUTH_FAILED) || !r.served))
		rc = err_set(e, r.result.code, "%s", r.result.message);
	err_clear(&r.result);
	return rc;
}
