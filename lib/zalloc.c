/* zalloc.c — zlib's allocator (mk/deps.sh builds zlib with MY_ZCALLOC, so zlib calls these two functions).
 * Keeps a few freed blocks for reuse: a checkout inflates one loose object per file, and musl's malloc maps and
 * unmaps every 32 KiB inflate window, which costs two system calls and a TLB shootdown each time. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "common.h"
#include "banned.h"

/* zlib's names and types (zutil.h); zlib declares them hidden, which a static link resolves here */
void *zcalloc(void *opaque, unsigned items, unsigned size);
void zcfree(void *opaque, void *ptr);

enum { ZALLOC_CACHE_SLOTS = 8, ZALLOC_CACHE_MIN = 4096, ZALLOC_HEADER = 16 };

struct zalloc_slot {
	size_t size;
	void *block; /* the whole allocation, header included */
};

static struct zalloc_slot cache[ZALLOC_CACHE_SLOTS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void *take_cached(size_t size)
{
	void *block = NULL;
	pthread_mutex_lock(&cache_lock);
	for (size_t i = 0; i < ZALLOC_CACHE_SLOTS && !block; i++)
		if (cache[i].block && cache[i].size == size) {
			block = cache[i].block;
			cache[i].block = NULL;
		}
	pthread_mutex_unlock(&cache_lock);
	return block;
}

/* Returns 1 when the block was kept for reuse. */
static int keep_cached(void *block, size_t size)
{
	int kept = 0;
	pthread_mutex_lock(&cache_lock);
	for (size_t i = 0; i < ZALLOC_CACHE_SLOTS && !kept; i++)
		if (!cache[i].block) {
			cache[i] = (struct zalloc_slot){ .size = size, .block = block };
			kept = 1;
		}
	pthread_mutex_unlock(&cache_lock);
	return kept;
}

void *zcalloc(void *opaque, unsigned items, unsigned size)
{
	(void)opaque;
	if (size && items > (SIZE_MAX - ZALLOC_HEADER) / size)
		return NULL;
	size_t n = (size_t)items * size;
	void *block = n >= ZALLOC_CACHE_MIN ? take_cached(n) : NULL;
	if (!block && !(block = malloc(n + ZALLOC_HEADER)))
		return NULL;
	*(size_t *)block = n;
	return (char *)block + ZALLOC_HEADER;
}

void zcfree(void *opaque, void *ptr)
{
	(void)opaque;
	if (!ptr)
		return;
	void *block = (char *)ptr - ZALLOC_HEADER;
	size_t n = *(size_t *)block;
	if (n < ZALLOC_CACHE_MIN || !keep_cached(block, n))
		free(block);
}
