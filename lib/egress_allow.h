/* egress_allow.h — which destinations a sandboxed run may reach through agor's egress proxy: the allowlist
 * (execution.sandbox.egress_allow plus the session's provider endpoint) and the classes of addresses that are
 * never reached by name alone (loopback, link-local, private, the host's own). Pure policy: no I/O but getifaddrs. */
#ifndef AGOR_EGRESS_ALLOW_H
#define AGOR_EGRESS_ALLOW_H

/*
 * Contract
 * --------
 * An allowlist is text of entries separated by commas or spaces; each entry is
 *   host            a DNS name (letters, digits, '.', '-', '_'; case-insensitive, a trailing '.' dropped)
 *   *.suffix        any name ending in ".suffix" (one label or more before it; never "suffix" itself)
 *   1.2.3.4 | [::1] an address literal
 * optionally followed by ":port" (1..65535). Without a port an entry allows ports 80 and 443 only.
 * egress_allow_check() is the config check (execution.sandbox.egress_allow): -1 with E_CONFIG naming the
 * entry and the expected form, *at its offset.
 *
 * egress_allow_match(a, host, port) → the first rule allowing that (normalised) name or literal and port,
 * or NULL. It says nothing about the addresses a name resolves to: the proxy asks egress_address_class() for
 * each, and an address of a class (loopback, link-local, private, unspecified, multicast, this host's own) is
 * reached only when egress_allow_names_address() finds a rule naming that literal address with that exact
 * port — so a name cannot be pointed at 127.0.0.1 (DNS rebinding) and an entry without a port never opens a
 * local service.
 */

#include <stddef.h>
#include <sys/socket.h>

#include "err.h"

struct egress_rule {
	char *host;   /* lower-case; for a wildcard the suffix with its leading '.' (".example.com") */
	int wildcard; /* "*.suffix" */
	int literal;  /* host is an IPv4 or IPv6 address (no brackets) */
	int port;     /* 0: 80 and 443 */
};

struct egress_allow {
	struct egress_rule *rules;
	size_t n;
};
#define EGRESS_ALLOW_INIT                                                                                              \
	{                                                                                                              \
		NULL, 0                                                                                                \
	}
/* The setting that holds the operator's allowlist. */
#define EGRESS_ALLOW_KEY "execution.sandbox.egress_allow"

int egress_allow_check(const char *list, size_t *at, struct err *e);
/* Adds list's entries (checked as above); -1 with e set on the first bad one. */
int egress_allow_parse(struct egress_allow *a, const char *list, struct err *e);
/* Adds one exact rule (the provider endpoint: host as in a URL, IPv6 without brackets). */
void egress_allow_add(struct egress_allow *a, const char *host, int port);
void egress_allow_release(struct egress_allow *a);

/* host normalised in place: lower-case, brackets and one trailing '.' dropped; -1 when it is no valid name or
 * literal (the proxy refuses such a request as malformed). */
int egress_host_normalise(char *host);
const struct egress_rule *egress_allow_match(const struct egress_allow *a, const char *host, int port);
/* NULL for a public address, else "loopback", "link-local", "private", "unspecified", "multicast" or "host"
 * (an address of one of this machine's interfaces). IPv4-mapped IPv6 addresses are judged by their IPv4. */
const char *egress_address_class(const struct sockaddr *sa);
int egress_allow_names_address(const struct egress_allow *a, const struct sockaddr *sa, int port);

#endif
