/* callback.h — how an executor reaches its daemon: the payload's daemonUrl, over the Unix socket or, for an executor on
 * another host, over TLS verified with the trust the payload carries (daemonCa, daemonFingerprint).
 * Never connects to a remote daemon without verifying it; never blames anything but the settings that decide it.
 *
 * Contract:
 *   callback_connect(target, opt, e) → a connected rpc_client (rpcclient.h), or NULL with e set. opt (may be NULL)
 *     gives the timeouts; its TLS fields are replaced by the target's: ca_pem verifies the chain and the host name,
 *     fingerprint pins the certificate's SHA-256 (alone: the pin is the trust anchor). A remote URL without either
 *     is refused (the daemon always sends one). A failure names the URL and, when TLS refused the daemon, the
 *     daemon's settings to check: execution.executor_daemon_url, _ca_file, _fingerprint (docs/config.md).
 *   callback_is_remote(url) → 1 for anything but a Unix socket ("unix:…" or an absolute path).
 */
#ifndef AGOR_CALLBACK_H
#define AGOR_CALLBACK_H

#include "err.h"
#include "rpcclient.h"

struct callback_target {
	const char *url;	 /* daemonUrl */
	const char *ca_pem;	 /* daemonCa, or NULL */
	const char *fingerprint; /* daemonFingerprint, or NULL */
};

struct rpc_client *callback_connect(const struct callback_target *t, const struct rpc_client_options *opt,
				    struct err *e);
int callback_is_remote(const char *url);

#endif
