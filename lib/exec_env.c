/* exec_env.c — the allowlist of exec.run environment overrides for nodes and the gateway (exec_env.h).
 * Never passes a name the list does not name, nor one agor keeps for itself. */
#include <ctype.h>
#include <string.h>

#include "exec_env.h"
#include "banned.h"

static int valid_name(const char *s, size_t n)
{
	if (!n || isdigit((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

/* One entry of the list, entry[0..n): the name itself, or a prefix when it ends in '*'. */
static int entry_matches(const char *entry, size_t n, const char *name)
{
	if (n && entry[n - 1] == '*')
		return !strncmp(name, entry, n - 1);
	return strlen(name) == n && !strncmp(name, entry, n);
}

static int listed(const char *list, const char *name)
{
	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, ":");
		if (entry_matches(p, n, name))
			return 1;
		p += n + (p[n] == ':');
	}
	return 0;
}

int exec_env_name_ours(const char *name)
{
	static const char *const exact[] = { "BASH_ENV", "ENV", "PATH",		"HOME",
					     "SHELL",	 "IFS", "NODE_OPTIONS", "RUBYOPT" };
	static const char *const prefixes[] = { "LD_", "DYLD_", "PYTHON", "PERL5", "GIT_CONFIG" };
	for (size_t i = 0; i < ARRAY_SIZE(exact); i++)
		if (!strcmp(name, exact[i]))
			return 1;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

const char *exec_env_refusal(const char *list, const char *name)
{
	if (!valid_name(name, strlen(name)))
		return EXEC_ENV_INVALID;
	if (exec_env_name_ours(name) || !strncmp(name, "AGOR_", 5))
		return EXEC_ENV_KEPT;
	return listed(list, name) ? NULL : EXEC_ENV_UNLISTED;
}

int exec_env_list_check(const char *list, size_t *at, struct err *e)
{
	for (const char *p = list;; p++) {
		size_t n = strcspn(p, ":");
		*at = (size_t)(p - list);
		size_t name_len = n && p[n - 1] == '*' ? n - 1 : n;
		if (n == 1 && *p == '*')
			return err_set(e, E_CONFIG,
				       "a lone '*' would pass every name (GIT_*, SSH_*, LD_*, …): list names, "
				       "or prefixes ending in '*'");
		if (!valid_name(p, name_len))
			return err_set(e, E_CONFIG,
				       "expected ':'-separated environment variable names (letters, digits, _; "
				       "a trailing '*' for a prefix), got an entry at byte %zu that is not one",
				       *at);
		p += n;
		if (!*p)
			return 0;
	}
}
