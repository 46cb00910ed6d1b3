/* test_token.c — unit tests of token.h: round trips and every refusal of docs/rpc.md#executor-methods, with hand-forged
 * tokens. Never trusts token_issue to build a malicious token: forgeries are assembled byte by byte here. */
#include <jansson.h>
#include <stdint.h>
#include <time.h>

#include "crypto.h"
#include "err.h"
#include "strbuf.h"
#include "token.h"
#include "unit.h"
#include "banned.h"

#define NOW 1700000000LL

static const uint8_t SECRET[] = "jwt-secret-for-unit-tests-0123456789";
#define SECRET_LEN (sizeof(SECRET) - 1)
static const uint8_t OTHER_SECRET[] = "jwt-secret-for-unit-tests-0123456788";

static const char HEADER[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
static const char CLAIMS[] = "{\"iss\":\"agor\",\"aud\":\"agor-executor\",\"sub\":\"user-1\","
			     "\"sid\":\"session-1\",\"tid\":\"task-A\",\"jti\":\"jti-1\","
			     "\"iat\":1700000000,\"exp\":1700003600}";

/* b64url(header).b64url(payload).b64url(HMAC-SHA256(key, …)); no signature without a key. */
static char *forge(const char *header, const char *payload, const uint8_t *key, size_t key_len)
{
	struct strbuf sb = STRBUF_INIT;
	crypto_base64url_encode(header, strlen(header), &sb);
	strbuf_addch(&sb, '.');
	crypto_base64url_encode(payload, strlen(payload), &sb);
	size_t signing_len = sb.len;
	strbuf_addch(&sb, '.');
	if (key) {
		uint8_t mac[CRYPTO_HMAC_SHA256_LEN];
		crypto_hmac_sha256(key, key_len, sb.buf, signing_len, mac);
		crypto_base64url_encode(mac, sizeof(mac), &sb);
	}
	return strbuf_detach(&sb, NULL);
}

static char *forge_signed(const char *header, const char *payload)
{
	return forge(header, payload, SECRET, SECRET_LEN);
}

/* CLAIMS with key set to value (a JSON text) or removed (value NULL). */
static char *claims_with(const char *key, const char *value)
{
	json_t *c = json_loads(CLAIMS, 0, NULL);
	if (value)
		json_object_set_new(c, key, json_loads(value, JSON_DECODE_ANY, NULL));
	else
		json_object_del(c, key);
	char *s = json_dumps(c, JSON_COMPACT);
	json_decref(c);
	return s;
}

static void check_refused_for(const char *aud, const uint8_t *secret, const char *jwt, long long now,
			      const char *reason, const char *message_part)
{
	struct err e = ERR_INIT;
	struct token_claims out = { (char *)"x", NULL, NULL, NULL, 1, 2 };
	int rc = token_verify_for(aud, secret, SECRET_LEN, jwt, now, &out, &e);
	if (rc != -1) {
		unit_fail(__FILE__, __LINE__, "token accepted, expected refusal (%s)", reason);
		token_claims_release(&out);
		return;
	}
	CHECK_STR(e.code, E_AUTH_FAILED);
	CHECK_STR(json_string_value(json_object_get(e.details, "reason")), reason);
	if (message_part)
		CHECK_CONTAINS(e.message, message_part);
	CHECK(!strstr(e.message, (const char *)SECRET));
	CHECK(!jwt || strlen(jwt) < 8 || !strstr(e.message, jwt));
	CHECK(out.sub == NULL && out.sid == NULL && out.tid == NULL && out.jti == NULL);
	CHECK(out.iat == 0 && out.exp == 0);
	err_clear(&e);
}

static void check_refused(const char *jwt, const char *reason, const char *message_part)
{
	check_refused_for(TOKEN_AUD_EXECUTOR, SECRET, jwt, NOW + 10, reason, message_part);
}

static void check_accepted(const char *jwt, long long now)
{
	struct err e = ERR_INIT;
	struct token_claims out = TOKEN_CLAIMS_INIT;
	if (token_verify(SECRET, SECRET_LEN, jwt, now, &out, &e) != 0)
		unit_fail(__FILE__, __LINE__, "token refused: %s", e.message);
	token_claims_release(&out);
	err_clear(&e);
}

static char *issue_for_task(const char *task, long long iat, long long ttl)
{
	struct err e = ERR_INIT;
	struct token_claims in = { (char *)"user-1", (char *)"session-1", (char *)task, NULL, iat, 0 };
	char *jwt = NULL;
	CHECK_INT(token_issue(SECRET, SECRET_LEN, &in, ttl, &jwt, &e), 0);
	CHECK(jwt != NULL);
	return jwt;
}

/* ---- issuing and round trips ----------------------------------------------------------------- */

TEST(token_round_trip)
{
	struct err e = ERR_INIT;
	char *jwt = issue_for_task("task-A", NOW, 3600);
	struct token_claims c = TOKEN_CLAIMS_INIT;
	CHECK_INT(token_verify(SECRET, SECRET_LEN, jwt, NOW + 10, &c, &e), 0);
	CHECK_STR(c.sub, "user-1");
	CHECK_STR(c.sid, "session-1");
	CHECK_STR(c.tid, "task-A");
	CHECK_INT(strlen(c.jti), 2 * TOKEN_JTI_BYTES);
	CHECK_INT(strspn(c.jti, "0123456789abcdef"), 2 * TOKEN_JTI_BYTES);
	CHECK_INT(c.iat, NOW);
	CHECK_INT(c.exp, NOW + 3600);
	CHECK_INT(token_check_task(&c, "task-A", &e), 0);
	token_claims_release(&c);
	CHECK(c.sub == NULL && c.jti == NULL);
	CHECK(!err_is_set(&e));
	free(jwt);
}

TEST(token_issued_header_and_claims_are_exact)
{
	struct err e = ERR_INIT;
	char *jwt = issue_for_task("task-A", NOW, 60);
	char *dot1 = strchr(jwt, '.'), *dot2 = strchr(dot1 + 1, '.');
	struct strbuf sb = STRBUF_INIT;
	CHECK_INT(crypto_base64url_decode(jwt, (size_t)(dot1 - jwt), &sb, &e), 0);
	CHECK_STR(sb.buf, HEADER);
	strbuf_reset(&sb);
	CHECK_INT(crypto_base64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &sb, &e), 0);
	json_t *claims = json_loads(sb.buf, 0, NULL);
	CHECK_STR(json_string_value(json_object_get(claims, "iss")), "agor");
	CHECK_STR(json_string_value(json_object_get(claims, "aud")), "agor-executor");
	CHECK_INT(json_integer_value(json_object_get(claims, "exp")), NOW + 60);
	CHECK_INT(json_object_size(claims), 8);
	json_decref(claims);
	CHECK_INT(strlen(dot2 + 1), 43); /* 32 bytes of HMAC, unpadded */
	strbuf_release(&sb);
	free(jwt);
}

TEST(token_issue_reports_generated_claims_and_keeps_given_jti)
{
	struct err e = ERR_INIT;
	struct token_claims in = { (char *)"u", (char *)"s", (char *)"t", NULL, 0, 0 };
	struct token_claims issued = TOKEN_CLAIMS_INIT, verified = TOKEN_CLAIMS_INIT;
	char *jwt = NULL;
	long long before = (long long)time(NULL);
	CHECK_INT(token_issue_for(TOKEN_AUD_EXECUTOR, SECRET, SECRET_LEN, &in, 120, &jwt, &issued, &e), 0);
	CHECK(issued.iat >= before && issued.iat <= before + 5); /* iat 0 = now */
	CHECK_INT(issued.exp, issued.iat + 120);
	CHECK_INT(token_verify(SECRET, SECRET_LEN, jwt, TOKEN_NOW, &verified, &e), 0);
	CHECK_STR(verified.jti, issued.jti);
	token_claims_release(&verified);
	free(jwt);

	char *jwt2 = NULL;
	CHECK_INT(token_issue(SECRET, SECRET_LEN, &in, 120, &jwt2, &e), 0);
	CHECK_INT(token_verify(SECRET, SECRET_LEN, jwt2, TOKEN_NOW, &verified, &e), 0);
	CHECK(strcmp(verified.jti, issued.jti) != 0); /* 128 random bits each time */
	token_claims_release(&verified);
	free(jwt2);

	in.jti = (char *)"my-jti";
	CHECK_INT(token_issue(SECRET, SECRET_LEN, &in, 120, &jwt2, &e), 0);
	CHECK_INT(token_verify(SECRET, SECRET_LEN, jwt2, TOKEN_NOW, &verified, &e), 0);
	CHECK_STR(verified.jti, "my-jti");
	token_claims_release(&verified);
	token_claims_release(&issued);
	free(jwt2);
}

TEST(token_issue_refuses_misuse)
{
	struct err e = ERR_INIT;
	char *jwt = (char *)"unchanged";
	struct token_claims in = { (char *)"u", (char *)"s", (char *)"t", NULL, NOW, 0 };
	CHECK_INT(token_issue(SECRET, 31, &in, 60, &jwt, &e), -1); /* short secret */
	CHECK_STR(e.code, E_INTERNAL);
	CHECK(jwt == NULL);
	CHECK_INT(token_issue(SECRET, SECRET_LEN, &in, 0, &jwt, &e), -1);
	CHECK_INT(token_issue(SECRET, SECRET_LEN, &in, -5, &jwt, &e), -1);
	CHECK_INT(token_issue(SECRET, SECRET_LEN, &in, (1LL << 62), &jwt, &e), -1);
	in.tid = NULL; /* executor tokens are bound to a task */
	CHECK_INT(token_issue(SECRET, SECRET_LEN, &in, 60, &jwt, &e), -1);
	CHECK_CONTAINS(e.message, "tid");
	in.tid = (char *)"t";
	in.sub = (char *)"";
	CHECK_INT(token_issue(SECRET, SECRET_LEN, &in, 60, &jwt, &e), -1);
	in.sub = (char *)"bad \xff utf-8";
	CHECK_INT(token_issue(SECRET, SECRET_LEN, &in, 60, &jwt, &e), -1);
	CHECK_STR(e.code, E_INTERNAL);
	CHECK(jwt == NULL);
	err_clear(&e);
}

TEST(token_client_audience_round_trip)
{
	struct err e = ERR_INIT;
	struct token_claims in = { (char *)"user-7", NULL, NULL, NULL, NOW, 0 };
	char *jwt = NULL;
	CHECK_INT(token_issue_for(TOKEN_AUD_CLIENT, SECRET, SECRET_LEN, &in, 600, &jwt, NULL, &e), 0);
	struct token_claims c = TOKEN_CLAIMS_INIT;
	CHECK_INT(token_verify_for(TOKEN_AUD_CLIENT, SECRET, SECRET_LEN, jwt, NOW + 1, &c, &e), 0);
	CHECK_STR(c.sub, "user-7");
	CHECK(c.sid == NULL && c.tid == NULL);
	CHECK_INT(token_check_task(&c, "task-A", &e), -1); /* bound to no task */
	token_claims_release(&c);
	err_clear(&e);
	/* A client token is no executor token, and the other way round. */
	check_refused(jwt, "audience", "agor-executor");
	char *exec = issue_for_task("task-A", NOW, 600);
	check_refused_for(TOKEN_AUD_CLIENT, SECRET, exec, NOW + 1, "audience", "agor-client");
	free(exec);
	free(jwt);
}

TEST(token_verify_accepts_hand_built_token)
{
	/* The forging helper is right: a token built by hand with the right key verifies. */
	char *jwt = forge_signed(HEADER, CLAIMS);
	check_accepted(jwt, NOW + 10);
	free(jwt);
	/* typ is optional; unknown header parameters and unknown claims are ignored. */
	jwt = forge_signed("{\"alg\":\"HS256\",\"kid\":\"k1\"}", CLAIMS);
	check_accepted(jwt, NOW + 10);
	free(jwt);
	char *payload = claims_with("extra", "{\"x\":[1,2]}");
	jwt = forge_signed(HEADER, payload);
	check_accepted(jwt, NOW + 10);
	free(jwt);
	free(payload);
}

/* ---- refusals: shape and size ---------------------------------------------------------------- */

TEST(token_refuses_garbage)
{
	check_refused(NULL, "malformed", "no token");
	check_refused("", "malformed", "segments");
	check_refused("garbage", "malformed", "segments");
	check_refused("a.b", "malformed", "segments");
	check_refused("..", "malformed", "header");
	check_refused("\xff\xfe.\x01.\x02", "malformed", "header is not valid base64url");
	check_refused("eyJhbGciOiJIUzI1NiJ9", "malformed", "segments");
}

TEST(token_refuses_four_segments)
{
	char *jwt = forge_signed(HEADER, CLAIMS);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s.", jwt);
	check_refused(sb.buf, "malformed", "3 dot-separated segments");
	strbuf_reset(&sb);
	strbuf_addf(&sb, "%s.%s", jwt, "AAAA");
	check_refused(sb.buf, "malformed", "segments");
	strbuf_release(&sb);
	free(jwt);
}

TEST(token_refuses_huge_token)
{
	/* Correctly signed, but over 8 KiB: refused on size before anything else. */
	struct strbuf pad = STRBUF_INIT;
	strbuf_addch(&pad, '"');
	for (int i = 0; i < 7000; i++)
		strbuf_addch(&pad, 'x');
	strbuf_addch(&pad, '"');
	char *payload = claims_with("pad", pad.buf);
	char *jwt = forge_signed(HEADER, payload);
	CHECK(strlen(jwt) > TOKEN_MAX_LEN);
	check_refused(jwt, "too_large", "8192");
	free(jwt);
	free(payload);
	/* A long but allowed token still verifies. */
	strbuf_setlen(&pad, 4000);
	strbuf_addch(&pad, '"');
	payload = claims_with("pad", pad.buf);
	jwt = forge_signed(HEADER, payload);
	CHECK(strlen(jwt) < TOKEN_MAX_LEN);
	check_accepted(jwt, NOW + 10);
	free(jwt);
	free(payload);
	strbuf_release(&pad);
}

TEST(token_refuses_bad_base64url_segments)
{
	char *jwt = forge_signed(HEADER, CLAIMS);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s=", jwt); /* padded signature */
	check_refused(sb.buf, "signature", "base64url");
	strbuf_reset(&sb);
	char *dot1 = strchr(jwt, '.');
	strbuf_add(&sb, jwt, (size_t)(dot1 - jwt));
	strbuf_addf(&sb, "=%s", dot1); /* padded header */
	check_refused(sb.buf, "malformed", "header is not valid base64url");
	strbuf_reset(&sb);
	strbuf_addf(&sb, " %s", jwt);
	check_refused(sb.buf, "malformed", "base64url");
	strbuf_release(&sb);
	free(jwt);
}

/* ---- refusals: header ------------------------------------------------------------------------ */

TEST(token_refuses_alg_none_with_empty_signature)
{
	char *jwt = forge("{\"alg\":\"none\",\"typ\":\"JWT\"}", CLAIMS, NULL, 0);
	CHECK(jwt[strlen(jwt) - 1] == '.');
	check_refused(jwt, "alg", "only HS256");
	free(jwt);
	/* …and with a valid HMAC: the alg itself is refused, not merely the signature. */
	jwt = forge_signed("{\"alg\":\"none\"}", CLAIMS);
	check_refused(jwt, "alg", "only HS256");
	free(jwt);
}

TEST(token_refuses_alg_hs512)
{
	char *jwt = forge_signed("{\"alg\":\"HS512\",\"typ\":\"JWT\"}", CLAIMS);
	check_refused(jwt, "alg", "only HS256");
	free(jwt);
}

TEST(token_refuses_alg_variants)
{
	static const char *const headers[] = {
		"{\"alg\":\"hs256\",\"typ\":\"JWT\"}",	 "{\"alg\":\"HS256 \",\"typ\":\"JWT\"}",
		"{\"alg\":\"RS256\",\"typ\":\"JWT\"}",	 "{\"alg\":\"\",\"typ\":\"JWT\"}",
		"{\"alg\":[\"HS256\"],\"typ\":\"JWT\"}", "{\"alg\":null,\"typ\":\"JWT\"}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(headers); i++) {
		char *jwt = forge_signed(headers[i], CLAIMS);
		check_refused(jwt, "alg", "only HS256");
		free(jwt);
	}
	char *jwt = forge_signed("{\"typ\":\"JWT\"}", CLAIMS);
	check_refused(jwt, "alg", "no alg");
	free(jwt);
}

TEST(token_refuses_wrong_typ_and_crit)
{
	char *jwt = forge_signed("{\"alg\":\"HS256\",\"typ\":\"JOSE+JSON\"}", CLAIMS);
	check_refused(jwt, "header", "typ");
	free(jwt);
	jwt = forge_signed("{\"alg\":\"HS256\",\"typ\":1}", CLAIMS);
	check_refused(jwt, "header", "typ");
	free(jwt);
	jwt = forge_signed("{\"alg\":\"HS256\",\"crit\":[\"b64\"],\"b64\":false}", CLAIMS);
	check_refused(jwt, "header", "crit");
	free(jwt);
}

TEST(token_refuses_header_that_is_not_a_json_object)
{
	char *jwt = forge_signed("not json", CLAIMS);
	check_refused(jwt, "malformed", "header is not valid JSON");
	free(jwt);
	jwt = forge_signed("[\"HS256\"]", CLAIMS);
	check_refused(jwt, "malformed", "header is not a JSON object");
	free(jwt);
	jwt = forge_signed("{\"alg\":\"none\",\"alg\":\"HS256\"}", CLAIMS); /* duplicate key */
	check_refused(jwt, "malformed", "duplicate");
	free(jwt);
	jwt = forge_signed("{\"alg\":\"HS256\"} {}", CLAIMS);
	check_refused(jwt, "malformed", "header is not valid JSON");
	free(jwt);
}

/* ---- refusals: signature --------------------------------------------------------------------- */

TEST(token_refuses_forged_signature)
{
	char *jwt = forge_signed(HEADER, CLAIMS);
	size_t len = strlen(jwt);
	char *sig = strrchr(jwt, '.') + 1;
	sig[0] = sig[0] == 'A' ? 'B' : 'A';
	check_refused(jwt, "signature", "signature mismatch");
	/* All-zero MAC of the right length. */
	memset(sig, 'A', 42);
	sig[42] = 'A';
	check_refused(jwt, "signature", "signature mismatch");
	/* Too short and too long (but canonical) signatures. */
	jwt[len - 4] = '\0';
	check_refused(jwt, "signature", "wrong length");
	free(jwt);
	jwt = forge_signed(HEADER, CLAIMS);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%sAAAA", jwt);
	check_refused(sb.buf, "signature", "wrong length");
	strbuf_release(&sb);
	free(jwt);
}

TEST(token_refuses_swapped_payload_with_original_signature)
{
	char *mine = issue_for_task("task-A", NOW, 3600);
	char *other = forge(HEADER, CLAIMS, OTHER_SECRET, SECRET_LEN);
	/* header and signature of a genuine token, payload of another. */
	char *mine_dot1 = strchr(mine, '.'), *mine_dot2 = strrchr(mine, '.');
	char *other_dot1 = strchr(other, '.'), *other_dot2 = strrchr(other, '.');
	struct strbuf sb = STRBUF_INIT;
	strbuf_add(&sb, mine, (size_t)(mine_dot1 - mine));
	strbuf_add(&sb, other_dot1, (size_t)(other_dot2 - other_dot1));
	strbuf_addstr(&sb, mine_dot2);
	check_refused(sb.buf, "signature", "signature mismatch");
	/* A payload edited by hand to name another task, original signature kept. */
	strbuf_reset(&sb);
	char *payload = claims_with("tid", "\"task-B\"");
	char *edited = forge(HEADER, payload, NULL, 0);
	strbuf_add(&sb, edited, strlen(edited) - 1);
	strbuf_addstr(&sb, mine_dot2);
	check_refused(sb.buf, "signature", "signature mismatch");
	free(edited);
	free(payload);
	strbuf_release(&sb);
	free(mine);
	free(other);
}

TEST(token_refuses_other_secret)
{
	char *jwt = issue_for_task("task-A", NOW, 3600);
	check_refused_for(TOKEN_AUD_EXECUTOR, OTHER_SECRET, jwt, NOW + 10, "signature", "signature mismatch");
	/* Same secret, one byte shorter: still another key. */
	struct err e = ERR_INIT;
	CHECK_INT(token_verify(SECRET, SECRET_LEN - 1, jwt, NOW + 10, NULL, &e), -1);
	CHECK_STR(e.code, E_AUTH_FAILED);
	/* A secret below the RFC 7518 minimum is a caller error, not a verdict on the token. */
	CHECK_INT(token_verify(SECRET, 16, jwt, NOW + 10, NULL, &e), -1);
	CHECK_STR(e.code, E_INTERNAL);
	err_clear(&e);
	free(jwt);
}

/* ---- refusals: claims ------------------------------------------------------------------------ */

TEST(token_refuses_expired)
{
	char *jwt = issue_for_task("task-A", NOW, 60);
	check_accepted(jwt, NOW + 59);
	/* exp <= now is expired */
	check_refused_for(TOKEN_AUD_EXECUTOR, SECRET, jwt, NOW + 60, "expired", "expired");
	check_refused_for(TOKEN_AUD_EXECUTOR, SECRET, jwt, NOW + 86400, "expired", "expired");
	free(jwt);
}

TEST(token_refuses_future_iat)
{
	char *jwt = issue_for_task("task-A", NOW + 61, 3600);
	check_refused_for(TOKEN_AUD_EXECUTOR, SECRET, jwt, NOW, "not_yet_valid", "future");
	check_accepted(jwt, NOW + 1); /* within the 60 s skew */
	free(jwt);
	char *payload = claims_with("nbf", "1700000100");
	jwt = forge_signed(HEADER, payload);
	check_refused(jwt, "not_yet_valid", "not valid before");
	check_accepted(jwt, NOW + 40);
	free(jwt);
	free(payload);
}

TEST(token_refuses_wrong_audience)
{
	static const char *const bad[] = {
		"\"agor-client\"", "\"AGOR-EXECUTOR\"", "[]", "[\"agor-client\"]", "[\"agor-executor\",1]", "null", "42"
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *payload = claims_with("aud", bad[i]);
		char *jwt = forge_signed(HEADER, payload);
		check_refused(jwt, "audience", NULL);
		free(jwt);
		free(payload);
	}
	char *payload = claims_with("aud", NULL);
	char *jwt = forge_signed(HEADER, payload);
	check_refused(jwt, "audience", "agor-executor");
	free(jwt);
	free(payload);
	/* An array containing the audience is fine (RFC 7519 §4.1.3). */
	payload = claims_with("aud", "[\"other\",\"agor-executor\"]");
	jwt = forge_signed(HEADER, payload);
	check_accepted(jwt, NOW + 10);
	free(jwt);
	free(payload);
}

TEST(token_refuses_wrong_issuer)
{
	static const char *const bad[] = { "\"evil\"", "\"Agor\"", "\"agor \"", "[\"agor\"]", "null" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *payload = claims_with("iss", bad[i]);
		char *jwt = forge_signed(HEADER, payload);
		check_refused(jwt, "issuer", "issuer");
		free(jwt);
		free(payload);
	}
	char *payload = claims_with("iss", NULL);
	char *jwt = forge_signed(HEADER, payload);
	check_refused(jwt, "issuer", "issuer");
	free(jwt);
	free(payload);
}

TEST(token_refuses_missing_claims)
{
	static const char *const required[] = { "sub", "sid", "tid", "jti", "iat", "exp" };
	for (size_t i = 0; i < ARRAY_SIZE(required); i++) {
		char *payload = claims_with(required[i], NULL);
		char *jwt = forge_signed(HEADER, payload);
		check_refused(jwt, "claims", required[i]);
		free(jwt);
		free(payload);
	}
}

TEST(token_refuses_wrongly_typed_claims)
{
	static const struct {
		const char *key, *value;
	} bad[] = {
		{ "sub", "42" },	   { "sub", "\"\"" },	      { "sid", "null" },
		{ "tid", "[\"task-A\"]" }, { "jti", "{}" },	      { "iat", "\"1700000000\"" },
		{ "iat", "1700000000.0" }, { "exp", "1700003600.5" }, { "exp", "true" },
		{ "iat", "-1" },	   { "nbf", "\"soon\"" },     { "exp", "1700000000" }, /* not after iat */
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *payload = claims_with(bad[i].key, bad[i].value);
		char *jwt = forge_signed(HEADER, payload);
		check_refused(jwt, "claims", NULL);
		free(jwt);
		free(payload);
	}
}

TEST(token_refuses_claims_that_are_not_an_object)
{
	static const char *const bad[] = { "[]", "\"agor\"", "not json", "", "{\"iss\":\"agor\"" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *jwt = forge_signed(HEADER, bad[i]);
		check_refused(jwt, "claims", "claims");
		free(jwt);
	}
}

TEST(token_refuses_duplicate_keys_in_payload)
{
	/* A second "tid" must not silently win (or lose) over the first. */
	char payload[sizeof(CLAIMS) + 32];
	snprintf(payload, sizeof(payload), "%.*s,\"tid\":\"task-B\"}", (int)strlen(CLAIMS) - 1, CLAIMS);
	char *jwt = forge_signed(HEADER, payload);
	check_refused(jwt, "claims", "duplicate");
	free(jwt);
}

TEST(token_refuses_integer_overflow_in_claims)
{
	char *payload = claims_with("exp", "1");
	/* Replace the value textually with one no json_int_t holds. */
	struct strbuf sb = STRBUF_INIT;
	const char *at = strstr(payload, "\"exp\":1");
	strbuf_add(&sb, payload, (size_t)(at - payload));
	strbuf_addstr(&sb, "\"exp\":99999999999999999999999");
	strbuf_addstr(&sb, at + strlen("\"exp\":1"));
	char *jwt = forge_signed(HEADER, sb.buf);
	check_refused(jwt, "claims", "claims");
	free(jwt);
	strbuf_release(&sb);
	free(payload);
}

/* ---- task binding ---------------------------------------------------------------------------- */

TEST(token_of_task_a_refused_for_task_b)
{
	struct err e = ERR_INIT;
	char *jwt = issue_for_task("task-A", NOW, 3600);
	struct token_claims c = TOKEN_CLAIMS_INIT;
	CHECK_INT(token_verify(SECRET, SECRET_LEN, jwt, NOW + 1, &c, &e), 0);
	CHECK_INT(token_check_task(&c, "task-A", &e), 0);
	CHECK_INT(token_check_task(&c, "task-B", &e), -1);
	CHECK_STR(e.code, E_AUTH_FAILED);
	CHECK_STR(json_string_value(json_object_get(e.details, "reason")), "task");
	CHECK_INT(token_check_task(&c, "task-", &e), -1);
	CHECK_INT(token_check_task(&c, "task-AA", &e), -1);
	CHECK_INT(token_check_task(&c, NULL, &e), -1);
	CHECK_INT(token_check_task(NULL, "task-A", &e), -1);
	token_claims_release(&c);
	err_clear(&e);
	free(jwt);
}
