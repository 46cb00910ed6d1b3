/* approvals_programs.c — the table of programs that run programs (approvals_programs.h) and argv patterns.
 * Never guesses in a program's favour: an option it cannot place, or a script it cannot parse, runs code. */
#include <string.h>

#include "approvals_glob.h"
#include "approvals_programs.h"
#include "strbuf.h"
#include "banned.h"

/* ---- names ----------------------------------------------------------------------------------- */

/* The family of a program name: "python3.11" → "python", "perl5.36.0" → "perl", "vim.basic" → "vim". */
static void family_name(const char *name, char *out, size_t size)
{
	snprintf(out, size, "%s", name);
	char *dot = strchr(out, '.');
	if (dot && !strncmp(out, "vim.", 4))
		*dot = '\0';
	size_t n = strlen(out);
	while (n > 1 && ((out[n - 1] >= '0' && out[n - 1] <= '9') || out[n - 1] == '.'))
		out[--n] = '\0';
}

enum program_kind {
	KIND_ALWAYS,	  /* runs code whatever its options */
	KIND_INTERPRETER, /* runs code unless asked only for its version */
	KIND_OPTIONS,	  /* runs code with the listed options */
	KIND_GIT,
	KIND_AWK,
	KIND_SED,
};

struct program {
	const char *names; /* space-separated family names */
	enum program_kind kind;
	const char *shorts;	  /* KIND_OPTIONS: short letters that run code (also inside bundles) */
	const char *const *longs; /* KIND_OPTIONS: long options (no leading --) that run code, by prefix */
	const char *const *words; /* exact single-dash words that run code (find -exec) */
	int old_style_bundle;	  /* tar: a first argument without '-' is a bundle of short options */
};

static const char *const tar_longs[] = { "to-command",	      "use-compress-program",
					 "info-script",	      "new-volume-script",
					 "checkpoint-action", "rsh-command",
					 "rmt-command",	      NULL };
static const char *const rsync_longs[] = { "rsh", "rsync-path", NULL };
static const char *const find_words[] = { "-exec", "-execdir", "-ok", "-okdir", NULL };
static const char *const man_longs[] = { "pager", "html", NULL };
static const char *const zip_longs[] = { "unzip-command", NULL };
static const char *const zip_words[] = { "-TT", NULL };
static const char *const gpg_longs[] = { "photo-viewer", "exec-path", NULL };
static const char *const openssl_words[] = { "-engine", "-provider", "-provider-path", "-keygen_engine", NULL };
static const char *const ip_words[] = { "exec", NULL };
static const char *const none[] = { NULL };

static const struct program programs[] = {
	{ "make gmake bmake ninja cmake scons meson npm npx yarn pnpm cargo go pip pipx gradle mvn ant "
	  "bazel docker podman kubectl at batch crontab",
	  KIND_ALWAYS, NULL, none, none, 0 },
	{ "vim vi nvim view ex vimdiff rvim emacs nano pico less more most", KIND_ALWAYS, NULL, none, none, 0 },
	/* handlers chosen by configuration the caller can write (mime types, alternatives) */
	{ "xdg-open gio kde-open sensible-browser sensible-editor sensible-pager x-www-browser www-browser "
	  "editor pager",
	  KIND_ALWAYS, NULL, none, none, 0 },
	{ "sqlite psql mysql mariadb hg svn expect", KIND_ALWAYS, NULL, none, none, 0 },
	{ "python pypy perl ruby node nodejs deno bun php lua luajit tclsh wish Rscript R julia java "
	  "jshell guile racket ocaml erl elixir swift osascript",
	  KIND_INTERPRETER, NULL, none, none, 0 },
	{ "git", KIND_GIT, NULL, none, none, 0 },
	{ "awk gawk mawk nawk original-awk", KIND_AWK, NULL, none, none, 0 },
	{ "sed gsed", KIND_SED, NULL, none, none, 0 },
	{ "tar gtar bsdtar", KIND_OPTIONS, "IF", tar_longs, none, 1 },
	{ "rsync", KIND_OPTIONS, "e", rsync_longs, none, 0 },
	{ "ssh", KIND_OPTIONS, "oFI", none, none, 0 }, /* -I: a PKCS#11 library */
	{ "ssh-keygen", KIND_OPTIONS, "D", none, none, 0 },
	{ "ssh-add", KIND_OPTIONS, "sS", none, none, 0 },
	{ "openssl", KIND_OPTIONS, "", none, openssl_words, 0 },
	{ "scp", KIND_OPTIONS, "oFS", none, none, 0 },
	{ "sftp", KIND_OPTIONS, "oFSDb", none, none, 0 }, /* -b: a batch file's !command runs locally */
	{ "ip", KIND_OPTIONS, "", none, ip_words, 0 },	  /* ip netns exec, ip vrf exec */
	{ "find", KIND_OPTIONS, "", none, find_words, 0 },
	{ "man", KIND_OPTIONS, "PH", man_longs, none, 0 },
	{ "zip", KIND_OPTIONS, "", zip_longs, zip_words, 0 },
	{ "gpg gpg2", KIND_OPTIONS, "", gpg_longs, none, 0 },
};

static int in_names(const char *names, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = names; *p;) {
		const char *end = strchrnul(p, ' ');
		if ((size_t)(end - p) == n && !strncmp(p, name, n))
			return 1;
		p = *end ? end + 1 : end;
	}
	return 0;
}

static const struct program *lookup_one(const char *name)
{
	char family[256];
	if (!name || !*name)
		return NULL;
	family_name(name, family, sizeof(family));
	for (size_t i = 0; i < ARRAY_SIZE(programs); i++)
		if (in_names(programs[i].names, name) || in_names(programs[i].names, family))
			return &programs[i];
	return NULL;
}

/* ---- options --------------------------------------------------------------------------------- */

/* The long option (no "--") of arg's name that arg abbreviates or spells, or NULL. */
static const char *long_option_hit(const char *arg, const char *const *longs)
{
	size_t n = strcspn(arg + 2, "=");
	if (n == 0)
		return NULL;
	for (size_t i = 0; longs[i]; i++)
		if (strlen(longs[i]) >= n && !strncmp(longs[i], arg + 2, n))
			return longs[i];
	return NULL;
}

/* The first code-running letter of a short-option bundle (without its '-'), or 0. */
static char short_option_hit(const char *bundle, const char *shorts)
{
	for (const char *p = bundle; *p; p++)
		if (strchr(shorts, *p))
			return *p;
	return 0;
}

static int is_word(const char *arg, const char *const *words)
{
	for (size_t i = 0; words[i]; i++)
		if (!strcmp(arg, words[i]))
			return 1;
	return 0;
}

/* One argument against shorts/longs/words; a reason or NULL. */
static char *option_reason(const char *prog, const char *arg, const char *shorts, const char *const *longs,
			   const char *const *words)
{
	if (is_word(arg, words))
		return xasprintf("%s %s runs a command", prog, arg);
	if (arg[0] == '-' && arg[1] == '-') {
		const char *hit = long_option_hit(arg, longs);
		return hit ? xasprintf("%s %s (--%s) runs a program", prog, arg, hit) : NULL;
	}
	if (arg[0] == '-' && arg[1] && shorts) {
		char c = short_option_hit(arg + 1, shorts);
		return c ? xasprintf("%s %s (-%c) runs a program", prog, arg, c) : NULL;
	}
	return NULL;
}

static char *options_reason(const struct program *p, const char *prog, const char *const *argv)
{
	for (size_t i = 1; argv[i]; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (i == 1 && p->old_style_bundle && argv[1][0] != '-' && p->shorts &&
		    short_option_hit(argv[1], p->shorts))
			return xasprintf("%s %s (an old-style bundle with -%c) runs a program", prog, argv[1],
					 short_option_hit(argv[1], p->shorts));
		char *why = option_reason(prog, argv[i], p->shorts, p->longs, p->words);
		if (why)
			return why;
	}
	return NULL;
}

/* ---- interpreters ---------------------------------------------------------------------------- */

static char *interpreter_reason(const char *prog, const char *const *argv)
{
	static const char *const version_queries[] = { "--version", "-V", "-v", "-version", NULL };
	if (argv[1] && !argv[2] && is_word(argv[1], version_queries))
		return NULL;
	return xasprintf("%s is an interpreter: its arguments (-c, -e, a script, stdin) are code", prog);
}

/* ---- git ------------------------------------------------------------------------------------- */

struct git_subcommand {
	const char *names;
	const char *shorts;
	const char *const *longs;
};

static const char *const git_fetch_longs[] = { "upload-pack", NULL };
static const char *const git_clone_longs[] = { "upload-pack", "config", "template", NULL };
static const char *const git_init_longs[] = { "template", NULL };
static const char *const git_ls_remote_longs[] = { "upload-pack", "exec", NULL };
static const char *const git_push_longs[] = { "receive-pack", "exec", NULL };
static const char *const git_archive_longs[] = { "exec", "remote", NULL };
static const char *const git_rebase_longs[] = { "exec", NULL };
static const char *const git_grep_longs[] = { "open-files-in-pager", "ext-grep", NULL };
static const char *const git_diff_longs[] = { "ext-diff", "textconv", NULL };

static const struct git_subcommand git_subcommands[] = {
	{ "status add rm mv commit restore switch checkout reset branch tag stash merge cherry-pick revert "
	  "clean worktree notes show-ref for-each-ref merge-base rev-parse rev-list ls-files ls-tree cat-file "
	  "describe remote apply am format-patch count-objects fsck gc reflog version var symbolic-ref "
	  "update-ref hash-object mktree write-tree read-tree check-ignore check-attr name-rev",
	  "", none },
	{ "log show diff diff-tree diff-files diff-index whatchanged range-diff blame annotate shortlog", "",
	  git_diff_longs },
	{ "fetch pull", "", git_fetch_longs },
	{ "clone", "uc", git_clone_longs },
	{ "init", "", git_init_longs },
	{ "ls-remote", "u", git_ls_remote_longs },
	{ "push", "", git_push_longs },
	{ "archive", "", git_archive_longs },
	{ "rebase", "x", git_rebase_longs },
	{ "grep", "O", git_grep_longs },
};

/* Global options of git that run nothing; 1 when argv[*i] is one (advancing past its value). */
static int git_harmless_global(const char *const *argv, size_t *i)
{
	static const char *const flags[] = { "--no-pager",
					     "-P",
					     "--bare",
					     "--no-replace-objects",
					     "--literal-pathspecs",
					     "--glob-pathspecs",
					     "--noglob-pathspecs",
					     "--icase-pathspecs",
					     "--no-optional-locks",
					     "--version",
					     NULL };
	static const char *const valued[] = { "-C", "--git-dir", "--work-tree", "--namespace", NULL };
	const char *a = argv[*i];
	if (is_word(a, flags)) {
		(*i)++;
		return 1;
	}
	for (size_t k = 0; valued[k]; k++) {
		size_t n = strlen(valued[k]);
		if (!strcmp(a, valued[k]) && argv[*i + 1]) {
			*i += 2;
			return 1;
		}
		if (!strncmp(a, valued[k], n) && a[n] == '=' && valued[k][1] == '-') {
			(*i)++;
			return 1;
		}
	}
	return 0;
}

static int git_config_reads_only(const char *const *argv)
{
	static const char *const reading[] = { "--get",	 "--get-all", "--get-regexp", "--get-urlmatch",
					       "--list", "-l",	      "get",	      "list",
					       NULL };
	for (size_t i = 1; argv[i]; i++)
		if (is_word(argv[i], reading))
			return 1;
	return 0;
}

static char *git_reason(const char *const *argv)
{
	size_t i = 1;
	while (argv[i] && argv[i][0] == '-')
		if (!git_harmless_global(argv, &i))
			return xasprintf("git %s: a global option that runs code (-c, --config-env, "
					 "--exec-path, -p) or is not recognised",
					 argv[i]);
	const char *sub = argv[i];
	if (!sub)
		return NULL;
	if (!strcmp(sub, "config"))
		return git_config_reads_only(argv + i) ? NULL
						       : xstrdup("git config that writes configuration sets what "
								 "later git commands run (aliases, pagers, hooks)");
	for (size_t k = 0; k < ARRAY_SIZE(git_subcommands); k++) {
		const struct git_subcommand *s = &git_subcommands[k];
		if (!in_names(s->names, sub))
			continue;
		for (size_t j = i + 1; argv[j]; j++) {
			if (!strcmp(argv[j], "--") || !strcmp(argv[j], "--end-of-options"))
				break;
			char *why = option_reason("git", argv[j], s->shorts, s->longs, none);
			if (why)
				return why;
		}
		return NULL;
	}
	return xasprintf("git %s: not a git command known to run no other program (an alias or an "
			 "external git-%s could run anything)",
			 sub, sub);
}

/* ---- awk ------------------------------------------------------------------------------------- */

static char *awk_reason(const char *prog, const char *const *argv)
{
	static const char *const longs[] = { "file", "exec", "include", "load", NULL };
	for (size_t i = 1; argv[i]; i++) {
		const char *a = argv[i];
		if (strstr(a, "system") || strchr(a, '|') || strchr(a, '@'))
			return xasprintf("%s program text with system, | or @ runs commands", prog);
		if (a[0] == '-' && a[1] == '-' && a[2] && long_option_hit(a, longs))
			return xasprintf("%s %s reads program code from a file or library", prog, a);
		if (a[0] == '-' && a[1] != '-' && short_option_hit(a + 1, "fEilW"))
			return xasprintf("%s %s reads program code from a file, a library or -W", prog, a);
	}
	return NULL;
}

/* ---- sed ------------------------------------------------------------------------------------- */

static const char *skip_bracket(const char *p)
{
	const char *q = p + 1;
	if (*q == '^')
		q++;
	if (*q == ']')
		q++;
	while (*q && *q != ']') {
		if (*q == '[' && q[1] && strchr(":.=", q[1])) {
			char close[3] = { q[1], ']', '\0' };
			q = strstr(q + 2, close);
			if (!q)
				return NULL;
			q += 2;
			continue;
		}
		q++;
	}
	return *q ? q + 1 : NULL;
}

/* p just after the opening delimiter; returns just after the closing one, or NULL. */
static const char *skip_delimited(const char *p, char delim, int is_regex)
{
	while (*p) {
		if (*p == '\\') {
			if (!p[1])
				return NULL;
			p += 2;
			continue;
		}
		if (*p == delim)
			return p + 1;
		if (is_regex && *p == '\n')
			return NULL;
		if (is_regex && *p == '[') {
			p = skip_bracket(p);
			if (!p)
				return NULL;
			continue;
		}
		p++;
	}
	return NULL;
}

static int usable_delimiter(char c)
{
	return c && c != '\n' && c != '\\' && c != '[' && c != ']' && !(c >= '0' && c <= '9') &&
	       !((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static const char *skip_one_address(const char *p)
{
	if (*p >= '0' && *p <= '9') {
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p == '~')
			for (p++; *p >= '0' && *p <= '9'; p++)
				;
		return p;
	}
	if (*p == '$')
		return p + 1;
	if (*p == '/' || *p == '\\') {
		char delim = *p == '/' ? '/' : p[1];
		if (*p == '\\' && !usable_delimiter(delim))
			return NULL;
		p = skip_delimited(p + (*p == '/' ? 1 : 2), delim, 1);
		while (p && (*p == 'I' || *p == 'M'))
			p++;
		return p;
	}
	return p;
}

static const char *skip_addresses(const char *p)
{
	p = skip_one_address(p);
	if (p && *p == ',') {
		p++;
		if (*p == '+' || *p == '~')
			p++;
		p = skip_one_address(p);
	}
	while (p && (*p == ' ' || *p == '\t'))
		p++;
	if (p && *p == '!')
		for (p++; *p == ' ' || *p == '\t'; p++)
			;
	return p;
}

static const char *to_line_end(const char *p)
{
	while (*p && *p != '\n') {
		if (*p == '\\' && p[1])
			p++;
		p++;
	}
	return p;
}

/* A label or number argument: GNU sed ends it at a blank, ';' or a newline (and the next command
 * starts right there), so this never reads further than sed does. */
static const char *to_argument_end(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	while (*p && !strchr(" \t\n;}", *p))
		p++;
	return p;
}

/* s and y: two (s: then flags) delimited parts. 1 when the flags include e, -1 when unparsable. */
static int sed_substitution(const char **pp, int is_s)
{
	const char *p = *pp;
	char delim = *p;
	if (!usable_delimiter(delim))
		return -1;
	p = skip_delimited(p + 1, delim, 1);
	if (p)
		p = skip_delimited(p, delim, 0);
	if (!p)
		return -1;
	while (is_s && *p && !strchr(";\n}", *p)) {
		if (*p == 'e')
			return 1;
		if (*p == 'w' || *p == 'W') {
			p = to_line_end(p);
			break;
		}
		p++;
	}
	*pp = p;
	return 0;
}

/* 1 when the sed script runs commands (the e command or the s///e flag), 0 when not, -1 unparsable. */
static int sed_script_runs_code(const char *s)
{
	const char *p = s;
	for (;;) {
		while (*p && strchr(" \t\n;", *p))
			p++;
		if (!*p)
			return 0;
		p = skip_addresses(p);
		if (!p || !*p)
			return -1;
		char c = *p++;
		if (c == 'e')
			return 1;
		if (c == 's' || c == 'y') {
			int r = sed_substitution(&p, c == 's');
			if (r)
				return r;
		} else if (strchr("#aicrRwW", c)) {
			p = to_line_end(p);
		} else if (strchr(":btTvlLqQ", c)) {
			p = to_argument_end(p);
		} else if (!strchr("{}=dDgGhHnNpPxzF", c)) {
			return -1;
		}
	}
}

/* A reason when the sed script text runs code (or cannot be parsed), else NULL. */
static char *sed_script_reason(const char *prog, const char *script)
{
	int r = sed_script_runs_code(script);
	if (!r)
		return NULL;
	return xasprintf(r > 0 ? "%s script runs a command (the e command or the s///e flag)"
			       : "%s script could not be parsed to rule out the e command",
			 prog);
}

static char *sed_reason(const char *prog, const char *const *argv)
{
	static const char *const flags[] = { "-n",	    "-E",
					     "-r",	    "-s",
					     "-z",	    "-u",
					     "--posix",	    "--debug",
					     "--sandbox",   "--follow-symlinks",
					     "--quiet",	    "--silent",
					     "--null-data", "--regexp-extended",
					     "--separate",  "--unbuffered",
					     NULL };
	int have_script = 0;
	for (size_t i = 1; argv[i]; i++) {
		const char *a = argv[i], *script = NULL;
		if (!strcmp(a, "--")) {
			return have_script || !argv[i + 1] ? NULL : sed_script_reason(prog, argv[i + 1]);
		} else if (!strcmp(a, "-e") || !strcmp(a, "--expression")) {
			script = argv[++i];
			if (!script)
				return xasprintf("%s %s without a script", prog, a);
		} else if (!strncmp(a, "-e", 2)) {
			script = a + 2;
		} else if (!strncmp(a, "--expression=", 13)) {
			script = a + 13;
		} else if (!strncmp(a, "--file", 6) || (a[0] == '-' && a[1] == 'f')) {
			return xasprintf("%s %s: a script file is code that was not checked", prog, a);
		} else if (!strncmp(a, "-i", 2) || !strncmp(a, "--in-place", 10) || !strncmp(a, "-l", 2) ||
			   !strncmp(a, "--line-length=", 14) || is_word(a, flags)) {
			if (!strcmp(a, "-l") && argv[i + 1])
				i++;
			continue;
		} else if (a[0] == '-' && a[1]) {
			return xasprintf("%s %s: an option not recognised (bundles and abbreviations are not "
					 "parsed here)",
					 prog, a);
		} else if (!have_script) {
			script = a;
		}
		if (script) {
			have_script = 1;
			char *why = sed_script_reason(prog, script);
			if (why)
				return why;
		}
	}
	return NULL;
}

/* ---- the table ------------------------------------------------------------------------------- */

char *appr_code_running(const char *word_base, const char *resolved_base, const char *const *argv, int expands,
			int *always)
{
	*always = 0;
	const struct program *p = lookup_one(resolved_base);
	const char *prog = resolved_base;
	if (!p) {
		p = lookup_one(word_base);
		prog = word_base;
	}
	if (!p)
		return NULL;
	if (expands)
		return xasprintf("%s with arguments the shell expands (glob, brace, ~): they could become "
				 "options that run code",
				 prog);
	switch (p->kind) {
	case KIND_ALWAYS:
		*always = 1;
		return xasprintf("%s runs code of its own (recipes, scripts, commands it is given)", prog);
	case KIND_INTERPRETER: {
		char *why = interpreter_reason(prog, argv);
		*always = why != NULL;
		return why;
	}
	case KIND_GIT:
		return git_reason(argv);
	case KIND_AWK:
		return awk_reason(prog, argv);
	case KIND_SED:
		return sed_reason(prog, argv);
	case KIND_OPTIONS:
	default:
		return options_reason(p, prog, argv);
	}
}

int appr_is_git(const char *word_base, const char *resolved_base)
{
	const struct program *p = lookup_one(resolved_base);
	if (!p)
		p = lookup_one(word_base);
	return p && p->kind == KIND_GIT;
}

/* ---- argv patterns --------------------------------------------------------------------------- */

int appr_pattern_has_argv(const char *pattern)
{
	for (const char *p = pattern; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p == ' ')
			return 1;
	}
	return 0;
}

/* A word glob: * any characters (also '/'), ? one, \x literal; anchored. */
static int word_glob_match(const char *pat, const char *s)
{
	const char *star = NULL, *resume = NULL;
	while (*s) {
		if (*pat == '*') {
			star = ++pat;
			resume = s;
			continue;
		}
		int match;
		const char *next;
		if (*pat == '?') {
			match = 1;
			next = pat + 1;
		} else if (*pat == '\\' && pat[1]) {
			match = pat[1] == *s;
			next = pat + 2;
		} else {
			match = *pat && *pat == *s;
			next = pat + 1;
		}
		if (match) {
			pat = next;
			s++;
			continue;
		}
		if (!star)
			return 0;
		pat = star;
		s = ++resume;
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

/* The next token of an argv pattern (unescaped spaces separate; escapes are kept for the glob). */
static const char *next_token(const char *p, struct strbuf *tok)
{
	strbuf_reset(tok);
	while (*p == ' ')
		p++;
	if (!*p)
		return NULL;
	while (*p && *p != ' ') {
		if (*p == '\\' && p[1]) {
			if (p[1] != ' ')
				strbuf_addch(tok, '\\');
			strbuf_addch(tok, p[1]);
			p += 2;
			continue;
		}
		strbuf_addch(tok, *p++);
	}
	return p;
}

int appr_argv_pattern_match(const char *pattern, const char *resolved, const char *const *argv, const char *home,
			    int *trailing)
{
	struct strbuf tok = STRBUF_INIT;
	*trailing = 0;
	const char *p = next_token(pattern, &tok);
	int ok = p && appr_glob_match(tok.buf, resolved, home);
	size_t i = 1;
	while (ok && (p = next_token(p, &tok))) {
		if (!strcmp(tok.buf, "*") && !p[strspn(p, " ")]) {
			*trailing = 1;
			i = SIZE_MAX;
			break;
		}
		ok = argv[0] && argv[i] && word_glob_match(tok.buf, argv[i]);
		i++;
	}
	if (ok && i != SIZE_MAX)
		ok = argv[0] && !argv[i];
	strbuf_release(&tok);
	return ok;
}
