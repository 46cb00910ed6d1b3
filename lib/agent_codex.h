/* agent_codex.h — Codex driven through `codex app-server` (JSON-RPC 2.0 over stdio, one message a line), the
 * CLI's approval-capable interface: the conversation agor leads, the mapping of its notifications onto agor's
 * message types, and its approval requests turned into permission questions. Pure: the caller (prompt.c) does
 * the I/O and asks the daemon through the channel (agent_stream.h). */
#ifndef AGOR_AGENT_CODEX_H
#define AGOR_AGENT_CODEX_H

/*
 * Contract
 * --------
 * codex_command(inv, argv, env, in): `app-server --listen stdio://` (no -c overrides: CODEX_HOME's config.toml,
 * written by codex_prepare, names the provider); env OPENAI_API_KEY (the key or the egress sentinel) and
 * CODEX_HOME = inv->home/.agor/codex; in = the `initialize` request (id 1). The CLI's stdin stays open.
 *
 * codex_map(message, st, emit, arg): one line from the app-server, with st->channel set (else the requests it
 * would send are dropped and every approval is declined). The conversation, by response id:
 *   1 initialize  → `initialized`, then thread/resume {threadId: inv->resume_id} or thread/start (id 2), both
 *                   with the mode's approvalPolicy and sandbox (below) and inv->model;
 *   2 thread      → its thread.id is the session id (resume); turn/start {threadId, input: [prompt]} (id 3);
 *   an error answer to any of them → finished failed, channel done.
 * Approval requests are answered in order (the caller blocks on the daemon meanwhile):
 *   item/commandExecution/requestApproval → ask("command_execution", {command, cwd, reason}, itemId);
 *   item/fileChange/requestApproval       → ask("file_change", {changes: the item's, from item/started}, itemId);
 *   approved → {"decision":"accept"}, else {"decision":"decline"}: the command or patch never runs.
 *   Any other server request (user input, MCP elicitation, extra permissions, auth refresh, …) → JSON-RPC
 *   error -32601: nothing is granted that agor did not ask about.
 * Notifications: item/started commandExecution|fileChange → tool_use; item/completed agentMessage → text,
 * reasoning → thinking, commandExecution → tool_result {content: aggregatedOutput, exit_code, is_error unless it
 * completed with 0}, fileChange → tool_result {content: status, is_error unless completed}, other items (not the
 * user's own message) → tool_use {name: item type, input: item}; item/agentMessage/delta → text_delta;
 * item/reasoning/textDelta and summaryTextDelta → thinking_delta; thread/started, turn/started → system;
 * thread/tokenUsage/updated adds each request's `last` usage into st->usage {input_tokens, cached_input_tokens,
 * output_tokens, reasoning_output_tokens}; error → error; turn/completed → result, finished (failed unless status
 * "completed", with turn.error.message), channel done (the caller closes stdin and the app-server exits).
 * Bookkeeping notifications (status changes, rate limits, output deltas repeated by item/completed, …) are not
 * relayed; any other message is kept as "unknown".
 *
 * Modes (inside agor's sandbox Codex's own bubblewrap cannot nest, so its sandbox is danger-full-access and agor's
 * is the boundary; unconfined, Codex's own sandbox is used):
 *   default           approvalPolicy untrusted (asks before all but its known read-only commands, and before
 *                     every patch); the daemon decides each by the session mode and the creator's answer;
 *   acceptEdits       the same; the daemon approves file_change by the mode and asks for commands;
 *   bypassPermissions never (nothing asked, everything runs);
 *   plan              never; agor's sandbox mounts the worktree read-only (unconfined: Codex's read-only sandbox).
 * codex_mode_policy(mode, in_sandbox, &approval, &sandbox) gives that table's two values.
 */

#include "agent_stream.h"
#include "err.h"
#include "strvec.h"

void codex_command(const struct agent_invocation *inv, struct strvec *argv, struct strvec *env, struct strbuf *in);
int codex_prepare(const struct agent_invocation *inv, struct err *e);
void codex_map(json_t *message, struct agent_state *st, agent_emit_fn emit, void *arg);
void codex_mode_policy(const char *mode, int in_sandbox, const char **approval, const char **sandbox);

#endif
