/* sshkey.h — an SSH user key held in memory for git over ssh, and SSH host key fingerprints.
 *
 * Contract:
 *   sshkey_load(&k, text, len, e) → 0 with k holding an unencrypted OpenSSH private key ("-----BEGIN OPENSSH
 *     PRIVATE KEY-----", what ssh-keygen writes) of type ecdsa-sha2-nistp256, -nistp384 or -nistp521; -1 with e set
 *     to E_AUTH_FAILED naming what is wrong and the fix (an encrypted key, an RSA or Ed25519 key: libssh2 on
 *     mbedTLS signs RSA with SHA-1 only, which OpenSSH servers refuse, and mbedTLS has no Ed25519). The text is
 *     never kept: only the parsed key, wiped by sshkey_release.
 *   k.public_blob / k.public_len: the public key in SSH wire form (what the server's authorized_keys lists).
 *   sshkey_sign(&k, data, len, &sig, &siglen) → 0 and a malloc'd SSH signature blob (mpint r, mpint s) over data,
 *     as libssh2's public key sign callback returns it; -1 on failure.
 *   sshkey_fingerprint(blob, len) → "SHA256:…" (unpadded base64 of the SHA-256 of a key blob, as ssh-keygen -l).
 */
#ifndef AGOR_SSHKEY_H
#define AGOR_SSHKEY_H

#include <stddef.h>

#include <mbedtls/ecdsa.h>
#include <mbedtls/md.h>

#include "err.h"

struct sshkey {
	unsigned char *public_blob;
	size_t public_len;
	mbedtls_ecdsa_context ecdsa;
	mbedtls_md_type_t md; /* the curve's hash: SHA-256, -384 or -512 */
};

int sshkey_load(struct sshkey *k, const char *text, size_t len, struct err *e);
int sshkey_sign(struct sshkey *k, const unsigned char *data, size_t len, unsigned char **sig, size_t *siglen);
void sshkey_release(struct sshkey *k);
char *sshkey_fingerprint(const void *blob, size_t len);

#endif
