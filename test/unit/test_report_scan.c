/* test_report_scan.c — unit tests of report_scan: every line it accepts, jansson reads as the same call with
 * the same data text; the usual lines are accepted; tricky and mutated lines (a fuzz-like loop) never differ. */
#include <jansson.h>
#include <stdlib.h>

#include "json.h"
#include "report_scan.h"
#include "strbuf.h"
#include "unit.h"
#include "banned.h"

/* What jansson makes of line as a report_message notification: 1 with the fields, else 0. */
static int jansson_reads(const char *line, size_t len, char **token, char **task, char **type, char **data)
{
	json_error_t je;
	json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return 0;
	json_t *params = json_object_get(j, "params");
	int ok = json_is_object(j) && json_object_size(j) == 3 && json_is_object(params) &&
		 json_object_size(params) == 4 && json_is_string(json_object_get(j, "jsonrpc")) &&
		 !strcmp(json_get_str(j, "jsonrpc"), "2.0") && json_is_string(json_object_get(j, "method")) &&
		 !strcmp(json_get_str(j, "method"), "report_message") &&
		 json_is_string(json_object_get(params, "session_token")) &&
		 json_is_string(json_object_get(params, "task_id")) &&
		 json_is_string(json_object_get(params, "message_type")) && json_object_get(params, "data");
	if (ok) {
		*token = strdup(json_get_str(params, "session_token"));
		*task = strdup(json_get_str(params, "task_id"));
		*type = strdup(json_get_str(params, "message_type"));
		*data = json_to_compact(json_object_get(params, "data"));
	}
	json_decref(j);
	return ok;
}

/* Checks the promise on one line; returns report_scan's answer. */
static int agrees(const char *line, size_t len, int line_no)
{
	struct report_line r = REPORT_LINE_INIT;
	int fast = report_scan(line, len, &r);
	char *token = NULL, *task = NULL, *type = NULL, *data = NULL;
	int slow = jansson_reads(line, len, &token, &task, &type, &data);
	if (fast && !slow)
		unit_fail(__FILE__, line_no, "report_scan accepted what jansson refuses: %.*s", (int)len, line);
	if (fast && slow &&
	    (strcmp(report_line_field(&r, r.token), token) || strcmp(report_line_field(&r, r.task_id), task) ||
	     strcmp(report_line_field(&r, r.message_type), type) || strcmp(report_line_field(&r, r.data), data) ||
	     r.data_len != strlen(data)))
		unit_fail(__FILE__, line_no, "report_scan and jansson differ on %.*s: data %s vs %s", (int)len, line,
			  report_line_field(&r, r.data), data);
	free(token), free(task), free(type), free(data);
	report_line_release(&r);
	return fast;
}

static char *line_with(const char *data)
{
	struct strbuf b = STRBUF_INIT;
	strbuf_addf(&b,
		    "{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"eyJ.x.y\","
		    "\"task_id\":\"t1\",\"message_type\":\"assistant\",\"data\":%s}}",
		    data);
	return strbuf_detach(&b, NULL);
}

#define ACCEPTS(l) CHECK(agrees((l), strlen(l), __LINE__) == 1)
#define REFUSES(l) CHECK(agrees((l), strlen(l), __LINE__) == 0)

/* The three strings are read 8 bytes at a time where they are plain ASCII: every length, and an odd byte at every
 * place (inside a word, across two, in the tail), must read as byte by byte does — as jansson does. */
TEST(report_scan_reads_strings_word_by_word_as_jansson_does)
{
	static const struct {
		const char *bytes;
		int plain;
	} odd[] = { { "", 1 },	   { "\x01", 0 }, { "\x1f", 0 }, { "\\n", 0 },	{ "\xff", 0 }, { "\xc3\xa9", 1 },
		    { "\x7f", 1 }, { " ", 1 },	  { "~", 1 },	 { "\xc3", 0 }, { "\\\"", 0 }, { "!#[]", 1 } };
	for (size_t k = 0; k < ARRAY_SIZE(odd); k++)
		for (size_t at = 0; at <= 40; at++) {
			char token[128], line[512];
			snprintf(token, sizeof(token), "%.*s%s%.*s", (int)at,
				 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ", odd[k].bytes, (int)(40 - at),
				 "0123456789012345678901234567890123456789");
			snprintf(line, sizeof(line),
				 "{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"%"
				 "s\","
				 "\"task_id\":\"%.*s\",\"message_type\":\"assistant\",\"data\":{}}}",
				 token, (int)at, token);
			CHECK(agrees(line, strlen(line), __LINE__) == odd[k].plain);
		}
}

TEST(report_scan_accepts_usual_lines_as_jansson_reads_them)
{
	ACCEPTS("{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"a.b.c\",\"task_"
		"id\":\"t\","
		"\"message_type\":\"assistant\",\"data\":{\"i\":1,\"text\":\"hello from the bench\"}}}");
	ACCEPTS("{ \"params\" : { \"data\" : [ 1 , -2 , true , false , null , \"x\" , { } , [ ] ] , \"message_type\" : "
		"\"t\" ,"
		" \"task_id\" : \"t\" , \"session_token\" : \"k\" } , \"method\" : \"report_message\" , \"jsonrpc\" : "
		"\"2.0\" }\r\t ");
	const char *data[] = {
		"\"plain\"",
		"0",
		"-1",
		"123456789012345678",
		"-123456789012345678",
		"1234567890123456789",
		"9223372036854775807",
		"-9223372036854775808",
		"-0",
		"1.5",
		"1e3",
		"1E3",
		"0.0",
		"-0.0",
		"1e-400",
		"-1.0e-400",
		"4.9e-324",
		"1.7976931348623157e308",
		"1764052345.123456",
		"[0.1,0.2,0.30000000000000004,1e-7,123e+07,5E-0001,1e22,1e21,1e16,1e17]",
		"123456789012345678901234567890123456789012345678901234567890.5e-10",
		"0.000000000000000000000000000000000000000000000000000000000000000000000000001",
		"1e00000000000000000000000000000000000000000000000000000000000000000000000000001",
		"{\"a\":{\"b\":{\"c\":[[[]]]}}}",
		"\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t\"",
		"\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\\u001f\\u0001\\u007f\"",
		"\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f\"",
		"{\"\":\"\",\"a\\/b\":1,\"a/c\":2}",
		"{\"k\":\"\\u005c\\u0022\"}",
		"{\"a\":1,\"A\":2,\"\\u00e9\":3,\"\xc3\xa8\":4}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(data); i++) {
		char *l = line_with(data[i]);
		ACCEPTS(l);
		free(l);
	}
}

/* data's compact form as report_scan writes it (NULL: refused). */
static char *compact_data(const char *data)
{
	char *l = line_with(data);
	struct report_line r = REPORT_LINE_INIT;
	char *out = report_scan(l, strlen(l), &r) ? strdup(report_line_field(&r, r.data)) : NULL;
	report_line_release(&r);
	free(l);
	return out;
}

#define COMPACT(data, want)                                                                                            \
	do {                                                                                                           \
		char *got_ = compact_data(data);                                                                       \
		CHECK(got_ != NULL);                                                                                   \
		if (got_)                                                                                              \
			CHECK_STR(got_, want);                                                                         \
		free(got_);                                                                                            \
	} while (0)

TEST(report_scan_writes_numbers_as_jansson_does)
{
	COMPACT("-0", "0");
	COMPACT("[1.5,-2.25]", "[1.5,-2.25]");
	COMPACT("1e3", "1000.0");
	COMPACT("-0.0", "-0.0");
	COMPACT("1e-400", "0.0");
	COMPACT("-1.0e-400", "-0.0");
	COMPACT("0.1", "0.10000000000000001");
	COMPACT("1e-7", "9.9999999999999995e-8");
	COMPACT("1e22", "1e22");
	COMPACT("123e+07", "1230000000.0");
	COMPACT("1.7976931348623157e308", "1.7976931348623157e308");
	COMPACT("12345678901234567890123456789.5", "1.2345678901234568e28");
	COMPACT("9223372036854775807", "9223372036854775807");
	CHECK(compact_data("1e400") == NULL);
	CHECK(compact_data("01") == NULL);
	CHECK(compact_data("9223372036854775808") == NULL);
}

TEST(report_scan_leaves_the_unusual_to_jansson)
{
	const char *data[] = {
		/* jansson refuses these */
		"{\"a\":1,\"a\":2}",
		"{\"a\":1,\"\\u0061\":2}",
		"{\"\\/\":1,\"/\":2}",
		"\"\\u0000\"",
		"\"\\ud800\"",
		"\"\\udc00\"",
		"\"\\ud800\\u0041\"",
		"\"\xc0\xaf\"",
		"\"\xed\xa0\x80\"",
		"\"\xf4\x90\x80\x80\"",
		"\"\xe2\x82\"",
		"\"tab\there\"",
		"\"\\x\"",
		"\"\\u12\"",
		"01",
		"-",
		"-01",
		"[1,]",
		"{\"a\":1,}",
		"{\"a\"}",
		"tru",
		"truex",
		"nul",
		"[1 2]",
		"{1:2}",
		"\"open",
		"[",
		"{",
		"1}",
		"",
		"+1",
		"\"\\'\"",
		"1.",
		"1.e3",
		".5",
		"1e",
		"1e+",
		"1E-",
		"-.5",
		"0x10",
		"1e400",
		"-1E400",
		"1.7976931348623159e308",
		"9223372036854775808",
		"-9223372036854775809",
		"99999999999999999999",
		"00.5",
		"-00",
		"1.5.5",
		"Infinity",
		"NaN",
		/* jansson reads these; left to it here */
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	};
	for (size_t i = 0; i < ARRAY_SIZE(data); i++) {
		char *l = line_with(data[i]);
		REFUSES(l);
		free(l);
	}
	REFUSES("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"report_message\",\"params\":{\"session_token\":\"k\","
		"\"task_id\":\"t\","
		"\"message_type\":\"m\",\"data\":1}}");
	REFUSES("{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"method\":\"report_message\",\"params\":{"
		"\"session_token\":"
		"\"k\",\"task_id\":\"t\",\"message_type\":\"m\",\"data\":1}}");
	REFUSES("{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"k\",\"task_id\":"
		"\"t\","
		"\"task_id\":\"u\",\"message_type\":\"m\",\"data\":1}}");
	REFUSES("{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"k\",\"task_id\":"
		"\"t\","
		"\"message_type\":\"m\"}}");
	REFUSES("{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"k\",\"task_id\":"
		"\"t\","
		"\"message_type\":\"m\",\"data\":1,\"extra\":2}}");
	REFUSES("{\"jsonrpc\":\"2.0\",\"method\":\"heartbeat\",\"params\":{\"session_token\":\"k\",\"task_id\":\"t\","
		"\"message_type\":\"m\",\"data\":1}}");
	REFUSES("{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"k\\u0041\",\"task_"
		"id\":\"t\","
		"\"message_type\":\"m\",\"data\":1}}");
	REFUSES("{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"k\",\"task_id\":"
		"\"t\","
		"\"message_type\":\"m\",\"data\":1}} x");
	REFUSES("[{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"k\",\"task_id\":"
		"\"t\","
		"\"message_type\":\"m\",\"data\":1}}]");
	/* a NUL inside the line, which jansson refuses */
	static const char nul[] =
		"{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"k\",\"task_id\":"
		"\"t\",\"message_type\":\"m\",\"data\":\"a\0b\"}}";
	CHECK(agrees(nul, sizeof(nul) - 1, __LINE__) == 0);
}

TEST(report_scan_compact_matches_jansson_on_mutated_lines)
{
	static const char *pieces[] = { "\\",	"\"",	"u", "d83d", "de00", "D800",	"00",	   "{",	   "}",
					"[",	"]",	",", ":",    " ",    "\xc3",	"\xa9",	   "\xed", "\xa0",
					"\xf0", "\x9f", "0", "1",    "-",    ".",	"e",	   "true", "null",
					"\\u",	"\\n",	"a", "\x7f", "\x01", "\"a\":1", "\"a\":2", "\\/",  "/",
					"E",	"+",	"9", "400",  "e-",   "0.0" };
	const char *seeds[] = {
		"{\"i\":1,\"text\":\"hello from the bench\"}",
		"[\"caf\xc3\xa9\",{\"k\":\"\\ud83d\\ude00\"},-7,true,null]",
		"{\"a\":{\"a\":[1,{\"b\":\"\\n\\t\\\"\"}]},\"b\":\"x\\/y\"}",
		"\"\\u00e9\\u0001 \xe2\x82\xac\"",
		"{\"t\":1764052345.123456,\"n\":[-0,1e3,-2.5E-3,0.1]}",
	};
	unsigned seed = 12345;
	int accepted = 0, tried = 0;
	for (int round = 0; round < 200000; round++) {
		struct strbuf in = STRBUF_INIT;
		strbuf_addstr(&in, seeds[round % ARRAY_SIZE(seeds)]);
		int edits = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 4;
		for (int k = 0; k < edits; k++) {
			seed = seed * 1103515245 + 12345;
			size_t at = (seed >> 8) % (in.len + 1);
			seed = seed * 1103515245 + 12345;
			int op = (int)(seed >> 16) % 3;
			const char *piece = pieces[(seed >> 4) % ARRAY_SIZE(pieces)];
			struct strbuf next = STRBUF_INIT;
			strbuf_add(&next, in.buf, at);
			if (op != 2)
				strbuf_addstr(&next, piece);
			size_t skip = op == 0 ? 0 : (size_t)((seed >> 20) % 3);
			if (at + skip > in.len)
				skip = in.len - at;
			strbuf_add(&next, in.buf + at + skip, in.len - at - skip);
			strbuf_release(&in);
			in = next;
		}
		struct strbuf out = STRBUF_INIT;
		int fast = report_scan_compact(in.buf, in.len, &out);
		json_error_t je;
		json_t *j = json_loadb(in.buf, in.len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
		tried++;
		if (fast) {
			accepted++;
			char *text = j ? json_to_compact(j) : NULL;
			if (!text || strcmp(text, out.buf) || out.len != strlen(text))
				unit_fail(__FILE__, __LINE__, "on %s: fast %s, jansson %s", in.buf, out.buf,
					  text ? text : "(refused)");
			free(text);
			char *l = line_with(in.buf); /* the same as a whole line */
			CHECK(agrees(l, strlen(l), __LINE__) == 1);
			free(l);
		} else {
			CHECK_INT(out.len, 0);
		}
		if (j)
			json_decref(j);
		strbuf_release(&out);
		strbuf_release(&in);
	}
	CHECK(accepted > tried / 20); /* the loop exercises the accepting side too */
}
