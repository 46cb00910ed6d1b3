/* test_rpc.c — unit tests of lib/rpc.c's server→client notifications: the message event built without jansson
 * (rpc_add_message_event) is byte for byte the event jansson builds from the same fields (rpc_event_text). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"
#include "unit.h"
#include "banned.h"

/* The fast event and the jansson-built one for the same fields and data (compact JSON) must be the same bytes. */
static int same_event(const char *session_id, const char *message_type, const char *data_json)
{
	json_t *fields =
		json_pack("{s:s,s:s?,s:s}", "task_id", "t-1", "session_id", session_id, "message_type", message_type);
	json_object_set_new(fields, "data", json_loads(data_json, JSON_DECODE_ANY, NULL));
	char *built = rpc_event_text("message", fields);
	struct strbuf fast = STRBUF_INIT;
	strbuf_addstr(&fast, "ahead|"); /* appended to what the buffer holds */
	rpc_add_message_event(&fast, "t-1", session_id, message_type, data_json);
	int same = !strncmp(fast.buf, "ahead|", 6) && !strcmp(fast.buf + 6, built);
	if (!same)
		fprintf(stderr, "  fast:  %s\n  built: %s\n", fast.buf, built);
	strbuf_release(&fast);
	free(built);
	return same;
}

TEST(rpc_add_message_event_is_the_event_jansson_builds)
{
	CHECK(same_event("s-1", "assistant", "{\"text\":\"hello\",\"n\":[1,2,{\"x\":null}]}"));
	CHECK(same_event("s-1", "assistant", "{\"text\":\"ends like the envelope: null}}}\"}"));
	CHECK(same_event("s-1", "assistant", "null"));
	CHECK(same_event(NULL, "assistant", "\"a string\""));
	CHECK(same_event("s\"1\\", "a/b \x01\x1f\x7f\b\f\n\r\t", "1"));
	CHECK(same_event("caf\xc3\xa9", "\xf0\x9f\x98\x80 tool_use", "{\"k\":\"\\u0001\"}"));
	struct strbuf text = STRBUF_INIT;
	rpc_add_message_event(&text, "t-2", NULL, "x", "{\"k\":1}");
	CHECK_STR(text.buf, "{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":{\"type\":\"message\",\"data\":"
			    "{\"task_id\":\"t-2\",\"session_id\":null,\"message_type\":\"x\",\"data\":{\"k\":1}}}}");
	strbuf_release(&text);
}
