/* test_limits.c — unit tests of the daemon's limits: browser origins (origin.h), per-address counts (addrcount.h),
 * the descriptor budget (fdlimit.h), refusal windows (refusals.h) and the WAL truncated past its cap (db.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include "addrcount.h"
#include "db.h"
#include "fdlimit.h"
#include "json.h"
#include "log.h"
#include "loop.h"
#include "origin.h"
#include "refusals.h"
#include "unit.h"
#include "banned.h"

/* === origins ================================================================================ */

TEST(origin_own_names_for_loopback_wildcard_and_named_hosts)
{
	struct origin_set *s = origin_set_new(0, "127.0.0.1", 3030, NULL);
	char *text = origin_set_text(s);
	CHECK_STR(text, "http://127.0.0.1:3030 http://localhost:3030 http://[::1]:3030");
	free(text);
	CHECK(origin_allowed(s, "http://127.0.0.1:3030"));
	CHECK(origin_allowed(s, "http://LocalHost:3030"));
	CHECK(origin_allowed(s, "http://[0:0::1]:3030"));
	CHECK(!origin_allowed(s, "https://127.0.0.1:3030")); /* another scheme */
	CHECK(!origin_allowed(s, "http://127.0.0.1:3031"));  /* another port */
	CHECK(!origin_allowed(s, "http://127.0.0.1"));	     /* port 80 */
	CHECK(!origin_allowed(s, "http://evil.example:3030"));
	CHECK(!origin_allowed(s, "http://127.0.0.1.evil.example:3030"));
	CHECK(!origin_allowed(s, "null"));
	CHECK(!origin_allowed(s, ""));
	CHECK(!origin_allowed(s, "http://127.0.0.1:3030/"));
	CHECK(!origin_allowed(s, "http://x@127.0.0.1:3030"));
	CHECK(!origin_allowed(s, "http://127.0.0.1:3030, http://evil.example")); /* two Origin headers joined */
	origin_set_free(s);

	s = origin_set_new(1, "0.0.0.0", 443,
			   "https://Agor.Example.com, http://10.0.0.5:8080  https://[2001:db8::1]:9");
	CHECK(origin_allowed(s, "https://localhost"));
	CHECK(origin_allowed(s, "https://agor.example.com:443"));
	CHECK(origin_allowed(s, "http://10.0.0.5:8080"));
	CHECK(origin_allowed(s, "https://[2001:db8:0::1]:9"));
	CHECK(!origin_allowed(s, "https://0.0.0.0"));
	CHECK(!origin_allowed(s, "http://localhost:443"));
	origin_set_free(s);

	s = origin_set_new(0, "gw.example", 3030, NULL);
	CHECK(origin_allowed(s, "http://GW.example:3030"));
	CHECK(!origin_allowed(s, "http://localhost:3030")); /* a named host is its own name only */
	origin_set_free(s);
}

TEST(origin_list_check_names_the_bad_entry)
{
	size_t at = 0;
	struct err e = ERR_INIT;
	CHECK_INT(origin_list_check("https://a.example, http://b.example:8080", &at, &e), 0);
	CHECK_INT(origin_list_check("https://a.example https://b.example/x", &at, &e), -1);
	CHECK_INT(at, 18);
	CHECK_STR(e.code, E_CONFIG);
	CHECK(strstr(e.message, "\"https://b.example/x\"") != NULL);
	err_clear(&e);
	CHECK_INT(origin_list_check("ftp://a.example", &at, &e), -1);
	err_clear(&e);
	CHECK_INT(origin_list_check("a.example", &at, &e), -1);
	err_clear(&e);
}

/* === per-address counts ===================================================================== */

static struct addr_key key_of(int family, const char *text)
{
	struct sockaddr_storage ss = { .ss_family = (sa_family_t)family };
	struct addr_key k;
	if (family == AF_INET)
		inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr);
	else
		inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr);
	CHECK_INT(addr_key_from(&ss, &k), 0);
	return k;
}

TEST(addrcount_counts_ipv4_and_ipv6_slash_64)
{
	struct addr_counts *t = addr_counts_new();
	struct addr_key a = key_of(AF_INET, "10.0.0.1"), mapped = key_of(AF_INET6, "::ffff:10.0.0.1");
	struct addr_key v6a = key_of(AF_INET6, "2001:db8:1:2::1"), v6b = key_of(AF_INET6, "2001:db8:1:2:ffff::9");
	struct addr_key other = key_of(AF_INET6, "2001:db8:1:3::1");
	addr_counts_add(t, &a);
	addr_counts_add(t, &mapped); /* the same client */
	addr_counts_add(t, &v6a);
	addr_counts_add(t, &v6b); /* the same /64 */
	CHECK_INT(addr_counts_get(t, &a), 2);
	CHECK_INT(addr_counts_get(t, &v6a), 2);
	CHECK_INT(addr_counts_get(t, &other), 0);
	CHECK_INT(addr_counts_size(t), 2);
	addr_counts_remove(t, &a);
	addr_counts_remove(t, &a);
	addr_counts_remove(t, &a); /* never below 0 */
	CHECK_INT(addr_counts_get(t, &a), 0);
	CHECK_INT(addr_counts_size(t), 1);
	for (int i = 0; i < 5000; i++) { /* many addresses, chained buckets */
		struct addr_key k = { .family = AF_INET, .bytes = { 10, (uint8_t)(i >> 8), (uint8_t)i, 1 } };
		addr_counts_add(t, &k);
	}
	CHECK_INT(addr_counts_size(t), 5001);
	addr_counts_free(t);
	struct sockaddr_storage unix_peer = { .ss_family = AF_UNIX };
	struct addr_key k;
	CHECK_INT(addr_key_from(&unix_peer, &k), -1);
}

/* === descriptor budget ====================================================================== */

TEST(fdlimit_raises_the_soft_limit_or_shares_what_there_is)
{
	struct fd_budget b;
	fd_budget_plan(1024, 524288, 12, 4096, 1024, &b); /* systemd's default soft limit: raised */
	CHECK_INT(b.soft, 12 + 4096 + 1024);
	CHECK(b.raised && !b.lowered);
	CHECK_INT(b.max_tcp, 4096);
	CHECK_INT(b.reserve, 1024);
	CHECK_INT(b.tcp_fd_ceiling, 12 + 4096);
	fd_budget_plan(65536, 65536, 12, 4096, 1024, &b); /* already enough: left alone */
	CHECK_INT(b.soft, 65536);
	CHECK(!b.raised && !b.lowered);
	fd_budget_plan(1024, 4096, 12, 4096, 1024, &b); /* the hard limit is short: TCP gives way */
	CHECK_INT(b.soft, 4096);
	CHECK(b.raised && b.lowered);
	CHECK_INT(b.reserve, 1024);
	CHECK_INT(b.max_tcp, 4096 - 12 - 1024);
	fd_budget_plan(1024, 1024, 12, 4096, 1024, &b); /* so short the reserve would leave nothing: halved */
	CHECK(!b.raised && b.lowered);
	CHECK_INT(b.max_tcp, (1024 - 12) / 2);
	CHECK_INT(b.max_tcp + b.reserve, 1024 - 12);
	CHECK_INT(b.tcp_fd_ceiling, 12 + b.max_tcp);
}

/* === refusal windows ======================================================================== */

struct flushed {
	int repeated_calls;
	unsigned long long repeats, suppressed;
	json_t *by_action;
	char last_action[64];
};

static void on_repeated(const struct refusal_kind *k, unsigned long long repeats, void *arg)
{
	struct flushed *f = arg;
	f->repeated_calls++;
	f->repeats += repeats;
	snprintf(f->last_action, sizeof(f->last_action), "%s", k->action);
}

static void on_suppressed(const json_t *by_action, unsigned long long total, void *arg)
{
	struct flushed *f = arg;
	f->suppressed = total;
	f->by_action = json_deep_copy(by_action);
}

TEST(refusals_count_repeats_and_cap_kinds)
{
	struct refusals *r = refusals_new(3);
	json_t *why = json_pack("{s:s}", "reason", "malformed");
	CHECK_INT(refusals_note(r, "10.0.0.1", "executor", "heartbeat", NULL, why), 1);
	for (int i = 0; i < 19999; i++)
		CHECK_INT(refusals_note(r, "10.0.0.1", "executor", "heartbeat", NULL, why), 0);
	CHECK_INT(refusals_note(r, "10.0.0.2", "executor", "heartbeat", NULL, why), 1); /* another peer */
	CHECK_INT(refusals_note(r, "10.0.0.1", "executor", "heartbeat", "t", why), 1);	/* another target */
	for (int i = 0; i < 500; i++) {
		char target[16];
		snprintf(target, sizeof(target), "n%d", i);
		CHECK_INT(refusals_note(r, "10.0.0.1", "10.0.0.1", "node.hello", target, NULL), 0); /* over the cap */
	}
	CHECK(refusals_pending(r));
	struct flushed f = { 0 };
	refusals_flush(r, on_repeated, on_suppressed, &f);
	CHECK_INT(f.repeated_calls, 1);
	CHECK_INT(f.repeats, 19999);
	CHECK_STR(f.last_action, "heartbeat");
	CHECK_INT(f.suppressed, 500);
	CHECK_INT(json_integer_value(json_object_get(f.by_action, "node.hello")), 500);
	json_decref(f.by_action);
	CHECK(!refusals_pending(r));
	/* a new window: the same kind is written again */
	CHECK_INT(refusals_note(r, "10.0.0.1", "executor", "heartbeat", NULL, why), 1);
	json_decref(why);
	refusals_free(r);
}

TEST(refusals_summary_names_at_most_its_action_cap)
{
	struct refusals *r = refusals_new(1);
	CHECK_INT(refusals_note(r, NULL, "a", "first", NULL, NULL), 1);
	for (int i = 0; i < 200; i++) {
		char action[16];
		snprintf(action, sizeof(action), "m%d", i);
		refusals_note(r, NULL, "a", action, NULL, NULL);
	}
	struct flushed f = { 0 };
	refusals_flush(r, on_repeated, on_suppressed, &f);
	CHECK_INT(f.suppressed, 200);
	CHECK_INT(json_object_size(f.by_action), REFUSALS_ACTIONS);
	CHECK_INT(json_integer_value(json_object_get(f.by_action, "other")), 200 - (REFUSALS_ACTIONS - 1));
	json_decref(f.by_action);
	refusals_free(r);
}

/* === the WAL past its cap ================================================================== */

TEST(db_wal_past_its_cap_is_truncated)
{
	struct err e = ERR_INIT;
	struct db *db = NULL;
	char path[300], wal[310];
	snprintf(path, sizeof(path), "%s/t.db", unit_tmpdir());
	snprintf(wal, sizeof(wal), "%s-wal", path);
	log_set_level(LOG_ERROR);
	CHECK_INT(db_open(path, &db, &e), 0);
	CHECK_INT(db_checkpoint_in_background(db, 256 << 10, &e), 0);
	CHECK_INT(db_exec(db, "CREATE TABLE t (x BLOB)", &e), 0);
	/* commits that never pause for a second: passive checkpoints alone never catch up, and the file never shrinks
	 */
	unsigned long long biggest = 0, db_bytes = 0, wal_bytes = 0;
	uint64_t until = loop_now_ms() + 1000;
	for (int i = 0; loop_now_ms() < until; i++) {
		CHECK_INT(db_run(db, &e, "INSERT INTO t VALUES (zeroblob(2000))", ""), 1);
		if (i % 100 == 0) {
			db_file_sizes(db, &db_bytes, &wal_bytes);
			biggest = wal_bytes > biggest ? wal_bytes : biggest;
		}
	}
	for (int i = 0; i < 50; i++) { /* the thread's next look */
		db_file_sizes(db, &db_bytes, &wal_bytes);
		if (wal_bytes <= 256 << 10)
			break;
		usleep(50000);
	}
	CHECK(biggest > 256 << 10); /* it did grow past the cap */
	CHECK(wal_bytes <= 256 << 10);
	CHECK(db_bytes > (1u << 20)); /* and the rows are in the database */
	db_close(db);
	err_clear(&e);
}
