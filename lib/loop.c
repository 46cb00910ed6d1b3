/* loop.c — epoll, a timer heap, signalfd and eventfd behind loop.h.
 * Never delivers an event to a handler that was removed earlier in the same iteration. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>

#include "loop.h"
#include "banned.h"

struct fd_handler {
	loop_fd_fn fn;
	void *arg;
	unsigned events;
	unsigned generation; /* bumped on every add/del: stale epoll events are dropped */
	int active;
};

struct loop_timer {
	uint64_t deadline;
	uint64_t seq; /* ties broken by insertion order */
	loop_fn fn;
	void *arg;
	int cancelled;
};

struct deferred {
	loop_fn fn;
	void *arg;
};

struct signal_handler {
	int signo;
	loop_signal_fn fn;
	void *arg;
};

struct loop {
	int epfd;
	int stopping;
	struct fd_handler *fds;
	size_t nfds;
	struct loop_timer **heap;
	size_t heap_len, heap_alloc;
	uint64_t timer_seq;
	struct deferred *defers;
	size_t ndefers, defers_alloc;
	int sigfd;
	sigset_t sigmask;
	struct signal_handler signals[16];
	size_t nsignals;
	int wakefd;
	loop_fn wake_fn;
	void *wake_arg;
};

uint64_t loop_now_ms(void)
{
	return loop_now_us() / 1000u;
}

uint64_t loop_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

struct loop *loop_new(struct err *e)
{
	struct loop *l = xcalloc(1, sizeof(*l));
	l->sigfd = l->wakefd = -1;
	sigemptyset(&l->sigmask);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		err_errno(e, errno, "epoll_create1");
		free(l);
		return NULL;
	}
	return l;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->heap_len; i++)
		free(l->heap[i]);
	free(l->heap);
	free(l->defers);
	free(l->fds);
	if (l->sigfd >= 0)
		close(l->sigfd);
	if (l->wakefd >= 0)
		close(l->wakefd);
	close(l->epfd);
	free(l);
}

/* --- descriptors ------------------------------------------------------------------------- */

static uint32_t to_epoll(unsigned events)
{
	return ((events & LOOP_READ) ? EPOLLIN | EPOLLRDHUP : 0) | ((events & LOOP_WRITE) ? EPOLLOUT : 0);
}

static void ensure_slot(struct loop *l, int fd)
{
	if ((size_t)fd < l->nfds)
		return;
	size_t n = l->nfds ? l->nfds : 64;
	while (n <= (size_t)fd)
		n *= 2;
	l->fds = xrealloc(l->fds, n * sizeof(*l->fds));
	memset(l->fds + l->nfds, 0, (n - l->nfds) * sizeof(*l->fds));
	l->nfds = n;
}

static uint64_t epoll_key(int fd, unsigned generation)
{
	return ((uint64_t)generation << 32) | (uint32_t)fd;
}

int loop_add_fd(struct loop *l, int fd, unsigned events, loop_fd_fn fn, void *arg, struct err *e)
{
	ensure_slot(l, fd);
	struct fd_handler *h = &l->fds[fd];
	h->generation++;
	struct epoll_event ev = { .events = to_epoll(events), .data.u64 = epoll_key(fd, h->generation) };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return err_errno(e, errno, "epoll_ctl add fd %d", fd);
	h->fn = fn;
	h->arg = arg;
	h->events = events;
	h->active = 1;
	return 0;
}

int loop_set_events(struct loop *l, int fd, unsigned events)
{
	if ((size_t)fd >= l->nfds || !l->fds[fd].active)
		return -1;
	struct fd_handler *h = &l->fds[fd];
	if (h->events == events)
		return 0;
	struct epoll_event ev = { .events = to_epoll(events), .data.u64 = epoll_key(fd, h->generation) };
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -1;
	h->events = events;
	return 0;
}

void loop_del_fd(struct loop *l, int fd)
{
	if ((size_t)fd >= l->nfds || !l->fds[fd].active)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->fds[fd].active = 0;
	l->fds[fd].generation++;
}

/* --- timers (binary min-heap) ------------------------------------------------------------ */

static int timer_before(const struct loop_timer *a, const struct loop_timer *b)
{
	return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void heap_swap(struct loop *l, size_t i, size_t j)
{
	struct loop_timer *t = l->heap[i];
	l->heap[i] = l->heap[j];
	l->heap[j] = t;
}

static void heap_up(struct loop *l, size_t i)
{
	while (i > 0 && timer_before(l->heap[i], l->heap[(i - 1) / 2])) {
		heap_swap(l, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct loop *l, size_t i)
{
	for (;;) {
		size_t left = 2 * i + 1, right = left + 1, min = i;
		if (left < l->heap_len && timer_before(l->heap[left], l->heap[min]))
			min = left;
		if (right < l->heap_len && timer_before(l->heap[right], l->heap[min]))
			min = right;
		if (min == i)
			return;
		heap_swap(l, i, min);
		i = min;
	}
}

struct loop_timer *loop_timer_add(struct loop *l, uint64_t delay_ms, loop_fn fn, void *arg)
{
	struct loop_timer *t = xcalloc(1, sizeof(*t));
	t->deadline = loop_now_ms() + delay_ms;
	t->seq = ++l->timer_seq;
	t->fn = fn;
	t->arg = arg;
	if (l->heap_len == l->heap_alloc) {
		l->heap_alloc = l->heap_alloc ? l->heap_alloc * 2 : 16;
		l->heap = xrealloc(l->heap, l->heap_alloc * sizeof(*l->heap));
	}
	l->heap[l->heap_len++] = t;
	heap_up(l, l->heap_len - 1);
	return t;
}

void loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
	(void)l;
	if (t)
		t->cancelled = 1; /* freed when it reaches the top of the heap */
}

static struct loop_timer *heap_pop(struct loop *l)
{
	struct loop_timer *top = l->heap[0];
	l->heap[0] = l->heap[--l->heap_len];
	if (l->heap_len)
		heap_down(l, 0);
	return top;
}

static void run_due_timers(struct loop *l)
{
	uint64_t now = loop_now_ms();
	while (l->heap_len && (l->heap[0]->cancelled || l->heap[0]->deadline <= now)) {
		struct loop_timer *t = heap_pop(l);
		if (!t->cancelled)
			t->fn(l, t->arg);
		free(t);
	}
}

static int next_timeout(struct loop *l)
{
	if (l->ndefers)
		return 0;
	while (l->heap_len && l->heap[0]->cancelled)
		free(heap_pop(l));
	if (!l->heap_len)
		return -1;
	uint64_t now = loop_now_ms();
	uint64_t d = l->heap[0]->deadline > now ? l->heap[0]->deadline - now : 0;
	return d > 60000 ? 60000 : (int)d;
}

/* --- deferred calls, signals, wake-ups --------------------------------------------------- */

void loop_defer(struct loop *l, loop_fn fn, void *arg)
{
	if (l->ndefers == l->defers_alloc) {
		l->defers_alloc = l->defers_alloc ? l->defers_alloc * 2 : 16;
		l->defers = xrealloc(l->defers, l->defers_alloc * sizeof(*l->defers));
	}
	l->defers[l->ndefers++] = (struct deferred){ fn, arg };
}

static void run_defers(struct loop *l)
{
	for (size_t i = 0; i < l->ndefers; i++) /* a deferred call may defer more: they run too */
		l->defers[i].fn(l, l->defers[i].arg);
	l->ndefers = 0;
}

static void on_signalfd(struct loop *l, int fd, unsigned events, void *arg)
{
	(void)events;
	(void)arg;
	struct signalfd_siginfo si;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		for (size_t i = 0; i < l->nsignals; i++)
			if (l->signals[i].signo == (int)si.ssi_signo)
				l->signals[i].fn(l, (int)si.ssi_signo, l->signals[i].arg);
}

int loop_add_signal(struct loop *l, int signo, loop_signal_fn fn, void *arg, struct err *e)
{
	if (l->nsignals == ARRAY_SIZE(l->signals))
		return err_set(e, E_INTERNAL, "too many signal handlers");
	sigaddset(&l->sigmask, signo);
	if (sigprocmask(SIG_BLOCK, &l->sigmask, NULL) < 0)
		return err_errno(e, errno, "sigprocmask");
	int fd = signalfd(l->sigfd, &l->sigmask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return err_errno(e, errno, "signalfd");
	if (l->sigfd < 0) {
		l->sigfd = fd;
		if (loop_add_fd(l, fd, LOOP_READ, on_signalfd, NULL, e) < 0)
			return -1;
	}
	l->signals[l->nsignals++] = (struct signal_handler){ signo, fn, arg };
	return 0;
}

static void on_wakefd(struct loop *l, int fd, unsigned events, void *arg)
{
	(void)events;
	(void)arg;
	uint64_t n;
	while (read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
		;
	if (l->wake_fn)
		l->wake_fn(l, l->wake_arg);
}

int loop_set_wake(struct loop *l, loop_fn fn, void *arg, struct err *e)
{
	if (l->wakefd < 0) {
		l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (l->wakefd < 0)
			return err_errno(e, errno, "eventfd");
		if (loop_add_fd(l, l->wakefd, LOOP_READ, on_wakefd, NULL, e) < 0)
			return -1;
	}
	l->wake_fn = fn;
	l->wake_arg = arg;
	return 0;
}

void loop_wake(struct loop *l)
{
	uint64_t one = 1;
	(void)!write(l->wakefd, &one, sizeof(one));
}

/* --- running ----------------------------------------------------------------------------- */

static unsigned from_epoll(uint32_t ev)
{
	return ((ev & EPOLLIN) ? LOOP_READ : 0) | ((ev & EPOLLOUT) ? LOOP_WRITE : 0) |
	       ((ev & (EPOLLHUP | EPOLLRDHUP)) ? LOOP_HUP | LOOP_READ : 0) |
	       ((ev & EPOLLERR) ? LOOP_ERROR | LOOP_READ : 0);
}

static void dispatch(struct loop *l, const struct epoll_event *ev)
{
	int fd = (int)(uint32_t)ev->data.u64;
	unsigned generation = (unsigned)(ev->data.u64 >> 32);
	if ((size_t)fd >= l->nfds)
		return;
	struct fd_handler *h = &l->fds[fd];
	if (!h->active || h->generation != generation)
		return; /* removed (or replaced) earlier in this iteration */
	h->fn(l, fd, from_epoll(ev->events), h->arg);
}

int loop_run(struct loop *l, struct err *e)
{
	struct epoll_event events[64];
	l->stopping = 0;
	while (!l->stopping) {
		int n = epoll_wait(l->epfd, events, (int)ARRAY_SIZE(events), next_timeout(l));
		if (n < 0 && errno != EINTR)
			return err_errno(e, errno, "epoll_wait");
		for (int i = 0; i < n; i++)
			dispatch(l, &events[i]);
		run_due_timers(l);
		run_defers(l);
	}
	return 0;
}

void loop_stop(struct loop *l)
{
	l->stopping = 1;
}
