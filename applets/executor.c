/* executor.c — `agor executor`: reads one JSON payload, runs it (lib/executor), prints one result line.
 * Never writes anything but the result line to stdout; never echoes a secret from the payload. */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "applet.h"
#include "client.h"
#include "child.h"
#include "config.h"
#include "confine.h"
#include "execrun.h"
#include "executor.h"
#include "impersonate.h"
#include "json.h"
#include "log.h"
#include "mcp_permission.h"
#include "payload.h"
#include "prompt.h"
#include "rpcclient.h"
#include "terminal.h"
#include "banned.h"

extern const struct applet applet_executor;

struct executor_args {
	int from_stdin;
	int dry_run;
	const char *session_token, *session_id, *task_id, *prompt, *tool, *permission_mode, *daemon_url;
};

/* Prints the one result line and returns the exit status of docs/payloads.md#results. */
static int print_result(json_t *data, struct err *e)
{
	if (err_is_set(e))
		executor_publish_error(e);
	json_t *line = err_is_set(e) ? json_pack("{s:b,s:o}", "success", 0, "error", err_to_json(e))
				     : json_pack("{s:b,s:O}", "success", 1, "data", data ? data : json_object());
	if (json_write_line(1, line) < 0)
		log_error("cannot write the result line: %m");
	json_decref(line);
	return err_is_set(e) ? executor_exit_status(e->code) : EXIT_OK;
}

static int load_config(const struct payload *p, struct config *cfg, struct err *e)
{
	if (p->data_home && config_set_flag(cfg, "paths.data_home", p->data_home, e) < 0) {
		struct err wrapped = ERR_INIT;
		err_setd(&wrapped, E_INVALID_PAYLOAD, json_pack("{s:s,s:s}", "path", "dataHome", "reason", e->message),
			 "dataHome: %s", e->message);
		err_clear(e);
		*e = wrapped;
		return -1;
	}
	if (config_load(cfg, NULL, e) < 0) {
		e->code = E_INTERNAL;
		err_prefix(e, "configuration");
		return -1;
	}
	/* the daemon decides how runs are confined; this user's config may only tighten it */
	if (p->policy && config_apply_policy(cfg, p->policy, e) < 0) {
		err_prefix(e, "applying the daemon's execution policy");
		return -1;
	}
	return 0;
}

/* Hands the payload to `sudo -n -u USER agor executor --stdin`, or to the privileged socket when the daemon's policy
 * names one, and relays its result and status. */
static int run_impersonated(const struct payload *p, const struct config *cfg)
{
	struct err e = ERR_INIT;
	_cleanup_free_ char *self = impersonate_self_path();
	_cleanup_free_ char *forward = executor_forward_payload(p, cfg);
	struct strbuf line = STRBUF_INIT;
	int status = EXIT_FAILED;
	if (!self)
		err_set(&e, E_IMPERSONATION_FAILED, "cannot find this executable's path (/proc/self/exe)");
	else if ((cfg->execution.privileged_socket
			  ? impersonate_run_socket(cfg->execution.privileged_socket, p->as_user, forward,
						   strlen(forward), (int)cfg->execution.timeout_ms, &line, &status, &e)
			  : impersonate_run(p->as_user, self, forward, strlen(forward), (int)cfg->execution.timeout_ms,
					    &line, &status, &e)) == 0) {
		strbuf_addch(&line, '\n');
		(void)!write(1, line.buf, line.len);
	}
	explicit_bzero(forward, strlen(forward));
	strbuf_release(&line);
	if (err_is_set(&e))
		status = print_result(NULL, &e);
	err_clear(&e);
	return status;
}

/* Once the result line is out, the product's executor ends at once: its memory goes back with the process, where
 * freeing it piece by piece has the allocator unmap every group it empties (about a tenth of a dry run). The payload's
 * bytes are still wiped first. The sanitizer build frees everything, so its leak check still covers this path. */
static void end_after_result(int status, const char *payload, size_t len)
{
#ifndef __SANITIZE_ADDRESS__
	explicit_bzero((char *)payload, len);
	exit(status);
#else
	(void)status, (void)payload, (void)len;
#endif
}

static int run_payload(const char *text, size_t len, int dry_run)
{
	struct err e = ERR_INIT;
	struct payload p;
	json_t *data = NULL;
	struct config *cfg = NULL;
	_cleanup_free_ char *me = NULL;
	int status;
	if (payload_parse(text, len, &p, &e) < 0) {
		status = print_result(NULL, &e);
		goto out;
	}
	cfg = config_new();
	int needs = 0;
	if (load_config(&p, cfg, &e) < 0 || (needs = executor_needs_impersonation(&p, &me, &e)) < 0) {
		status = print_result(NULL, &e);
		goto out;
	}
	if (p.command == CMD_PROMPT && !dry_run)
		prompt_install_stop_handlers(); /* cancellation ends the agent (or the impersonated executor) */
	if (needs && !dry_run) {
		status = run_impersonated(&p, cfg);
		goto out;
	}
	struct executor_context ctx = { .cfg = cfg, .dry_run = dry_run, .progress = 1, .current_user = me };
	executor_execute(&p, &ctx, &data, &e);
	status = print_result(data, &e);
	end_after_result(status, text, len);
out:
	if (data)
		json_decref(data);
	payload_release(&p);
	if (cfg)
		config_free(cfg);
	err_clear(&e);
	return status;
}

static int run_from_stdin(int dry_run)
{
	struct strbuf in = STRBUF_INIT;
	ssize_t n = strbuf_read_fd(&in, 0, PAYLOAD_MAX_BYTES);
	int status;
	struct err e = ERR_INIT;
	if (n == -2) {
		err_setd(&e, E_PAYLOAD_TOO_LARGE, json_pack("{s:I}", "maxBytes", (json_int_t)PAYLOAD_MAX_BYTES),
			 "payload is larger than %u bytes (4 MiB)", PAYLOAD_MAX_BYTES);
		status = print_result(NULL, &e);
	} else if (n < 0) {
		err_errno(&e, errno, "reading stdin");
		e.code = E_INVALID_JSON;
		status = print_result(NULL, &e);
	} else {
		status = run_payload(in.buf, in.len, dry_run);
	}
	explicit_bzero(in.buf, in.len);
	strbuf_release(&in);
	err_clear(&e);
	return status;
}

static void set_if_given(json_t *obj, const char *key, const char *value)
{
	if (value)
		json_object_set_new(obj, key, json_string(value));
}

/* Legacy prompt mode (docs/payloads.md#invocation): the same payload, built from flags. */
static int run_legacy(const struct executor_args *a)
{
	char cwd[4096];
	json_t *params = json_object();
	set_if_given(params, "sessionId", a->session_id);
	set_if_given(params, "taskId", a->task_id);
	set_if_given(params, "prompt", a->prompt);
	set_if_given(params, "tool", a->tool);
	set_if_given(params, "permissionMode", a->permission_mode);
	set_if_given(params, "cwd", getcwd(cwd, sizeof(cwd)));
	json_t *payload = json_pack("{s:s,s:o}", "command", "prompt", "params", params);
	set_if_given(payload, "sessionToken", a->session_token);
	set_if_given(payload, "daemonUrl", a->daemon_url);
	char *text = json_to_compact(payload);
	json_decref(payload);
	int status = run_payload(text, strlen(text), a->dry_run);
	free(text);
	return status;
}

static const struct client_flag run_flags[] = {
	{ "--stdin", "stdin", CLIENT_FLAG_BOOL, "read the payload from standard input" },
	{ "--dry-run", "dry_run", CLIENT_FLAG_BOOL,
	  "validate, resolve paths and the user, print the plan; change nothing" },
	{ "--session-token", "session_token", CLIENT_FLAG_STRING, "legacy prompt: the task's session token", "TOKEN" },
	{ "--session-id", "session_id", CLIENT_FLAG_STRING, "legacy prompt: the session", "SESSION" },
	{ "--task-id", "task_id", CLIENT_FLAG_STRING, "legacy prompt: the task", "TASK" },
	{ "--prompt", "prompt", CLIENT_FLAG_STRING, "legacy prompt: the text", "TEXT" },
	{ "--tool", "tool", CLIENT_FLAG_STRING, "legacy prompt: claude-code|codex|gemini|opencode", "TOOL" },
	{ "--permission-mode", "permission_mode", CLIENT_FLAG_STRING, "legacy prompt: the permission mode", "MODE" },
	{ "--daemon-url", "daemon_url", CLIENT_FLAG_STRING, "legacy prompt: where to call back", "URL" },
	{ NULL },
};
static const struct client_flag mcp_flags[] = {
	{ "--socket", "socket", CLIENT_FLAG_STRING, "the absolute path of the permission broker's socket", "PATH" },
	{ NULL },
};
static const struct client_flag shell_flags[] = {
	{ "--data-home", "data_home", CLIENT_FLAG_STRING, "this user's data home", "DIR" },
	{ "--cwd", "cwd", CLIENT_FLAG_STRING, "the worktree the shell starts in (beneath worktrees/)", "DIR" },
	{ "--policy", "policy", CLIENT_FLAG_STRING, "the daemon's execution policy, as a payload's policy field",
	  "JSON" },
	{ "--report-to", "report_to", CLIENT_FLAG_STRING, "the daemon (unix:PATH) the egress refusals go to", "URL" },
	{ "--ticket", "ticket", CLIENT_FLAG_STRING, "the pane's ticket for terminal.report_egress (with --report-to)",
	  "TICKET" },
	{ NULL },
};

static const struct client_command commands[] = {
	{ "", NULL, NULL, run_flags, "--stdin [--dry-run]", .local = 1,
	  .example = "echo '{\"command\":\"git.clone\",\"params\":{\"url\":\"/srv/src\"}}' | agor executor --stdin "
		     "--dry-run" },
	{ "mcp-permission", NULL, NULL, mcp_flags, "--socket PATH", .local = 1,
	  .example = "agor executor mcp-permission --socket /run/agor/perm.sock" },
	{ "sandbox-shell", NULL, NULL, shell_flags,
	  "--data-home DIR --cwd WORKTREE [--policy JSON] [--report-to URL --ticket T]", .local = 1,
	  .example = "agor executor sandbox-shell --data-home ~/.agor-data --cwd ~/.agor-data/worktrees/feature" },
};

/* argv's flags for command c (after its name) into params; 0 or EXIT_USAGE. */
static int parse_command(const struct client_command *c, int argc, char **argv, json_t *params)
{
	int skip = *c->name ? 2 : 1;
	return client_parse_args("executor", c, argc - skip, argv + skip, NULL, params);
}

static int parse_args(int argc, char **argv, struct executor_args *a, json_t *params)
{
	int rc = parse_command(&commands[0], argc, argv, params);
	if (rc)
		return rc;
	a->from_stdin = json_is_true(json_object_get(params, "stdin"));
	a->dry_run = json_is_true(json_object_get(params, "dry_run"));
	const char **targets[] = { &a->session_token, &a->session_id,	   &a->task_id,	  &a->prompt,
				   &a->tool,	      &a->permission_mode, &a->daemon_url };
	for (size_t i = 0; i < ARRAY_SIZE(targets); i++)
		*targets[i] = json_get_str(params, run_flags[i + 2].param);
	int legacy = a->session_token || a->session_id || a->task_id || a->prompt || a->tool;
	if (a->from_stdin && legacy)
		return applet_usage_error(&applet_executor, "--stdin and the legacy prompt flags exclude each other");
	if (!a->from_stdin && !legacy)
		return applet_usage_error(&applet_executor, "expected --stdin (or the legacy prompt flags)");
	return 0;
}

/* `agor executor mcp-permission --socket PATH`: Claude Code's permission prompt tool (mcp_permission.h). */
static int run_mcp_permission(int argc, char **argv)
{
	_cleanup_json_ json_t *params = json_object();
	int rc = parse_command(&commands[1], argc, argv, params);
	const char *socket = json_get_str(params, "socket");
	if (!rc && (!socket || socket[0] != '/'))
		rc = applet_usage_error(&applet_executor,
					"usage: agor executor mcp-permission --socket /ABSOLUTE/PATH");
	return rc ? rc : mcp_permission_serve(0, 1, socket);
}

/* The user's shell for the sandboxed pane, as terminal_shell() picks it with the policy's execution.terminal_shell:
 * never $SHELL, which a tmux server started earlier fixed from its own default-shell. */
static const char *pane_shell(const struct config *cfg)
{
	struct passwd *pw = getpwuid(geteuid());
	if (!pw)
		return cfg->execution.terminal_shell ? cfg->execution.terminal_shell : "/bin/sh";
	return terminal_shell(pw, cfg->execution.terminal_shell);
}

/* This user's config for the pane, with --policy (NULL: none) applied over it. */
static int pane_config(struct config *cfg, const char *data_home, const char *policy, struct err *e)
{
	if (config_set_flag(cfg, "paths.data_home", data_home, e) < 0 || config_load(cfg, NULL, e) < 0)
		return -1;
	if (!policy)
		return 0;
	_cleanup_json_ json_t *pol = json_parse(policy, strlen(policy), e);
	if (!pol || config_apply_policy(cfg, pol, e) < 0) {
		err_prefix(e, "--policy");
		return -1;
	}
	return 0;
}

/* A pane's egress refusals go to the daemon as they happen (terminal.report_egress with the pane's ticket); a
 * daemon that cannot be reached loses nothing the pane shows: the end's summary is printed there regardless. */
struct pane_report {
	const char *url, *ticket;
};

static void report_pane_refusals(json_t *refused, void *arg)
{
	const struct pane_report *r = arg;
	struct err e = ERR_INIT;
	struct rpc_client_options opt = { .connect_timeout_ms = 2000,
					  .send_timeout_ms = 2000,
					  .call_timeout_ms = 2000 };
	struct rpc_client *c = rpc_client_connect(r->url, &opt, &e);
	json_t *result = NULL, *params = json_pack("{s:s,s:O}", "ticket", r->ticket, "refused", refused);
	if (c && rpc_client_call(c, "terminal.report_egress", params, &result, &e) == 0)
		json_decref(result);
	if (err_is_set(&e))
		fprintf(stderr, "agor: could not report refused connections to the daemon: %s\n", e.message);
	json_decref(params);
	rpc_client_close(c);
	err_clear(&e);
}

static int sandboxed_shell(const char *data_home, const char *cwd, const char *policy, const struct pane_report *report,
			   int *exit_code, struct err *e)
{
	struct config *cfg = config_new();
	_cleanup_free_ char *path = NULL;
	struct execrun_reporter reporter = { report_pane_refusals, (void *)report };
	int rc = pane_config(cfg, data_home, policy, e);
	if (rc == 0)
		rc = confine_path(cfg->paths.worktrees_dir, cwd, 1, &path, e);
	if (rc == 0)
		rc = execrun_interactive(cfg, path, (const char *const[]){ pane_shell(cfg), NULL },
					 report->url && report->ticket ? &reporter : NULL, exit_code, e);
	config_free(cfg);
	return rc;
}

static void pass_on_signal(int sig)
{
	child_kill_all(sig); /* the sandbox passes it on to the shell, which ends; the wrapper then cleans up */
}

/* `agor executor sandbox-shell --data-home DIR --cwd WORKTREE [--policy JSON] [--report-to URL --ticket T]`: what
 * a terminal pane runs when the sandbox is on — the user's shell inside the worktree's sandbox
 * (execrun_interactive); a failure is shown on the pane. --policy is the daemon's execution policy (the tmux.attach
 * executor always passes it), applied over this user's config as for a payload; without it this user's config
 * decides. --report-to and --ticket: where and with what the egress proxy's refusals are reported.
 * tmux ends a pane with SIGHUP: it is passed on (as SIGTERM and SIGINT), so the run's cgroup is removed
 * once the shell is gone. */
#define SANDBOX_SHELL_USAGE                                                                                            \
	"usage: agor executor sandbox-shell --data-home DIR --cwd WORKTREE [--policy JSON] [--report-to URL "          \
	"--ticket T]"

static int run_sandbox_shell(int argc, char **argv)
{
	_cleanup_json_ json_t *params = json_object();
	int rc = parse_command(&commands[2], argc, argv, params);
	const char *data_home = json_get_str(params, "data_home"), *cwd = json_get_str(params, "cwd");
	struct pane_report report = { json_get_str(params, "report_to"), json_get_str(params, "ticket") };
	if (!rc && (!data_home || !cwd || !report.url != !report.ticket))
		rc = applet_usage_error(&applet_executor, SANDBOX_SHELL_USAGE);
	if (rc)
		return rc;
	child_on_stop_signals(pass_on_signal);
	struct err e = ERR_INIT;
	int code = EXIT_FAILED;
	if (sandboxed_shell(data_home, cwd, json_get_str(params, "policy"), &report, &code, &e) < 0) {
		fprintf(stderr, "agor: the sandboxed shell did not start: %s\n", e.message);
		sleep(5); /* long enough to be read before tmux closes the pane */
		code = EXIT_FAILED;
	}
	err_clear(&e);
	return code;
}

static int executor_main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "mcp-permission"))
		return run_mcp_permission(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "sandbox-shell"))
		return run_sandbox_shell(argc, argv);
	struct executor_args a = { 0 };
	_cleanup_json_ json_t *params = json_object();
	int rc = parse_args(argc, argv, &a, params);
	if (rc)
		return rc;
	return a.from_stdin ? run_from_stdin(a.dry_run) : run_legacy(&a);
}

const struct applet applet_executor = {
	.name = "executor",
	.summary = "untrusted worker: one typed JSON payload on stdin, one JSON result line on stdout",
	.usage = "Usage: agor executor --stdin [--dry-run]\n"
		 "       agor executor --session-token T --session-id S --task-id K --prompt P\n"
		 "                     --tool claude-code|codex|gemini|opencode\n"
		 "                     [--permission-mode M] [--daemon-url URL] [--dry-run]\n"
		 "       agor executor mcp-permission --socket PATH   (Claude Code's permission prompt tool)\n"
		 "       agor executor sandbox-shell --data-home DIR --cwd WORKTREE [--policy JSON] [--report-to URL "
		 "--ticket T]\n"
		 "                     (a terminal pane's shell; --policy as the payload's policy field)\n"
		 "\n"
		 "Reads one JSON payload {\"command\":…,\"params\":{…}} from stdin (at most 4 MiB), runs it\n"
		 "and prints exactly one result line on stdout:\n"
		 "  {\"success\":true,\"data\":{…}}  or  "
		 "{\"success\":false,\"error\":{\"code\",\"message\",\"details\"}}\n"
		 "Exit status: 0 success, 1 the command failed, 2 the input was invalid.\n"
		 "\n"
		 "Commands: exec.run, git.clone, git.worktree.add, git.worktree.remove, prompt, tmux.attach,\n"
		 "          tmux.close, zellij.attach\n"
		 "Base fields: asUser, daemonUrl, sessionToken, env, dataHome, policy (unknown fields are errors).\n"
		 "policy is the daemon's execution policy, {\"execution.sandbox.enabled\":\"true\",…}: the keys\n"
		 "execution.sandbox.*, execution.fallback_to_unified and execution.timeout_ms with their text as\n"
		 "`agor config show` prints it; it overrides this user's config, which may only make it stricter.\n"
		 "\n"
		 "  --stdin          read the payload from standard input\n"
		 "  --dry-run        validate, resolve paths and the user, print the plan; change nothing\n",
	.main = executor_main,
	.flags = 0,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
