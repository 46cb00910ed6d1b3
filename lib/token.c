/* token.c — HS256 JWT issue and verify for token.h, over crypto.h and jansson.
 * Never reads a claim before the signature is checked, never echoes the token or the secret in an error. */
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "json.h"
#include "strbuf.h"
#include "token.h"
#include "banned.h"

/* The only header this module ever signs; verification parses whatever header it receives. */
static const char ISSUED_HEADER[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";

/* ---- shared ---------------------------------------------------------------------------------- */

void token_claims_release(struct token_claims *c)
{
	free(c->sub);
	free(c->sid);
	free(c->tid);
	free(c->jti);
	*c = (struct token_claims)TOKEN_CLAIMS_INIT;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void token_claims_copy(struct token_claims *to, const struct token_claims *from)
{
	*to = (struct token_claims){ dup_or_null(from->sub),
				     dup_or_null(from->sid),
				     dup_or_null(from->tid),
				     dup_or_null(from->jti),
				     from->iat,
				     from->exp };
}

static int check_secret(size_t secret_len, struct err *e)
{
	if (secret_len < TOKEN_SECRET_MIN_LEN)
		return err_set(e, E_INTERNAL, "JWT secret is %zu bytes, at least %d are required", secret_len,
			       TOKEN_SECRET_MIN_LEN);
	return 0;
}

static int is_executor_audience(const char *aud)
{
	return !strcmp(aud, TOKEN_AUD_EXECUTOR);
}

static int nonempty(const char *s)
{
	return s && *s;
}

/* HMAC-SHA256 of the signing input, base64url-encoded onto out. */
static void append_signature(const uint8_t *secret, size_t secret_len, const char *input, size_t len,
			     struct strbuf *out)
{
	uint8_t mac[CRYPTO_HMAC_SHA256_LEN];
	crypto_hmac_sha256(secret, secret_len, input, len, mac);
	crypto_base64url_encode(mac, sizeof(mac), out);
	crypto_wipe(mac, sizeof(mac));
}

/* ---- issuing --------------------------------------------------------------------------------- */

static int check_claims_to_issue(const char *aud, const struct token_claims *in, struct err *e)
{
	if (!nonempty(aud))
		return err_set(e, E_INTERNAL, "token: no audience to issue for");
	if (!nonempty(in->sub))
		return err_set(e, E_INTERNAL, "token: sub (user id) is required");
	if (is_executor_audience(aud) && (!nonempty(in->sid) || !nonempty(in->tid)))
		return err_set(e, E_INTERNAL, "token: sid and tid are required for %s tokens", aud);
	if ((in->sid && !*in->sid) || (in->tid && !*in->tid) || (in->jti && !*in->jti))
		return err_set(e, E_INTERNAL, "token: sid, tid and jti must not be empty strings");
	if (in->iat < 0)
		return err_set(e, E_INTERNAL, "token: negative iat");
	return 0;
}

static int issued_times(const struct token_claims *in, long long ttl_seconds, long long *iat, long long *exp,
			struct err *e)
{
	if (ttl_seconds <= 0)
		return err_set(e, E_INTERNAL, "token: ttl must be positive (got %lld)", ttl_seconds);
	*iat = in->iat ? in->iat : (long long)time(NULL);
	if (*iat > (1LL << 53) - ttl_seconds) /* also keeps the values exact in any JSON reader */
		return err_set(e, E_INTERNAL, "token: iat + ttl out of range");
	*exp = *iat + ttl_seconds;
	return 0;
}

static char *new_jti(struct err *e)
{
	uint8_t raw[TOKEN_JTI_BYTES];
	if (crypto_random(raw, sizeof(raw), e) < 0)
		return NULL;
	char *hex = xmalloc(2 * sizeof(raw) + 1);
	crypto_hex(raw, sizeof(raw), hex);
	return hex;
}

/* Adds key: value to obj when value is not NULL; -1 when value is not valid UTF-8. */
static int add_string_claim(json_t *obj, const char *key, const char *value, struct err *e)
{
	if (!value)
		return 0;
	json_t *s = json_string(value);
	if (!s)
		return err_set(e, E_INTERNAL, "token: claim %s is not valid UTF-8", key);
	json_object_set_new(obj, key, s);
	return 0;
}

static json_t *claims_object(const char *aud, const struct token_claims *c, struct err *e)
{
	json_t *obj = json_object();
	json_object_set_new(obj, "iss", json_string(TOKEN_ISSUER));
	if (add_string_claim(obj, "aud", aud, e) < 0 || add_string_claim(obj, "sub", c->sub, e) < 0 ||
	    add_string_claim(obj, "sid", c->sid, e) < 0 || add_string_claim(obj, "tid", c->tid, e) < 0 ||
	    add_string_claim(obj, "jti", c->jti, e) < 0) {
		json_decref(obj);
		return NULL;
	}
	json_object_set_new(obj, "iat", json_integer(c->iat));
	json_object_set_new(obj, "exp", json_integer(c->exp));
	return obj;
}

/* base64url(header) . base64url(claims) . base64url(HMAC-SHA256(secret, the first two)) */
static char *sign_claims(const uint8_t *secret, size_t secret_len, const json_t *claims)
{
	struct strbuf payload = STRBUF_INIT, jwt = STRBUF_INIT;
	json_add_to_strbuf(&payload, claims);
	strbuf_grow(&jwt, 64 + payload.len * 4 / 3 + 48); /* one allocation: no stale copies */
	crypto_base64url_encode(ISSUED_HEADER, strlen(ISSUED_HEADER), &jwt);
	strbuf_addch(&jwt, '.');
	crypto_base64url_encode(payload.buf, payload.len, &jwt);
	strbuf_release(&payload);
	size_t signing_len = jwt.len;
	strbuf_addch(&jwt, '.');
	append_signature(secret, secret_len, jwt.buf, signing_len, &jwt);
	return strbuf_detach(&jwt, NULL);
}

static char *xstrdup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

int token_issue_for(const char *aud, const uint8_t *secret, size_t secret_len, const struct token_claims *in,
		    long long ttl_seconds, char **jwt_out, struct token_claims *issued, struct err *e)
{
	*jwt_out = NULL;
	if (check_secret(secret_len, e) < 0 || check_claims_to_issue(aud, in, e) < 0)
		return -1;
	struct token_claims c = TOKEN_CLAIMS_INIT;
	if (issued_times(in, ttl_seconds, &c.iat, &c.exp, e) < 0)
		return -1;
	c.jti = in->jti ? xstrdup(in->jti) : new_jti(e);
	if (!c.jti)
		return -1;
	c.sub = xstrdup(in->sub);
	c.sid = xstrdup_or_null(in->sid);
	c.tid = xstrdup_or_null(in->tid);

	json_t *claims = claims_object(aud, &c, e);
	if (!claims) {
		token_claims_release(&c);
		return -1;
	}
	*jwt_out = sign_claims(secret, secret_len, claims);
	json_decref(claims);
	if (issued)
		*issued = c;
	else
		token_claims_release(&c);
	return 0;
}

int token_issue(const uint8_t *secret, size_t secret_len, const struct token_claims *in, long long ttl_seconds,
		char **jwt_out, struct err *e)
{
	return token_issue_for(TOKEN_AUD_EXECUTOR, secret, secret_len, in, ttl_seconds, jwt_out, NULL, e);
}

/* ---- verifying ------------------------------------------------------------------------------- */

/* E_AUTH_FAILED with details {"reason": reason}; always returns -1. */
static int PRINTF_LIKE(3, 4) refuse(struct err *e, const char *reason, const char *fmt, ...)
{
	struct strbuf msg = STRBUF_INIT;
	strbuf_addstr(&msg, "invalid token: ");
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	err_setd(e, E_AUTH_FAILED, json_pack("{s:s}", "reason", reason), "%s", msg.buf);
	strbuf_release(&msg);
	return -1;
}

/* The three base64url segments of a compact JWS, as offsets into the token. */
struct jws_parts {
	const char *header, *payload, *signature;
	size_t header_len, payload_len, signature_len;
	size_t signing_len; /* bytes of "header.payload", the HMAC input */
};

static int split_compact(const char *jwt, struct jws_parts *p, struct err *e)
{
	if (!jwt)
		return refuse(e, "malformed", "no token");
	size_t len = strnlen(jwt, TOKEN_MAX_LEN + 1);
	if (len > TOKEN_MAX_LEN)
		return refuse(e, "too_large", "longer than %d bytes", TOKEN_MAX_LEN);
	const char *dot1 = memchr(jwt, '.', len);
	const char *dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - jwt)) : NULL;
	const char *dot3 = dot2 ? memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - jwt)) : NULL;
	if (!dot2 || dot3)
		return refuse(e, "malformed", "not a compact JWS (expected 3 dot-separated segments)");
	p->header = jwt;
	p->header_len = (size_t)(dot1 - jwt);
	p->payload = dot1 + 1;
	p->payload_len = (size_t)(dot2 - p->payload);
	p->signature = dot2 + 1;
	p->signature_len = len - (size_t)(p->signature - jwt);
	p->signing_len = (size_t)(dot2 - jwt);
	return 0;
}

/* Decodes one base64url segment and parses it as a JSON object (duplicate keys refused). */
static json_t *decode_json_segment(const char *seg, size_t len, const char *what, const char *reason, struct err *e)
{
	struct strbuf raw = STRBUF_INIT;
	if (crypto_base64url_decode(seg, len, &raw, e) < 0) {
		strbuf_release(&raw);
		refuse(e, reason, "%s is not valid base64url", what);
		return NULL;
	}
	json_error_t je;
	json_t *j = json_loadb(raw.buf, raw.len, JSON_REJECT_DUPLICATES, &je);
	strbuf_release(&raw);
	if (!j) {
		refuse(e, reason, "%s is not valid JSON: %s", what, je.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		refuse(e, reason, "%s is not a JSON object", what);
		return NULL;
	}
	return j;
}

static int check_header(const json_t *header, struct err *e)
{
	json_t *alg = json_object_get(header, "alg");
	if (!alg)
		return refuse(e, "alg", "header has no alg");
	if (!json_is_string(alg) || strcmp(json_string_value(alg), "HS256") != 0)
		return refuse(e, "alg", "unsupported alg (only HS256 is accepted)");
	json_t *typ = json_object_get(header, "typ");
	if (typ && (!json_is_string(typ) || strcmp(json_string_value(typ), "JWT") != 0))
		return refuse(e, "header", "typ is not \"JWT\"");
	if (json_object_get(header, "crit"))
		return refuse(e, "header", "crit names extensions this verifier does not understand");
	return 0;
}

static int check_signature(const uint8_t *secret, size_t secret_len, const char *jwt, const struct jws_parts *p,
			   struct err *e)
{
	struct strbuf got = STRBUF_INIT;
	if (crypto_base64url_decode(p->signature, p->signature_len, &got, e) < 0) {
		strbuf_release(&got);
		return refuse(e, "signature", "signature is not valid base64url");
	}
	if (got.len != CRYPTO_HMAC_SHA256_LEN) {
		strbuf_release(&got);
		return refuse(e, "signature", "signature has the wrong length for HS256");
	}
	uint8_t want[CRYPTO_HMAC_SHA256_LEN];
	crypto_hmac_sha256(secret, secret_len, jwt, p->signing_len, want);
	int same = crypto_equal(want, got.buf, sizeof(want));
	crypto_wipe(want, sizeof(want));
	strbuf_release(&got);
	if (!same)
		return refuse(e, "signature", "signature mismatch");
	return 0;
}

static int claim_string(const json_t *claims, const char *key, int required, char **out, struct err *e)
{
	json_t *v = json_object_get(claims, key);
	if (!v) {
		if (required)
			return refuse(e, "claims", "claim %s is missing", key);
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) == 0)
		return refuse(e, "claims", "claim %s is not a non-empty string", key);
	*out = xstrdup(json_string_value(v));
	return 0;
}

static int claim_time(const json_t *claims, const char *key, int required, long long *out, struct err *e)
{
	json_t *v = json_object_get(claims, key);
	if (!v) {
		if (required)
			return refuse(e, "claims", "claim %s is missing", key);
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return refuse(e, "claims", "claim %s is not a non-negative integer", key);
	*out = json_integer_value(v);
	return 0;
}

static int check_issuer(const json_t *claims, struct err *e)
{
	json_t *iss = json_object_get(claims, "iss");
	if (!json_is_string(iss) || strcmp(json_string_value(iss), TOKEN_ISSUER) != 0)
		return refuse(e, "issuer", "issuer is not \"%s\"", TOKEN_ISSUER);
	return 0;
}

/* aud is a string equal to the expected audience or an array of strings containing it. */
static int check_audience(const json_t *claims, const char *aud, struct err *e)
{
	json_t *v = json_object_get(claims, "aud");
	if (json_is_string(v) && !strcmp(json_string_value(v), aud))
		return 0;
	if (json_is_array(v)) {
		int found = 0;
		size_t i;
		json_t *item;
		json_array_foreach(v, i, item)
		{
			if (!json_is_string(item))
				return refuse(e, "audience", "aud array holds a non-string");
			found |= !strcmp(json_string_value(item), aud);
		}
		if (found)
			return 0;
	}
	return refuse(e, "audience", "audience does not include \"%s\"", aud);
}

static int check_times(const struct token_claims *c, long long nbf, long long now, struct err *e)
{
	if (c->exp <= c->iat)
		return refuse(e, "claims", "exp is not after iat");
	if (c->iat > now && c->iat - now > TOKEN_CLOCK_SKEW)
		return refuse(e, "not_yet_valid", "issued in the future (iat %lld, now %lld)", c->iat, now);
	if (nbf > now && nbf - now > TOKEN_CLOCK_SKEW)
		return refuse(e, "not_yet_valid", "not valid before %lld (now %lld)", nbf, now);
	if (c->exp <= now)
		return refuse(e, "expired", "expired at %lld (now %lld)", c->exp, now);
	return 0;
}

static int read_claims(const json_t *claims, const char *aud, long long now, struct token_claims *c, struct err *e)
{
	int executor = is_executor_audience(aud);
	long long nbf = 0;
	if (check_issuer(claims, e) < 0 || check_audience(claims, aud, e) < 0 ||
	    claim_string(claims, "sub", 1, &c->sub, e) < 0 || claim_string(claims, "sid", executor, &c->sid, e) < 0 ||
	    claim_string(claims, "tid", executor, &c->tid, e) < 0 || claim_string(claims, "jti", 1, &c->jti, e) < 0 ||
	    claim_time(claims, "iat", 1, &c->iat, e) < 0 || claim_time(claims, "exp", 1, &c->exp, e) < 0 ||
	    claim_time(claims, "nbf", 0, &nbf, e) < 0)
		return -1;
	return check_times(c, nbf, now, e);
}

static int resolve_now(long long *now, struct err *e)
{
	if (*now == TOKEN_NOW)
		*now = (long long)time(NULL);
	if (*now <= 0)
		return err_set(e, E_INTERNAL, "token: invalid current time %lld", *now);
	return 0;
}

int token_verify_for(const char *aud, const uint8_t *secret, size_t secret_len, const char *jwt, long long now,
		     struct token_claims *out, struct err *e)
{
	if (out)
		*out = (struct token_claims)TOKEN_CLAIMS_INIT;
	if (!nonempty(aud))
		return err_set(e, E_INTERNAL, "token: no audience to verify for");
	if (check_secret(secret_len, e) < 0 || resolve_now(&now, e) < 0)
		return -1;

	struct jws_parts p = { 0 };
	if (split_compact(jwt, &p, e) < 0)
		return -1;
	json_t *header = decode_json_segment(p.header, p.header_len, "header", "malformed", e);
	if (!header)
		return -1;
	int ok = check_header(header, e);
	json_decref(header);
	if (ok < 0 || check_signature(secret, secret_len, jwt, &p, e) < 0)
		return -1;

	/* Authentic from here on: the claims were written by whoever holds the secret. */
	json_t *claims = decode_json_segment(p.payload, p.payload_len, "claims", "claims", e);
	if (!claims)
		return -1;
	struct token_claims c = TOKEN_CLAIMS_INIT;
	ok = read_claims(claims, aud, now, &c, e);
	json_decref(claims);
	if (ok < 0) {
		token_claims_release(&c);
		return -1;
	}
	if (out)
		*out = c;
	else
		token_claims_release(&c);
	return 0;
}

int token_verify(const uint8_t *secret, size_t secret_len, const char *jwt, long long now, struct token_claims *out,
		 struct err *e)
{
	return token_verify_for(TOKEN_AUD_EXECUTOR, secret, secret_len, jwt, now, out, e);
}

int token_check_task(const struct token_claims *c, const char *task_id, struct err *e)
{
	if (!c || !c->tid || !task_id || strcmp(c->tid, task_id) != 0)
		return refuse(e, "task", "bound to another task");
	return 0;
}
