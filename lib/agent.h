/* agent.h — the agent CLIs the prompt command runs (Claude Code, Codex, Gemini, OpenCode): how each is
 * started, and how each line of its JSON event stream becomes report_message calls and a final outcome.
 * Never drops an event it does not know (it is kept as type "unknown" with the raw JSON); pure functions. */
#ifndef AGOR_AGENT_H
#define AGOR_AGENT_H

/*
 * Contract
 * --------
 * agent_find(tool) → the adapter for "claude-code" | "codex" | "gemini" | "opencode", or NULL.
 *
 * agent_command(a, inv, argv, env, stdin_text): the child's argv (argv[0] = inv->program, else the
 * adapter's default program name, looked up in PATH), the adapter's own environment entries (API key
 * under the provider's variable, base URL when given, quiet switches; the caller adds PATH/HOME/…),
 * and the text to write to the child's stdin (may be empty: stdin is then closed at once). The prompt
 * goes on stdin (Claude Code stream-json, Codex, Gemini, OpenCode; over ACP for Gemini in default mode).
 * Permission modes map onto the CLI's own flags; for Claude Code "default" and "acceptEdits" add the
 * permission prompt tool served by `agor executor mcp-permission` (inv->mcp_config names its config file;
 * NULL: no prompt tool, Claude Code then denies what needs asking).
 *
 * Codex runs as `codex app-server` (agent_codex.h), with CODEX_HOME = inv->home/.agor/codex (kept between
 * prompts so thread/resume finds its sessions; under /tmp Codex refuses to install its sandbox helpers), whose
 * config.toml agent_prepare rewrites each run: a provider "agor" at inv->base_url (wire_api responses, key from
 * OPENAI_API_KEY).
 *
 * A conversing adapter (a->converses: Codex) keeps the CLI's stdin open: the caller sets st->channel before the
 * first line, writes channel->to_cli to the CLI's stdin after each line (then empties it) and closes the stdin
 * once channel->done. channel->ask(tool_name, input, tool_use_id, ask_arg) asks the daemon (request_permission)
 * and returns {"approved": bool, "reason"?} (never NULL; fail closed).
 *
 * Gemini CLI and OpenCode run headless have nobody to ask (Gemini offers the model no tool that needs asking,
 * `opencode run` rejects what is set to ask), so their other modes allow or deny outright. In "default" Gemini
 * runs as an ACP agent instead (agent_uses_acp: `gemini --acp`; the prompt then goes over ACP, acp.h, and
 * stdin_text stays empty), so each approval is asked. OpenCode's ACP mode must listen on a TCP port, which the
 * sandbox forbids: it has no "default" mode.
 *
 * agent_check_mode(a, mode, e): 0 when the CLI can honour the permission mode, else an error naming the modes it
 * can. The daemon refuses a session in a mode its CLI cannot honour, and the executor such a prompt, before
 * anything runs.
 *
 * Gemini runs with --skip-trust (headless it refuses an untrusted folder) and agent_prepare rewrites its
 * ~/.gemini/settings.json each run: API-key auth (a base URL alone makes it pick an auth type it then rejects),
 * no usage statistics, no auto-update. OpenCode reads the prompt on stdin, its provider endpoint from
 * OPENCODE_CONFIG_CONTENT, its permissions from OPENCODE_PERMISSION, and never the worktree's opencode.json
 * (the agent could write one granting itself every tool).
 *
 * agent_map_line(a, line, len, st, emit, arg): one line of the CLI's stdout. Each message it yields goes
 * to emit(type, data) (data is stolen) in order. Message types: "system", "text", "text_delta",
 * "thinking", "thinking_delta", "tool_use", "tool_result", "error", "result", "unknown" ({type, raw}),
 * "garbage" ({line}: not JSON; the line is cut to 4 KiB). st collects the CLI's own session id (for
 * resume), the final token usage and whether a final event said success or failure.
 */

#include <jansson.h>
#include <stddef.h>

#include "agent_stream.h"
#include "config.h"
#include "err.h"
#include "strbuf.h"
#include "strvec.h"

struct agent_adapter {
	const char *tool;	 /* the payload's tool name */
	const char *config_name; /* its section under agents. in config.yaml */
	const char *service;	 /* get_api_key service */
	const char *program;	 /* default program name */
	void (*command)(const struct agent_invocation *inv, struct strvec *argv, struct strvec *env,
			struct strbuf *stdin_text);
	void (*map)(json_t *event, struct agent_state *st, agent_emit_fn emit, void *arg);
	int (*prepare)(const struct agent_invocation *inv, struct err *e); /* files the CLI reads; may be NULL */
	const char *const *state_dirs; /* below $HOME, kept between runs (sessions to resume, settings) */
	const char *default_endpoint;  /* the provider's API when agents.<tool>.base_url is unset (egress.h) */
	int converses;		       /* stdin stays open for the adapter's answers (struct agent_channel) */
	/* the command line of its Agent Client Protocol mode (acp.h), used in "default" mode so that each
	 * approval is asked; NULL: none */
	void (*acp_command)(const struct agent_invocation *inv, struct strvec *argv, struct strvec *env);
	const char *const *modes; /* the permission modes the CLI can honour; NULL: all four */
};

const struct agent_adapter *agent_find(const char *tool);
/* agents.<section> of cfg for a tool name, or NULL for an unknown tool. */
const struct config_agent *agent_config(const struct config *cfg, const char *tool);
int agent_check_mode(const struct agent_adapter *a, const char *mode, struct err *e);
/* Whether the CLI runs as an ACP agent (acp.h) in this mode: its stdout is then JSON-RPC for acp_on_line. */
int agent_uses_acp(const struct agent_adapter *a, const char *mode);
void agent_command(const struct agent_adapter *a, const struct agent_invocation *inv, struct strvec *argv,
		   struct strvec *env, struct strbuf *stdin_text);
/* Writes what the CLI must find on disk before it starts (Codex: CODEX_HOME/config.toml naming the
 * provider endpoint; Gemini: ~/.gemini/settings.json), as the execution user. */
int agent_prepare(const struct agent_adapter *a, const struct agent_invocation *inv, struct err *e);
void agent_map_line(const struct agent_adapter *a, const char *line, size_t len, struct agent_state *st,
		    agent_emit_fn emit, void *arg);

/* The Claude Code tool name of the permission prompt tool agor serves. */
#define AGENT_PERMISSION_TOOL "mcp__agor__approve"

#endif
