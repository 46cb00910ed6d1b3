/* daemon.c — the daemon's base (daemon.h): the clock, new ids, the audit helper and the write batch every other
 * daemon file uses.
 * Calls nothing above it: an audit row that cannot be written is logged loudly, never dropped silently. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include "audit.h"
#include "daemon.h"
#include "log.h"
#include "loop.h"
#include "banned.h"

long long daemon_now(void)
{
	return (long long)time(NULL);
}

char *daemon_new_id(void)
{
	uint8_t b[16];
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n > 0)
			got += (size_t)n;
		else if (errno != EINTR)
			abort();
	}
	char *s = xmalloc(33);
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(s + 2 * i, 3, "%02x", b[i]);
	return s;
}

void daemon_audit(struct daemon *d, const char *actor, const char *action, const char *target, const char *outcome,
		  json_t *details)
{
	struct err e = ERR_INIT;
	if (audit_append(d->db, actor ? actor : "?", action, target, outcome, details, &e) < 0)
		log_error("AUDIT LOG WRITE FAILED for %s %s: %s", action, target ? target : "", e.message);
	err_clear(&e);
	if (details)
		json_decref(details);
}

void daemon_commit_write_batch(struct daemon *d)
{
	struct err e = ERR_INIT;
	if (!d->write_batch_open)
		return;
	if (d->before_commit) /* the counted token uses ride in the batch */
		d->before_commit(d);
	d->write_batch_open = 0;
	if (db_commit(d->db, &e) < 0) {
		log_error("could not commit a batch of writes: %s", e.message);
		err_clear(&e);
		db_exec(d->db, "ROLLBACK", &e);
		err_clear(&e);
	}
}

static void commit_write_batch(struct loop *l, void *arg)
{
	(void)l;
	daemon_commit_write_batch(arg);
}

void daemon_write_batch(struct daemon *d)
{
	struct err e = ERR_INIT;
	if (d->write_batch_open || !d->loop)
		return;
	if (db_begin(d->db, &e) < 0) { /* the writes then commit one by one */
		log_error("could not open a batch of writes: %s", e.message);
		err_clear(&e);
		return;
	}
	d->write_batch_open = 1;
	loop_defer(d->loop, commit_write_batch, d);
}
