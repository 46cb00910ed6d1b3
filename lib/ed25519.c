/* ed25519.c — Ed25519 signing (ed25519.h): arithmetic mod p = 2^255-19 in five 51-bit limbs, points of the
 * twisted Edwards curve -x^2 + y^2 = 1 + d x^2 y^2 in extended coordinates, SHA-512 and the scalars mod L on
 * mbedTLS. */
#include <string.h>

#include <mbedtls/bignum.h>
#include <mbedtls/md.h>

#include "ed25519.h"
#include "banned.h"

typedef unsigned __int128 u128;

/* --- the field: a value is v[0] + v[1]·2^51 + v[2]·2^102 + v[3]·2^153 + v[4]·2^204 ---------------------- */

#define LOW51 ((UINT64_C(1) << 51) - 1)

typedef struct {
	uint64_t v[5];
} fe;

static const fe fe_one = { { 1, 0, 0, 0, 0 } };

static uint64_t load64_le(const uint8_t *p)
{
	uint64_t x = 0;
	for (int i = 7; i >= 0; i--)
		x = x << 8 | p[i];
	return x;
}

static void store64_le(uint8_t *p, uint64_t x)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(x >> (8 * i));
}

/* Brings every limb below 2^51 but the lowest (below 2^51 + 2^18): what spills past 2^255 comes back as ·19,
 * since 2^255 ≡ 19 (mod p). */
static void fe_carry(fe *h)
{
	for (int i = 0; i < 4; i++) {
		h->v[i + 1] += h->v[i] >> 51;
		h->v[i] &= LOW51;
	}
	h->v[0] += 19 * (h->v[4] >> 51);
	h->v[4] &= LOW51;
}

static void fe_add(fe *h, const fe *f, const fe *g)
{
	for (int i = 0; i < 5; i++)
		h->v[i] = f->v[i] + g->v[i];
	fe_carry(h);
}

/* f - g + 2p, so no limb goes below zero (g's limbs are carried: below 2^52 - 38). */
static void fe_sub(fe *h, const fe *f, const fe *g)
{
	static const uint64_t two_p[5] = { (UINT64_C(1) << 52) - 38, (UINT64_C(1) << 52) - 2, (UINT64_C(1) << 52) - 2,
					   (UINT64_C(1) << 52) - 2, (UINT64_C(1) << 52) - 2 };
	for (int i = 0; i < 5; i++)
		h->v[i] = f->v[i] + two_p[i] - g->v[i];
	fe_carry(h);
}

/* Schoolbook product: a limb product whose weight reaches 2^255 or beyond folds back multiplied by 19. All of
 * f and g is read before h is written, so h may be either of them. */
static void fe_mul(fe *h, const fe *f, const fe *g)
{
	const uint64_t *a = f->v, *b = g->v;
	uint64_t b1 = 19 * b[1], b2 = 19 * b[2], b3 = 19 * b[3], b4 = 19 * b[4];
	u128 r[5];
	r[0] = (u128)a[0] * b[0] + (u128)a[1] * b4 + (u128)a[2] * b3 + (u128)a[3] * b2 + (u128)a[4] * b1;
	r[1] = (u128)a[0] * b[1] + (u128)a[1] * b[0] + (u128)a[2] * b4 + (u128)a[3] * b3 + (u128)a[4] * b2;
	r[2] = (u128)a[0] * b[2] + (u128)a[1] * b[1] + (u128)a[2] * b[0] + (u128)a[3] * b4 + (u128)a[4] * b3;
	r[3] = (u128)a[0] * b[3] + (u128)a[1] * b[2] + (u128)a[2] * b[1] + (u128)a[3] * b[0] + (u128)a[4] * b4;
	r[4] = (u128)a[0] * b[4] + (u128)a[1] * b[3] + (u128)a[2] * b[2] + (u128)a[3] * b[1] + (u128)a[4] * b[0];
	for (int i = 0; i < 4; i++) {
		r[i + 1] += r[i] >> 51;
		h->v[i] = (uint64_t)r[i] & LOW51;
	}
	h->v[4] = (uint64_t)r[4] & LOW51;
	u128 low = (u128)h->v[0] + (u128)19 * (uint64_t)(r[4] >> 51);
	h->v[0] = (uint64_t)low & LOW51;
	h->v[1] += (uint64_t)(low >> 51);
}

/* z^(p-2) = 1/z (Fermat). The exponent 2^255 - 21 is public: bits 254..5 are all set, bits 4..0 are 01011. */
static void fe_invert(fe *h, const fe *z)
{
	fe r = fe_one;
	for (int bit = 254; bit >= 0; bit--) {
		fe_mul(&r, &r, &r);
		if (bit >= 5 || ((0x0b >> bit) & 1))
			fe_mul(&r, &r, z);
	}
	*h = r;
}

/* h = bit ? g : h, by masks (bit is secret). */
static void fe_select(fe *h, const fe *g, uint64_t bit)
{
	uint64_t mask = (uint64_t)0 - bit;
	for (int i = 0; i < 5; i++)
		h->v[i] ^= mask & (h->v[i] ^ g->v[i]);
}

/* 32 bytes little-endian, bit 255 ignored. */
static void fe_frombytes(fe *h, const uint8_t s[32])
{
	uint64_t w0 = load64_le(s), w1 = load64_le(s + 8), w2 = load64_le(s + 16), w3 = load64_le(s + 24);
	h->v[0] = w0 & LOW51;
	h->v[1] = (w0 >> 51 | w1 << 13) & LOW51;
	h->v[2] = (w1 >> 38 | w2 << 26) & LOW51;
	h->v[3] = (w2 >> 25 | w3 << 39) & LOW51;
	h->v[4] = (w3 >> 12) & LOW51;
}

/* The canonical encoding (the value reduced into [0, p)), 32 bytes little-endian. */
static void fe_tobytes(uint8_t s[32], const fe *f)
{
	fe t = *f;
	fe_carry(&t); /* now below 2^255 + 2^18 < 2p */
	uint64_t q = (t.v[0] + 19) >> 51;
	for (int i = 1; i < 5; i++)
		q = (t.v[i] + q) >> 51; /* q = 1 exactly when t ≥ p */
	t.v[0] += 19 * q;		/* t + 19q - q·2^255 = t - q·p: the carries below drop the 2^255 */
	for (int i = 0; i < 4; i++) {
		t.v[i + 1] += t.v[i] >> 51;
		t.v[i] &= LOW51;
	}
	t.v[4] &= LOW51;
	store64_le(s, t.v[0] | t.v[1] << 51);
	store64_le(s + 8, t.v[1] >> 13 | t.v[2] << 38);
	store64_le(s + 16, t.v[2] >> 26 | t.v[3] << 25);
	store64_le(s + 24, t.v[3] >> 39 | t.v[4] << 12);
}

/* --- the curve: (X:Y:Z:T) with x = X/Z, y = Y/Z, xy = T/Z ------------------------------------------------ */

typedef struct {
	fe X, Y, Z, T;
} point;

/* The base point B (y = 4/5, x even) and 2d, d = -121665/121666, as little-endian field elements. */
static const uint8_t base_x[32] = { 0x1a, 0xd5, 0x25, 0x8f, 0x60, 0x2d, 0x56, 0xc9, 0xb2, 0xa7, 0x25,
				    0x95, 0x60, 0xc7, 0x2c, 0x69, 0x5c, 0xdc, 0xd6, 0xfd, 0x31, 0xe2,
				    0xa4, 0xc0, 0xfe, 0x53, 0x6e, 0xcd, 0xd3, 0x36, 0x69, 0x21 };
static const uint8_t base_y[32] = { 0x58, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
				    0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
				    0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66 };
static const uint8_t two_d[32] = { 0x59, 0xf1, 0xb2, 0x26, 0x94, 0x9b, 0xd6, 0xeb, 0x56, 0xb1, 0x83,
				   0x82, 0x9a, 0x14, 0xe0, 0x00, 0x30, 0xd1, 0xf3, 0xee, 0xf2, 0x80,
				   0x8e, 0x19, 0xe7, 0xfc, 0xdf, 0x56, 0xdc, 0xd9, 0x06, 0x24 };

static void base_point(point *b)
{
	fe_frombytes(&b->X, base_x);
	fe_frombytes(&b->Y, base_y);
	b->Z = fe_one;
	fe_mul(&b->T, &b->X, &b->Y);
}

/* r = p + q (Hisil–Wong–Carter–Dawson, a = -1). The formula is complete on this curve: it also doubles (p = q)
 * and adds the identity, so one code path serves every step. r may be p or q. */
static void point_add(point *r, const point *p, const point *q)
{
	fe a, b, c, d, e, f, g, h, t, k;
	fe_sub(&a, &p->Y, &p->X);
	fe_sub(&t, &q->Y, &q->X);
	fe_mul(&a, &a, &t);
	fe_add(&b, &p->Y, &p->X);
	fe_add(&t, &q->Y, &q->X);
	fe_mul(&b, &b, &t);
	fe_frombytes(&k, two_d);
	fe_mul(&c, &p->T, &q->T);
	fe_mul(&c, &c, &k);
	fe_mul(&d, &p->Z, &q->Z);
	fe_add(&d, &d, &d);
	fe_sub(&e, &b, &a);
	fe_sub(&f, &d, &c);
	fe_add(&g, &d, &c);
	fe_add(&h, &b, &a);
	fe_mul(&r->X, &e, &f);
	fe_mul(&r->Y, &g, &h);
	fe_mul(&r->T, &e, &h);
	fe_mul(&r->Z, &f, &g);
}

static void point_select(point *r, const point *p, uint64_t bit)
{
	fe_select(&r->X, &p->X, bit);
	fe_select(&r->Y, &p->Y, bit);
	fe_select(&r->Z, &p->Z, bit);
	fe_select(&r->T, &p->T, bit);
}

/* [n]B for a 256-bit little-endian n: double, always add, keep the sum by mask when the bit is set. */
static void multiply_base(point *r, const uint8_t n[32])
{
	point b, sum;
	base_point(&b);
	*r = (point){ .X = { { 0 } }, .Y = fe_one, .Z = fe_one, .T = { { 0 } } };
	for (int i = 255; i >= 0; i--) {
		point_add(r, r, r);
		point_add(&sum, r, &b);
		point_select(r, &sum, (uint64_t)(n[i / 8] >> (i % 8)) & 1);
	}
	explicit_bzero(&sum, sizeof(sum));
}

/* RFC 8032 §5.1.2: y little-endian, the top bit holding x's lowest bit. */
static void point_encode(uint8_t out[32], const point *p)
{
	fe zinv, x, y;
	uint8_t xb[32];
	fe_invert(&zinv, &p->Z);
	fe_mul(&x, &p->X, &zinv);
	fe_mul(&y, &p->Y, &zinv);
	fe_tobytes(out, &y);
	fe_tobytes(xb, &x);
	out[31] |= (uint8_t)((xb[0] & 1) << 7);
	explicit_bzero(xb, sizeof(xb));
	explicit_bzero(&x, sizeof(x));
}

/* --- hashing and scalars --------------------------------------------------------------------------------- */

/* SHA-512 of up to three parts (NULL parts skipped). */
static int sha512(uint8_t out[64], const void *p1, size_t n1, const void *p2, size_t n2, const void *p3, size_t n3)
{
	mbedtls_md_context_t ctx;
	mbedtls_md_init(&ctx);
	const void *parts[3] = { p1, p2, p3 };
	size_t lens[3] = { n1, n2, n3 };
	int rc = mbedtls_md_setup(&ctx, mbedtls_md_info_from_type(MBEDTLS_MD_SHA512), 0) == 0 &&
				 mbedtls_md_starts(&ctx) == 0
			 ? 0
			 : -1;
	for (int i = 0; i < 3 && rc == 0; i++)
		if (parts[i] && mbedtls_md_update(&ctx, parts[i], lens[i]) != 0)
			rc = -1;
	if (rc == 0 && mbedtls_md_finish(&ctx, out) != 0)
		rc = -1;
	mbedtls_md_free(&ctx); /* zeroises the hash state */
	return rc;
}

/* The secret scalar a (SHA-512(seed)'s first half, clamped: a multiple of 8, bit 254 set) and the nonce prefix
 * (its second half). */
static int expand_seed(uint8_t a[32], uint8_t prefix[32], const uint8_t seed[32])
{
	uint8_t h[64];
	int rc = sha512(h, seed, 32, NULL, 0, NULL, 0);
	memcpy(a, h, 32);
	memcpy(prefix, h + 32, 32);
	a[0] &= 248;
	a[31] &= 127;
	a[31] |= 64;
	explicit_bzero(h, sizeof(h));
	return rc;
}

/* out = (x + y·z) mod L, every number little-endian (x 64 or 32 bytes, y and z 32; out 32), L = 2^252 +
 * 27742317777372353535851937790883648493. */
static int mod_l(uint8_t out[32], const uint8_t *x, size_t xlen, const uint8_t *y, const uint8_t *z)
{
	mbedtls_mpi l, s, m, n;
	mbedtls_mpi_init(&l);
	mbedtls_mpi_init(&s);
	mbedtls_mpi_init(&m);
	mbedtls_mpi_init(&n);
	int rc = mbedtls_mpi_read_string(&l, 16, "1000000000000000000000000000000014def9dea2f79cd65812631a5cf5d3ed") ||
		 mbedtls_mpi_read_binary_le(&s, x, xlen);
	if (!rc && y)
		rc = mbedtls_mpi_read_binary_le(&m, y, 32) || mbedtls_mpi_read_binary_le(&n, z, 32) ||
		     mbedtls_mpi_mul_mpi(&m, &m, &n) || mbedtls_mpi_add_mpi(&s, &s, &m);
	if (!rc)
		rc = mbedtls_mpi_mod_mpi(&s, &s, &l) || mbedtls_mpi_write_binary_le(&s, out, 32);
	mbedtls_mpi_free(&l); /* mbedTLS zeroises a bignum it frees */
	mbedtls_mpi_free(&s);
	mbedtls_mpi_free(&m);
	mbedtls_mpi_free(&n);
	return rc ? -1 : 0;
}

/* --- the contract ------------------------------------------------------------------------------------------- */

int ed25519_public_key(uint8_t pub[ED25519_PUBLIC_LEN], const uint8_t seed[ED25519_SEED_LEN])
{
	uint8_t a[32], prefix[32];
	point A;
	int rc = expand_seed(a, prefix, seed);
	if (rc == 0) {
		multiply_base(&A, a);
		point_encode(pub, &A);
	}
	explicit_bzero(a, sizeof(a));
	explicit_bzero(prefix, sizeof(prefix));
	explicit_bzero(&A, sizeof(A));
	return rc;
}

/* RFC 8032 §5.1.6: r = SHA-512(prefix ‖ M) mod L, R = [r]B, k = SHA-512(R ‖ A ‖ M) mod L, S = (r + k·a) mod L. */
int ed25519_sign(uint8_t sig[ED25519_SIG_LEN], const uint8_t seed[ED25519_SEED_LEN],
		 const uint8_t pub[ED25519_PUBLIC_LEN], const void *msg, size_t len)
{
	uint8_t a[32], prefix[32], h[64], r[32], k[32];
	point R;
	int rc = expand_seed(a, prefix, seed);
	if (rc == 0)
		rc = sha512(h, prefix, 32, msg, len, NULL, 0);
	if (rc == 0)
		rc = mod_l(r, h, 64, NULL, NULL);
	if (rc == 0) {
		multiply_base(&R, r);
		point_encode(sig, &R);
		rc = sha512(h, sig, 32, pub, ED25519_PUBLIC_LEN, msg, len);
	}
	if (rc == 0)
		rc = mod_l(k, h, 64, NULL, NULL);
	if (rc == 0)
		rc = mod_l(sig + 32, r, 32, k, a);
	explicit_bzero(a, sizeof(a));
	explicit_bzero(prefix, sizeof(prefix));
	explicit_bzero(h, sizeof(h));
	explicit_bzero(r, sizeof(r));
	explicit_bzero(&R, sizeof(R));
	return rc;
}
