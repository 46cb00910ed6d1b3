/* sshkey.c — an OpenSSH Ed25519 or ECDSA private key parsed in memory and signing with it (sshkey.h): Ed25519 by
 * ed25519.c, ECDSA on mbedTLS. */
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
#define ED25519	   "ssh-ed25519"

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
	k->kind = SSHKEY_ECDSA;
	return 0;
}

/* The private section's Ed25519 fields: the public key A, then seed ‖ A. A must be the seed's own. */
static int load_ed25519(struct sshkey *k, struct reader *priv, struct err *e)
{
	const unsigned char *pub, *pair;
	size_t pub_len, pair_len;
	if (read_string(priv, &pub, &pub_len) < 0 || read_string(priv, &pair, &pair_len) < 0 ||
	    pub_len != ED25519_PUBLIC_LEN || pair_len != ED25519_SEED_LEN + ED25519_PUBLIC_LEN)
		return bad_key(e, "has a damaged private section");
	uint8_t derived[ED25519_PUBLIC_LEN];
	if (ed25519_public_key(derived, pair) < 0 || !crypto_equal(derived, pub, ED25519_PUBLIC_LEN) ||
	    !crypto_equal(pair + ED25519_SEED_LEN, pub, ED25519_PUBLIC_LEN))
		return bad_key(e, "has a public and private part that do not belong together");
	memcpy(k->ed_seed, pair, ED25519_SEED_LEN);
	memcpy(k->ed_public, pub, ED25519_PUBLIC_LEN);
	struct strbuf blob = STRBUF_INIT;
	put_string(&blob, ED25519, strlen(ED25519));
	put_string(&blob, pub, pub_len);
	k->public_len = blob.len;
	k->public_blob = (unsigned char *)strbuf_detach(&blob, NULL);
	k->kind = SSHKEY_ED25519;
	return 0;
}

/* A key type agor does not sign with, named with the fix. */
static int unsupported_type(const unsigned char *type, size_t type_len, struct err *e)
{
	json_t *details = json_pack("{s:s%}", "type", type, type_len);
	if (string_is(type, type_len, "ssh-rsa"))
		return err_setd(
			e, E_AUTH_FAILED, details,
			"the stored ssh key is an RSA key (ssh-rsa): agor cannot log in with it, since libssh2 "
			"1.10 signs an RSA login with SHA-1 (ssh-rsa), which OpenSSH 8.8 and later refuse; store "
			"an Ed25519 key instead (ssh-keygen -t ed25519) and add its .pub to the server");
	return err_setd(e, E_AUTH_FAILED, details,
			"the stored ssh key is of type %.*s: agor signs with Ed25519 and ECDSA keys only (ssh-keygen "
			"-t ed25519)",
			(int)type_len, (const char *)type);
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
	if (string_is(type, type_len, ED25519))
		return load_ed25519(k, &priv, e);
	for (size_t c = 0; c < ARRAY_SIZE(curves); c++)
		if (string_is(type, type_len, curves[c].type))
			return load_ecdsa(k, &priv, c, e);
	return unsupported_type(type, type_len, e);
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
	if (k->kind == SSHKEY_ECDSA)
		mbedtls_ecdsa_free(&k->ecdsa); /* mbedTLS zeroises the private scalar */
	free(k->public_blob);
	explicit_bzero(k, sizeof(*k));
}

/* --- signing and fingerprints ---------------------------------------------------------------------- */

static int sign_ed25519(struct sshkey *k, const unsigned char *data, size_t len, unsigned char **sig, size_t *siglen)
{
	unsigned char *out = xmalloc(ED25519_SIG_LEN);
	if (ed25519_sign(out, k->ed_seed, k->ed_public, data, len) < 0) {
		free(out);
		return -1;
	}
	*sig = out;
	*siglen = ED25519_SIG_LEN;
	return 0;
}

static int sign_ecdsa(struct sshkey *k, const unsigned char *data, size_t len, unsigned char **sig, size_t *siglen)
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

int sshkey_sign(struct sshkey *k, const unsigned char *data, size_t len, unsigned char **sig, size_t *siglen)
{
	switch (k->kind) {
	case SSHKEY_ED25519:
		return sign_ed25519(k, data, len, sig, siglen);
	case SSHKEY_ECDSA:
		return sign_ecdsa(k, data, len, sig, siglen);
	default:
		return -1;
	}
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
