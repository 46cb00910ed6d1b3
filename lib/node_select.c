/* node_select.c — resolving a node query to one paired node (node_select.h).
 * Never picks among ambiguous matches except by connectedness; never matches short id prefixes. */
#include <jansson.h>
#include <string.h>

#include "common.h"
#include "node_select.h"
#include "strbuf.h"
#include "banned.h"

static int is_alnum_ascii(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

char *node_name_normalize(const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	int pending_dash = 0;
	for (const char *p = name; *p; p++) {
		if (!is_alnum_ascii(*p)) {
			pending_dash = sb.len > 0;
			continue;
		}
		if (pending_dash)
			strbuf_addch(&sb, '-');
		pending_dash = 0;
		strbuf_addch(&sb, (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a') : *p);
	}
	return strbuf_detach(&sb, NULL);
}

enum rule { RULE_ID, RULE_IP, RULE_NAME, RULE_PREFIX, RULE_COUNT };

static int matches(const struct node_candidate *c, enum rule r, const char *query, const char *normalized)
{
	switch (r) {
	case RULE_ID:
		return !strcmp(c->node_id, query);
	case RULE_IP:
		return c->remote_ip && !strcmp(c->remote_ip, query);
	case RULE_NAME: {
		_cleanup_free_ char *mine = node_name_normalize(c->display_name ? c->display_name : "");
		return *normalized && !strcmp(mine, normalized);
	}
	case RULE_PREFIX:
		return strlen(query) >= NODE_PREFIX_MIN && !strncmp(c->node_id, query, strlen(query));
	default:
		return 0;
	}
}

static void describe(const struct node_candidate *c, struct strbuf *sb, json_t *list)
{
	if (sb->len)
		strbuf_addstr(sb, ", ");
	strbuf_addf(sb, "%s (%.8s)", c->display_name ? c->display_name : "?", c->node_id);
	json_array_append_new(list, json_string(c->node_id));
}

static int fail_listing(const struct node_candidate *nodes, size_t n, const int *pick, const char *query,
			const char *code, const char *what, struct err *e)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		if (!pick || pick[i])
			describe(&nodes[i], &sb, list);
	err_setd(e, code, json_pack("{s:s,s:o}", "query", query, what, list), "%s node: %s (%s: %s)",
		 strcmp(what, "known") ? "ambiguous" : "unknown", query, what, sb.len ? sb.buf : "none");
	strbuf_release(&sb);
	return -1;
}

/* Among the marked matches: the only one, or the only connected one; -2 when still ambiguous. */
static int narrow(const struct node_candidate *nodes, size_t n, const int *hit, size_t nhits)
{
	int only = -1, only_connected = -1;
	size_t nconnected = 0;
	for (size_t i = 0; i < n; i++) {
		if (!hit[i])
			continue;
		only = (int)i;
		if (nodes[i].connected) {
			only_connected = (int)i;
			nconnected++;
		}
	}
	if (nhits == 1)
		return only;
	return nconnected == 1 ? only_connected : -2;
}

int node_select(const struct node_candidate *nodes, size_t n, const char *query, struct err *e)
{
	if (!query || !*query)
		return err_set(e, E_INVALID_PAYLOAD,
			       "params.node: required (a node id, id prefix, IP or display name)");
	_cleanup_free_ char *normalized = node_name_normalize(query);
	_cleanup_free_ int *hit = xcalloc(n ? n : 1, sizeof(*hit));
	for (int r = RULE_ID; r < RULE_COUNT; r++) {
		size_t nhits = 0;
		for (size_t i = 0; i < n; i++) {
			hit[i] = matches(&nodes[i], (enum rule)r, query, normalized);
			nhits += (size_t)hit[i];
		}
		if (!nhits)
			continue;
		int picked = narrow(nodes, n, hit, nhits);
		if (picked >= 0)
			return picked;
		return fail_listing(nodes, n, hit, query, E_INVALID_PAYLOAD, "matches", e);
	}
	return fail_listing(nodes, n, NULL, query, E_NOT_FOUND, "known", e);
}
