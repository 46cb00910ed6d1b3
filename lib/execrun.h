/* execrun.h — the executor's exec.run: one program in a worktree, inside the sandbox, output captured; the same
 * confinement for the agent CLI and terminal shells.
 * The worktree's git metadata must be as agor made it (gitlayout.h) before anything runs, and is put back after. */
#ifndef AGOR_EXECRUN_H
#define AGOR_EXECRUN_H

/*
 * Contract
 * --------
 * execrun(&req, &data, e) runs req.argv with cwd = req.cwd (an already confined worktree path)
 * under the sandbox of execution.sandbox (sandbox.h), with a rebuilt environment (PATH, HOME,
 * USER, LOGNAME, LANG, TERM plus the payload's filtered env), stdin /dev/null, the timeout
 * (req.timeout_ms, else execution.timeout_ms) killing the whole run. data:
 *   {"exitCode": N, "timedOut": B, "outcome": "ok"|"exit-nonzero"|"timeout"|"oom"|"pids-limit"|"disk-limit",
 *    "stdout": S, "stderr": S, "stdoutDroppedBytes": N, "stderrDroppedBytes": N,
 *    "events": {"oomKills": N, "pidsLimitHits": N, …}, "sandbox": RECEIPT}
 * stdout keeps its first EXECRUN_MAX_CAPTURE bytes, stderr its last. A sandbox control that is
 * required and unavailable → E_ISOLATION_UNAVAILABLE and nothing runs — unless
 * execution.fallback_to_unified is true: then the program runs unsandboxed, a warning is
 * logged and the receipt says {"enabled": false, "fallback": true, "missing": …}.
 * The worktree's git metadata is found and checked by git_layout_find (gitlayout.h; req.repo_path, the daemon's
 * record, must match): a .git file pointing outside repos/ → E_PATH_OUTSIDE_DATA_HOME, anything else not as agor
 * made it (a .git directory, another repository's entry, a changed commondir or gitdir, a planted commondir or
 * config.worktree) → E_GIT_ERROR naming the file; nothing runs. The sandbox then binds the repository read-only
 * but for objects/, refs/ and logs/ (no symlink can be made there), this worktree's admin entry read-write with
 * its gitdir and commondir read-only, and the worktree's .git file read-only. After the program ended,
 * git_layout_repair puts back whatever was planted anyway (a run outside the sandbox can plant) and data's
 * "gitMetadata" says what: {"checked": true, "repaired": […]} (absent for a directory that is no git worktree).
 * req.unsandboxed (host gateway, granted by the daemon: executor.c) runs the program in the worktree with the
 * same environment, timeout and capture but no sandbox; the receipt says {"enabled": false, "host":
 * "gateway", "reason": …}.
 * Network (execution.sandbox.network): none — loopback only; host — the host's; proxy — loopback only, and an
 * egress proxy (egress.h) started for the run outside the sandbox, reached through the sandbox's relay: the
 * program's environment gets HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and their lower-case forms) naming
 * http://127.0.0.1:SANDBOX_EGRESS_PORT and an empty NO_PROXY; the proxy allows execution.sandbox.egress_allow
 * (and, for an agent CLI, its provider endpoint). An agent CLI's run (confine request agent_cli) gets proxy
 * where the setting says none. Refusals come back as data's "egress": {"refused": [{host, port, reason, count}],
 * "dropped": N}, which the daemon turns into audit rows and task.egress_refused events.
 * Without req.home, $HOME inside is the caller's passwd home on an empty private tmpfs — or EXECRUN_SHARED_HOME
 * when the data home lies in the passwd home (the default ~/.agor): the repository's binds must not lie under a
 * private directory the program may write anything in (sandbox.h refuses that).
 * req.home (unix_user_mode sandbox: one per agor user) names a directory under the data home's
 * homes/ (made 0700 when missing; confined like every path) that is $HOME, read-write and kept
 * between runs.
 *
 * execrun_plan(&req, &step, e): the dry run — the same checks and the receipt the run would
 * have (cgroup planned, not created), without side effects.
 */

#include <jansson.h>

#include "config.h"
#include "err.h"
#include "gitlayout.h"
#include "sandbox.h"
#include "strvec.h"

#define EXECRUN_MAX_CAPTURE (1u << 20)
#define EXECRUN_SHARED_HOME "/home/agor-sandbox"

struct execrun_request {
	const struct config *cfg;
	const char *cwd; /* confined, canonical */
	json_t *argv;	 /* array of strings (validated) */
	json_t *env;	 /* object of strings (validated), or NULL */
	long long timeout_ms;
	const char *home;	 /* relative to DATA_HOME/homes, or absolute inside it; NULL: a private tmpfs */
	const char *repo_path;	 /* the repository the daemon recorded for this worktree (confined), or NULL */
	const char *unsandboxed; /* host gateway: run without the sandbox, for this reason (the caller verified
				  * that the daemon granted it); NULL: execution.sandbox decides */
};

int execrun(const struct execrun_request *req, json_t **data, struct err *e);
/* The run's enum config_sandbox_network: execution.sandbox.network, proxy where it says none for an agent CLI. */
int execrun_network(const struct config *cfg, int agent_cli);
/* $HOME inside (malloc'd) for a caller whose passwd home is passwd_home (when no kept home is used): passwd_home
 * tidied, or EXECRUN_SHARED_HOME when the data home lies in it (compared canonically: "/home/u/" holds ~/.agor). */
char *execrun_home_inside(const struct config *cfg, const char *passwd_home);

/*
 * The same confinement for other programs the executor starts in a worktree (the agent CLI of
 * prompt): execrun_confine() finds the git directories, the home and prepares the sandbox (or the
 * unsandboxed receipt when it is disabled or, with fallback_to_unified, missing);
 * execrun_confinement_apply() makes child_start() enter it; when child_start() fails,
 * execrun_confinement_failed() names the missing control (-1, e set) or, with fallback_to_unified,
 * drops the sandbox (0: start again, unconfined, receipt saying so).
 */
struct execrun_confine_request {
	const struct config *cfg;
	const char *cwd;       /* confined, canonical */
	const char *home;      /* as execrun_request.home */
	const char *repo_path; /* as execrun_request.repo_path */
	int plan_only;
	int read_only; /* the permission mode plan: the worktree and its git metadata are bound read-only */
	const struct sandbox_bind *binds; /* what this program needs besides the worktree (sandbox_request) */
	size_t nbinds;
	int agent_cli;		  /* an agent CLI: network none becomes proxy (its model endpoint must be reachable) */
	const char *provider_url; /* proxy: the model endpoint (allowed; gets the key in place of the sentinel) */
	const char *sentinel, *api_key; /* proxy: what the agent holds and what the proxy puts in its place, or NULL */
	const char *unsandboxed;	/* as execrun_request.unsandboxed */
};

struct execrun_confinement {
	struct git_layout git;
	char *user;    /* the caller's login name ($USER, $LOGNAME) */
	char *home;    /* $HOME inside */
	int home_kept; /* a per-user home from DATA_HOME/homes */
	struct sandbox *sb;
	json_t *fallback; /* the receipt when running unsandboxed */
	char *name;
	const struct config *cfg;
	struct sandbox_bind *binds; /* the git metadata's binds, then the request's */
	size_t nbinds;
	struct strvec git_paths; /* the strings of those binds */
	json_t *git_repairs;	 /* after execrun_confinement_finish: gitMetadata, or NULL */
	int cwd_held;	       /* cwd_fd is set: the worktree opened once beneath worktrees/ without following a link */
	int cwd_fd;	       /* an unsandboxed run starts there (fchdir), never by resolving the path again */
	char *passwd_home;     /* the caller's real home (passwd), canonical, or NULL */
	json_t *home_exposed;  /* execution.sandbox.home_expose: {bound: [entries], skipped: [{entry, reason}]}, or NULL
				*/
	struct egress *egress; /* network proxy: the run's egress proxy (egress.h), or NULL */
	json_t *egress_report; /* after execrun_confinement_finish: the proxy's refusals ("egress"), or NULL */
};

struct child;
int execrun_confine(const struct execrun_confine_request *req, struct execrun_confinement *cf, struct err *e);
void execrun_confinement_apply(const struct execrun_confinement *cf, struct child *c);
int execrun_confinement_failed(const struct config *cfg, struct execrun_confinement *cf, struct err *e);
/* After the program ended: its cgroup events read (the receipt's "events"; returned, a new reference), leftovers
 * killed, the cgroup removed, the git metadata checked and repaired (cf->git_repairs). */
json_t *execrun_confinement_finish(struct execrun_confinement *cf);
json_t *execrun_confinement_receipt(const struct execrun_confinement *cf);
/* The rebuilt environment: PATH, HOME and USER/LOGNAME of cf, LANG, TERM=dumb, then extra's variables. */
struct strvec;
void execrun_environment(const struct execrun_confinement *cf, json_t *extra, struct strvec *env);
void execrun_confinement_release(struct execrun_confinement *cf);

/* A terminal pane's shell: argv run in cwd (a confined worktree) under the same sandbox, on the caller's
 * own terminal (stdio inherited, TERM kept), waited for; *exit_code is its status. With network proxy and a
 * reporter, report(refused, arg) gets the proxy's new refusals (an array, borrowed) while the shell runs, at most
 * every second, and once more when it has ended; what report does must not take long (the shell's write budget
 * is sampled on the same thread). */
struct execrun_reporter {
	void (*report)(json_t *refused, void *arg);
	void *arg;
};
int execrun_interactive(const struct config *cfg, const char *cwd, const char *const *argv,
			const struct execrun_reporter *reporter, int *exit_code, struct err *e);
int execrun_plan(const struct execrun_request *req, json_t **step, struct err *e);

#endif
