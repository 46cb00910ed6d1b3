/* sshkey.h — an SSH user key held in memory for git over ssh, and SSH host key fingerprints.
 *
 * Contract:
 *   sshkey_load(&k, text, len, e) → 0 with k holding an unencrypted OpenSSH private key ("-----BEGIN OPENSSH
 *     PRIVATE KEY-----", what ssh-keygen writes) of type ssh-ed25519 or ecdsa-sha2-nistp256, -nistp384, -nistp521,
 *     its public half checked against its private half; -1 with e set to E_AUTH_FAILED naming what is wrong and
 *     the fix: an encrypted key, a damaged one, an RSA key (libssh2 1.10 names an RSA login "ssh-rsa", a SHA-1
 *     signature OpenSSH 8.8 and later refuse), any other type. The text is never kept: only the parsed key,
 *     wiped by sshkey_release.
 *   k.public_blob / k.public_len: the public key in SSH wire form (what the server's authorized_keys lists).
 *   sshkey_sign(&k, data, len, &sig, &siglen) → 0 and a malloc'd signature over data as libssh2's public key sign
 *     callback returns it (libssh2 adds the algorithm name): Ed25519's 64 bytes R ‖ S (RFC 8032), ECDSA's mpint r,
 *     mpint s (RFC 5656); -1 on failure.
 *   sshkey_fingerprint(blob, len) → "SHA256:…" (unpadded base64 of the SHA-256 of a key blob, as ssh-keygen -l).
 */
#ifndef AGOR_SSHKEY_H
#define AGOR_SSHKEY_H

#include <stddef.h>
#include <stdint.h>

#include <mbedtls/ecdsa.h>
#include <mbedtls/md.h>

#include "ed25519.h"
#include "err.h"

enum sshkey_kind { SSHKEY_NONE, SSHKEY_ECDSA, SSHKEY_ED25519 };

struct sshkey {
	unsigned char *public_blob;
	size_t public_len;
	enum sshkey_kind kind;
	mbedtls_ecdsa_context ecdsa;					  /* SSHKEY_ECDSA */
	mbedtls_md_type_t md;						  /* the curve's hash: SHA-256, -384 or -512 */
	uint8_t ed_seed[ED25519_SEED_LEN], ed_public[ED25519_PUBLIC_LEN]; /* SSHKEY_ED25519 */
};

int sshkey_load(struct sshkey *k, const char *text, size_t len, struct err *e);
int sshkey_sign(struct sshkey *k, const unsigned char *data, size_t len, unsigned char **sig, size_t *siglen);
void sshkey_release(struct sshkey *k);
char *sshkey_fingerprint(const void *blob, size_t len);

#endif
