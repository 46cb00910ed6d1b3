/* daemon_dispatch.h — the daemon's one method table: a message from a connection goes to its handler (or, for an
 * executor's report_message line, to the fast path that reads it without building JSON). Top layer (daemon.h). */
#ifndef AGOR_DAEMON_DISPATCH_H
#define AGOR_DAEMON_DISPATCH_H

#include <stddef.h>

#include "daemon.h"
#include "daemon_peer.h"
#include "err.h"

/* 0 when the table is sorted strictly by name (it is searched by bisection), else -1 naming the first name out of
 * order: daemon_init refuses to start. */
int daemon_dispatch_check(struct err *e);
/* Processes one message from peer; returns the reply text (malloc'd) or NULL. */
char *daemon_handle_message(struct daemon *d, struct daemon_peer *peer, const char *msg, size_t len);

#endif
