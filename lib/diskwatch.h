/* diskwatch.h — a sandboxed run's write budget: the bytes its processes send to storage, summed while it runs;
 * over the budget the whole run is killed. Never signals anything but the run's PID 1, by pidfd.
 *
 * Contract
 * --------
 * diskwatch_start(init, budget) starts a thread that every DISKWATCH_PERIOD_MS sums write_bytes of
 * /proc/INIT/io (which already holds every descendant INIT or they reaped) and of each process still alive below
 * INIT (/proc/PID/task/TID/children, at most DISKWATCH_MAX_PROCS); above budget bytes it sends SIGKILL to INIT
 * through a pidfd taken at start (the namespace's PID 1: the kernel then kills the rest) and stops. tmpfs writes
 * are not counted (the sandbox sizes its tmpfs mounts instead). NULL when budget ≤ 0 or the thread cannot start.
 * diskwatch_stop(w, &written) stops and frees it; called after INIT was reaped, *written is exact (INIT's account
 * has joined this process's own, which was read at start); 1 when the run wrote more than the budget (killed, or
 * ended between two samples), else 0.
 * The kill goes through the pidfd, so a PID 1 already reaped (its number reused) is never mistaken for another.
 */
#ifndef AGOR_DISKWATCH_H
#define AGOR_DISKWATCH_H

#include <sys/types.h>

#define DISKWATCH_PERIOD_MS 100
#define DISKWATCH_MAX_PROCS 4096

struct diskwatch;

struct diskwatch *diskwatch_start(pid_t init, long long budget);
int diskwatch_stop(struct diskwatch *w, long long *written);

#endif
