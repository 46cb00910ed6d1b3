/* ed25519.h — Ed25519 signatures (RFC 8032 §5.1, pure Ed25519, no context) made from a 32-byte private seed.
 *
 * Contract:
 *   ed25519_public_key(pub, seed) → 0 with pub the 32-byte public key of seed (the encoded point [a]B, a the
 *     clamped first half of SHA-512(seed)); -1 only when mbedTLS cannot hash (allocation).
 *   ed25519_sign(sig, seed, pub, msg, len) → 0 with sig the 64-byte signature R ‖ S of msg; pub must be
 *     ed25519_public_key(seed) (the caller checks a stored pair once, this does not recompute it); -1 only when
 *     mbedTLS fails (allocation). Signatures are deterministic: the same seed and message give the same bytes.
 *   Signing only: nothing here verifies. Secret-dependent work (the scalar multiplications, the clamped scalar
 *     and the nonce) runs without branches or table lookups on secret bits; the reductions mod L use mbedTLS's
 *     bignums, as mbedTLS's own ECDSA does. Every secret intermediate this module holds is wiped before return.
 */
#ifndef AGOR_ED25519_H
#define AGOR_ED25519_H

#include <stddef.h>
#include <stdint.h>

#define ED25519_SEED_LEN   32
#define ED25519_PUBLIC_LEN 32
#define ED25519_SIG_LEN	   64

int ed25519_public_key(uint8_t pub[ED25519_PUBLIC_LEN], const uint8_t seed[ED25519_SEED_LEN]);
int ed25519_sign(uint8_t sig[ED25519_SIG_LEN], const uint8_t seed[ED25519_SEED_LEN],
		 const uint8_t pub[ED25519_PUBLIC_LEN], const void *msg, size_t len);

#endif
