/* tmux_control_fuzz.c — libFuzzer target over lib/tmux_control: the control-mode parser fed in input-chosen
 * pieces must give the same events as when fed whole, and the encoders must emit one line of hex keys.
 *   build/fuzz/tmux_control_fuzz -max_total_time=60 [corpus-dir]   (`make fuzz`, needs clang)
 * A crash, sanitizer report or failed invariant (abort) is a bug in tmux_control.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tmux_control.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the events say, as one byte string: kind, id and the bytes of output, so two feeds can be compared. */
static void record(void *arg, const struct tmux_event *ev)
{
	struct strbuf *log = arg;
	if (ev->kind == TMUX_OUTPUT || ev->kind == TMUX_BLOCK_DATA) {
		if (!ev->data && ev->len)
			abort();
		strbuf_add(log, ev->data, ev->len); /* output may arrive in any number of events */
		if (ev->eol)
			strbuf_addf(log, "|eol%d\n", ev->kind);
		return;
	}
	if (!ev->id || !ev->arg)
		abort();
	if (ev->kind == TMUX_OVERLONG) /* where an overlong line is noticed depends on the pieces: only count it */
		strbuf_addf(log, "|overlong\n");
	else
		strbuf_addf(log, "|%d %s %s %ld %d\n", ev->kind, ev->id, ev->arg, ev->number, ev->error);
}

static void feed(const uint8_t *data, size_t size, size_t piece, struct strbuf *log)
{
	struct tmux_parser p;
	tmux_parser_init(&p, record, log);
	for (size_t off = 0; off < size; off += piece)
		tmux_parser_feed(&p, (const char *)data + off, size - off < piece ? size - off : piece);
	tmux_parser_release(&p);
}

static void check_encoders(const uint8_t *data, size_t size)
{
	struct strbuf out = STRBUF_INIT;
	if (tmux_encode_send_keys(&out, "%1", data, size) < 0)
		abort();
	for (size_t i = 0; i < out.len; i++)
		if (out.buf[i] == '\n' ? i + 1 < out.len && strncmp(out.buf + i + 1, "send-keys", 9)
				       : (uint8_t)out.buf[i] < 0x20)
			abort(); /* every line is a send-keys command; no control byte leaks into tmux's command parser
				  */
	strbuf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf whole = STRBUF_INIT, pieces = STRBUF_INIT;
	feed(data, size, size ? size : 1, &whole);
	feed(data, size, 1 + (size ? data[0] % 13 : 0), &pieces);
	if (whole.len != pieces.len || memcmp(whole.buf, pieces.buf, whole.len))
		abort();
	check_encoders(data, size < 4096 ? size : 4096);
	strbuf_release(&whole);
	strbuf_release(&pieces);
	return 0;
}
