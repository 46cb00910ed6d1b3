/* fault.h — the test seam that makes the Nth write, fsync, rename, SQLite write or named step of one process fail
 * with ENOSPC or EIO, or stop it there (SIGSTOP) for a test to kill -9 (docs/recovery.md).
 * Compiled only into test builds (AGOR_FAULTS: the ASan/UBSan build); in the product every call below is an empty
 * inline and the environment is never read, so no caller can make the daemon fail on purpose.
 *
 * Armed by AGOR_FAULT=ROLE:WHAT:N:ACTION, read once by fault_init(ROLE) (ROLE: daemon or executor):
 *   WHAT    write | fsync | rename | sqlite (an xWrite or xSync of the SQLite WAL, i.e. a commit) | step (any
 *           named step) | any | a step's name such as task.running (only the passes of that step count) |
 *           KIND@STEP such as sqlite@task.ended (only the points of KIND after the first pass of STEP count)
 *   N       the Nth matching point of this process (1 = the first)
 *   ACTION  ENOSPC | EIO (the point fails with that errno, SQLite's with SQLITE_FULL | SQLITE_IOERR) |
 *           stop (the process stops itself with SIGSTOP at that point, after saying so in the trace)
 * AGOR_FAULT_TRACE=PATH appends one line per point passed: "ROLE PID KIND INDEX NAME [ACTION]", INDEX counting the
 * points of WHAT=KIND of this process, so a test counts an operation's points once and then arms each in turn.
 * The daemon passes both variables on to its executors (fault_pass_on) and nothing else reads them.
 */
#ifndef AGOR_FAULT_H
#define AGOR_FAULT_H

#include "strvec.h"

enum fault_kind { FAULT_WRITE, FAULT_FSYNC, FAULT_RENAME, FAULT_SQLITE, FAULT_STEP };

#ifdef AGOR_FAULTS
/* Reads AGOR_FAULT and AGOR_FAULT_TRACE for this process's role (once; later calls are no-ops). */
void fault_init(const char *role);
/* One point of kind k named name: 0 to go on, or an errno (ENOSPC, EIO) the caller fails with. */
int fault_check(enum fault_kind k, const char *name);
/* A named step: traced, and the process stops here when armed so (an errno action is ignored at a step). */
void fault_step(const char *name);
/* Adds AGOR_FAULT and AGOR_FAULT_TRACE, when set, to a child's environment. */
void fault_pass_on(struct strvec *env);
/* Adds sudo's --preserve-env for them, when set, to a sudo argv (an executor run as another user keeps them). */
void fault_sudo_preserve(struct strvec *argv);
/* Makes SQLite's default VFS one whose WAL xWrite and xSync pass fault_check(FAULT_SQLITE) first. */
void fault_sqlite_install(void);
#else
static inline void fault_init(const char *role)
{
	(void)role;
}
static inline int fault_check(enum fault_kind k, const char *name)
{
	(void)k, (void)name;
	return 0;
}
static inline void fault_step(const char *name)
{
	(void)name;
}
static inline void fault_pass_on(struct strvec *env)
{
	(void)env;
}
static inline void fault_sudo_preserve(struct strvec *argv)
{
	(void)argv;
}
static inline void fault_sqlite_install(void) {}
#endif

#endif
