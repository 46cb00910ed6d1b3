/* report_scan.h — a fast, exact reader of the one line executors send most: a report_message notification
 * {"jsonrpc":"2.0","method":"report_message","params":{"session_token":…,"task_id":…,"message_type":…,"data":…}}.
 *
 * report_scan() accepts a line only when jansson (json_loadb with JSON_REJECT_DUPLICATES) would read it as
 * exactly that call, and then yields the three strings and data serialised as json_to_compact() would
 * (byte for byte): numbers too, read and printed by the same rules (an integer as written, "-0" as "0"; a real
 * through strtod and "%.17g"; what jansson refuses — a leading zero, "1.", an integer beyond long long, a real
 * beyond ±DBL_MAX — refused). Anything it does not fully understand — an id, another key, a duplicate key,
 * \u0000, deep nesting, many keys in one object, escapes in the three strings, bad UTF-8, trailing bytes —
 * makes it answer 0, and the caller parses the line in full.
 * It never fails otherwise and never reads past line + len. */
#ifndef AGOR_REPORT_SCAN_H
#define AGOR_REPORT_SCAN_H

#include <stddef.h>

#include "strbuf.h"

struct report_line {
	struct strbuf buf;			   /* the fields, each followed by a NUL; reused from line to line */
	size_t token, task_id, message_type, data; /* offsets into buf */
	size_t data_len;
};
#define REPORT_LINE_INIT                                                                                               \
	{                                                                                                              \
		STRBUF_INIT, 0, 0, 0, 0, 0                                                                             \
	}

/* 1 with r filled when line is such a notification, else 0 (r's fields then mean nothing). */
int report_scan(const char *line, size_t len, struct report_line *r);

/* A JSON text (no surrounding whitespace allowed beyond what JSON allows) in jansson's compact form, appended
 * to out: 1 on success, 0 (out unchanged) for anything report_scan would refuse inside data. */
int report_scan_compact(const char *text, size_t len, struct strbuf *out);

static inline const char *report_line_field(const struct report_line *r, size_t off)
{
	return r->buf.buf + off;
}

void report_line_release(struct report_line *r);

#endif
