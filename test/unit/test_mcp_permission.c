/* test_mcp_permission.c — unit tests of lib/mcp_permission's line reader: every call among many lines is
 * answered once, and a stream of short lines moves bytes linear in its size (mcp_permission_fuzz found it
 * quadratic: each line moved the rest of the read buffer). */
#include <sys/mman.h>
#include <unistd.h>

#include "mcp_permission.h"
#include "strbuf.h"
#include "unit.h"
#include "banned.h"

/* A memfd holding text, positioned at its start. */
static int memfd_with(const char *text, size_t len)
{
	int fd = memfd_create("mcp-test", MFD_CLOEXEC);
	size_t off = 0;
	while (fd >= 0 && off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	CHECK(fd >= 0 && off == len && lseek(fd, 0, SEEK_SET) == 0);
	return fd;
}

static void read_all(int fd, struct strbuf *out)
{
	char buf[4096];
	ssize_t n;
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		strbuf_add(out, buf, (size_t)n);
}

TEST(mcp_permission_answers_each_call_among_many_blank_lines_in_linear_time)
{
	static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n";
	size_t blanks = 16u << 20; /* 256 reads of 64 KiB: the quadratic reader took minutes on this */
	struct strbuf in = STRBUF_INIT, out = STRBUF_INIT;
	strbuf_add(&in, ping, sizeof(ping) - 1);
	strbuf_grow(&in, blanks);
	memset(in.buf + in.len, '\n', blanks);
	strbuf_setlen(&in, in.len + blanks);
	strbuf_add(&in, ping, sizeof(ping) - 1);
	int in_fd = memfd_with(in.buf, in.len), out_fd = memfd_create("mcp-out", MFD_CLOEXEC);
	size_t moved = strbuf_moved_bytes();
	CHECK_INT(mcp_permission_serve(in_fd, out_fd, "/nonexistent/agor-broker.sock"), 0);
	moved = strbuf_moved_bytes() - moved; /* the work that was quadratic: about 2^43 bytes with a move per line */
	if (moved > in.len)
		unit_fail(__FILE__, __LINE__, "%zu bytes moved for %zu bytes read: not linear", moved, in.len);
	read_all(out_fd, &out);
	CHECK_STR(out.buf,
		  "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n");
	close(in_fd);
	close(out_fd);
	strbuf_release(&in);
	strbuf_release(&out);
}
