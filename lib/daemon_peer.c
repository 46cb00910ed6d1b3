/* daemon_peer.c — the daemon's connections as its methods see them (daemon_peer.h): sending, replies that come
 * later, event subscribers. Never lets one slow subscriber stall the loop (net drops it); never shows an event to
 * a connection that is not its user's or an admin's. */
#include <string.h>

#include "daemon_peer.h"
#include "json.h"
#include "log.h"
#include "net.h"
#include "rpc.h"
#include "banned.h"

/* --- connections ------------------------------------------------------------------------------ */

void daemon_peer_send(struct daemon_peer *peer, const char *text)
{
	daemon_commit_write_batch(peer->d);
	net_send(peer->conn, text, strlen(text));
}

/* One answer of a reply (text parsed) that said ok, turned into the lost batch's error e, which then names what it
 * would have said (a clone's path, say: the retry takes what is there) and carries it in details.unstored; answers
 * that were errors already are kept. */
static json_t *answer_as_error(json_t *answer, const struct err *e)
{
	json_t *result = json_is_object(answer) ? json_object_get(answer, "result") : NULL;
	if (!result)
		return json_incref(answer);
	_cleanup_free_ char *said = json_to_compact(result);
	struct err lost = ERR_INIT;
	err_setd(&lost, e->code, json_pack("{s:O}", "unstored", result), "%s; it would have answered %.400s%s",
		 e->message, said, strlen(said) > 400 ? "…" : "");
	char *text = rpc_error_text(json_object_get(answer, "id"), &lost);
	err_clear(&lost);
	json_t *instead = json_loads(text, 0, NULL);
	free(text);
	return instead;
}

/* A reply (one answer or a batch's array of them) whose writes were in a batch that did not commit: every answer
 * that said ok says e instead, since what it reported is not stored. NULL when text is not JSON (sent as is). */
static char *reply_as_error(const char *text, const struct err *e)
{
	_cleanup_json_ json_t *reply = json_loads(text, 0, NULL);
	if (!reply)
		return NULL;
	json_t *instead;
	if (json_is_array(reply)) {
		instead = json_array();
		size_t i;
		json_t *one;
		json_array_foreach(reply, i, one) json_array_append_new(instead, answer_as_error(one, e));
	} else {
		instead = answer_as_error(reply, e);
	}
	char *out = json_to_compact(instead);
	json_decref(instead);
	return out;
}

void daemon_send_reply(struct daemon *d, struct net_conn *c, const char *text)
{
	struct err e = ERR_INIT;
	_cleanup_free_ char *instead = NULL;
	if (daemon_commit_write_batch_or_why(d, &e) < 0)
		instead = reply_as_error(text, &e);
	err_clear(&e);
	const char *out = instead ? instead : text;
	net_send(c, out, strlen(out));
}

void daemon_peer_reply(struct daemon_peer *peer, const char *text)
{
	daemon_send_reply(peer->d, peer->conn, text);
}

void daemon_peer_remember(struct daemon_peer *p, void *pending)
{
	if (p->npending == p->pending_alloc) {
		p->pending_alloc = p->pending_alloc ? p->pending_alloc * 2 : 4;
		p->pending = xrealloc(p->pending, p->pending_alloc * sizeof(*p->pending));
	}
	p->pending[p->npending++] = pending;
}

void daemon_peer_forget(struct daemon_peer *p, void *pending)
{
	for (size_t i = 0; i < p->npending; i++)
		if (p->pending[i] == pending) {
			p->pending[i] = p->pending[--p->npending];
			return;
		}
}

void daemon_peer_subscribe(struct daemon_peer *p)
{
	if (!p->subscribed)
		daemon_subscribe(p->d, p->conn);
	p->subscribed = 1;
}

/* --- events --------------------------------------------------------------------------------- */

void daemon_subscribe(struct daemon *d, struct net_conn *c)
{
	if (d->nsubscribers == d->subscribers_alloc) {
		d->subscribers_alloc = d->subscribers_alloc ? d->subscribers_alloc * 2 : 8;
		d->subscribers = xrealloc(d->subscribers, d->subscribers_alloc * sizeof(*d->subscribers));
	}
	d->subscribers[d->nsubscribers++] = c;
}

void daemon_unsubscribe(struct daemon *d, struct net_conn *c)
{
	for (size_t i = 0; i < d->nsubscribers; i++)
		if (d->subscribers[i] == c) {
			d->subscribers[i] = d->subscribers[--d->nsubscribers];
			return;
		}
}

static int is_user(const struct daemon_peer *p, const char *user_id)
{
	return user_id && p->user_id && !strcmp(p->user_id, user_id);
}

/* Whether c's peer sees an event whatever its list of users says: 1 without a list (everyone) or for an admin, 0
 * for a connection that is no peer; -1 when the list decides. */
static int sees_regardless_of_list(const struct daemon_peer *p, int has_list)
{
	if (!has_list || (p && p->is_admin))
		return 1;
	return p ? -1 : 0;
}

/* users NULL: everyone; else admins and the agor users of the NULL-terminated list users. */
static int may_see(const struct net_conn *c, const char *const *users)
{
	const struct daemon_peer *p = net_conn_get_data(c);
	int decided = sees_regardless_of_list(p, users != NULL);
	if (decided >= 0)
		return decided;
	for (; *users; users++)
		if (is_user(p, *users))
			return 1;
	return 0;
}

static void broadcast(struct daemon *d, const char *const *users, const char *type, json_t *data);

/* {a, b, NULL} without the NULL ones (a NULL user id means nobody but admins). */
#define USERS2(a, b) ((a) ? (const char *const[]){ (a), (b), NULL } : (const char *const[]){ (b), NULL })

static int has_watcher_among(struct daemon *d, const char *const *users)
{
	for (size_t i = 0; i < d->nsubscribers; i++)
		if (may_see(d->subscribers[i], users))
			return 1;
	return 0;
}

int daemon_has_watcher(struct daemon *d, const char *user_id)
{
	return has_watcher_among(d, USERS2(user_id, NULL));
}

void daemon_broadcast(struct daemon *d, const char *type, json_t *data)
{
	broadcast(d, NULL, type, data);
}

void daemon_broadcast_to(struct daemon *d, const char *user_id, const char *type, json_t *data)
{
	broadcast(d, USERS2(user_id, NULL), type, data);
}

void daemon_broadcast_to2(struct daemon *d, const char *user_id, const char *also_to, const char *type, json_t *data)
{
	broadcast(d, USERS2(user_id, also_to), type, data);
}

void daemon_broadcast_to_users(struct daemon *d, const char *const *users, const char *type, json_t *data)
{
	static const char *const nobody[] = { NULL };
	broadcast(d, users ? users : nobody, type, data);
}

/* An event pushed while a batch of writes is open: it tells of those writes, so it waits for their commit. Its text
 * and audience are kept in d->held_bytes, which lives from batch to batch: holding and releasing a burst's events
 * allocates nothing (freeing each event's text made the allocator hand its pages back at every commit). */
struct held_event {
	size_t text, len; /* in d->held_bytes */
	size_t users;	  /* in d->held_bytes: the user ids who (with admins) may see it, each ended by a NUL, then a
			   * NUL; SIZE_MAX: everyone */
};

#define HELD_BYTES_KEPT (1u << 20) /* more than this is given back once the events are released */

/* users (NULL: everyone) appended to d->held_bytes as "a\0b\0\0"; its offset, or SIZE_MAX for everyone */
static size_t hold_users(struct daemon *d, const char *const *users)
{
	if (!users)
		return SIZE_MAX;
	size_t at = d->held_bytes.len;
	for (const char *const *u = users; *u; u++)
		strbuf_add(&d->held_bytes, *u, strlen(*u) + 1);
	strbuf_addch(&d->held_bytes, '\0');
	return at;
}

/* The event whose text is d->held_bytes from text on waits in d->held_events. */
static void hold_event(struct daemon *d, const char *const *users, size_t text)
{
	if (d->nheld_events == d->held_events_alloc) {
		d->held_events_alloc = d->held_events_alloc ? d->held_events_alloc * 2 : 16;
		d->held_events = xrealloc(d->held_events, d->held_events_alloc * sizeof(*d->held_events));
	}
	size_t len = d->held_bytes.len - text;
	d->held_events[d->nheld_events++] =
		(struct held_event){ .text = text, .len = len, .users = hold_users(d, users) };
}

/* users_block: "a\0b\0\0" as hold_users wrote it, NULL: everyone. */
static int may_see_block(const struct net_conn *c, const char *users_block)
{
	const struct daemon_peer *p = net_conn_get_data(c);
	int decided = sees_regardless_of_list(p, users_block != NULL);
	if (decided >= 0)
		return decided;
	for (const char *u = users_block; *u; u += strlen(u) + 1)
		if (is_user(p, u))
			return 1;
	return 0;
}

static void send_held_event(struct daemon *d, const struct held_event *h)
{
	const char *text = d->held_bytes.buf + h->text;
	const char *users = h->users == SIZE_MAX ? NULL : d->held_bytes.buf + h->users;
	for (size_t i = 0; i < d->nsubscribers; i++)
		if (may_see_block(d->subscribers[i], users))
			net_send(d->subscribers[i], text,
				 h->len); /* a slow subscriber is dropped by net, not waited for */
}

static void forget_held_bytes(struct daemon *d)
{
	if (d->held_bytes.alloc > HELD_BYTES_KEPT)
		strbuf_release(&d->held_bytes);
	else
		strbuf_setlen(&d->held_bytes, 0);
}

void daemon_release_held_events(struct daemon *d, int send)
{
	if (!send && d->nheld_events)
		log_warn("%zu event(s) of a batch of writes that did not commit are dropped: they told of writes "
			 "that are not stored",
			 d->nheld_events);
	for (size_t i = 0; send && d->server && i < d->nheld_events; i++) /* no server: the daemon stops */
		send_held_event(d, &d->held_events[i]);
	d->nheld_events = 0;
	forget_held_bytes(d);
}

void daemon_free_held_events(struct daemon *d)
{
	daemon_release_held_events(d, 0);
	free(d->held_events);
	d->held_events = NULL;
	d->held_events_alloc = 0;
	strbuf_release(&d->held_bytes);
}

/* The event whose text is d->held_bytes from text on goes to the subscribers who may see it now, or waits while a
 * batch of writes is open (at most one loop round: the batch commits at its end). */
static void send_or_hold(struct daemon *d, const char *const *users, size_t text)
{
	if (d->write_batch_open) {
		hold_event(d, users, text);
		return;
	}
	for (size_t i = 0; i < d->nsubscribers; i++)
		if (may_see(d->subscribers[i], users))
			net_send(d->subscribers[i], d->held_bytes.buf + text, d->held_bytes.len - text);
	strbuf_setlen(&d->held_bytes, text);
}

void daemon_broadcast_message(struct daemon *d, const char *user_id, const char *also_to, const char *task_id,
			      const char *session_id, const char *message_type, const char *data_text)
{
	d->events_sent++;
	const char *const *users = USERS2(user_id, also_to);
	if (!has_watcher_among(d, users))
		return;
	size_t text = d->held_bytes.len;
	rpc_add_message_event(&d->held_bytes, task_id, session_id, message_type, data_text);
	send_or_hold(d, users, text);
}

static void broadcast(struct daemon *d, const char *const *users, const char *type, json_t *data)
{
	d->events_sent++;
	if (!d->nsubscribers) { /* nobody listens: do not even serialise it */
		json_decref(data);
		return;
	}
	char *event = rpc_event_text(type, data);
	size_t text = d->held_bytes.len;
	strbuf_addstr(&d->held_bytes, event);
	free(event);
	send_or_hold(d, users, text);
}

/* --- replies that come later ------------------------------------------------------------------ */

void daemon_reply_free(struct pending_reply *pr)
{
	if (pr->peer)
		daemon_peer_forget(pr->peer, pr);
	if (pr->id)
		json_decref(pr->id);
	if (pr->extra)
		json_decref(pr->extra);
	free(pr->kind);
	free(pr->row_id);
	free(pr);
}

static void pending_reply_detach(struct daemon_pending *pending)
{
	((struct pending_reply *)pending)->peer = NULL;
}

struct pending_reply *daemon_reply_new(struct rpc_ctx *rc, int wait, const char *kind, json_t *extra)
{
	struct pending_reply *pr = xcalloc(1, sizeof(*pr));
	pr->base.detach = pending_reply_detach;
	pr->kind = xstrdup(kind);
	pr->extra = extra;
	if (wait && rc && rc->id && !rc->in_batch) {
		pr->id = json_incref(rc->id);
		pr->peer = P(rc);
		daemon_peer_remember(pr->peer, pr);
	}
	return pr;
}

void daemon_pending_detach(void *pending)
{
	struct daemon_pending *p = pending;
	p->detach(p);
}

struct pending_reply *daemon_reply_defer(struct rpc_ctx *rc)
{
	return daemon_reply_new(rc, 1, "deferred", NULL);
}

void daemon_reply_finish(struct pending_reply *pr, json_t *result, const struct err *error)
{
	if (pr->peer && pr->id) {
		char *text = error ? rpc_error_text(pr->id, error) : rpc_result_text(pr->id, result);
		result = NULL;
		daemon_peer_reply(pr->peer, text);
		free(text);
	}
	if (result)
		json_decref(result);
	daemon_reply_free(pr);
}
