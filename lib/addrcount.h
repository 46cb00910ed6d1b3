/* addrcount.h — open connections counted per client address, for per-address caps. An address is what one client
 * controls: an IPv4 address, or an IPv6 /64 (one host gets a whole /64); an IPv4-mapped IPv6 address counts as the
 * IPv4 address. Never grows beyond one entry per address with connections open.
 *
 * Contract:
 *   addr_key_from(ss, &k) — 0 and k filled for an AF_INET/AF_INET6 address, -1 for anything else (Unix peers).
 *   addr_counts_add/remove(t, &k) — one more / one fewer open connection from k (remove never goes below 0 and
 *     drops the entry at 0); addr_counts_get(t, &k) — how many are open; addr_counts_size(t) — addresses held.
 */
#ifndef AGOR_ADDRCOUNT_H
#define AGOR_ADDRCOUNT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct addr_key {
	uint8_t family;	  /* AF_INET or AF_INET6 */
	uint8_t bytes[8]; /* IPv4: the 4 bytes of the address; IPv6: the first 8 (its /64) */
};

struct addr_counts;

int addr_key_from(const struct sockaddr_storage *ss, struct addr_key *k);
struct addr_counts *addr_counts_new(void);
void addr_counts_free(struct addr_counts *t);
unsigned addr_counts_get(const struct addr_counts *t, const struct addr_key *k);
void addr_counts_add(struct addr_counts *t, const struct addr_key *k);
void addr_counts_remove(struct addr_counts *t, const struct addr_key *k);
size_t addr_counts_size(const struct addr_counts *t);

#endif
