/* test_egress.c — unit tests of the egress allowlist (egress_allow.h): entries, name and port matching, the
 * address classes a name alone never reaches; the per-task CA (egress_ca.h). Never touches the network. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <mbedtls/x509_crt.h>

#include "egress_allow.h"
#include "egress_ca.h"
#include "unit.h"
#include "banned.h"

static int allowed(const char *list, const char *host, int port)
{
	struct egress_allow a = EGRESS_ALLOW_INIT;
	struct err e = ERR_INIT;
	CHECK_INT(egress_allow_parse(&a, list, &e), 0);
	char *h = xstrdup(host);
	int ok = egress_host_normalise(h) == 0 && egress_allow_match(&a, h, port) != NULL;
	free(h);
	egress_allow_release(&a);
	return ok;
}

static const char *class_of(const char *text)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	if (strchr(text, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, text, &s6->sin6_addr);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		inet_pton(AF_INET, text, &s4->sin_addr);
	}
	const char *c = egress_address_class((struct sockaddr *)&ss);
	return c ? c : "public";
}

TEST(egress_allow_matches_names_wildcards_and_ports)
{
	CHECK(allowed("api.example.com", "API.Example.com.", 443));
	CHECK(allowed("api.example.com", "api.example.com", 80));
	CHECK(!allowed("api.example.com", "api.example.com", 8080)); /* no port: 80 and 443 only */
	CHECK(allowed("api.example.com:8080", "api.example.com", 8080));
	CHECK(!allowed("api.example.com:8080", "api.example.com", 443));
	CHECK(allowed("*.example.com", "a.b.example.com", 443));
	CHECK(!allowed("*.example.com", "example.com", 443));
	CHECK(!allowed("*.example.com", "evilexample.com", 443));
	CHECK(!allowed("example.com", "example.com.evil.net", 443));
	CHECK(allowed("a.test, 127.0.0.1:9000 [::1]:9001", "127.0.0.1", 9000));
	CHECK(allowed("a.test, 127.0.0.1:9000 [::1]:9001", "[::1]", 9001));
	CHECK(!allowed("", "a.test", 443));
}

TEST(egress_allow_refuses_malformed_entries_naming_them)
{
	const char *bad[] = { "a..b",  "*.",  "*.1.2.3.4", "host:0", "host:080", "host:65536",
			      "h\"st", "::1", "a/b",	   "host:",  "*",	 "-x:1x" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		size_t at = 0;
		struct err e = ERR_INIT;
		_cleanup_free_ char *list = xasprintf("ok.example.com, %s", bad[i]);
		CHECK_INT(egress_allow_check(list, &at, &e), -1);
		CHECK_INT((int)at, 16);
		CHECK_CONTAINS(e.message, "separated by commas");
		err_clear(&e);
	}
}

TEST(egress_address_classes_cover_every_local_range)
{
	CHECK_STR(class_of("127.0.0.1"), "loopback");
	CHECK_STR(class_of("127.9.9.9"), "loopback");
	CHECK_STR(class_of("10.1.2.3"), "private");
	CHECK_STR(class_of("172.16.0.1"), "private");
	CHECK_STR(class_of("172.31.255.255"), "private");
	CHECK_STR(class_of("192.168.1.1"), "private");
	CHECK_STR(class_of("100.64.0.1"), "private");
	CHECK_STR(class_of("169.254.169.254"), "link-local"); /* cloud metadata */
	CHECK_STR(class_of("0.0.0.0"), "unspecified");
	CHECK_STR(class_of("224.0.0.1"), "multicast");
	CHECK_STR(class_of("255.255.255.255"), "multicast");
	CHECK_STR(class_of("::1"), "loopback");
	CHECK_STR(class_of("::"), "unspecified");
	CHECK_STR(class_of("fe80::1"), "link-local");
	CHECK_STR(class_of("fd00::1"), "private");
	CHECK_STR(class_of("::ffff:127.0.0.1"), "loopback"); /* IPv4-mapped: judged by its IPv4 */
	CHECK_STR(class_of("::ffff:169.254.169.254"), "link-local");
	CHECK_STR(class_of("172.32.0.1"), "public");
	CHECK_STR(class_of("8.8.8.8"), "public");
	CHECK_STR(class_of("2001:4860:4860::8888"), "public");
}

TEST(egress_local_address_needs_a_rule_naming_it_and_its_port)
{
	struct egress_allow a = EGRESS_ALLOW_INIT;
	struct err e = ERR_INIT;
	CHECK_INT(egress_allow_parse(&a, "localhost:9000, 127.0.0.1:9001, 127.0.0.2", &e), 0);
	struct sockaddr_in s = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &s.sin_addr);
	CHECK(!egress_allow_names_address(&a, (struct sockaddr *)&s, 9000)); /* a name is not the address */
	CHECK(egress_allow_names_address(&a, (struct sockaddr *)&s, 9001));
	inet_pton(AF_INET, "127.0.0.2", &s.sin_addr);
	CHECK(!egress_allow_names_address(&a, (struct sockaddr *)&s, 443)); /* no port: never a local service */
	egress_allow_release(&a);
}

static uint32_t verify_leaf(const struct egress_ca *ca, const char *cn)
{
	mbedtls_x509_crt root, leaf;
	mbedtls_x509_crt_init(&root);
	mbedtls_x509_crt_init(&leaf);
	CHECK_INT(
		mbedtls_x509_crt_parse(&root, (const unsigned char *)egress_ca_pem(ca), strlen(egress_ca_pem(ca)) + 1),
		0);
	CHECK_INT(mbedtls_x509_crt_parse(&leaf, (const unsigned char *)egress_ca_leaf_pem(ca),
					 strlen(egress_ca_leaf_pem(ca)) + 1),
		  0);
	uint32_t flags = 0;
	mbedtls_x509_crt_verify(&leaf, &root, NULL, cn, &flags, NULL, NULL);
	mbedtls_x509_crt_free(&root);
	mbedtls_x509_crt_free(&leaf);
	return flags;
}

TEST(egress_ca_issues_one_verifiable_certificate_for_the_provider_host)
{
	struct err e = ERR_INIT;
	struct egress_ca *ca = egress_ca_new("api.example.com", &e);
	CHECK(ca != NULL);
	CHECK_CONTAINS(egress_ca_pem(ca), "BEGIN CERTIFICATE");
	CHECK_CONTAINS(egress_ca_leaf_key_pem(ca), "PRIVATE KEY");
	CHECK_INT((int)verify_leaf(ca, "api.example.com"), 0);
	CHECK(verify_leaf(ca, "other.example.com") & MBEDTLS_X509_BADCERT_CN_MISMATCH);
	struct egress_ca *other = egress_ca_new("api.example.com", &e);
	CHECK(strcmp(egress_ca_pem(ca), egress_ca_pem(other)) != 0); /* a CA per run */
	egress_ca_free(other);
	egress_ca_free(ca);
	ca = egress_ca_new("127.0.0.1", &e); /* an address literal: an iPAddress subjectAltName */
	CHECK(ca != NULL);
	egress_ca_free(ca);
}
