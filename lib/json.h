/* json.h — small helpers on jansson: compact one-line output, parsing into struct err, typed getters.
 * Never prints anything but what it is asked to write; never accepts NaN or duplicate keys. */
#ifndef AGOR_JSON_H
#define AGOR_JSON_H

#include <jansson.h>
#include <stdio.h>

#include "err.h"
#include "strbuf.h"

static inline void cleanup_json(json_t **j)
{
	if (*j)
		json_decref(*j);
}
#define _cleanup_json_ __attribute__((cleanup(cleanup_json)))

/* Compact UTF-8 serialisation (no newline); caller frees. */
char *json_to_compact(const json_t *j);
/* Appends the compact form to sb. */
void json_add_to_strbuf(struct strbuf *sb, const json_t *j);
/* Appends s (valid UTF-8) as a JSON string exactly as json_to_compact() writes it; NULL as null. */
void json_add_string_to_strbuf(struct strbuf *sb, const char *s);
/* Writes the compact form plus '\n' to fd with one write loop; -1 with errno on failure. */
int json_write_line(int fd, const json_t *j);
/* Parses exactly one JSON value (duplicate keys rejected); on failure sets E_INVALID_JSON with
 * details {line, column, position, reason} and returns NULL. */
json_t *json_parse(const char *text, size_t len, struct err *e);
/* A JSON string of arbitrary bytes (a child's output): valid UTF-8 is kept, every byte of an
 * invalid sequence becomes U+FFFD. */
json_t *json_string_lossy(const char *s, size_t len);
/* Typed lookup that returns NULL when key is missing or of another type. */
const char *json_get_str(const json_t *obj, const char *key);
/* The first key of obj that the NULL-terminated list allowed does not name, or NULL when there is none. */
const char *json_unknown_key(json_t *obj, const char *const *allowed);

#endif
