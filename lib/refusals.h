/* refusals.h — refused calls counted in windows, so that a flood of them costs the audit log a few rows, not a row
 * each: the first refusal of a kind in a window gets its row at once; its repeats in the window are counted and get
 * one row when the window ends; past `max` kinds in a window, refusals are only counted, per action, into one
 * summary row. Never holds more than `max` kinds and one counter per action (at most REFUSALS_ACTIONS of them).
 *
 * Contract:
 *   A kind is the exact tuple (peer, actor, action, target, details): peer is who sent the call (an IP address, or
 *   "unix uid N"), details compared as compact JSON. Strings may be NULL (target, details).
 *   refusals_note(r, …) → 1: the first of its kind in this window and under the cap: write its row now; 0: counted
 *     (a repeat, or over the cap), nothing to write now. details is borrowed (copied when kept).
 *   refusals_flush(r, repeated, suppressed, arg) ends the window: repeated(kind, n) for every kind noted again n > 0
 *     times after its row; then, when refusals were over the cap, suppressed(by_action {action: n}, total) once.
 *     Then everything is forgotten; a new window starts with the next note. refusals_pending() is 1 while there is
 *     anything a flush would report.
 */
#ifndef AGOR_REFUSALS_H
#define AGOR_REFUSALS_H

#include <jansson.h>

#define REFUSALS_ACTIONS 64 /* actions counted apart in the summary; more share the name "other" */

struct refusal_kind {
	char *peer, *actor, *action, *target;
	json_t *details; /* NULL when none */
};

struct refusals;

typedef void (*refusals_repeated_fn)(const struct refusal_kind *kind, unsigned long long repeats, void *arg);
typedef void (*refusals_suppressed_fn)(const json_t *by_action, unsigned long long total, void *arg);

struct refusals *refusals_new(unsigned max);
void refusals_free(struct refusals *r);
int refusals_note(struct refusals *r, const char *peer, const char *actor, const char *action, const char *target,
		  const json_t *details);
void refusals_flush(struct refusals *r, refusals_repeated_fn repeated, refusals_suppressed_fn suppressed, void *arg);
int refusals_pending(const struct refusals *r);

#endif
