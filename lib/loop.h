/* loop.h — the single-threaded epoll event loop every server in agor runs on: descriptors, one-shot
 * timers, signals (signalfd), deferred calls and wake-ups from other threads.
 * Never blocks inside a callback it calls, never frees an object while that object's callback runs.
 *
 * Contract:
 *   - Callbacks run on the loop's thread only. loop_defer() runs a function after the current
 *     iteration's callbacks: free a connection there, never inside its own callback.
 *   - loop_add_fd() registers one handler per descriptor; loop_set_events() changes the interest
 *     (LOOP_READ | LOOP_WRITE); loop_del_fd() unregisters (safe from inside that fd's callback: no
 *     further events are delivered for it in the same iteration).
 *   - Timers are one-shot; a timer is owned by the loop and freed after its callback returns or when
 *     cancelled — drop your pointer in the callback. Times are CLOCK_MONOTONIC milliseconds.
 *   - loop_add_signal() blocks the signal for the whole process and delivers it through a signalfd.
 *   - loop_wake() may be called from any thread: it makes the loop run its wake callback (eventfd).
 */
#ifndef AGOR_LOOP_H
#define AGOR_LOOP_H

#include <stdint.h>

#include "err.h"

enum { LOOP_READ = 1, LOOP_WRITE = 2, LOOP_HUP = 4, LOOP_ERROR = 8 };

struct loop;
struct loop_timer;

typedef void (*loop_fd_fn)(struct loop *l, int fd, unsigned events, void *arg);
typedef void (*loop_fn)(struct loop *l, void *arg);
typedef void (*loop_signal_fn)(struct loop *l, int signo, void *arg);

struct loop *loop_new(struct err *e);
/* Closes the loop's own descriptors (not the registered ones) and frees pending timers/defers. */
void loop_free(struct loop *l);

int loop_add_fd(struct loop *l, int fd, unsigned events, loop_fd_fn fn, void *arg, struct err *e);
int loop_set_events(struct loop *l, int fd, unsigned events);
void loop_del_fd(struct loop *l, int fd);

struct loop_timer *loop_timer_add(struct loop *l, uint64_t delay_ms, loop_fn fn, void *arg);
void loop_timer_cancel(struct loop *l, struct loop_timer *t);

int loop_add_signal(struct loop *l, int signo, loop_signal_fn fn, void *arg, struct err *e);
void loop_defer(struct loop *l, loop_fn fn, void *arg);
/* Sets the function run on the loop thread after loop_wake() (any thread). */
int loop_set_wake(struct loop *l, loop_fn fn, void *arg, struct err *e);
void loop_wake(struct loop *l);

/* Runs until loop_stop(); returns 0, or -1 on an epoll failure. */
int loop_run(struct loop *l, struct err *e);
void loop_stop(struct loop *l);
uint64_t loop_now_ms(void);
uint64_t loop_now_us(void); /* CLOCK_MONOTONIC microseconds */

#endif
