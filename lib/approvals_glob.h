/* approvals_glob.h — the path globs of exec-approval allowlists: how a pattern matches a canonical executable,
 * which patterns may be stored, and the pattern naming exactly one path. Pure functions. */
#ifndef AGOR_APPROVALS_GLOB_H
#define AGOR_APPROVALS_GLOB_H

/*
 * Contract
 * --------
 * appr_glob_match matches a canonical path, anchored at both ends and case-sensitive:
 *   `**` any characters (also '/'), `*` any characters but '/', `?` one character but '/',
 *   `\x` a literal x, everything else (also '[') literal. A leading `~/` (or a lone `~`) is the
 *   given home directory. appr_pattern_check refuses, at write time, patterns that are not
 *   absolute (`/…` or `~/…`: a pattern without '/' never names a path), `~user`, control
 *   characters, and more than APPR_PATTERN_MAX bytes.
 */

#include "err.h"

#define APPR_PATTERN_MAX 1024

/* 1 when path matches pattern (see the contract), else 0. home may be NULL (then `~` never matches). */
int appr_glob_match(const char *pattern, const char *path, const char *home);
/* 0 when pattern may be stored; -1 with E_INVALID_PAYLOAD naming the problem. */
int appr_pattern_check(const char *pattern, struct err *e);
/* A pattern matching exactly path (glob characters escaped); caller frees. */
char *appr_pattern_for_path(const char *path);

#endif
