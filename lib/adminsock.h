/* adminsock.h — the wire of the privileged socket (docs/admin.md#socket): the daemon's typed requests to the root
 * `agor admin serve` — an admin operation, or an executor started as an execution user — and their answers.
 * Never accepts a request it cannot parse whole: one line, bounded, known fields only, descriptors exactly as the
 * operation needs them and only on its first byte.
 */
#ifndef AGOR_ADMINSOCK_H
#define AGOR_ADMINSOCK_H

/*
 * Contract
 * --------
 * A connection carries one request, a single line of JSON of at most ADMINSOCK_MAX_REQUEST bytes ending in "\n":
 *   {"op":"admin","argv":["create-worktree-group","ID","/path"]}   argv as adminops_argv builds it (1 to
 *        ADMINSOCK_MAX_ARGS non-empty strings without NUL); no descriptor. Answer: admin's --json line, then EOF.
 *   {"op":"executor","user":"agor_executor"}   exactly three descriptors (the executor's stdin, stdout, stderr)
 *        attached to the first byte. Answer, once the executor has ended: {"exitStatus":N}, then EOF. The client
 *        closing the connection first (timeout, cancel, its own death) kills the executor's process group.
 * Any other field, a second line, bytes after the line, descriptors on a later byte, too many or too few
 * descriptors, an op other than these: refused. A refusal is the line {"success":false,"error":{code,message}}.
 *
 * adminsock_read_request(sock, r, e): the server side, one request read and checked as above (received
 *   descriptors are kept in r->fds on success, closed on failure); 0, or -1 with E_INVALID_PAYLOAD naming what is
 *   wrong. adminsock_request_release closes what r still holds.
 * adminsock_reply(sock, j) writes j as one line; adminsock_refuse(sock, e) the refusal line of e.
 * adminsock_connect(path, e): a connected socket (O_CLOEXEC), or -1 naming the path and errno.
 * adminsock_admin(path, argv, timeout_ms, line, e): the client side of an admin request; 0 with *line the answer
 *   (validated later by the caller), or -1 (E_ISOLATION_UNAVAILABLE: cannot connect; E_TIMEOUT).
 * adminsock_executor(path, user, fds, e): sends an executor request with fds[0..2]; the connected socket (the
 *   caller keeps it open while the executor runs, then reads the answer with adminsock_read_line), or -1.
 * adminsock_read_line(sock, line, max, e): reads until EOF or "\n" (at most max bytes): 0 with the line (without
 *   "\n"; empty at EOF before anything), or -1.
 */

#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "strbuf.h"
#include "strvec.h"

#define ADMINSOCK_MAX_REQUEST (64u << 10)
#define ADMINSOCK_MAX_ARGS    16
#define ADMINSOCK_NFDS	      3

enum adminsock_op { ADMINSOCK_ADMIN, ADMINSOCK_EXECUTOR };

struct adminsock_request {
	enum adminsock_op op;
	struct strvec argv; /* ADMIN: "admin" then the arguments (argv[0] as adminops_parse expects a program) */
	char *user;	    /* EXECUTOR: the execution user asked for */
	int fds[ADMINSOCK_NFDS + 1]; /* one more than any op takes: "too many" is told apart */
	size_t nfds;
};

int adminsock_read_request(int sock, struct adminsock_request *r, struct err *e);
void adminsock_request_release(struct adminsock_request *r);
int adminsock_reply(int sock, json_t *j);
int adminsock_refuse(int sock, const struct err *e);

int adminsock_connect(const char *path, struct err *e);
int adminsock_admin(const char *path, const char *const *argv, int timeout_ms, struct strbuf *line, struct err *e);
int adminsock_executor(const char *path, const char *user, const int fds[ADMINSOCK_NFDS], struct err *e);
int adminsock_read_line(int sock, struct strbuf *line, size_t max, struct err *e);

#endif
