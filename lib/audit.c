/* audit.c — append and verify the hash-chained audit log (audit.h).
 * Never rewrites an existing row; never hashes anything but the canonical row form. */
#include <mbedtls/sha256.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "json.h"
#include "banned.h"

#define GENESIS "0000000000000000000000000000000000000000000000000000000000000000"

static void row_hash(const char *prev, long long id, long long at, const char *actor, const char *action,
		     const char *target, const char *outcome, const char *details, char out[65])
{
	json_t *row =
		json_pack("[I,I,s,s,s?,s,s?]", (json_int_t)id, (json_int_t)at, actor, action, target, outcome, details);
	char *canonical = json_to_compact(row);
	json_decref(row);
	unsigned char digest[32];
	mbedtls_sha256_context ctx;
	mbedtls_sha256_init(&ctx);
	mbedtls_sha256_starts_ret(&ctx, 0);
	mbedtls_sha256_update_ret(&ctx, (const unsigned char *)prev, strlen(prev));
	mbedtls_sha256_update_ret(&ctx, (const unsigned char *)canonical, strlen(canonical));
	mbedtls_sha256_finish_ret(&ctx, digest);
	mbedtls_sha256_free(&ctx);
	free(canonical);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

int audit_append(struct db *db, const char *actor, const char *action, const char *target, const char *outcome,
		 const json_t *details, struct err *e)
{
	_cleanup_free_ char *details_text = details ? json_to_compact(details) : NULL;
	json_t *last = db_query_one(db, e, "SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1", "");
	if (!last)
		return -1;
	long long id = json_is_null(last) ? 1 : json_integer_value(json_object_get(last, "id")) + 1;
	const char *prev = json_is_null(last) ? GENESIS : json_string_value(json_object_get(last, "hash"));
	long long at = (long long)time(NULL);
	char hash[65];
	row_hash(prev, id, at, actor, action, target, outcome, details_text, hash);
	int rc = db_run(db, e,
			"INSERT INTO audit_log (id, at, actor, action, target, outcome, details, prev_hash, hash)"
			" VALUES (?,?,?,?,?,?,?,?,?)",
			"iisssssss", id, at, actor, action, target, outcome, details_text, prev, hash);
	json_decref(last);
	return rc < 0 ? -1 : 0;
}

static int check_row(json_t *row, const char *prev, struct audit_report *r)
{
	const char *hash = json_string_value(json_object_get(row, "hash"));
	const char *stored_prev = json_string_value(json_object_get(row, "prev_hash"));
	long long id = json_integer_value(json_object_get(row, "id"));
	char want[65];
	row_hash(prev, id, json_integer_value(json_object_get(row, "at")),
		 json_string_value(json_object_get(row, "actor")), json_string_value(json_object_get(row, "action")),
		 json_string_value(json_object_get(row, "target")), json_string_value(json_object_get(row, "outcome")),
		 json_string_value(json_object_get(row, "details")), want);
	if (!stored_prev || strcmp(stored_prev, prev)) {
		r->first_bad_id = id;
		snprintf(r->reason, sizeof(r->reason),
			 "row %lld does not follow the previous row (deleted or reordered rows)", id);
		return -1;
	}
	if (!hash || strcmp(hash, want)) {
		r->first_bad_id = id;
		snprintf(r->reason, sizeof(r->reason), "row %lld was modified (its hash does not match its content)",
			 id);
		return -1;
	}
	return 0;
}

int audit_verify(struct db *db, struct audit_report *r, struct err *e)
{
	memset(r, 0, sizeof(*r));
	json_t *rows = db_query_json(db, e, "SELECT * FROM audit_log ORDER BY id", "");
	if (!rows)
		return -1;
	char prev[65];
	snprintf(prev, sizeof(prev), "%s", GENESIS);
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
	{
		if (check_row(row, prev, r) < 0)
			break;
		snprintf(prev, sizeof(prev), "%s", json_string_value(json_object_get(row, "hash")));
		r->rows++;
	}
	json_decref(rows);
	return 0;
}
