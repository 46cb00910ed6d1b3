/* db.c — SQLite open, pragmas, migrations and statement helpers (db.h).
 * Never builds SQL from values; never leaves a migration half applied. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "db.h"
#include "fault.h"
#include "log.h"
#include "paths.h"
#include "banned.h"

/* Each entry is one schema step; never edit a released step, append a new one. */
static const char *const migrations[] = {
	/* 1: the first schema */
	"CREATE TABLE users ("
	"  id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, unix_username TEXT UNIQUE,"
	"  unix_uid INTEGER UNIQUE, role TEXT NOT NULL DEFAULT 'member', created_at INTEGER NOT NULL);"
	"CREATE TABLE repos ("
	"  id TEXT PRIMARY KEY, url TEXT NOT NULL, path TEXT NOT NULL UNIQUE, default_branch TEXT,"
	"  created_by TEXT REFERENCES users(id), created_at INTEGER NOT NULL);"
	"CREATE TABLE worktrees ("
	"  id TEXT PRIMARY KEY, repo_id TEXT NOT NULL REFERENCES repos(id), name TEXT NOT NULL,"
	"  path TEXT NOT NULL UNIQUE, branch TEXT, created_by TEXT REFERENCES users(id),"
	"  others_can TEXT NOT NULL DEFAULT 'none', others_fs_access TEXT NOT NULL DEFAULT 'none',"
	"  created_at INTEGER NOT NULL, UNIQUE (repo_id, name));"
	"CREATE TABLE worktree_owners ("
	"  worktree_id TEXT NOT NULL REFERENCES worktrees(id) ON DELETE CASCADE,"
	"  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE, PRIMARY KEY (worktree_id, user_id));"
	"CREATE TABLE sessions ("
	"  id TEXT PRIMARY KEY, worktree_id TEXT NOT NULL REFERENCES worktrees(id), tool TEXT NOT NULL,"
	"  permission_mode TEXT NOT NULL DEFAULT 'default', created_by TEXT NOT NULL REFERENCES users(id),"
	"  agent_session_id TEXT, created_at INTEGER NOT NULL);"
	"CREATE TABLE tasks ("
	"  id TEXT PRIMARY KEY, session_id TEXT REFERENCES sessions(id), command TEXT NOT NULL,"
	"  status TEXT NOT NULL CHECK (status IN ('queued','running','completed','failed','cancelled')),"
	"  prompt TEXT, created_by TEXT REFERENCES users(id), execution_user TEXT, result TEXT, error TEXT,"
	"  token_usage TEXT, created_at INTEGER NOT NULL, started_at INTEGER, finished_at INTEGER);"
	"CREATE INDEX tasks_by_status ON tasks(status);"
	"CREATE TABLE messages ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL REFERENCES tasks(id),"
	"  session_id TEXT, message_type TEXT NOT NULL, data TEXT NOT NULL, created_at INTEGER NOT NULL);"
	"CREATE INDEX messages_by_task ON messages(task_id, id);"
	"CREATE INDEX messages_by_session ON messages(session_id, id);"
	"CREATE TABLE api_keys ("
	"  service TEXT PRIMARY KEY, sealed BLOB NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);"
	"CREATE TABLE tokens ("
	"  jti TEXT PRIMARY KEY, task_id TEXT NOT NULL REFERENCES tasks(id), session_id TEXT, user_id TEXT,"
	"  issued_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, revoked_at INTEGER,"
	"  uses INTEGER NOT NULL DEFAULT 0, api_key_uses INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX tokens_by_task ON tokens(task_id);"
	"CREATE TABLE audit_log ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,"
	"  target TEXT, outcome TEXT NOT NULL, details TEXT, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);",
	/* 2: user access tokens for clients over TCP (revocable; the value itself is never stored) */
	"CREATE TABLE client_tokens ("
	"  jti TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id), label TEXT,"
	"  issued_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, revoked_at INTEGER, last_used_at INTEGER);",
	/* 3: paired nodes (issue 8): a pairing request the operator approves or revokes; the node's token is
	 * only ever stored as its SHA-256 */
	"CREATE TABLE nodes ("
	"  id TEXT PRIMARY KEY, display_name TEXT NOT NULL, token_sha256 TEXT NOT NULL,"
	"  status TEXT NOT NULL CHECK (status IN ('pending','approved','revoked')), requested_from TEXT,"
	"  last_ip TEXT, created_at INTEGER NOT NULL, decided_at INTEGER, decided_by TEXT, last_seen_at INTEGER);",
	/* 4: exec approvals granted on the gateway (issue 8), keyed by the SHA-256 of the exact argv; a session's
	 * exec defaults set by /exec and /elevated; the last exec event of a session its agent was shown */
	"CREATE TABLE exec_approvals ("
	"  id TEXT PRIMARY KEY, argv_sha256 TEXT NOT NULL, host TEXT NOT NULL, session_id TEXT, user_id TEXT NOT NULL,"
	"  scope TEXT NOT NULL CHECK (scope IN ('allow-once','allow-always')), decided_by TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, used_at INTEGER);"
	"CREATE INDEX exec_approvals_by_argv ON exec_approvals(argv_sha256, host);"
	"ALTER TABLE sessions ADD COLUMN exec_defaults TEXT;"
	"ALTER TABLE sessions ADD COLUMN exec_events_seen INTEGER NOT NULL DEFAULT 0;",
	/* 5: who may use a stored key (issue 20): its scope, and who stored its value (scope owner means them) */
	"ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'members' CHECK (scope IN "
	"('owner','admins','members'));"
	"ALTER TABLE api_keys ADD COLUMN set_by TEXT;",
	/* 6: users.update (issue 22): an e-mail address to reach the user by */
	"ALTER TABLE users ADD COLUMN email TEXT;",
	/* 7: per-session egress additions (issue 21): entries of the egress allowlist only this session's runs get */
	"ALTER TABLE sessions ADD COLUMN egress_allow TEXT;",
	/* 8: worktrees.remove recorded before anything is deleted (issue 22): an interrupted one is finished later */
	"ALTER TABLE worktrees ADD COLUMN removing_since INTEGER;"
	"ALTER TABLE worktrees ADD COLUMN removing_force INTEGER NOT NULL DEFAULT 0;",
	/* 9: git over ssh and https user names (issue 23): the user a git credential logs in as (NULL: the default) */
	"ALTER TABLE api_keys ADD COLUMN username TEXT;",
};

int db_schema_version(void)
{
	return (int)ARRAY_SIZE(migrations);
}

int db_fail(struct db *db, struct err *e, const char *what)
{
	return err_set(e, E_INTERNAL, "database: %s: %s", what, sqlite3_errmsg(db->sql));
}

int db_exec(struct db *db, const char *sql, struct err *e)
{
	char *msg = NULL;
	if (sqlite3_exec(db->sql, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	err_set(e, E_INTERNAL, "database: %s", msg ? msg : sqlite3_errmsg(db->sql));
	sqlite3_free(msg);
	return -1;
}

int db_begin(struct db *db, struct err *e)
{
	return db_exec(db, "BEGIN IMMEDIATE", e);
}
int db_commit(struct db *db, struct err *e)
{
	return db_exec(db, "COMMIT", e);
}

void db_savepoint_undo(struct db *db, const char *name)
{
	struct err ignored = ERR_INIT;
	_cleanup_free_ char *rollback = xasprintf("ROLLBACK TO %s", name), *release = xasprintf("RELEASE %s", name);
	db_exec(db, rollback, &ignored);
	err_clear(&ignored);
	db_exec(db, release, &ignored);
	err_clear(&ignored);
}
void db_rollback(struct db *db)
{
	sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
}

int db_failure_errno(struct db *db)
{
	int code = sqlite3_errcode(db->sql) & 0xff;
	return code == SQLITE_FULL ? ENOSPC : code == SQLITE_IOERR ? EIO : 0;
}

static int user_version(struct db *db, int *version, struct err *e)
{
	sqlite3_stmt *st = db_prepare(db, "PRAGMA user_version", e, "");
	if (!st)
		return -1;
	*version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	return 0;
}

static int migrate(struct db *db, struct err *e)
{
	int version;
	if (user_version(db, &version, e) < 0)
		return -1;
	if (version > db_schema_version())
		return err_set(e, E_INTERNAL,
			       "%s has schema version %d, newer than this agor (%d): refusing to downgrade", db->path,
			       version, db_schema_version());
	for (int v = version; v < db_schema_version(); v++) {
		char pragma[48];
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", v + 1);
		if (db_begin(db, e) < 0)
			return -1;
		if (db_exec(db, migrations[v], e) < 0 || db_exec(db, pragma, e) < 0) {
			db_rollback(db);
			err_prefix(e, "migration %d", v + 1);
			return -1;
		}
		if (db_commit(db, e) < 0)
			return -1;
	}
	return 0;
}

static int ensure_private_file(const char *path, struct err *e)
{
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return err_set(e, E_INTERNAL, "%s is not a regular file", path);
		if ((st.st_mode & 077) && chmod(path, 0600) < 0)
			return err_errno(e, errno, "chmod 0600 %s", path);
		return 0;
	}
	int fd = paths_create_private_file(path, e);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int db_open(const char *path, struct db **out, struct err *e)
{
	if (ensure_private_file(path, e) < 0)
		return -1;
	struct db *db = xcalloc(1, sizeof(*db));
	db->path = xstrdup(path);
	fault_sqlite_install(); /* test builds: the WAL's writes are fault points (fault.h); the product: nothing */
	int rc = sqlite3_open_v2(path, &db->sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_FULLMUTEX,
				 NULL);
	if (rc != SQLITE_OK) {
		err_set(e, E_INTERNAL, "cannot open %s: %s", path,
			db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc));
		db_close(db);
		return -1;
	}
	sqlite3_busy_timeout(db->sql, 5000);
	if (db_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", e) < 0 ||
	    migrate(db, e) < 0) {
		db_close(db);
		return -1;
	}
	*out = db;
	return 0;
}

/* ---- checkpoints off the caller's thread -------------------------------------------------- */

struct db_checkpointer {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stop;
	sqlite3 *sql; /* its own connection: SQLite connections are not shared between threads here */
	char *wal_path;
	unsigned long long wal_max; /* 0: never truncate */
};

static unsigned long long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (unsigned long long)st.st_size : 0;
}

void db_file_sizes(const struct db *db, unsigned long long *db_bytes, unsigned long long *wal_bytes)
{
	_cleanup_free_ char *wal = xasprintf("%s-wal", db->path);
	*db_bytes = file_size(db->path);
	*wal_bytes = file_size(wal);
}

/* Past wal_max the WAL is emptied: passive checkpoints alone never shrink it, nor stop it growing under writers
 * that never pause. */
static void truncate_if_large(struct db_checkpointer *c)
{
	unsigned long long size = file_size(c->wal_path);
	if (!c->wal_max || size <= c->wal_max)
		return;
	int rc = sqlite3_wal_checkpoint_v2(c->sql, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	if (rc == SQLITE_OK)
		log_info("database: the WAL had grown to %llu bytes, past %llu: checkpointed and truncated", size,
			 c->wal_max);
	else
		log_warn("database: the WAL is %llu bytes, past %llu, and could not be truncated yet: %s", size,
			 c->wal_max, sqlite3_errmsg(c->sql));
}

static void deadline_after_ms(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void *checkpoint_loop(void *arg)
{
	struct db_checkpointer *c = arg;
	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		struct timespec until;
		deadline_after_ms(&until, DB_CHECKPOINT_INTERVAL_MS);
		while (!c->stop && pthread_cond_timedwait(&c->wake, &c->lock, &until) != ETIMEDOUT)
			;
		if (c->stop)
			break;
		pthread_mutex_unlock(&c->lock);
		/* passive: copies what no reader still needs, never waits for a lock nor blocks a writer */
		sqlite3_wal_checkpoint_v2(c->sql, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		truncate_if_large(c);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static void checkpointer_free(struct db_checkpointer *c)
{
	sqlite3_close_v2(c->sql);
	free(c->wal_path);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void stop_checkpointer(struct db_checkpointer *c)
{
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	checkpointer_free(c);
}

static int init_wake(struct db_checkpointer *c)
{
	pthread_condattr_t attr;
	if (pthread_condattr_init(&attr) != 0)
		return -1;
	int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&c->wake, &attr) == 0 ? 0
														   : -1;
	pthread_condattr_destroy(&attr);
	return rc;
}

int db_checkpoint_in_background(struct db *db, unsigned long long wal_max, struct err *e)
{
	struct db_checkpointer *c = xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	if (init_wake(c) < 0) {
		pthread_mutex_destroy(&c->lock);
		free(c);
		return err_set(e, E_INTERNAL, "checkpoints: cannot make a condition variable");
	}
	c->wal_path = xasprintf("%s-wal", db->path);
	c->wal_max = wal_max;
	int rc = sqlite3_open_v2(db->path, &c->sql,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_FULLMUTEX, NULL);
	if (rc != SQLITE_OK) {
		err_set(e, E_INTERNAL, "checkpoints: cannot open %s: %s", db->path, sqlite3_errstr(rc));
		checkpointer_free(c);
		return -1;
	}
	/* a fresh connection knows the file is in WAL mode only once it has read it: until then a checkpoint
	 * answers "not in WAL mode" and does nothing */
	if ((rc = sqlite3_exec(c->sql, "PRAGMA journal_mode=WAL", NULL, NULL, NULL)) != SQLITE_OK) {
		err_set(e, E_INTERNAL, "checkpoints: %s: %s", db->path, sqlite3_errmsg(c->sql));
		checkpointer_free(c);
		return -1;
	}
	sqlite3_busy_timeout(c->sql, DB_TRUNCATE_WAIT_MS);
	/* the thread takes no signal: they belong to the thread that waits for them (the daemon's signalfd) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->thread, NULL, checkpoint_loop, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		err_errno(e, rc, "checkpoints: cannot start their thread");
		checkpointer_free(c);
		return -1;
	}
	db->checkpointer = c;
	return db_exec(db, "PRAGMA wal_autocheckpoint=0", e);
}

void db_close(struct db *db)
{
	if (!db)
		return;
	if (db->checkpointer) /* first: the last connection to close checkpoints the rest and removes the WAL */
		stop_checkpointer(db->checkpointer);
	for (int i = 0; i < db->ncached; i++)
		sqlite3_finalize(db->cache[i].st);
	sqlite3_close_v2(db->sql);
	free(db->path);
	free(db);
}

/* A cached statement for sql (reset, bindings cleared), compiling and caching it on first use; NULL when
 * the cache is full (the caller compiles its own). */
static sqlite3_stmt *cached_statement(struct db *db, const char *sql, struct err *e, int *failed)
{
	for (int i = 0; i < db->ncached; i++)
		if (db->cache[i].sql == sql && !strcmp(sqlite3_sql(db->cache[i].st), sql))
			return db->cache[i].st;
	if (db->ncached == DB_STMT_CACHE)
		return NULL;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v3(db->sql, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
		db_fail(db, e, "prepare");
		*failed = 1;
		return NULL;
	}
	db->cache[db->ncached].sql = sql;
	db->cache[db->ncached].st = st;
	db->ncached++;
	return st;
}

static int is_cached(const struct db *db, const sqlite3_stmt *st)
{
	for (int i = 0; i < db->ncached; i++)
		if (db->cache[i].st == st)
			return 1;
	return 0;
}

/* Finalizes a statement of db_vprepare, or resets it when it is cached. */
static void release_statement(struct db *db, sqlite3_stmt *st)
{
	if (is_cached(db, st)) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	} else {
		sqlite3_finalize(st);
	}
}

static sqlite3_stmt *db_vprepare_cached(struct db *db, const char *sql, struct err *e, const char *types, va_list ap,
					int use_cache)
{
	sqlite3_stmt *st = NULL;
	int failed = 0;
	if (use_cache && (st = cached_statement(db, sql, e, &failed)) == NULL && failed)
		return NULL;
	if (!st && sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) != SQLITE_OK) {
		db_fail(db, e, "prepare");
		return NULL;
	}
	/* db_vprepare's statements (use_cache) are stepped and released before their caller returns: the values are
	 * borrowed, not copied; db_prepare's go back to a caller who may free them first */
	sqlite3_destructor_type values = use_cache ? SQLITE_STATIC : SQLITE_TRANSIENT;
	int idx = 1, rc = SQLITE_OK;
	for (const char *t = types; *t && rc == SQLITE_OK; t++, idx++) {
		if (*t == 's') {
			const char *s = va_arg(ap, const char *);
			rc = s ? sqlite3_bind_text(st, idx, s, -1, values) : sqlite3_bind_null(st, idx);
		} else if (*t == 'i') {
			rc = sqlite3_bind_int64(st, idx, va_arg(ap, long long));
		} else if (*t == 'b') {
			const void *p = va_arg(ap, const void *);
			size_t n = va_arg(ap, size_t);
			rc = sqlite3_bind_blob(st, idx, p, (int)n, values);
		}
	}
	if (rc != SQLITE_OK) {
		db_fail(db, e, "bind");
		release_statement(db, st);
		return NULL;
	}
	return st;
}

static sqlite3_stmt *db_vprepare(struct db *db, const char *sql, struct err *e, const char *types, va_list ap)
{
	return db_vprepare_cached(db, sql, e, types, ap, 1);
}

sqlite3_stmt *db_prepare(struct db *db, const char *sql, struct err *e, const char *types, ...)
{
	va_list ap;
	va_start(ap, types);
	sqlite3_stmt *st = db_vprepare_cached(db, sql, e, types, ap, 0); /* the caller finalizes it */
	va_end(ap);
	return st;
}

int db_run(struct db *db, struct err *e, const char *sql, const char *types, ...)
{
	va_list ap;
	va_start(ap, types);
	sqlite3_stmt *st = db_vprepare(db, sql, e, types, ap);
	va_end(ap);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	int failed = rc != SQLITE_DONE && rc != SQLITE_ROW ? db_fail(db, e, "step") : 0;
	release_statement(db, st);
	return failed ? -1 : sqlite3_changes(db->sql);
}

static json_t *row_to_json(sqlite3_stmt *st)
{
	json_t *o = json_object();
	for (int i = 0; i < sqlite3_column_count(st); i++) {
		const char *name = sqlite3_column_name(st, i);
		switch (sqlite3_column_type(st, i)) {
		case SQLITE_INTEGER:
			json_object_set_new(o, name, json_integer(sqlite3_column_int64(st, i)));
			break;
		case SQLITE_NULL:
			json_object_set_new(o, name, json_null());
			break;
		case SQLITE_FLOAT:
			json_object_set_new(o, name, json_real(sqlite3_column_double(st, i)));
			break;
		default:
			json_object_set_new(o, name, json_string((const char *)sqlite3_column_text(st, i)));
		}
	}
	return o;
}

static json_t *vquery(struct db *db, struct err *e, const char *sql, const char *types, va_list ap, int one)
{
	sqlite3_stmt *st = db_vprepare(db, sql, e, types, ap);
	if (!st)
		return NULL;
	json_t *rows = json_array();
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_array_append_new(rows, row_to_json(st));
		if (one)
			break;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		db_fail(db, e, "query");
		release_statement(db, st);
		json_decref(rows);
		return NULL;
	}
	release_statement(db, st);
	if (!one)
		return rows;
	json_t *first = json_array_size(rows) ? json_incref(json_array_get(rows, 0)) : json_null();
	json_decref(rows);
	return first;
}

json_t *db_query_json(struct db *db, struct err *e, const char *sql, const char *types, ...)
{
	va_list ap;
	va_start(ap, types);
	json_t *r = vquery(db, e, sql, types, ap, 0);
	va_end(ap);
	return r;
}

json_t *db_query_one(struct db *db, struct err *e, const char *sql, const char *types, ...)
{
	va_list ap;
	va_start(ap, types);
	json_t *r = vquery(db, e, sql, types, ap, 1);
	va_end(ap);
	return r;
}
