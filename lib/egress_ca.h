/* egress_ca.h — the per-task certificate authority of the egress proxy (egress.h): made with mbedTLS when the
 * run starts, its key only ever in memory, it signs one certificate — the provider host's — so the proxy can
 * terminate the agent's TLS to that host alone and put the key in place of the sentinel. Never written to disk
 * but for the CA certificate itself (what the agent must trust). */
#ifndef AGOR_EGRESS_CA_H
#define AGOR_EGRESS_CA_H

/*
 * Contract
 * --------
 *   struct egress_ca *ca = egress_ca_new(host, e);  // RSA-2048 CA ("agor egress CA <hex>", valid 7 days, CA:TRUE,
 *                                                   // pathlen 0) and a leaf for host (a DNS name or an address literal
 *                                                   // in its subjectAltName), valid from an hour ago for 7 days
 *   egress_ca_pem(ca)       → the CA certificate, PEM (what NODE_EXTRA_CA_CERTS and the like name)
 *   egress_ca_leaf_pem(ca), egress_ca_leaf_key_pem(ca) → the leaf's certificate and private key, PEM
 *   egress_ca_free(ca);     // wipes both keys
 * The CA's private key is dropped (wiped) as soon as the leaf is signed: nothing else can ever be issued.
 */

#include "err.h"

struct egress_ca;

struct egress_ca *egress_ca_new(const char *host, struct err *e);
const char *egress_ca_pem(const struct egress_ca *ca);
const char *egress_ca_leaf_pem(const struct egress_ca *ca);
const char *egress_ca_leaf_key_pem(const struct egress_ca *ca);
void egress_ca_free(struct egress_ca *ca);

#endif
