/* paths.h — every agor file and directory, resolved in one place from the config; safe creation.
 * Never follows a symlink at AGOR_HOME, never loosens a mode, never adopts a stranger's dir. */
#ifndef AGOR_PATHS_H
#define AGOR_PATHS_H

#include "config.h"
#include "err.h"

/*
 * AGOR_HOME (private to the daemon user, 0700):
 *     config.yaml (0600)  agor.db (0600)  logs/  cache/  run/ (0700)  run/agor.pid
 * daemon.socket_path defaults to run/agor.sock but may live elsewhere (`agor setup isolation`).
 * The data home (for executors only; the daemon never touches it, DESIGN rule 1):
 *     repos/<provider>/<org>/<repo>.git   worktrees/<provider>/<org>/<repo>/<name>
 *     zellij/sessions/
 * repos/, worktrees/ and zellij/ follow paths.*_dir, which may point outside the data home.
 *
 * Every member is an owned absolute path; paths_release frees them.
 */
struct agor_paths {
	char *home;	       /* paths.agor_home */
	char *config_file;     /* the config file read (or that would have been) */
	char *db;	       /* home/agor.db */
	char *logs;	       /* home/logs */
	char *cache;	       /* home/cache */
	char *run;	       /* home/run */
	char *pid_file;	       /* home/run/agor.pid */
	char *socket;	       /* daemon.socket_path */
	char *data_home;       /* paths.data_home */
	char *repos;	       /* paths.repos_dir */
	char *worktrees;       /* paths.worktrees_dir */
	char *zellij;	       /* paths.zellij_dir */
	char *zellij_sessions; /* zellij/sessions */
};
/* clang-format off */
#define AGOR_PATHS_INIT { 0 }
/* clang-format on */

/* Fills p from a loaded config (cannot fail: the config holds validated absolute paths). */
void paths_from_config(struct agor_paths *p, const struct config *cfg);
void paths_release(struct agor_paths *p);

/* Creates AGOR_HOME 0700 (missing parents 0755) and logs/, cache/, run/ 0700 inside it.
 * An existing AGOR_HOME (or subdirectory) owned by the effective uid with another mode is
 * set to 0700 with a warning in the log; one owned by someone else, a symlink, or not a
 * directory is an error (-1, e set). Symlinks are refused at AGOR_HOME's last component and
 * at logs/, cache/, run/ (O_NOFOLLOW); parents are resolved normally. */
int paths_ensure_home(const struct agor_paths *p, struct err *e);

/* Creates the data home (0700: by default it is AGOR_HOME), repos/ and worktrees/ (0755; missing
 * parents 0755) for the executor.
 * Existing directories are left as they are (admin manages their groups and modes). */
int paths_ensure_data(const struct agor_paths *p, struct err *e);

/* Creates path as a new private file (O_CREAT|O_EXCL|O_NOFOLLOW, mode exactly 0600) and
 * returns its O_CLOEXEC write descriptor; -1 with E_ALREADY_EXISTS when it exists (even as a
 * symlink), another code otherwise. For agor.db, config.yaml, keys. */
int paths_create_private_file(const char *path, struct err *e);
/* The data home's identity: 32 hex digits in DATA_HOME/.agor-data-home-id (0644), which executors write (the daemon
 * never touches the data home) and the daemon sends back in every payload (dataHomeId), so an executor that sees
 * another volume (or none) at paths.data_home refuses to work instead of using another data home's repositories.
 * create: made (random) when missing, atomically (a racing executor's file wins). 0 and out, or -1: E_NOT_FOUND when
 * missing (without create), E_CONFIG when it is not 32 hex digits. */
#define PATHS_DATA_HOME_ID_FILE ".agor-data-home-id"
#define PATHS_DATA_HOME_ID_ASK	"unknown" /* dataHomeId of a daemon that does not know it yet: the executor tells it */
int paths_data_home_id(const char *data_home, int create, char out[33], struct err *e);
/* 1 when s is 32 lowercase hex digits (a data home id). */
int paths_is_data_home_id(const char *s);

#endif
