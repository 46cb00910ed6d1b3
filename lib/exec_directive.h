/* exec_directive.h — the session directives `/exec host=… security=… ask=… node=…` and `/elevated on|off`
 * (issue 8): parsed and validated into a session's exec defaults. Never accepts a key or value it does not know. */
#ifndef AGOR_EXEC_DIRECTIVE_H
#define AGOR_EXEC_DIRECTIVE_H

/*
 * Contract
 * --------
 * exec_directive_apply(text, current, &next, e): text is a directive when its first word is `/exec` or
 * `/elevated` (leading blanks ignored). Returns 0 when it is not one (next untouched), 1 with next = the
 * session's new defaults (a new object; current may be NULL), or -1 with E_INVALID_PAYLOAD naming the bad
 * word, key or value. Defaults: {host?: sandbox|gateway|node, security?: deny|allowlist|full,
 * ask?: off|on-miss|always, node?: query, elevated?: true}.
 *   /exec            shows (next = current)
 *   /exec k=v …      sets each key; host=sandbox drops security, ask and node (the sandbox has its own
 *                    controls); node=Q implies host=node; security, ask or node without a gateway or node
 *                    host is refused
 *   /exec reset      clears everything
 *   /elevated on     host gateway, security full, elevated true (for this session only)
 *   /elevated off    drops host, security and elevated
 * The caller checks security against the host's own cap (the gateway's exec-approvals.json).
 */

#include <jansson.h>

#include "err.h"

int exec_directive_apply(const char *text, const json_t *current, json_t **next, struct err *e);

#endif
