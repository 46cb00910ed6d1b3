/* crypto.h — thin, safe wrappers over mbedTLS 2.28: kernel randomness, SHA-256, HMAC-SHA256, constant-time
 * comparison, AES-256-GCM sealed blobs, strict base64/base64url. Never logs, never keeps key material alive. */
#ifndef AGOR_CRYPTO_H
#define AGOR_CRYPTO_H

/* Contract:
 * - Randomness comes only from the kernel (getrandom(2)): no /dev, no userspace pool, so it
 *   works in an empty chroot or scratch container. Failure is reported, never papered over with
 *   a weaker source.
 * - Hashing and HMAC cannot fail (mbedTLS's software SHA-256 has no failure path; HMAC can only
 *   fail on allocation, which aborts like xmalloc) and so return nothing.
 * - Sealed blobs (crypto_seal/crypto_open) are self-describing:
 *       version (1 byte) ‖ nonce (12 random bytes) ‖ ciphertext ‖ tag (16 bytes)
 *   The version byte is authenticated together with the caller's aad, so any change to any byte,
 *   a truncation, a wrong key or a wrong aad makes crypto_open fail with E_AUTH_FAILED and output
 *   nothing. Random 96-bit nonces are safe for up to 2^32 seals under one key (NIST SP 800-38D
 *   §8.3).
 * - Decoders are strict: they refuse padding where none is expected (base64url), missing or
 *   misplaced padding (base64), any character outside the alphabet (whitespace included) and
 *   non-canonical trailing bits, so every byte string has exactly one accepted encoding.
 * - Every buffer of key material or plaintext this module owns is wiped with explicit_bzero before
 *   it is released. Buffers the caller owns are the caller's to wipe (crypto_wipe,
 *   crypto_strbuf_wipe). */

#include <mbedtls/sha256.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "strbuf.h"

#define CRYPTO_SHA256_LEN      32
#define CRYPTO_SHA256_HEX_LEN  64 /* without the NUL */
#define CRYPTO_HMAC_SHA256_LEN 32
#define CRYPTO_KEY_LEN	       32 /* AES-256 */
#define CRYPTO_SEAL_VERSION    1
#define CRYPTO_SEAL_NONCE_LEN  12
#define CRYPTO_SEAL_TAG_LEN    16
#define CRYPTO_SEAL_OVERHEAD   (1 + CRYPTO_SEAL_NONCE_LEN + CRYPTO_SEAL_TAG_LEN)

/* Fills buf with len bytes from the kernel CSPRNG (getrandom, blocking only until the pool is first
 * initialised). Retries short reads and EINTR. -1 with E_SYSTEM when the kernel refuses. */
int crypto_random(void *buf, size_t len, struct err *e);

/* An mbedTLS f_rng callback (mbedtls_ssl_conf_rng, mbedtls_pk_sign, …) backed by crypto_random;
 * ctx is unused. Returns 0 or MBEDTLS_ERR_ENTROPY_SOURCE_FAILED. */
int crypto_mbedtls_rng(void *ctx, unsigned char *buf, size_t len);

/* SHA-256, incremental: init, update any number of times, final (which also wipes the context). */
struct crypto_sha256 {
	mbedtls_sha256_context ctx;
};
void crypto_sha256_init(struct crypto_sha256 *h);
void crypto_sha256_update(struct crypto_sha256 *h, const void *data, size_t len);
void crypto_sha256_final(struct crypto_sha256 *h, uint8_t out[CRYPTO_SHA256_LEN]);

/* SHA-256, one shot; the _hex form writes 64 lowercase hex digits and a NUL. */
void crypto_sha256(const void *data, size_t len, uint8_t out[CRYPTO_SHA256_LEN]);
void crypto_sha256_hex(const void *data, size_t len, char out[CRYPTO_SHA256_HEX_LEN + 1]);

/* Lowercase hex of n bytes into out (2n characters plus a NUL). */
void crypto_hex(const void *bytes, size_t n, char *out);

/* HMAC-SHA256 (RFC 2104) of data under key, one shot. */
void crypto_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
			uint8_t out[CRYPTO_HMAC_SHA256_LEN]);

/* 1 when the n bytes at a and b are equal, else 0, in time that depends only on n. */
int crypto_equal(const void *a, const void *b, size_t n);

/* Encrypts and authenticates len bytes of plaintext under key with AES-256-GCM and appends the
 * sealed blob (CRYPTO_SEAL_OVERHEAD + len bytes) to out. aad (may be NULL when aadlen is 0) is
 * authenticated, not stored: the same aad must be given to crypto_open. -1 (E_SYSTEM/E_INTERNAL)
 * leaves out as it was. */
int crypto_seal(const uint8_t key[CRYPTO_KEY_LEN], const void *plaintext, size_t len, const void *aad, size_t aadlen,
		struct strbuf *out, struct err *e);

/* Checks and decrypts a blob made by crypto_seal, appending the plaintext to out (blob must not
 * point into out). Any tampering, a truncated blob, an unknown version, a wrong key or a wrong aad
 * is -1 with E_AUTH_FAILED, and out is left as it was (no partial or unauthenticated plaintext is
 * ever appended). */
int crypto_open(const uint8_t key[CRYPTO_KEY_LEN], const void *blob, size_t bloblen, const void *aad, size_t aadlen,
		struct strbuf *out, struct err *e);

/* base64url (RFC 4648 §5) without padding; the decoder is strict (see the contract above). A
 * decode failure is -1 with E_INVALID_PAYLOAD naming the offset, and leaves out's content as it
 * was (its allocation may have grown: release out on failure as on success). */
void crypto_base64url_encode(const void *data, size_t len, struct strbuf *out);
int crypto_base64url_decode(const char *s, size_t len, struct strbuf *out, struct err *e);

/* Standard base64 (RFC 4648 §4) with mandatory padding; the decoder is equally strict. */
void crypto_base64_encode(const void *data, size_t len, struct strbuf *out);
int crypto_base64_decode(const char *s, size_t len, struct strbuf *out, struct err *e);

/* explicit_bzero that the compiler cannot drop. */
void crypto_wipe(void *p, size_t n);
/* Wipes the whole allocation of sb (not only len bytes), then releases it. */
void crypto_strbuf_wipe(struct strbuf *sb);

static inline void cleanup_strbuf_wipe(struct strbuf *sb)
{
	crypto_strbuf_wipe(sb);
}
#define _cleanup_strbuf_wipe_ __attribute__((cleanup(cleanup_strbuf_wipe)))

#endif
