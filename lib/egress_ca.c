/* egress_ca.c — the egress proxy's per-task CA and its one leaf certificate (egress_ca.h), with mbedTLS 2.28. */
#include <arpa/inet.h>
#include <string.h>
#include <time.h>

#include <mbedtls/ecp.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/rsa.h>
#include <mbedtls/x509_crt.h>

#include "common.h"
#include "crypto.h"
#include "egress_ca.h"
#include "banned.h"

#define PEM_MAX	      4096
#define VALID_SECONDS (7 * 24 * 3600)
#define RSA_BITS      2048

struct egress_ca {
	char ca_pem[PEM_MAX];
	char leaf_pem[PEM_MAX];
	char leaf_key_pem[PEM_MAX];
};

struct issued {
	mbedtls_pk_context key;
	char name[160];
};

static int fail(struct err *e, int ret, const char *what)
{
	return err_set(e, E_SYSTEM, "egress CA: %s failed (-0x%04x)", what, (unsigned)-ret);
}

/* RSA, not ECDSA: mbedTLS 2.28 writes NULL parameters into an ECDSA signature's AlgorithmIdentifier, which RFC 5758
 * forbids and rustls (Codex) refuses; for sha256WithRSAEncryption NULL is what the RFC asks for. */
static int make_key(mbedtls_pk_context *key, struct err *e)
{
	int ret = mbedtls_pk_setup(key, mbedtls_pk_info_from_type(MBEDTLS_PK_RSA));
	if (!ret)
		ret = mbedtls_rsa_gen_key(mbedtls_pk_rsa(*key), crypto_mbedtls_rng, NULL, RSA_BITS, 65537);
	return ret ? fail(e, ret, "making an RSA key") : 0;
}

static void x509_time(time_t t, char out[16])
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 16, "%Y%m%d%H%M%S", &tm);
}

/* subjectAltName with one entry: dNSName [2] or iPAddress [7]. */
static size_t subject_alt_name(const char *host, unsigned char *der, size_t size)
{
	unsigned char ip[16];
	size_t n;
	unsigned char tag;
	const unsigned char *value;
	if (inet_pton(AF_INET, host, ip) == 1) {
		tag = 0x87, value = ip, n = 4;
	} else if (inet_pton(AF_INET6, host, ip) == 1) {
		tag = 0x87, value = ip, n = 16;
	} else {
		tag = 0x82, value = (const unsigned char *)host, n = strlen(host);
	}
	if (n > 120 || n + 4 > size)
		return 0;
	der[0] = 0x30, der[1] = (unsigned char)(n + 2), der[2] = tag, der[3] = (unsigned char)n;
	memcpy(der + 4, value, n);
	return n + 4;
}

/* Writes one certificate of subject (key) signed by issuer; PEM into out. */
static int sign(struct issued *subject, struct issued *issuer, int is_ca, const char *host, char *out, struct err *e)
{
	mbedtls_x509write_cert crt;
	mbedtls_mpi serial;
	mbedtls_x509write_crt_init(&crt);
	mbedtls_mpi_init(&serial);
	unsigned char raw[16], san[128];
	char from[16], to[16];
	time_t now = time(NULL);
	x509_time(now - 3600, from);
	x509_time(now + VALID_SECONDS, to);
	int ret = crypto_mbedtls_rng(NULL, raw, sizeof(raw));
	raw[0] &= 0x7f; /* a positive serial */
	if (!ret)
		ret = mbedtls_mpi_read_binary(&serial, raw, sizeof(raw));
	mbedtls_x509write_crt_set_version(&crt, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&crt, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&crt, &subject->key);
	mbedtls_x509write_crt_set_issuer_key(&crt, &issuer->key);
	if (!ret)
		ret = mbedtls_x509write_crt_set_subject_name(&crt, subject->name);
	if (!ret)
		ret = mbedtls_x509write_crt_set_issuer_name(&crt, issuer->name);
	if (!ret)
		ret = mbedtls_x509write_crt_set_serial(&crt, &serial);
	if (!ret)
		ret = mbedtls_x509write_crt_set_validity(&crt, from, to);
	if (!ret)
		ret = mbedtls_x509write_crt_set_basic_constraints(&crt, is_ca, is_ca ? 0 : -1);
	if (!ret)
		ret = mbedtls_x509write_crt_set_key_usage(&crt, is_ca ? MBEDTLS_X509_KU_KEY_CERT_SIGN |
										MBEDTLS_X509_KU_CRL_SIGN
								      : MBEDTLS_X509_KU_DIGITAL_SIGNATURE);
	if (!ret)
		ret = mbedtls_x509write_crt_set_subject_key_identifier(&crt);
	if (!ret && !is_ca)
		ret = mbedtls_x509write_crt_set_authority_key_identifier(&crt);
	size_t n = is_ca ? 0 : subject_alt_name(host, san, sizeof(san));
	if (!ret && !is_ca)
		ret = n ? mbedtls_x509write_crt_set_extension(&crt, MBEDTLS_OID_SUBJECT_ALT_NAME,
							      MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME), 0, san, n)
			: MBEDTLS_ERR_X509_BAD_INPUT_DATA;
	if (!ret)
		ret = mbedtls_x509write_crt_pem(&crt, (unsigned char *)out, PEM_MAX, crypto_mbedtls_rng, NULL);
	mbedtls_x509write_crt_free(&crt);
	mbedtls_mpi_free(&serial);
	return ret ? fail(e, ret, is_ca ? "signing the CA certificate" : "signing the provider's certificate") : 0;
}

struct egress_ca *egress_ca_new(const char *host, struct err *e)
{
	struct egress_ca *ca = xcalloc(1, sizeof(*ca));
	struct issued root, leaf;
	mbedtls_pk_init(&root.key);
	mbedtls_pk_init(&leaf.key);
	unsigned char tag[4];
	char hex[9];
	crypto_mbedtls_rng(NULL, tag, sizeof(tag));
	crypto_hex(tag, sizeof(tag), hex);
	snprintf(root.name, sizeof(root.name), "CN=agor egress CA %s,O=agor", hex);
	snprintf(leaf.name, sizeof(leaf.name), "CN=%.120s", host);
	int rc = make_key(&root.key, e) == 0 && make_key(&leaf.key, e) == 0 &&
				 sign(&root, &root, 1, host, ca->ca_pem, e) == 0 &&
				 sign(&leaf, &root, 0, host, ca->leaf_pem, e) == 0
			 ? 0
			 : -1;
	int ret = rc == 0 ? mbedtls_pk_write_key_pem(&leaf.key, (unsigned char *)ca->leaf_key_pem, PEM_MAX) : 0;
	if (ret)
		rc = fail(e, ret, "writing the provider certificate's key");
	mbedtls_pk_free(&root.key); /* the CA's key: gone, nothing else can be issued */
	mbedtls_pk_free(&leaf.key);
	if (rc < 0) {
		egress_ca_free(ca);
		return NULL;
	}
	return ca;
}

const char *egress_ca_pem(const struct egress_ca *ca)
{
	return ca->ca_pem;
}

const char *egress_ca_leaf_pem(const struct egress_ca *ca)
{
	return ca->leaf_pem;
}

const char *egress_ca_leaf_key_pem(const struct egress_ca *ca)
{
	return ca->leaf_key_pem;
}

void egress_ca_free(struct egress_ca *ca)
{
	if (!ca)
		return;
	explicit_bzero(ca, sizeof(*ca));
	free(ca);
}
