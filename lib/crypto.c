/* crypto.c — the mbedTLS wrappers of crypto.h: getrandom, SHA-256, HMAC, AES-256-GCM blobs, strict base64.
 * Never falls back to a weaker randomness source, never outputs unauthenticated plaintext, never leaves keys. */
#include <errno.h>
#include <mbedtls/entropy.h>
#include <mbedtls/gcm.h>
#include <mbedtls/md.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "crypto.h"
#include "banned.h"

/* ---- randomness ------------------------------------------------------------------------------ */

int crypto_random(void *buf, size_t len, struct err *e)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_errno(e, errno, "getrandom");
		if (n == 0)
			return err_set(e, E_SYSTEM, "getrandom returned no bytes");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int crypto_mbedtls_rng(void *ctx, unsigned char *buf, size_t len)
{
	(void)ctx;
	struct err e = ERR_INIT;
	if (crypto_random(buf, len, &e) < 0) {
		err_clear(&e);
		return MBEDTLS_ERR_ENTROPY_SOURCE_FAILED;
	}
	return 0;
}

/* ---- wiping and comparison ------------------------------------------------------------------- */

void crypto_wipe(void *p, size_t n)
{
	if (p && n)
		explicit_bzero(p, n);
}

void crypto_strbuf_wipe(struct strbuf *sb)
{
	if (sb->alloc)
		explicit_bzero(sb->buf, sb->alloc);
	strbuf_release(sb);
}

/* Eight bytes at a time (an executor's token is compared on every call it makes): the differences are gathered,
 * never branched on, and the barrier keeps the compiler from stopping at the first one. */
int crypto_equal(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	uint64_t diff = 0;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t p, q;
		memcpy(&p, x + i, 8);
		memcpy(&q, y + i, 8);
		diff |= p ^ q;
		__asm__("" : "+r"(diff));
	}
	for (; i < n; i++) {
		diff |= (uint64_t)(x[i] ^ y[i]);
		__asm__("" : "+r"(diff));
	}
	return (int)(1 & ((diff | (0 - diff)) >> 63 ^ 1));
}

/* mbedTLS returns an error code only for conditions this module rules out (bad parameters, hardware
 * back ends); reaching one means memory corruption or a broken build, where continuing is worse. */
static void must_succeed(int mbedtls_ret)
{
	if (mbedtls_ret != 0)
		abort();
}

/* ---- SHA-256 and HMAC ------------------------------------------------------------------------ */

void crypto_sha256_init(struct crypto_sha256 *h)
{
	mbedtls_sha256_init(&h->ctx);
	must_succeed(mbedtls_sha256_starts_ret(&h->ctx, 0));
}

void crypto_sha256_update(struct crypto_sha256 *h, const void *data, size_t len)
{
	if (len)
		must_succeed(mbedtls_sha256_update_ret(&h->ctx, data, len));
}

void crypto_sha256_final(struct crypto_sha256 *h, uint8_t out[CRYPTO_SHA256_LEN])
{
	must_succeed(mbedtls_sha256_finish_ret(&h->ctx, out));
	mbedtls_sha256_free(&h->ctx); /* zeroizes the context */
}

void crypto_sha256(const void *data, size_t len, uint8_t out[CRYPTO_SHA256_LEN])
{
	struct crypto_sha256 h;
	crypto_sha256_init(&h);
	crypto_sha256_update(&h, data, len);
	crypto_sha256_final(&h, out);
}

/* Branch-free nibble → '0'…'9','a'…'f' (no table lookup indexed by secret data). */
static char hex_digit(unsigned nibble)
{
	int n = (int)nibble;
	return (char)(n + '0' + (((9 - n) >> 8) & ('a' - '0' - 10)));
}

void crypto_hex(const void *bytes, size_t n, char *out)
{
	const uint8_t *b = bytes;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex_digit(b[i] >> 4);
		out[2 * i + 1] = hex_digit(b[i] & 0xf);
	}
	out[2 * n] = '\0';
}

void crypto_sha256_hex(const void *data, size_t len, char out[CRYPTO_SHA256_HEX_LEN + 1])
{
	uint8_t digest[CRYPTO_SHA256_LEN];
	crypto_sha256(data, len, digest);
	crypto_hex(digest, sizeof(digest), out);
}

void crypto_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
			uint8_t out[CRYPTO_HMAC_SHA256_LEN])
{
	const mbedtls_md_info_t *sha256 = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	if (!sha256)
		abort(); /* mbedTLS built without SHA-256: a broken build */
	/* mbedtls_md_hmac allocates its context (and wipes it in mbedtls_md_free); it fails only on
	 * allocation, which we treat like xmalloc does. */
	must_succeed(mbedtls_md_hmac(sha256, key_len ? key : (const void *)"", key_len, len ? data : (const void *)"",
				     len, out));
}

/* ---- AES-256-GCM sealed blobs ---------------------------------------------------------------- */

/* The GCM additional data: the version byte followed by the caller's aad, so the version is
 * authenticated too (a future version cannot be downgraded by editing one byte). */
static uint8_t *sealing_aad(const void *aad, size_t aadlen, size_t *full_len)
{
	if (aadlen > SIZE_MAX - 1)
		abort();
	uint8_t *full = xmalloc(1 + aadlen);
	full[0] = CRYPTO_SEAL_VERSION;
	if (aadlen)
		memcpy(full + 1, aad, aadlen);
	*full_len = 1 + aadlen;
	return full;
}

static int gcm_with_key(mbedtls_gcm_context *gcm, const uint8_t key[CRYPTO_KEY_LEN], struct err *e)
{
	mbedtls_gcm_init(gcm);
	int ret = mbedtls_gcm_setkey(gcm, MBEDTLS_CIPHER_ID_AES, key, CRYPTO_KEY_LEN * 8);
	if (ret != 0) {
		mbedtls_gcm_free(gcm);
		return err_set(e, E_INTERNAL, "AES-256-GCM key setup failed (mbedTLS -0x%04x)", (unsigned)-ret);
	}
	return 0;
}

int crypto_seal(const uint8_t key[CRYPTO_KEY_LEN], const void *plaintext, size_t len, const void *aad, size_t aadlen,
		struct strbuf *out, struct err *e)
{
	if (len > SIZE_MAX / 2)
		return err_set(e, E_INTERNAL, "plaintext too large to seal");
	size_t old_len = out->len, total = CRYPTO_SEAL_OVERHEAD + len;
	strbuf_grow(out, total);
	uint8_t *blob = (uint8_t *)out->buf + old_len;
	uint8_t *nonce = blob + 1, *ciphertext = nonce + CRYPTO_SEAL_NONCE_LEN;
	uint8_t *tag = ciphertext + len;
	blob[0] = CRYPTO_SEAL_VERSION;
	if (crypto_random(nonce, CRYPTO_SEAL_NONCE_LEN, e) < 0) {
		strbuf_setlen(out, old_len);
		return -1;
	}

	mbedtls_gcm_context gcm;
	if (gcm_with_key(&gcm, key, e) < 0) {
		strbuf_setlen(out, old_len);
		return -1;
	}
	size_t full_aad_len;
	uint8_t *full_aad = sealing_aad(aad, aadlen, &full_aad_len);
	int ret = mbedtls_gcm_crypt_and_tag(&gcm, MBEDTLS_GCM_ENCRYPT, len, nonce, CRYPTO_SEAL_NONCE_LEN, full_aad,
					    full_aad_len, len ? plaintext : (const void *)"", ciphertext,
					    CRYPTO_SEAL_TAG_LEN, tag);
	mbedtls_gcm_free(&gcm); /* zeroizes the expanded key */
	free(full_aad);
	if (ret != 0) {
		crypto_wipe(blob, total);
		strbuf_setlen(out, old_len);
		return err_set(e, E_INTERNAL, "AES-256-GCM encryption failed (mbedTLS -0x%04x)", (unsigned)-ret);
	}
	strbuf_setlen(out, old_len + total);
	return 0;
}

static int refuse_blob(struct err *e, const char *why)
{
	return err_set(e, E_AUTH_FAILED, "sealed data refused: %s", why);
}

int crypto_open(const uint8_t key[CRYPTO_KEY_LEN], const void *blob, size_t bloblen, const void *aad, size_t aadlen,
		struct strbuf *out, struct err *e)
{
	const uint8_t *b = blob;
	if (bloblen < CRYPTO_SEAL_OVERHEAD)
		return refuse_blob(e, "truncated");
	if (b[0] != CRYPTO_SEAL_VERSION)
		return refuse_blob(e, "unknown format version");
	const uint8_t *nonce = b + 1, *ciphertext = nonce + CRYPTO_SEAL_NONCE_LEN;
	size_t len = bloblen - CRYPTO_SEAL_OVERHEAD;
	const uint8_t *tag = ciphertext + len;

	mbedtls_gcm_context gcm;
	if (gcm_with_key(&gcm, key, e) < 0)
		return -1;
	size_t old_len = out->len;
	strbuf_grow(out, len); /* never reallocates once plaintext is in it */
	uint8_t *plain = (uint8_t *)out->buf + old_len;
	size_t full_aad_len;
	uint8_t *full_aad = sealing_aad(aad, aadlen, &full_aad_len);
	int ret = mbedtls_gcm_auth_decrypt(&gcm, len, nonce, CRYPTO_SEAL_NONCE_LEN, full_aad, full_aad_len, tag,
					   CRYPTO_SEAL_TAG_LEN, len ? ciphertext : (const uint8_t *)"", plain);
	mbedtls_gcm_free(&gcm);
	free(full_aad);
	if (ret != 0) {
		crypto_wipe(plain, len); /* mbedTLS already zeroes it on auth failure; be sure */
		strbuf_setlen(out, old_len);
		if (ret == MBEDTLS_ERR_GCM_AUTH_FAILED)
			return refuse_blob(e, "authentication failed (wrong key, wrong context or "
					      "tampered data)");
		return err_set(e, E_INTERNAL, "AES-256-GCM decryption failed (mbedTLS -0x%04x)", (unsigned)-ret);
	}
	strbuf_setlen(out, old_len + len);
	return 0;
}

/* ---- base64 and base64url (RFC 4648) --------------------------------------------------------- */

/* Constant-time byte predicates returning 0xff (true) or 0 (false), after libsodium's codecs: the
 * codec must not leak key material through table lookups or data-dependent branches. */
static unsigned ct_gt(unsigned x, unsigned y)
{
	return ((y - x) >> 8) & 0xff;
}
static unsigned ct_ge(unsigned x, unsigned y)
{
	return ct_gt(y, x) ^ 0xff;
}
static unsigned ct_lt(unsigned x, unsigned y)
{
	return ct_gt(y, x);
}
static unsigned ct_le(unsigned x, unsigned y)
{
	return ct_ge(y, x);
}
static unsigned ct_eq(unsigned x, unsigned y)
{
	return (((0u - (x ^ y)) >> 8) & 0xff) ^ 0xff;
}

struct b64_alphabet {
	unsigned c62, c63; /* '+' '/' or '-' '_' */
	int padded;
	const char *name;
};
static const struct b64_alphabet B64_STD = { '+', '/', 1, "base64" };
static const struct b64_alphabet B64_URL = { '-', '_', 0, "base64url" };

static char b64_char(const struct b64_alphabet *a, unsigned x)
{
	return (char)((ct_lt(x, 26) & (x + 'A')) | (ct_ge(x, 26) & ct_lt(x, 52) & (x + ('a' - 26))) |
		      (ct_ge(x, 52) & ct_lt(x, 62) & (x + ('0' - 52))) | (ct_eq(x, 62) & a->c62) |
		      (ct_eq(x, 63) & a->c63));
}

/* 0…63, or 0xff for a character outside the alphabet. */
static unsigned b64_value(const struct b64_alphabet *a, unsigned char ch)
{
	unsigned c = ch;
	unsigned x = (ct_ge(c, 'A') & ct_le(c, 'Z') & (c - 'A')) | (ct_ge(c, 'a') & ct_le(c, 'z') & (c - ('a' - 26))) |
		     (ct_ge(c, '0') & ct_le(c, '9') & (c - ('0' - 52))) | (ct_eq(c, a->c62) & 62) |
		     (ct_eq(c, a->c63) & 63);
	return x | (ct_eq(x, 0) & (ct_eq(c, 'A') ^ 0xff));
}

static void b64_encode(const struct b64_alphabet *a, const void *data, size_t len, struct strbuf *out)
{
	const uint8_t *in = data;
	if (len > SIZE_MAX / 2)
		abort(); /* no such buffer exists */
	strbuf_grow(out, (len + 2) / 3 * 4);
	char *o = out->buf + out->len;
	size_t i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		*o++ = b64_char(a, v >> 18);
		*o++ = b64_char(a, (v >> 12) & 63);
		*o++ = b64_char(a, (v >> 6) & 63);
		*o++ = b64_char(a, v & 63);
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;
		*o++ = b64_char(a, v >> 18);
		*o++ = b64_char(a, (v >> 12) & 63);
		if (a->padded) {
			*o++ = '=';
			*o++ = '=';
		}
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		*o++ = b64_char(a, v >> 18);
		*o++ = b64_char(a, (v >> 12) & 63);
		*o++ = b64_char(a, (v >> 6) & 63);
		if (a->padded)
			*o++ = '=';
	}
	strbuf_setlen(out, (size_t)(o - out->buf));
}

/* The length of the encoded data without its padding, or -1 (with e set) when the length or the
 * padding is not one a canonical encoder produces. */
static int b64_body_length(const struct b64_alphabet *a, const char *s, size_t len, size_t *body, struct err *e)
{
	size_t n = len;
	if (a->padded) {
		if (len % 4 != 0)
			return err_set(e, E_INVALID_PAYLOAD, "%s: length %zu is not a multiple of 4", a->name, len);
		for (int pads = 0; pads < 2 && n > 0 && s[n - 1] == '='; pads++)
			n--;
	}
	if (n % 4 == 1)
		return err_set(e, E_INVALID_PAYLOAD, "%s: impossible length %zu", a->name, len);
	*body = n;
	return 0;
}

static int b64_bad_char(const struct b64_alphabet *a, const char *s, size_t i, struct err *e)
{
	if (s[i] == '=')
		return err_set(e, E_INVALID_PAYLOAD, "%s: unexpected padding at offset %zu", a->name, i);
	return err_set(e, E_INVALID_PAYLOAD, "%s: invalid character at offset %zu", a->name, i);
}

/* Undoes a failed decode: wipes what was written after old_len and truncates back to it. */
static void b64_abandon(struct strbuf *out, size_t old_len, const uint8_t *end)
{
	crypto_wipe(out->buf + old_len, (size_t)((const char *)end - out->buf) - old_len);
	strbuf_setlen(out, old_len);
}

static int b64_decode(const struct b64_alphabet *a, const char *s, size_t len, struct strbuf *out, struct err *e)
{
	size_t body = 0;
	if (b64_body_length(a, s, len, &body, e) < 0)
		return -1;
	size_t old_len = out->len, tail = body % 4;
	strbuf_grow(out, body / 4 * 3 + 2);
	uint8_t *o = (uint8_t *)out->buf + old_len;
	uint32_t acc = 0;
	for (size_t i = 0; i < body; i++) {
		unsigned v = b64_value(a, (unsigned char)s[i]);
		if (v == 0xff) {
			b64_abandon(out, old_len, o);
			return b64_bad_char(a, s, i, e);
		}
		acc = acc << 6 | v;
		if (i % 4 == 3) {
			*o++ = (uint8_t)(acc >> 16);
			*o++ = (uint8_t)(acc >> 8);
			*o++ = (uint8_t)acc;
			acc = 0;
		}
	}
	/* 2 leftover characters carry 1 byte + 4 zero bits; 3 carry 2 bytes + 2 zero bits. */
	uint32_t spare_bits = tail == 2 ? (acc & 0xf) : tail == 3 ? (acc & 0x3) : 0;
	if (spare_bits != 0) {
		b64_abandon(out, old_len, o);
		return err_set(e, E_INVALID_PAYLOAD, "%s: non-canonical trailing bits", a->name);
	}
	if (tail == 2) {
		*o++ = (uint8_t)(acc >> 4);
	} else if (tail == 3) {
		*o++ = (uint8_t)(acc >> 10);
		*o++ = (uint8_t)(acc >> 2);
	}
	strbuf_setlen(out, (size_t)((char *)o - out->buf));
	return 0;
}

void crypto_base64url_encode(const void *data, size_t len, struct strbuf *out)
{
	b64_encode(&B64_URL, data, len, out);
}

int crypto_base64url_decode(const char *s, size_t len, struct strbuf *out, struct err *e)
{
	return b64_decode(&B64_URL, s, len, out, e);
}

void crypto_base64_encode(const void *data, size_t len, struct strbuf *out)
{
	b64_encode(&B64_STD, data, len, out);
}

int crypto_base64_decode(const char *s, size_t len, struct strbuf *out, struct err *e)
{
	return b64_decode(&B64_STD, s, len, out, e);
}
