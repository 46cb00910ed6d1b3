/* strbuf.h — one growable byte buffer (git's strbuf): always NUL-terminated, may hold NULs.
 * Invariants: buf is never NULL after strbuf_init; buf[len] == '\0'; len < alloc (unless alloc == 0
 * and buf points at the shared empty string). Never hand buf to free() yourself. */
#ifndef AGOR_STRBUF_H
#define AGOR_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#include "common.h"

struct strbuf {
	size_t alloc;
	size_t len;
	char *buf;
};

extern char strbuf_empty[];
#define STRBUF_INIT                                                                                                    \
	{                                                                                                              \
		0, 0, strbuf_empty                                                                                     \
	}

void strbuf_init(struct strbuf *sb, size_t hint);
void strbuf_release(struct strbuf *sb);
/* Returns the buffer (malloc'd, caller frees) and resets sb to empty. */
char *strbuf_detach(struct strbuf *sb, size_t *len);
void strbuf_grow(struct strbuf *sb, size_t extra);
void strbuf_reset(struct strbuf *sb);
void strbuf_setlen(struct strbuf *sb, size_t len);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, char c);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) PRINTF_LIKE(2, 3);
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* Removes the first n bytes. */
void strbuf_remove_front(struct strbuf *sb, size_t n);
/* The next complete line of sb at or after *from: its start, with *len its length ('\n' included), and *from
 * moved past it; NULL when no complete line is left. Read a buffer's lines this way, then drop them all with one
 * strbuf_remove_front(sb, *from): a removal per line moves the rest of the buffer each time (quadratic). */
const char *strbuf_next_line(const struct strbuf *sb, size_t *from, size_t *len);
/* The bytes strbuf_remove_front has moved on this thread: lets a test hold a line reader's work to a bound. */
size_t strbuf_moved_bytes(void);
/* The first '\n' of sb at or after from, or NULL. A reader waiting for a line passes the length it has already
 * looked at, so a long line arriving in pieces is scanned once, not once per piece (quadratic). */
const char *strbuf_find_newline(const struct strbuf *sb, size_t from);
/* The bytes strbuf_find_newline (and so strbuf_next_line) has looked at on this thread: a test's bound on scans. */
size_t strbuf_scanned_bytes(void);
void strbuf_trim_trailing_newline(struct strbuf *sb);
/* Appends a POSIX-shell single-quoted form of s ('it'\''s'). */
void strbuf_add_shell_quoted(struct strbuf *sb, const char *s);
/* The length (1..4) of the valid UTF-8 sequence at s (avail bytes left), or 0 when it is not one:
 * overlong forms, surrogates and code points above U+10FFFF are invalid. */
size_t utf8_sequence_length(const unsigned char *s, size_t avail);
/* Reads fd to EOF, at most max bytes (max 0 = unbounded). Returns bytes read, -1 on error
 * (errno set), or -2 when more than max bytes were available (sb then holds max+1 bytes). */
ssize_t strbuf_read_fd(struct strbuf *sb, int fd, size_t max);
/* Reads a whole file; -1 on error with errno set. */
int strbuf_read_file(struct strbuf *sb, const char *path, size_t max);

static inline void cleanup_strbuf(struct strbuf *sb)
{
	strbuf_release(sb);
}
#define _cleanup_strbuf_ __attribute__((cleanup(cleanup_strbuf)))

#endif
