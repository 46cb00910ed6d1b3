/* token_fuzz.c — libFuzzer target for token_verify and the strict base64 decoders of crypto.h.
 * Never built by default, never reads files or the network: the input bytes are the only source.
 *
 * Build and run (clang with libFuzzer; the glibc deps from mk/deps.sh):
 *   mkdir -p build/fuzz && clang -g -O1 -std=gnu11 -D_GNU_SOURCE \
 *     -fsanitize=fuzzer,address,undefined -I. -Ilib -isystem build/deps/glibc/include \
 *     test/fuzz/token_fuzz.c lib/token.c lib/crypto.c lib/err.c lib/json.c lib/strbuf.c \
 *     lib/xalloc.c -Lbuild/deps/glibc/lib -lmbedcrypto -ljansson -o build/fuzz/token_fuzz
 *   build/fuzz/token_fuzz -max_len=10000 -max_total_time=300 build/fuzz/corpus-token
 *
 * The first input byte picks a mode:
 *   even — the rest is a token, verified as it is (attacker without the key);
 *   odd  — the rest is "HEADER\0CLAIMS": both are encoded and correctly signed, so the header and
 *          claims checks behind the signature are reached (the key holder's mistakes).
 * Properties checked (abort on violation): a successful base64(url) decode re-encodes to exactly
 * the input (one encoding per byte string); an accepted token has every required claim. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "err.h"
#include "strbuf.h"
#include "token.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t SECRET[] = "fuzzing-secret-0123456789abcdef!";
#define SECRET_LEN (sizeof(SECRET) - 1)
#define NOW	   1700000000LL

static void check_canonical(int url, const char *s, size_t len)
{
	struct err e = ERR_INIT;
	struct strbuf dec = STRBUF_INIT, enc = STRBUF_INIT;
	int rc = url ? crypto_base64url_decode(s, len, &dec, &e) : crypto_base64_decode(s, len, &dec, &e);
	if (rc == 0) {
		if (url)
			crypto_base64url_encode(dec.buf, dec.len, &enc);
		else
			crypto_base64_encode(dec.buf, dec.len, &enc);
		if (enc.len != len || memcmp(enc.buf, s, len) != 0)
			abort(); /* two encodings accepted for one byte string */
	}
	strbuf_release(&dec);
	strbuf_release(&enc);
	err_clear(&e);
}

static void verify_both_audiences(const char *jwt)
{
	static const char *const audiences[] = { TOKEN_AUD_EXECUTOR, TOKEN_AUD_CLIENT };
	for (size_t i = 0; i < sizeof(audiences) / sizeof(audiences[0]); i++) {
		struct err e = ERR_INIT;
		struct token_claims c = TOKEN_CLAIMS_INIT;
		if (token_verify_for(audiences[i], SECRET, SECRET_LEN, jwt, NOW, &c, &e) == 0) {
			if (!c.sub || !c.jti || c.exp <= NOW || (i == 0 && (!c.sid || !c.tid)))
				abort(); /* accepted without a required claim */
			(void)token_check_task(&c, "task", &e);
		} else if (!e.code || !e.message) {
			abort(); /* refusal without an error */
		}
		token_claims_release(&c);
		err_clear(&e);
	}
}

static char *sign_parts(const char *header, size_t hlen, const char *claims, size_t clen)
{
	struct strbuf sb = STRBUF_INIT;
	crypto_base64url_encode(header, hlen, &sb);
	strbuf_addch(&sb, '.');
	crypto_base64url_encode(claims, clen, &sb);
	uint8_t mac[CRYPTO_HMAC_SHA256_LEN];
	crypto_hmac_sha256(SECRET, SECRET_LEN, sb.buf, sb.len, mac);
	strbuf_addch(&sb, '.');
	crypto_base64url_encode(mac, sizeof(mac), &sb);
	return strbuf_detach(&sb, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *rest = (const char *)data + 1;
	size_t len = size - 1;
	if (data[0] % 2 == 0) {
		char *jwt = xstrndup(rest, len); /* stops at the first NUL, like any C caller */
		check_canonical(1, rest, len);
		check_canonical(0, rest, len);
		verify_both_audiences(jwt);
		free(jwt);
		return 0;
	}
	const char *nul = memchr(rest, '\0', len);
	size_t hlen = nul ? (size_t)(nul - rest) : len;
	const char *claims = nul ? nul + 1 : "";
	size_t clen = nul ? len - hlen - 1 : 0;
	char *jwt = sign_parts(rest, hlen, claims, clen);
	verify_both_audiences(jwt);
	free(jwt);
	return 0;
}
