/* startup.c — start-up benchmark: median wall time and mean CPU time of N fork+exec+wait rounds of a
 * command. Never asserts a time: it prints numbers for test/bench/startup to turn into ratios. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* usage: [STARTUP_STDIN=FILE] [STARTUP_GAP_US=N] startup N CMD ARGS… → prints "median_wall_us p90_wall_us
 * mean_cpu_us". STARTUP_STDIN: each round's standard input is FILE (an executor payload), else /dev/null.
 * STARTUP_GAP_US: a pause before each round, outside its time, so no round starts while the kernel still
 * finishes the previous one's deferred work (as real runs, which come seconds apart). */
int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s N CMD [ARGS…]\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	double *wall = calloc((size_t)n, sizeof(double));
	double cpu_total = 0;
	int devnull = open("/dev/null", O_WRONLY);
	const char *input = getenv("STARTUP_STDIN");
	const char *gap = getenv("STARTUP_GAP_US");
	useconds_t gap_us = gap ? (useconds_t)atoi(gap) : 0;
	for (int i = 0; i < n; i++) {
		if (gap_us)
			usleep(gap_us);
		double t0 = now_us();
		pid_t pid = fork();
		if (pid == 0) {
			int in = open(input ? input : "/dev/null", O_RDONLY);
			if (in < 0 || dup2(in, 0) < 0)
				_exit(126);
			dup2(devnull, 1);
			dup2(devnull, 2);
			execv(argv[2], argv + 2);
			_exit(127);
		}
		int status;
		struct rusage ru;
		wait4(pid, &status, 0, &ru);
		wall[i] = now_us() - t0;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "%s exited with status %d\n", argv[2], status);
			return 1;
		}
		cpu_total +=
			ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
	}
	qsort(wall, (size_t)n, sizeof(double), compare_double);
	printf("%.1f %.1f %.1f\n", wall[n / 2], wall[n * 9 / 10], cpu_total / n);
	return 0;
}
