/* http.c — the HTTP/1.1 message reader and response heads of http.h, on top of http-parser 2.9.
 * Never lets http-parser run past the end of a message (it is paused there); never keeps an unlisted header. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "banned.h"

#define HTTP_KEEP_BUFFER   65536 /* a body buffer larger than this is freed between messages */
#define HTTP_LINE_OVERHEAD 4	 /* ": " and CRLF of a header line, counted against max_header */

static const char *const header_names[HTTP_H_COUNT] = {
	[HTTP_H_HOST] = "host",
	[HTTP_H_CONNECTION] = "connection",
	[HTTP_H_UPGRADE] = "upgrade",
	[HTTP_H_CONTENT_TYPE] = "content-type",
	[HTTP_H_EXPECT] = "expect",
	[HTTP_H_ORIGIN] = "origin",
	[HTTP_H_WS_KEY] = "sec-websocket-key",
	[HTTP_H_WS_VERSION] = "sec-websocket-version",
	[HTTP_H_WS_ACCEPT] = "sec-websocket-accept",
	[HTTP_H_WS_PROTOCOL] = "sec-websocket-protocol",
};

static struct http_reader *reader_of(http_parser *p)
{
	return p->data;
}

/* Counts head bytes; returns -1 (failing the parse with 431) past max_header. */
static int count_head(struct http_reader *r, size_t n)
{
	r->head_bytes += n;
	if (r->head_bytes <= r->max_header)
		return 0;
	r->error_status = 431;
	r->error = "request head too large";
	return -1;
}

static int on_message_begin(http_parser *p)
{
	(void)p;
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct http_reader *r = reader_of(p);
	if (count_head(r, len) < 0)
		return -1;
	strbuf_add(&r->msg.target, at, len);
	return 0;
}

static int on_status(http_parser *p, const char *at, size_t len)
{
	(void)at;
	return count_head(reader_of(p), len);
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct http_reader *r = reader_of(p);
	if (r->in_value || (r->field_len == 0 && !r->field_overflow)) {
		r->in_value = 0;
		r->field_len = 0;
		r->field_overflow = 0;
		if (count_head(r, HTTP_LINE_OVERHEAD) < 0)
			return -1;
	}
	if (count_head(r, len) < 0)
		return -1;
	for (size_t i = 0; i < len && !r->field_overflow; i++) {
		if (r->field_len + 1 >= sizeof(r->field)) {
			r->field_overflow = 1;
			break;
		}
		r->field[r->field_len++] = (char)tolower((unsigned char)at[i]);
	}
	return 0;
}

static struct strbuf *kept_header(struct http_reader *r)
{
	if (r->field_overflow)
		return NULL;
	for (size_t i = 0; i < HTTP_H_COUNT; i++)
		if (strlen(header_names[i]) == r->field_len && !memcmp(header_names[i], r->field, r->field_len))
			return &r->msg.headers[i];
	return NULL;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct http_reader *r = reader_of(p);
	if (count_head(r, len) < 0)
		return -1;
	if (!r->in_value) {
		r->in_value = 1;
		r->value = kept_header(r);
		if (r->value && r->value->len)
			strbuf_addstr(r->value, ", ");
	}
	if (r->value)
		strbuf_add(r->value, at, len);
	return 0;
}

static void trim_trailing_blanks(struct strbuf *sb)
{
	size_t n = sb->len;
	while (n && (sb->buf[n - 1] == ' ' || sb->buf[n - 1] == '\t'))
		n--;
	strbuf_setlen(sb, n);
}

static int on_headers_complete(http_parser *p)
{
	struct http_reader *r = reader_of(p);
	struct http_message *m = &r->msg;
	r->head_done = 1;
	m->method = p->method;
	m->status = p->status_code;
	m->http_major = p->http_major;
	m->http_minor = p->http_minor;
	for (size_t i = 0; i < HTTP_H_COUNT; i++)
		trim_trailing_blanks(&m->headers[i]);
	if (p->content_length != UINT64_MAX && p->content_length > r->max_body)
		m->body_too_large = 1;
	if (p->type == HTTP_REQUEST && (p->http_major > 1 || (p->http_major == 1 && p->http_minor >= 1)) &&
	    !strcasecmp(m->headers[HTTP_H_EXPECT].buf, "100-continue"))
		r->continue_pending = 1;
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct http_reader *r = reader_of(p);
	struct http_message *m = &r->msg;
	if (m->body_too_large)
		return 0;
	if (len > r->max_body - m->body.len) {
		m->body_too_large = 1;
		strbuf_release(&m->body);
		return 0;
	}
	strbuf_add(&m->body, at, len);
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct http_reader *r = reader_of(p);
	r->msg.keep_alive = http_should_keep_alive(p);
	r->msg.upgrade = p->upgrade;
	r->message_done = 1;
	if (r->msg.body_too_large)
		strbuf_release(&r->msg.body);
	http_parser_pause(p, 1); /* stop here: the next bytes belong to the next message or protocol */
	return 0;
}

static const http_parser_settings parser_settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_status = on_status,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

void http_reader_init(struct http_reader *r, enum http_parser_type type, size_t max_header, size_t max_body)
{
	memset(r, 0, sizeof(*r));
	http_parser_init(&r->parser, type);
	r->parser.data = r;
	r->max_header = max_header;
	r->max_body = max_body;
	strbuf_init(&r->msg.target, 0);
	strbuf_init(&r->msg.body, 0);
	for (size_t i = 0; i < HTTP_H_COUNT; i++)
		strbuf_init(&r->msg.headers[i], 0);
}

void http_reader_release(struct http_reader *r)
{
	strbuf_release(&r->msg.target);
	strbuf_release(&r->msg.body);
	for (size_t i = 0; i < HTTP_H_COUNT; i++)
		strbuf_release(&r->msg.headers[i]);
}

static void fail_from_parser(struct http_reader *r)
{
	r->failed = 1;
	if (!r->error_status) {
		r->error_status = 400;
		r->error = http_errno_description(HTTP_PARSER_ERRNO(&r->parser));
	}
}

size_t http_reader_feed(struct http_reader *r, const char *data, size_t len, enum http_read_event *ev)
{
	*ev = r->failed ? HTTP_ERROR : r->message_done ? HTTP_MESSAGE : HTTP_NEED_MORE;
	if (*ev != HTTP_NEED_MORE || len == 0) /* len 0 would mean EOF to http-parser */
		return 0;
	size_t n = http_parser_execute(&r->parser, &parser_settings, data, len);
	if (r->message_done) {
		*ev = HTTP_MESSAGE;
		return n;
	}
	if (HTTP_PARSER_ERRNO(&r->parser) != HPE_OK || n != len) {
		fail_from_parser(r);
		*ev = HTTP_ERROR;
	}
	return n;
}

enum http_read_event http_reader_eof(struct http_reader *r)
{
	if (r->failed)
		return HTTP_ERROR;
	if (r->message_done)
		return HTTP_MESSAGE;
	http_parser_execute(&r->parser, &parser_settings, NULL, 0);
	if (r->message_done)
		return HTTP_MESSAGE;
	if (HTTP_PARSER_ERRNO(&r->parser) != HPE_OK) {
		fail_from_parser(r);
		return HTTP_ERROR;
	}
	return HTTP_NEED_MORE;
}

void http_reader_next(struct http_reader *r)
{
	struct http_message *m = &r->msg;
	strbuf_reset(&m->target);
	if (m->body.alloc > HTTP_KEEP_BUFFER)
		strbuf_release(&m->body);
	else
		strbuf_reset(&m->body);
	for (size_t i = 0; i < HTTP_H_COUNT; i++)
		strbuf_reset(&m->headers[i]);
	m->method = m->status = 0;
	m->http_major = m->http_minor = 0;
	m->keep_alive = m->upgrade = m->body_too_large = 0;
	r->head_bytes = r->field_len = 0;
	r->field_overflow = r->in_value = 0;
	r->value = NULL;
	r->head_done = r->message_done = r->continue_pending = 0;
	http_parser_pause(&r->parser, 0);
}

int http_header_has_token(const char *value, const char *token)
{
	size_t tlen = strlen(token);
	const char *s = value;
	while (*s) {
		while (*s == ' ' || *s == '\t' || *s == ',')
			s++;
		const char *start = s;
		while (*s && *s != ',')
			s++;
		const char *end = s;
		while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if ((size_t)(end - start) == tlen && !strncasecmp(start, token, tlen))
			return 1;
	}
	return 0;
}

size_t http_target_path_len(const char *target)
{
	return strcspn(target, "?#");
}

const char *http_status_text(unsigned status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 101:
		return "Switching Protocols";
	case 200:
		return "OK";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 413:
		return "Content Too Large";
	case 426:
		return "Upgrade Required";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Unknown";
	}
}

void http_response_head(struct strbuf *out, unsigned status, const char *content_type, size_t content_length,
			int keep_alive, const char *extra)
{
	int bodyless = status < 200 || status == 204 || status == 304;
	strbuf_addf(out, "HTTP/1.1 %u %s\r\n", status, http_status_text(status));
	if (content_type)
		strbuf_addf(out, "Content-Type: %s\r\n", content_type);
	if (!bodyless)
		strbuf_addf(out, "Content-Length: %zu\r\n", content_length);
	if (status != 101) {
		strbuf_addstr(out, "Cache-Control: no-store\r\n");
		if (!keep_alive)
			strbuf_addstr(out, "Connection: close\r\n");
	}
	if (extra)
		strbuf_addstr(out, extra);
	strbuf_addstr(out, "\r\n");
}
