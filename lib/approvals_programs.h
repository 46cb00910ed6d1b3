/* approvals_programs.h — programs that run programs: the one table of executables whose options (or whose
 * very nature) run code beyond the executable itself, and the argv patterns an allowlist entry may name. */
#ifndef AGOR_APPROVALS_PROGRAMS_H
#define AGOR_APPROVALS_PROGRAMS_H

/*
 * Contract
 * --------
 * appr_code_running(word_base, resolved_base, argv, expands, &always) looks both names up (the word as
 * written and the canonical file's basename; a versioned name such as python3.11, perl5.36.0 or
 * vim.basic is its family) and returns NULL when argv runs nothing but that executable, else a
 * malloc'd reason naming the option. *always is 1 when the program runs code whatever its options
 * (make and other build tools, interpreters given anything but a version query, editors, pagers,
 * database shells): only an argv pattern can allow those.
 *   - Options are recognised as their parsers accept them: a long option also by any prefix of its
 *     name (`--upload-pa=cmd`, GNU getopt and git's parse-options accept unambiguous abbreviations),
 *     a short option also inside a bundle (`-ux`) and with its value glued on; option scanning stops
 *     at `--`.
 *   - git: only the global options known to run nothing (-C, --git-dir, --work-tree, --no-pager, …)
 *     and only the subcommands in the table (no alias, no external git-X); per subcommand the
 *     code-running options (-c/--config/--template of clone, --upload-pack/-u, --receive-pack,
 *     --exec, rebase -x, grep -O, --ext-diff, …); `git config` only in a reading form.
 *   - awk: -f/-E/-i/-l/-W and their long forms, and any argument containing `system`, `|` or `@`;
 *     sed: -f/--file, unknown options, and a script with the `e` command or the s///e flag (a script
 *     that cannot be parsed counts as code).
 *   - expands (the shell expands an argument: glob, brace, ~): any listed program is code-running,
 *     because the expansion could produce any option.
 * A program not in the table runs no code of its own as far as this module knows.
 *
 * Argv patterns: an allowlist entry with an unescaped space is "PATHGLOB WORD…": PATHGLOB matches the
 * canonical executable (appr_glob_match), each WORD one argument in order — `*` any characters
 * (also '/'), `?` one character, `\x` a literal x (`\ ` a space) — and a last WORD of exactly `*`
 * any number of further arguments (*trailing = 1). appr_argv_pattern_match returns 1 on a match.
 */

#include "err.h"

/* NULL, or a reason (caller frees) — see the contract. */
char *appr_code_running(const char *word_base, const char *resolved_base, const char *const *argv, int expands,
			int *always);

/* 1 when either name is git (its family). */
int appr_is_git(const char *word_base, const char *resolved_base);

/* 1 when pattern contains an argument part (an unescaped space). */
int appr_pattern_has_argv(const char *pattern);
/* 1 when the argv pattern matches resolved + argv[1…]; *trailing: the match used a final `*`. */
int appr_argv_pattern_match(const char *pattern, const char *resolved, const char *const *argv, const char *home,
			    int *trailing);

#endif
