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
#include "fault.h"
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

/* What a caller whose write was in a lost batch is told: the cause by its errno, and what to do. */
static void explain_lost_batch(struct daemon *d, const char *sqlite_message, struct err *e)
{
	int cause = db_failure_errno(d->db);
	if (cause == ENOSPC)
		err_set(e, E_SYSTEM,
			"not stored: the database's disk is full (ENOSPC: %s); free space on the data home's disk, "
			"then retry",
			sqlite_message);
	else if (cause == EIO)
		err_set(e, E_SYSTEM,
			"not stored: the database's disk failed a write (EIO: %s); check the disk (dmesg), then retry",
			sqlite_message);
	else
		err_set(e, E_SYSTEM, "not stored: the database could not commit (%s); retry", sqlite_message);
}

int daemon_commit_write_batch_or_why(struct daemon *d, struct err *e)
{
	struct err why = ERR_INIT;
	if (!d->write_batch_open)
		return 0;
	if (d->before_commit) /* the counted token uses ride in the batch */
		d->before_commit(d);
	d->write_batch_open = 0;
	int rc = 0;
	fault_step("batch.commit");
	if (db_commit(d->db, &why) < 0) {
		log_error("could not commit a batch of writes: %s", why.message);
		explain_lost_batch(d, why.message, e);
		err_clear(&why);
		db_rollback(d->db);
		rc = -1;
	}
	if (d->after_commit) /* its events go (or are dropped), its lost task endings are rewritten */
		d->after_commit(d, rc < 0 ? e : NULL);
	strvec_clear(&d->batch_endings);
	return rc;
}

void daemon_commit_write_batch(struct daemon *d)
{
	struct err e = ERR_INIT;
	daemon_commit_write_batch_or_why(d, &e);
	err_clear(&e);
}

void daemon_note_task_ending(struct daemon *d, const char *task_id)
{
	if (d->write_batch_open)
		strvec_push(&d->batch_endings, task_id);
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
