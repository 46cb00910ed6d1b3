/* daemon_taskauth.c — executors' session tokens (daemon_taskauth.h): verified (HS256, iss/aud/exp), known (jti
 * recorded), not revoked, for a task still running; counted. Never trusts a check the database has since voided. */
#include <string.h>

#include "crypto.h"
#include "daemon_limits.h"
#include "daemon_taskauth.h"
#include "json.h"
#include "log.h"
#include "banned.h"

void daemon_token_auth_release(struct daemon_token_auth *a)
{
	token_claims_release(&a->claims);
	if (a->task)
		json_decref(a->task);
}

int daemon_token_refuse(struct daemon *d, const char *method, const char *task, const char *why, struct err *e)
{
	daemon_audit_refusal(d, "executor", method, task, json_pack("{s:s}", "reason", why));
	return err_set(e, E_AUTH_FAILED, "session token refused: %s", why);
}

/* Executors stream with one token. Its signature and claims are checked once and remembered, by the
 * exact token text, until it expires; so is the finding that it is recorded, not revoked and bound to a
 * running task, but only while d->auth_generation is unchanged (any write to tokens or tasks, any
 * rollback voids it), the database file unchanged by anyone else, and inside a batch of writes (whose
 * BEGIN IMMEDIATE sees other processes' commits). Its calls are counted in memory and added to
 * tokens.uses before the batch commits. */
#define VERIFIED_TOKENS 16

struct verified_token {
	char *jwt;
	struct token_claims claims;
	json_t *task;		/* the running task's row when last found live, else NULL */
	uint64_t generation;	/* d->auth_generation then */
	unsigned data_version;	/* the database file's SQLITE_FCNTL_DATA_VERSION then */
	long long unsaved_uses; /* calls not yet added to tokens.uses */
};

static void on_row_change(void *arg, int op, const char *database, const char *table, sqlite3_int64 rowid)
{
	(void)op;
	(void)database;
	(void)rowid;
	struct daemon *d = arg;
	if (!d->saving_token_uses && (!strcmp(table, "tokens") || !strcmp(table, "tasks")))
		d->auth_generation++;
}

static void on_rollback(void *arg)
{
	struct daemon *d = arg;
	d->auth_generation++;
}

void daemon_watch_auth_state(struct daemon *d)
{
	sqlite3_update_hook(d->db->sql, on_row_change, d);
	sqlite3_rollback_hook(d->db->sql, on_rollback, d);
}

static unsigned data_version(struct daemon *d)
{
	unsigned v = 0;
	if (sqlite3_file_control(d->db->sql, "main", SQLITE_FCNTL_DATA_VERSION, &v) != SQLITE_OK)
		d->auth_generation++; /* unknown: never trust a remembered check on it */
	return v;
}

static void save_uses(struct daemon *d, struct verified_token *v)
{
	if (!v->unsaved_uses || !d->db)
		return;
	struct err e = ERR_INIT;
	d->saving_token_uses = 1;
	if (db_run(d->db, &e, "UPDATE tokens SET uses = uses + ? WHERE jti = ?", "is", v->unsaved_uses, v->claims.jti) <
	    0)
		log_error("could not count the uses of token %s: %s", v->claims.jti, e.message);
	d->saving_token_uses = 0;
	err_clear(&e);
	v->unsaved_uses = 0;
}

void daemon_tokens_before_commit(struct daemon *d)
{
	for (int i = 0; d->verified && i < VERIFIED_TOKENS; i++)
		save_uses(d, &d->verified[i]);
	d->data_version_at_commit = data_version(d);
}

/* SQLite counts a connection's own commits in the data version too, so each batch's commit voided every remembered
 * finding and the next batch read the token and its task again (two queries per loop round of a streaming executor).
 * The commit changes nothing such a finding rests on: the batch's own writes to tokens or tasks moved
 * auth_generation, and nobody else could write while it held the write lock it took at BEGIN IMMEDIATE (what others
 * commit after it moves the version again, seen at the next batch's BEGIN). A finding that held as the commit began
 * holds after it. */
void daemon_tokens_batch_committed(struct daemon *d)
{
	unsigned now = data_version(d);
	for (int i = 0; d->verified && i < VERIFIED_TOKENS; i++) {
		struct verified_token *v = &d->verified[i];
		if (v->task && v->generation == d->auth_generation && v->data_version == d->data_version_at_commit)
			v->data_version = now;
	}
}

static void forget_live_check(struct verified_token *v)
{
	if (v->task)
		json_decref(v->task);
	v->task = NULL;
}

static void forget_slot(struct daemon *d, struct verified_token *v)
{
	save_uses(d, v);
	forget_live_check(v);
	free(v->jwt);
	v->jwt = NULL;
	token_claims_release(&v->claims);
}

void daemon_forget_verified_tokens(struct daemon *d)
{
	for (int i = 0; d->verified && i < VERIFIED_TOKENS; i++)
		forget_slot(d, &d->verified[i]);
	free(d->verified);
	d->verified = NULL;
}

/* Same length and same bytes, in time independent of where they differ. */
static int same_token(const char *known, const char *jwt, size_t len)
{
	return strlen(known) == len && crypto_equal(known, jwt, len);
}

/* The remembered verification of jwt (signature, claims, not expired), verifying and remembering it
 * first when needed; NULL with why set when it does not verify. */
static struct verified_token *verify_token(struct daemon *d, const char *jwt, struct err *why)
{
	if (!d->verified)
		d->verified = xcalloc(VERIFIED_TOKENS, sizeof(*d->verified));
	long long now = daemon_now();
	size_t len = strlen(jwt);
	for (int i = 0; i < VERIFIED_TOKENS; i++) {
		struct verified_token *v = &d->verified[i];
		if (v->jwt && v->claims.exp > now && same_token(v->jwt, jwt, len))
			return v;
	}
	struct token_claims claims = TOKEN_CLAIMS_INIT;
	if (token_verify_for(TOKEN_AUD_EXECUTOR, d->jwt_secret, sizeof(d->jwt_secret), jwt, TOKEN_NOW, &claims, why) <
	    0)
		return NULL;
	struct verified_token *slot = &d->verified[(unsigned)claims.iat % VERIFIED_TOKENS];
	forget_slot(d, slot);
	slot->jwt = xstrdup(jwt);
	slot->claims = claims;
	return slot;
}

/* The remembered finding that v is live still holds: nothing that could change it was written since. */
static int still_live(struct daemon *d, const struct verified_token *v)
{
	return v->task && d->write_batch_open && v->generation == d->auth_generation &&
	       v->data_version == data_version(d);
}

/* Looks the token up (recorded for its task, not revoked) and its task (running); on success a->task
 * is set and v remembers the finding. */
static int check_live(struct daemon *d, const char *method, struct verified_token *v, struct daemon_token_auth *a,
		      struct err *e)
{
	uint64_t generation = d->auth_generation;
	unsigned version = data_version(d);
	json_t *row =
		db_query_one(d->db, e, "SELECT task_id, revoked_at FROM tokens WHERE jti = ?", "s", v->claims.jti);
	if (!row)
		return -1;
	const char *tid = v->claims.tid;
	int rc = 0;
	if (json_is_null(row) || strcmp(json_get_str(row, "task_id"), tid))
		rc = daemon_token_refuse(d, method, tid, "unknown token", e);
	else if (!json_is_null(json_object_get(row, "revoked_at")))
		rc = daemon_token_refuse(d, method, tid, "revoked (its task has ended)", e);
	json_decref(row);
	if (rc < 0)
		return -1;
	a->task = db_query_one(d->db, e, "SELECT * FROM tasks WHERE id = ?", "s", tid);
	if (!a->task || json_is_null(a->task) || strcmp(json_get_str(a->task, "status"), "running"))
		return daemon_token_refuse(d, method, tid, "its task is not running", e);
	if (generation == d->auth_generation) { /* the refusals above write the audit log, not tokens or tasks */
		v->task = json_incref(a->task);
		v->generation = generation;
		v->data_version = version;
	}
	return 0;
}

/* Verifies the session token jwt (NULL: none given) for method; on success a->claims and a->task are set. */
int daemon_token_authenticate_jwt(struct daemon *d, const char *method, const char *jwt, struct daemon_token_auth *a,
				  struct err *e)
{
	memset(a, 0, sizeof(*a));
	if (!jwt)
		return daemon_token_refuse(d, method, NULL, "params.session_token is missing", e);
	struct err why = ERR_INIT;
	struct verified_token *v = verify_token(d, jwt, &why);
	if (!v) {
		int rc = daemon_token_refuse(d, method, NULL, why.message, e);
		err_clear(&why);
		return rc;
	}
	token_claims_copy(&a->claims, &v->claims);
	daemon_write_batch(d); /* executors stream: their writes of one read burst share one transaction */
	if (still_live(d, v)) {
		a->task = json_incref(v->task);
	} else {
		forget_live_check(v);
		if (check_live(d, method, v, a, e) < 0)
			return -1;
	}
	v->unsaved_uses++;
	if (!d->write_batch_open)
		save_uses(d, v);
	return 0;
}

int daemon_token_authenticate(struct daemon *d, const char *method, json_t *params, struct daemon_token_auth *a,
			      struct err *e)
{
	return daemon_token_authenticate_jwt(d, method, json_get_str(params, "session_token"), a, e);
}

int daemon_executor_authenticate(struct daemon *d, const char *method, json_t *params, char **task_id, struct err *e)
{
	struct daemon_token_auth a;
	int rc = daemon_token_authenticate(d, method, params, &a, e);
	if (rc == 0)
		*task_id = xstrdup(a.claims.tid);
	daemon_token_auth_release(&a);
	return rc;
}
