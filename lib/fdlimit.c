/* fdlimit.c — the daemon's descriptor budget (fdlimit.h): plan the soft RLIMIT_NOFILE and the TCP share of it,
 * then set it. Never lowers a limit and never asks for more than the hard limit allows. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sys/resource.h>

#include "fdlimit.h"
#include "banned.h"

static unsigned long from_rlim(rlim_t v)
{
	return v == RLIM_INFINITY ? ULONG_MAX : (unsigned long)v;
}

void fd_budget_plan(unsigned long soft, unsigned long hard, unsigned long open, unsigned long want_tcp,
		    unsigned long reserve, struct fd_budget *b)
{
	unsigned long need = open + want_tcp + reserve;
	*b = (struct fd_budget){ .soft_before = soft, .soft = soft, .hard = hard, .open = open };
	if (soft < need) {
		b->soft = need < hard ? need : hard;
		b->raised = b->soft > soft;
	}
	unsigned long room = b->soft > open ? b->soft - open : 0;
	if (room >= want_tcp + reserve) {
		b->max_tcp = want_tcp;
		b->reserve = reserve;
	} else {
		b->lowered = 1;
		b->max_tcp = room >= 2 * reserve ? room - reserve : room / 2;
		b->reserve = room - b->max_tcp;
	}
	b->tcp_fd_ceiling = open + b->max_tcp;
}

/* Descriptors open now (the directory's own included: a close estimate, on the safe side). */
static unsigned long count_open(void)
{
	DIR *dir = opendir("/proc/self/fd");
	unsigned long n = 0;
	if (!dir)
		return 64; /* no /proc: assume a few dozen, as a daemon has at start */
	while (readdir(dir))
		n++;
	closedir(dir);
	return n > 2 ? n - 2 : n; /* "." and ".." */
}

int fd_budget_apply(unsigned long want_tcp, unsigned long reserve, struct fd_budget *b, struct err *e)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return err_errno(e, errno, "getrlimit(RLIMIT_NOFILE)");
	fd_budget_plan(from_rlim(rl.rlim_cur), from_rlim(rl.rlim_max), count_open(), want_tcp, reserve, b);
	if (!b->raised)
		return 0;
	rl.rlim_cur = (rlim_t)b->soft;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) /* not expected below the hard limit: plan within what there is */
		fd_budget_plan(b->soft_before, b->soft_before, b->open, want_tcp, reserve, b);
	return 0;
}
