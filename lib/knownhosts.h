/* knownhosts.h — the host keys an OpenSSH known_hosts text lists for one ssh server (execution.git.known_hosts).
 *
 * Contract:
 *   known_hosts_keys(text, host, port) → a new JSON array of "TYPE BASE64" strings: the keys of every line whose
 *     host patterns match host (port 22) or "[host]:port" (another port), as ssh matches them: a comma-separated
 *     list of names with * and ? wildcards, "!" negating, or one hashed name (|1|SALT|HMAC-SHA1, ssh-keygen -H).
 *     A key a @revoked line lists is never returned; @cert-authority lines are skipped (agor trusts keys, not
 *     CAs); comments, blank and malformed lines are skipped. Empty when nothing matches: no trust on first use.
 */
#ifndef AGOR_KNOWNHOSTS_H
#define AGOR_KNOWNHOSTS_H

#include <jansson.h>

json_t *known_hosts_keys(const char *text, const char *host, int port);

#endif
