/* tmux_parse.c — throughput of lib/tmux_control's parser on a control-mode stream of %output lines (a mix of
 * plain text and octal escapes) fed in 64 KiB reads, against a plain newline scan of the same bytes in the same
 * run. Prints "parser_MBps scan_MBps decoded_bytes"; never asserts a time. Usage: tmux_parse [MiB]. */
#include <stdlib.h>
#include <string.h>

#include "samples.h"
#include "tmux_control.h"
#include "banned.h"

static size_t decoded;

static void count_output(void *arg, const struct tmux_event *ev)
{
	(void)arg;
	if (ev->kind == TMUX_OUTPUT)
		decoded += ev->len;
}

/* "%output %1 " + 200 bytes of which every eighth is an escape (\033, \015 …) + "\n", repeated. */
static char *make_stream(size_t want, size_t *len)
{
	struct strbuf b = STRBUF_INIT;
	static const char *const escapes[] = { "\\033", "\\015", "\\012", "\\134", "\\177" };
	for (unsigned line = 0; b.len < want; line++) {
		strbuf_addstr(&b, "%output %1 ");
		for (int i = 0; i < 200; i++)
			if (i % 8 == 7)
				strbuf_addstr(&b, escapes[(line + (unsigned)i) % 5]);
			else
				strbuf_addch(&b, (char)('a' + (line + (unsigned)i) % 26));
		strbuf_addch(&b, '\n');
	}
	return strbuf_detach(&b, len);
}

static size_t scan_lines(const char *buf, size_t len)
{
	size_t lines = 0;
	for (const char *p = buf, *end = buf + len; (p = memchr(p, '\n', (size_t)(end - p))); p++)
		lines++;
	return lines;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64, len;
	char *stream = make_stream(mib << 20, &len);
	struct tmux_parser p;
	tmux_parser_init(&p, count_output, NULL);
	double t0 = now_us();
	for (size_t off = 0; off < len; off += 65536)
		tmux_parser_feed(&p, stream + off, len - off < 65536 ? len - off : 65536);
	double parse_us = now_us() - t0;
	tmux_parser_release(&p);
	t0 = now_us();
	volatile size_t lines = 0;
	for (size_t off = 0; off < len; off += 65536)
		lines += scan_lines(stream + off, len - off < 65536 ? len - off : 65536);
	double scan_us = now_us() - t0;
	printf("%.1f %.1f %zu\n", (double)len / parse_us, (double)len / scan_us, decoded);
	free(stream);
	return lines ? 0 : 1;
}
