/* egress.h — agor's egress proxy: the only way out of a sandbox whose network is `proxy`. An HTTP forward proxy
 * (CONNECT and absolute-URI requests) run by the executor outside the sandbox, on a Unix socket that the sandbox's
 * relay (sandbox.h, 127.0.0.1:SANDBOX_EGRESS_PORT inside) forwards to. It reaches only allowed destinations
 * (egress_allow.h), puts the real API key in place of the run's sentinel only on requests to the provider, and
 * reports every refusal. It never lets the sentinel go anywhere else and never hands the key to the sandbox. */
#ifndef AGOR_EGRESS_H
#define AGOR_EGRESS_H

/*
 * Contract
 * --------
 *   struct egress *eg = egress_open(&cfg, e);     // a private directory and the listening Unix socket
 *   ... bind egress_dir(eg) read-only into the sandbox; the relay inside connects to egress_socket_path(eg)
 *   egress_set_credential(eg, sentinel, key);     // optional: copies both; the caller wipes its own key
 *   egress_launch(eg, e);                         // forks the proxy (once; later calls do nothing)
 *   ... the run ...
 *   json_t *fresh = egress_take_new(eg);          // optional, while the run lives (see below)
 *   json_t *report = egress_finish(eg);           // stops the proxy: {"refused": [...], "dropped": N} or NULL
 *   egress_free(eg);
 *
 * The directory (/tmp/agor-egress-XXXXXX) is 0700 and owned by whoever the sandboxed run is (cfg.run_uid: the
 * executor itself, or a root executor's root_maps_to); the socket in it is 0666 for that reason. Anyone who can
 * reach the socket can use the proxy, so only the run's own view holds the directory. egress_open() first removes
 * such directories of the same owner that a proxy killed outright left behind (older than a minute, no listener).
 *
 * The proxy (one process, a child process per connection, at most 128 at once — the rest wait in the backlog;
 * killed with the executor) reads a request head of at most 32 KiB within 30 s:
 *   CONNECT host:port           → the destination decided, then a tunnel of raw bytes ("200 Connection
 *                                 established"); bytes towards any destination but the provider are scanned for
 *                                 the sentinel, and the tunnel is cut before one would leave.
 *   METHOD http://host[:port]/… → the destination decided, the request sent in origin form with
 *                                 "Connection: close" (Proxy-* headers dropped); for the provider the sentinel
 *                                 in x-api-key, Authorization or x-goog-api-key is replaced by the key; the
 *                                 response's head gets "Connection: close" too, so a client never reuses the
 *                                 connection. An https provider is never the provider here (no key in clear).
 *   anything else (https:// absolute URIs, userinfo, origin-form) → 400.
 *   CONNECT provider:port       → with cfg.provider_tls the proxy terminates the agent's TLS itself, with a
 *                                 certificate for the provider host signed by a CA made for this run
 *                                 (egress_ca.h: its key only in memory, wiped once the one certificate is
 *                                 signed); reads one request, swaps the sentinel as above, and sends it on over
 *                                 TLS to the provider, verified against cfg.upstream_ca_file or the system
 *                                 bundle (host name included); the response gets "Connection: close". The agent
 *                                 trusts that CA through egress_ca_file()/egress_ca_bundle() (execrun.h).
 * A destination is allowed when egress_allow_match() knows its name and port; names are resolved here,
 * outside, and an address of a local class is used only when a rule names it exactly (egress_allow.h).
 * Refusals answer "403 Forbidden" with the reason and are reported: {"host", "port", "reason", "count"}
 * with reason one of "not-allowed", "resolve-failed", "loopback", "link-local", "private", "unspecified",
 * "multicast", "host" (the address's class), "sentinel" (the run's sentinel sent to a destination that is
 * not the provider) or "malformed". Identical refusals are counted in one entry; past EGRESS_MAX_REPORTED
 * entries the rest are only counted ("dropped").
 */

#include <sys/types.h>

#include <jansson.h>

#include "err.h"
#include "strbuf.h"

#define EGRESS_MAX_REPORTED    100
#define EGRESS_SENTINEL_PREFIX "agor-sentinel-"

struct egress_config {
	const char *allow;	   /* execution.sandbox.egress_allow, or NULL */
	const char *provider_host; /* the session's provider endpoint (allowed; gets the key), or NULL */
	int provider_port;
	int provider_tls;	      /* the provider endpoint is https: its TLS is terminated here (below) */
	const char *upstream_ca_file; /* verifies the provider upstream; NULL: the system bundle */
	uid_t run_uid;		      /* who the sandboxed run is: the directory's owner */
};

struct egress;

struct egress *egress_open(const struct egress_config *cfg, struct err *e);
const char *egress_dir(const struct egress *eg);
const char *egress_socket_path(const struct egress *eg);
/* An https provider: the per-task CA certificate, and the same followed by the system bundle (NULL otherwise). */
const char *egress_ca_file(const struct egress *eg);
const char *egress_ca_bundle(const struct egress *eg);
void egress_set_credential(struct egress *eg, const char *sentinel, const char *key);
int egress_launch(struct egress *eg, struct err *e);
/* While the run lives: the pipe refusals arrive on (poll it for POLLIN), and the refusals not seen before since
 * the last call (a new array; each entry also marked "reported": true in the final report, so the daemon
 * audits and announces it only once). */
int egress_report_fd(const struct egress *eg);
json_t *egress_take_new(struct egress *eg);
json_t *egress_finish(struct egress *eg);
void egress_free(struct egress *eg);

/* A fresh sentinel: EGRESS_SENTINEL_PREFIX and 32 hex digits (malloc'd). */
char *egress_new_sentinel(void);

/* How the proxy reads a request head the sandboxed agent sent (the bytes up to and including its blank line; a
 * seam for the fuzz target, no I/O): the request line as the proxy's first read (origin_form 0: CONNECT
 * host:port or an http:// absolute URI) or inside a terminated tunnel (origin_form 1: METHOD /path), and, but
 * for CONNECT, the head as it goes upstream. For the provider (provider_key set) sentinel becomes the key in the
 * authentication headers, as on the wire. 0 and *out filled (release with egress_head_release), or -1: refused
 * as malformed. */
struct egress_head {
	char method[16];
	char host[256]; /* normalised; empty in origin form */
	int port;
	int is_connect;
	char *path;	       /* absolute URI and origin form: the path sent upstream */
	struct strbuf forward; /* but for CONNECT: the rewritten head */
};
int egress_parse_head(const char *head, size_t len, int origin_form, const char *sentinel, const char *provider_key,
		      struct egress_head *out);
void egress_head_release(struct egress_head *h);

#endif
