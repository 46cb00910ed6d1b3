/* ndjson.h — splits a byte stream into newline-delimited messages (JSON-RPC on the Unix socket), with a size cap.
 * Never buffers more than max bytes of one line; never hands out an empty line.
 *
 * Contract:
 *   - ndjson_feed() consumes bytes until it has one line to report or the input is used up; loop, advancing by
 *     the returned count, until all input is consumed and the event is NDJSON_NEED_MORE.
 *   - A line is reported without its '\n' (and without a '\r' before it). When the whole line lies in the
 *     caller's buffer it is returned in place (no copy); otherwise it is assembled in the reader. Either way
 *     the pointer stays valid until the next ndjson_feed() or until the caller's buffer changes.
 *   - Blank lines are skipped. A line longer than max bytes produces NDJSON_OVERSIZE once, as soon as it is
 *     known, and the rest of that line is skipped without being buffered; the next line is read normally.
 */
#ifndef AGOR_NDJSON_H
#define AGOR_NDJSON_H

#include <stddef.h>

#include "strbuf.h"

enum ndjson_event { NDJSON_NEED_MORE, NDJSON_LINE, NDJSON_OVERSIZE };

struct ndjson_reader {
	struct strbuf line; /* a partial line carried over from earlier input */
	size_t max;
	int skipping;
	int reset_pending;
};

void ndjson_init(struct ndjson_reader *r, size_t max);
void ndjson_release(struct ndjson_reader *r);
size_t ndjson_feed(struct ndjson_reader *r, const char *data, size_t len, enum ndjson_event *ev, const char **line,
		   size_t *line_len);

#endif
