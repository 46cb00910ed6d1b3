/* test_zalloc.c — unit tests of zlib's allocator (lib/zalloc.c): freed inflate windows are reused, and zlib
 * still round-trips data through it. Needs zlib built with MY_ZCALLOC (mk/deps.sh). */
#include <stdlib.h>
#include <zlib.h>

#include "unit.h"
#include "banned.h"

void *zcalloc(void *opaque, unsigned items, unsigned size);
void zcfree(void *opaque, void *ptr);

TEST(zalloc_reuses_a_freed_window)
{
	void *first = zcalloc(NULL, 1, 32768);
	CHECK(first != NULL);
	memset(first, 0xab, 32768);
	zcfree(NULL, first);
	void *again = zcalloc(NULL, 32768, 1);
	CHECK(again == first);
	void *other = zcalloc(NULL, 1, 32768); /* the cache gave its block away: a fresh one */
	CHECK(other != NULL && other != again);
	zcfree(NULL, again);
	zcfree(NULL, other);
	zcfree(NULL, NULL);
}

TEST(zlib_round_trips_through_zalloc)
{
	static unsigned char text[65536], packed[70000], unpacked[65536];
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (unsigned char)("agor sandbox "[i % 13] ^ (i / 4096));
	for (int round = 0; round < 200; round++) {
		uLongf packed_len = sizeof(packed), unpacked_len = sizeof(unpacked);
		CHECK_INT(compress2(packed, &packed_len, text, sizeof(text), round % 10), Z_OK);
		CHECK_INT(uncompress(unpacked, &unpacked_len, packed, packed_len), Z_OK);
		CHECK_INT(unpacked_len, sizeof(text));
		CHECK(!memcmp(unpacked, text, sizeof(text)));
	}
}
