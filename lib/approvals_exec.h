/* approvals_exec.h — running an approved command for `approvals exec`: capped output, event-sized tails.
 * Never runs anything but the descriptor opened when it was checked, never through a shell of its own. */
#ifndef AGOR_APPROVALS_EXEC_H
#define AGOR_APPROVALS_EXEC_H

/*
 * Contract
 * --------
 * appr_exec_checked(a) is 0 only while what the analysis opened and hashed is still what would run:
 * argv[0]'s descriptor and every other executable's path have the same device, inode, size, mtime and
 * SHA-256 as when they were checked; otherwise -1 naming the file that changed.
 * appr_exec_run starts exec_fd (the descriptor opened at check time, by execveat; resolved is then only
 * argv[0] and the name in messages; exec_fd -1 runs the canonical path resolved) with argv[1..] as
 * arguments and argv[0] replaced by resolved, stdin from /dev/null, stdout and stderr merged into one
 * pipe, in its own process group, killed with the group after timeout_ms (0 = none). The output keeps
 * the first APPR_OUTPUT_MAX bytes; when more was written, "\n... (truncated)" is appended. PATH is
 * path_env (the pinned PATH fixed at check time) when given. The environment is the caller's minus
 * what would let it run other code than the approved executables: LD_*, GCONV_PATH, GLIBC_TUNABLES,
 * BASH_ENV, ENV, SHELLOPTS, BASHOPTS, PS4, IFS, CDPATH, GLOBIGNORE, exported bash functions
 * (BASH_FUNC_*), SSH_CLIENT/SSH2_CLIENT (bash -c would read ~/.bashrc), git's program, config and
 * repository variables (GIT_SSH_COMMAND, GIT_CONFIG_*, GIT_DIR, …), PAGER/EDITOR/VISUAL, LESSOPEN,
 * TAR_OPTIONS, RSYNC_RSH, PERL5OPT, PYTHONPATH, NODE_OPTIONS, MAKEFLAGS and the like (the list is in
 * approvals_exec.c) — so `bash -c ls` runs /usr/bin/ls, not a function named ls. It then sets
 * GIT_EDITOR=: and GIT_SEQUENCE_EDITOR=: (git's no-op editor), GIT_ASKPASS= (no askpass program) and
 * GIT_TERMINAL_PROMPT=0, so configuration the caller wrote cannot make git start an editor or askpass.
 * appr_event_output makes an event-sized copy: valid UTF-8 (invalid bytes become U+FFFD) and,
 * when longer than APPR_EVENT_OUTPUT_MAX characters, "... (truncated) " followed by the last
 * APPR_EVENT_OUTPUT_MAX characters.
 */

#include "approvals_policy.h"
#include "err.h"
#include "strbuf.h"

#define APPR_OUTPUT_MAX	      200000
#define APPR_EVENT_OUTPUT_MAX 20000

struct appr_exec_result {
	int exit_code; /* 128+N for a signal */
	int timed_out;
	int success; /* exited 0 on its own */
	struct strbuf output;
};

/* 1 when the environment entry (NAME=VALUE or NAME) is one appr_exec_run removes. */
int appr_env_is_scrubbed(const char *entry);
/* 0 while every executable of a is what was checked (see the contract). */
int appr_exec_checked(const struct appr_analysis *a, struct err *e);
int appr_exec_run(const char *resolved, int exec_fd, const char *path_env, const char *const *argv, int timeout_ms,
		  struct appr_exec_result *r, struct err *e);
void appr_exec_result_release(struct appr_exec_result *r);
void appr_event_output(const char *s, size_t len, struct strbuf *out);
/* Appends s as valid UTF-8 (each invalid byte and NUL becomes U+FFFD); returns the characters. */
size_t appr_utf8_sanitize(const char *s, size_t len, struct strbuf *out);

#endif
