/* daemon_limits.c — what keeps a flood from stalling the daemon or filling its disk (daemon_limits.h): the descriptor
 * budget, refused calls audited in counted windows, the browser origins, the database size watch.
 * Never writes an audit row per refusal of a flood; never lets TCP connections take the Unix socket's descriptors. */
#include <string.h>

#include "daemon_limits.h"
#include "fdlimit.h"
#include "log.h"
#include "net.h"
#include "origin.h"
#include "refusals.h"
#include "banned.h"

#define DB_WATCH_MS	  5000
#define DB_ALARM_RELOG_MS (3600 * 1000)
#define MB		  (1024ULL * 1024)

/* --- descriptors -------------------------------------------------------------------------- */

int daemon_plan_descriptors(struct daemon *d, struct net_server_config *sc, struct err *e)
{
	const struct config *cfg = d->cfg;
	struct fd_budget b;
	if (fd_budget_apply((unsigned long)cfg->daemon.max_connections, (unsigned long)cfg->daemon.fd_reserve, &b, e) <
	    0)
		return -1;
	if (b.raised)
		log_info("open-file limit raised from %lu to %lu: daemon.max_connections %lld + daemon.fd_reserve %lld "
			 "+ "
			 "%lu open",
			 b.soft_before, b.soft, cfg->daemon.max_connections, cfg->daemon.fd_reserve, b.open);
	if (b.lowered)
		log_warn("the open-file limit is %lu (hard %lu): serving at most %lu TCP connections and keeping %lu "
			 "descriptors for the Unix socket and executors, instead of daemon.max_connections %lld + "
			 "daemon.fd_reserve %lld (raise the hard limit: LimitNOFILE=%lld in the systemd unit, or "
			 "ulimit -Hn)",
			 b.soft, b.hard, b.max_tcp, b.reserve, cfg->daemon.max_connections, cfg->daemon.fd_reserve,
			 (long long)b.open + cfg->daemon.max_connections + cfg->daemon.fd_reserve);
	sc->max_connections = (unsigned)(b.max_tcp ? b.max_tcp : 1);
	sc->tcp_fd_ceiling = (int)b.tcp_fd_ceiling;
	sc->max_unix_connections = (unsigned)(b.reserve / 2 ? b.reserve / 2 : 1);
	sc->max_per_ip = (unsigned)cfg->daemon.max_connections_per_ip;
	sc->max_unauthenticated = (unsigned)cfg->daemon.max_unauthenticated;
	sc->auth_timeout_ms = (unsigned)cfg->daemon.auth_timeout_ms;
	return 0;
}

/* --- refused calls ------------------------------------------------------------------------ */

static json_t *with_peer(json_t *details, const char *peer)
{
	if (!json_is_object(details)) {
		if (details)
			json_decref(details);
		details = json_object();
	}
	if (peer)
		json_object_set_new(details, "peer", json_string(peer));
	return details;
}

static void write_repeated(const struct refusal_kind *k, unsigned long long repeats, void *arg)
{
	struct daemon *d = arg;
	json_t *details = with_peer(k->details ? json_deep_copy(k->details) : NULL, k->peer);
	json_object_set_new(details, "repeated", json_integer((json_int_t)repeats));
	json_object_set_new(details, "window_ms", json_integer(d->cfg->daemon.audit_refusals_window_ms));
	daemon_audit(d, k->actor, k->action, k->target, "refused", details);
}

static void write_suppressed(const json_t *by_action, unsigned long long total, void *arg)
{
	struct daemon *d = arg;
	log_warn("%llu refused calls in %lld ms were only counted: more than daemon.audit_refusals_max (%lld) kinds",
		 total, d->cfg->daemon.audit_refusals_window_ms, d->cfg->daemon.audit_refusals_max);
	daemon_audit(d, "daemon", "audit.refusals_suppressed", NULL, "counted",
		     json_pack("{s:I,s:O,s:I,s:I}", "count", (json_int_t)total, "by_action", by_action, "window_ms",
			       (json_int_t)d->cfg->daemon.audit_refusals_window_ms, "max",
			       (json_int_t)d->cfg->daemon.audit_refusals_max));
}

static void write_counted(struct daemon *d)
{
	struct err e = ERR_INIT;
	if (!d->refusals)
		return;
	/* the rows of a window in one commit (inside a batch of writes already open: in that one) */
	int own = refusals_pending(d->refusals) && !d->write_batch_open && db_begin(d->db, &e) == 0;
	refusals_flush(d->refusals, write_repeated, write_suppressed, d);
	if (own && db_commit(d->db, &e) < 0) {
		log_error("could not commit the counted refusals: %s", e.message);
		db_rollback(d->db);
	}
	err_clear(&e);
}

static void end_refusal_window(struct loop *l, void *arg)
{
	(void)l;
	struct daemon *d = arg;
	d->refusal_window = NULL;
	write_counted(d);
}

void daemon_flush_refusals(struct daemon *d)
{
	if (d->refusal_window)
		loop_timer_cancel(d->loop, d->refusal_window);
	d->refusal_window = NULL;
	write_counted(d);
}

void daemon_audit_refusal(struct daemon *d, const char *actor, const char *action, const char *target, json_t *details)
{
	const char *peer = d->caller[0] ? d->caller : NULL;
	if (!d->refusals)
		d->refusals = refusals_new((unsigned)d->cfg->daemon.audit_refusals_max);
	if (!d->refusal_window && d->loop)
		d->refusal_window = loop_timer_add(d->loop, (uint64_t)d->cfg->daemon.audit_refusals_window_ms,
						   end_refusal_window, d);
	if (refusals_note(d->refusals, peer, actor, action, target, details))
		daemon_audit(d, actor, action, target, "refused", with_peer(details, peer));
	else if (details)
		json_decref(details);
}

/* --- browser origins ---------------------------------------------------------------------- */

void daemon_set_origins(struct daemon *d, int tcp_port)
{
	const struct config *cfg = d->cfg;
	origin_set_free(d->origins);
	d->origins =
		origin_set_new(cfg->daemon.tls_cert != NULL, cfg->daemon.host, tcp_port, cfg->daemon.allowed_origins);
	_cleanup_free_ char *text = origin_set_text(d->origins);
	log_info("browser origins served: %s (more with daemon.allowed_origins)", text);
}

int daemon_origin_allowed(const struct daemon *d, const char *origin)
{
	return d->origins && origin_allowed(d->origins, origin);
}

/* --- database size ------------------------------------------------------------------------ */

static void check_db_size(struct daemon *d)
{
	long long alarm_mb = d->cfg->daemon.db_size_alarm_mb;
	db_file_sizes(d->db, &d->db_bytes, &d->wal_bytes);
	int over = alarm_mb > 0 && d->db_bytes > (unsigned long long)alarm_mb * MB;
	uint64_t now = loop_now_ms();
	if (over && (!d->db_size_alarm || now - d->db_alarm_logged_at >= DB_ALARM_RELOG_MS)) {
		log_warn("the database %s is %.1f MB, past daemon.db_size_alarm_mb (%lld): find what grows "
			 "(agor audit list, agor task list) and archive or prune it, or raise the setting",
			 d->paths.db, (double)d->db_bytes / MB, alarm_mb);
		d->db_alarm_logged_at = now;
	} else if (!over && d->db_size_alarm) {
		log_info("the database %s is %.1f MB, back under daemon.db_size_alarm_mb (%lld)", d->paths.db,
			 (double)d->db_bytes / MB, alarm_mb);
	}
	d->db_size_alarm = over;
}

static void on_size_watch(struct loop *l, void *arg)
{
	struct daemon *d = arg;
	check_db_size(d);
	d->size_watch = loop_timer_add(l, DB_WATCH_MS, on_size_watch, d);
}

void daemon_watch_db_size(struct daemon *d)
{
	if (d->size_watch)
		return;
	check_db_size(d);
	d->size_watch = loop_timer_add(d->loop, DB_WATCH_MS, on_size_watch, d);
}

void daemon_limits_release(struct daemon *d)
{
	if (d->size_watch)
		loop_timer_cancel(d->loop, d->size_watch);
	d->size_watch = NULL;
	refusals_free(d->refusals);
	d->refusals = NULL;
	origin_set_free(d->origins);
	d->origins = NULL;
}
