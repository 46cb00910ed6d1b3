/* test_crypto.c — unit tests of crypto.h: known answers, AES-GCM tampering, strict base64 decoding.
 * Never uses a vector it cannot cite (FIPS 180-2, RFC 4231, RFC 4648). */
#include <stdint.h>

#include "crypto.h"
#include "err.h"
#include "strbuf.h"
#include "unit.h"
#include "banned.h"

static const uint8_t KEY[CRYPTO_KEY_LEN] = "0123456789abcdef0123456789abcdef";
static const uint8_t OTHER_KEY[CRYPTO_KEY_LEN] = "0123456789abcdef0123456789abcdeF";

/* ---- SHA-256 / HMAC -------------------------------------------------------------------------- */

TEST(crypto_sha256_known_answers)
{
	char hex[CRYPTO_SHA256_HEX_LEN + 1];
	crypto_sha256_hex("abc", 3, hex); /* FIPS 180-2 B.1 */
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	crypto_sha256_hex("", 0, hex);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	crypto_sha256_hex(two_blocks, strlen(two_blocks), hex); /* FIPS 180-2 B.2 */
	CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(crypto_sha256_incremental_equals_one_shot)
{
	/* FIPS 180-2 B.3: one million 'a', fed in uneven pieces. */
	char block[1000];
	memset(block, 'a', sizeof(block));
	struct crypto_sha256 h;
	crypto_sha256_init(&h);
	size_t fed = 0;
	for (size_t step = 1; fed < 1000000; step = step % 997 + 1) {
		size_t n = step < 1000000 - fed ? step : 1000000 - fed;
		crypto_sha256_update(&h, block, n);
		fed += n;
	}
	uint8_t digest[CRYPTO_SHA256_LEN];
	crypto_sha256_final(&h, digest);
	CHECK_HEX(digest, sizeof(digest), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(crypto_hex_is_lowercase)
{
	char out[9];
	crypto_hex("\x00\x09\x0a\xff", 4, out);
	CHECK_STR(out, "00090aff");
}

TEST(crypto_hmac_sha256_rfc4231)
{
	uint8_t mac[CRYPTO_HMAC_SHA256_LEN];
	const char *data = "what do ya want for nothing?"; /* test case 2 */
	crypto_hmac_sha256("Jefe", 4, data, strlen(data), mac);
	CHECK_HEX(mac, sizeof(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

	uint8_t key[131]; /* test case 6: a key longer than the block size is hashed first */
	memset(key, 0xaa, sizeof(key));
	const char *msg = "Test Using Larger Than Block-Size Key - Hash Key First";
	crypto_hmac_sha256(key, sizeof(key), msg, strlen(msg), mac);
	CHECK_HEX(mac, sizeof(mac), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");

	uint8_t key1[20]; /* test case 1 */
	memset(key1, 0x0b, sizeof(key1));
	crypto_hmac_sha256(key1, sizeof(key1), "Hi There", 8, mac);
	CHECK_HEX(mac, sizeof(mac), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(crypto_equal_compares_every_byte)
{
	CHECK(crypto_equal("abcdef", "abcdef", 6));
	CHECK(!crypto_equal("abcdef", "abcdeg", 6));
	CHECK(!crypto_equal("xbcdef", "abcdef", 6));
	CHECK(crypto_equal("a", "b", 0));
	/* a token's length: every byte position (in the 8-byte words and the tail), every bit, tells */
	unsigned char a[37], b[37];
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (unsigned char)(i * 7 + 1);
	memcpy(b, a, sizeof(a));
	CHECK(crypto_equal(a, b, sizeof(a)));
	int told = 1;
	for (size_t i = 0; i < sizeof(a); i++)
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (unsigned char)(1u << bit);
			told &= !crypto_equal(a, b, sizeof(a)) && crypto_equal(a, b, i);
			b[i] ^= (unsigned char)(1u << bit);
		}
	CHECK(told);
}

/* ---- randomness ------------------------------------------------------------------------------ */

TEST(crypto_random_fills_and_differs)
{
	struct err e = ERR_INIT;
	uint8_t a[32] = { 0 }, b[32] = { 0 }, zero[32] = { 0 };
	CHECK_INT(crypto_random(a, sizeof(a), &e), 0);
	CHECK_INT(crypto_random(b, sizeof(b), &e), 0);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	CHECK(memcmp(a, zero, sizeof(a)) != 0);
	size_t big_len = 1 << 20; /* larger than one getrandom call may return at once */
	uint8_t *big = xcalloc(1, big_len);
	CHECK_INT(crypto_random(big, big_len, &e), 0);
	size_t zeros = 0;
	for (size_t i = 0; i < big_len; i++)
		zeros += big[i] == 0;
	CHECK(zeros < big_len / 128); /* ~1/256 expected */
	free(big);
	CHECK_INT(crypto_random(a, 0, &e), 0);
	unsigned char c[16];
	CHECK_INT(crypto_mbedtls_rng(NULL, c, sizeof(c)), 0);
	CHECK(!err_is_set(&e));
}

/* ---- AES-256-GCM ----------------------------------------------------------------------------- */

static const char SECRET_TEXT[] = "the api key is sk-very-secret";
static const char AAD[] = "api_keys:anthropic:user-1";

static void seal_secret(struct strbuf *blob)
{
	struct err e = ERR_INIT;
	CHECK_INT(crypto_seal(KEY, SECRET_TEXT, strlen(SECRET_TEXT), AAD, strlen(AAD), blob, &e), 0);
	CHECK(!err_is_set(&e));
}

static void check_open_refused(const uint8_t *key, const void *blob, size_t len, const void *aad, size_t aadlen)
{
	struct err e = ERR_INIT;
	struct strbuf out = STRBUF_INIT;
	strbuf_addstr(&out, "kept");
	CHECK_INT(crypto_open(key, blob, len, aad, aadlen, &out, &e), -1);
	CHECK_STR(e.code, E_AUTH_FAILED);
	CHECK_STR(out.buf, "kept"); /* nothing appended, not even partially */
	CHECK_INT(out.len, 4);
	strbuf_release(&out);
	err_clear(&e);
}

TEST(crypto_seal_round_trip)
{
	struct err e = ERR_INIT;
	struct strbuf blob = STRBUF_INIT, plain = STRBUF_INIT;
	seal_secret(&blob);
	CHECK_INT(blob.len, CRYPTO_SEAL_OVERHEAD + strlen(SECRET_TEXT));
	CHECK_INT((uint8_t)blob.buf[0], CRYPTO_SEAL_VERSION);
	CHECK(memmem(blob.buf, blob.len, "sk-very-secret", 14) == NULL);
	strbuf_addstr(&plain, "prefix:");
	CHECK_INT(crypto_open(KEY, blob.buf, blob.len, AAD, strlen(AAD), &plain, &e), 0);
	CHECK_STR(plain.buf, "prefix:the api key is sk-very-secret");
	crypto_strbuf_wipe(&plain);
	CHECK_INT(plain.len, 0);

	/* A fresh nonce every time: the same plaintext never seals to the same blob. */
	struct strbuf again = STRBUF_INIT;
	seal_secret(&again);
	CHECK_INT(again.len, blob.len);
	CHECK(memcmp(again.buf + 1, blob.buf + 1, CRYPTO_SEAL_NONCE_LEN) != 0);
	CHECK(memcmp(again.buf, blob.buf, blob.len) != 0);
	strbuf_release(&again);
	strbuf_release(&blob);
}

TEST(crypto_seal_empty_plaintext_and_no_aad)
{
	struct err e = ERR_INIT;
	struct strbuf blob = STRBUF_INIT, plain = STRBUF_INIT;
	CHECK_INT(crypto_seal(KEY, NULL, 0, NULL, 0, &blob, &e), 0);
	CHECK_INT(blob.len, CRYPTO_SEAL_OVERHEAD);
	CHECK_INT(crypto_open(KEY, blob.buf, blob.len, NULL, 0, &plain, &e), 0);
	CHECK_INT(plain.len, 0);
	check_open_refused(KEY, blob.buf, blob.len, "x", 1);
	check_open_refused(OTHER_KEY, blob.buf, blob.len, NULL, 0);
	strbuf_release(&blob);
	strbuf_release(&plain);
}

TEST(crypto_open_refuses_every_flipped_bit)
{
	struct strbuf blob = STRBUF_INIT;
	seal_secret(&blob);
	for (size_t i = 0; i < blob.len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			blob.buf[i] ^= (char)(1 << bit);
			check_open_refused(KEY, blob.buf, blob.len, AAD, strlen(AAD));
			blob.buf[i] ^= (char)(1 << bit);
		}
	}
	strbuf_release(&blob);
}

TEST(crypto_open_refuses_truncation_and_extension)
{
	struct strbuf blob = STRBUF_INIT;
	seal_secret(&blob);
	for (size_t len = 0; len < blob.len; len++)
		check_open_refused(KEY, blob.buf, len, AAD, strlen(AAD));
	strbuf_addch(&blob, '\0');
	check_open_refused(KEY, blob.buf, blob.len, AAD, strlen(AAD));
	strbuf_release(&blob);
}

TEST(crypto_open_refuses_wrong_key_and_wrong_aad)
{
	struct strbuf blob = STRBUF_INIT;
	seal_secret(&blob);
	check_open_refused(OTHER_KEY, blob.buf, blob.len, AAD, strlen(AAD));
	check_open_refused(KEY, blob.buf, blob.len, "api_keys:openai:user-1", 22);
	check_open_refused(KEY, blob.buf, blob.len, AAD, strlen(AAD) - 1);
	check_open_refused(KEY, blob.buf, blob.len, NULL, 0);
	strbuf_release(&blob);
}

TEST(crypto_open_refuses_unknown_version)
{
	struct err e = ERR_INIT;
	struct strbuf blob = STRBUF_INIT, plain = STRBUF_INIT;
	seal_secret(&blob);
	blob.buf[0] = 2;
	CHECK_INT(crypto_open(KEY, blob.buf, blob.len, AAD, strlen(AAD), &plain, &e), -1);
	CHECK_STR(e.code, E_AUTH_FAILED);
	CHECK_CONTAINS(e.message, "version");
	err_clear(&e);
	strbuf_release(&blob);
	strbuf_release(&plain);
}

/* ---- base64url / base64 ---------------------------------------------------------------------- */

static const struct {
	const char *plain, *url, *std;
} RFC4648_VECTORS[] = {
	/* RFC 4648 §10; the url form drops the padding */
	{ "", "", "" },
	{ "f", "Zg", "Zg==" },
	{ "fo", "Zm8", "Zm8=" },
	{ "foo", "Zm9v", "Zm9v" },
	{ "foob", "Zm9vYg", "Zm9vYg==" },
	{ "fooba", "Zm9vYmE", "Zm9vYmE=" },
	{ "foobar", "Zm9vYmFy", "Zm9vYmFy" },
};

TEST(crypto_base64_rfc4648_vectors)
{
	struct err e = ERR_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(RFC4648_VECTORS); i++) {
		const char *plain = RFC4648_VECTORS[i].plain;
		struct strbuf sb = STRBUF_INIT;
		crypto_base64url_encode(plain, strlen(plain), &sb);
		CHECK_STR(sb.buf, RFC4648_VECTORS[i].url);
		strbuf_reset(&sb);
		crypto_base64_encode(plain, strlen(plain), &sb);
		CHECK_STR(sb.buf, RFC4648_VECTORS[i].std);
		strbuf_reset(&sb);
		CHECK_INT(crypto_base64url_decode(RFC4648_VECTORS[i].url, strlen(RFC4648_VECTORS[i].url), &sb, &e), 0);
		CHECK_STR(sb.buf, plain);
		strbuf_reset(&sb);
		CHECK_INT(crypto_base64_decode(RFC4648_VECTORS[i].std, strlen(RFC4648_VECTORS[i].std), &sb, &e), 0);
		CHECK_STR(sb.buf, plain);
		strbuf_release(&sb);
	}
	CHECK(!err_is_set(&e));
}

TEST(crypto_base64_alphabets_differ_in_62_and_63)
{
	struct err e = ERR_INIT;
	struct strbuf sb = STRBUF_INIT;
	crypto_base64url_encode("\xfb\xff\xbf", 3, &sb);
	CHECK_STR(sb.buf, "-_-_");
	strbuf_reset(&sb);
	crypto_base64_encode("\xfb\xff\xbf", 3, &sb);
	CHECK_STR(sb.buf, "+/+/");
	strbuf_reset(&sb);
	CHECK_INT(crypto_base64url_decode("-_-_", 4, &sb, &e), 0);
	CHECK(sb.len == 3 && !memcmp(sb.buf, "\xfb\xff\xbf", 3));
	strbuf_release(&sb);
}

TEST(crypto_base64_round_trips_every_length_and_byte)
{
	struct err e = ERR_INIT;
	uint8_t data[300];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	for (size_t len = 0; len <= sizeof(data); len++) {
		struct strbuf enc = STRBUF_INIT, dec = STRBUF_INIT;
		crypto_base64url_encode(data, len, &enc);
		CHECK_INT(crypto_base64url_decode(enc.buf, enc.len, &dec, &e), 0);
		CHECK(dec.len == len && !memcmp(dec.buf, data, len));
		strbuf_reset(&enc);
		strbuf_reset(&dec);
		crypto_base64_encode(data, len, &enc);
		CHECK_INT(enc.len % 4, 0);
		CHECK_INT(crypto_base64_decode(enc.buf, enc.len, &dec, &e), 0);
		CHECK(dec.len == len && !memcmp(dec.buf, data, len));
		strbuf_release(&enc);
		strbuf_release(&dec);
	}
}

static void check_url_refused(const char *s, size_t len, const char *why)
{
	struct err e = ERR_INIT;
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "kept");
	if (crypto_base64url_decode(s, len, &sb, &e) != -1)
		unit_fail(__FILE__, __LINE__, "base64url accepted \"%s\"", s);
	CHECK_STR(e.code, E_INVALID_PAYLOAD);
	CHECK_CONTAINS(e.message, why);
	CHECK_STR(sb.buf, "kept");
	strbuf_release(&sb);
	err_clear(&e);
}

static void check_std_refused(const char *s, const char *why)
{
	struct err e = ERR_INIT;
	struct strbuf sb = STRBUF_INIT;
	if (crypto_base64_decode(s, strlen(s), &sb, &e) != -1)
		unit_fail(__FILE__, __LINE__, "base64 accepted \"%s\"", s);
	CHECK_STR(e.code, E_INVALID_PAYLOAD);
	CHECK_CONTAINS(e.message, why);
	CHECK_INT(sb.len, 0);
	strbuf_release(&sb);
	err_clear(&e);
}

TEST(crypto_base64url_decode_is_strict)
{
	check_url_refused("Zg==", 4, "padding");
	check_url_refused("Zm8=", 4, "padding");
	check_url_refused("Zm9v=", 5, "length");
	check_url_refused("Z", 1, "length");
	check_url_refused("Zm9vY", 5, "length");
	check_url_refused("Zm9v YmF", 8, "invalid character at offset 4");
	check_url_refused("Zm9v\nYmE", 8, "invalid character");
	check_url_refused("Zm9vYmF\r", 8, "invalid character");
	check_url_refused("Zm+v", 4, "invalid character at offset 2"); /* standard alphabet */
	check_url_refused("Zm/v", 4, "invalid character");
	check_url_refused("Zm9\0", 4, "invalid character at offset 3");
	check_url_refused("Zm\xc3\xa9", 4, "invalid character at offset 2");
	check_url_refused("Zh", 2, "non-canonical");  /* 'h' leaves a 1 in the 4 spare bits */
	check_url_refused("Zm9", 3, "non-canonical"); /* '9' leaves a 1 in the 2 spare bits */
	check_url_refused("Zm9vYh", 6, "non-canonical");
}

TEST(crypto_base64_decode_is_strict)
{
	check_std_refused("Zg", "length");
	check_std_refused("Zg=", "length");
	check_std_refused("Zg===", "length");
	check_std_refused("Z===", "padding");
	check_std_refused("====", "padding");
	check_std_refused("Zg=A", "padding");
	check_std_refused("Zm9v\n", "length");
	check_std_refused("Zm9v Zm8", "invalid character at offset 4");
	check_std_refused("Zm-v", "invalid character"); /* url alphabet */
	check_std_refused("Zh==", "non-canonical");
	check_std_refused("Zm9=", "non-canonical");
}
