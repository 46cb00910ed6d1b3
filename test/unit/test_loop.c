/* test_loop.c — unit tests of the event loop: timers in order and cancelled, fd readiness, removal
 * during dispatch, deferred calls, signals through signalfd and wake-ups from another thread. */
#include <pthread.h>
#include <signal.h>

#include "loop.h"
#include "unit.h"
#include "banned.h"

static char order[16];
static size_t norder;

static void record(struct loop *l, void *arg)
{
	order[norder++] = *(const char *)arg;
	if (norder == 3)
		loop_stop(l);
}

TEST(loop_timers_fire_in_deadline_order_and_cancelled_ones_never)
{
	struct err e = ERR_INIT;
	struct loop *l = loop_new(&e);
	norder = 0;
	uint64_t t0 = loop_now_ms();
	/* deadlines 100 ms apart: each is taken when its timer is added, and a loaded machine can stall
	 * between two adds for tens of milliseconds */
	loop_timer_add(l, 300, record, "c");
	loop_timer_add(l, 100, record, "a");
	struct loop_timer *x = loop_timer_add(l, 150, record, "x");
	loop_timer_add(l, 200, record, "b");
	loop_timer_cancel(l, x);
	CHECK_INT(loop_run(l, &e), 0);
	CHECK(loop_now_ms() - t0 >= 300);
	CHECK(!memcmp(order, "abc", 3));
	loop_free(l);
}

struct pipe_state {
	int reads;
	int other_fd;
};

static void on_readable(struct loop *l, int fd, unsigned events, void *arg)
{
	struct pipe_state *st = arg;
	char c;
	CHECK(events & LOOP_READ);
	CHECK_INT(read(fd, &c, 1), 1);
	st->reads++;
	loop_del_fd(l, st->other_fd); /* both were ready: the other must not be called now */
	loop_del_fd(l, fd);
	loop_stop(l);
}

TEST(loop_fd_removed_during_dispatch_gets_no_event)
{
	struct err e = ERR_INIT;
	struct loop *l = loop_new(&e);
	int a[2], b[2];
	CHECK_INT(pipe(a), 0);
	CHECK_INT(pipe(b), 0);
	struct pipe_state sa = { 0, b[0] }, sb = { 0, a[0] };
	CHECK_INT(loop_add_fd(l, a[0], LOOP_READ, on_readable, &sa, &e), 0);
	CHECK_INT(loop_add_fd(l, b[0], LOOP_READ, on_readable, &sb, &e), 0);
	CHECK_INT(write(a[1], "x", 1), 1);
	CHECK_INT(write(b[1], "y", 1), 1);
	CHECK_INT(loop_run(l, &e), 0);
	CHECK_INT(sa.reads + sb.reads, 1);
	loop_free(l);
}

static void deferred(struct loop *l, void *arg)
{
	(*(int *)arg)++;
	loop_stop(l);
}

static void defer_from_timer(struct loop *l, void *arg)
{
	loop_defer(l, deferred, arg);
}

TEST(loop_deferred_calls_run_after_callbacks)
{
	struct err e = ERR_INIT;
	struct loop *l = loop_new(&e);
	int n = 0;
	loop_timer_add(l, 1, defer_from_timer, &n);
	CHECK_INT(loop_run(l, &e), 0);
	CHECK_INT(n, 1);
	loop_free(l);
}

static void on_usr1(struct loop *l, int signo, void *arg)
{
	*(int *)arg = signo;
	loop_stop(l);
}

TEST(loop_signals_arrive_through_signalfd)
{
	struct err e = ERR_INIT;
	struct loop *l = loop_new(&e);
	int got = 0;
	CHECK_INT(loop_add_signal(l, SIGUSR1, on_usr1, &got, &e), 0);
	kill(getpid(), SIGUSR1);
	CHECK_INT(loop_run(l, &e), 0);
	CHECK_INT(got, SIGUSR1);
	loop_free(l);
}

static void *waker(void *arg)
{
	usleep(20000);
	loop_wake(arg);
	return NULL;
}

static void on_wake(struct loop *l, void *arg)
{
	(*(int *)arg)++;
	loop_stop(l);
}

TEST(loop_wake_from_another_thread)
{
	struct err e = ERR_INIT;
	struct loop *l = loop_new(&e);
	int woke = 0;
	CHECK_INT(loop_set_wake(l, on_wake, &woke, &e), 0);
	pthread_t t;
	pthread_create(&t, NULL, waker, l);
	CHECK_INT(loop_run(l, &e), 0);
	pthread_join(t, NULL);
	CHECK_INT(woke, 1);
	loop_free(l);
}
