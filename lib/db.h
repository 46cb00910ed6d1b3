/* db.h — the daemon's embedded SQLite database: opened 0600 in WAL mode with foreign keys on, brought to
 * the newest schema by numbered migrations applied in one transaction each.
 * Never opened by an executor; never interpolates values into SQL (bind parameters only).
 *
 * Migrations are a fixed, ordered list in db.c; `PRAGMA user_version` records how many ran. A database
 * newer than this binary (user_version above the list) is refused rather than downgraded.
 * Small helpers wrap the common statement patterns; they set E_INTERNAL with SQLite's message on failure.
 */
#ifndef AGOR_DB_H
#define AGOR_DB_H

#include <jansson.h>
#include <sqlite3.h>

#include "err.h"

#define DB_STMT_CACHE 48

/* db_run/db_query_* keep their compiled statements, keyed by the SQL text's address (SQL is always a
 * literal) and checked by content, so a hot statement is compiled once per connection. */
struct db {
	sqlite3 *sql;
	char *path;
	struct {
		const char *sql;
		sqlite3_stmt *st;
	} cache[DB_STMT_CACHE];
	int ncached;
	struct db_checkpointer *checkpointer; /* db_checkpoint_in_background(), else NULL */
};

int db_open(const char *path, struct db **out, struct err *e);
void db_close(struct db *db);
/* Moves WAL checkpoints off the caller's thread: a thread with its own connection runs a passive
 * checkpoint every DB_CHECKPOINT_INTERVAL_MS, and db's connection no longer checkpoints on commit (which
 * stalled the daemon's event loop for milliseconds every 1,000 pages). db_close stops it.
 * A passive checkpoint never catches up with writers that never pause, and the WAL then only grows: once it is
 * larger than wal_max bytes the thread runs a TRUNCATE checkpoint instead (it waits up to
 * DB_TRUNCATE_WAIT_MS for the writer in progress, blocks writers while it copies what is left, and empties the
 * file), logged with the size it had. wal_max 0: never. */
#define DB_CHECKPOINT_INTERVAL_MS 200
#define DB_TRUNCATE_WAIT_MS	  2000
int db_checkpoint_in_background(struct db *db, unsigned long long wal_max, struct err *e);
/* The sizes of the database file and its WAL now (0 for a file that does not exist). */
void db_file_sizes(const struct db *db, unsigned long long *db_bytes, unsigned long long *wal_bytes);
/* The schema version this binary migrates to. */
int db_schema_version(void);

int db_exec(struct db *db, const char *sql, struct err *e);
int db_begin(struct db *db, struct err *e);
int db_commit(struct db *db, struct err *e);
/* After a failed step inside `SAVEPOINT name` (a constant): undoes the steps and ends the savepoint. Its own
 * errors are ignored: the step's error is the one to report. */
void db_savepoint_undo(struct db *db, const char *name);
void db_rollback(struct db *db);
/* The errno behind the last failed call: ENOSPC (the disk is full), EIO (an I/O error), or 0 (anything else). */
int db_failure_errno(struct db *db);

/* Prepares sql and binds args described by types: 's' text (NULL → NULL), 'i' int64, 'b' blob (two args:
 * pointer, size_t length). Returns the statement or NULL with e set. */
sqlite3_stmt *db_prepare(struct db *db, const char *sql, struct err *e, const char *types, ...);
/* Runs a statement without result rows; returns the number of changed rows, or -1. */
int db_run(struct db *db, struct err *e, const char *sql, const char *types, ...);
/* Rows of a query as a JSON array of objects (column name → text/integer/null); NULL on error. */
json_t *db_query_json(struct db *db, struct err *e, const char *sql, const char *types, ...);
/* The first row as an object, json_null() when there is none, NULL on error. */
json_t *db_query_one(struct db *db, struct err *e, const char *sql, const char *types, ...);
int db_fail(struct db *db, struct err *e, const char *what);

#endif
