/* approvals_policy.h — exec-approval policy: levels, precedence, executable resolution and
 * the analysis of argv and shell text down to the commands that really run. Never trusts text: it fails closed. */
#ifndef AGOR_APPROVALS_POLICY_H
#define AGOR_APPROVALS_POLICY_H

/*
 * Contract
 * --------
 * Levels are ordered: security deny < allowlist < full; ask off < on-miss < always. APPR_UNSET
 * marks a field a request or an agent entry does not set.
 *
 * Precedence (appr_policy_resolve), per field: request parameter → agent entry → "*" entry →
 * defaults. The host (file) value caps the request: effective security = min(requested, host),
 * ask = max(requested, host), askFallback = min(requested or host, host, effective security).
 *
 * Globs: approvals_glob.h.
 *
 * Resolution (appr_resolve_executable): a word with '/' is taken relative to cwd; a bare name is
 *   looked up in PATH (default APPR_DEFAULT_PATH); an empty or relative PATH entry anywhere refuses
 *   the lookup (a shell would search the current directory there) — it is never skipped. The first
 *   regular, executable file wins and its realpath() is returned: that canonical path is what is
 *   matched. Pinning and identity: approvals_pin.h.
 *
 * Analysis (appr_analyze) reduces an argv to the inner commands that would run, each with its
 *   canonical path, or fails with a reason (then the command is "not allowlistable"):
 *   - argv[0] is resolved and opened at once (top_fd, top_id): `approvals exec` runs that very
 *     descriptor. Every other executable the run starts (a wrapped command, a shell's commands) is
 *     started by its path, so it must be pinned; its identity is recorded (exes) to be checked again
 *     just before the run.
 *   - sh|bash|dash with exactly `-c` and a payload: the payload is shell text, split at top-level
 *     `&&` `||` `;` `|` (quote-aware) and each segment analysed again, to a depth of
 *     APPR_SHELL_DEPTH. Redirections, `$…` expansions, backticks, subshells and groups, `&`,
 *     newlines, comments, heredocs, assignments, reserved words, globs or `~` in a command word (or
 *     in a wrapper's options, a shell's -c or its payload) make shell text not allowlistable; so do
 *     the builtins that change how later commands are found or run (alias, hash, enable, declare,
 *     export, read, set, cd, source, eval, exec, command, … and printf -v). `time` is a command
 *     (dash has no such keyword), never skipped. Login shells (-l, -lc), zsh (it reads ~/.zshenv)
 *     and a shell run any other way (a script, stdin, other options) are not allowlistable.
 *   - The shell text that runs is rewritten (exec_argv): every command word is replaced by its
 *     canonical path (a word with '/' is never a builtin, function or alias, and is not looked up in
 *     PATH again), and a nested payload by its own rewritten text, single-quoted.
 *   - nice, nohup, timeout, stdbuf, time and plain `env CMD` are unwrapped; only the option
 *     spellings listed in approvals_policy.c are recognised — any other option (abbreviations
 *     such as `--adj`, bundles, unknown flags) fails closed.
 *   - env with an assignment or any option (-S, -i, -u, --split-string, …), sudo, doas, setsid,
 *     su, chroot, xargs, busybox and the other launchers in the fail-closed list fail closed.
 *   - A wrapper is recognised by the basename of the word *and* of its canonical path; when the
 *     two disagree (a symlink named `nice` to env) the analysis fails. A shell or wrapper is taken
 *     for one only when its canonical path is a pinned file directly in /usr/bin, /bin, /usr/sbin
 *     or /sbin: a file named `nice` or `sh` anywhere else is refused, never unwrapped.
 *   - Each inner command's code (approvals_programs.h): why its argv runs code beyond the
 *     executable (git -c, find -exec, make, python -c, …), and whether the shell expands its
 *     arguments; for git also the code its configuration and hooks name (approvals_gitconfig.h), and
 *     for ssh, scp, sftp, rsync and git's remote subcommands what ~/.ssh/config names
 *     (approvals_sshconfig.h).
 *   exec_argv is argv with argv[0], each command a wrapper runs and each shell payload replaced as
 *   above, so what runs is what was matched — not whatever a later PATH lookup would find.
 *   The inner commands are never shells or wrappers, so allow-always (appr_allow_always_patterns)
 *   can only ever record the inner executables, and never one whose argv runs code.
 *
 * Matching (appr_decide): no entry matches a command whose code is in configuration (code_config);
 *   an allowlist entry without a space matches the canonical path of a command whose code is NULL; an argv pattern
 * (approvals_programs.h) matches the command's words unless the shell expands them, and with a trailing `*` only when
 * the command's code is NULL or it always runs code (make, interpreters: naming it in a pattern is the point).
 */

#include <stddef.h>

#include "approvals_glob.h"
#include "approvals_pin.h"
#include "err.h"
#include "strvec.h"

enum appr_security { APPR_SECURITY_DENY = 0, APPR_SECURITY_ALLOWLIST = 1, APPR_SECURITY_FULL = 2 };
enum appr_ask { APPR_ASK_OFF = 0, APPR_ASK_ON_MISS = 1, APPR_ASK_ALWAYS = 2 };
enum appr_decision { APPR_ALLOW = 0, APPR_DENY = 1, APPR_ASK = 3 }; /* also `check`'s exit codes */
#define APPR_UNSET	   (-1)
#define APPR_SHELL_DEPTH   3
#define APPR_WRAPPER_DEPTH 8

/* Parsers return the level or -1; names return NULL for an out-of-range value. */
int appr_security_parse(const char *s);
const char *appr_security_name(int level);
int appr_ask_parse(const char *s);
const char *appr_ask_name(int level);
const char *appr_decision_name(enum appr_decision d);

/* One set of policy fields; any may be APPR_UNSET. */
struct appr_levels {
	int security;
	int ask;
	int ask_fallback;
};
#define APPR_LEVELS_UNSET                                                                                              \
	{                                                                                                              \
		APPR_UNSET, APPR_UNSET, APPR_UNSET                                                                     \
	}

struct appr_effective {
	enum appr_security security;
	enum appr_ask ask;
	enum appr_security ask_fallback;
};

/* Applies the precedence and caps described above; agent/star may be NULL; defaults must be set. */
void appr_policy_resolve(const struct appr_levels *request, const struct appr_levels *agent,
			 const struct appr_levels *star, const struct appr_levels *defaults,
			 struct appr_effective *out);

/* The canonical path of the executable word would run (see the contract); caller frees. NULL with
 * E_NOT_FOUND (not found / not executable), E_PERMISSION_DENIED (PATH refused) or E_SYSTEM. cwd NULL
 * means the current directory. */
char *appr_resolve_executable(const char *word, const char *cwd, const char *path_env, struct err *e);
/* Shell text split at top-level && || ; | into segments (words with quotes removed); -1 with a
 * reason (E_PERMISSION_DENIED, message says why) when the text is not allowlistable. */
int appr_shell_split(const char *text, struct strvec **segments, size_t *nr, struct err *e);
void appr_segments_free(struct strvec *segments, size_t nr);

struct appr_command {
	struct strvec argv;	 /* the inner command's words (quotes removed, not expanded) */
	char *resolved;		 /* its canonical executable */
	struct appr_identity id; /* of resolved, at check time */
	int direct;		 /* it is argv[0] itself: run by descriptor */
	int expands;		 /* the shell expands some argument (glob, brace, ~): argv is not what runs */
	char *code;		 /* why argv runs code beyond the executable (approvals_programs.h), or NULL */
	int code_always;	 /* the program runs code whatever its options */
	int code_config;	 /* the code is in configuration (approvals_gitconfig.h): no pattern allows it */
};

/* An executable the run starts (argv[0], wrappers, shells, inner commands), with its identity. */
struct appr_executable {
	char *path;
	struct appr_identity id;
	int direct; /* argv[0]: run by descriptor; else started by path (and pinned) */
};

struct appr_analysis {
	int ok;		    /* every command found, unwrapped and resolved */
	char *reason;	    /* why not, when !ok */
	char *top_resolved; /* canonical path of argv[0] itself (what exec runs); may be NULL */
	int top_fd;	    /* argv[0]'s executable opened at check time (-1 when not) */
	struct appr_identity top_id;
	char *path_env;		      /* the PATH the run gets (appr_pinned_path); NULL when PATH was refused */
	struct appr_executable *exes; /* every executable the run starts, argv[0] first */
	size_t nexes;
	struct strvec exec_argv;   /* the argv exec runs: argv with every command word outside shell
				    * text (argv[0], each wrapped command) replaced by its canonical path */
	struct appr_command *cmds; /* the inner commands (also filled partially when !ok) */
	size_t nr;
};

/* Analyses argv (see the contract). Never fails as a call: the result says ok or why not. */
void appr_analyze(const char *const *argv, const char *cwd, const char *path_env, struct appr_analysis *out);
void appr_analysis_release(struct appr_analysis *a);

/* 1 when basename is a shell or a wrapper of any kind (unwrapped or fail-closed). */
int appr_is_shell_or_wrapper(const char *basename);

struct appr_verdict {
	enum appr_decision decision;
	const char *reason;	/* static: allowlisted | security=full | security=deny | allowlist-miss |
				 * approval-required */
	int allowlisted;	/* every command matched a pattern */
	struct strvec matched;	/* the pattern each command matched (allowlisted commands only) */
	struct strvec resolved; /* each inner command's canonical path */
};

/* Decides without asking anyone: APPR_ASK when approval is needed. patterns: the allowlist. */
void appr_decide(const struct appr_effective *eff, const struct appr_analysis *a, const char *const *patterns,
		 size_t npatterns, const char *home, struct appr_verdict *v);
/* What an unanswered ask falls back to: allow or deny (with reason "approval-required" unless the
 * fallback is allowlist and the command is not allowlisted: "allowlist-miss"). */
enum appr_decision appr_fallback(const struct appr_effective *eff, const struct appr_verdict *v, const char **reason);
void appr_verdict_release(struct appr_verdict *v);

/* The exact patterns allow-always records for an analysis: the inner commands' canonical paths,
 * never a shell or wrapper. -1 (E_PERMISSION_DENIED) when the analysis is not ok or yields none. */
int appr_allow_always_patterns(const struct appr_analysis *a, struct strvec *out, struct err *e);

#endif
