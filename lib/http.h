/* http.h — HTTP/1.1 message glue over http-parser without I/O: an incremental reader of requests (server) or
 * responses (client) that keeps only the headers agor uses, with header and body size caps, and response heads.
 * Never buffers more than max_header bytes of head or max_body bytes of body; never reads past one message.
 *
 * Contract:
 *   - http_reader_feed() consumes bytes up to the end of ONE message and then stops (reports HTTP_MESSAGE):
 *     what follows belongs to the next pipelined request, or to another protocol after an upgrade (the first
 *     WebSocket bytes of a read). Call http_reader_next() before feeding the next message.
 *   - Only the headers in enum http_header are kept (repeated ones are joined with ", ", trailing blanks
 *     trimmed). The head (request line or status line and all header lines) may total max_header bytes;
 *     beyond that the reader fails with status 431.
 *   - A body longer than max_body is not buffered: body_too_large is set, the body is skipped and the message
 *     still completes (the connection can stay open). A request with "Expect: 100-continue" sets
 *     continue_pending; the caller sends "100 Continue" and clears it.
 *   - Malformed input fails the reader (HTTP_ERROR, status 400 or 431, a static reason); it then consumes
 *     nothing more. The failure is final: answer and close.
 */
#ifndef AGOR_HTTP_H
#define AGOR_HTTP_H

#include <http_parser.h>
#include <stddef.h>

#include "strbuf.h"

enum http_header {
	HTTP_H_HOST,
	HTTP_H_CONNECTION,
	HTTP_H_UPGRADE,
	HTTP_H_CONTENT_TYPE,
	HTTP_H_EXPECT,
	HTTP_H_ORIGIN,
	HTTP_H_WS_KEY,
	HTTP_H_WS_VERSION,
	HTTP_H_WS_ACCEPT,
	HTTP_H_WS_PROTOCOL,
	HTTP_H_COUNT
};

struct http_message {
	unsigned method; /* enum http_method (requests) */
	unsigned status; /* responses */
	unsigned short http_major, http_minor;
	struct strbuf target; /* the request target as sent ("/rpc?x=1") */
	struct strbuf headers[HTTP_H_COUNT];
	struct strbuf body;
	int keep_alive;	    /* http_should_keep_alive() at the end of the message */
	int upgrade;	    /* the peer asked for (request) or agreed to (101 response) another protocol */
	int body_too_large; /* the body exceeded max_body and was skipped */
};

enum http_read_event { HTTP_NEED_MORE, HTTP_MESSAGE, HTTP_ERROR };

struct http_reader {
	http_parser parser;
	size_t max_header, max_body;
	size_t head_bytes;
	char field[24]; /* the current header name, lowercased; longer names are not kept */
	size_t field_len;
	int field_overflow;
	int in_value;
	struct strbuf *value; /* where the current header's value goes, NULL = dropped */
	int head_done, message_done, failed;
	int continue_pending;
	unsigned error_status; /* 400, 431 */
	const char *error;
	struct http_message msg;
};

void http_reader_init(struct http_reader *r, enum http_parser_type type, size_t max_header, size_t max_body);
void http_reader_release(struct http_reader *r);
size_t http_reader_feed(struct http_reader *r, const char *data, size_t len, enum http_read_event *ev);
/* The peer closed its side: completes a response delimited by EOF. Returns the event. */
enum http_read_event http_reader_eof(struct http_reader *r);
/* Clears the finished message and lets the reader go on with the next one. */
void http_reader_next(struct http_reader *r);
/* 1 once the request line / status line and every header have been read for the current message. */
static inline int http_reader_head_done(const struct http_reader *r)
{
	return r->head_done;
}

/* 1 when the comma-separated header value contains token (case-insensitive), e.g. Connection: keep-alive, Upgrade. */
int http_header_has_token(const char *value, const char *token);
/* The path of a request target: up to '?' or '#'. Returns its length. */
size_t http_target_path_len(const char *target);

const char *http_status_text(unsigned status);
/* Appends "HTTP/1.1 STATUS TEXT" and the standard headers; extra (may be NULL) holds complete header lines
 * ending in "\r\n". content_type NULL = no Content-Type. Ends with the blank line. */
void http_response_head(struct strbuf *out, unsigned status, const char *content_type, size_t content_length,
			int keep_alive, const char *extra);

#endif
