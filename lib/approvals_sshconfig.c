/* approvals_sshconfig.c — ~/.ssh/config lines that make ssh run a program (approvals_sshconfig.h).
 * Never runs ssh; an Include it cannot follow to the end counts as code. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "approvals_sshconfig.h"
#include "strbuf.h"
#include "banned.h"

static const char *const command_keywords[] = { "proxycommand", "localcommand", "knownhostscommand", "pkcs11provider",
						"securitykeyprovider" };

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The keyword of a config line (lower-cased into kw) and where its value starts. */
static const char *split_line(const char *line, char *kw, size_t size)
{
	while (is_blank(*line))
		line++;
	size_t n = strcspn(line, " \t=\r\n");
	snprintf(kw, size, "%.*s", (int)(n < size ? n : size - 1), line);
	for (char *p = kw; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
	line += n;
	while (is_blank(*line) || *line == '=')
		line++;
	return line;
}

/* 1 when a Match line's criteria include exec (as a separate word). */
static int match_has_exec(const char *value)
{
	for (const char *p = value; *p;) {
		while (is_blank(*p) || *p == '"')
			p++;
		size_t n = strcspn(p, " \t\"\r\n");
		if (n == 4 && !strncasecmp(p, "exec", 4))
			return 1;
		p += n;
		if (*p == '\r' || *p == '\n')
			break;
	}
	return 0;
}

static char *scan_file(const char *path, int depth);

/* Include: each word a glob relative to ~/.ssh; NULL when none of the files names code. */
static char *scan_includes(const char *value, const char *ssh_dir, int depth)
{
	if (depth >= APPR_SSH_INCLUDE_DEPTH)
		return xasprintf("~/.ssh/config includes nested deeper than %d: ssh code cannot be ruled out",
				 APPR_SSH_INCLUDE_DEPTH);
	char *reason = NULL;
	for (const char *p = value; *p && !reason;) {
		while (is_blank(*p))
			p++;
		size_t n = strcspn(p, " \t\r\n");
		if (!n)
			break;
		char *word = xstrndup(p, n);
		char *pattern = word[0] == '/'	 ? xstrdup(word)
				: word[0] == '~' ? xasprintf("%s/..%s", ssh_dir, word + 1)
						 : xasprintf("%s/%s", ssh_dir, word);
		glob_t g;
		if (glob(pattern, 0, NULL, &g) == 0) {
			for (size_t i = 0; i < g.gl_pathc && !reason; i++)
				reason = scan_file(g.gl_pathv[i], depth + 1);
			globfree(&g);
		}
		free(pattern);
		free(word);
		p += n;
	}
	return reason;
}

static char *scan_file(const char *path, int depth)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	const char *home = getenv("HOME");
	_cleanup_free_ char *ssh_dir = xasprintf("%s/.ssh", home ? home : "");
	char line[4096], kw[64];
	char *reason = NULL;
	for (int lineno = 1; !reason && fgets(line, sizeof(line), f); lineno++) {
		const char *value = split_line(line, kw, sizeof(kw));
		if (!kw[0] || kw[0] == '#')
			continue;
		if (!strcmp(kw, "include")) {
			reason = scan_includes(value, ssh_dir, depth);
			continue;
		}
		if (!strcmp(kw, "match") && match_has_exec(value)) {
			reason = xasprintf("%s:%d: Match exec runs a command (the caller can write this file)", path,
					   lineno);
			continue;
		}
		for (size_t i = 0; i < ARRAY_SIZE(command_keywords) && !reason; i++)
			if (!strcmp(kw, command_keywords[i]) && strncasecmp(value, "none", 4))
				reason = xasprintf("%s:%d: %s names a program ssh would run (the caller can write this "
						   "file)",
						   path, lineno, kw);
	}
	fclose(f);
	return reason;
}

char *appr_ssh_config_code(void)
{
	const char *home = getenv("HOME");
	if (!home || !*home)
		return NULL;
	_cleanup_free_ char *path = xasprintf("%s/.ssh/config", home);
	return scan_file(path, 0);
}

int appr_uses_ssh(const char *word_base, const char *resolved_base, const char *const *argv)
{
	static const char *const ssh_programs[] = { "ssh", "scp", "sftp", "rsync" };
	static const char *const git_remote[] = { "fetch",     "pull",	  "push",   "clone",
						  "ls-remote", "archive", "remote", "submodule" };
	for (size_t i = 0; i < ARRAY_SIZE(ssh_programs); i++)
		if (!strcmp(word_base, ssh_programs[i]) || !strcmp(resolved_base, ssh_programs[i]))
			return 1;
	if (strcmp(word_base, "git") && strcmp(resolved_base, "git"))
		return 0;
	size_t i = 1;
	while (argv[i] && argv[i][0] == '-')
		i += (!strcmp(argv[i], "-C") || !strcmp(argv[i], "--git-dir") || !strcmp(argv[i], "--work-tree") ||
		      !strcmp(argv[i], "--namespace")) &&
				     argv[i + 1]
			     ? 2
			     : 1;
	for (size_t k = 0; argv[i] && k < ARRAY_SIZE(git_remote); k++)
		if (!strcmp(argv[i], git_remote[k]))
			return 1;
	return 0;
}
