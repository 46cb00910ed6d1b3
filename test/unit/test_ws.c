/* test_ws.c — unit tests of the RFC 6455 framing in lib/ws: handshake keys, masking, 7/16/64-bit lengths,
 * fragmentation, every protocol violation's close code, UTF-8 validation (also split across fragments), oversize. */
#include <stdint.h>
#include <stdlib.h>

#include "unit.h"
#include "ws.h"
#include "banned.h"

static const uint8_t MASK[4] = { 0x37, 0xfa, 0x21, 0x3d };

struct collected {
	int n;
	int type[32];
	int opcode[32];
	unsigned code[32];
	size_t len[32];
	char *data[32];
};

static void collected_free(struct collected *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->data[i]);
	c->n = 0;
}

/* Feeds data in chunks of step bytes (0 = all at once) and records every event. */
static void feed(struct ws_parser *p, const void *data, size_t len, size_t step, struct collected *out)
{
	const char *s = data;
	size_t off = 0;
	if (!step)
		step = len ? len : 1;
	while (off < len) {
		size_t end = off + step < len ? off + step : len;
		while (off < end) {
			struct ws_event ev;
			size_t used = ws_parser_feed(p, s + off, end - off, &ev);
			off += used;
			if (ev.type != WS_EV_NEED_MORE && out->n < 32) {
				int i = out->n++;
				out->type[i] = ev.type;
				out->opcode[i] = ev.opcode;
				out->code[i] = ev.close_code;
				out->len[i] = ev.len;
				out->data[i] = xmalloc(ev.len + 1);
				if (ev.len)
					memcpy(out->data[i], ev.data, ev.len);
				out->data[i][ev.len] = '\0';
			}
			if (ev.type == WS_EV_ERROR)
				return;
		}
	}
}

/* Parses one complete input with a server-role parser and returns the single expected error code (0 = none). */
static unsigned error_code_of(const void *data, size_t len)
{
	struct ws_parser p;
	struct collected c = { 0 };
	ws_parser_init(&p, WS_ROLE_SERVER, 1 << 20);
	feed(&p, data, len, 0, &c);
	unsigned code = 0;
	for (int i = 0; i < c.n; i++)
		if (c.type[i] == WS_EV_ERROR)
			code = c.code[i];
	collected_free(&c);
	ws_parser_release(&p);
	return code;
}

static void masked_frame(struct strbuf *sb, int opcode, int fin, const char *payload, size_t len)
{
	ws_encode_frame(sb, opcode, fin, payload, len, MASK);
}

TEST(ws_accept_key_matches_rfc6455_example)
{
	char out[WS_ACCEPT_LEN + 1];
	const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
	ws_accept_key(key, strlen(key), out);
	CHECK_STR(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	CHECK(ws_key_valid(key, strlen(key)));
	CHECK(!ws_key_valid("dGhlIHNhbXBsZSBub25jZQ", 23));
	CHECK(!ws_key_valid("dGhlIHNhbXBsZSBub25jZSE=", 24)); /* 17 bytes */
	CHECK(!ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=!", 24));
	char k1[WS_KEY_LEN + 1], k2[WS_KEY_LEN + 1];
	struct err e = ERR_INIT;
	CHECK_INT(ws_client_key(k1, &e), 0);
	CHECK_INT(ws_client_key(k2, &e), 0);
	CHECK(ws_key_valid(k1, strlen(k1)));
	CHECK(strcmp(k1, k2) != 0);
}

TEST(ws_length_encodings_7_16_64_bit_round_trip_masked)
{
	static const size_t sizes[] = { 0, 1, 125, 126, 127, 65535, 65536, 70000 };
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i];
		char *payload = xmalloc(n + 1);
		for (size_t j = 0; j < n; j++)
			payload[j] = (char)('a' + j % 26);
		struct strbuf sb = STRBUF_INIT;
		masked_frame(&sb, WS_OP_TEXT, 1, payload, n);
		size_t expect_hdr = 2 + (n < 126 ? 0 : n <= 65535 ? 2 : 8) + 4;
		CHECK_INT(sb.len, expect_hdr + n);
		CHECK_INT((uint8_t)sb.buf[1] & 0x7f, n < 126 ? n : n <= 65535 ? 126 : 127);
		CHECK((uint8_t)sb.buf[1] & 0x80);
		if (n > 4)
			CHECK(memcmp(sb.buf + expect_hdr, payload, 4) != 0); /* actually masked */
		struct ws_parser p;
		struct collected c = { 0 };
		ws_parser_init(&p, WS_ROLE_SERVER, 1 << 20);
		feed(&p, sb.buf, sb.len, n < 200 ? 1 : 997, &c); /* split reads */
		CHECK_INT(c.n, 1);
		CHECK_INT(c.type[0], WS_EV_MESSAGE);
		CHECK_INT(c.opcode[0], WS_OP_TEXT);
		CHECK_INT(c.len[0], n);
		CHECK(c.len[0] == n && (!n || !memcmp(c.data[0], payload, n)));
		collected_free(&c);
		ws_parser_release(&p);
		strbuf_release(&sb);
		free(payload);
	}
}

TEST(ws_server_frames_unmasked_parse_with_client_role)
{
	struct strbuf sb = STRBUF_INIT;
	ws_encode_frame(&sb, WS_OP_TEXT, 1, "hello", 5, NULL);
	CHECK_INT(sb.len, 7);
	CHECK(!memcmp(sb.buf, "\x81\x05hello", 7));
	struct ws_parser p;
	struct collected c = { 0 };
	ws_parser_init(&p, WS_ROLE_CLIENT, 1024);
	feed(&p, sb.buf, sb.len, 0, &c);
	CHECK_INT(c.n, 1);
	CHECK_STR(c.data[0], "hello");
	collected_free(&c);
	ws_parser_release(&p);
	/* a masked frame from a server is a violation */
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_TEXT, 1, "hi", 2);
	ws_parser_init(&p, WS_ROLE_CLIENT, 1024);
	feed(&p, sb.buf, sb.len, 0, &c);
	CHECK_INT(c.n, 1);
	CHECK_INT(c.type[0], WS_EV_ERROR);
	CHECK_INT(c.code[0], 1002);
	collected_free(&c);
	ws_parser_release(&p);
	strbuf_release(&sb);
}

TEST(ws_fragmented_message_with_interleaved_ping_is_reassembled)
{
	struct strbuf sb = STRBUF_INIT;
	masked_frame(&sb, WS_OP_TEXT, 0, "Hel", 3);
	masked_frame(&sb, WS_OP_PING, 1, "p!", 2);
	masked_frame(&sb, WS_OP_CONT, 0, "lo, ", 4);
	masked_frame(&sb, WS_OP_CONT, 1, "world", 5);
	masked_frame(&sb, WS_OP_BINARY, 1, "\xff\x00", 2);
	for (size_t step = 0; step <= 7; step++) {
		struct ws_parser p;
		struct collected c = { 0 };
		ws_parser_init(&p, WS_ROLE_SERVER, 1024);
		feed(&p, sb.buf, sb.len, step, &c);
		CHECK_INT(c.n, 3);
		CHECK_INT(c.type[0], WS_EV_PING);
		CHECK_STR(c.data[0], "p!");
		CHECK_INT(c.type[1], WS_EV_MESSAGE);
		CHECK_INT(c.opcode[1], WS_OP_TEXT);
		CHECK_STR(c.data[1], "Hello, world");
		CHECK_INT(c.type[2], WS_EV_MESSAGE);
		CHECK_INT(c.opcode[2], WS_OP_BINARY);
		CHECK_INT(c.len[2], 2);
		collected_free(&c);
		ws_parser_release(&p);
	}
	strbuf_release(&sb);
}

TEST(ws_unmasked_client_frame_closes_1002)
{
	CHECK_INT(error_code_of("\x81\x02hi", 4), 1002);
}

TEST(ws_reserved_bits_and_opcodes_close_1002)
{
	char f[8] = { 0, (char)0x80, 1, 2, 3, 4 };
	for (int rsv = 1; rsv <= 7; rsv++) {
		f[0] = (char)(0x81 | (rsv << 4));
		CHECK_INT(error_code_of(f, 6), 1002);
	}
	static const int reserved[] = { 3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF };
	for (size_t i = 0; i < ARRAY_SIZE(reserved); i++) {
		f[0] = (char)(0x80 | reserved[i]);
		CHECK_INT(error_code_of(f, 6), 1002);
	}
}

TEST(ws_control_frame_rules_close_1002)
{
	struct strbuf sb = STRBUF_INIT;
	char big[126];
	memset(big, 'x', sizeof(big));
	masked_frame(&sb, WS_OP_PING, 1, big, 126); /* > 125 */
	CHECK_INT(error_code_of(sb.buf, sb.len), 1002);
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_PING, 0, "x", 1); /* fragmented control */
	CHECK_INT(error_code_of(sb.buf, sb.len), 1002);
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_PING, 1, big, 125); /* exactly 125 is fine */
	CHECK_INT(error_code_of(sb.buf, sb.len), 0);
	strbuf_release(&sb);
}

TEST(ws_fragmentation_sequence_violations_close_1002)
{
	struct strbuf sb = STRBUF_INIT;
	masked_frame(&sb, WS_OP_CONT, 1, "x", 1); /* continuation without a message */
	CHECK_INT(error_code_of(sb.buf, sb.len), 1002);
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_TEXT, 0, "a", 1);
	masked_frame(&sb, WS_OP_TEXT, 1, "b", 1); /* new message inside a fragmented one */
	CHECK_INT(error_code_of(sb.buf, sb.len), 1002);
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_TEXT, 1, "a", 1);
	masked_frame(&sb, WS_OP_CONT, 1, "b", 1); /* continuation after a finished message */
	CHECK_INT(error_code_of(sb.buf, sb.len), 1002);
	strbuf_release(&sb);
	/* 64-bit length with the most significant bit set */
	const char huge[] = "\x82\xff\x80\x00\x00\x00\x00\x00\x00\x01\x01\x02\x03\x04";
	CHECK_INT(error_code_of(huge, sizeof(huge) - 1), 1002);
}

TEST(ws_close_frames_codes_and_reasons)
{
	struct strbuf sb = STRBUF_INIT;
	masked_frame(&sb, WS_OP_CLOSE, 1, "\x03", 1); /* 1-byte payload */
	CHECK_INT(error_code_of(sb.buf, sb.len), 1002);
	static const unsigned bad[] = { 0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535 };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char payload[2] = { (char)(bad[i] >> 8), (char)(bad[i] & 0xff) };
		strbuf_reset(&sb);
		masked_frame(&sb, WS_OP_CLOSE, 1, payload, 2);
		CHECK_INT(error_code_of(sb.buf, sb.len), 1002);
	}
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_CLOSE, 1, "\x03\xe8\xc0\xaf", 4); /* 1000 + invalid UTF-8 reason */
	CHECK_INT(error_code_of(sb.buf, sb.len), 1007);

	static const unsigned good[] = { 1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999 };
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		char payload[6] = { (char)(good[i] >> 8), (char)(good[i] & 0xff), 'b', 'y', 'e' };
		strbuf_reset(&sb);
		masked_frame(&sb, WS_OP_CLOSE, 1, payload, 5);
		masked_frame(&sb, WS_OP_TEXT, 1, "ignored", 7);
		struct ws_parser p;
		struct collected c = { 0 };
		ws_parser_init(&p, WS_ROLE_SERVER, 1024);
		feed(&p, sb.buf, sb.len, 0, &c);
		CHECK_INT(c.n, 1); /* nothing after the close frame is reported */
		CHECK_INT(c.type[0], WS_EV_CLOSE);
		CHECK_INT(c.code[0], good[i]);
		CHECK_STR(c.data[0], "bye");
		collected_free(&c);
		ws_parser_release(&p);
	}
	/* an empty close frame reports 1005 */
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_CLOSE, 1, "", 0);
	struct ws_parser p;
	struct collected c = { 0 };
	ws_parser_init(&p, WS_ROLE_SERVER, 1024);
	feed(&p, sb.buf, sb.len, 0, &c);
	CHECK_INT(c.n, 1);
	CHECK_INT(c.code[0], 1005);
	collected_free(&c);
	ws_parser_release(&p);
	strbuf_release(&sb);
}

TEST(ws_encode_close_truncates_reason_on_a_code_point_boundary)
{
	char reason[200];
	size_t n = 0;
	while (n + 2 <= sizeof(reason) - 1) { /* "é" repeated: 2 bytes each */
		reason[n++] = (char)0xc3;
		reason[n++] = (char)0xa9;
	}
	reason[n] = '\0';
	struct strbuf sb = STRBUF_INIT;
	ws_encode_close(&sb, 1000, reason + 1, MASK); /* odd start: invalid first byte, must drop it */
	struct ws_parser p;
	struct collected c = { 0 };
	ws_parser_init(&p, WS_ROLE_SERVER, 1024);
	feed(&p, sb.buf, sb.len, 0, &c);
	CHECK_INT(c.n, 1);
	CHECK_INT(c.type[0], WS_EV_CLOSE);
	CHECK(c.len[0] <= 123);
	collected_free(&c);
	strbuf_reset(&sb);
	ws_encode_close(&sb, 1001, reason, MASK);
	ws_parser_release(&p);
	ws_parser_init(&p, WS_ROLE_SERVER, 1024);
	feed(&p, sb.buf, sb.len, 0, &c);
	CHECK_INT(c.type[0], WS_EV_CLOSE);
	CHECK_INT(c.code[0], 1001);
	CHECK_INT(c.len[0], 122);
	collected_free(&c);
	ws_parser_release(&p);
	strbuf_release(&sb);
}

TEST(ws_utf8_validator_accepts_valid_and_rejects_invalid_sequences)
{
	static const char *const valid[] = {
		"",
		"plain ascii",
		"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5", /* κόσμε */
		"\xc2\x80",
		"\xdf\xbf",
		"\xe0\xa0\x80",
		"\xef\xbf\xbf",
		"\xed\x9f\xbf",
		"\xee\x80\x80",
		"\xf0\x90\x80\x80",
		"\xf4\x8f\xbf\xbf",
	};
	static const char *const invalid[] = {
		"\x80",
		"\xbf",
		"\xc0\x80",
		"\xc1\xbf",
		"\xe0\x80\x80",
		"\xe0\x9f\xbf",
		"\xed\xa0\x80",
		"\xed\xbf\xbf",
		"\xf0\x80\x80\x80",
		"\xf0\x8f\xbf\xbf",
		"\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80",
		"\xff",
		"\xfe",
		"\xce",
		"\xe1\xbd",
		"\xf0\x90\x80",
		"a\xc3(b",
		"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80"
		"edited",
	};
	for (size_t i = 0; i < ARRAY_SIZE(valid); i++)
		if (!ws_utf8_valid(valid[i], strlen(valid[i])))
			unit_fail(__FILE__, __LINE__, "valid[%zu] rejected", i);
	for (size_t i = 0; i < ARRAY_SIZE(invalid); i++)
		if (ws_utf8_valid(invalid[i], strlen(invalid[i])))
			unit_fail(__FILE__, __LINE__, "invalid[%zu] accepted", i);
}

TEST(ws_invalid_utf8_in_text_closes_1007_even_split_across_fragments)
{
	struct strbuf sb = STRBUF_INIT;
	masked_frame(&sb, WS_OP_TEXT, 1, "a\xed\xa0\x80", 4); /* surrogate */
	CHECK_INT(error_code_of(sb.buf, sb.len), 1007);
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_TEXT, 1, "ab\xce", 3); /* ends inside a sequence */
	CHECK_INT(error_code_of(sb.buf, sb.len), 1007);
	strbuf_reset(&sb);
	/* a valid code point split across three fragments */
	masked_frame(&sb, WS_OP_TEXT, 0, "x\xf0", 2);
	masked_frame(&sb, WS_OP_CONT, 0, "\x90\x80", 2);
	masked_frame(&sb, WS_OP_CONT, 1, "\x80y", 2);
	CHECK_INT(error_code_of(sb.buf, sb.len), 0);
	/* an invalid one split across fragments fails on the fragment that makes it invalid */
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_TEXT, 0, "x\xf4", 2);
	masked_frame(&sb, WS_OP_CONT, 1, "\x90\x80\x80", 3);
	CHECK_INT(error_code_of(sb.buf, sb.len), 1007);
	/* a fragmented text message that ends inside a sequence */
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_TEXT, 0, "x\xf0", 2);
	masked_frame(&sb, WS_OP_CONT, 1, "\x90\x80", 2);
	CHECK_INT(error_code_of(sb.buf, sb.len), 1007);
	/* binary messages are not UTF-8 checked */
	strbuf_reset(&sb);
	masked_frame(&sb, WS_OP_BINARY, 1, "\xff\xfe", 2);
	CHECK_INT(error_code_of(sb.buf, sb.len), 0);
	strbuf_release(&sb);
}

TEST(ws_oversize_message_is_reported_once_skipped_and_the_next_one_works)
{
	char big[300];
	memset(big, 'z', sizeof(big));
	struct strbuf sb = STRBUF_INIT;
	masked_frame(&sb, WS_OP_TEXT, 1, big, 101); /* 1 over */
	masked_frame(&sb, WS_OP_TEXT, 1, "ok1", 3);
	masked_frame(&sb, WS_OP_TEXT, 0, big, 60); /* fragmented: 60 + 60 > 100 */
	masked_frame(&sb, WS_OP_PING, 1, "p", 1);  /* still answered while skipping */
	masked_frame(&sb, WS_OP_CONT, 0, big, 60);
	masked_frame(&sb, WS_OP_CONT, 1, "\xff\xff", 2); /* skipped: not even UTF-8 checked */
	masked_frame(&sb, WS_OP_TEXT, 1, big, 100);	 /* exactly max */
	for (size_t step = 0; step <= 3; step++) {
		struct ws_parser p;
		struct collected c = { 0 };
		ws_parser_init(&p, WS_ROLE_SERVER, 100);
		feed(&p, sb.buf, sb.len, step ? step * 7 : 0, &c);
		CHECK_INT(c.n, 5);
		CHECK_INT(c.type[0], WS_EV_OVERSIZE);
		CHECK_INT(c.type[1], WS_EV_MESSAGE);
		CHECK_STR(c.data[1], "ok1");
		CHECK_INT(c.type[2], WS_EV_PING);
		CHECK_INT(c.type[3], WS_EV_OVERSIZE);
		CHECK_INT(c.type[4], WS_EV_MESSAGE);
		CHECK_INT(c.len[4], 100);
		collected_free(&c);
		ws_parser_release(&p);
	}
	strbuf_release(&sb);
}

TEST(ws_parser_after_an_error_consumes_nothing_and_repeats_it)
{
	struct ws_parser p;
	struct ws_event ev;
	ws_parser_init(&p, WS_ROLE_SERVER, 1024);
	CHECK_INT(ws_parser_feed(&p, "\x81\x02hi", 4, &ev), 2);
	CHECK_INT(ev.type, WS_EV_ERROR);
	CHECK_INT(ws_parser_feed(&p, "hi", 2, &ev), 0);
	CHECK_INT(ev.type, WS_EV_ERROR);
	CHECK_INT(ev.close_code, 1002);
	CHECK(ev.reason && strstr(ev.reason, "unmasked"));
	ws_parser_release(&p);
}
