/* test_limits.c — unit tests of the daemon's limits: per-address connection counts (addrcount.h) and the
 * descriptor budget (fdlimit.h). Never opens a socket. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "addrcount.h"
#include "fdlimit.h"
#include "unit.h"
#include "banned.h"

/* === per-address counts ===================================================================== */

static struct addr_key key_of(int family, const char *text)
{
	struct sockaddr_storage ss = { .ss_family = (sa_family_t)family };
	struct addr_key k;
	if (family == AF_INET)
		inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr);
	else
		inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr);
	CHECK_INT(addr_key_from(&ss, &k), 0);
	return k;
}

TEST(addrcount_counts_ipv4_and_ipv6_slash_64)
{
	struct addr_counts *t = addr_counts_new();
	struct addr_key a = key_of(AF_INET, "10.0.0.1"), mapped = key_of(AF_INET6, "::ffff:10.0.0.1");
	struct addr_key v6a = key_of(AF_INET6, "2001:db8:1:2::1"), v6b = key_of(AF_INET6, "2001:db8:1:2:ffff::9");
	struct addr_key other = key_of(AF_INET6, "2001:db8:1:3::1");
	addr_counts_add(t, &a);
	addr_counts_add(t, &mapped); /* the same client */
	addr_counts_add(t, &v6a);
	addr_counts_add(t, &v6b); /* the same /64 */
	CHECK_INT(addr_counts_get(t, &a), 2);
	CHECK_INT(addr_counts_get(t, &v6a), 2);
	CHECK_INT(addr_counts_get(t, &other), 0);
	CHECK_INT(addr_counts_size(t), 2);
	addr_counts_remove(t, &a);
	addr_counts_remove(t, &a);
	addr_counts_remove(t, &a); /* never below 0 */
	CHECK_INT(addr_counts_get(t, &a), 0);
	CHECK_INT(addr_counts_size(t), 1);
	for (int i = 0; i < 5000; i++) { /* many addresses, chained buckets */
		struct addr_key k = { .family = AF_INET, .bytes = { 10, (uint8_t)(i >> 8), (uint8_t)i, 1 } };
		addr_counts_add(t, &k);
	}
	CHECK_INT(addr_counts_size(t), 5001);
	addr_counts_free(t);
	struct sockaddr_storage unix_peer = { .ss_family = AF_UNIX };
	struct addr_key k;
	CHECK_INT(addr_key_from(&unix_peer, &k), -1);
}

/* === descriptor budget ====================================================================== */

TEST(fdlimit_raises_the_soft_limit_or_shares_what_there_is)
{
	struct fd_budget b;
	fd_budget_plan(1024, 524288, 12, 4096, 1024, &b); /* systemd's default soft limit: raised */
	CHECK_INT(b.soft, 12 + 4096 + 1024);
	CHECK(b.raised && !b.lowered);
	CHECK_INT(b.max_tcp, 4096);
	CHECK_INT(b.reserve, 1024);
	CHECK_INT(b.tcp_fd_ceiling, 12 + 4096);
	fd_budget_plan(65536, 65536, 12, 4096, 1024, &b); /* already enough: left alone */
	CHECK_INT(b.soft, 65536);
	CHECK(!b.raised && !b.lowered);
	fd_budget_plan(1024, 4096, 12, 4096, 1024, &b); /* the hard limit is short: TCP gives way */
	CHECK_INT(b.soft, 4096);
	CHECK(b.raised && b.lowered);
	CHECK_INT(b.reserve, 1024);
	CHECK_INT(b.max_tcp, 4096 - 12 - 1024);
	fd_budget_plan(1024, 1024, 12, 4096, 1024, &b); /* so short the reserve would leave nothing: halved */
	CHECK(!b.raised && b.lowered);
	CHECK_INT(b.max_tcp, (1024 - 12) / 2);
	CHECK_INT(b.max_tcp + b.reserve, 1024 - 12);
	CHECK_INT(b.tcp_fd_ceiling, 12 + b.max_tcp);
}
