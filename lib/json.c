/* json.c — the helpers of json.h.
 * Never loses bytes on partial writes; never returns a partially parsed value. */
#include <errno.h>
#include <string.h>

#include "fsutil.h"
#include "json.h"
#include "banned.h"

char *json_to_compact(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!s)
		abort(); /* only on allocation failure */
	return s;
}

static int add_chunk(const char *buffer, size_t size, void *data)
{
	strbuf_add(data, buffer, size);
	return 0;
}

void json_add_to_strbuf(struct strbuf *sb, const json_t *j)
{
	json_dump_callback(j, add_chunk, sb, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* jansson's escape of byte c (below 0x20, a quote or a backslash) */
static void add_escape(struct strbuf *sb, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";
	static const char short_form[] = {
		['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'
	};
	char seq[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
	if (c < sizeof(short_form) && short_form[c]) {
		seq[1] = short_form[c];
		strbuf_add(sb, seq, 2);
	} else {
		strbuf_add(sb, seq, sizeof(seq));
	}
}

void json_add_string_to_strbuf(struct strbuf *sb, const char *s)
{
	if (!s) {
		strbuf_addstr(sb, "null");
		return;
	}
	strbuf_addch(sb, '"');
	for (;;) {
		const char *run = s;
		while ((unsigned char)*s >= 0x20 && *s != '"' && *s != '\\')
			s++;
		strbuf_add(sb, run, (size_t)(s - run));
		if (!*s)
			break;
		add_escape(sb, (unsigned char)*s++);
	}
	strbuf_addch(sb, '"');
}

int json_write_line(int fd, const json_t *j)
{
	/* a line that fits is dumped on the stack: an executor's result line then costs it no allocation (in a
	 * short run, each new size class is a fresh page the allocator maps, faults in and unmaps again) */
	char line[4096];
	size_t n = json_dumpb(j, line, sizeof(line) - 1, JSON_COMPACT | JSON_ENCODE_ANY);
	if (n > 0 && n < sizeof(line)) {
		line[n] = '\n';
		return fs_write_all(fd, line, n + 1);
	}
	struct strbuf sb = STRBUF_INIT;
	json_add_to_strbuf(&sb, j);
	strbuf_addch(&sb, '\n');
	int rc = fs_write_all(fd, sb.buf, sb.len);
	int saved = errno;
	strbuf_release(&sb);
	errno = saved;
	return rc;
}

json_t *json_parse(const char *text, size_t len, struct err *e)
{
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (j)
		return j;
	json_t *details = json_pack("{s:i,s:i,s:i,s:s}", "line", je.line, "column", je.column, "position", je.position,
				    "reason", je.text);
	err_setd(e, E_INVALID_JSON, details, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
	return NULL;
}

const char *json_get_str(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *json_unknown_key(json_t *obj, const char *const *allowed)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		size_t i = 0;
		while (allowed[i] && strcmp(allowed[i], key))
			i++;
		if (!allowed[i])
			return key;
	}
	return NULL;
}

json_t *json_string_lossy(const char *s, size_t len)
{
	if (!s)
		return json_string("");
	json_t *j = json_stringn(s, len);
	if (j)
		return j;
	struct strbuf sb = STRBUF_INIT;
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_sequence_length(u + i, len - i);
		if (n) {
			strbuf_add(&sb, s + i, n);
			i += n;
		} else {
			strbuf_addstr(&sb, "\xEF\xBF\xBD");
			i++;
		}
	}
	j = json_stringn(sb.buf ? sb.buf : "", sb.len);
	strbuf_release(&sb);
	return j;
}
