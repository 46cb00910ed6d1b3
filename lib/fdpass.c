/* fdpass.c — SCM_RIGHTS send and receive (fdpass.h).
 * Never leaks a descriptor that arrived uninvited: whatever does not fit the caller's array is closed. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fdpass.h"
#include "banned.h"

int fdpass_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds, struct err *e)
{
	const char *p = buf;
	if (nfds > FDPASS_MAX_FDS)
		return err_set(e, E_INTERNAL, "fdpass: at most %d descriptors at once", FDPASS_MAX_FDS);
	while (len > 0) {
		union {
			char raw[CMSG_SPACE(FDPASS_MAX_FDS * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { .iov_base = (void *)p, .iov_len = len };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (nfds) {
			memset(&ctl, 0, sizeof(ctl));
			msg.msg_control = ctl.raw;
			msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
			struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
			memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
		}
		ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_errno(e, n < 0 ? errno : EPIPE, "sending a descriptor over the socket");
		nfds = 0;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fdpass_send(int sock, const void *buf, size_t len, int fd, struct err *e)
{
	return fdpass_send_fds(sock, buf, len, &fd, fd >= 0 ? 1 : 0, e);
}

static void keep_or_close(struct cmsghdr *c, int *fds, size_t max_fds, size_t *nfds)
{
	size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	for (size_t i = 0; i < count; i++) {
		int fd;
		memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
		if (*nfds < max_fds)
			fds[(*nfds)++] = fd;
		else
			close(fd);
	}
}

ssize_t fdpass_recv(int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *nfds)
{
	union {
		char raw[CMSG_SPACE(FDPASS_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.raw, .msg_controllen = sizeof(ctl.raw)
	};
	*nfds = 0;
	ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			keep_or_close(c, fds, max_fds, nfds);
	return n;
}
