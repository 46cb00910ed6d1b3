/* test_knownhosts.c — unit tests of known_hosts matching (knownhosts.h): ports, wildcards, negation, hashed
 * names, @revoked and @cert-authority. Never touches the network or a file. */
#include "common.h"
#include "knownhosts.h"
#include "strbuf.h"
#include "unit.h"
#include "banned.h"

/* The keys matched, joined with '|' ("" when none). */
static char *keys_for(const char *text, const char *host, int port)
{
	json_t *a = known_hosts_keys(text, host, port);
	char *out = xstrdup("");
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		char *next = xasprintf("%s%s%s", out, i ? "|" : "", json_string_value(v));
		free(out);
		out = next;
	}
	json_decref(a);
	return out;
}

#define CHECK_KEYS(text, host, port, want)                                                                             \
	do {                                                                                                           \
		char *_k = keys_for(text, host, port);                                                                 \
		CHECK_STR(_k, want);                                                                                   \
		free(_k);                                                                                              \
	} while (0)

TEST(known_hosts_port_22_is_the_bare_name_another_port_is_bracketed)
{
	const char *text = "git.example.com ecdsa-sha2-nistp256 AAAA22\n"
			   "[git.example.com]:2222 ecdsa-sha2-nistp256 AAAA2222 comment here\n";
	CHECK_KEYS(text, "git.example.com", 22, "ecdsa-sha2-nistp256 AAAA22");
	CHECK_KEYS(text, "git.example.com", 2222, "ecdsa-sha2-nistp256 AAAA2222");
	CHECK_KEYS(text, "git.example.com", 2223, "");
	CHECK_KEYS(text, "example.com", 22, "");			   /* no suffix matching */
	CHECK_KEYS("[127.0.0.1]:22 ssh-ed25519 K\n", "127.0.0.1", 22, ""); /* '[' is literal, not a class */
}

TEST(known_hosts_lists_wildcards_and_negation_follow_ssh)
{
	const char *text = "# a comment\n\n"
			   "alpha,beta ecdsa-sha2-nistp256 AB\n"
			   "*.corp,!evil.corp ecdsa-sha2-nistp256 CORP\n"
			   "host? ecdsa-sha2-nistp256 Q\n"
			   "broken-line-without-key\n";
	CHECK_KEYS(text, "beta", 22, "ecdsa-sha2-nistp256 AB");
	CHECK_KEYS(text, "git.corp", 22, "ecdsa-sha2-nistp256 CORP");
	CHECK_KEYS(text, "evil.corp", 22, "");
	CHECK_KEYS(text, "GIT.CORP", 22, "ecdsa-sha2-nistp256 CORP");
	CHECK_KEYS(text, "host1", 22, "ecdsa-sha2-nistp256 Q");
	CHECK_KEYS(text, "host12", 22, "");
	CHECK_KEYS("*a*?c ecdsa-sha2-nistp256 S\n", "xxabc", 22, "ecdsa-sha2-nistp256 S"); /* a star retried */
	CHECK_KEYS("a**b* ecdsa-sha2-nistp256 S\n", "ab", 22, "ecdsa-sha2-nistp256 S");
	CHECK_KEYS("*.corp* ecdsa-sha2-nistp256 S\n", "a.cor", 22, "");
}

/* knownhosts_fuzz found it: a pattern of many stars that cannot match took exponential time. Now linear-ish:
 * this would not end within the unit run before. */
TEST(known_hosts_many_stars_answer_at_once)
{
	struct strbuf text = STRBUF_INIT, host = STRBUF_INIT;
	for (int i = 0; i < 200; i++)
		strbuf_addstr(&text, "a*");
	strbuf_addstr(&text, "b ecdsa-sha2-nistp256 S\n");
	for (int i = 0; i < 200; i++)
		strbuf_addch(&host, 'a');
	CHECK_KEYS(text.buf, host.buf, 22, "");
	strbuf_addch(&host, 'b');
	CHECK_KEYS(text.buf, host.buf, 22, "ecdsa-sha2-nistp256 S");
	strbuf_release(&text);
	strbuf_release(&host);
}

TEST(known_hosts_hashed_names_revoked_and_cert_authority)
{
	/* ssh-keygen -H of "github.com": |1|base64(salt)|base64(HMAC-SHA1(salt, name)) */
	const char *hashed = "|1|7mxO6Jn0a0J5pbVEB7zW8VKFDYw=|wEMYRalmo6lbqA/n7FadY8EH3Lk= ecdsa-sha2-nistp256 H\n";
	CHECK_KEYS(hashed, "github.com", 22, "ecdsa-sha2-nistp256 H");
	CHECK_KEYS(hashed, "gitlab.com", 22, "");
	CHECK_KEYS("@revoked * ecdsa-sha2-nistp256 R\nhost ecdsa-sha2-nistp256 R\nhost ecdsa-sha2-nistp256 S\n", "host",
		   22, "ecdsa-sha2-nistp256 S");
	CHECK_KEYS("@cert-authority host ecdsa-sha2-nistp256 CA\n", "host", 22, "");
}
