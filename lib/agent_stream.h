/* agent_stream.h — what every agent adapter works with: the invocation it starts the CLI from, the state the
 * CLI's event stream builds (its session id, final usage, success or failure), and the channel back to a CLI that
 * converses on its stdin (Codex's app-server). Below agent.c's table and the adapters in their own files. */
#ifndef AGOR_AGENT_STREAM_H
#define AGOR_AGENT_STREAM_H

#include <jansson.h>
#include <stddef.h>

#include "strbuf.h"

struct agent_channel;

struct agent_state {
	char *agent_session_id;	       /* the CLI's conversation id (resume), or NULL */
	json_t *usage;		       /* token usage from the final event, or NULL */
	int finished;		       /* a final event (result / turn.completed / …) was seen */
	int failed;		       /* that event (or an error event) reported a failure */
	char *failure;		       /* its reason, or NULL */
	size_t garbage_lines;	       /* stdout lines that were not JSON */
	size_t messages;	       /* messages emitted */
	struct agent_channel *channel; /* a conversing CLI's way back (the caller's), or NULL */
};

struct agent_invocation {
	const char *program; /* the CLI (config agents.<tool>.command); NULL: the default name */
	const char *prompt;
	const char *permission_mode; /* default | acceptEdits | bypassPermissions | plan */
	const char *resume_id;	     /* the CLI's session id from an earlier prompt, or NULL */
	const char *model;	     /* NULL: the CLI's default */
	const char *base_url;	     /* the provider endpoint, or NULL */
	const char *api_key;	     /* NULL: none fetched */
	const char *mcp_config;	     /* Claude Code: the MCP config file of the permission prompt tool */
	const char *run_dir;	     /* a private 0700 directory for this run */
	const char *home;	     /* the agent's $HOME (Codex keeps its CODEX_HOME under it), or NULL */
	const char *state_home;	     /* where $HOME's state directories are on the host when they are bound elsewhere
				      * (the sandbox's agor-managed agent state), or NULL: at home */
	int in_sandbox;		     /* runs inside agor's sandbox (where the CLI's own namespaces are denied) */
};

typedef void (*agent_emit_fn)(const char *type, json_t *data, void *arg);

struct agent_channel {
	const struct agent_invocation *inv;
	json_t *(*ask)(const char *tool_name, json_t *input, json_t *tool_use_id, void *ask_arg);
	void *ask_arg;
	struct strbuf to_cli; /* lines for the CLI's stdin */
	int done;	      /* the conversation is over: close the CLI's stdin */
	json_t *pending;      /* the adapter's own bookkeeping (Codex: file changes by item id), or NULL */
};

void agent_channel_release(struct agent_channel *ch);
void agent_state_release(struct agent_state *st);

/* A CLI's stdout as lines: each complete line of *pending ('\n' included) goes to map in order, and the lines are
 * then removed from it at once (a removal per line moves the rest each time: quadratic in a read of short lines).
 * A line longer than max goes to map once, as far as it was read; *overflow is then set and the rest of that line
 * is dropped up to its newline. */
void agent_relay_lines(struct strbuf *pending, int *overflow, size_t max,
		       void (*map)(const char *line, size_t len, void *arg), void *arg);

/* For the adapters: the CLI's session id seen; a final event seen (usage copied). */
void agent_remember_session(struct agent_state *st, const char *id);
void agent_finish(struct agent_state *st, int failed, const char *reason, json_t *usage);

#endif
