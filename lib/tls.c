/* tls.c — mbedTLS 2.28 configs and sessions behind tls.h (TLS 1.2 minimum, kernel randomness, MSG_NOSIGNAL I/O).
 * Never completes a client handshake without a verified chain or a matching pin; never raises SIGPIPE. */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "tls.h"
#include "banned.h"

struct tls_config {
	int is_server;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt own_cert;
	mbedtls_pk_context own_key;
	mbedtls_x509_crt ca;
	int have_pin;
	unsigned char pin[32];
};

struct tls {
	struct tls_config *cfg;
	mbedtls_ssl_context ssl;
	int fd;
	size_t write_pending; /* length handed to an mbedtls_ssl_write that has not completed */
	int handshake_done;
};

static int tls_fail(struct err *e, int ret, const char *what)
{
	char buf[160];
	mbedtls_strerror(ret, buf, sizeof(buf));
	return err_set(e, E_SYSTEM, "%s: %s (-0x%04x)", what, buf, (unsigned)-ret);
}

/* mbedTLS f_rng: the kernel CSPRNG, nothing else (works in an empty root). */
static int kernel_rng(void *ctx, unsigned char *buf, size_t len)
{
	(void)ctx;
	size_t off = 0;
	while (off < len) {
		ssize_t n = getrandom(buf + off, len - off, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return MBEDTLS_ERR_ENTROPY_SOURCE_FAILED;
		off += (size_t)n;
	}
	return 0;
}

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	int fd = *(int *)ctx;
	for (;;) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n >= 0)
			return (int)n;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return MBEDTLS_ERR_SSL_WANT_WRITE;
		return (errno == EPIPE || errno == ECONNRESET) ? MBEDTLS_ERR_NET_CONN_RESET
							       : MBEDTLS_ERR_NET_SEND_FAILED;
	}
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	int fd = *(int *)ctx;
	for (;;) {
		ssize_t n = recv(fd, buf, len, 0);
		if (n >= 0)
			return (int)n;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return MBEDTLS_ERR_SSL_WANT_READ;
		return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
	}
}

static struct tls_config *config_alloc(int is_server)
{
	struct tls_config *cfg = xcalloc(1, sizeof(*cfg));
	cfg->is_server = is_server;
	mbedtls_ssl_config_init(&cfg->conf);
	mbedtls_x509_crt_init(&cfg->own_cert);
	mbedtls_pk_init(&cfg->own_key);
	mbedtls_x509_crt_init(&cfg->ca);
	return cfg;
}

void tls_config_free(struct tls_config *cfg)
{
	if (!cfg)
		return;
	mbedtls_ssl_config_free(&cfg->conf);
	mbedtls_x509_crt_free(&cfg->own_cert);
	mbedtls_pk_free(&cfg->own_key);
	mbedtls_x509_crt_free(&cfg->ca);
	explicit_bzero(cfg, sizeof(*cfg));
	free(cfg);
}

static int config_defaults(struct tls_config *cfg, struct err *e)
{
	int ret =
		mbedtls_ssl_config_defaults(&cfg->conf, cfg->is_server ? MBEDTLS_SSL_IS_SERVER : MBEDTLS_SSL_IS_CLIENT,
					    MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
	if (ret)
		return tls_fail(e, ret, "TLS configuration");
	mbedtls_ssl_conf_rng(&cfg->conf, kernel_rng, NULL);
	mbedtls_ssl_conf_min_version(&cfg->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
	return 0;
}

/* A server config whose certificate and key are loaded and match: defaults and the certificate in force, or NULL
 * (cfg freed) with e set. */
static struct tls_config *server_config_finish(struct tls_config *cfg, struct err *e)
{
	int ret;
	if (config_defaults(cfg, e) < 0)
		goto fail;
	if ((ret = mbedtls_ssl_conf_own_cert(&cfg->conf, &cfg->own_cert, &cfg->own_key)) != 0) {
		tls_fail(e, ret, "TLS certificate");
		goto fail;
	}
	return cfg;
fail:
	tls_config_free(cfg);
	return NULL;
}

struct tls_config *tls_server_config_new(const char *cert_file, const char *key_file, struct err *e)
{
	struct tls_config *cfg = config_alloc(1);
	int ret;
	if ((ret = mbedtls_x509_crt_parse_file(&cfg->own_cert, cert_file)) != 0) {
		tls_fail(e, ret, "reading the TLS certificate");
		err_prefix(e, "%s", cert_file);
		goto fail;
	}
	if ((ret = mbedtls_pk_parse_keyfile(&cfg->own_key, key_file, NULL)) != 0) {
		tls_fail(e, ret, "reading the TLS key");
		err_prefix(e, "%s", key_file);
		goto fail;
	}
	if ((ret = mbedtls_pk_check_pair(&cfg->own_cert.pk, &cfg->own_key)) != 0) {
		tls_fail(e, ret, "the TLS key does not match the certificate");
		goto fail;
	}
	return server_config_finish(cfg, e);
fail:
	tls_config_free(cfg);
	return NULL;
}

struct tls_config *tls_server_config_new_pem(const char *cert_pem, const char *key_pem, struct err *e)
{
	struct tls_config *cfg = config_alloc(1);
	int ret;
	if ((ret = mbedtls_x509_crt_parse(&cfg->own_cert, (const unsigned char *)cert_pem, strlen(cert_pem) + 1)) !=
		    0 ||
	    (ret = mbedtls_pk_parse_key(&cfg->own_key, (const unsigned char *)key_pem, strlen(key_pem) + 1, NULL, 0)) !=
		    0 ||
	    (ret = mbedtls_pk_check_pair(&cfg->own_cert.pk, &cfg->own_key)) != 0) {
		tls_fail(e, ret, "the TLS certificate and key in memory");
		goto fail;
	}
	return server_config_finish(cfg, e);
fail:
	tls_config_free(cfg);
	return NULL;
}

static int is_readable_file(const char *path)
{
	struct stat st;
	return path && *path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

const char *tls_default_ca_file(void)
{
	static const char *const bundles[] = {
		"/etc/ssl/certs/ca-certificates.crt",
		"/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/cert.pem",
	};
	const char *env = getenv("SSL_CERT_FILE");
	if (is_readable_file(env))
		return env;
	for (size_t i = 0; i < ARRAY_SIZE(bundles); i++)
		if (is_readable_file(bundles[i]))
			return bundles[i];
	return NULL;
}

static int load_ca(struct tls_config *cfg, const char *ca_file, struct err *e)
{
	int ret;
	if (ca_file) {
		if ((ret = mbedtls_x509_crt_parse_file(&cfg->ca, ca_file)) != 0) {
			tls_fail(e, ret, "reading CA certificates");
			err_prefix(e, "%s", ca_file);
			return -1;
		}
		return 0;
	}
	const char *file = tls_default_ca_file();
	const char *dir = getenv("SSL_CERT_DIR");
	ret = -1;
	if (file)
		ret = mbedtls_x509_crt_parse_file(&cfg->ca, file); /* > 0: some entries skipped, fine for a bundle */
	if (ret < 0 && dir && *dir)
		ret = mbedtls_x509_crt_parse_path(&cfg->ca, dir);
	if (ret < 0 || cfg->ca.version == 0)
		return err_set(e, E_CONFIG, "no CA certificates found (set SSL_CERT_FILE or pass a CA file)");
	return 0;
}

static int parse_pin(struct tls_config *cfg, const char *pin, struct err *e)
{
	size_t n = 0;
	for (const char *s = pin; *s; s++) {
		if (*s == ':')
			continue;
		if (!isxdigit((unsigned char)*s) || n >= 64)
			return err_set(e, E_CONFIG, "pin_sha256 must be 64 hex digits (colons allowed)");
		int v = isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
		cfg->pin[n / 2] = (unsigned char)(n % 2 ? cfg->pin[n / 2] | v : v << 4);
		n++;
	}
	if (n != 64)
		return err_set(e, E_CONFIG, "pin_sha256 must be 64 hex digits (colons allowed)");
	cfg->have_pin = 1;
	return 0;
}

/* A client config whose trust is a pin, or CA certificates load_trust() put in cfg->ca, or both. */
static struct tls_config *client_config(int have_ca, const char *ca_file, const char *ca_pem, const char *pin_sha256,
					struct err *e)
{
	struct tls_config *cfg = config_alloc(0);
	int pin_only = pin_sha256 && *pin_sha256 && !have_ca;
	int ret;
	if (pin_sha256 && *pin_sha256 && parse_pin(cfg, pin_sha256, e) < 0)
		goto fail;
	if (ca_pem &&
	    (ret = mbedtls_x509_crt_parse(&cfg->ca, (const unsigned char *)ca_pem, strlen(ca_pem) + 1)) != 0) {
		tls_fail(e, ret, "reading the CA certificates (PEM)");
		goto fail;
	}
	if (!pin_only && !ca_pem && load_ca(cfg, ca_file, e) < 0)
		goto fail;
	if (config_defaults(cfg, e) < 0)
		goto fail;
	if (pin_only) {
		mbedtls_ssl_conf_authmode(&cfg->conf,
					  MBEDTLS_SSL_VERIFY_NONE); /* the pin is checked after the handshake */
	} else {
		mbedtls_ssl_conf_authmode(&cfg->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
		mbedtls_ssl_conf_ca_chain(&cfg->conf, &cfg->ca, NULL);
	}
	return cfg;
fail:
	tls_config_free(cfg);
	return NULL;
}

struct tls_config *tls_client_config_new(const char *ca_file, const char *pin_sha256, struct err *e)
{
	return client_config(ca_file != NULL, ca_file, NULL, pin_sha256, e);
}

struct tls_config *tls_client_config_new_pem(const char *ca_pem, const char *pin_sha256, struct err *e)
{
	return client_config(ca_pem != NULL, NULL, ca_pem, pin_sha256, e);
}

struct tls *tls_new(struct tls_config *cfg, int fd, const char *hostname, struct err *e)
{
	struct tls *t = xcalloc(1, sizeof(*t));
	t->cfg = cfg;
	t->fd = fd;
	mbedtls_ssl_init(&t->ssl);
	int ret = mbedtls_ssl_setup(&t->ssl, &cfg->conf);
	if (ret == 0 && !cfg->is_server && hostname)
		ret = mbedtls_ssl_set_hostname(&t->ssl, hostname);
	if (ret) {
		tls_fail(e, ret, "TLS session");
		tls_free(t);
		return NULL;
	}
	mbedtls_ssl_set_bio(&t->ssl, &t->fd, bio_send, bio_recv, NULL);
	return t;
}

void tls_free(struct tls *t)
{
	if (!t)
		return;
	mbedtls_ssl_free(&t->ssl);
	free(t);
}

static int check_pin(struct tls *t, struct err *e)
{
	const mbedtls_x509_crt *peer = mbedtls_ssl_get_peer_cert(&t->ssl);
	unsigned char digest[32];
	if (!peer)
		return err_set(e, E_AUTH_FAILED, "TLS: the server sent no certificate");
	mbedtls_sha256_ret(peer->raw.p, peer->raw.len, digest, 0);
	unsigned char diff = 0;
	for (size_t i = 0; i < sizeof(digest); i++)
		diff |= (unsigned char)(digest[i] ^ t->cfg->pin[i]);
	if (diff)
		return err_set(e, E_AUTH_FAILED, "TLS: the server certificate does not match the pinned SHA-256");
	return 0;
}

static int verify_failure(struct tls *t, int ret, struct err *e)
{
	uint32_t flags = mbedtls_ssl_get_verify_result(&t->ssl);
	if (ret == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags) {
		char info[256];
		mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags);
		size_t n = strlen(info);
		while (n && info[n - 1] == '\n')
			info[--n] = '\0';
		for (char *s = info; *s; s++)
			if (*s == '\n')
				*s = ';';
		return err_set(e, E_AUTH_FAILED, "TLS: server certificate verification failed: %s", info);
	}
	return tls_fail(e, ret, "TLS handshake");
}

int tls_handshake(struct tls *t, struct err *e)
{
	if (t->handshake_done)
		return 0;
	int ret = mbedtls_ssl_handshake(&t->ssl);
	if (ret == MBEDTLS_ERR_SSL_WANT_READ)
		return TLS_WANT_READ;
	if (ret == MBEDTLS_ERR_SSL_WANT_WRITE)
		return TLS_WANT_WRITE;
	if (ret) {
		verify_failure(t, ret, e);
		return TLS_ERROR;
	}
	if (!t->cfg->is_server && t->cfg->have_pin && check_pin(t, e) < 0)
		return TLS_ERROR;
	t->handshake_done = 1;
	return 0;
}

ssize_t tls_read(struct tls *t, void *buf, size_t len, struct err *e)
{
	int ret = mbedtls_ssl_read(&t->ssl, buf, len);
	if (ret > 0)
		return ret;
	switch (ret) {
	case 0:
	case MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY:
	case MBEDTLS_ERR_SSL_CONN_EOF:
		return 0;
	case MBEDTLS_ERR_SSL_WANT_READ:
		return TLS_WANT_READ;
	case MBEDTLS_ERR_SSL_WANT_WRITE:
		return TLS_WANT_WRITE;
	default:
		tls_fail(e, ret, "TLS read");
		return TLS_ERROR;
	}
}

ssize_t tls_write(struct tls *t, const void *buf, size_t len, struct err *e)
{
	if (t->write_pending)
		len = t->write_pending; /* mbedTLS must see the same call again */
	int ret = mbedtls_ssl_write(&t->ssl, buf, len);
	if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) {
		t->write_pending = len;
		return ret == MBEDTLS_ERR_SSL_WANT_READ ? TLS_WANT_READ : TLS_WANT_WRITE;
	}
	t->write_pending = 0;
	if (ret < 0) {
		tls_fail(e, ret, "TLS write");
		return TLS_ERROR;
	}
	return ret;
}

void tls_close_notify(struct tls *t)
{
	if (t->handshake_done)
		(void)mbedtls_ssl_close_notify(&t->ssl);
}

int tls_pending(const struct tls *t)
{
	return mbedtls_ssl_get_bytes_avail(&t->ssl) > 0 || mbedtls_ssl_check_pending(&t->ssl);
}
