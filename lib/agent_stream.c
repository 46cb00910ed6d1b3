/* agent_stream.c — the state an agent CLI's stream builds and the channel back to it (agent_stream.h). */
#include <stdlib.h>
#include <string.h>

#include "agent_stream.h"
#include "common.h"
#include "banned.h"

void agent_remember_session(struct agent_state *st, const char *id)
{
	if (!id || !*id || (st->agent_session_id && !strcmp(st->agent_session_id, id)))
		return;
	free(st->agent_session_id);
	st->agent_session_id = xstrdup(id);
}

void agent_finish(struct agent_state *st, int failed, const char *reason, json_t *usage)
{
	st->finished = 1;
	st->failed = st->failed || failed;
	if (failed && reason && !st->failure)
		st->failure = xstrdup(reason);
	if (usage && json_is_object(usage)) {
		if (st->usage)
			json_decref(st->usage);
		st->usage = json_deep_copy(usage);
	}
}

void agent_channel_release(struct agent_channel *ch)
{
	strbuf_release(&ch->to_cli);
	if (ch->pending)
		json_decref(ch->pending);
	ch->pending = NULL;
}

void agent_state_release(struct agent_state *st)
{
	free(st->agent_session_id);
	free(st->failure);
	if (st->usage)
		json_decref(st->usage);
	memset(st, 0, sizeof(*st));
}

void agent_relay_lines(struct strbuf *pending, int *overflow, size_t max,
		       void (*map)(const char *line, size_t len, void *arg), void *arg)
{
	size_t done = 0, len;
	for (const char *line; (line = strbuf_next_line(pending, &done, &len));) {
		if (!*overflow)
			map(line, len, arg);
		*overflow = 0;
	}
	strbuf_remove_front(pending, done);
	if (pending->len > max) {
		if (!*overflow)
			map(pending->buf, pending->len, arg);
		*overflow = 1;
		strbuf_reset(pending);
	}
}
