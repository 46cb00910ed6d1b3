/* http_fuzz.c — libFuzzer target over the request glue: lib/http's reader (requests and responses, pipelined, in
 * input-chosen pieces, with the limits the server uses) and lib/ndjson's line splitter. Never built by default.
 *   build/fuzz/http_fuzz -max_total_time=60 [corpus-dir]
 * A crash, sanitizer report or failed invariant (abort) is a bug in http.c or ndjson.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "ndjson.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_messages(enum http_parser_type type, const char *data, size_t size, size_t max_header, size_t max_body)
{
	struct http_reader r;
	http_reader_init(&r, type, max_header, max_body);
	size_t off = 0, piece = 1 + (size ? (unsigned char)data[size - 1] % 29 : 0);
	int messages = 0;
	while (off < size && messages < 64) {
		size_t end = off + piece < size ? off + piece : size;
		enum http_read_event ev;
		size_t offered = end - off;
		size_t used = http_reader_feed(&r, data + off, offered, &ev);
		if (used > offered)
			abort();
		off += used;
		if (ev == HTTP_ERROR) {
			if (r.error_status != 400 && r.error_status != 431)
				abort();
			break;
		}
		if (ev == HTTP_MESSAGE) {
			if (r.msg.body.len > max_body || (r.msg.body_too_large && r.msg.body.len))
				abort();
			if (r.msg.upgrade)
				break; /* the rest belongs to another protocol */
			messages++;
			http_reader_next(&r);
		} else if (used != offered) {
			abort();
		}
		piece = 1 + (piece * 13 + 5) % 2048;
	}
	if (off >= size)
		http_reader_eof(&r);
	http_reader_release(&r);
}

static void split_lines(const char *data, size_t size, size_t max)
{
	struct ndjson_reader r;
	ndjson_init(&r, max);
	size_t off = 0;
	while (off < size) {
		size_t end = off + 1 + (size_t)(unsigned char)data[off] % 97;
		if (end > size)
			end = size;
		while (off < end) {
			enum ndjson_event ev;
			const char *line = NULL;
			size_t n = 0;
			off += ndjson_feed(&r, data + off, end - off, &ev, &line, &n);
			if (ev == NDJSON_LINE && (n == 0 || n > max || memchr(line, '\n', n)))
				abort();
			if (r.line.len > max + 1)
				abort();
		}
	}
	ndjson_release(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	read_messages(HTTP_REQUEST, s, size, 16384, 1 << 20);
	read_messages(HTTP_REQUEST, s, size, 256, 32);
	read_messages(HTTP_RESPONSE, s, size, 16384, 1024);
	split_lines(s, size, 64);
	return 0;
}
