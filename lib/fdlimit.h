/* fdlimit.h — the daemon's descriptor budget: RLIMIT_NOFILE raised at start (the soft limit, up to the hard one) to
 * what its TCP connections plus a reserve need; when the hard limit is lower, fewer TCP connections instead, so that
 * the reserve — the Unix socket, executors' pipes, terminals, the database — is never what a TCP flood exhausts.
 * Never lowers a limit it was given, never touches the hard limit.
 *
 * Contract:
 *   fd_budget_plan(soft, hard, open, want_tcp, reserve, &b) — the arithmetic, no system call: the budget needs
 *     open + want_tcp + reserve descriptors. b.soft is the soft limit to set (the old one when it is enough, else the
 *     need, at most hard). When b.soft leaves room for everything, b.max_tcp = want_tcp and b.reserve = reserve;
 *     else b.lowered = 1 and the room (b.soft - open) is shared: the reserve keeps `reserve` when at least as many
 *     would be left for TCP, else the room is halved between them. b.tcp_fd_ceiling = open + b.max_tcp: descriptors
 *     from there on are the reserve's.
 *   fd_budget_apply(want_tcp, reserve, &b, e) — reads the limits and counts the open descriptors (/proc/self/fd),
 *     plans, and sets the soft limit; -1 with e set only when the limits cannot be read.
 */
#ifndef AGOR_FDLIMIT_H
#define AGOR_FDLIMIT_H

#include "err.h"

struct fd_budget {
	unsigned long soft_before, soft, hard; /* RLIM_INFINITY is reported as ULONG_MAX */
	unsigned long open;		       /* descriptors open when planned */
	unsigned long max_tcp;		       /* TCP connections served at most */
	unsigned long reserve;		       /* descriptors TCP connections never take */
	unsigned long tcp_fd_ceiling;	       /* the first descriptor number of the reserve */
	int raised;			       /* the soft limit went up */
	int lowered;			       /* max_tcp is below what was wanted */
};

void fd_budget_plan(unsigned long soft, unsigned long hard, unsigned long open, unsigned long want_tcp,
		    unsigned long reserve, struct fd_budget *b);
int fd_budget_apply(unsigned long want_tcp, unsigned long reserve, struct fd_budget *b, struct err *e);

#endif
