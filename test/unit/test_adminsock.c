/* test_adminsock.c — unit tests of the privileged socket's wire (adminsock.h): what the client sends is what the
 * server reads back, and every other shape is refused with its descriptors closed. */
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "adminsock.h"
#include "fdpass.h"
#include "unit.h"
#include "banned.h"

/* Sends text with nfds descriptors (of /dev/null) over a socket pair, then reads it as the server does. */
static int roundtrip(const char *text, size_t nfds, struct adminsock_request *r, struct err *e)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	int fds[FDPASS_MAX_FDS];
	for (size_t i = 0; i < nfds; i++)
		fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
	struct err se = ERR_INIT;
	fdpass_send_fds(sv[0], text, strlen(text), fds, nfds, &se);
	err_clear(&se);
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	shutdown(sv[0], SHUT_WR);
	int rc = adminsock_read_request(sv[1], r, e);
	close(sv[0]);
	close(sv[1]);
	return rc;
}

static void check_refused(const char *text, size_t nfds, const char *needle)
{
	struct adminsock_request r;
	struct err e = ERR_INIT;
	CHECK_INT(roundtrip(text, nfds, &r, &e), -1);
	CHECK_STR(e.code, E_INVALID_PAYLOAD);
	CHECK_CONTAINS(e.message, needle);
	CHECK_INT((int)r.nfds, 0);
	err_clear(&e);
}

TEST(adminsock_reads_an_admin_request_as_argv)
{
	struct adminsock_request r;
	struct err e = ERR_INIT;
	CHECK_INT(roundtrip("{\"op\":\"admin\",\"argv\":[\"delete-worktree-group\",\"abc\"]}\n", 0, &r, &e), 0);
	CHECK_INT(r.op, ADMINSOCK_ADMIN);
	CHECK_INT((int)r.argv.nr, 3);
	CHECK_STR(r.argv.v[0], "admin");
	CHECK_STR(r.argv.v[1], "delete-worktree-group");
	CHECK_STR(r.argv.v[2], "abc");
	adminsock_request_release(&r);
}

TEST(adminsock_reads_an_executor_request_with_its_three_descriptors)
{
	struct adminsock_request r;
	struct err e = ERR_INIT;
	CHECK_INT(roundtrip("{\"op\":\"executor\",\"user\":\"agor_executor\"}\n", 3, &r, &e), 0);
	CHECK_INT(r.op, ADMINSOCK_EXECUTOR);
	CHECK_STR(r.user, "agor_executor");
	CHECK_INT((int)r.nfds, 3);
	for (size_t i = 0; i < r.nfds; i++)
		CHECK(fcntl(r.fds[i], F_GETFD) & FD_CLOEXEC);
	adminsock_request_release(&r);
	CHECK_INT((int)r.nfds, 0);
}

TEST(adminsock_refuses_every_other_shape)
{
	check_refused("not json\n", 0, "not JSON");
	check_refused("[1]\n", 0, "string 'op'");
	check_refused("{\"op\":\"shell\"}\n", 0, "expected admin or executor");
	check_refused("{\"op\":\"admin\",\"argv\":[\"x\"],\"env\":{}}\n", 0, "unknown field 'env'");
	check_refused("{\"op\":\"admin\"}\n", 0, "lacks 'argv'");
	check_refused("{\"op\":\"admin\",\"argv\":[]}\n", 0, "1 to 16");
	check_refused("{\"op\":\"admin\",\"argv\":[1]}\n", 0, "argv[0]");
	check_refused("{\"op\":\"admin\",\"argv\":[\"a\\u0000b\"]}\n", 0, "not JSON"); /* json_parse refuses NUL */
	check_refused("{\"op\":\"admin\",\"argv\":[\"x\"]}\n", 1, "carries no descriptor");
	check_refused("{\"op\":\"executor\",\"user\":\"u\"}\n", 2, "got 2");
	check_refused("{\"op\":\"executor\",\"user\":\"u\"}\n", 4, "got more than 3");
	check_refused("{\"op\":\"executor\",\"user\":\"\"}\n", 3, "user: expected a user name");
	check_refused("{\"op\":\"admin\",\"argv\":[\"x\"]}", 0, "truncated");
	check_refused("{\"op\":\"admin\",\"argv\":[\"x\"]}\n{}\n", 0, "one request per connection");
}

TEST(adminsock_refuses_an_oversized_request)
{
	/* more than a socket pair buffers at once: a writer thread is not needed, the reader refuses first */
	char *big = xmalloc(ADMINSOCK_MAX_REQUEST + 64);
	memset(big, 'a', ADMINSOCK_MAX_REQUEST + 62);
	memcpy(big, "{\"op\":\"admin\",\"argv\":[\"", 23);
	big[ADMINSOCK_MAX_REQUEST + 62] = '\n';
	big[ADMINSOCK_MAX_REQUEST + 63] = '\0';
	int sv[2];
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	int one = 1 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &one, sizeof(one));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &one, sizeof(one));
	ssize_t sent = send(sv[0], big, strlen(big), MSG_DONTWAIT);
	CHECK(sent > (ssize_t)ADMINSOCK_MAX_REQUEST);
	struct adminsock_request r;
	struct err e = ERR_INIT;
	CHECK_INT(adminsock_read_request(sv[1], &r, &e), -1);
	CHECK_CONTAINS(e.message, "longer than 65536 bytes");
	err_clear(&e);
	close(sv[0]);
	close(sv[1]);
	free(big);
}
