/* daemon_main.h — the daemon's life: everything up to the listeners (daemon_init), serving until a stop signal
 * (daemon_run, daemon_serve.h), and the release of every part. The top of the daemon's layers (daemon.h). */
#ifndef AGOR_DAEMON_MAIN_H
#define AGOR_DAEMON_MAIN_H

#include "config.h"
#include "daemon.h"
#include "err.h"

/* Everything up to the listeners: home, secrets, database, crash recovery. */
int daemon_init(struct daemon *d, struct config *cfg, struct err *e);
void daemon_release(struct daemon *d);

#endif
