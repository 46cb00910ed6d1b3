/* callback.c — an executor's connection to its daemon (callback.h): the Unix socket, or TLS with the payload's trust.
 * Never lets a remote daemon go unverified. */
#include <string.h>

#include "callback.h"
#include "banned.h"

int callback_is_remote(const char *url)
{
	return url && strncmp(url, "unix:", 5) && url[0] != '/';
}

struct rpc_client *callback_connect(const struct callback_target *t, const struct rpc_client_options *opt,
				    struct err *e)
{
	struct rpc_client_options o = opt ? *opt : (struct rpc_client_options){ 0 };
	int remote = callback_is_remote(t->url);
	o.ca_file = NULL;
	o.ca_pem = remote ? t->ca_pem : NULL;
	o.pin_sha256 = remote ? t->fingerprint : NULL;
	if (remote && !o.ca_pem && !o.pin_sha256) {
		err_set(e, E_INVALID_PAYLOAD,
			"daemonUrl %s: a remote daemon is verified with daemonCa or daemonFingerprint "
			"and the payload has neither (set execution.executor_daemon_ca_file or "
			"execution.executor_daemon_fingerprint on the daemon)",
			t->url);
		return NULL;
	}
	struct rpc_client *c = rpc_client_connect(t->url, &o, e);
	if (c)
		return c;
	if (remote && e->code && !strcmp(e->code, E_AUTH_FAILED))
		err_prefix(
			e,
			"the daemon at %s was refused (check execution.executor_daemon_%s against the certificate of "
			"daemon.tls_cert, and execution.executor_daemon_url's host name)",
			t->url,
			o.ca_pem && o.pin_sha256 ? "ca_file and _fingerprint"
			: o.ca_pem		 ? "ca_file"
						 : "fingerprint");
	else
		err_prefix(e, "connecting to the daemon at %s", t->url);
	return NULL;
}
