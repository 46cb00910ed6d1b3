/* agent_fuzz.c — libFuzzer target over what the executor reads from an agent CLI's stdout (untrusted: the agent
 * writes it): each adapter's line mapping (agent_map_line: Claude Code, Codex's app-server, Gemini, OpenCode)
 * and the ACP client (acp_on_line). The first byte picks the reader, the rest is lines. Every question is
 * answered "no" by the stand-in for the daemon. Invariants: every message emitted has a type and an object (or
 * nothing: sent as null); a
 * Codex approval is answered "decline", never "accept"; an ACP permission request is answered with one of the
 * request's own reject_once options or "cancelled", never another option: the agent cannot approve itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "acp.h"
#include "agent.h"
#include "json.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const tools[] = { "claude-code", "codex", "gemini", "opencode" };

static void emitted(const char *type, json_t *data, void *arg)
{
	(void)arg;
	if (!type || !*type || (data && !json_is_object(data)))
		abort(); /* NULL data goes out as null (prompt.c report_message) */
	json_decref(data);
}

static json_t *say_no(const char *tool_name, json_t *input, json_t *tool_use_id, void *arg)
{
	(void)input, (void)tool_use_id, (void)arg;
	if (!tool_name)
		abort();
	return json_pack("{s:b,s:s}", "approved", 0, "reason", "fuzz");
}

static int acp_say_no(json_t *request, void *arg)
{
	(void)arg;
	if (!json_is_string(json_object_get(request, "tool_name")))
		abort();
	return 0;
}

/* Codex: nothing agor wrote back to the CLI accepts a command or a change. */
static void check_codex_answers(const struct strbuf *to_cli)
{
	for (const char *p = to_cli->buf; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		json_t *m = json_loadb(p, n, 0, NULL);
		const char *decision = json_get_str(json_object_get(m, "result"), "decision");
		if (!m || (decision && strcmp(decision, "decline")))
			abort();
		json_decref(m);
		p = nl ? nl + 1 : NULL;
	}
}

static void map_lines(const char *tool, const char *text, size_t len)
{
	const struct agent_adapter *a = agent_find(tool);
	struct agent_invocation inv = { .prompt = "fuzz", .permission_mode = "default" };
	struct agent_channel ch = { .inv = &inv, .ask = say_no, .to_cli = STRBUF_INIT };
	struct agent_state st = { .channel = &ch };
	for (size_t off = 0; off < len;) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - text - off) + 1 : len - off;
		agent_map_line(a, text + off, n, &st, emitted, NULL);
		off += n;
	}
	check_codex_answers(&ch.to_cli);
	agent_state_release(&st);
	agent_channel_release(&ch);
}

/* ACP: the answer to a permission request names one of its reject_once options, or is "cancelled". */
static void check_acp_answer(const char *request, size_t len, const char *answer, size_t alen)
{
	json_t *q = json_loadb(request, len, 0, NULL), *a = json_loadb(answer, alen, 0, NULL);
	json_t *outcome = json_object_get(json_object_get(a, "result"), "outcome");
	const char *how = json_get_str(outcome, "outcome"), *chosen = json_get_str(outcome, "optionId");
	if (!how)
		abort();
	if (strcmp(how, "cancelled")) {
		int found = 0;
		size_t i;
		json_t *o;
		json_array_foreach(json_object_get(json_object_get(q, "params"), "options"), i, o) found |=
			chosen && json_get_str(o, "optionId") && !strcmp(json_get_str(o, "optionId"), chosen) &&
			json_get_str(o, "kind") && !strcmp(json_get_str(o, "kind"), "reject_once");
		if (!found)
			abort();
	}
	json_decref(q);
	json_decref(a);
}

static void acp_lines(const char *text, size_t len)
{
	int out = memfd_create("acp-fuzz", MFD_CLOEXEC);
	if (out < 0)
		return;
	struct acp_client *c = acp_start(dup(out), "/work", "fuzz", acp_say_no, NULL);
	struct agent_state st = { 0 };
	for (size_t off = 0; off < len;) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - text - off) + 1 : len - off;
		off_t before = lseek(out, 0, SEEK_CUR);
		acp_on_line(c, text + off, n, &st, emitted, NULL);
		off_t after = lseek(out, 0, SEEK_END);
		json_t *m = json_loadb(text + off, n, 0, NULL);
		const char *method = json_get_str(m, "method");
		if (method && !strcmp(method, "session/request_permission") && json_object_get(m, "id") &&
		    after > before) {
			char *answer = xcalloc(1, (size_t)(after - before) + 1);
			if (pread(out, answer, (size_t)(after - before), before) == after - before)
				check_acp_answer(text + off, n, answer, (size_t)(after - before));
			free(answer);
		}
		json_decref(m);
		off += n;
	}
	acp_free(c);
	agent_state_release(&st);
	close(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size || size > 65536)
		return 0;
	const char *text = (const char *)data + 1;
	if (data[0] % 5 == 4)
		acp_lines(text, size - 1);
	else
		map_lines(tools[data[0] % 5], text, size - 1);
	return 0;
}
