/* exec_directive.c — `/exec` and `/elevated` parsed into a session's exec defaults (exec_directive.h).
 * Never stores a value it has not validated; never guesses what a misspelt key meant. */
#include <string.h>

#include "approvals_policy.h"
#include "common.h"
#include "exec_directive.h"
#include "strvec.h"
#include "banned.h"

#define NODE_QUERY_MAX 64

static int bad(struct err *e, const char *word, const char *why)
{
	return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "directive", word), "%s", why);
}

static int valid_query(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > NODE_QUERY_MAX)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static int set_level(json_t *next, const char *key, const char *value, int (*parse)(const char *), const char *names,
		     struct err *e)
{
	if (parse(value) < 0) {
		_cleanup_free_ char *why = xasprintf("/exec: %s=%s: expected one of %s", key, value, names);
		return bad(e, key, why);
	}
	json_object_set_new(next, key, json_string(value));
	return 0;
}

/* One key=value of /exec. */
static int set_pair(json_t *next, const char *word, struct err *e)
{
	const char *eq = strchr(word, '=');
	if (!eq || eq == word) {
		_cleanup_free_ char *why =
			xasprintf("/exec: \"%s\": expected KEY=VALUE (keys: host, security, ask, node)", word);
		return bad(e, word, why);
	}
	_cleanup_free_ char *key = xstrndup(word, (size_t)(eq - word));
	const char *value = eq + 1;
	if (!strcmp(key, "host")) {
		if (strcmp(value, "sandbox") && strcmp(value, "gateway") && strcmp(value, "node")) {
			_cleanup_free_ char *why =
				xasprintf("/exec: host=%s: expected one of sandbox|gateway|node", value);
			return bad(e, key, why);
		}
		json_object_set_new(next, "host", json_string(value));
		return 0;
	}
	if (!strcmp(key, "security"))
		return set_level(next, key, value, appr_security_parse, "deny|allowlist|full", e);
	if (!strcmp(key, "ask"))
		return set_level(next, key, value, appr_ask_parse, "off|on-miss|always", e);
	if (!strcmp(key, "node")) {
		if (!valid_query(value))
			return bad(e, key,
				   "/exec: node=: expected a node id, id prefix, IP or display name (1-64 "
				   "characters, no blanks)");
		json_object_set_new(next, "node", json_string(value));
		if (!json_object_get(next, "host"))
			json_object_set_new(next, "host", json_string("node"));
		return 0;
	}
	_cleanup_free_ char *why = xasprintf("/exec: unknown key \"%s\" (keys: host, security, ask, node)", key);
	return bad(e, key, why);
}

/* The combination must make sense for the host it ends with. */
static int check_host(json_t *next, struct err *e)
{
	const char *host = json_string_value(json_object_get(next, "host"));
	if (host && !strcmp(host, "sandbox")) {
		json_object_del(next, "security");
		json_object_del(next, "ask");
		json_object_del(next, "node");
		json_object_del(next, "elevated");
		return 0;
	}
	if (!host && (json_object_get(next, "security") || json_object_get(next, "ask")))
		return bad(e, "host",
			   "/exec: security and ask apply to hosts gateway and node: add host=gateway or "
			   "host=node");
	if (host && !strcmp(host, "gateway"))
		json_object_del(next, "node");
	return 0;
}

static int exec_words(char **words, size_t n, json_t *next, struct err *e)
{
	if (n == 2 && !strcmp(words[1], "reset")) {
		json_object_clear(next);
		return 0;
	}
	for (size_t i = 1; i < n; i++)
		if (set_pair(next, words[i], e) < 0)
			return -1;
	return check_host(next, e);
}

static int elevated_words(char **words, size_t n, json_t *next, struct err *e)
{
	if (n != 2 || (strcmp(words[1], "on") && strcmp(words[1], "off")))
		return bad(e, n > 1 ? words[1] : "/elevated", "/elevated: expected on or off");
	json_object_del(next, "host");
	json_object_del(next, "security");
	json_object_del(next, "elevated");
	json_object_del(next, "node");
	if (!strcmp(words[1], "on")) {
		json_object_set_new(next, "host", json_string("gateway"));
		json_object_set_new(next, "security", json_string("full"));
		json_object_set_new(next, "elevated", json_true());
	}
	return 0;
}

int exec_directive_apply(const char *text, const json_t *current, json_t **next, struct err *e)
{
	text += strspn(text, " \t");
	struct strvec words = STRVEC_INIT;
	_cleanup_free_ char *copy = xstrdup(text);
	for (char *save = NULL, *w = strtok_r(copy, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save))
		strvec_push(&words, w);
	int is_exec = words.nr && !strcmp(words.v[0], "/exec");
	int is_elevated = words.nr && !strcmp(words.v[0], "/elevated");
	if (!is_exec && !is_elevated) {
		strvec_clear(&words);
		return 0;
	}
	json_t *n = json_is_object(current) ? json_deep_copy(current) : json_object();
	int rc = is_exec ? exec_words(words.v, words.nr, n, e) : elevated_words(words.v, words.nr, n, e);
	strvec_clear(&words);
	if (rc < 0) {
		json_decref(n);
		return -1;
	}
	*next = n;
	return 1;
}
