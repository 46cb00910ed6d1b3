/* acp.h — an Agent Client Protocol client: JSON-RPC 2.0, one message a line, over an agent CLI's stdin and
 * stdout (`gemini --acp`). It opens a session of the CLI, sends the prompt, maps the CLI's session updates
 * onto agor's messages and answers each permission request by asking the caller. */
#ifndef AGOR_ACP_H
#define AGOR_ACP_H

/*
 * Contract
 * --------
 * acp_start(to_agent, cwd, prompt, ask, arg) takes the CLI's stdin (closed by acp_free, or once the prompt's turn
 * ended) and sends `initialize`. Each line the CLI writes then goes to acp_on_line, which drives the rest:
 * `session/new` (its id becomes st's agent session id), then `session/prompt` with the prompt text. There is no
 * resume: Gemini 0.61.0 answers `session/load` of a session it wrote with "Invalid session identifier", so each
 * prompt is a new conversation. The answer to the prompt ends the run: st is finished (failed for an error
 * answer or a "refusal"/"cancelled" stop reason), a "result" message carries the answer, and the CLI's stdin is
 * closed so it exits.
 *
 * A `session/request_permission` request calls ask(request, arg) with {tool_name, input, tool_use_id}
 * (tool_name: the tool call's kind, e.g. "execute" or "edit"; input: {title, input}); ask returns 1 to allow. The
 * CLI is answered with its "allow_once" option, else its "reject_once" one (no such option: "cancelled"). Nothing
 * is ever allowed "always": each call is asked. Any other request from the CLI (file system, terminal) is
 * answered "method not found": the client offers no capability.
 *
 * Updates: agent_message_chunk → "text_delta", agent_thought_chunk → "thinking_delta", tool_call → "tool_use",
 * a tool_call_update that completed or failed → "tool_result"; user message echoes and in-progress updates are
 * skipped; anything else is kept as "unknown" (agent.h). A line that is not JSON is counted as garbage.
 */

#include <jansson.h>

#include "agent.h"
#include "err.h"

struct acp_client;

typedef int (*acp_ask_fn)(json_t *request, void *arg);

struct acp_client *acp_start(int to_agent, const char *cwd, const char *prompt, acp_ask_fn ask, void *arg);
void acp_on_line(struct acp_client *c, const char *line, size_t len, struct agent_state *st, agent_emit_fn emit,
		 void *emit_arg);
void acp_free(struct acp_client *c);

#endif
