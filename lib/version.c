/* version.c — reports agor's version and each linked library's runtime version with its Debian revision.
 * Never calls an init function of a library. */
#include <git2.h>
#include <http_parser.h>
#include <jansson.h>
#include <mbedtls/version.h>
#include <sqlite3.h>
#include <yaml.h>
#include <zlib.h>

#include "agor_deps_versions.h"
#include "version.h"
#include "banned.h"

#ifndef AGOR_VERSION
#define AGOR_VERSION "0.0.0-unknown"
#endif

const char *agor_version(void)
{
	return AGOR_VERSION;
}

static void describe_libgit2(struct strbuf *out)
{
	int major, minor, rev;
	git_libgit2_version(&major, &minor, &rev);
	int features = git_libgit2_features();
	strbuf_addf(out, "libgit2 %d.%d.%d (Debian %s; https %s, ssh %s)\n", major, minor, rev, AGOR_DEB_LIBGIT2,
		    (features & GIT_FEATURE_HTTPS) ? "mbedTLS" : "no", (features & GIT_FEATURE_SSH) ? "yes" : "no");
}

static void describe_http_parser(struct strbuf *out)
{
	unsigned long v = http_parser_version();
	strbuf_addf(out, "http-parser %lu.%lu.%lu (Debian %s)\n", (v >> 16) & 255, (v >> 8) & 255, v & 255,
		    AGOR_DEB_HTTP_PARSER);
}

static void describe_mbedtls(struct strbuf *out)
{
	char buf[18];
	mbedtls_version_get_string(buf);
	strbuf_addf(out, "mbedtls %s (Debian %s; threading on)\n", buf, AGOR_DEB_MBEDTLS);
}

void version_describe(struct strbuf *out)
{
	strbuf_addf(out, "agor %s\n", agor_version());
	describe_libgit2(out);
	describe_mbedtls(out);
	strbuf_addf(out, "zlib %s (Debian %s)\n", zlibVersion(), AGOR_DEB_ZLIB);
	describe_http_parser(out);
	strbuf_addf(out, "sqlite %s (Debian %s)\n", sqlite3_libversion(), AGOR_DEB_SQLITE3);
	strbuf_addf(out, "jansson %s (Debian %s)\n", jansson_version_str(), AGOR_DEB_JANSSON);
	strbuf_addf(out, "libyaml %s (Debian %s)\n", yaml_get_version_string(), AGOR_DEB_LIBYAML);
#if defined(__GLIBC__)
	strbuf_addf(out, "libc glibc %d.%d (test build)\n", __GLIBC__, __GLIBC_MINOR__);
#else
	strbuf_addstr(out, "libc musl (static)\n");
#endif
}
