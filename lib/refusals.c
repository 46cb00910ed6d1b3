/* refusals.c — the refusal window of refusals.h: up to `max` kinds, each with its key text and repeat count, and a
 * per-action count of what was over the cap. Never stores anything a caller did not hand it. */
#include <string.h>

#include "json.h"
#include "refusals.h"
#include "strbuf.h"
#include "banned.h"

struct counted_kind {
	struct refusal_kind kind;
	char *key; /* the tuple as one string: what "the same kind" compares */
	unsigned long long repeats;
};

struct refusals {
	unsigned max;
	struct counted_kind *kinds;
	unsigned nkinds;
	json_t *suppressed; /* {action: count} of refusals over the cap */
	unsigned long long suppressed_total;
};

struct refusals *refusals_new(unsigned max)
{
	struct refusals *r = xcalloc(1, sizeof(*r));
	r->max = max ? max : 1;
	r->kinds = xcalloc(r->max, sizeof(*r->kinds));
	r->suppressed = json_object();
	return r;
}

static void forget_all(struct refusals *r)
{
	for (unsigned i = 0; i < r->nkinds; i++) {
		struct counted_kind *k = &r->kinds[i];
		free(k->kind.peer);
		free(k->kind.actor);
		free(k->kind.action);
		free(k->kind.target);
		if (k->kind.details)
			json_decref(k->kind.details);
		free(k->key);
	}
	memset(r->kinds, 0, r->nkinds * sizeof(*r->kinds));
	r->nkinds = 0;
	json_object_clear(r->suppressed);
	r->suppressed_total = 0;
}

void refusals_free(struct refusals *r)
{
	if (!r)
		return;
	forget_all(r);
	json_decref(r->suppressed);
	free(r->kinds);
	free(r);
}

/* Each part followed by a byte that no part holds (NUL cannot be in them; a NULL part is marked apart). */
static char *key_of(const char *peer, const char *actor, const char *action, const char *target, const char *details)
{
	const char *parts[] = { peer, actor, action, target, details };
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		strbuf_addstr(&sb, parts[i] ? parts[i] : "\x01");
		strbuf_addch(&sb, '\x02');
	}
	return strbuf_detach(&sb, NULL);
}

static struct counted_kind *find(struct refusals *r, const char *key)
{
	for (unsigned i = 0; i < r->nkinds; i++)
		if (!strcmp(r->kinds[i].key, key))
			return &r->kinds[i];
	return NULL;
}

static void count_suppressed(struct refusals *r, const char *action)
{
	const char *name = action && (json_object_get(r->suppressed, action) ||
				      json_object_size(r->suppressed) < REFUSALS_ACTIONS - 1)
				   ? action
				   : "other";
	json_t *n = json_object_get(r->suppressed, name);
	json_object_set_new(r->suppressed, name, json_integer(n ? json_integer_value(n) + 1 : 1));
	r->suppressed_total++;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

int refusals_note(struct refusals *r, const char *peer, const char *actor, const char *action, const char *target,
		  const json_t *details)
{
	_cleanup_free_ char *details_text = details ? json_to_compact(details) : NULL;
	char *key = key_of(peer, actor, action, target, details_text);
	struct counted_kind *k = find(r, key);
	if (k) {
		k->repeats++;
		free(key);
		return 0;
	}
	if (r->nkinds == r->max) {
		count_suppressed(r, action);
		free(key);
		return 0;
	}
	k = &r->kinds[r->nkinds++];
	k->key = key;
	k->kind = (struct refusal_kind){ dup_or_null(peer), dup_or_null(actor), dup_or_null(action),
					 dup_or_null(target), details ? json_deep_copy(details) : NULL };
	return 1;
}

void refusals_flush(struct refusals *r, refusals_repeated_fn repeated, refusals_suppressed_fn suppressed, void *arg)
{
	for (unsigned i = 0; i < r->nkinds; i++)
		if (r->kinds[i].repeats)
			repeated(&r->kinds[i].kind, r->kinds[i].repeats, arg);
	if (r->suppressed_total)
		suppressed(r->suppressed, r->suppressed_total, arg);
	forget_all(r);
}

int refusals_pending(const struct refusals *r)
{
	if (r->suppressed_total)
		return 1;
	for (unsigned i = 0; i < r->nkinds; i++)
		if (r->kinds[i].repeats)
			return 1;
	return 0;
}
