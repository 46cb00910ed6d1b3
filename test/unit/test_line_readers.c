/* test_line_readers.c — unit tests that hold the line readers fed by an untrusted peer to work linear in what they
 * read: `approvals serve`'s request reader and UI reader (lib/approvals_socket.c, through appr_serve), the approvals
 * client's reply reader (appr_ask), the prompt's permission broker reader (lib/prompt.c) and the node runner's stderr
 * splitter (lib/node_runner.c). Hostile inputs: one long line without a newline, cut into many small pieces (each
 * read rescanning what it held was quadratic), and many blank lines (a removal per line was quadratic). Work is
 * counted, not timed: strbuf_scanned_bytes and strbuf_moved_bytes, on the reading thread. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "approvals_socket.h"
#include "node_runner.h"
#include "prompt.h"
#include "strbuf.h"
#include "unit.h"
#include "banned.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Waits (10 s at most) until the peer of the socket fd has read all that was written to it (TIOCOUTQ, which is
 * SIOCOUTQ on a socket). */
static void wait_until_read(int fd)
{
	int unread = 1;
	for (int i = 0; i < 1000000 && ioctl(fd, TIOCOUTQ, &unread) == 0 && unread > 0; i++)
		usleep(10);
}

/* Writes len bytes of c to the socket fd in pieces of piece bytes, each once the peer has read the one before, so
 * every read of the peer sees one small piece. Stops early when the peer has gone (it may refuse the rest). */
static void write_in_pieces(int fd, char c, size_t len, size_t piece)
{
	char buf[65536];
	memset(buf, c, sizeof(buf));
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, buf, len - off < piece ? len - off : piece);
		if (w <= 0)
			return;
		off += (size_t)w;
		wait_until_read(fd);
	}
}

/* Reads fd until its end (a peer's answer), so the peer is not cut off while it writes. */
static void read_to_end(int fd)
{
	char buf[4096];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (poll(&p, 1, 10000) > 0 && read(fd, buf, sizeof(buf)) > 0)
		;
}

static void check_scanned_at_most(size_t scanned, size_t bound, const char *what)
{
	if (scanned > bound)
		unit_fail(__FILE__, __LINE__, "%s: %zu bytes scanned for %zu bytes read: not linear", what, scanned,
			  bound);
}

/* --- the prompt's permission broker ---------------------------------------------------------------------- */

/* A child writing len bytes of 'x' to sv[1] in pieces (then a newline if asked); the parent keeps sv[0] only. */
static pid_t start_writer(int sv[2], size_t len, size_t piece, int newline)
{
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		signal(SIGPIPE, SIG_IGN); /* a reader that refuses the line closes its end */
		write_in_pieces(sv[1], 'x', len, piece);
		if (newline)
			write_in_pieces(sv[1], '\n', 1, 1);
		_exit(0);
	}
	close(sv[1]);
	return pid;
}

/* A request line of 4 KiB arriving a byte at a time: each byte looked at once (rescanning the whole line at every
 * read looked at about 8 MiB). */
TEST(prompt_request_reader_scans_a_line_cut_in_bytes_once)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	pid_t pid = start_writer(sv, 4096, 1, 1);
	struct strbuf line = STRBUF_INIT;
	size_t scanned = strbuf_scanned_bytes();
	CHECK_INT(prompt_read_request_line(sv[0], &line), 0);
	scanned = strbuf_scanned_bytes() - scanned;
	CHECK_INT(line.len, 4097);
	check_scanned_at_most(scanned, line.len, "prompt_read_request_line");
	waitpid(pid, NULL, 0);
	close(sv[0]);
	strbuf_release(&line);
}

/* A line that never ends, in 4 KiB pieces: refused past 1 MiB, each byte looked at once on the way (the rescanning
 * reader looked at about 130 MiB). */
TEST(prompt_request_reader_refuses_an_endless_line_scanning_it_once)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	pid_t pid = start_writer(sv, (1u << 20) + 8192, 4096, 0);
	struct strbuf line = STRBUF_INIT;
	size_t scanned = strbuf_scanned_bytes();
	CHECK_INT(prompt_read_request_line(sv[0], &line), -1);
	scanned = strbuf_scanned_bytes() - scanned;
	CHECK(line.len > (1u << 20));
	check_scanned_at_most(scanned, line.len, "prompt_read_request_line");
	close(sv[0]);
	waitpid(pid, NULL, 0);
	strbuf_release(&line);
}

/* Blank lines: the first ends the request, and nothing after it is looked at. */
TEST(prompt_request_reader_stops_at_the_first_of_many_blank_lines)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	char blanks[65536];
	memset(blanks, '\n', sizeof(blanks));
	CHECK(write(sv[1], blanks, 4096) == 4096);
	struct strbuf line = STRBUF_INIT;
	size_t scanned = strbuf_scanned_bytes();
	CHECK_INT(prompt_read_request_line(sv[0], &line), 0);
	CHECK_INT(strbuf_scanned_bytes() - scanned, 1);
	close(sv[0]);
	close(sv[1]);
	strbuf_release(&line);
}

/* --- approvals serve: the request reader and the UI reader -------------------------------------------- */

/* A private 0700 directory for a socket (appr_serve refuses any other); its path is the caller's to free. */
static char *socket_path(void)
{
	char *dir = xasprintf("%s/sock", unit_tmpdir());
	CHECK(mkdir(dir, 0700) == 0);
	char *path = xasprintf("%s/a.sock", dir);
	free(dir);
	return path;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	for (int i = 0; i < 500; i++) {
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		usleep(10000);
	}
	_exit(2);
}

/* A client (a forked child) that sends body in pieces once appr_serve listens, reads the answer to its end, then
 * stops the server (SIGTERM to the test process). */
static pid_t hostile_client(const char *path, char c, size_t len, size_t piece, int newline)
{
	pid_t server = getpid(), pid = fork();
	if (pid != 0)
		return pid;
	signal(SIGPIPE, SIG_IGN);
	int fd = connect_to(path);
	write_in_pieces(fd, c, len, piece);
	if (newline)
		write_in_pieces(fd, '\n', 1, 1);
	read_to_end(fd);
	kill(server, SIGTERM);
	_exit(0);
}

static void serve_until_stopped(const char *path, int ui_fd)
{
	struct appr_server_ops ops = { 0 };
	struct err e = ERR_INIT;
	CHECK_INT(appr_serve(path, TOKEN, ui_fd, &ops, &e), 0);
	err_clear(&e);
}

/* A request of 4 KiB arriving a byte at a time is scanned once (the rescanning reader looked at about 8 MiB). */
TEST(approvals_request_reader_scans_a_line_cut_in_bytes_once)
{
	_cleanup_free_ char *path = socket_path();
	pid_t pid = hostile_client(path, 'x', 4096, 1, 1);
	size_t scanned = strbuf_scanned_bytes();
	serve_until_stopped(path, -1);
	check_scanned_at_most(strbuf_scanned_bytes() - scanned, 4097, "appr_serve's request reader");
	int status;
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A request that never ends, in 1 KiB pieces, is refused at APPR_REQUEST_MAX having been scanned once (the
 * rescanning reader looked at about 32 MiB). */
TEST(approvals_request_reader_refuses_an_endless_line_scanning_it_once)
{
	_cleanup_free_ char *path = socket_path();
	pid_t pid = hostile_client(path, 'x', APPR_REQUEST_MAX + 4096, 1024, 0);
	size_t scanned = strbuf_scanned_bytes();
	serve_until_stopped(path, -1);
	check_scanned_at_most(strbuf_scanned_bytes() - scanned, APPR_REQUEST_MAX + 4096, "appr_serve's request reader");
	int status;
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* 64 KiB of blank lines from the UI, read 512 bytes at a time: the lines of a read go at once, moving at most what
 * was read (a removal per line moved about 16 MiB). */
TEST(approvals_ui_reader_moves_at_most_what_it_read_for_many_blank_lines)
{
	_cleanup_free_ char *path = socket_path();
	int ui[2];
	CHECK(pipe(ui) == 0);
	char blanks[65536];
	memset(blanks, '\n', sizeof(blanks));
	CHECK(write(ui[1], blanks, sizeof(blanks)) == (ssize_t)sizeof(blanks)); /* a pipe holds 64 KiB */
	pid_t server = getpid(), pid = fork();
	if (pid == 0) { /* once the server has read them all: stop it */
		close(ui[0]);
		int unread = 1;
		for (int i = 0; i < 1000 && ioctl(ui[1], FIONREAD, &unread) == 0 && unread > 0; i++)
			usleep(10000);
		kill(server, SIGTERM);
		_exit(0);
	}
	close(ui[1]);
	size_t moved = strbuf_moved_bytes(), scanned = strbuf_scanned_bytes();
	serve_until_stopped(path, ui[0]);
	moved = strbuf_moved_bytes() - moved;
	if (moved > sizeof(blanks))
		unit_fail(__FILE__, __LINE__, "%zu bytes moved for %zu blank lines: a removal per line", moved,
			  sizeof(blanks));
	check_scanned_at_most(strbuf_scanned_bytes() - scanned, sizeof(blanks), "appr_serve's UI reader");
	close(ui[0]);
	waitpid(pid, NULL, 0);
}

/* --- the approvals client's reply reader ------------------------------------------------------------------- */

/* A UI that answers with a 4 KiB line a byte at a time: appr_ask scans it once, then refuses it as no reply (the
 * rescanning reader looked at about 8 MiB). */
TEST(approvals_reply_reader_scans_a_line_cut_in_bytes_once)
{
	_cleanup_free_ char *path = socket_path();
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(bind(listener, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(listener, 4) == 0);
	pid_t pid = fork();
	if (pid == 0) { /* the UI: reads the request line, answers byte by byte */
		int fd = accept(listener, NULL, NULL);
		char c = 0;
		while (fd >= 0 && c != '\n' && read(fd, &c, 1) == 1)
			;
		write_in_pieces(fd, 'x', 4096, 1);
		write_in_pieces(fd, '\n', 1, 1);
		read_to_end(fd);
		_exit(0);
	}
	close(listener);
	const char *argv[] = { "ls", NULL };
	struct appr_ask_request r = { argv, "/", "a1", NULL, NULL, NULL, NULL };
	enum appr_answer answer;
	struct err e = ERR_INIT;
	size_t scanned = strbuf_scanned_bytes();
	CHECK_INT(appr_ask(path, TOKEN, &r, 20000, &answer, &e), -1);
	check_scanned_at_most(strbuf_scanned_bytes() - scanned, 4097, "appr_ask's reply reader");
	CHECK_STR(e.code, E_INVALID_JSON);
	err_clear(&e);
	waitpid(pid, NULL, 0);
}

/* --- the node runner's stderr lines ---------------------------------------------------------------------- */

static void count_line(const char *line, size_t len, void *arg)
{
	(void)line;
	size_t *lines_and_bytes = arg;
	lines_and_bytes[0]++;
	lines_and_bytes[1] += len;
}

/* 64 KiB of one line a byte at a time, as a writer that trickles its stderr makes the runner read it: each byte
 * looked at once (rescanning the line at every read looked at about 2 GiB), and the line handed on whole. */
TEST(node_stderr_lines_scan_a_line_cut_in_bytes_once)
{
	struct strbuf pending = STRBUF_INIT;
	size_t scanned_upto = 0, seen[2] = { 0, 0 }, total = 0;
	size_t scanned = strbuf_scanned_bytes();
	for (; total < 65536; total++) {
		strbuf_addch(&pending, 'x');
		node_split_lines(&pending, &scanned_upto, count_line, seen);
	}
	strbuf_addch(&pending, '\n');
	node_split_lines(&pending, &scanned_upto, count_line, seen);
	total++;
	check_scanned_at_most(strbuf_scanned_bytes() - scanned, total, "node_split_lines");
	CHECK_INT(seen[0], 1);
	CHECK_INT(seen[1], 65536);
	CHECK_INT(pending.len, 0);
	strbuf_release(&pending);
}

/* 16 MiB of blank lines in 64 KiB reads (a drain's worth), each ending in a partial line the next read ends: every
 * line handed on, fewer bytes moved and scanned than read (a removal per line moved about 2^43 bytes). */
TEST(node_stderr_lines_move_each_byte_at_most_once_for_many_blank_lines)
{
	struct strbuf pending = STRBUF_INIT;
	char piece[65536];
	memset(piece, '\n', sizeof(piece));
	memcpy(piece + sizeof(piece) - 3, "abc", 3);
	size_t scanned_upto = 0, seen[2] = { 0, 0 }, total = 0;
	size_t moved = strbuf_moved_bytes(), scanned = strbuf_scanned_bytes();
	for (int i = 0; i < 256; i++) {
		strbuf_add(&pending, piece, sizeof(piece));
		total += sizeof(piece);
		node_split_lines(&pending, &scanned_upto, count_line, seen);
	}
	CHECK_INT(seen[0], 256 * (sizeof(piece) - 3));
	CHECK_INT(seen[1], 255 * 3);
	CHECK(strbuf_moved_bytes() - moved <= total);
	check_scanned_at_most(strbuf_scanned_bytes() - scanned, total, "node_split_lines");
	CHECK_STR(pending.buf, "abc");
	strbuf_release(&pending);
}
