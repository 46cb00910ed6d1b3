/* addrcount.c — per-address connection counts (addrcount.h): a fixed array of hash buckets, one chained entry per
 * address with connections open. Never keeps an entry whose count fell to zero. */
#include <netinet/in.h>
#include <string.h>

#include "addrcount.h"
#include "common.h"
#include "banned.h"

#define BUCKETS 1024 /* a power of two */

struct addr_entry {
	struct addr_entry *next;
	struct addr_key key;
	unsigned count;
};

struct addr_counts {
	struct addr_entry *bucket[BUCKETS];
	size_t size;
};

int addr_key_from(const struct sockaddr_storage *ss, struct addr_key *k)
{
	static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	memset(k, 0, sizeof(*k));
	if (ss->ss_family == AF_INET) {
		k->family = AF_INET;
		memcpy(k->bytes, &((const struct sockaddr_in *)ss)->sin_addr, 4);
		return 0;
	}
	if (ss->ss_family != AF_INET6)
		return -1;
	const uint8_t *a = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
	if (!memcmp(a, v4_mapped, sizeof(v4_mapped))) {
		k->family = AF_INET;
		memcpy(k->bytes, a + 12, 4);
	} else {
		k->family = AF_INET6;
		memcpy(k->bytes, a, 8);
	}
	return 0;
}

static size_t bucket_of(const struct addr_key *k)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	h = (h ^ k->family) * 16777619u;
	for (size_t i = 0; i < sizeof(k->bytes); i++)
		h = (h ^ k->bytes[i]) * 16777619u;
	return h & (BUCKETS - 1);
}

static int same_key(const struct addr_key *a, const struct addr_key *b)
{
	return a->family == b->family && !memcmp(a->bytes, b->bytes, sizeof(a->bytes));
}

struct addr_counts *addr_counts_new(void)
{
	return xcalloc(1, sizeof(struct addr_counts));
}

void addr_counts_free(struct addr_counts *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < BUCKETS; i++)
		for (struct addr_entry *en = t->bucket[i], *next; en; en = next) {
			next = en->next;
			free(en);
		}
	free(t);
}

static struct addr_entry **find(const struct addr_counts *t, const struct addr_key *k)
{
	struct addr_entry **p = (struct addr_entry **)&t->bucket[bucket_of(k)];
	while (*p && !same_key(&(*p)->key, k))
		p = &(*p)->next;
	return p;
}

unsigned addr_counts_get(const struct addr_counts *t, const struct addr_key *k)
{
	struct addr_entry *en = *find(t, k);
	return en ? en->count : 0;
}

void addr_counts_add(struct addr_counts *t, const struct addr_key *k)
{
	struct addr_entry **p = find(t, k);
	if (!*p) {
		*p = xcalloc(1, sizeof(**p));
		(*p)->key = *k;
		t->size++;
	}
	(*p)->count++;
}

void addr_counts_remove(struct addr_counts *t, const struct addr_key *k)
{
	struct addr_entry **p = find(t, k);
	struct addr_entry *en = *p;
	if (!en || --en->count)
		return;
	*p = en->next;
	free(en);
	t->size--;
}

size_t addr_counts_size(const struct addr_counts *t)
{
	return t->size;
}
