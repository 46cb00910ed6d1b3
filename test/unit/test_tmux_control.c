/* test_tmux_control.c — unit tests of lib/tmux_control: every split of a transcript gives the same events,
 * escapes decode to raw bytes, long lines stream in bounded memory, and a real `tmux -C` is understood. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "strbuf.h"
#include "tmux_control.h"
#include "unit.h"
#include "banned.h"

static const char *const kind_names[] = { "output",	  "begin",	     "data",	      "end",  "window-add",
					  "window-close", "session-changed", "layout-change", "exit", "other",
					  "overlong" };

/* Events rendered as text; adjacent chunks of one line are joined, so any split renders the same. */
struct recorder {
	struct strbuf text;
	int open; /* a chunked line is being joined */
	size_t max_chunk;
};

static void add_bytes(struct strbuf *sb, const uint8_t *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (d[i] < 0x20 || d[i] >= 0x7f || d[i] == '\\')
			strbuf_addf(sb, "\\x%02x", d[i]);
		else
			strbuf_addch(sb, (char)d[i]);
}

static void record(void *arg, const struct tmux_event *ev)
{
	struct recorder *r = arg;
	if (ev->len > r->max_chunk)
		r->max_chunk = ev->len;
	if (ev->kind == TMUX_OUTPUT || ev->kind == TMUX_BLOCK_DATA) {
		if (!r->open)
			strbuf_addf(&r->text, "%s %s [", kind_names[ev->kind], ev->id);
		add_bytes(&r->text, ev->data, ev->len);
		r->open = !ev->eol;
		if (ev->eol)
			strbuf_addstr(&r->text, "]\n");
		return;
	}
	strbuf_addf(&r->text, "%s id=%s arg=%s n=%ld f=%d e=%d\n", kind_names[ev->kind], ev->id, ev->arg, ev->number,
		    ev->flags, ev->error);
}

static const char transcript[] = "%begin 1700000000 1 0\n"
				 "first line of output\n"
				 "%end 1700000000 2 0\n" /* another number: still data */
				 "%end 1700000000 1 0\n"
				 "%output %1 h\\303\\251llo\\001\\134 world\\015\\012\n"
				 "%extended-output %2 15 : late\\033[0m\n"
				 "%window-add @3\n"
				 "%session-changed $1 main session\n"
				 "%layout-change @3 b25d,80x24,0,0,2 b25d,80x24,0,0,2 *\n"
				 "%begin 1700000001 7 1\n"
				 "no such thing\n"
				 "%error 1700000001 7 1\n"
				 "%window-close @3\n"
				 "%sessions-changed\r\n"
				 "%exit server exited\n";

static const char expected[] = "begin id= arg= n=1 f=0 e=0\n"
			       "data  [first line of output]\n"
			       "data  [%end 1700000000 2 0]\n"
			       "end id= arg= n=1 f=0 e=0\n"
			       "output %1 [h\\xc3\\xa9llo\\x01\\x5c world\\x0d\\x0a]\n"
			       "output %2 [late\\x1b[0m]\n"
			       "window-add id=@3 arg= n=0 f=0 e=0\n"
			       "session-changed id=$1 arg=main session n=0 f=0 e=0\n"
			       "layout-change id=@3 arg=b25d,80x24,0,0,2 n=0 f=0 e=0\n"
			       "begin id= arg= n=7 f=1 e=0\n"
			       "data  [no such thing]\n"
			       "end id= arg= n=7 f=0 e=1\n"
			       "window-close id=@3 arg= n=0 f=0 e=0\n"
			       "other id= arg=%sessions-changed n=0 f=0 e=0\n"
			       "exit id= arg=server exited n=0 f=0 e=0\n";

static char *parse_in_pieces(const char *text, size_t len, size_t piece)
{
	struct recorder r = { STRBUF_INIT, 0, 0 };
	struct tmux_parser p;
	tmux_parser_init(&p, record, &r);
	for (size_t at = 0; at < len; at += piece)
		tmux_parser_feed(&p, text + at, at + piece <= len ? piece : len - at);
	tmux_parser_release(&p);
	return strbuf_detach(&r.text, NULL);
}

/* The events of text cut into pieces of every size below 20, then every step-th size up to max, are whole's. */
static void check_every_cut(const struct strbuf *text, const char *whole, size_t max, size_t step)
{
	for (size_t piece = 1; piece <= max; piece += piece < 20 ? 1 : step) {
		char *got = parse_in_pieces(text->buf, text->len, piece);
		if (strcmp(got, whole))
			unit_fail(__FILE__, __LINE__, "pieces of %zu:\n%s\nwhole:\n%s", piece, got, whole);
		free(got);
	}
}

TEST(tmux_parser_gives_the_same_events_for_every_split)
{
	size_t len = strlen(transcript);
	for (size_t piece = 1; piece <= len; piece++) {
		char *got = parse_in_pieces(transcript, len, piece);
		if (strcmp(got, expected))
			unit_fail(__FILE__, __LINE__, "pieces of %zu:\n%s\nexpected:\n%s", piece, got, expected);
		free(got);
		if (piece > 64)
			piece += 37; /* the small splits are the interesting ones */
	}
}

/* A line of a block or of %output long enough to be streamed, ending in "\r\n" right where the head fills (or
 * later): its '\r' is dropped whether the line arrives whole or cut anywhere (the fuzzer's find). */
TEST(tmux_parser_drops_a_line_end_cr_wherever_the_input_is_cut)
{
	for (size_t extra = 0; extra < 3; extra++) {
		struct strbuf text = STRBUF_INIT;
		strbuf_addstr(&text, "%begin 1 2 0\n");
		for (size_t i = 0; i + 1 < TMUX_HEAD_MAX + extra; i++)
			strbuf_addch(&text, 'b');
		strbuf_addstr(&text, "\r\n%end 1 2 0\n%output %1 ");
		for (size_t i = 0; i + 1 < TMUX_HEAD_MAX + extra; i++)
			strbuf_addch(&text, 'o');
		strbuf_addstr(&text, "\r\n");
		char *whole = parse_in_pieces(text.buf, text.len, text.len);
		CHECK(!strstr(whole, "\\x0d]")); /* no line keeps its final '\r' */
		CHECK(strstr(whole, "bb]\n") != NULL &&
		      strstr(whole, "oo]\n") != NULL); /* both lines ended, '\r' dropped */
		check_every_cut(&text, whole, 300, 37);
		free(whole);
		strbuf_release(&text);
	}
}

/* A block's end line exactly as long as the head (a %error padded to TMUX_HEAD_MAX bytes, with or without '\r'):
 * whole, it ends the block; cut where the head fills, it must too — the head is classified only once the line is
 * known to go on past it (the fuzzer's find). */
TEST(tmux_parser_ends_a_block_with_a_head_sized_end_line_wherever_cut)
{
	for (size_t cr = 0; cr < 2; cr++) {
		struct strbuf text = STRBUF_INIT;
		strbuf_addstr(&text, "%begin 1 2 0\ndata\n");
		size_t start = text.len;
		strbuf_addstr(&text, "%error 1 2 0");
		while (text.len - start < TMUX_HEAD_MAX - cr)
			strbuf_addch(&text, ' ');
		strbuf_addstr(&text, cr ? "\r\nafter\n" : "\nafter\n");
		char *whole = parse_in_pieces(text.buf, text.len, text.len);
		CHECK(strstr(whole, "end") != NULL);
		check_every_cut(&text, whole, text.len, 13);
		free(whole);
		strbuf_release(&text);
	}
}

TEST(tmux_parser_streams_a_huge_output_line_in_bounded_memory)
{
	size_t n = 3u << 20;
	struct strbuf in = STRBUF_INIT;
	strbuf_addstr(&in, "%output %9 ");
	for (size_t i = 0; i < n; i++)
		strbuf_addstr(&in, i % 1000 == 999 ? "\\012" : "x");
	strbuf_addstr(&in, "\n%exit\n");
	struct recorder r = { STRBUF_INIT, 0, 0 };
	struct tmux_parser p;
	tmux_parser_init(&p, record, &r);
	for (size_t at = 0; at < in.len; at += 65536)
		tmux_parser_feed(&p, in.buf + at, at + 65536 <= in.len ? 65536 : in.len - at);
	CHECK(p.line.alloc <= 4 * TMUX_HEAD_MAX);
	CHECK(r.max_chunk <= 4096);
	CHECK_CONTAINS(r.text.buf, "]\nexit id= arg= n=0");
	CHECK(!strncmp(r.text.buf, "output %9 [xxx", 14));
	tmux_parser_release(&p);
	strbuf_release(&r.text);
	strbuf_release(&in);
}

TEST(tmux_parser_drops_an_overlong_notification_and_goes_on)
{
	struct strbuf in = STRBUF_INIT;
	strbuf_addstr(&in, "%unknown-thing ");
	for (size_t i = 0; i < TMUX_LINE_MAX + 10; i++)
		strbuf_addch(&in, 'y');
	strbuf_addstr(&in, "\n%window-add @1\n");
	char *got = parse_in_pieces(in.buf, in.len, 1000);
	CHECK_CONTAINS(got, "overlong id= arg=%unknown-thing yyy");
	CHECK_CONTAINS(got, "\nwindow-add id=@1");
	free(got);
	strbuf_release(&in);
}

TEST(tmux_encoders_hex_every_byte_and_check_their_arguments)
{
	struct strbuf sb = STRBUF_INIT;
	CHECK_INT(tmux_encode_send_keys(&sb, "%1", (const uint8_t *)"a;\x03\n", 4), 0);
	CHECK_STR(sb.buf, "send-keys -t %1 -H 61 3b 03 0a\n");
	strbuf_reset(&sb);
	CHECK_INT(tmux_encode_send_keys(&sb, "%1; kill-server", (const uint8_t *)"a", 1), -1);
	CHECK_INT(tmux_encode_send_keys(&sb, "@1", (const uint8_t *)"a", 1), -1);
	CHECK_INT(tmux_encode_resize(&sb, 120, 40), 0);
	CHECK_STR(sb.buf, "refresh-client -C 120x40\n");
	CHECK_INT(tmux_encode_resize(&sb, 0, 40), -1);
	uint8_t many[1200];
	memset(many, 'z', sizeof(many));
	strbuf_reset(&sb);
	tmux_encode_send_keys(&sb, "%2", many, sizeof(many));
	int commands = 0;
	for (const char *s = sb.buf; (s = strstr(s, "send-keys")); s++)
		commands++;
	CHECK_INT(commands, 3);
	strbuf_release(&sb);
}

/* ---- against a real tmux ------------------------------------------------------------------- */

struct watcher {
	struct strbuf pane_bytes;
	int exited, saw_window;
};

static void watch(void *arg, const struct tmux_event *ev)
{
	struct watcher *w = arg;
	if (ev->kind == TMUX_OUTPUT)
		strbuf_add(&w->pane_bytes, ev->data, ev->len);
	else if (ev->kind == TMUX_EXIT)
		w->exited = 1;
	else if (ev->kind == TMUX_SESSION_CHANGED)
		w->saw_window = 1;
}

TEST(tmux_parser_understands_a_real_tmux_control_client)
{
	if (system("command -v tmux >/dev/null 2>&1") != 0) {
		fprintf(stderr, "skipped: tmux is not installed\n");
		return;
	}
	int in[2], out[2];
	CHECK_INT(pipe(in), 0);
	CHECK_INT(pipe(out), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		setenv("TMUX_TMPDIR", unit_tmpdir(), 1);
		unsetenv("TMUX");
		execlp("tmux", "tmux", "-L", "agor-unit", "-f", "/dev/null", "-C", "new-session", "-x", "80", "-y",
		       "24", "printf 'A\\001B\\\\C\\303\\251D\\n'; sleep 30", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	struct watcher w = { STRBUF_INIT, 0, 0 };
	struct tmux_parser p;
	tmux_parser_init(&p, watch, &w);
	char buf[4096];
	int sent_kill = 0;
	for (int rounds = 0; rounds < 200 && !w.exited; rounds++) {
		struct pollfd pfd = { out[0], POLLIN, 0 };
		if (poll(&pfd, 1, 100) > 0) {
			ssize_t n = read(out[0], buf, sizeof(buf));
			if (n <= 0)
				break;
			tmux_parser_feed(&p, buf, (size_t)n);
		}
		if (!sent_kill && strstr(w.pane_bytes.buf, "D")) {
			CHECK(write(in[1], "kill-server\n", 12) == 12);
			sent_kill = 1;
		}
	}
	CHECK_CONTAINS(w.pane_bytes.buf, "A\001B\\C\303\251D");
	CHECK(w.saw_window);
	CHECK(w.exited);
	close(in[1]);
	close(out[0]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	tmux_parser_release(&p);
	strbuf_release(&w.pane_bytes);
}
