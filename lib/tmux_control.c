/* tmux_control.c — the tmux control-mode parser and input encoders of tmux_control.h.
 * Lines are classified from a small head; output bodies are decoded and emitted as they stream by. */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "tmux_control.h"
#include "banned.h"

#define DECODE_CHUNK 4096

void tmux_parser_init(struct tmux_parser *p, tmux_event_fn fn, void *arg)
{
	memset(p, 0, sizeof(*p));
	p->fn = fn;
	p->arg = arg;
	p->mode = TMUX_LINE_HEAD;
	strbuf_init(&p->line, TMUX_HEAD_MAX);
}

void tmux_parser_release(struct tmux_parser *p)
{
	strbuf_release(&p->line);
}

static void emit(struct tmux_parser *p, struct tmux_event ev)
{
	if (!ev.id)
		ev.id = "";
	if (!ev.arg)
		ev.arg = "";
	p->fn(p->arg, &ev);
}

static int starts_with(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && !memcmp(s, prefix, k);
}

/* ---- %output bodies: tmux escapes bytes below ' ' and '\' as \ooo ----------------------------- */

static void flush_decoded(struct tmux_parser *p, const uint8_t *buf, size_t n, int eol)
{
	if (n || eol)
		emit(p, (struct tmux_event){ .kind = TMUX_OUTPUT, .id = p->pane, .data = buf, .len = n, .eol = eol });
}

static void decode_output(struct tmux_parser *p, const char *s, size_t n, int eol)
{
	uint8_t out[DECODE_CHUNK];
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (o == sizeof(out)) {
			flush_decoded(p, out, o, 0);
			o = 0;
		}
		if (p->esc_digits == 0) {
			if (c == '\\')
				p->esc_digits = -1;
			else
				out[o++] = c;
			continue;
		}
		if (c < '0' || c > '7') { /* not an escape after all: keep what was seen */
			out[o++] = '\\';
			p->esc_digits = 0;
			i--;
			continue;
		}
		p->esc_value = (p->esc_digits < 0 ? 0 : p->esc_value) * 8 + (c - '0');
		p->esc_digits = p->esc_digits < 0 ? 1 : p->esc_digits + 1;
		if (p->esc_digits == 3) {
			out[o++] = (uint8_t)p->esc_value;
			p->esc_digits = 0;
		}
	}
	if (eol && p->esc_digits) {
		if (o == sizeof(out)) {
			flush_decoded(p, out, o, 0);
			o = 0;
		}
		out[o++] = '\\'; /* a dangling backslash at the end of a line */
		p->esc_digits = 0;
	}
	flush_decoded(p, out, o, eol);
}

/* "%output %ID REST" or "%extended-output %ID AGE … : REST": sets p->pane, returns REST's offset or -1. */
static long output_body(struct tmux_parser *p, const char *s, size_t n)
{
	int extended = starts_with(s, n, "%extended-output ");
	size_t at = extended ? strlen("%extended-output ") : strlen("%output ");
	size_t end = at;
	while (end < n && s[end] != ' ')
		end++;
	if (end == n || end == at || s[at] != '%' || end - at >= sizeof(p->pane))
		return -1;
	memcpy(p->pane, s + at, end - at);
	p->pane[end - at] = 0;
	if (!extended)
		return (long)end + 1;
	for (size_t i = end; i + 2 < n; i++)
		if (s[i] == ' ' && s[i + 1] == ':' && s[i + 2] == ' ')
			return (long)i + 3;
	return -1;
}

static int is_output_line(const char *s, size_t n)
{
	return starts_with(s, n, "%output ") || starts_with(s, n, "%extended-output ");
}

/* ---- whole lines ---------------------------------------------------------------------------- */

/* "%begin|%end|%error TIME NUMBER FLAGS" → number and flags; -1 when malformed. */
static int parse_guard(const char *s, long *number, int *flags)
{
	const char *p = strchr(s, ' ');
	char *end;
	if (!p || strtol(p + 1, &end, 10) < 0 || *end != ' ')
		return -1;
	*number = strtol(end + 1, &end, 10);
	if (*end != ' ' && *end)
		return -1;
	*flags = *end ? (int)strtol(end + 1, NULL, 10) : 0;
	return 0;
}

/* Splits "NAME ID REST" into id (NUL-terminated in place) and rest. */
static void split_id(char *line, const char **id, const char **rest)
{
	char *sp = strchr(line, ' ');
	*id = sp ? sp + 1 : "";
	*rest = "";
	if (!sp)
		return;
	char *sp2 = strchr(sp + 1, ' ');
	if (sp2) {
		*sp2 = 0;
		*rest = sp2 + 1;
	}
}

static int block_closes(struct tmux_parser *p, const char *s, size_t n, int *error)
{
	long number;
	int flags;
	*error = starts_with(s, n, "%error ");
	if (!(*error || starts_with(s, n, "%end ")) || parse_guard(s, &number, &flags) < 0)
		return 0;
	return number == p->block_number;
}

static void notification(struct tmux_parser *p, char *s, size_t n)
{
	struct tmux_event ev = { .kind = TMUX_OTHER, .arg = s };
	const char *rest;
	if (starts_with(s, n, "%begin ") && parse_guard(s, &ev.number, &ev.flags) == 0) {
		ev.kind = TMUX_BLOCK_BEGIN;
		ev.arg = "";
		p->in_block = 1;
		p->block_number = ev.number;
	} else if (starts_with(s, n, "%window-add ") || starts_with(s, n, "%window-close ")) {
		ev.kind = s[8] == 'a' ? TMUX_WINDOW_ADD : TMUX_WINDOW_CLOSE;
		split_id(s, &ev.id, &rest);
		ev.arg = "";
	} else if (starts_with(s, n, "%session-changed ")) {
		ev.kind = TMUX_SESSION_CHANGED;
		split_id(s, &ev.id, &ev.arg);
	} else if (starts_with(s, n, "%layout-change ")) {
		ev.kind = TMUX_LAYOUT_CHANGE;
		split_id(s, &ev.id, &rest);
		char *sp = strchr(rest, ' ');
		if (sp)
			*sp = 0;
		ev.arg = rest;
	} else if (!strcmp(s, "%exit") || starts_with(s, n, "%exit ")) {
		ev.kind = TMUX_EXIT;
		ev.arg = s[5] ? s + 6 : "";
	}
	emit(p, ev);
}

static void complete_line(struct tmux_parser *p)
{
	struct strbuf *l = &p->line;
	if (l->len && l->buf[l->len - 1] == '\r')
		strbuf_setlen(l, l->len - 1);
	int error;
	long body;
	if (p->in_block && block_closes(p, l->buf, l->len, &error)) {
		p->in_block = 0;
		emit(p, (struct tmux_event){ .kind = TMUX_BLOCK_END, .number = p->block_number, .error = error });
	} else if (p->in_block) {
		emit(p, (struct tmux_event){
				.kind = TMUX_BLOCK_DATA, .data = (const uint8_t *)l->buf, .len = l->len, .eol = 1 });
	} else if (is_output_line(l->buf, l->len) && (body = output_body(p, l->buf, l->len)) >= 0) {
		decode_output(p, l->buf + body, l->len - (size_t)body, 1);
	} else {
		notification(p, l->buf, l->len);
	}
	strbuf_reset(l);
	p->mode = TMUX_LINE_HEAD;
}

/* Bytes of a long line's body, in the mode chosen for it (block data or %output). */
static void stream_bytes(struct tmux_parser *p, const char *s, size_t n, int eol)
{
	if (p->mode == TMUX_LINE_OUTPUT)
		decode_output(p, s, n, eol);
	else if (n || eol)
		emit(p,
		     (struct tmux_event){ .kind = TMUX_BLOCK_DATA, .data = (const uint8_t *)s, .len = n, .eol = eol });
}

/* Streams what has arrived of a long line's body. A '\r' it ends with is held back until the next bytes say
 * whether it ends the line (then it is dropped, as complete_line drops it from a short line) or is data: the
 * events never depend on how the input was cut. */
static void stream_body(struct tmux_parser *p, const char *s, size_t n, int eol)
{
	int held = p->cr_pending;
	p->cr_pending = 0;
	if (held && (n || !eol))
		stream_bytes(p, "\r", 1, 0); /* data after all */
	if (n && s[n - 1] == '\r') {
		n--;
		p->cr_pending = !eol; /* at the end of the line: dropped; else: held */
	}
	stream_bytes(p, s, n, eol);
}

/* The head is full and the line goes on: decide how to stream the rest. */
static void classify_head(struct tmux_parser *p)
{
	struct strbuf *l = &p->line;
	long body;
	if (p->in_block) {
		p->mode = TMUX_LINE_BLOCK;
		stream_body(p, l->buf, l->len, 0);
		strbuf_reset(l);
	} else if (is_output_line(l->buf, l->len) && (body = output_body(p, l->buf, l->len)) >= 0) {
		p->mode = TMUX_LINE_OUTPUT;
		stream_body(p, l->buf + body, l->len - (size_t)body, 0);
		strbuf_reset(l);
	} else {
		p->mode = TMUX_LINE_NOTIFY; /* kept whole, up to TMUX_LINE_MAX */
	}
}

static void overlong(struct tmux_parser *p)
{
	struct strbuf *l = &p->line;
	strbuf_setlen(l, 64);
	emit(p, (struct tmux_event){ .kind = TMUX_OVERLONG, .arg = l->buf });
	strbuf_reset(l);
	p->mode = TMUX_LINE_SKIP;
}

/* Consumes bytes of the current line up to and including '\n'; returns how many. */
static size_t consume(struct tmux_parser *p, const char *buf, size_t len)
{
	const char *nl = memchr(buf, '\n', len);
	size_t body = nl ? (size_t)(nl - buf) : len, used = nl ? body + 1 : len;
	switch (p->mode) {
	case TMUX_LINE_HEAD: {
		size_t room = TMUX_HEAD_MAX - p->line.len;
		if (body > room) {
			strbuf_add(&p->line, buf, room);
			classify_head(p);
			return room;
		}
		strbuf_add(&p->line, buf, body); /* a full head waits for its next byte: a '\n' there keeps it a line */
		if (nl)
			complete_line(p);
		return used;
	}
	case TMUX_LINE_OUTPUT:
	case TMUX_LINE_BLOCK:
		stream_body(p, buf, body, nl != NULL);
		break;
	case TMUX_LINE_NOTIFY:
		if (p->line.len + body > TMUX_LINE_MAX) {
			overlong(p);
			return consume(p, buf, len);
		}
		strbuf_add(&p->line, buf, body);
		if (nl)
			complete_line(p);
		return used;
	case TMUX_LINE_SKIP:
		break;
	}
	if (nl)
		p->mode = TMUX_LINE_HEAD;
	return used;
}

void tmux_parser_feed(struct tmux_parser *p, const char *buf, size_t len)
{
	while (len) {
		size_t used = consume(p, buf, len);
		buf += used;
		len -= used;
	}
}

/* ---- input ---------------------------------------------------------------------------------- */

static int valid_pane(const char *pane)
{
	return pane && pane[0] == '%' && pane[1] && strspn(pane + 1, "0123456789") == strlen(pane + 1) &&
	       strlen(pane) < 16;
}

#define KEYS_PER_COMMAND 512
#define HEX_DIGITS	 "0123456789abcdef"

int tmux_encode_send_keys(struct strbuf *out, const char *pane, const uint8_t *bytes, size_t n)
{
	if (!valid_pane(pane))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (i % KEYS_PER_COMMAND == 0)
			strbuf_addf(out, "%ssend-keys -t %s -H", i ? "\n" : "", pane);
		char hex[3] = { ' ', HEX_DIGITS[bytes[i] >> 4], HEX_DIGITS[bytes[i] & 15] }; /* " %02x" */
		strbuf_add(out, hex, sizeof(hex));
	}
	if (n)
		strbuf_addch(out, '\n');
	return 0;
}

int tmux_encode_resize(struct strbuf *out, int cols, int rows)
{
	if (cols < 1 || rows < 1 || cols > 10000 || rows > 10000)
		return -1;
	strbuf_addf(out, "refresh-client -C %dx%d\n", cols, rows);
	return 0;
}
