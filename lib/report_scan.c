/* report_scan.c — the exact fast reader of report_message notification lines (report_scan.h).
 * Never accepts what jansson would read differently or refuse: when in doubt it answers 0. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report_scan.h"
#include "banned.h"

#define MAX_DEPTH  32 /* deeper data goes to jansson */
#define MAX_KEYS   32 /* an object with more keys goes to jansson (the duplicate check here is quadratic) */
#define MAX_DIGITS 18 /* always fits a long long; 19 are compared with its range */

struct scan {
	const unsigned char *p, *end;
	struct strbuf *out;
	int depth;
};

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* Takes c after optional whitespace. */
static int take(struct scan *s, unsigned char c)
{
	skip_ws(s);
	if (s->p >= s->end || *s->p != c)
		return 0;
	s->p++;
	return 1;
}

static int hex4(const unsigned char *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return 0;
		*v = *v << 4 | d;
	}
	return 1;
}

/* Code point cp as jansson's dump writes it inside a string (no JSON_ENSURE_ASCII, no JSON_ESCAPE_SLASH). */
static void put_codepoint(struct strbuf *out, unsigned cp)
{
	static const char hex[] = "0123456789ABCDEF";
	char b[6];
	size_t n;
	switch (cp) {
	case '"':
		strbuf_add(out, "\\\"", 2);
		return;
	case '\\':
		strbuf_add(out, "\\\\", 2);
		return;
	case '\b':
		strbuf_add(out, "\\b", 2);
		return;
	case '\f':
		strbuf_add(out, "\\f", 2);
		return;
	case '\n':
		strbuf_add(out, "\\n", 2);
		return;
	case '\r':
		strbuf_add(out, "\\r", 2);
		return;
	case '\t':
		strbuf_add(out, "\\t", 2);
		return;
	}
	if (cp < 0x20) {
		b[0] = '\\', b[1] = 'u', b[2] = '0', b[3] = '0', b[4] = hex[cp >> 4], b[5] = hex[cp & 15];
		n = 6;
	} else if (cp < 0x80) {
		b[0] = (char)cp, n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | cp >> 12), b[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
		b[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
	} else {
		b[0] = (char)(0xF0 | cp >> 18), b[1] = (char)(0x80 | (cp >> 12 & 0x3F)),
		b[2] = (char)(0x80 | (cp >> 6 & 0x3F)), b[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
	}
	strbuf_add(out, b, n);
}

/* The escape after a backslash at s->p (pointing past the backslash), written in jansson's form. */
static int copy_escape(struct scan *s)
{
	if (s->p >= s->end)
		return 0;
	unsigned char c = *s->p++;
	switch (c) {
	case '"':
		put_codepoint(s->out, '"');
		return 1;
	case '\\':
		put_codepoint(s->out, '\\');
		return 1;
	case '/':
		put_codepoint(s->out, '/');
		return 1;
	case 'b':
		put_codepoint(s->out, '\b');
		return 1;
	case 'f':
		put_codepoint(s->out, '\f');
		return 1;
	case 'n':
		put_codepoint(s->out, '\n');
		return 1;
	case 'r':
		put_codepoint(s->out, '\r');
		return 1;
	case 't':
		put_codepoint(s->out, '\t');
		return 1;
	case 'u':
		break;
	default:
		return 0;
	}
	unsigned cp, lo;
	if (s->end - s->p < 4 || !hex4(s->p, &cp))
		return 0;
	s->p += 4;
	if (cp >= 0xDC00 && cp <= 0xDFFF)
		return 0; /* a lone low surrogate */
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' || !hex4(s->p + 2, &lo) || lo < 0xDC00 ||
		    lo > 0xDFFF)
			return 0;
		s->p += 6;
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
	}
	if (cp == 0)
		return 0; /* jansson refuses NUL in strings unless told otherwise */
	put_codepoint(s->out, cp);
	return 1;
}

/* A string at s->p (its opening quote), appended to out quoted and escaped as jansson writes it. */
static int copy_string(struct scan *s)
{
	s->p++;
	strbuf_addch(s->out, '"');
	for (;;) {
		const unsigned char *run = s->p;
		while (s->p < s->end && *s->p >= 0x20 && *s->p < 0x80 && *s->p != '"' && *s->p != '\\')
			s->p++;
		strbuf_add(s->out, run, (size_t)(s->p - run));
		if (s->p >= s->end)
			return 0;
		unsigned char c = *s->p;
		if (c == '"') {
			s->p++;
			strbuf_addch(s->out, '"');
			return 1;
		}
		if (c == '\\') {
			s->p++;
			if (!copy_escape(s))
				return 0;
			continue;
		}
		if (c < 0x20)
			return 0;
		size_t n = utf8_sequence_length(s->p, (size_t)(s->end - s->p));
		if (!n)
			return 0;
		strbuf_add(s->out, s->p, n);
		s->p += n;
	}
}

static size_t skip_digits(struct scan *s)
{
	const unsigned char *from = s->p;
	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return (size_t)(s->p - from);
}

static int at_one_of(const struct scan *s, const char *set)
{
	return s->p < s->end && *s->p && strchr(set, *s->p);
}

/* An integer as json_strtoint (strtoll) reads it and jansson prints it back: as written, "-0" as "0"; out of
 * the long long range refused (jansson's "too big integer"). digits: the n digits after the optional '-'. */
static int copy_integer(struct scan *s, const unsigned char *start, const unsigned char *digits, size_t n)
{
	int negative = digits != start;
	if (n > MAX_DIGITS) {
		static const char max[] = "9223372036854775807", min[] = "9223372036854775808";
		if (n > sizeof(max) - 1 || memcmp(digits, negative ? min : max, n) > 0)
			return 0;
	}
	if (n == 1 && digits[0] == '0')
		start = digits;
	strbuf_add(s->out, start, (size_t)(s->p - start));
	return 1;
}

/* A real as jansson reads it (strtod; an overflow to ±HUGE_VAL refused, an underflow read as what strtod
 * gives) and prints it (jsonp_dtostr: "%.17g", ".0" added when there is neither a '.' nor an 'e', no '+'
 * and no leading zeros in the exponent). */
static int copy_real(struct scan *s, const unsigned char *start, size_t len)
{
	size_t at = s->out->len;
	strbuf_add(s->out, start, len); /* NUL-terminated for strtod */
	char *end;
	errno = 0;
	double v = strtod(s->out->buf + at, &end);
	int overflow = (v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE;
	int whole = end == s->out->buf + at + len;
	strbuf_setlen(s->out, at);
	if (overflow || !whole)
		return 0;
	char text[64];
	int n = snprintf(text, sizeof(text), "%.17g", v);
	if (n <= 0 || (size_t)n >= sizeof(text) - 2)
		return 0;
	if (!strchr(text, '.') && !strchr(text, 'e'))
		memcpy(text + n, ".0", 3);
	char *e = strchr(text, 'e');
	if (e) { /* "e+07" → "e7", "e-07" → "e-7" */
		char *from = e + 1, *to = e + 1;
		if (*from == '+')
			from++;
		else if (*from == '-')
			*to++ = *from++;
		while (*from == '0' && from[1])
			from++;
		memmove(to, from, strlen(from) + 1);
	}
	strbuf_addstr(s->out, text);
	return 1;
}

/* A JSON number (-?int frac? exp?) read and written back as jansson does: an integer (no fraction, no exponent)
 * by copy_integer, a real by copy_real. Refused as jansson refuses them: a leading zero ("01"), a lone '-', "1.",
 * "1e", "+1", ".5". */
static int copy_number(struct scan *s)
{
	const unsigned char *start = s->p;
	if (s->p < s->end && *s->p == '-')
		s->p++;
	const unsigned char *digits = s->p;
	size_t n = skip_digits(s);
	if (n == 0 || (digits[0] == '0' && n > 1))
		return 0;
	int real = 0;
	if (at_one_of(s, ".")) {
		s->p++;
		if (!skip_digits(s))
			return 0;
		real = 1;
	}
	if (at_one_of(s, "eE")) {
		s->p++;
		if (at_one_of(s, "+-"))
			s->p++;
		if (!skip_digits(s))
			return 0;
		real = 1;
	}
	return real ? copy_real(s, start, (size_t)(s->p - start)) : copy_integer(s, start, digits, n);
}

static int copy_word(struct scan *s, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
		return 0;
	s->p += n;
	if (s->p < s->end && ((*s->p >= 'a' && *s->p <= 'z') || (*s->p >= 'A' && *s->p <= 'Z')))
		return 0;
	strbuf_add(s->out, word, n);
	return 1;
}

static int copy_value(struct scan *s);

/* take(s, c), and c written to the output when it was there. */
static int copied(struct scan *s, unsigned char c)
{
	if (!take(s, c))
		return 0;
	strbuf_addch(s->out, (char)c);
	return 1;
}

static int copy_object(struct scan *s)
{
	size_t key_at[MAX_KEYS], key_len[MAX_KEYS], nkeys = 0;
	s->p++;
	strbuf_addch(s->out, '{');
	if (copied(s, '}'))
		return 1;
	for (;;) {
		skip_ws(s);
		if (nkeys == MAX_KEYS || s->p >= s->end || *s->p != '"')
			return 0;
		size_t at = s->out->len;
		if (!copy_string(s))
			return 0;
		size_t len = s->out->len - at;
		for (size_t i = 0; i < nkeys; i++) /* one written form per decoded key: equal forms, equal keys */
			if (key_len[i] == len && !memcmp(s->out->buf + key_at[i], s->out->buf + at, len))
				return 0;
		key_at[nkeys] = at;
		key_len[nkeys++] = len;
		if (!copied(s, ':'))
			return 0;
		skip_ws(s);
		if (!copy_value(s))
			return 0;
		if (copied(s, '}'))
			return 1;
		if (!copied(s, ','))
			return 0;
	}
}

static int copy_array(struct scan *s)
{
	s->p++;
	strbuf_addch(s->out, '[');
	if (copied(s, ']'))
		return 1;
	for (;;) {
		skip_ws(s);
		if (!copy_value(s))
			return 0;
		if (copied(s, ']'))
			return 1;
		if (!copied(s, ','))
			return 0;
	}
}

/* A value at s->p (no whitespace before it). */
static int copy_value(struct scan *s)
{
	if (s->p >= s->end)
		return 0;
	int ok;
	switch (*s->p) {
	case '{':
	case '[':
		if (++s->depth > MAX_DEPTH)
			return 0;
		ok = *s->p == '{' ? copy_object(s) : copy_array(s);
		s->depth--;
		return ok;
	case '"':
		return copy_string(s);
	case 't':
		return copy_word(s, "true");
	case 'f':
		return copy_word(s, "false");
	case 'n':
		return copy_word(s, "null");
	default:
		return copy_number(s);
	}
}

int report_scan_compact(const char *text, size_t len, struct strbuf *out)
{
	struct scan s = { (const unsigned char *)text, (const unsigned char *)text + len, out, 0 };
	size_t was = out->len;
	skip_ws(&s);
	int ok = copy_value(&s);
	skip_ws(&s);
	if (ok && s.p == s.end)
		return 1;
	strbuf_setlen(out, was);
	return 0;
}

/* 1 when the 8 bytes at p are all printable ASCII other than a quote and a backslash: what most of a session token
 * and the ids are, checked a word at a time (a 0 sends those bytes to the byte-by-byte path). */
static int plain_ascii_word(const unsigned char *p)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
	uint64_t w, quote, backslash;
	memcpy(&w, p, sizeof(w));
	quote = w ^ (ones * '"');
	backslash = w ^ (ones * '\\');
	/* a byte below 0x20, a zero byte of quote or of backslash, or a byte from 0x80: its high bit set here */
	uint64_t odd = ((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | w;
	return !(odd & highs);
}

/* A string without escapes or control characters at s->p (after whitespace): its bytes (valid UTF-8). */
static int plain_string(struct scan *s, const unsigned char **str, size_t *len)
{
	skip_ws(s);
	if (s->p >= s->end || *s->p != '"')
		return 0;
	*str = ++s->p;
	while (s->p < s->end && *s->p != '"') {
		if (s->end - s->p >= 8 && plain_ascii_word(s->p)) {
			s->p += 8;
			continue;
		}
		if (*s->p < 0x20 || *s->p == '\\')
			return 0;
		size_t n = *s->p < 0x80 ? 1 : utf8_sequence_length(s->p, (size_t)(s->end - s->p));
		if (!n)
			return 0;
		s->p += n;
	}
	if (s->p >= s->end)
		return 0;
	*len = (size_t)(s->p++ - *str);
	return 1;
}

static int is(const unsigned char *str, size_t len, const char *word)
{
	return len == strlen(word) && !memcmp(str, word, len);
}

/* A plain string value, stored in r->buf with a NUL after it. */
static int store_plain(struct scan *s, struct report_line *r, size_t *off)
{
	const unsigned char *str;
	size_t len;
	if (!plain_string(s, &str, &len))
		return 0;
	*off = r->buf.len;
	strbuf_add(&r->buf, str, len);
	strbuf_addch(&r->buf, '\0');
	return 1;
}

enum { SEEN_TOKEN = 1, SEEN_TASK = 2, SEEN_TYPE = 4, SEEN_DATA = 8, SEEN_ALL = 15 };

static int scan_params(struct scan *s, struct report_line *r)
{
	unsigned seen = 0;
	if (!take(s, '{'))
		return 0;
	do {
		const unsigned char *key;
		size_t len;
		unsigned bit;
		if (!plain_string(s, &key, &len) || !take(s, ':'))
			return 0;
		if (is(key, len, "session_token"))
			bit = SEEN_TOKEN;
		else if (is(key, len, "task_id"))
			bit = SEEN_TASK;
		else if (is(key, len, "message_type"))
			bit = SEEN_TYPE;
		else if (is(key, len, "data"))
			bit = SEEN_DATA;
		else
			return 0;
		if (seen & bit)
			return 0;
		seen |= bit;
		int ok;
		if (bit == SEEN_DATA) {
			skip_ws(s);
			r->data = r->buf.len;
			ok = copy_value(s);
			r->data_len = r->buf.len - r->data;
			strbuf_addch(&r->buf, '\0');
		} else {
			ok = store_plain(s, r,
					 bit == SEEN_TOKEN  ? &r->token
					 : bit == SEEN_TASK ? &r->task_id
							    : &r->message_type);
		}
		if (!ok)
			return 0;
	} while (take(s, ','));
	return seen == SEEN_ALL && take(s, '}');
}

int report_scan(const char *line, size_t len, struct report_line *r)
{
	struct scan s = { (const unsigned char *)line, (const unsigned char *)line + len, &r->buf, 0 };
	unsigned seen = 0;
	strbuf_reset(&r->buf);
	if (!take(&s, '{'))
		return 0;
	do {
		const unsigned char *key, *val;
		size_t klen, vlen;
		if (!plain_string(&s, &key, &klen) || !take(&s, ':'))
			return 0;
		if (is(key, klen, "jsonrpc") && !(seen & 1)) {
			if (!plain_string(&s, &val, &vlen) || !is(val, vlen, "2.0"))
				return 0;
			seen |= 1;
		} else if (is(key, klen, "method") && !(seen & 2)) {
			if (!plain_string(&s, &val, &vlen) || !is(val, vlen, "report_message"))
				return 0;
			seen |= 2;
		} else if (is(key, klen, "params") && !(seen & 4)) {
			if (!scan_params(&s, r))
				return 0;
			seen |= 4;
		} else {
			return 0; /* an id (a call wanting a reply), another key or a duplicate: jansson's */
		}
	} while (take(&s, ','));
	if (seen != 7 || !take(&s, '}'))
		return 0;
	skip_ws(&s);
	return s.p == s.end;
}

void report_line_release(struct report_line *r)
{
	strbuf_release(&r->buf);
}
