/* ndjson.c — the newline-delimited message splitter of ndjson.h.
 * Never copies a line that lies whole in the caller's buffer; never keeps more than max bytes of a line. */
#include <string.h>

#include "ndjson.h"
#include "banned.h"

#define NDJSON_KEEP_BUFFER 65536 /* a carry-over buffer larger than this is freed after use */

void ndjson_init(struct ndjson_reader *r, size_t max)
{
	strbuf_init(&r->line, 0);
	r->max = max;
	r->skipping = 0;
	r->reset_pending = 0;
}

void ndjson_release(struct ndjson_reader *r)
{
	strbuf_release(&r->line);
}

static void drop_line(struct ndjson_reader *r)
{
	if (r->line.alloc > NDJSON_KEEP_BUFFER)
		strbuf_release(&r->line);
	else
		strbuf_reset(&r->line);
}

/* Strips one trailing '\r'; returns 1 when something is left to report. */
static int trim_line(const char **line, size_t *len)
{
	if (*len && (*line)[*len - 1] == '\r')
		(*len)--;
	return *len > 0;
}

/* Length of the line's content once its '\n' arrives: a trailing '\r' does not count. */
static size_t content_len(const struct ndjson_reader *r, const char *chunk, size_t n)
{
	size_t total = r->line.len + n;
	char last = n ? chunk[n - 1] : (r->line.len ? r->line.buf[r->line.len - 1] : 0);
	return last == '\r' ? total - 1 : total;
}

/* A partial line (no '\n' yet) already too long whatever comes next. */
static int partial_too_long(const struct ndjson_reader *r, const char *chunk, size_t n)
{
	size_t total = r->line.len + n;
	return total > r->max + 1 || (total == r->max + 1 && content_len(r, chunk, n) == total);
}

size_t ndjson_feed(struct ndjson_reader *r, const char *data, size_t len, enum ndjson_event *ev, const char **line,
		   size_t *line_len)
{
	size_t off = 0;
	*ev = NDJSON_NEED_MORE;
	if (r->reset_pending) {
		r->reset_pending = 0;
		drop_line(r);
	}
	while (off < len) {
		const char *nl = memchr(data + off, '\n', len - off);
		size_t chunk = nl ? (size_t)(nl - (data + off)) : len - off;
		size_t next = off + chunk + (nl ? 1 : 0);
		if (r->skipping) {
			r->skipping = !nl;
			off = next;
			continue;
		}
		if (nl ? content_len(r, data + off, chunk) > r->max : partial_too_long(r, data + off, chunk)) {
			drop_line(r);
			r->skipping = !nl;
			*ev = NDJSON_OVERSIZE;
			return next;
		}
		if (!nl) {
			strbuf_add(&r->line, data + off, chunk);
			return len;
		}
		if (r->line.len == 0) {
			*line = data + off;
			*line_len = chunk;
		} else {
			strbuf_add(&r->line, data + off, chunk);
			*line = r->line.buf;
			*line_len = r->line.len;
			r->reset_pending = 1;
		}
		off = next;
		if (trim_line(line, line_len)) {
			*ev = NDJSON_LINE;
			return off;
		}
		r->reset_pending = 0; /* a blank line: nothing to report, nothing to keep */
		drop_line(r);
	}
	return off;
}
