/* origin.h — which web origins may call the daemon from a browser: its own (the scheme, host and port it serves on,
 * and for a loopback or wildcard host the names localhost, 127.0.0.1 and [::1]) plus daemon.allowed_origins.
 * Never lets a page on another origin — another host, port or scheme, "null", a malformed value — through.
 *
 * Contract:
 *   An origin is compared in one canonical form, "scheme://host:port" (url.h's url_origin: scheme and host
 *   lower-cased, the default port written out, an IPv6 literal in brackets and in inet_ntop's form), so case, an
 *   explicit default port or an IPv6 spelling never decide. Only http and https origins exist here; an origin has
 *   no userinfo and nothing after the port (no path, query or fragment).
 *   origin_list_check(list, &at, e) — the check of daemon.allowed_origins: origins separated by commas and/or
 *     spaces. -1 (E_CONFIG, naming the entry and the expected form) with *at its byte offset.
 *   origin_set_new(tls, host, port, list) — the daemon's own origins for daemon.host `host` (a name, an IPv4 or
 *     IPv6 address; "0.0.0.0", "::" and "" mean every address) and the bound TCP port, plus those of `list` (NULL:
 *     none; it must pass origin_list_check, entries that do not are left out).
 *   origin_allowed(set, value) — 1 when an Origin header value names an origin of the set, else 0.
 *   origin_set_text(set) — the set, space-separated, for the log (a new string).
 */
#ifndef AGOR_ORIGIN_H
#define AGOR_ORIGIN_H

#include <stddef.h>

#include "err.h"

struct origin_set;

int origin_list_check(const char *list, size_t *at, struct err *e);
struct origin_set *origin_set_new(int tls, const char *host, int port, const char *list);
void origin_set_free(struct origin_set *set);
int origin_allowed(const struct origin_set *set, const char *value);
char *origin_set_text(const struct origin_set *set);

#endif
