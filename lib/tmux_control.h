/* tmux_control.h — a streaming parser of tmux control mode (`tmux -C`) and the encoders of its input.
 * Memory is bounded whatever tmux sends: pane output is decoded and handed on as it arrives, never kept. */
#ifndef AGOR_TMUX_CONTROL_H
#define AGOR_TMUX_CONTROL_H

/*
 * Contract
 * --------
 *   struct tmux_parser p;
 *   tmux_parser_init(&p, on_event, arg);
 *   tmux_parser_feed(&p, bytes, n);   // any split: lines may span reads, reads may hold many lines
 *   tmux_parser_release(&p);
 *
 * on_event(arg, &ev) is called in stream order; ev and its strings are valid only during the call.
 *   TMUX_OUTPUT          %output %PANE DATA and %extended-output %PANE AGE … : DATA. `id` is the
 *                        pane ("%1"); data/len are the decoded bytes (tmux's \ooo octal escapes turned
 *                        back into raw bytes, escapes split across reads included). One line may
 *                        arrive as several events; eol is set on the last.
 *   TMUX_BLOCK_BEGIN     %begin TIME NUMBER FLAGS: number, flags.
 *   TMUX_BLOCK_DATA      a line of a command's output inside the block, raw (tmux does not escape it),
 *                        possibly in several events; eol on the last.
 *   TMUX_BLOCK_END       %end or %error closing the block with the same number; error is 1 for %error.
 *   TMUX_WINDOW_ADD      %window-add @WIN (id = "@1"); TMUX_WINDOW_CLOSE %window-close @WIN.
 *   TMUX_SESSION_CHANGED %session-changed $SESSION NAME (id = "$1", arg = NAME).
 *   TMUX_LAYOUT_CHANGE   %layout-change @WIN LAYOUT … (id = "@1", arg = LAYOUT).
 *   TMUX_EXIT            %exit [REASON] (arg = REASON or "").
 *   TMUX_OTHER           any other line, whole (arg = the line), e.g. "%sessions-changed".
 *   TMUX_OVERLONG        a notification line longer than TMUX_LINE_MAX: dropped (arg = its start).
 * Lines end with "\n" (a "\r" before it is dropped). tmux_parser_feed() never fails; a malformed
 * line becomes TMUX_OTHER.
 *
 * Input encoders (append one command line, "\n" included, to out):
 *   tmux_encode_send_keys(out, pane, bytes, n)  send-keys -t PANE -H 68 69 … (hex: any byte survives,
 *                                               nothing is interpreted as a key name); long input is
 *                                               split into several commands.
 *   tmux_encode_resize(out, cols, rows)         refresh-client -C COLSxROWS
 * Both return -1 when pane is not a pane id (%N) or the size is outside 1..10000.
 */

#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

#define TMUX_LINE_MAX (64 * 1024) /* notifications longer than this are dropped */
#define TMUX_HEAD_MAX 256	  /* bytes of a line looked at before streaming its body */

enum tmux_event_kind {
	TMUX_OUTPUT,
	TMUX_BLOCK_BEGIN,
	TMUX_BLOCK_DATA,
	TMUX_BLOCK_END,
	TMUX_WINDOW_ADD,
	TMUX_WINDOW_CLOSE,
	TMUX_SESSION_CHANGED,
	TMUX_LAYOUT_CHANGE,
	TMUX_EXIT,
	TMUX_OTHER,
	TMUX_OVERLONG,
};

struct tmux_event {
	enum tmux_event_kind kind;
	const char *id;	 /* pane, window or session id, or "" */
	const char *arg; /* the notification's argument, or "" */
	const uint8_t *data;
	size_t len;
	int eol;
	long number; /* block number */
	int flags;   /* block flags */
	int error;   /* TMUX_BLOCK_END: closed by %error */
};

typedef void (*tmux_event_fn)(void *arg, const struct tmux_event *ev);

enum tmux_line_mode { TMUX_LINE_HEAD, TMUX_LINE_OUTPUT, TMUX_LINE_BLOCK, TMUX_LINE_NOTIFY, TMUX_LINE_SKIP };

struct tmux_parser {
	tmux_event_fn fn;
	void *arg;
	enum tmux_line_mode mode;
	struct strbuf line; /* the head, or a whole notification */
	char pane[32];	    /* the pane of the %output line being streamed */
	int in_block;
	long block_number;
	int esc_digits; /* octal escape in progress: digits seen (0: none, -1: backslash only) */
	int esc_value;
	int cr_pending; /* a '\r' held back: dropped if '\n' follows */
};

void tmux_parser_init(struct tmux_parser *p, tmux_event_fn fn, void *arg);
void tmux_parser_feed(struct tmux_parser *p, const char *buf, size_t len);
void tmux_parser_release(struct tmux_parser *p);

int tmux_encode_send_keys(struct strbuf *out, const char *pane, const uint8_t *bytes, size_t n);
int tmux_encode_resize(struct strbuf *out, int cols, int rows);

#endif
