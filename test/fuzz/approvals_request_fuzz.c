/* approvals_request_fuzz.c — libFuzzer target over what `approvals serve` reads from its socket: one JSON line a
 * process inside the sandbox wrote (json_parse + appr_request_check), and the prompt text the UI then shows of
 * it (appr_format_argv, appr_display_escape). Invariants: a refusal names a field; an accepted request, signed
 * again by appr_request_envelope, passes the same check (client and server agree on the shape); and the text
 * shown on the operator's terminal holds no control character, C1 control or bidi override whatever the agent
 * put in argv, cwd or an executable's path. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "approvals_socket.h"
#include "json.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Nothing that a terminal would act on: C0, DEL, C1 (U+0080–009F), bidi embeddings, overrides and isolates. */
static void check_terminal_safe(const struct strbuf *sb)
{
	const unsigned char *s = (const unsigned char *)sb->buf;
	for (size_t i = 0; i < sb->len; i++) {
		if (s[i] < 0x20 || s[i] == 0x7f)
			abort();
		if (s[i] == 0xc2 && i + 1 < sb->len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f)
			abort();
		if (s[i] == 0xe2 && i + 2 < sb->len && s[i + 1] == 0x80 && s[i + 2] >= 0xaa && s[i + 2] <= 0xae)
			abort();
		if (s[i] == 0xe2 && i + 2 < sb->len && s[i + 1] == 0x81 && s[i + 2] >= 0xa6 && s[i + 2] <= 0xa9)
			abort();
	}
}

static void check_display(const json_t *request)
{
	struct strbuf out = STRBUF_INIT;
	appr_format_argv(json_object_get(request, "argv"), &out);
	check_terminal_safe(&out);
	strbuf_reset(&out);
	appr_display_escape(json_string_value(json_object_get(request, "cwd")), &out);
	check_terminal_safe(&out);
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(request, "executables"), i, x)
	{
		strbuf_reset(&out);
		appr_display_escape(json_string_value(json_object_get(x, "path")), &out);
		check_terminal_safe(&out);
	}
	strbuf_release(&out);
}

static void check_resigned(const json_t *line, json_t *request)
{
	json_t *again = appr_request_envelope(TOKEN, json_string_value(json_object_get(line, "id")),
					      json_string_value(json_object_get(line, "nonce")),
					      json_integer_value(json_object_get(line, "ts")), json_incref(request));
	struct err e = ERR_INIT;
	if (appr_request_check(again, &e) < 0)
		abort();
	json_decref(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = ERR_INIT;
	json_t *line = json_parse((const char *)data, size, &e);
	if (!line) {
		err_clear(&e);
		return 0;
	}
	if (appr_request_check(line, &e) < 0) {
		if (!e.message)
			abort();
	} else {
		json_t *request = json_object_get(line, "request");
		check_display(request);
		check_resigned(line, request);
	}
	err_clear(&e);
	json_decref(line);
	return 0;
}
