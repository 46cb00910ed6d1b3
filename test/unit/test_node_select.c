/* test_node_select.c — unit tests of node_select.h: name normalisation and each selection rule, in order.
 * Never relies on a lucky ordering: every rule is tested against a decoy the next rule would pick. */
#include <stdlib.h>

#include "err.h"
#include "node_select.h"
#include "unit.h"
#include "banned.h"

static void check_normalized(const char *in, const char *want)
{
	char *got = node_name_normalize(in);
	CHECK_STR(got, want);
	free(got);
}

TEST(node_name_normalize_rules)
{
	check_normalized("Build Box", "build-box");
	check_normalized("  Build   Box #2 ", "build-box-2");
	check_normalized("--mac__mini--", "mac-mini");
	check_normalized("ALLCAPS", "allcaps");
	check_normalized("a.b.c", "a-b-c");
	check_normalized("", "");
	check_normalized("!!!", "");
	check_normalized("caf\xc3\xa9 box", "caf-box");
}

static const struct node_candidate nodes[] = {
	{ "aaaaaa1111", "Build Box", "10.9.0.2", 1 }, { "aaaaaa2222", "build-box", "10.9.0.3", 0 },
	{ "bbbbbb3333", "Mac Mini", "10.9.0.4", 0 },  { "10.9.0.4", "odd id", NULL, 0 },
	{ "cccccc4444", "twin", "10.9.0.5", 0 },      { "cccccc5555", "Twin", "10.9.0.6", 0 },
};
#define N (sizeof(nodes) / sizeof(nodes[0]))

static int pick(const char *q, struct err *e)
{
	return node_select(nodes, N, q, e);
}

TEST(node_select_exact_id_beats_ip)
{
	struct err e = ERR_INIT;
	CHECK_INT(pick("10.9.0.4", &e), 3); /* an id equal to another node's IP: the id rule comes first */
	CHECK_INT(pick("bbbbbb3333", &e), 2);
	err_clear(&e);
}

TEST(node_select_by_ip_then_name)
{
	struct err e = ERR_INIT;
	CHECK_INT(pick("10.9.0.3", &e), 1);
	CHECK_INT(pick("MAC  mini", &e), 2);
	err_clear(&e);
}

TEST(node_select_connected_wins_ties)
{
	struct err e = ERR_INIT;
	CHECK_INT(pick("BUILD BOX", &e), 0); /* two names normalise to build-box; only node 0 is connected */
	CHECK_INT(pick("aaaaaa", &e), 0);    /* two ids share the prefix; only node 0 is connected */
	err_clear(&e);
}

TEST(node_select_prefix_needs_six)
{
	struct err e = ERR_INIT;
	CHECK_INT(pick("bbbbbb", &e), 2);
	CHECK_INT(pick("bbbbb", &e), -1);
	CHECK_STR(e.code, E_NOT_FOUND);
	CHECK_CONTAINS(e.message, "unknown node: bbbbb (known: Build Box (aaaaaa11), build-box (aaaaaa22)");
	err_clear(&e);
}

TEST(node_select_ambiguous)
{
	struct err e = ERR_INIT;
	CHECK_INT(pick("twin", &e), -1);
	CHECK_STR(e.code, E_INVALID_PAYLOAD);
	CHECK_STR(e.message, "ambiguous node: twin (matches: twin (cccccc44), Twin (cccccc55))");
	err_clear(&e);
	CHECK_INT(pick("cccccc", &e), -1);
	CHECK_CONTAINS(e.message, "ambiguous node: cccccc");
	err_clear(&e);
}

TEST(node_select_empty)
{
	struct err e = ERR_INIT;
	CHECK_INT(node_select(nodes, N, "", &e), -1);
	CHECK_CONTAINS(e.message, "params.node");
	err_clear(&e);
	CHECK_INT(node_select(NULL, 0, "x", &e), -1);
	CHECK_STR(e.message, "unknown node: x (known: none)");
	err_clear(&e);
}
