/* test_strbuf.c — unit tests of strbuf, strvec, err and json helpers.
 * Never depends on files outside its scratch directory. */
#include <fcntl.h>
#include <unistd.h>

#include "err.h"
#include "json.h"
#include "strbuf.h"
#include "strvec.h"
#include "unit.h"
#include "banned.h"

TEST(strbuf_grows_and_stays_terminated)
{
	struct strbuf sb = STRBUF_INIT;
	CHECK_STR(sb.buf, "");
	for (int i = 0; i < 10000; i++)
		strbuf_addch(&sb, 'a' + i % 26);
	CHECK_INT(sb.len, 10000);
	CHECK_INT(sb.buf[sb.len], 0);
	strbuf_addf(&sb, "%d-%s", 42, "x");
	CHECK(!strcmp(sb.buf + 10000, "42-x"));
	strbuf_remove_front(&sb, 10000);
	CHECK_STR(sb.buf, "42-x");
	strbuf_release(&sb);
	CHECK_INT(sb.len, 0);
}

TEST(strbuf_holds_nul_bytes)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_add(&sb, "a\0b", 3);
	CHECK_INT(sb.len, 3);
	CHECK(!memcmp(sb.buf, "a\0b", 4));
	size_t len;
	char *p = strbuf_detach(&sb, &len);
	CHECK_INT(len, 3);
	free(p);
	CHECK_INT(sb.len, 0);
}

TEST(strbuf_shell_quoting_survives_quotes)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_shell_quoted(&sb, "it's $(rm -rf /) `x`\n\"y\"");
	CHECK_STR(sb.buf, "'it'\\''s $(rm -rf /) `x`\n\"y\"'");
	strbuf_release(&sb);
}

TEST(strbuf_read_fd_enforces_limit)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/f", unit_tmpdir());
	int fd = open(path, O_CREAT | O_WRONLY, 0600);
	char block[4096];
	memset(block, 'x', sizeof(block));
	for (int i = 0; i < 100; i++)
		CHECK_INT(write(fd, block, sizeof(block)), sizeof(block));
	close(fd);
	struct strbuf sb = STRBUF_INIT;
	fd = open(path, O_RDONLY);
	CHECK_INT(strbuf_read_fd(&sb, fd, 1000), -2);
	CHECK_INT(sb.len, 1001);
	close(fd);
	strbuf_reset(&sb);
	CHECK_INT(strbuf_read_file(&sb, path, 0), 0);
	CHECK_INT(sb.len, 409600);
	strbuf_release(&sb);
}

TEST(strvec_push_find_and_env)
{
	struct strvec sv = STRVEC_INIT;
	CHECK(sv.v[0] == NULL);
	strvec_push(&sv, "a");
	strvec_pushf(&sv, "b%d", 2);
	CHECK_INT(sv.nr, 2);
	CHECK(sv.v[2] == NULL);
	CHECK_INT(strvec_find(&sv, "b2"), 1);
	CHECK_INT(strvec_find(&sv, "zz"), -1);
	strvec_setenv(&sv, "HOME", "/h");
	strvec_setenv(&sv, "HOME", "/h2");
	CHECK_STR(strvec_getenv(&sv, "HOME"), "/h2");
	CHECK(strvec_getenv(&sv, "HOM") == NULL);
	CHECK_INT(sv.nr, 3);
	strvec_pop(&sv);
	CHECK_INT(sv.nr, 2);
	strvec_clear(&sv);
	CHECK(sv.v[0] == NULL);
}

TEST(err_set_prefix_and_json)
{
	struct err e = ERR_INIT;
	CHECK(!err_is_set(&e));
	CHECK_INT(err_setd(&e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "params.url"), "bad %s", "url"), -1);
	err_prefix(&e, "clone");
	CHECK_STR(e.message, "clone: bad url");
	json_t *j = err_to_json(&e);
	CHECK_STR(json_string_value(json_object_get(j, "code")), "INVALID_PAYLOAD");
	CHECK_STR(json_string_value(json_object_get(json_object_get(j, "details"), "path")), "params.url");
	json_decref(j);
	err_set(&e, E_INTERNAL, "message that refers to %s", e.message);
	CHECK_STR(e.message, "message that refers to clone: bad url");
	err_clear(&e);
	CHECK(!err_is_set(&e));
}

/* xasprintf formats into a 256-byte stack buffer first and again on the heap when the result is longer: the same
 * text either way, on both sides of that edge. */
TEST(xasprintf_is_whole_on_both_sides_of_its_first_buffer)
{
	char want[600];
	for (int len = 250; len <= 262; len++) {
		memset(want, 'y', (size_t)len);
		want[len] = '\0';
		char *got = xasprintf("%s<%d>", want, len);
		CHECK_INT(strlen(got), (size_t)len + 5);
		CHECK(!strncmp(got, want, (size_t)len));
		CHECK_INT(atoi(got + len + 1), len);
		free(got);
	}
}

/* json_write_line dumps a line that fits into its 4 KiB stack buffer and builds a longer one on the heap: each side of
 * that edge, the bytes on the descriptor are the compact form and one newline, whole. */
TEST(json_write_line_is_whole_on_both_sides_of_its_buffer)
{
	for (size_t len = 4088; len <= 4100; len++) {
		char *text = xmalloc(len + 1);
		memset(text, 'x', len);
		text[len] = '\0';
		json_t *j = json_pack("[s]", text); /* dumps as ["xx…x"]: len + 4 bytes */
		char *path = xasprintf("%s/line", unit_tmpdir());
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		CHECK(fd >= 0);
		CHECK_INT(json_write_line(fd, j), 0);
		struct strbuf got = STRBUF_INIT;
		CHECK(lseek(fd, 0, SEEK_SET) == 0);
		CHECK(strbuf_read_fd(&got, fd, 0) == (ssize_t)(len + 5));
		char *want = json_to_compact(j);
		CHECK(!strncmp(got.buf, want, len + 4) && got.buf[len + 4] == '\n');
		free(want);
		strbuf_release(&got);
		close(fd);
		free(path);
		json_decref(j);
		free(text);
	}
}

TEST(json_parse_reports_position_and_rejects_duplicates)
{
	struct err e = ERR_INIT;
	CHECK(json_parse("{\"a\":1,\"a\":2}", 13, &e) == NULL);
	CHECK_STR(e.code, E_INVALID_JSON);
	CHECK(json_integer_value(json_object_get(e.details, "line")) == 1);
	err_clear(&e);
	json_t *j = json_parse("{\"k\":\"v\"}", 9, &e);
	CHECK(j != NULL);
	CHECK_STR(json_get_str(j, "k"), "v");
	char *s = json_to_compact(j);
	CHECK_STR(s, "{\"k\":\"v\"}");
	free(s);
	json_decref(j);
}

TEST(strbuf_next_line_walks_the_complete_lines_and_one_removal_drops_them)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "one\n\ntwo\npart");
	size_t done = 0, len, lines = 0;
	const char *line;
	static const char *const want[] = { "one\n", "\n", "two\n" };
	while ((line = strbuf_next_line(&sb, &done, &len))) {
		CHECK(lines < ARRAY_SIZE(want) && len == strlen(want[lines]) && !memcmp(line, want[lines], len));
		lines++;
	}
	CHECK_INT(lines, 3);
	CHECK_INT(done, 9);
	size_t moved = strbuf_moved_bytes();
	strbuf_remove_front(&sb, done);
	CHECK_STR(sb.buf, "part");
	CHECK_INT(strbuf_moved_bytes() - moved, 4);
	strbuf_remove_front(&sb, 0); /* nothing handled: nothing moves */
	CHECK_INT(strbuf_moved_bytes() - moved, 4);
	strbuf_release(&sb);
}

/* Blank lines read in 64 KiB pieces as the line readers do: the bytes moved stay below the bytes read (one removal
 * per line moved the rest of the buffer each time: about 2^31 bytes per piece). */
TEST(strbuf_line_reading_moves_each_byte_at_most_once)
{
	struct strbuf sb = STRBUF_INIT;
	char piece[65536];
	memset(piece, '\n', sizeof(piece));
	memcpy(piece + sizeof(piece) - 3, "abc", 3); /* a partial line, ended by the next piece */
	size_t moved = strbuf_moved_bytes(), lines = 0, total = 0;
	for (int i = 0; i < 4; i++) {
		strbuf_add(&sb, piece, sizeof(piece));
		total += sizeof(piece);
		size_t done = 0, len;
		while (strbuf_next_line(&sb, &done, &len))
			lines++;
		strbuf_remove_front(&sb, done);
	}
	CHECK_INT(lines, 4 * (sizeof(piece) - 3));
	CHECK(strbuf_moved_bytes() - moved <= total);
	strbuf_release(&sb);
}
