/* executor_rtt.c — benchmark helper: median/p90/p99 wall time of N executor round trips through
 * lib/spawn (spawn → payload on stdin → result line parsed). Prints numbers; never asserts a time. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "spawn.h"
#include "strbuf.h"
#include "samples.h"
#include "banned.h"

/* usage: executor_rtt N AGOR PAYLOAD_FILE (run with --dry-run) → "median p90 p99" in microseconds */
int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s N AGOR PAYLOAD_FILE\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	struct strbuf payload = STRBUF_INIT;
	if (n <= 0 || strbuf_read_file(&payload, argv[3], 0) < 0) {
		perror(argv[3]);
		return 2;
	}
	double *samples = xcalloc((size_t)n, sizeof(double));
	struct spawn_request r = { .mode = SPAWN_LOCAL,
				   .agor_path = argv[2],
				   .payload = payload.buf,
				   .payload_len = payload.len,
				   .dry_run = 1,
				   .timeout_ms = 10000 };
	for (int i = 0; i < n; i++) {
		struct spawn_result res;
		struct err e = ERR_INIT;
		double t0 = now_us();
		if (spawn_executor(&r, &res, &e) < 0 || !json_is_true(json_object_get(res.result, "success"))) {
			char *text = e.message ? NULL : json_dumps(res.result, JSON_COMPACT);
			fprintf(stderr, "round trip %d failed: %s\n", i,
				e.message ? e.message
				: text	  ? text
					  : "no result");
			free(text);
			return 1;
		}
		samples[i] = now_us() - t0;
		spawn_result_release(&res);
	}
	print_percentiles(samples, n);
	free(samples);
	strbuf_release(&payload);
	return 0;
}
