/* diskwatch.c — a sandboxed run's write budget, sampled from /proc while the run lives (diskwatch.h).
 * Reads only /proc; kills only the run's PID 1, through the pidfd it took while the run was alive. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "diskwatch.h"
#include "strbuf.h"
#include "banned.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

struct diskwatch {
	pid_t init;
	int pidfd;
	long long budget;
	long long self_before; /* this process's write_bytes at start: reaped children are added to it */
	long long sampled;     /* the last sum seen while the run lived */
	int hit;
};

static long long write_bytes_of(pid_t pid)
{
	char path[48];
	snprintf(path, sizeof(path), "/proc/%ld/io", (long)pid);
	_cleanup_strbuf_ struct strbuf io = STRBUF_INIT;
	if (strbuf_read_file(&io, path, 4096) < 0)
		return 0;
	const char *line = strstr(io.buf, "\nwrite_bytes: ");
	return line ? strtoll(line + 14, NULL, 10) : 0;
}

/* Appends the children of every thread of pid to pids (bounded). */
static void add_children(pid_t pid, pid_t *pids, size_t *n)
{
	char path[320];
	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	_cleanup_strbuf_ struct strbuf children = STRBUF_INIT;
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d)) && *n < DISKWATCH_MAX_PROCS) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%s/children", (long)pid, de->d_name);
		strbuf_reset(&children);
		if (strbuf_read_file(&children, path, 1 << 16) < 0)
			continue;
		for (char *p = children.buf, *end; *p && *n < DISKWATCH_MAX_PROCS; p = end) {
			long child = strtol(p, &end, 10);
			if (end == p)
				break;
			pids[(*n)++] = (pid_t)child;
		}
	}
	if (d)
		closedir(d);
}

/* PID 1's account (every descendant reaped so far) plus each live process below it. */
static long long run_written(pid_t init)
{
	pid_t pids[DISKWATCH_MAX_PROCS];
	size_t n = 0;
	long long total = write_bytes_of(init);
	add_children(init, pids, &n);
	for (size_t i = 0; i < n; i++) {
		total += write_bytes_of(pids[i]);
		add_children(pids[i], pids, &n);
	}
	return total;
}

void diskwatch_sample(struct diskwatch *w)
{
	if (!w || w->hit || (w->sampled = run_written(w->init)) <= w->budget)
		return;
	w->hit = 1;
	syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
}

struct diskwatch *diskwatch_start(pid_t init, long long budget)
{
	if (budget <= 0)
		return NULL;
	int pidfd = (int)syscall(SYS_pidfd_open, init, 0);
	if (pidfd < 0)
		return NULL;
	struct diskwatch *w = xcalloc(1, sizeof(*w));
	*w = (struct diskwatch){
		.init = init, .pidfd = pidfd, .budget = budget, .self_before = write_bytes_of(getpid())
	};
	return w;
}

int diskwatch_stop(struct diskwatch *w, long long *written)
{
	if (!w) {
		*written = 0;
		return 0;
	}
	/* once PID 1 is reaped its whole account (every descendant's) is in ours: the exact total */
	long long reaped = write_bytes_of(getpid()) - w->self_before;
	*written = reaped > w->sampled ? reaped : w->sampled; /* a killed namespace's processes may never be reaped */
	int hit = w->hit || *written > w->budget;
	close(w->pidfd);
	free(w);
	return hit;
}
