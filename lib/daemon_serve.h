/* daemon_serve.h — the daemon's transports: the Unix socket and TCP listeners (lib/net), each connection's
 * identity and messages, /healthz, /metrics and the web terminal's files, signals and graceful shutdown. Top layer
 * (daemon.h). */
#ifndef AGOR_DAEMON_SERVE_H
#define AGOR_DAEMON_SERVE_H

#include "daemon.h"
#include "err.h"

/* Opens the listeners and runs the loop until SIGTERM/SIGINT; SIGHUP reopens logs. */
int daemon_run(struct daemon *d, struct err *e);

#endif
