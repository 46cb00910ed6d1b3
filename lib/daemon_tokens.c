/* daemon_tokens.c — user access tokens for clients over TCP (daemon_tokens.h, docs/rpc.md): made on the Unix
 * socket, presented with auth.token on a TCP connection, revocable, checked again on every call. The value is
 * never stored. */
#include <string.h>

#include "daemon_access.h"
#include "daemon_limits.h"
#include "daemon_tokens.h"
#include "json.h"
#include "token.h"
#include "banned.h"

#define DEFAULT_TTL_MS (30LL * 24 * 3600 * 1000)
#define MAX_TTL_MS     (365LL * 24 * 3600 * 1000)

/* tokens.create {ttl_ms?, label?, user_id?} → {token, jti, expires_at}: only a caller known by SO_PEERCRED
 * may mint one, for itself — or, an admin, for another user (user_id: id or name). */
int method_tokens_create(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon_peer *p = P(rc);
	if (!p->user_id || p->token_jti)
		return err_set(e, E_AUTH_FAILED,
			       "tokens are made on the Unix socket by the user they are for "
			       "(`agor user token`), never over TCP");
	json_t *ttl = json_object_get(params, "ttl_ms");
	long long ttl_ms = json_is_integer(ttl) ? json_integer_value(ttl) : DEFAULT_TTL_MS;
	if (ttl && (!json_is_integer(ttl) || ttl_ms < 60000 || ttl_ms > MAX_TTL_MS))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "ttl_ms"),
				"params.ttl_ms: expected an integer 60000..%lld (one minute to one year)", MAX_TTL_MS);
	const char *for_user = json_get_str(params, "user_id");
	_cleanup_json_ json_t *user = NULL;
	if (for_user && !p->is_admin)
		return err_set(e, E_PERMISSION_DENIED, "only an admin may make a token for another user");
	if (for_user) {
		user = db_query_one(D(rc)->db, e, "SELECT id FROM users WHERE id = ?1 OR name = ?1", "s", for_user);
		if (!user || json_is_null(user))
			return user ? err_set(e, E_NOT_FOUND, "no user %s", for_user) : -1;
	}
	const char *subject = user ? json_get_str(user, "id") : p->user_id;
	struct token_claims in = { .sub = (char *)subject }, issued = TOKEN_CLAIMS_INIT;
	char *jwt = NULL;
	if (token_issue_for(TOKEN_AUD_CLIENT, D(rc)->jwt_secret, sizeof(D(rc)->jwt_secret), &in, ttl_ms / 1000, &jwt,
			    &issued, e) < 0)
		return -1;
	int rv = db_run(D(rc)->db, e,
			"INSERT INTO client_tokens (jti, user_id, label, issued_at, expires_at) VALUES (?,?,?,?,?)",
			"sssii", issued.jti, subject, json_get_str(params, "label"), issued.iat, issued.exp);
	if (rv >= 0) {
		*result = json_pack("{s:s,s:s,s:I}", "token", jwt, "jti", issued.jti, "expires_at",
				    (json_int_t)issued.exp);
		daemon_audit(D(rc), p->user_id, "tokens.create", issued.jti, "ok",
			     user ? json_pack("{s:s}", "for", subject) : NULL);
	}
	token_claims_release(&issued);
	free(jwt);
	return rv < 0 ? -1 : 0;
}

int method_tokens_list(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)params;
	if (!P(rc)->user_id)
		return err_set(e, E_AUTH_FAILED, "this connection is not an agor user");
	*result = P(rc)->is_admin
			  ? db_query_json(D(rc)->db, e,
					  "SELECT jti, user_id, label, issued_at, expires_at, revoked_at, "
					  "last_used_at FROM client_tokens ORDER BY issued_at",
					  "")
			  : db_query_json(D(rc)->db, e,
					  "SELECT jti, user_id, label, issued_at, expires_at, revoked_at, "
					  "last_used_at FROM client_tokens WHERE user_id = ? ORDER BY issued_at",
					  "s", P(rc)->user_id);
	return *result ? 0 : -1;
}

int method_tokens_revoke(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	const char *jti = json_get_str(params, "jti");
	if (!P(rc)->user_id)
		return err_set(e, E_AUTH_FAILED, "this connection is not an agor user");
	if (!jti)
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "jti"), "params.jti: required");
	int n = P(rc)->is_admin ? db_run(D(rc)->db, e,
					 "UPDATE client_tokens SET revoked_at = ? WHERE jti = ? AND revoked_at IS NULL",
					 "is", daemon_now(), jti)
				: db_run(D(rc)->db, e,
					 "UPDATE client_tokens SET revoked_at = ? WHERE jti = ? AND user_id = ? AND "
					 "revoked_at IS NULL",
					 "iss", daemon_now(), jti, P(rc)->user_id);
	if (n < 0)
		return -1;
	if (n == 0)
		return err_set(e, E_NOT_FOUND, "no live token %s of yours", jti);
	daemon_audit(D(rc), P(rc)->user_id, "tokens.revoke", jti, "ok", NULL);
	*result = json_pack("{s:b}", "revoked", 1);
	return 0;
}

/* auth.token {token}: this TCP connection acts as the token's user from now on. */
int method_auth_token(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	struct daemon_peer *p = P(rc);
	const char *jwt = json_get_str(params, "token");
	if (p->uid != (uid_t)-1)
		return err_set(e, E_INVALID_PAYLOAD,
			       "auth.token is for TCP connections; the Unix socket knows its peer");
	struct token_claims c = TOKEN_CLAIMS_INIT;
	struct err why = ERR_INIT;
	if (!jwt || token_verify_for(TOKEN_AUD_CLIENT, D(rc)->jwt_secret, sizeof(D(rc)->jwt_secret), jwt, TOKEN_NOW, &c,
				     &why) < 0) {
		daemon_audit_refusal(D(rc), "tcp", "auth.token", NULL, NULL);
		err_set(e, E_AUTH_FAILED, "auth.token: %s", jwt ? why.message : "params.token is required");
		err_clear(&why);
		return -1;
	}
	json_t *row = daemon_live_token(D(rc), c.jti, e);
	if (row) {
		free(p->user_id);
		free(p->token_jti);
		p->user_id = xstrdup(json_get_str(row, "user_id"));
		p->is_admin = !strcmp(json_get_str(row, "role"), "admin");
		p->token_jti = xstrdup(c.jti);
		db_run(D(rc)->db, e, "UPDATE client_tokens SET last_used_at = ? WHERE jti = ?", "is", daemon_now(),
		       c.jti);
		*result = json_pack("{s:s,s:b}", "user_id", p->user_id, "is_admin", p->is_admin);
		json_decref(row);
	} else {
		daemon_audit_refusal(D(rc), "tcp", "auth.token", c.jti, NULL);
	}
	token_claims_release(&c);
	return row ? 0 : -1;
}
