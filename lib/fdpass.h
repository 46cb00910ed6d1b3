/* fdpass.h — passing descriptors between processes over Unix stream sockets (SCM_RIGHTS).
 * Never keeps a received descriptor it was not asked for: extra or truncated ones are closed at once. */
#ifndef AGOR_FDPASS_H
#define AGOR_FDPASS_H

/*
 * Contract
 *   fdpass_send(sock, buf, len, fd, e)  writes all of buf (blocking socket), with fd attached to the
 *                                       first byte as SCM_RIGHTS; -1 and e on failure.
 *   fdpass_send_fds(sock, buf, len, fds, nfds, e)
 *                                       the same with nfds (≤ FDPASS_MAX_FDS) descriptors on the first byte.
 *   fdpass_recv(sock, buf, len, fds, max_fds, &nfds)
 *                                       one recvmsg(): returns the byte count (0 at EOF) or -1 with
 *                                       errno; received descriptors (O_CLOEXEC) are stored in fds (up
 *                                       to max_fds, count in *nfds) and any beyond max_fds are closed.
 */
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

#define FDPASS_MAX_FDS 4

int fdpass_send(int sock, const void *buf, size_t len, int fd, struct err *e);
int fdpass_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds, struct err *e);
ssize_t fdpass_recv(int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *nfds);

#endif
