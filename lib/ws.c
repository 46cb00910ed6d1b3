/* ws.c — the RFC 6455 frame parser, encoder, UTF-8 validator and handshake keys of ws.h.
 * Never trusts a length before checking it against max_message; never delivers a message that failed a check. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <mbedtls/base64.h>
#include <mbedtls/sha1.h>

#include "ws.h"
#include "banned.h"

#define WS_GUID	       "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_KEEP_BUFFER 65536 /* a message buffer larger than this is freed after delivery */

/* --- UTF-8 ------------------------------------------------------------------------------- */

/* Sets the bounds of the next continuation byte after lead byte b, or returns -1 if b cannot start a
 * sequence (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
static int utf8_start(struct ws_utf8 *u, uint8_t b)
{
	u->lo = 0x80;
	u->hi = 0xBF;
	if (b >= 0xC2 && b <= 0xDF)
		u->need = 1;
	else if (b >= 0xE0 && b <= 0xEF) {
		u->need = 2;
		if (b == 0xE0)
			u->lo = 0xA0;
		else if (b == 0xED)
			u->hi = 0x9F;
	} else if (b >= 0xF0 && b <= 0xF4) {
		u->need = 3;
		if (b == 0xF0)
			u->lo = 0x90;
		else if (b == 0xF4)
			u->hi = 0x8F;
	} else
		return -1;
	return 0;
}

int ws_utf8_feed(struct ws_utf8 *u, const void *data, size_t n)
{
	const uint8_t *s = data;
	for (size_t i = 0; i < n; i++) {
		uint8_t b = s[i];
		if (u->need) {
			if (b < u->lo || b > u->hi)
				return -1;
			u->need--;
			u->lo = 0x80;
			u->hi = 0xBF;
		} else if (b >= 0x80 && utf8_start(u, b) < 0) {
			return -1;
		}
	}
	return 0;
}

int ws_utf8_valid(const void *data, size_t n)
{
	struct ws_utf8 u = { 0, 0, 0 };
	return ws_utf8_feed(&u, data, n) == 0 && ws_utf8_complete(&u);
}

int ws_close_code_valid(unsigned code)
{
	return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

/* --- parser ------------------------------------------------------------------------------ */

void ws_parser_init(struct ws_parser *p, enum ws_role role, size_t max_message)
{
	memset(p, 0, sizeof(*p));
	p->role = role;
	p->max_message = max_message;
	p->hdr_need = 2;
	strbuf_init(&p->msg, 0);
}

void ws_parser_release(struct ws_parser *p)
{
	strbuf_release(&p->msg);
}

static int is_control(int opcode)
{
	return (opcode & 0x8) != 0;
}

static int fail(struct ws_parser *p, struct ws_event *ev, uint16_t code, const char *reason)
{
	p->fail_code = code;
	p->fail_reason = reason;
	ev->type = WS_EV_ERROR;
	ev->close_code = code;
	ev->reason = reason;
	return 1;
}

static void drop_message_buffer(struct ws_parser *p)
{
	if (p->msg.alloc > WS_KEEP_BUFFER)
		strbuf_release(&p->msg);
	else
		strbuf_reset(&p->msg);
}

/* Total header size once the first two bytes are known. */
static size_t header_size(const uint8_t *hdr)
{
	unsigned len7 = hdr[1] & 0x7F;
	return 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + ((hdr[1] & 0x80) ? 4 : 0);
}

static uint64_t header_payload_len(const uint8_t *hdr, size_t *idx)
{
	unsigned len7 = hdr[1] & 0x7F;
	uint64_t n = len7;
	*idx = 2;
	if (len7 == 126) {
		n = ((uint64_t)hdr[2] << 8) | hdr[3];
		*idx = 4;
	} else if (len7 == 127) {
		n = 0;
		for (int i = 0; i < 8; i++)
			n = (n << 8) | hdr[2 + i];
		*idx = 10;
	}
	return n;
}

/* Checks the frame sequence rules for a data frame and starts or continues the message. */
static int begin_data_frame(struct ws_parser *p, struct ws_event *ev)
{
	if (p->opcode == WS_OP_CONT) {
		if (!p->msg_opcode)
			return fail(p, ev, WS_CLOSE_PROTOCOL, "continuation frame without a message");
	} else {
		if (p->msg_opcode)
			return fail(p, ev, WS_CLOSE_PROTOCOL, "new message inside a fragmented one");
		p->msg_opcode = p->opcode;
		p->skipping = 0;
		p->utf8 = (struct ws_utf8){ 0, 0, 0 };
		strbuf_reset(&p->msg);
	}
	if (!p->skipping && p->payload_left > p->max_message - p->msg.len) {
		p->skipping = 1;
		drop_message_buffer(p);
		ev->type = WS_EV_OVERSIZE;
		return 1;
	}
	return 0;
}

/* Validates a complete header; returns 1 with ev set (error or oversize), else 0. */
static int parse_header(struct ws_parser *p, struct ws_event *ev)
{
	uint8_t b0 = p->hdr[0], b1 = p->hdr[1];
	p->fin = (b0 & 0x80) != 0;
	p->opcode = b0 & 0x0F;
	p->masked = (b1 & 0x80) != 0;
	if (b0 & 0x70)
		return fail(p, ev, WS_CLOSE_PROTOCOL, "reserved bits set");
	if ((p->opcode >= 0x3 && p->opcode <= 0x7) || p->opcode >= 0xB)
		return fail(p, ev, WS_CLOSE_PROTOCOL, "reserved opcode");
	if (p->role == WS_ROLE_SERVER && !p->masked)
		return fail(p, ev, WS_CLOSE_PROTOCOL, "unmasked client frame");
	if (p->role == WS_ROLE_CLIENT && p->masked)
		return fail(p, ev, WS_CLOSE_PROTOCOL, "masked server frame");
	size_t idx;
	p->payload_left = header_payload_len(p->hdr, &idx);
	if (p->payload_left >> 63)
		return fail(p, ev, WS_CLOSE_PROTOCOL, "64-bit length with the top bit set");
	if (p->masked)
		memcpy(p->mask, p->hdr + idx, 4);
	p->payload_pos = 0;
	if (is_control(p->opcode)) {
		if (!p->fin)
			return fail(p, ev, WS_CLOSE_PROTOCOL, "fragmented control frame");
		if (p->payload_left > sizeof(p->ctl))
			return fail(p, ev, WS_CLOSE_PROTOCOL, "control frame longer than 125 bytes");
		p->ctl_len = 0;
		return 0;
	}
	return begin_data_frame(p, ev);
}

static void unmask_into(struct ws_parser *p, char *dst, const uint8_t *src, size_t n)
{
	if (!p->masked) {
		memcpy(dst, src, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		dst[i] = (char)(src[i] ^ p->mask[(p->payload_pos + i) & 3]);
}

/* Takes n payload bytes of the current frame; returns 1 with ev set on invalid UTF-8. */
static int consume_payload(struct ws_parser *p, const uint8_t *src, size_t n, struct ws_event *ev)
{
	if (is_control(p->opcode)) {
		unmask_into(p, p->ctl + p->ctl_len, src, n);
		p->ctl_len += n;
	} else if (!p->skipping) {
		strbuf_grow(&p->msg, n);
		char *dst = p->msg.buf + p->msg.len;
		unmask_into(p, dst, src, n);
		strbuf_setlen(&p->msg, p->msg.len + n);
		if (p->msg_opcode == WS_OP_TEXT && ws_utf8_feed(&p->utf8, dst, n) < 0)
			return fail(p, ev, WS_CLOSE_INVALID_DATA, "invalid UTF-8 in a text message");
	}
	p->payload_pos += n;
	p->payload_left -= n;
	return 0;
}

static int finish_close_frame(struct ws_parser *p, struct ws_event *ev)
{
	if (p->ctl_len == 1)
		return fail(p, ev, WS_CLOSE_PROTOCOL, "close frame with a 1-byte payload");
	ev->close_code = WS_CLOSE_NO_STATUS;
	if (p->ctl_len >= 2) {
		unsigned code = ((unsigned)(uint8_t)p->ctl[0] << 8) | (uint8_t)p->ctl[1];
		if (!ws_close_code_valid(code))
			return fail(p, ev, WS_CLOSE_PROTOCOL, "invalid close code");
		if (!ws_utf8_valid(p->ctl + 2, p->ctl_len - 2))
			return fail(p, ev, WS_CLOSE_INVALID_DATA, "invalid UTF-8 in a close reason");
		ev->close_code = (uint16_t)code;
		ev->data = p->ctl + 2;
		ev->len = p->ctl_len - 2;
	}
	p->closed = 1;
	ev->type = WS_EV_CLOSE;
	return 1;
}

/* The current frame's payload is complete; returns 1 when there is an event to report. */
static int finish_frame(struct ws_parser *p, struct ws_event *ev)
{
	p->in_payload = 0;
	if (is_control(p->opcode)) {
		if (p->opcode == WS_OP_CLOSE)
			return finish_close_frame(p, ev);
		ev->type = p->opcode == WS_OP_PING ? WS_EV_PING : WS_EV_PONG;
		ev->data = p->ctl;
		ev->len = p->ctl_len;
		return 1;
	}
	if (!p->fin)
		return 0;
	int opcode = p->msg_opcode;
	p->msg_opcode = 0;
	if (p->skipping) {
		p->skipping = 0;
		return 0;
	}
	if (opcode == WS_OP_TEXT && !ws_utf8_complete(&p->utf8))
		return fail(p, ev, WS_CLOSE_INVALID_DATA, "text message ends inside a UTF-8 sequence");
	ev->type = WS_EV_MESSAGE;
	ev->opcode = opcode;
	ev->data = p->msg.buf;
	ev->len = p->msg.len;
	p->deliver_pending = 1;
	return 1;
}

/* Reads header bytes; returns 1 with ev set when the header produced an event. */
static int read_header(struct ws_parser *p, const uint8_t *s, size_t len, size_t *off, struct ws_event *ev)
{
	size_t take = p->hdr_need - p->hdr_len;
	if (take > len - *off)
		take = len - *off;
	memcpy(p->hdr + p->hdr_len, s + *off, take);
	p->hdr_len += take;
	*off += take;
	if (p->hdr_len < p->hdr_need)
		return 0;
	if (p->hdr_len == 2 && header_size(p->hdr) > 2) {
		p->hdr_need = header_size(p->hdr);
		return 0;
	}
	p->hdr_len = 0;
	p->hdr_need = 2;
	p->in_payload = 1;
	if (parse_header(p, ev))
		return 1;
	return p->payload_left == 0 ? finish_frame(p, ev) : 0;
}

size_t ws_parser_feed(struct ws_parser *p, const void *data, size_t len, struct ws_event *ev)
{
	const uint8_t *s = data;
	size_t off = 0;
	memset(ev, 0, sizeof(*ev));
	if (p->fail_code) {
		ev->type = WS_EV_ERROR;
		ev->close_code = p->fail_code;
		ev->reason = p->fail_reason;
		return 0;
	}
	if (p->deliver_pending) {
		p->deliver_pending = 0;
		drop_message_buffer(p);
	}
	if (p->closed)
		return len;
	while (off < len) {
		if (!p->in_payload) {
			if (read_header(p, s, len, &off, ev))
				return off;
			continue;
		}
		size_t take = p->payload_left < len - off ? (size_t)p->payload_left : len - off;
		if (consume_payload(p, s + off, take, ev))
			return off + take;
		off += take;
		if (p->payload_left == 0 && finish_frame(p, ev))
			return off;
	}
	return off;
}

/* --- encoder ----------------------------------------------------------------------------- */

void ws_encode_frame(struct strbuf *out, int opcode, int fin, const void *payload, size_t len, const uint8_t *mask)
{
	uint8_t hdr[14];
	size_t n = 0;
	hdr[n++] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0F));
	uint8_t mbit = mask ? 0x80 : 0;
	if (len < 126) {
		hdr[n++] = (uint8_t)(mbit | len);
	} else if (len <= 0xFFFF) {
		hdr[n++] = mbit | 126;
		hdr[n++] = (uint8_t)(len >> 8);
		hdr[n++] = (uint8_t)len;
	} else {
		hdr[n++] = mbit | 127;
		for (int i = 7; i >= 0; i--)
			hdr[n++] = (uint8_t)((uint64_t)len >> (8 * i));
	}
	if (mask) {
		memcpy(hdr + n, mask, 4);
		n += 4;
	}
	strbuf_grow(out, n + len);
	strbuf_add(out, hdr, n);
	if (!mask) {
		strbuf_add(out, payload, len);
		return;
	}
	const uint8_t *src = payload;
	char *dst = out->buf + out->len;
	for (size_t i = 0; i < len; i++)
		dst[i] = (char)(src[i] ^ mask[i & 3]);
	strbuf_setlen(out, out->len + len);
}

void ws_encode_close(struct strbuf *out, uint16_t code, const char *reason, const uint8_t *mask)
{
	char payload[125];
	size_t n = 0;
	if (code) {
		payload[n++] = (char)(code >> 8);
		payload[n++] = (char)(code & 0xFF);
		size_t rlen = reason ? strlen(reason) : 0;
		if (rlen > sizeof(payload) - 2)
			rlen = sizeof(payload) - 2;
		while (rlen && !ws_utf8_valid(reason, rlen)) /* never cut a code point in half */
			rlen--;
		if (rlen)
			memcpy(payload + n, reason, rlen);
		n += rlen;
	}
	ws_encode_frame(out, WS_OP_CLOSE, 1, payload, n, mask);
}

/* --- handshake keys ---------------------------------------------------------------------- */

int ws_key_valid(const char *key, size_t len)
{
	unsigned char raw[20];
	size_t olen = 0;
	if (len != WS_KEY_LEN)
		return 0;
	if (mbedtls_base64_decode(raw, sizeof(raw), &olen, (const unsigned char *)key, len) != 0)
		return 0;
	return olen == 16;
}

void ws_accept_key(const char *key, size_t len, char out[WS_ACCEPT_LEN + 1])
{
	unsigned char digest[20];
	size_t olen = 0;
	mbedtls_sha1_context ctx;
	mbedtls_sha1_init(&ctx);
	mbedtls_sha1_starts_ret(&ctx);
	mbedtls_sha1_update_ret(&ctx, (const unsigned char *)key, len);
	mbedtls_sha1_update_ret(&ctx, (const unsigned char *)WS_GUID, strlen(WS_GUID));
	mbedtls_sha1_finish_ret(&ctx, digest);
	mbedtls_sha1_free(&ctx);
	mbedtls_base64_encode((unsigned char *)out, WS_ACCEPT_LEN + 1, &olen, digest, sizeof(digest));
	out[olen] = '\0';
}

static int kernel_random(void *buf, size_t len, struct err *e)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = getrandom((char *)buf + off, len - off, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_errno(e, errno, "getrandom");
		off += (size_t)n;
	}
	return 0;
}

int ws_client_key(char out[WS_KEY_LEN + 1], struct err *e)
{
	unsigned char raw[16];
	size_t olen = 0;
	if (kernel_random(raw, sizeof(raw), e) < 0)
		return -1;
	mbedtls_base64_encode((unsigned char *)out, WS_KEY_LEN + 1, &olen, raw, sizeof(raw));
	out[olen] = '\0';
	return 0;
}

int ws_random_mask(uint8_t mask[4], struct err *e)
{
	return kernel_random(mask, 4, e);
}
