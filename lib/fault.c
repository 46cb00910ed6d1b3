/* fault.c — the test seam of fault.h: counts this process's write/fsync/rename/SQLite/step points, fails or stops
 * the armed one, traces them. Compiled to nothing unless AGOR_FAULTS (test builds); never reads the environment
 * in the product. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "banned.h"

#ifdef AGOR_FAULTS

static const char *const kind_names[] = { [FAULT_WRITE] = "write",
					  [FAULT_FSYNC] = "fsync",
					  [FAULT_RENAME] = "rename",
					  [FAULT_SQLITE] = "sqlite",
					  [FAULT_STEP] = "step" };

static struct {
	int ready;
	char role[16];
	int armed;	       /* AGOR_FAULT names this role */
	int any;	       /* WHAT is any: every kind counts towards N */
	enum fault_kind kind;  /* else the kind that counts */
	char step[48];	       /* WHAT is a step's name: only that step counts */
	unsigned long named;   /* passes of that step */
	char after[48];	       /* WHAT is KIND@STEP: only the points of KIND after STEP's first pass count */
	int after_passed;      /* STEP has passed */
	unsigned long counted; /* points of KIND counted since */
	unsigned long n;       /* the point that fails or stops */
	int action;	       /* an errno, or 0: stop */
	unsigned long seen[5]; /* points passed, per kind */
	unsigned long seen_any;
	const char *trace;
} F;

static int parse_kind(const char *s, size_t len)
{
	for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (strlen(kind_names[i]) == len && !strncmp(s, kind_names[i], len))
			return (int)i;
	if (len == 3 && !strncmp(s, "any", 3))
		return -2;
	return len && len < sizeof(F.step) && s[0] >= 'a' && s[0] <= 'z' && strchr(s, '.') ? -3 : -1;
}

/* ROLE:WHAT:N:ACTION; a malformed value is said on stderr and arms nothing. */
static void parse_spec(const char *spec)
{
	char role[16], what[48], action[16];
	unsigned long n;
	if (sscanf(spec, "%15[^:]:%47[^:]:%lu:%15s", role, what, &n, action) != 4 || !n) {
		fprintf(stderr, "agor: AGOR_FAULT=%s: expected ROLE:WHAT:N:ACTION (ignored)\n", spec);
		return;
	}
	char *at = strchr(what, '@'); /* KIND@STEP */
	if (at && (!strchr(at + 1, '.') || parse_kind(what, (size_t)(at - what)) < 0)) {
		fprintf(stderr, "agor: AGOR_FAULT=%s: KIND@STEP is write|fsync|rename|sqlite|step@a.step (ignored)\n",
			spec);
		return;
	}
	if (at) {
		*at = '\0';
		if (!strcmp(role, F.role))
			snprintf(F.after, sizeof(F.after), "%s", at + 1);
	}
	int k = parse_kind(what, strlen(what));
	int act = !strcmp(action, "ENOSPC") ? ENOSPC : !strcmp(action, "EIO") ? EIO : !strcmp(action, "stop") ? 0 : -1;
	if (k == -1 || act < 0) {
		fprintf(stderr,
			"agor: AGOR_FAULT=%s: WHAT is write|fsync|rename|sqlite|step|any or a step's name (a.b), "
			"ACTION "
			"ENOSPC|EIO|stop (ignored)\n",
			spec);
		return;
	}
	if (strcmp(role, F.role))
		return;
	F.armed = 1;
	F.any = k == -2;
	F.kind = k < 0 ? FAULT_STEP : (enum fault_kind)k;
	if (k == -3)
		snprintf(F.step, sizeof(F.step), "%s", what);
	F.n = n;
	F.action = act;
}

void fault_init(const char *role)
{
	if (F.ready)
		return;
	F.ready = 1;
	snprintf(F.role, sizeof(F.role), "%s", role);
	const char *spec = getenv("AGOR_FAULT");
	if (spec && *spec)
		parse_spec(spec);
	const char *trace = getenv("AGOR_FAULT_TRACE");
	F.trace = trace && *trace ? trace : NULL;
}

static void trace_point(enum fault_kind k, unsigned long index, const char *name, const char *action)
{
	if (!F.trace)
		return;
	char line[256];
	int n = snprintf(line, sizeof(line), "%s %d %s %lu %s%s%s\n", F.role, (int)getpid(), kind_names[k], index,
			 name ? name : "-", action ? " " : "", action ? action : "");
	int fd = open(F.trace, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	(void)!write(fd, line, n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1);
	close(fd);
}

/* Counts the point; 1 when it is the armed one. */
static int hits(enum fault_kind k, const char *name)
{
	unsigned long index = ++F.seen[k];
	++F.seen_any;
	if (!F.armed)
		return 0;
	if (F.after[0]) {
		if (k == FAULT_STEP && name && !F.after_passed && !strcmp(name, F.after)) {
			F.after_passed = 1;
			return 0;
		}
		return F.after_passed && k == F.kind && ++F.counted == F.n;
	}
	if (F.step[0])
		return k == FAULT_STEP && name && !strcmp(name, F.step) && ++F.named == F.n;
	return F.any ? F.seen_any == F.n : (k == F.kind && index == F.n);
}

int fault_check(enum fault_kind k, const char *name)
{
	if (!F.ready)
		return 0;
	int hit = hits(k, name);
	if (!hit) {
		trace_point(k, F.seen[k], name, NULL);
		return 0;
	}
	trace_point(k, F.seen[k], name, F.action ? strerror(F.action) : "stop");
	if (F.action && k != FAULT_STEP)
		return F.action;
	if (!F.action)
		raise(SIGSTOP); /* the test kill -9s it here */
	return 0;
}

void fault_step(const char *name)
{
	(void)fault_check(FAULT_STEP, name);
}

void fault_sudo_preserve(struct strvec *argv)
{
	if (getenv("AGOR_FAULT") || getenv("AGOR_FAULT_TRACE"))
		strvec_push(argv, "--preserve-env=AGOR_FAULT,AGOR_FAULT_TRACE");
}

void fault_pass_on(struct strvec *env)
{
	static const char *const names[] = { "AGOR_FAULT", "AGOR_FAULT_TRACE" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = getenv(names[i]);
		if (v && *v)
			strvec_pushf(env, "%s=%s", names[i], v);
	}
}

/* ---- SQLite: a VFS over the default one whose WAL's xWrite and xSync are points -------------------
 * Only the WAL's: in WAL mode every commit writes there and nothing else does, while the database file is written
 * by the checkpointer thread at times of its own, which would make the count differ from run to run. */

struct fault_file {
	sqlite3_file base;
	sqlite3_file *real; /* follows this struct in the same allocation */
	int counted;	    /* the WAL: written by the daemon's own connection alone, so its points are countable */
};

static sqlite3_vfs *real_vfs;

#define REAL(f) (((struct fault_file *)(f))->real)

static int sqlite_code(int err, int io_code)
{
	return err == ENOSPC ? SQLITE_FULL : io_code;
}

static int f_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}
static int f_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}
static int f_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	int err = ((struct fault_file *)f)->counted ? fault_check(FAULT_SQLITE, "sqlite.write") : 0;
	return err ? sqlite_code(err, SQLITE_IOERR_WRITE) : REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
}
static int f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int f_sync(sqlite3_file *f, int flags)
{
	int err = ((struct fault_file *)f)->counted ? fault_check(FAULT_SQLITE, "sqlite.sync") : 0;
	return err ? sqlite_code(err, SQLITE_IOERR_FSYNC) : REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int f_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), size);
}
static int f_lock(sqlite3_file *f, int level)
{
	return REAL(f)->pMethods->xLock(REAL(f), level);
}
static int f_unlock(sqlite3_file *f, int level)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), level);
}
static int f_check_reserved_lock(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int f_file_control(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int f_sector_size(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int f_device_characteristics(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int f_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **p)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), page, size, extend, p);
}
static int f_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}
static void f_shm_barrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int f_shm_unmap(sqlite3_file *f, int delete_flag)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), delete_flag);
}
static int f_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p)
{
	return REAL(f)->pMethods->xFetch(REAL(f), off, n, p);
}
static int f_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods fault_io = {
	.iVersion = 3,
	.xClose = f_close,
	.xRead = f_read,
	.xWrite = f_write,
	.xTruncate = f_truncate,
	.xSync = f_sync,
	.xFileSize = f_file_size,
	.xLock = f_lock,
	.xUnlock = f_unlock,
	.xCheckReservedLock = f_check_reserved_lock,
	.xFileControl = f_file_control,
	.xSectorSize = f_sector_size,
	.xDeviceCharacteristics = f_device_characteristics,
	.xShmMap = f_shm_map,
	.xShmLock = f_shm_lock,
	.xShmBarrier = f_shm_barrier,
	.xShmUnmap = f_shm_unmap,
	.xFetch = f_fetch,
	.xUnfetch = f_unfetch,
};

static int f_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
	(void)vfs;
	struct fault_file *ff = (struct fault_file *)file;
	ff->real = (sqlite3_file *)(ff + 1);
	ff->base.pMethods = NULL;
	ff->counted = (flags & SQLITE_OPEN_WAL) != 0;
	int rc = real_vfs->xOpen(real_vfs, name, ff->real, flags, out_flags);
	if (ff->real->pMethods) /* the unix VFS's methods are version 3: every slot above is there */
		ff->base.pMethods = &fault_io;
	return rc;
}

void fault_sqlite_install(void)
{
	static sqlite3_vfs vfs;
	if (real_vfs || !(real_vfs = sqlite3_vfs_find(NULL)))
		return;
	vfs = *real_vfs;
	vfs.zName = "agor-fault";
	vfs.szOsFile = (int)sizeof(struct fault_file) + real_vfs->szOsFile;
	vfs.xOpen = f_open;
	sqlite3_vfs_register(&vfs, 1);
}

#else
typedef int fault_seam_compiled_out; /* the product: fault.h's inline no-ops */
#endif
