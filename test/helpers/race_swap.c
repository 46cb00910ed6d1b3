/* race_swap.c — test helper for t0053-executor-races: swaps a directory and a symlink in a tight loop, so a
 * parent of a payload path is, half the time, a symlink to a directory outside the data home.
 *
 *   race-swap DIR LINK CONTROL_DIR [PAUSE_US [QUIET_US]]
 *
 * DIR is a real directory and LINK a symlink beside it (same parent); each swap is one renameat2(RENAME_EXCHANGE)
 * of the two names, atomic, so DIR is always either the directory or the symlink. PAUSE_US (default 0) sleeps
 * between swaps; one pause in 16 (at random) lasts QUIET_US instead (default: PAUSE_US), so a whole operation
 * sometimes gets through and the race is also fought at its end. CONTROL_DIR/ready is created once the signals below
 * are handled. Signals drive it: SIGUSR1  pause with DIR the directory again, then create CONTROL_DIR/paused SIGUSR2
 * remove CONTROL_DIR/paused and resume SIGTERM  stop (DIR left the directory) and print "swaps N" on stdout Exit status
 * 0, or 1 with a message on stderr when a swap fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static volatile sig_atomic_t want_pause, want_stop;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		want_pause = 1;
	else if (sig == SIGUSR2)
		want_pause = 0;
	else
		want_stop = 1;
}

static int exchange(const char *a, const char *b)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}

static int dir_in_place(const char *dir)
{
	struct stat st;
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* Puts the directory back at DIR, announces the pause, and waits for SIGUSR2 (or SIGTERM). */
static int hold_pause(const char *dir, const char *link, const char *marker, unsigned long *swaps)
{
	if (!dir_in_place(dir)) {
		if (exchange(dir, link) < 0)
			return -1;
		(*swaps)++;
	}
	int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	while (want_pause && !want_stop)
		sleep_us(1000);
	unlink(marker);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 6) {
		fprintf(stderr, "usage: race-swap DIR LINK CONTROL_DIR [PAUSE_US [QUIET_US]]\n");
		return 2;
	}
	const char *dir = argv[1], *link = argv[2];
	long pause_us = argc >= 5 ? atol(argv[4]) : 0;
	long quiet_us = argc == 6 ? atol(argv[5]) : pause_us;
	srand((unsigned)getpid());
	char marker[4096], ready[4096];
	snprintf(marker, sizeof(marker), "%s/paused", argv[3]);
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	snprintf(ready, sizeof(ready), "%s/ready", argv[3]);
	int rfd = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (rfd >= 0)
		close(rfd);
	unsigned long swaps = 0;
	while (!want_stop) {
		if (want_pause) {
			if (hold_pause(dir, link, marker, &swaps) < 0)
				break;
			continue;
		}
		if (exchange(dir, link) < 0)
			break;
		swaps++;
		long us = rand() % 16 ? pause_us : quiet_us;
		if (us)
			sleep_us(us);
	}
	int failed = !want_stop;
	if (failed)
		fprintf(stderr, "race-swap: exchanging %s and %s: %s\n", dir, link, strerror(errno));
	if (!dir_in_place(dir) && exchange(dir, link) == 0)
		swaps++;
	printf("swaps %lu\n", swaps);
	return failed;
}
