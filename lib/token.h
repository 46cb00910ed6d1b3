/* token.h — session and access tokens: compact JWS/JWT (RFC 7515/7519), HS256 only, issued and verified here.
 * Never accepts another algorithm, never trusts a claim before the signature, never puts the secret in a message. */
#ifndef AGOR_TOKEN_H
#define AGOR_TOKEN_H

/* Contract (docs/rpc.md#executor-methods):
 * - Header: exactly {"alg":"HS256","typ":"JWT"} when issued. On verification `alg` must be the
 *   string "HS256" (case-sensitive; "none", "HS512", "hs256", a missing or non-string alg are all
 *   refused); `typ`, if present, must be "JWT"; any `crit` is refused (no extension is understood);
 *   other header parameters (kid, …) are ignored — keys are never looked up from the token.
 * - Claims: iss "agor"; aud the expected audience (a string, or an array of strings containing it);
 *   sub, jti non-empty strings; iat, exp non-negative integers (seconds since the epoch),
 *   exp > iat. For aud "agor-executor" sid and tid are required non-empty strings; for other
 *   audiences they are optional (but strings when present). nbf, if present, is an integer
 *   honoured like iat. Other claims are ignored (RFC 7519 §4).
 * - Verification order: size, shape, header (alg), signature (HMAC-SHA256 over the exact
 *   received `header.payload` bytes, compared in constant time), and only then the claims.
 *   exp <= now is expired; iat or nbf more than TOKEN_CLOCK_SKEW seconds after now is refused.
 *   Tokens longer than TOKEN_MAX_LEN bytes, strict-base64url violations and JSON with duplicate
 *   keys are refused.
 * - Every refusal is -1 with E_AUTH_FAILED, a precise message, and details {"reason": R} where R is
 *   one of: "too_large", "malformed", "alg", "header", "signature", "claims", "issuer", "audience",
 *   "expired", "not_yet_valid", "task". Messages never contain the secret or the token.
 * - Misuse by the caller (secret shorter than TOKEN_SECRET_MIN_LEN, missing claims to issue, a ttl
 *   that is not positive) is -1 with E_INTERNAL.
 * - Binding a token to the task a call is about is token_check_task; revocation, use counts and
 *   rate limits are the daemon's (database) business. */

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define TOKEN_ISSUER	     "agor"
#define TOKEN_AUD_EXECUTOR   "agor-executor" /* session tokens handed to executors (docs/rpc.md#executor-methods) */
#define TOKEN_AUD_CLIENT     "agor-client"   /* user access tokens for clients over TCP (§4.4) */
#define TOKEN_MAX_LEN	     8192
#define TOKEN_CLOCK_SKEW     60
#define TOKEN_SECRET_MIN_LEN 32 /* RFC 7518 §3.2: a key at least as long as the hash output */
#define TOKEN_JTI_BYTES	     16 /* generated jti: 128 random bits as 32 lowercase hex digits */
#define TOKEN_NOW	     0	/* pass as `now` to token_verify to use the system clock */

struct token_claims {
	char *sub; /* user id */
	char *sid; /* session id (NULL only for non-executor audiences) */
	char *tid; /* task id (NULL only for non-executor audiences) */
	char *jti; /* token id (for revocation) */
	long long iat, exp;
};
#define TOKEN_CLAIMS_INIT                                                                                              \
	{                                                                                                              \
		NULL, NULL, NULL, NULL, 0, 0                                                                           \
	}

/* Issues a session token for executors (aud "agor-executor"): in->sub, sid and tid are required;
 * in->jti NULL generates 128 random bits; in->iat 0 means now; exp = iat + ttl_seconds (> 0).
 * *jwt_out is malloc'd (caller frees). */
int token_issue(const uint8_t *secret, size_t secret_len, const struct token_claims *in, long long ttl_seconds,
		char **jwt_out, struct err *e);

/* The same for any audience (TOKEN_AUD_CLIENT: sid/tid optional, omitted when NULL). When issued is
 * not NULL it receives the claims actually signed (generated jti, iat, exp), to record for
 * revocation; release it with token_claims_release. */
int token_issue_for(const char *aud, const uint8_t *secret, size_t secret_len, const struct token_claims *in,
		    long long ttl_seconds, char **jwt_out, struct token_claims *issued, struct err *e);

/* Verifies an executor session token at time now (TOKEN_NOW = the system clock). On success fills
 * out (may be NULL) with owned copies of the claims; on failure out is left empty. */
int token_verify(const uint8_t *secret, size_t secret_len, const char *jwt, long long now, struct token_claims *out,
		 struct err *e);

/* The same for the audience aud. */
int token_verify_for(const char *aud, const uint8_t *secret, size_t secret_len, const char *jwt, long long now,
		     struct token_claims *out, struct err *e);

/* Copies claims (every string duplicated). */
void token_claims_copy(struct token_claims *to, const struct token_claims *from);

/* 0 when the verified claims c are bound to task_id; else -1, E_AUTH_FAILED, reason "task". */
int token_check_task(const struct token_claims *c, const char *task_id, struct err *e);

/* Frees the strings of c and resets it to TOKEN_CLAIMS_INIT. */
void token_claims_release(struct token_claims *c);

static inline void cleanup_token_claims(struct token_claims *c)
{
	token_claims_release(c);
}
#define _cleanup_token_claims_ __attribute__((cleanup(cleanup_token_claims)))

#endif
