/* strbuf.c — the growable buffer of strbuf.h.
 * Never returns a buffer that is not NUL-terminated; never writes past alloc. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "strbuf.h"
#include "banned.h"

char strbuf_empty[1];

void strbuf_init(struct strbuf *sb, size_t hint)
{
	sb->alloc = sb->len = 0;
	sb->buf = strbuf_empty;
	if (hint)
		strbuf_grow(sb, hint);
}

void strbuf_release(struct strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb, 0);
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	if (!sb->alloc)
		strbuf_grow(sb, 0);
	char *res = sb->buf;
	if (len)
		*len = sb->len;
	strbuf_init(sb, 0);
	return res;
}

void strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;
	if (need < sb->len)
		abort(); /* overflow */
	if (need <= sb->alloc)
		return;
	size_t alloc = sb->alloc ? sb->alloc : 64;
	while (alloc < need)
		alloc = alloc < (1u << 20) ? alloc * 2 : alloc + alloc / 2;
	if (!sb->alloc) {
		sb->buf = xmalloc(alloc);
		sb->buf[0] = '\0';
	} else {
		sb->buf = xrealloc(sb->buf, alloc);
	}
	sb->alloc = alloc;
}

void strbuf_reset(struct strbuf *sb)
{
	strbuf_setlen(sb, 0);
}

void strbuf_setlen(struct strbuf *sb, size_t len)
{
	if (!sb->alloc)
		return; /* only len 0 is possible */
	if (len >= sb->alloc)
		abort();
	sb->len = len;
	sb->buf[len] = '\0';
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	strbuf_grow(sb, len);
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, char c)
{
	strbuf_add(sb, &c, 1);
}

void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int len = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (len < 0)
		return;
	strbuf_grow(sb, (size_t)len);
	vsnprintf(sb->buf + sb->len, (size_t)len + 1, fmt, ap);
	sb->len += (size_t)len;
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

static _Thread_local size_t moved_bytes;

void strbuf_remove_front(struct strbuf *sb, size_t n)
{
	if (n == 0)
		return;
	if (n >= sb->len) {
		strbuf_reset(sb);
		return;
	}
	memmove(sb->buf, sb->buf + n, sb->len - n);
	moved_bytes += sb->len - n;
	strbuf_setlen(sb, sb->len - n);
}

size_t strbuf_moved_bytes(void)
{
	return moved_bytes;
}

static _Thread_local size_t scanned_bytes;

const char *strbuf_find_newline(const struct strbuf *sb, size_t from)
{
	if (from >= sb->len)
		return NULL;
	const char *nl = memchr(sb->buf + from, '\n', sb->len - from);
	scanned_bytes += nl ? (size_t)(nl - (sb->buf + from)) + 1 : sb->len - from;
	return nl;
}

size_t strbuf_scanned_bytes(void)
{
	return scanned_bytes;
}

const char *strbuf_next_line(const struct strbuf *sb, size_t *from, size_t *len)
{
	const char *nl = strbuf_find_newline(sb, *from); /* NULL when *from is at or past the end */
	if (!nl)
		return NULL;
	const char *start = sb->buf + *from;
	*len = (size_t)(nl - start) + 1;
	*from += *len;
	return start;
}

void strbuf_trim_trailing_newline(struct strbuf *sb)
{
	size_t len = sb->len;
	while (len && (sb->buf[len - 1] == '\n' || sb->buf[len - 1] == '\r'))
		len--;
	strbuf_setlen(sb, len);
}

void strbuf_add_shell_quoted(struct strbuf *sb, const char *s)
{
	strbuf_addch(sb, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			strbuf_addstr(sb, "'\\''");
		else
			strbuf_addch(sb, *s);
	}
	strbuf_addch(sb, '\'');
}

ssize_t strbuf_read_fd(struct strbuf *sb, int fd, size_t max)
{
	size_t start = sb->len;
	for (;;) {
		/* a page first: most reads are small files (/proc, cgroup), and a 64 KiB step means a 128 KiB
		 * buffer, which the allocator maps and unmaps each time (an unmap costs a TLB shootdown) */
		strbuf_grow(sb, sb->len - start < 4096 ? 4096 : 65536);
		size_t room = sb->alloc - sb->len - 1;
		ssize_t n = read(fd, sb->buf + sb->len, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		sb->len += (size_t)n;
		sb->buf[sb->len] = '\0';
		if (max && sb->len - start > max) {
			strbuf_setlen(sb, start + max + 1);
			return -2;
		}
	}
	return (ssize_t)(sb->len - start);
}

int strbuf_read_file(struct strbuf *sb, const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = strbuf_read_fd(sb, fd, max);
	int saved = errno;
	close(fd);
	if (n == -2) {
		errno = EFBIG;
		return -1;
	}
	errno = saved;
	return n < 0 ? -1 : 0;
}

size_t utf8_sequence_length(const unsigned char *s, size_t avail)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
	if (!n || n > avail || s[0] > 0xF4)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0) || (s[0] == 0xF0 && s[1] < 0x90) ||
	    (s[0] == 0xF4 && s[1] >= 0x90))
		return 0;
	return n;
}
