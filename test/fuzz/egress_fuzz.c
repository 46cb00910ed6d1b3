/* egress_fuzz.c — libFuzzer target over the egress proxy's reading of the request head a sandboxed agent sends
 * (egress_parse_head: CONNECT host:port, http:// absolute URIs, origin form inside a terminated tunnel) and the
 * allowlist reader (egress_allow_check/parse). The first byte picks the mode, the rest is the head (cut at its
 * blank line, or given one). Invariants: an accepted request has an upper-case method, a port in 1..65535 and a
 * normalised host with nothing of userinfo, a path or whitespace in it; the head sent upstream is one request
 * line "METHOD /path HTTP/1.1", the agent's headers without any hop-by-hop one, and ends with the single blank
 * line after "Connection: close"; a sentinel in the provider's authentication headers became the key. The
 * allowlist check and parse agree on every text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress.h"
#include "egress_allow.h"
#include "common.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SENTINEL "agor-sentinel-0123456789abcdef"
#define KEY	 "sk-the-real-key"

static void check_host(const struct egress_head *h)
{
	if (!h->host[0])
		abort();
	for (const char *c = h->host; *c; c++)
		if ((*c >= 'A' && *c <= 'Z' && !strchr(h->host, ':')) ||
		    /* an IPv6 literal is kept as written */ strchr(" \t\r\n@/?#\\", *c) || (unsigned char)*c < 0x20)
			abort();
	if (h->port < 1 || h->port > 65535)
		abort();
}

static int hop_by_hop(const char *line, size_t n)
{
	static const char *const names[] = { "connection:", "proxy-connection:", "keep-alive:",
					     "proxy-authorization:" };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (n >= strlen(names[i]) && !strncasecmp(line, names[i], strlen(names[i])))
			return 1;
	return 0;
}

static void check_forward(const struct egress_head *h, int provider)
{
	const struct strbuf *f = &h->forward;
	if (!h->path || h->path[0] != '/' || strstr(h->path, "\r\n"))
		abort();
	size_t first = strlen(h->method) + 1 + strlen(h->path) + 11;
	if (f->len < first || strncmp(f->buf, h->method, strlen(h->method)) ||
	    memcmp(f->buf + first - 11, " HTTP/1.1\r\n", 11))
		abort();
	static const char tail[] = "Connection: close\r\n\r\n";
	const char *blank = memmem(f->buf, f->len, "\r\n\r\n", 4);
	if (f->len < first + sizeof(tail) - 1 || memcmp(f->buf + f->len - (sizeof(tail) - 1), tail, sizeof(tail) - 1) ||
	    !blank || (size_t)(blank - f->buf) != f->len - 4)
		abort(); /* one head, ended once, by agor's own Connection header */
	const char *end = f->buf + f->len - (sizeof(tail) - 1);
	for (const char *p = f->buf + first; p < end;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t n = eol ? (size_t)(eol - p) + 2 : (size_t)(end - p);
		if (hop_by_hop(p, n))
			abort();
		if (provider && (!strncasecmp(p, "x-api-key:", 10) || !strncasecmp(p, "authorization:", 14)) &&
		    memmem(p, n, SENTINEL, strlen(SENTINEL)) && !memmem(p, n, KEY, strlen(KEY)))
			abort(); /* the provider's sentinel left in place */
		p += n;
	}
}

static void read_head(const char *data, size_t size, int origin_form, int provider)
{
	const char *blank = memmem(data, size, "\r\n\r\n", 4);
	struct strbuf head = STRBUF_INIT;
	strbuf_add(&head, data, blank ? (size_t)(blank - data) + 4 : size);
	if (!blank) { /* as read_head hands it over: up to the first blank line */
		strbuf_addstr(&head, "\r\n\r\n");
		strbuf_setlen(&head, (size_t)((char *)memmem(head.buf, head.len, "\r\n\r\n", 4) - head.buf) + 4);
	}
	struct egress_head h;
	if (egress_parse_head(head.buf, head.len, origin_form, SENTINEL, provider ? KEY : NULL, &h) == 0) {
		if (!h.method[0] || strspn(h.method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(h.method))
			abort();
		if (!origin_form)
			check_host(&h);
		if (h.is_connect != (!origin_form && !strcmp(h.method, "CONNECT")))
			abort();
		if (!h.is_connect)
			check_forward(&h, provider);
		else if (h.forward.len)
			abort();
	}
	egress_head_release(&h);
	strbuf_release(&head);
}

static void read_allowlist(const char *data, size_t size)
{
	char *list = xstrndup(data, size);
	struct egress_allow a = EGRESS_ALLOW_INIT;
	struct err e = ERR_INIT;
	size_t at = 0;
	int checked = egress_allow_check(list, &at, &e);
	err_clear(&e);
	int parsed = egress_allow_parse(&a, list, &e);
	err_clear(&e);
	if ((checked < 0) != (parsed < 0))
		abort(); /* the config check and the proxy read one text two ways */
	for (size_t i = 0; parsed == 0 && i < a.n; i++)
		if (a.rules[i].port < 0 || a.rules[i].port > 65535 || !a.rules[i].host)
			abort();
	egress_allow_release(&a);
	free(list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	const char *rest = (const char *)data + 1;
	switch (data[0] % 4) {
	case 0:
		read_head(rest, size - 1, 0, 0);
		break;
	case 1:
		read_head(rest, size - 1, 0, 1);
		break;
	case 2:
		read_head(rest, size - 1, 1, 1);
		break;
	default:
		read_allowlist(rest, size - 1);
		break;
	}
	return 0;
}
