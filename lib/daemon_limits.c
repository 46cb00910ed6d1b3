/* daemon_limits.c — what keeps a flood from stalling the daemon (daemon.h "Limits"): the descriptor budget and the
 * caps of the TCP listener. Never lets TCP connections take the Unix socket's descriptors. */
#include <string.h>

#include "daemon.h"
#include "fdlimit.h"
#include "log.h"
#include "net.h"
#include "banned.h"

/* --- descriptors -------------------------------------------------------------------------- */

int daemon_plan_descriptors(struct daemon *d, struct net_server_config *sc, struct err *e)
{
	const struct config *cfg = d->cfg;
	struct fd_budget b;
	if (fd_budget_apply((unsigned long)cfg->daemon.max_connections, (unsigned long)cfg->daemon.fd_reserve, &b, e) < 0)
		return -1;
	if (b.raised)
		log_info("open-file limit raised from %lu to %lu: daemon.max_connections %lld + daemon.fd_reserve %lld + "
			 "%lu open", b.soft_before, b.soft, cfg->daemon.max_connections, cfg->daemon.fd_reserve, b.open);
	if (b.lowered)
		log_warn("the open-file limit is %lu (hard %lu): serving at most %lu TCP connections and keeping %lu "
			 "descriptors for the Unix socket and executors, instead of daemon.max_connections %lld + "
			 "daemon.fd_reserve %lld (raise the hard limit: LimitNOFILE=%lld in the systemd unit, or ulimit -Hn)",
			 b.soft, b.hard, b.max_tcp, b.reserve, cfg->daemon.max_connections, cfg->daemon.fd_reserve,
			 (long long)b.open + cfg->daemon.max_connections + cfg->daemon.fd_reserve);
	sc->max_connections = (unsigned)(b.max_tcp ? b.max_tcp : 1);
	sc->tcp_fd_ceiling = (int)b.tcp_fd_ceiling;
	sc->max_unix_connections = (unsigned)(b.reserve / 2 ? b.reserve / 2 : 1);
	sc->max_per_ip = (unsigned)cfg->daemon.max_connections_per_ip;
	sc->max_unauthenticated = (unsigned)cfg->daemon.max_unauthenticated;
	sc->auth_timeout_ms = (unsigned)cfg->daemon.auth_timeout_ms;
	return 0;
}
