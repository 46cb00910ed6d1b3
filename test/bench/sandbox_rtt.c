/* sandbox_rtt.c — benchmark helper: median/p90/p99 wall time of starting and reaping one short program,
 * bare or inside lib/sandbox (with or without a cgroup). Prints numbers; never asserts a time. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "child.h"
#include "sandbox.h"
#include "strbuf.h"
#include "samples.h"
#include "banned.h"

static struct sandbox_config bench_config(int with_limits)
{
	return (struct sandbox_config){
		.enabled = 1,
		.fail_closed = 1,
		.network_none = 1,
		.limits = { .memory_max_bytes = with_limits ? 4LL << 30 : 0, .pids_max = with_limits ? 1024 : 0 },
		.nofile = 4096,
		.disk_max_bytes = with_limits ? 4LL << 30 : 0, /* the defaults: a write budget beside the cgroup */
		.cgroup_root = "/sys/fs/cgroup",
		.cgroup_parent = "agor-bench",
		.root_maps_to = 65534,
	};
}

#ifdef SANDBOX_TIMING
#define MAX_STAGES 32
static double *stage_samples[MAX_STAGES];
static const char *const *stage_names;
static int nstages;

/* Keeps the duration of each stage of this run (µs since the previous stamp that was made). */
static void keep_stages(const struct sandbox *sb, int run)
{
	const double *t = sandbox_stage_times(sb, &stage_names, &nstages);
	double prev = t ? t[0] : 0;
	for (int i = 1; t && i < nstages && i < MAX_STAGES; i++) {
		stage_samples[i][run] = t[i] > 0 ? t[i] - prev : 0;
		if (t[i] > 0)
			prev = t[i];
	}
}

/* One line per stage that ran on stderr: "stage median-µs". */
static void print_stages(int n)
{
	for (int i = 1; i < nstages && i < MAX_STAGES; i++) {
		qsort(stage_samples[i], (size_t)n, sizeof(double), compare_double);
		if (stage_samples[i][n - 1] > 0) /* a stage never stamped is left out */
			fprintf(stderr, "%-34s %8.1f\n", stage_names[i], stage_samples[i][n / 2]);
	}
}
#endif

/* One start-to-reap of argv; sandboxed when cfg is not NULL. */
static int run_once(char **argv, const char *cwd, const struct sandbox_config *cfg, int run, struct err *e)
{
	struct sandbox *sb = NULL;
	if (cfg) {
		struct sandbox_request req = { .worktree = cwd, .home = "/root", .name = "bench" };
		if (!(sb = sandbox_prepare(cfg, &req, e)))
			return -1;
	}
	struct child c;
	child_init(&c);
	for (char **a = argv; *a; a++)
		strvec_push(&c.args, *a);
	c.cwd = cwd;
	c.stdin_io = CHILD_IO_NULL;
	c.new_process_group = 1;
	if (sb) {
		sandbox_apply(sb, &c);
	}
	int rc = child_run(&c, NULL, 0, NULL, NULL, 0, e);
	if (rc < 0 && sb)
		sandbox_explain_failure(sb, e);
	if (rc == 0 && !child_exited_ok(&c))
		rc = err_set(e, E_INTERNAL, "%s exited %d", argv[0], child_exit_code(&c));
	if (sb) {
		json_decref(sandbox_finish(sb));
#ifdef SANDBOX_TIMING
		keep_stages(sb, run);
#else
		(void)run;
#endif
		sandbox_free(sb);
	}
	child_release(&c);
	return rc;
}

/* usage: sandbox_rtt N bare|sandbox|sandbox-limits CWD -- ARGV… → "median p90 p99" in microseconds */
int main(int argc, char **argv)
{
	if (argc < 6 || strcmp(argv[4], "--")) {
		fprintf(stderr, "usage: %s N bare|sandbox|sandbox-limits CWD -- ARGV…\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	const char *mode = argv[2];
	struct sandbox_config cfg = bench_config(!strcmp(mode, "sandbox-limits"));
	const struct sandbox_config *use = strcmp(mode, "bare") ? &cfg : NULL;
	double *samples = xcalloc((size_t)(n > 0 ? n : 1), sizeof(double));
#ifdef SANDBOX_TIMING
	for (int i = 0; i < MAX_STAGES; i++)
		stage_samples[i] = xcalloc((size_t)(n > 0 ? n : 1), sizeof(double));
#endif
	for (int i = 0; i < n; i++) {
		struct err e = ERR_INIT;
		double t0 = now_us();
		if (run_once(argv + 5, argv[3], use, i, &e) < 0) {
			fprintf(stderr, "run %d failed: %s\n", i, e.message);
			return 1;
		}
		samples[i] = now_us() - t0;
	}
	print_percentiles(samples, n);
#ifdef SANDBOX_TIMING
	if (use && n > 0)
		print_stages(n);
#endif
	free(samples);
	return 0;
}
