/* ws.h — RFC 6455 WebSocket framing without I/O: an incremental frame parser that reassembles messages and
 * enforces the protocol, a frame encoder, UTF-8 validation and the opening-handshake keys (server and client).
 * Never reads or writes a descriptor; never buffers more than max_message bytes of one message.
 *
 * Contract:
 *   - A parser has a role. WS_ROLE_SERVER parses frames sent by a client: every frame MUST be masked (an
 *     unmasked frame is a protocol error). WS_ROLE_CLIENT parses frames sent by a server: a masked frame is
 *     a protocol error (RFC 6455 §5.1).
 *   - ws_parser_feed() consumes bytes until it has one event to report or the input is used up; the caller
 *     loops, advancing by the returned count, until the input is consumed and the event is WS_EV_NEED_MORE.
 *     Event data (message, ping payload, close reason) stays valid until the next ws_parser_feed().
 *   - Fragmented messages are reassembled; control frames may arrive between fragments. Text messages are
 *     validated as UTF-8 while they arrive (fail fast, code points split across fragments are fine).
 *   - Violations produce WS_EV_ERROR with the close code to send: 1002 for unmasked client frames (masked
 *     server frames), reserved bits, reserved opcodes, fragmented or >125-byte control frames, a
 *     continuation without a message, a new message inside a fragmented one, a 64-bit length with the top
 *     bit set, a 1-byte close payload or an invalid close code; 1007 for invalid UTF-8 in a text message
 *     or close reason. After an error the parser consumes nothing and repeats the error.
 *   - A data frame that would make the message exceed max_message produces WS_EV_OVERSIZE once; the rest
 *     of that message (all its fragments) is then skipped without being buffered and the parser goes on
 *     with the next message. Control frames keep being processed meanwhile.
 *   - After a close frame (WS_EV_CLOSE) every further byte is consumed and ignored.
 *   - Length encodings that are not minimal are accepted (RFC says MUST use minimal; no client gets it wrong,
 *     and refusing buys nothing).
 */
#ifndef AGOR_WS_H
#define AGOR_WS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "strbuf.h"

enum ws_opcode {
	WS_OP_CONT = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xA
};

enum ws_close_code {
	WS_CLOSE_NORMAL = 1000,
	WS_CLOSE_GOING_AWAY = 1001,
	WS_CLOSE_PROTOCOL = 1002,
	WS_CLOSE_UNSUPPORTED = 1003,
	WS_CLOSE_NO_STATUS = 1005, /* never sent: "the close frame had no code" */
	WS_CLOSE_INVALID_DATA = 1007,
	WS_CLOSE_POLICY = 1008,
	WS_CLOSE_TOO_BIG = 1009,
	WS_CLOSE_INTERNAL = 1011,
};

enum ws_role { WS_ROLE_SERVER, WS_ROLE_CLIENT };

enum ws_event_type {
	WS_EV_NEED_MORE, /* all input consumed, nothing to report */
	WS_EV_MESSAGE,	 /* a whole text or binary message: opcode, data, len */
	WS_EV_PING,	 /* data, len = payload to echo in the pong */
	WS_EV_PONG,
	WS_EV_CLOSE,	/* close_code (1005 when the frame had none), data/len = reason */
	WS_EV_OVERSIZE, /* the current message exceeds max_message: it is being skipped */
	WS_EV_ERROR,	/* protocol violation: close_code is what to send back, reason says why */
};

struct ws_event {
	enum ws_event_type type;
	int opcode; /* WS_OP_TEXT or WS_OP_BINARY for WS_EV_MESSAGE */
	const char *data;
	size_t len;
	uint16_t close_code;
	const char *reason; /* WS_EV_ERROR: a static description for logs */
};

/* Incremental UTF-8 validator state (exposed so tests can drive it; zero-initialised = fresh). */
struct ws_utf8 {
	uint8_t need, lo, hi;
};

struct ws_parser {
	enum ws_role role;
	size_t max_message;
	/* the frame header being read */
	uint8_t hdr[14];
	size_t hdr_len, hdr_need;
	int in_payload;
	/* the current frame */
	int fin, opcode, masked;
	uint8_t mask[4];
	uint64_t payload_left, payload_pos;
	/* the message being reassembled (msg_opcode 0 = none) */
	int msg_opcode;
	int skipping;
	int deliver_pending; /* a completed message is in msg: reset it on the next feed */
	struct strbuf msg;
	struct ws_utf8 utf8;
	/* the control frame being read */
	char ctl[125];
	size_t ctl_len;
	/* terminal states */
	int closed;
	uint16_t fail_code;
	const char *fail_reason;
};

void ws_parser_init(struct ws_parser *p, enum ws_role role, size_t max_message);
void ws_parser_release(struct ws_parser *p);
size_t ws_parser_feed(struct ws_parser *p, const void *data, size_t len, struct ws_event *ev);

/* Appends one frame. mask NULL = unmasked (server → client); a client must pass 4 random bytes. */
void ws_encode_frame(struct strbuf *out, int opcode, int fin, const void *payload, size_t len, const uint8_t *mask);
/* Appends a close frame with code (0 = no code, no reason) and an optional reason (truncated to fit). */
void ws_encode_close(struct strbuf *out, uint16_t code, const char *reason, const uint8_t *mask);

/* Feeds n bytes to an incremental validator: 0 while valid so far, -1 at the first invalid byte. */
int ws_utf8_feed(struct ws_utf8 *u, const void *data, size_t n);
/* 1 when the validator is not inside a multi-byte sequence. */
static inline int ws_utf8_complete(const struct ws_utf8 *u)
{
	return u->need == 0;
}
/* 1 when data is complete, valid UTF-8. */
int ws_utf8_valid(const void *data, size_t n);
/* 1 when code may appear in a close frame on the wire (1000-1003, 1007-1014, 3000-4999). */
int ws_close_code_valid(unsigned code);

#define WS_KEY_LEN    24 /* base64 of 16 bytes */
#define WS_ACCEPT_LEN 28 /* base64 of a SHA-1 */
/* 1 when key (not NUL-terminated) is the base64 of exactly 16 bytes, as §4.1 requires. */
int ws_key_valid(const char *key, size_t len);
/* Sec-WebSocket-Accept for a Sec-WebSocket-Key: base64(SHA-1(key ‖ GUID)). */
void ws_accept_key(const char *key, size_t len, char out[WS_ACCEPT_LEN + 1]);
/* A fresh random Sec-WebSocket-Key (client side). */
int ws_client_key(char out[WS_KEY_LEN + 1], struct err *e);
/* Fills a 4-byte masking key from the kernel CSPRNG. */
int ws_random_mask(uint8_t mask[4], struct err *e);

#endif
