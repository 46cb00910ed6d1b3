/* node_select.h — which paired node a query names: the rules of exec.run's `node` parameter.
 * Never guesses: a query that matches more than one node (and no single connected one) is an error. */
#ifndef AGOR_NODE_SELECT_H
#define AGOR_NODE_SELECT_H

/*
 * Contract
 * --------
 * node_name_normalize: lowercase ASCII; every run of characters that are not ASCII letters or
 * digits becomes one '-'; leading and trailing '-' are trimmed ("  Build Box #2 " → "build-box-2").
 *
 * node_select tries the rules in order and stops at the first that matches anything:
 *   1. exact nodeId;  2. remote IP (without the port);  3. normalized display name equal to the
 *   normalized query;  4. nodeId prefix, only for queries of at least NODE_PREFIX_MIN characters.
 * Within the matching rule, one match wins; several matches are narrowed to the connected ones,
 * and exactly one connected match wins. Otherwise: E_NOT_FOUND "unknown node: Q (known: …)" or
 * E_INVALID_PAYLOAD "ambiguous node: Q (matches: …)", nodes listed as "name (id8)" in input order,
 * with details {"query", "known"|"matches"}.
 */

#include <stddef.h>

#include "err.h"

#define NODE_PREFIX_MIN 6

struct node_candidate {
	const char *node_id;
	const char *display_name;
	const char *remote_ip; /* NULL when never seen */
	int connected;
};

/* A new string (caller frees). */
char *node_name_normalize(const char *name);
/* The index of the selected candidate, or -1 with e set. */
int node_select(const struct node_candidate *nodes, size_t n, const char *query, struct err *e);

#endif
