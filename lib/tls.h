/* tls.h — TLS over a (usually non-blocking) socket with mbedTLS 2.28: a server config from PEM files, a client
 * config that verifies against a CA bundle and/or pins the server certificate's SHA-256, and per-socket sessions.
 * Never accepts a server it could not verify (or whose pin differs); never sends anything but TLS 1.2 records.
 *
 * Contract:
 *   - Operations never block by themselves: on a non-blocking socket they return TLS_WANT_READ or
 *     TLS_WANT_WRITE (wait for that readiness, then call again). On a blocking socket they simply block.
 *   - tls_read() returns plaintext bytes (> 0), 0 on a clean close (close_notify or TCP EOF), TLS_WANT_*,
 *     or TLS_ERROR with e set. A read may want to write (TLS_WANT_WRITE). Plaintext already decrypted or a
 *     record already received is invisible to epoll: keep reading until TLS_WANT_READ, or ask tls_pending().
 *   - tls_write() returns bytes written (> 0), TLS_WANT_*, or TLS_ERROR. After TLS_WANT_*, call it again with
 *     the SAME bytes (the session remembers how many it took, so a longer buffer is fine as long as it
 *     starts with the same bytes). It writes at most one record (16 KiB) per call.
 *   - Client configs: ca_file NULL = the distribution bundle (SSL_CERT_FILE, SSL_CERT_DIR, then the usual
 *     paths); pin_sha256 = 64 hex digits (colons allowed) of the server certificate's DER. With a pin and no
 *     explicit ca_file the pin alone decides (a self-signed daemon certificate works); with both, both must
 *     pass. The host name is checked against the certificate whenever the chain is verified.
 */
#ifndef AGOR_TLS_H
#define AGOR_TLS_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

enum { TLS_ERROR = -1, TLS_WANT_READ = -2, TLS_WANT_WRITE = -3 };

struct tls_config;
struct tls;

struct tls_config *tls_server_config_new(const char *cert_file, const char *key_file, struct err *e);
/* The same from PEM text in memory (a certificate made on the spot: egress_ca.h). */
struct tls_config *tls_server_config_new_pem(const char *cert_pem, const char *key_pem, struct err *e);
struct tls_config *tls_client_config_new(const char *ca_file, const char *pin_sha256, struct err *e);
/* The same with the CA certificates as PEM text (NULL: the pin alone, or the bundle without a pin). */
struct tls_config *tls_client_config_new_pem(const char *ca_pem, const char *pin_sha256, struct err *e);
void tls_config_free(struct tls_config *cfg);

/* A session on fd (not owned: the caller closes it). hostname: the name to verify (client side). */
struct tls *tls_new(struct tls_config *cfg, int fd, const char *hostname, struct err *e);
void tls_free(struct tls *t);

/* 0 when the handshake is complete (and, for a client, the certificate verified and pinned). */
int tls_handshake(struct tls *t, struct err *e);
ssize_t tls_read(struct tls *t, void *buf, size_t len, struct err *e);
ssize_t tls_write(struct tls *t, const void *buf, size_t len, struct err *e);
/* Sends close_notify (best effort, never waits). */
void tls_close_notify(struct tls *t);
/* 1 when decrypted bytes or unprocessed records are buffered inside the session. */
int tls_pending(const struct tls *t);

/* The system CA bundle the client falls back to, or NULL (SSL_CERT_FILE, then distribution paths). */
const char *tls_default_ca_file(void);

#endif
