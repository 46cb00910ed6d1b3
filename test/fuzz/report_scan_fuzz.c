/* report_scan_fuzz.c — libFuzzer target and differential check of report_scan.h, the hand-written fast path
 * beside jansson for report_message lines. Whenever report_scan accepts a line, jansson must read the same line
 * (duplicates refused) as exactly that call with the same three strings, and data's compact form must be the
 * bytes report_scan produced. A disagreement aborts: the fast path may only ever refuse more, never differ. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json.h"
#include "report_scan.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_string(const json_t *obj, const char *key, const char *want)
{
	const json_t *v = json_object_get(obj, key);
	if (!json_is_string(v) || strlen(want) != json_string_length(v) || strcmp(json_string_value(v), want))
		abort();
}

static void check_against_jansson(const char *line, size_t len, const struct report_line *r)
{
	json_error_t error;
	json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &error);
	if (!json_is_object(root) || json_object_size(root) != 3)
		abort();
	same_string(root, "jsonrpc", "2.0");
	same_string(root, "method", "report_message");
	json_t *params = json_object_get(root, "params");
	if (!json_is_object(params) || json_object_size(params) != 4)
		abort();
	same_string(params, "session_token", report_line_field(r, r->token));
	same_string(params, "task_id", report_line_field(r, r->task_id));
	same_string(params, "message_type", report_line_field(r, r->message_type));
	char *compact = json_to_compact(json_object_get(params, "data"));
	if (!compact || strlen(compact) != r->data_len || memcmp(compact, report_line_field(r, r->data), r->data_len))
		abort();
	free(compact);
	json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct report_line r = REPORT_LINE_INIT;
	if (report_scan((const char *)data, size, &r))
		check_against_jansson((const char *)data, size, &r);
	report_line_release(&r);
	return 0;
}
