/* mcp_permission_fuzz.c — libFuzzer target over `agor executor mcp-permission` (mcp_permission_serve), the MCP
 * server Claude Code (the agent: untrusted) talks to on stdin before a tool runs. No broker answers, as when the
 * executor's broker is gone. Invariants: every line that is a call (an object with an id and a method) gets
 * exactly one reply line of JSON-RPC, and no reply ever allows a tool: without the broker, it fails closed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json.h"
#include "mcp_permission.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether a line may parse as an object: its first byte past JSON's whitespace is '{'. One that is not cannot be
 * a call, and needs no parse of its own here. */
static int may_be_object(const char *p, size_t len)
{
	size_t i = 0;
	while (i < len && p[i] && strchr(" \t\r\n", p[i]))
		i++;
	return i < len && p[i] == '{';
}

/* The lines of one text already judged: a line that repeats an earlier one (mutated inputs, and so the replies,
 * repeat many) has its verdict again rather than a second parse. Open addressing on FNV-1a; a hit compares the
 * bytes, so a verdict is only ever reused for the same bytes. */
struct judged_line {
	const char *p; /* NULL: a free slot */
	size_t len;
	int verdict;
};
struct judged {
	struct judged_line *slot;
	size_t mask;
};

static void judged_init(struct judged *j, const char *text, size_t len)
{
	size_t lines = 0, n = 16;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	while (n < 2 * lines)
		n <<= 1;
	j->slot = calloc(n, sizeof(*j->slot));
	if (!j->slot)
		abort();
	j->mask = n - 1;
}

/* The slot of line p: the one that judged the same bytes, or the free one it takes. */
static struct judged_line *judged_slot(struct judged *j, const char *p, size_t len)
{
	uint64_t h = 14695981039346656037ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	for (size_t i = (size_t)h & j->mask;; i = (i + 1) & j->mask) {
		struct judged_line *l = &j->slot[i];
		if (!l->p || (l->len == len && !memcmp(l->p, p, len)))
			return l;
	}
}

static int is_call(const char *p, size_t len)
{
	json_t *m = json_loadb(p, len, 0, NULL);
	int call = json_is_object(m) && json_object_get(m, "id") && json_get_str(m, "method");
	json_decref(m);
	return call;
}

/* The calls among the complete lines: what must be answered. */
static size_t calls_in(const char *text, size_t len)
{
	size_t calls = 0;
	struct judged j;
	judged_init(&j, text, len);
	for (const char *p = text, *nl; (nl = memchr(p, '\n', len - (size_t)(p - text))); p = nl + 1) {
		if (!may_be_object(p, (size_t)(nl - p)))
			continue;
		struct judged_line *l = judged_slot(&j, p, (size_t)(nl - p));
		if (!l->p)
			*l = (struct judged_line){ p, (size_t)(nl - p), is_call(p, (size_t)(nl - p)) };
		calls += (size_t)l->verdict;
	}
	free(j.slot);
	return calls;
}

/* A reply line is a JSON-RPC reply, and denies if it decides. */
static void check_reply(const char *p, size_t len)
{
	json_t *r = json_loadb(p, len, 0, NULL);
	if (!json_is_object(r) || (!json_object_get(r, "result") && !json_object_get(r, "error")))
		abort();
	const char *text =
		json_get_str(json_array_get(json_object_get(json_object_get(r, "result"), "content"), 0), "text");
	json_t *decision = text ? json_loads(text, 0, NULL) : NULL;
	const char *behavior = json_get_str(decision, "behavior");
	if (behavior && strcmp(behavior, "deny"))
		abort(); /* allowed with nobody asked */
	json_decref(decision);
	json_decref(r);
}

static void check_replies(const char *out, size_t len, size_t calls)
{
	size_t replies = 0;
	struct judged j;
	judged_init(&j, out, len);
	for (const char *p = out, *nl; (nl = memchr(p, '\n', len - (size_t)(p - out))); p = nl + 1) {
		struct judged_line *l = judged_slot(&j, p, (size_t)(nl - p));
		if (!l->p) {
			check_reply(p, (size_t)(nl - p)); /* aborts unless it passes */
			*l = (struct judged_line){ p, (size_t)(nl - p), 1 };
		}
		replies++;
	}
	free(j.slot);
	if (replies != calls)
		abort();
}

/* The two files, made once and emptied for each input rather than made and closed for each. */
static void empty_files(int *in, int *out)
{
	static int fds[2] = { -1, -1 };
	for (int i = 0; i < 2; i++)
		if ((fds[i] < 0 && (fds[i] = memfd_create(i ? "mcp-out" : "mcp-in", MFD_CLOEXEC)) < 0) ||
		    ftruncate(fds[i], 0) < 0 || lseek(fds[i], 0, SEEK_SET) != 0)
			abort();
	*in = fds[0];
	*out = fds[1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 60000)
		return 0;
	int in, out;
	empty_files(&in, &out);
	if (write(in, data, size) != (ssize_t)size || lseek(in, 0, SEEK_SET) != 0)
		abort();
	mcp_permission_serve(in, out, "/nonexistent/agor-broker.sock");
	off_t len = lseek(out, 0, SEEK_END);
	char *text = calloc(1, (size_t)len + 1);
	if (!text || pread(out, text, (size_t)len, 0) != len)
		abort();
	check_replies(text, (size_t)len, calls_in((const char *)data, size));
	free(text);
	return 0;
}
