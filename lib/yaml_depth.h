/* yaml_depth.h — the guard before libyaml loads a file: how deep its collections nest. libyaml 0.2.5's scanner
 * looks at every open flow level for a stale simple key at each token, so loading costs the square of the nesting
 * (30,000 levels of "[": seconds of CPU; config_fuzz found it); agor's files never nest more than a few levels.
 */
#ifndef AGOR_YAML_DEPTH_H
#define AGOR_YAML_DEPTH_H

#include <stddef.h>

#include "err.h"

/*
 * Contract
 * --------
 * yaml_too_deep(text, len, max): 1 when text nests sequences or mappings (flow or block) more than max levels
 * deep, else 0. It reads libyaml's own events and stops at the first level past max, so it never pays for the
 * nesting it refuses (the scanner looks at most 1024 bytes ahead of the event it emits). A syntax error gives 0:
 * the load that follows reports it. Callers refuse a text deeper than YAML_DEPTH_MAX before loading it:
 * yaml_check_depth(origin, text, len, e) is 0, or -1 with E_CONFIG "ORIGIN: invalid YAML: nested more than 64
 * levels deep".
 */

#define YAML_DEPTH_MAX 64

int yaml_too_deep(const char *text, size_t len, int max);
int yaml_check_depth(const char *origin, const char *text, size_t len, struct err *e);

#endif
