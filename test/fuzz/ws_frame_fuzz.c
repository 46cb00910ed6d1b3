/* ws_frame_fuzz.c — libFuzzer target over lib/ws: the frame parser in both roles, fed in input-chosen pieces, and an
 * encode→parse round trip that must give the payload back. Never built by default (`make fuzz`, needs clang).
 *   build/fuzz/ws_frame_fuzz -max_total_time=60 [corpus-dir]
 * A crash, sanitizer report or failed invariant (abort) is a bug in ws.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ws.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Feeds the input in pieces whose sizes come from the input itself; checks the parser's own invariants. */
static void parse_in_pieces(enum ws_role role, const uint8_t *data, size_t size, size_t max_message)
{
	struct ws_parser p;
	ws_parser_init(&p, role, max_message);
	size_t off = 0, piece = 1 + (size ? data[0] % 17 : 0);
	int errors = 0;
	while (off < size) {
		size_t end = off + piece < size ? off + piece : size;
		while (off < end) {
			struct ws_event ev;
			size_t offered = end - off;
			size_t used = ws_parser_feed(&p, data + off, offered, &ev);
			if (used > offered)
				abort();
			off += used;
			if (ev.type == WS_EV_MESSAGE) {
				if (ev.len > max_message)
					abort();
				if (ev.opcode == WS_OP_TEXT && !ws_utf8_valid(ev.data, ev.len))
					abort();
			} else if (ev.type == WS_EV_CLOSE) {
				if (ev.close_code != WS_CLOSE_NO_STATUS && !ws_close_code_valid(ev.close_code))
					abort();
			} else if (ev.type == WS_EV_ERROR) {
				if (used != 0 && ++errors > 1)
					abort(); /* after an error nothing more is consumed */
				goto done;
			} else if (ev.type == WS_EV_NEED_MORE && used != offered) {
				abort(); /* NEED_MORE means everything offered was taken */
			}
		}
		piece = 1 + (piece * 7 + 3) % 4096;
	}
done:
	ws_parser_release(&p);
}

/* Whatever the payload, a masked frame of it parses back to exactly it. */
static void round_trip(const uint8_t *data, size_t size)
{
	static const uint8_t mask[4] = { 0xde, 0xad, 0xbe, 0xef };
	struct strbuf sb = STRBUF_INIT;
	ws_encode_frame(&sb, WS_OP_BINARY, 1, data, size, mask);
	struct ws_parser p;
	struct ws_event ev;
	ws_parser_init(&p, WS_ROLE_SERVER, size + 1);
	size_t used = ws_parser_feed(&p, sb.buf, sb.len, &ev);
	if (used != sb.len || ev.type != WS_EV_MESSAGE || ev.len != size || (size && memcmp(ev.data, data, size)))
		abort();
	ws_parser_release(&p);
	strbuf_release(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parse_in_pieces(WS_ROLE_SERVER, data, size, 1 << 16);
	parse_in_pieces(WS_ROLE_SERVER, data, size, 64); /* exercises oversize skipping */
	parse_in_pieces(WS_ROLE_CLIENT, data, size, 1 << 16);
	round_trip(data, size);
	return 0;
}
