/* diskwatch.h — a sandboxed run's write budget: the bytes its processes send to storage, summed while it runs;
 * over the budget the whole run is killed. Never signals anything but the run's PID 1, by pidfd.
 *
 * Contract
 * --------
 * diskwatch_start(init, budget) takes a pidfd of INIT (the run's PID 1) and this process's own write_bytes.
 * diskwatch_sample(w), called every DISKWATCH_PERIOD_MS while the run lives (child.h's on_tick: no thread), sums
 * write_bytes of /proc/INIT/io (which already holds every descendant INIT or they reaped) and of each process
 * still alive below INIT (/proc/PID/task/TID/children, at most DISKWATCH_MAX_PROCS); above budget bytes it sends
 * SIGKILL to INIT through the pidfd (the namespace's PID 1: the kernel then kills the rest), so a PID 1 already
 * reaped, its number reused, is never mistaken for another. tmpfs writes are not counted (the sandbox sizes its
 * tmpfs mounts instead). NULL when budget ≤ 0 or no pidfd can be had.
 * diskwatch_stop(w, &written) frees it; called after INIT was reaped, *written is INIT's account (joined to this
 * process's own) or the last sample when that is larger (the processes of a namespace killed whole are not reaped
 * into INIT's account); 1 when the run wrote more than the budget (killed, or ended between two samples).
 * What it cannot see, and the sandbox's seccomp filter therefore refuses: fallocate (space without a write) and
 * PR_SET_DUMPABLE (a process whose /proc/PID/io a non-root executor cannot read). A non-root executor's run can
 * still hide a live process by running an execute-only binary (not dumpable); its writes then count when it exits,
 * and the run's cgroup and timeout bound it. Enforcement is within one period: what a run writes in 100 ms
 * (O_DIRECT can be fast) may pass the budget before the kill.
 */
#ifndef AGOR_DISKWATCH_H
#define AGOR_DISKWATCH_H

#include <sys/types.h>

#define DISKWATCH_PERIOD_MS 100
#define DISKWATCH_MAX_PROCS 4096

struct diskwatch;

struct diskwatch *diskwatch_start(pid_t init, long long budget);
void diskwatch_sample(struct diskwatch *w);
int diskwatch_stop(struct diskwatch *w, long long *written);

#endif
