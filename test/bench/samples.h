/* samples.h — what the C benchmark helpers share: a monotonic clock in microseconds and the
 * "median p90 p99" line of a set of samples. Header-only; never asserts a time. */
#ifndef AGOR_BENCH_SAMPLES_H
#define AGOR_BENCH_SAMPLES_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static inline int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts samples and prints "median p90 p99". */
static inline void print_percentiles(double *samples, int n)
{
	qsort(samples, (size_t)n, sizeof(double), compare_double);
	printf("%.1f %.1f %.1f\n", samples[n / 2], samples[n * 9 / 10], samples[n * 99 / 100]);
}

#endif
