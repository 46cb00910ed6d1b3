/* sshkey.c — an OpenSSH ECDSA private key parsed in memory and signing with it on mbedTLS (sshkey.h). */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "crypto.h"
#include "sshkey.h"
#include "strbuf.h"
#include "banned.h"

#define PEM_BEGIN  "-----BEGIN OPENSSH PRIVATE KEY-----"
#define PEM_END	   "-----END OPENSSH PRIVATE KEY-----"
#define AUTH_MAGIC "openssh-key-v1"

/* The curves ssh and mbedTLS share, with the hash each signs with. */
static const struct {
	const char *type, *curve;
	mbedtls_ecp_group_id group;
	mbedtls_md_type_t md;
} curves[] = {
	{ "ecdsa-sha2-nistp256", "nistp256", MBEDTLS_ECP_DP_SECP256R1, MBEDTLS_MD_SHA256 },
	{ "ecdsa-sha2-nistp384", "nistp384", MBEDTLS_ECP_DP_SECP384R1, MBEDTLS_MD_SHA384 },
	{ "ecdsa-sha2-nistp521", "nistp521", MBEDTLS_ECP_DP_SECP521R1, MBEDTLS_MD_SHA512 },
};

/* --- SSH wire format: uint32 lengths, big-endian ------------------------------------------------ */

struct reader {
	const unsigned char *p;
	size_t n;
};

static int read_u32(struct reader *r, uint32_t *v)
{
	if (r->n < 4)
		return -1;
	*v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->n -= 4;
	return 0;
}

static int read_string(struct reader *r, const unsigned char **s, size_t *len)
{
	uint32_t n;
	if (read_u32(r, &n) < 0 || n > r->n)
		return -1;
	*s = r->p;
	*len = n;
	r->p += n;
	r->n -= n;
	return 0;
}

static int string_is(const unsigned char *s, size_t len, const char *want)
{
	return len == strlen(want) && !memcmp(s, want, len);
}

static void put_string(struct strbuf *out, const void *s, size_t len)
{
	unsigned char n[4] = { (unsigned char)(len >> 24), (unsigned char)(len >> 16), (unsigned char)(len >> 8),
			       (unsigned char)len };
	strbuf_add(out, n, 4);
	strbuf_add(out, s, len);
}

/* An SSH mpint: big-endian, a leading zero byte when the top bit is set. */
static int put_mpint(struct strbuf *out, const mbedtls_mpi *x)
{
	unsigned char buf[80] = { 0 };
	size_t n = mbedtls_mpi_size(x);
	if (n + 1 > sizeof(buf) || mbedtls_mpi_write_binary(x, buf + 1, n) != 0)
		return -1;
	int pad = n && (buf[1] & 0x80);
	put_string(out, buf + 1 - pad, n + (size_t)pad);
	return 0;
}

/* --- loading -------------------------------------------------------------------------------------- */

static int bad_key(struct err *e, const char *why)
{
	return err_set(e, E_AUTH_FAILED, "the stored ssh key %s", why);
}

/* The binary between the PEM armour lines, base64-decoded (line breaks dropped). */
static int unarmour(const char *text, size_t len, struct strbuf *bin, struct err *e)
{
	const char *end = text + len;
	const char *b = memmem(text, len, PEM_BEGIN, strlen(PEM_BEGIN));
	const char *z = b ? memmem(b, (size_t)(end - b), PEM_END, strlen(PEM_END)) : NULL;
	if (!b || !z)
		return bad_key(
			e, "is not an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY-----, as ssh-keygen writes "
			   "it; a PEM key converts with ssh-keygen -p -f KEY)");
	_cleanup_strbuf_wipe_ struct strbuf b64 = STRBUF_INIT;
	for (const char *p = b + strlen(PEM_BEGIN); p < z; p++)
		if (*p != '\n' && *p != '\r')
			strbuf_addch(&b64, *p);
	struct err why = ERR_INIT;
	int rc = crypto_base64_decode(b64.buf ? b64.buf : "", b64.len, bin, &why);
	err_clear(&why);
	return rc < 0 ? bad_key(e, "is not valid base64 between its armour lines") : 0;
}

/* The private section's ECDSA fields into k. */
static int load_ecdsa(struct sshkey *k, struct reader *priv, size_t c, struct err *e)
{
	const unsigned char *curve, *q, *d;
	size_t curve_len, q_len, d_len;
	if (read_string(priv, &curve, &curve_len) < 0 || read_string(priv, &q, &q_len) < 0 ||
	    read_string(priv, &d, &d_len) < 0 || !string_is(curve, curve_len, curves[c].curve))
		return bad_key(e, "has a damaged private section");
	mbedtls_ecdsa_init(&k->ecdsa);
	if (mbedtls_ecp_group_load(&k->ecdsa.grp, curves[c].group) != 0 ||
	    mbedtls_ecp_point_read_binary(&k->ecdsa.grp, &k->ecdsa.Q, q, q_len) != 0 ||
	    mbedtls_mpi_read_binary(&k->ecdsa.d, d, d_len) != 0 ||
	    mbedtls_ecp_check_pub_priv(&k->ecdsa, &k->ecdsa) != 0) {
		mbedtls_ecdsa_free(&k->ecdsa);
		return bad_key(e, "has a public and private part that do not belong together");
	}
	struct strbuf pub = STRBUF_INIT;
	put_string(&pub, curves[c].type, strlen(curves[c].type));
	put_string(&pub, curves[c].curve, strlen(curves[c].curve));
	put_string(&pub, q, q_len);
	k->public_len = pub.len;
	k->public_blob = (unsigned char *)strbuf_detach(&pub, NULL);
	k->md = curves[c].md;
	return 0;
}

/* openssh-key-v1: magic, cipher, kdf, kdf options, key count (1), public key, private section. */
static int parse_container(struct sshkey *k, const struct strbuf *bin, struct err *e)
{
	struct reader r = { (const unsigned char *)bin->buf, bin->len }, priv;
	const unsigned char *cipher, *kdf, *opts, *pub, *type;
	size_t cipher_len, kdf_len, opts_len, pub_len, type_len;
	uint32_t nkeys, check1, check2;
	if (r.n < sizeof(AUTH_MAGIC) || memcmp(r.p, AUTH_MAGIC, sizeof(AUTH_MAGIC)))
		return bad_key(e, "is not an openssh-key-v1 key");
	r.p += sizeof(AUTH_MAGIC);
	r.n -= sizeof(AUTH_MAGIC);
	if (read_string(&r, &cipher, &cipher_len) < 0 || read_string(&r, &kdf, &kdf_len) < 0 ||
	    read_string(&r, &opts, &opts_len) < 0 || read_u32(&r, &nkeys) < 0 || nkeys != 1 ||
	    read_string(&r, &pub, &pub_len) < 0 || read_string(&r, &priv.p, &priv.n) < 0)
		return bad_key(e, "is damaged (its openssh-key-v1 container does not parse)");
	if (!string_is(cipher, cipher_len, "none"))
		return bad_key(e,
			       "is encrypted with a passphrase: store it without one (ssh-keygen -p -N '' -f KEY); the "
			       "daemon seals it with its master key");
	if (read_u32(&priv, &check1) < 0 || read_u32(&priv, &check2) < 0 || check1 != check2 ||
	    read_string(&priv, &type, &type_len) < 0)
		return bad_key(e, "has a damaged private section");
	for (size_t c = 0; c < ARRAY_SIZE(curves); c++)
		if (string_is(type, type_len, curves[c].type))
			return load_ecdsa(k, &priv, c, e);
	return err_setd(
		e, E_AUTH_FAILED, json_pack("{s:s%}", "type", type, type_len),
		"the stored ssh key is of type %.*s: agor signs with ECDSA keys only (ssh-keygen -t ecdsa): libssh2 "
		"on mbedTLS signs RSA with SHA-1, which OpenSSH servers refuse, and has no Ed25519",
		(int)type_len, (const char *)type);
}

int sshkey_load(struct sshkey *k, const char *text, size_t len, struct err *e)
{
	memset(k, 0, sizeof(*k));
	_cleanup_strbuf_wipe_ struct strbuf bin = STRBUF_INIT;
	if (unarmour(text, len, &bin, e) < 0)
		return -1;
	return parse_container(k, &bin, e);
}

void sshkey_release(struct sshkey *k)
{
	if (!k->public_blob)
		return;
	mbedtls_ecdsa_free(&k->ecdsa); /* mbedTLS zeroises the private scalar */
	free(k->public_blob);
	memset(k, 0, sizeof(*k));
}

/* --- signing and fingerprints ---------------------------------------------------------------------- */

int sshkey_sign(struct sshkey *k, const unsigned char *data, size_t len, unsigned char **sig, size_t *siglen)
{
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(k->md);
	unsigned char hash[MBEDTLS_MD_MAX_SIZE];
	mbedtls_mpi r, s;
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	struct strbuf out = STRBUF_INIT;
	int rc = md && mbedtls_md(md, data, len, hash) == 0 &&
				 mbedtls_ecdsa_sign_det_ext(&k->ecdsa.grp, &r, &s, &k->ecdsa.d, hash,
							    mbedtls_md_get_size(md), k->md, crypto_mbedtls_rng,
							    NULL) == 0 &&
				 put_mpint(&out, &r) == 0 && put_mpint(&out, &s) == 0
			 ? 0
			 : -1;
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
	if (rc < 0) {
		strbuf_release(&out);
		return -1;
	}
	*sig = (unsigned char *)strbuf_detach(&out, siglen);
	return 0;
}

char *sshkey_fingerprint(const void *blob, size_t len)
{
	uint8_t hash[CRYPTO_SHA256_LEN];
	crypto_sha256(blob, len, hash);
	struct strbuf b64 = STRBUF_INIT;
	crypto_base64_encode(hash, sizeof(hash), &b64);
	while (b64.len && b64.buf[b64.len - 1] == '=')
		strbuf_setlen(&b64, b64.len - 1);
	char *fp = xasprintf("SHA256:%s", b64.buf);
	strbuf_release(&b64);
	return fp;
}
