/* daemon_limits.h — what keeps a flood or a hostile browser page from hurting the daemon: refused calls audited
 * through a window, descriptor limits, allowed browser origins, the database size alarm. Core layer (daemon.h). */
#ifndef AGOR_DAEMON_LIMITS_H
#define AGOR_DAEMON_LIMITS_H

#include <jansson.h>
#include "daemon.h"
#include "err.h"

struct net_server_config;

/*
 * Limits (daemon_limits.c; docs/security.md section 9).
 * daemon_audit_refusal: the audit row of a refused call (outcome "refused"), through the refusal window of
 *   refusals.h so that a flood costs a few rows: the first refusal of a kind — the same caller (d->caller), actor,
 *   action, target and details — in daemon.audit_refusals_window_ms is written at once with details.peer = the
 *   caller; its repeats become one row with details.repeated = their number when the window ends; past
 *   daemon.audit_refusals_max kinds in a window, refusals are only counted, into one audit.refusals_suppressed row
 *   {count, by_action}. details (may be NULL) is stolen.
 * daemon_flush_refusals: writes the counted rows now and ends the window (before the audit is read, at shutdown).
 * daemon_plan_descriptors: raises RLIMIT_NOFILE for daemon.max_connections + daemon.fd_reserve (fdlimit.h) and fills
 *   the TCP caps of the listener's config; when the hard limit is too low, serves fewer TCP connections and logs it.
 * daemon_watch_db_size: measures the database and its WAL now and every few seconds; past daemon.db_size_alarm_mb
 *   the alarm is set and logged (again at most once an hour while it lasts).
 */
void daemon_audit_refusal(struct daemon *d, const char *actor, const char *action, const char *target, json_t *details);
void daemon_flush_refusals(struct daemon *d);
int daemon_plan_descriptors(struct daemon *d, struct net_server_config *sc, struct err *e);
void daemon_watch_db_size(struct daemon *d);
/* The browser origins (origin.h) once the TCP port is known; 1 when the Origin header value may call. */
void daemon_set_origins(struct daemon *d, int tcp_port);
int daemon_origin_allowed(const struct daemon *d, const char *origin);
/* Frees what the limits hold (daemon_release, after daemon_flush_refusals). */
void daemon_limits_release(struct daemon *d);

#endif
