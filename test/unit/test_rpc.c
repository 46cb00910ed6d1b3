/* test_rpc.c — unit tests of lib/rpc.c's server→client notifications: an event carrying an already serialised
 * value (rpc_event_text_raw) reads back as the same event built from parsed data (rpc_event_text). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"
#include "unit.h"
#include "banned.h"

/* The raw event and the jansson-built one for the same data must parse to equal objects. */
static int same_event(const char *raw_json)
{
	json_t *fields = json_pack("{s:s,s:s}", "task_id", "t-1", "message_type", "assistant");
	char *raw = rpc_event_text_raw("message", json_deep_copy(fields), "data", raw_json);
	json_object_set_new(fields, "data", json_loads(raw_json, JSON_DECODE_ANY, NULL));
	char *built = rpc_event_text("message", fields);
	json_t *a = json_loads(raw, 0, NULL), *b = json_loads(built, 0, NULL);
	int same = a && b && json_equal(a, b);
	json_decref(a);
	json_decref(b);
	free(raw);
	free(built);
	return same;
}

TEST(rpc_event_text_raw_splices_the_value_as_data_s_last_member)
{
	CHECK(same_event("{\"text\":\"hello\",\"n\":[1,2,{\"x\":null}]}"));
	CHECK(same_event("{\"text\":\"ends like the envelope: null}}}\"}"));
	CHECK(same_event("null"));
	CHECK(same_event("\"a string\""));
	json_t *fields = json_pack("{s:i,s:s}", "data", 0, "task_id", "t-2"); /* a data member given too: replaced */
	char *raw = rpc_event_text_raw("message", fields, "data", "{\"k\":1}");
	CHECK_STR(raw, "{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":{\"type\":\"message\",\"data\":"
		       "{\"task_id\":\"t-2\",\"data\":{\"k\":1}}}}");
	free(raw);
}
