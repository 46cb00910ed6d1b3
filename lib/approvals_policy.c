/* approvals_policy.c — exec-approval policy of approvals_policy.h: levels, resolution, analysis.
 * Never matches text when it could match a resolved file; anything not positively understood fails closed. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approvals_gitconfig.h"
#include "approvals_glob.h"
#include "approvals_pin.h"
#include "approvals_policy.h"
#include "approvals_programs.h"
#include "approvals_sshconfig.h"
#include "strbuf.h"
#include "banned.h"

/* ---- levels ---------------------------------------------------------------------------------- */

static const char *const security_names[] = { "deny", "allowlist", "full" };
static const char *const ask_names[] = { "off", "on-miss", "always" };

static int parse_name(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}

int appr_security_parse(const char *s)
{
	return parse_name(s, security_names, 3);
}
int appr_ask_parse(const char *s)
{
	return parse_name(s, ask_names, 3);
}

const char *appr_security_name(int level)
{
	return level >= 0 && level < 3 ? security_names[level] : NULL;
}

const char *appr_ask_name(int level)
{
	return level >= 0 && level < 3 ? ask_names[level] : NULL;
}

const char *appr_decision_name(enum appr_decision d)
{
	return d == APPR_ALLOW ? "allow" : d == APPR_ASK ? "ask" : "deny";
}

static int host_value(const struct appr_levels *agent, const struct appr_levels *star, int dflt, size_t offset)
{
	const int *a = agent ? (const int *)((const char *)agent + offset) : NULL;
	const int *s = star ? (const int *)((const char *)star + offset) : NULL;
	if (a && *a != APPR_UNSET)
		return *a;
	if (s && *s != APPR_UNSET)
		return *s;
	return dflt;
}

static int min_int(int a, int b)
{
	return a < b ? a : b;
}
static int max_int(int a, int b)
{
	return a > b ? a : b;
}

void appr_policy_resolve(const struct appr_levels *request, const struct appr_levels *agent,
			 const struct appr_levels *star, const struct appr_levels *defaults, struct appr_effective *out)
{
	int host_sec = host_value(agent, star, defaults->security, offsetof(struct appr_levels, security));
	int host_ask = host_value(agent, star, defaults->ask, offsetof(struct appr_levels, ask));
	int host_fb = host_value(agent, star, defaults->ask_fallback, offsetof(struct appr_levels, ask_fallback));
	int sec = host_sec, ask = host_ask, fb = host_fb;
	if (request && request->security != APPR_UNSET)
		sec = min_int(request->security, host_sec);
	if (request && request->ask != APPR_UNSET)
		ask = max_int(request->ask, host_ask);
	if (request && request->ask_fallback != APPR_UNSET)
		fb = min_int(request->ask_fallback, host_fb);
	out->security = (enum appr_security)sec;
	out->ask = (enum appr_ask)ask;
	out->ask_fallback = (enum appr_security)min_int(fb, sec);
}

/* ---- resolution ------------------------------------------------------------------------------ */

static int is_executable_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static char *canonical_executable(const char *candidate, const char *word, struct err *e)
{
	char buf[PATH_MAX];
	if (!realpath(candidate, buf)) {
		if (errno == ENOENT || errno == ENOTDIR)
			err_set(e, E_NOT_FOUND, "%s: not found", word);
		else
			err_errno(e, errno, "%s: cannot resolve", word);
		return NULL;
	}
	if (!is_executable_file(buf)) {
		err_set(e, E_NOT_FOUND, "%s: not a regular executable file (%s)", word, buf);
		return NULL;
	}
	return xstrdup(buf);
}

char *appr_resolve_executable(const char *word, const char *cwd, const char *path_env, struct err *e)
{
	if (!*word) {
		err_set(e, E_NOT_FOUND, "empty command name");
		return NULL;
	}
	if (strchr(word, '/')) {
		if (word[0] == '/' || !cwd)
			return canonical_executable(word, word, e);
		_cleanup_free_ char *full = xasprintf("%s/%s", cwd, word);
		return canonical_executable(full, word, e);
	}
	const char *dirs = path_env ? path_env : APPR_DEFAULT_PATH;
	if (appr_path_entries_check(dirs, e) < 0)
		return NULL;
	while (*dirs) {
		const char *end = strchrnul(dirs, ':');
		_cleanup_free_ char *cand = xasprintf("%.*s/%s", (int)(end - dirs), dirs, word);
		if (is_executable_file(cand))
			return canonical_executable(cand, word, e);
		dirs = *end ? end + 1 : end;
	}
	err_set(e, E_NOT_FOUND, "%s: command not found in PATH", word);
	return NULL;
}

/* ---- shell text ------------------------------------------------------------------------------ */

static const char *const reserved_words[] = {
	"if",  "then", "else",	   "elif",   "fi", "do", "done", "case", "esac", "while",  "until",
	"for", "in",   "function", "select", "!",  "[[", "]]",	 "{",	 "}",	 "coproc",
};

/* Where a word of shell text is, and whether the shell expands it (unquoted glob, brace or ~). */
struct word_meta {
	size_t start, end; /* bytes [start, end) of the text, quotes included */
	int expands;
};

struct splitter {
	struct strvec *segs;
	struct word_meta **metas; /* per segment, one per word */
	size_t nr;
	struct strbuf word;
	int in_word;
	int word_glob, word_tilde, word_assign; /* unquoted *?[, leading ~, = in the current word */
	int word_expands;			/* any unquoted * ? [ { } ~ in the current word */
	size_t word_start, pos;			/* where the current word began; where the scan is */
	struct err *e;
};

static int refuse(struct splitter *s, const char *why)
{
	return err_set(s->e, E_PERMISSION_DENIED, "shell text is not allowlistable: %s", why);
}

static struct strvec *current_segment(struct splitter *s)
{
	return &s->segs[s->nr - 1];
}

static int end_word(struct splitter *s)
{
	if (!s->in_word)
		return 0;
	struct strvec *seg = current_segment(s);
	if (seg->nr == 0) { /* the command word */
		if (s->word_glob)
			return refuse(s, "glob or brace characters in a command name");
		if (s->word_tilde)
			return refuse(s, "~ in a command name");
		if (s->word_assign)
			return refuse(s, "variable assignment before a command");
		for (size_t i = 0; i < ARRAY_SIZE(reserved_words); i++)
			if (!strcmp(s->word.buf, reserved_words[i]))
				return refuse(s, "shell reserved word");
	}
	s->metas[s->nr - 1] = xrealloc(s->metas[s->nr - 1], (seg->nr + 1) * sizeof(struct word_meta));
	s->metas[s->nr - 1][seg->nr] = (struct word_meta){ s->word_start, s->pos, s->word_expands };
	strvec_push(seg, s->word.buf);
	strbuf_reset(&s->word);
	s->in_word = s->word_glob = s->word_tilde = s->word_assign = s->word_expands = 0;
	return 0;
}

static int end_segment(struct splitter *s)
{
	if (end_word(s) < 0)
		return -1;
	if (current_segment(s)->nr == 0)
		return refuse(s, "empty command");
	s->segs = xrealloc(s->segs, (s->nr + 1) * sizeof(*s->segs));
	s->metas = xrealloc(s->metas, (s->nr + 1) * sizeof(*s->metas));
	s->metas[s->nr] = NULL;
	strvec_init(&s->segs[s->nr++]);
	return 0;
}

static void word_char(struct splitter *s, char c)
{
	s->in_word = 1;
	strbuf_addch(&s->word, c);
}

/* Reads a double-quoted string starting after the quote; returns the position after the closing one. */
static const char *double_quoted(struct splitter *s, const char *p)
{
	s->in_word = 1;
	for (; *p != '"'; p++) {
		if (!*p) {
			refuse(s, "unterminated double quote");
			return NULL;
		}
		if (*p == '$' || *p == '`') {
			refuse(s, "expansion or command substitution");
			return NULL;
		}
		if (*p == '\n' || *p == '\r') {
			refuse(s, "newline");
			return NULL;
		}
		if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
			p++;
		strbuf_addch(&s->word, *p);
	}
	return p + 1;
}

static const char *single_quoted(struct splitter *s, const char *p)
{
	s->in_word = 1;
	for (; *p != '\''; p++) {
		if (!*p) {
			refuse(s, "unterminated single quote");
			return NULL;
		}
		if (*p == '\n' || *p == '\r') {
			refuse(s, "newline");
			return NULL;
		}
		strbuf_addch(&s->word, *p);
	}
	return p + 1;
}

/* One unquoted character (or operator); returns the next position or NULL after a refusal. */
static const char *unquoted(struct splitter *s, const char *p)
{
	char c = *p;
	switch (c) {
	case ' ':
	case '\t':
		return end_word(s) < 0 ? NULL : p + 1;
	case '\n':
	case '\r':
		refuse(s, "newline");
		return NULL;
	case ';':
		if (p[1] == ';' || p[1] == '&') {
			refuse(s, "case terminator");
			return NULL;
		}
		return end_segment(s) < 0 ? NULL : p + 1;
	case '&':
		if (p[1] == '&')
			return end_segment(s) < 0 ? NULL : p + 2;
		refuse(s, p[1] == '>' ? "redirection" : "background &");
		return NULL;
	case '|':
		if (p[1] == '&') {
			refuse(s, "|& (stderr pipe)");
			return NULL;
		}
		return end_segment(s) < 0 ? NULL : p + (p[1] == '|' ? 2 : 1);
	case '<':
	case '>':
		refuse(s, "redirection or heredoc");
		return NULL;
	case '(':
	case ')':
		refuse(s, "subshell or grouping");
		return NULL;
	case '`':
	case '$':
		refuse(s, "expansion or command substitution");
		return NULL;
	case '#':
		if (!s->in_word) {
			refuse(s, "comment");
			return NULL;
		}
		break;
	case '\\':
		if (!p[1] || p[1] == '\n' || p[1] == '\r') {
			refuse(s, "trailing backslash or line continuation");
			return NULL;
		}
		word_char(s, p[1]);
		return p + 2;
	case '"':
		return double_quoted(s, p + 1);
	case '\'':
		return single_quoted(s, p + 1);
	case '*':
	case '?':
	case '[':
		s->word_glob = s->word_expands = 1;
		break;
	case '~':
		if (!s->in_word)
			s->word_tilde = 1;
		s->word_expands = 1;
		break;
	case '=':
		s->word_assign = 1;
		break;
	case '{':
	case '}':
		if (!s->in_word && current_segment(s)->nr == 0) {
			refuse(s, "command group");
			return NULL;
		}
		s->word_glob = s->word_expands = 1; /* brace expansion: never in a command name */
		break;
	default:
		break;
	}
	word_char(s, c);
	return p + 1;
}

static void metas_free(struct word_meta **metas, size_t nr)
{
	for (size_t i = 0; metas && i < nr; i++)
		free(metas[i]);
	free(metas);
}

/* appr_shell_split, also returning where each word is (metas: caller frees with metas_free). */
static int split_text(const char *text, struct strvec **segments, struct word_meta ***metas, size_t *nr, struct err *e)
{
	struct splitter s = { .segs = xcalloc(1, sizeof(struct strvec)),
			      .metas = xcalloc(1, sizeof(struct word_meta *)),
			      .nr = 1,
			      .e = e };
	strvec_init(&s.segs[0]);
	strbuf_init(&s.word, 0);
	const char *p = text;
	int rc = 0;
	while (p && *p) {
		int was_in_word = s.in_word;
		s.pos = (size_t)(p - text);
		const char *at = p;
		p = unquoted(&s, p);
		if (p && !was_in_word && s.in_word)
			s.word_start = (size_t)(at - text);
	}
	s.pos = strlen(text);
	if (!p || end_word(&s) < 0)
		rc = -1;
	/* A trailing `;` leaves an empty last segment: drop it; any other empty one is an error. */
	if (rc == 0 && current_segment(&s)->nr == 0) {
		size_t len = strlen(text);
		while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
			len--;
		if (s.nr > 1 && len > 0 && text[len - 1] == ';') {
			strvec_clear(&s.segs[--s.nr]);
			free(s.metas[s.nr]);
			s.metas[s.nr] = NULL;
		} else {
			rc = refuse(&s, s.nr > 1 ? "a trailing operator" : "empty command");
		}
	}
	strbuf_release(&s.word);
	if (rc < 0) {
		appr_segments_free(s.segs, s.nr);
		metas_free(s.metas, s.nr);
		*segments = NULL;
		*metas = NULL;
		*nr = 0;
		return -1;
	}
	*segments = s.segs;
	*metas = s.metas;
	*nr = s.nr;
	return 0;
}

int appr_shell_split(const char *text, struct strvec **segments, size_t *nr, struct err *e)
{
	struct word_meta **metas;
	if (split_text(text, segments, &metas, nr, e) < 0)
		return -1;
	metas_free(metas, *nr);
	return 0;
}

void appr_segments_free(struct strvec *segments, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		strvec_clear(&segments[i]);
	free(segments);
}

/* ---- wrappers -------------------------------------------------------------------------------- */

enum wrapper_kind {
	KIND_PLAIN = 0,
	KIND_SHELL, /* sh bash dash zsh: -c / -lc payloads */
	KIND_NICE,
	KIND_NOHUP,
	KIND_TIMEOUT,
	KIND_STDBUF,
	KIND_TIME,
	KIND_ENV,
	KIND_FAIL_CLOSED, /* runs another command in a way we do not analyse */
};

static const struct {
	const char *name;
	enum wrapper_kind kind;
} wrapper_names[] = {
	{ "sh", KIND_SHELL },
	{ "bash", KIND_SHELL },
	{ "dash", KIND_SHELL },
	{ "zsh", KIND_FAIL_CLOSED }, /* reads ~/.zshenv (the caller's code) even for -c */
	{ "nice", KIND_NICE },
	{ "nohup", KIND_NOHUP },
	{ "timeout", KIND_TIMEOUT },
	{ "stdbuf", KIND_STDBUF },
	{ "time", KIND_TIME },
	{ "env", KIND_ENV },
	/* other shells, privilege changers, launchers and multi-call binaries */
	{ "ash", KIND_FAIL_CLOSED },
	{ "ksh", KIND_FAIL_CLOSED },
	{ "ksh93", KIND_FAIL_CLOSED },
	{ "mksh", KIND_FAIL_CLOSED },
	{ "rbash", KIND_FAIL_CLOSED },
	{ "fish", KIND_FAIL_CLOSED },
	{ "csh", KIND_FAIL_CLOSED },
	{ "tcsh", KIND_FAIL_CLOSED },
	{ "busybox", KIND_FAIL_CLOSED },
	{ "toybox", KIND_FAIL_CLOSED },
	{ "coreutils", KIND_FAIL_CLOSED },
	{ "sudo", KIND_FAIL_CLOSED },
	{ "doas", KIND_FAIL_CLOSED },
	{ "su", KIND_FAIL_CLOSED },
	{ "runuser", KIND_FAIL_CLOSED },
	{ "pkexec", KIND_FAIL_CLOSED },
	{ "setsid", KIND_FAIL_CLOSED },
	{ "setpriv", KIND_FAIL_CLOSED },
	{ "capsh", KIND_FAIL_CLOSED },
	{ "chroot", KIND_FAIL_CLOSED },
	{ "unshare", KIND_FAIL_CLOSED },
	{ "nsenter", KIND_FAIL_CLOSED },
	{ "xargs", KIND_FAIL_CLOSED },
	{ "parallel", KIND_FAIL_CLOSED },
	{ "flock", KIND_FAIL_CLOSED },
	{ "watch", KIND_FAIL_CLOSED },
	{ "strace", KIND_FAIL_CLOSED },
	{ "ltrace", KIND_FAIL_CLOSED },
	{ "gdb", KIND_FAIL_CLOSED },
	{ "chrt", KIND_FAIL_CLOSED },
	{ "ionice", KIND_FAIL_CLOSED },
	{ "taskset", KIND_FAIL_CLOSED },
	{ "numactl", KIND_FAIL_CLOSED },
	{ "script", KIND_FAIL_CLOSED },
	{ "fakeroot", KIND_FAIL_CLOSED },
	{ "firejail", KIND_FAIL_CLOSED },
	{ "bwrap", KIND_FAIL_CLOSED },
	{ "systemd-run", KIND_FAIL_CLOSED },
	{ "start-stop-daemon", KIND_FAIL_CLOSED },
	{ "run-parts", KIND_FAIL_CLOSED },
	{ "exec", KIND_FAIL_CLOSED },
	{ "eval", KIND_FAIL_CLOSED },
	{ "command", KIND_FAIL_CLOSED },
	{ "builtin", KIND_FAIL_CLOSED },
	{ "source", KIND_FAIL_CLOSED },
	{ ".", KIND_FAIL_CLOSED },
	{ "agor", KIND_FAIL_CLOSED },
	/* more programs whose arguments are a program to run */
	{ "valgrind", KIND_FAIL_CLOSED },
	{ "perf", KIND_FAIL_CLOSED },
	{ "unbuffer", KIND_FAIL_CLOSED },
	{ "sg", KIND_FAIL_CLOSED },
	{ "newgrp", KIND_FAIL_CLOSED },
	{ "ssh-agent", KIND_FAIL_CLOSED },
	{ "dbus-run-session", KIND_FAIL_CLOSED },
	{ "xvfb-run", KIND_FAIL_CLOSED },
	{ "catchsegv", KIND_FAIL_CLOSED },
	{ "proxychains", KIND_FAIL_CLOSED },
	{ "proxychains4", KIND_FAIL_CLOSED },
	{ "torsocks", KIND_FAIL_CLOSED },
	{ "setarch", KIND_FAIL_CLOSED },
	{ "linux32", KIND_FAIL_CLOSED },
	{ "linux64", KIND_FAIL_CLOSED },
	{ "prlimit", KIND_FAIL_CLOSED },
	{ "faketime", KIND_FAIL_CLOSED },
	{ "eatmydata", KIND_FAIL_CLOSED },
	{ "fakechroot", KIND_FAIL_CLOSED },
	{ "chpst", KIND_FAIL_CLOSED },
	{ "tmux", KIND_FAIL_CLOSED },
	{ "screen", KIND_FAIL_CLOSED },
	{ "sshpass", KIND_FAIL_CLOSED },
	{ "entr", KIND_FAIL_CLOSED },
	{ "rlwrap", KIND_FAIL_CLOSED },
	{ "ld.so", KIND_FAIL_CLOSED },
	{ "cgexec", KIND_FAIL_CLOSED },
	{ "systemd-nspawn", KIND_FAIL_CLOSED },
	{ "runcon", KIND_FAIL_CLOSED },
	{ "run0", KIND_FAIL_CLOSED },
	{ "machinectl", KIND_FAIL_CLOSED },
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static enum wrapper_kind wrapper_kind(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(wrapper_names); i++)
		if (!strcmp(name, wrapper_names[i].name))
			return wrapper_names[i].kind;
	if (!strncmp(name, "agor-", 5) || !strncmp(name, "ld-linux", 8) || !strncmp(name, "ld-musl", 7))
		return KIND_FAIL_CLOSED; /* the dynamic loader runs any program it is given */
	return KIND_PLAIN;
}

int appr_is_shell_or_wrapper(const char *basename)
{
	return wrapper_kind(basename) != KIND_PLAIN;
}

static int is_integer(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* timeout's DURATION: digits, an optional fraction, an optional unit s|m|h|d. */
static int is_duration(const char *s)
{
	const char *p = s;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p == s)
		return 0;
	if (*p == '.') {
		const char *f = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p == f)
			return 0;
	}
	if (*p && strchr("smhd", *p))
		p++;
	return *p == '\0';
}

static int is_stdbuf_mode(const char *s)
{
	return !strcmp(s, "L") || !strcmp(s, "0") || is_integer(s);
}

static int is_signal_name(const char *s)
{
	if (is_integer(s))
		return 1;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '+' || *p == '-'))
			return 0;
	return *s != '\0';
}

/* Matches "--long=VALUE" or "--long" "VALUE" (exact spelling only); advances *i past it. */
static int long_option(const char *const *argv, size_t *i, const char *name, int (*valid)(const char *))
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, n))
		return 0;
	if (a[n] == '=' && valid(a + n + 1)) {
		(*i)++;
		return 1;
	}
	if (a[n] == '\0' && argv[*i + 1] && valid(argv[*i + 1])) {
		*i += 2;
		return 1;
	}
	return 0;
}

/* Matches "-X VALUE" or "-XVALUE"; advances *i past it. */
static int short_option(const char *const *argv, size_t *i, char letter, int (*valid)(const char *))
{
	const char *a = argv[*i];
	if (a[0] != '-' || a[1] != letter)
		return 0;
	if (a[2] && valid(a + 2)) {
		(*i)++;
		return 1;
	}
	if (!a[2] && argv[*i + 1] && valid(argv[*i + 1])) {
		*i += 2;
		return 1;
	}
	return 0;
}

static int negative_integer_flag(const char *a)
{
	return a[0] == '-' && is_integer(a + 1) && a[1] != '-' && a[1] != '+';
}

/*
 * Index of the wrapped command in argv, or -1 when the wrapper's options are not all recognised
 * (or no command follows). Options are matched by exact spelling: GNU getopt would accept
 * abbreviations (`--adj`) and bundles, which is exactly why anything else fails closed.
 */
static long wrapped_command_index(enum wrapper_kind kind, const char *const *argv)
{
	size_t i = 1;
	for (;;) {
		const char *a = argv[i];
		if (!a)
			return -1;
		if (!strcmp(a, "--")) {
			if (kind == KIND_ENV)
				return -1;
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		switch (kind) {
		case KIND_NICE:
			if (short_option(argv, &i, 'n', is_integer) ||
			    long_option(argv, &i, "--adjustment", is_integer))
				continue;
			if (negative_integer_flag(a)) {
				i++;
				continue;
			}
			return -1;
		case KIND_TIMEOUT:
			if (short_option(argv, &i, 's', is_signal_name) ||
			    long_option(argv, &i, "--signal", is_signal_name) ||
			    short_option(argv, &i, 'k', is_duration) ||
			    long_option(argv, &i, "--kill-after", is_duration))
				continue;
			if (!strcmp(a, "--preserve-status") || !strcmp(a, "--foreground") || !strcmp(a, "-v") ||
			    !strcmp(a, "--verbose")) {
				i++;
				continue;
			}
			return -1;
		case KIND_STDBUF:
			if (short_option(argv, &i, 'i', is_stdbuf_mode) ||
			    short_option(argv, &i, 'o', is_stdbuf_mode) ||
			    short_option(argv, &i, 'e', is_stdbuf_mode) ||
			    long_option(argv, &i, "--input", is_stdbuf_mode) ||
			    long_option(argv, &i, "--output", is_stdbuf_mode) ||
			    long_option(argv, &i, "--error", is_stdbuf_mode))
				continue;
			return -1;
		case KIND_TIME:
			if (!strcmp(a, "-p")) {
				i++;
				continue;
			}
			return -1;
		default: /* nohup, env: no options at all */
			return -1;
		}
	}
	if (kind == KIND_TIMEOUT) {
		if (!argv[i] || !is_duration(argv[i]))
			return -1;
		i++;
	}
	if (!argv[i])
		return -1;
	if (kind == KIND_ENV && (argv[i][0] == '-' || strchr(argv[i], '=')))
		return -1;
	return (long)i;
}

/* ---- analysis -------------------------------------------------------------------------------- */

/* The shell-text segment being analysed: its words, where they are, and what replaces them. */
struct shell_segment {
	const char *const *words;
	const struct word_meta *meta;
	char **subst; /* per word: the text that replaces it in the rewritten shell text, or NULL */
};

struct analyzer {
	const char *cwd;
	const char *path_env;
	const char *const *top;	   /* the argv given to appr_analyze */
	struct shell_segment *seg; /* inside shell text: the segment; NULL outside */
	struct appr_analysis *out;
};

/* Builtins that change how the shell finds or runs later commands, or that are no program at all. */
static const char *const refused_builtins[] = {
	"alias", "unalias",  "enable",	  "hash",    "declare", "typeset", "export",  "readonly", "local",
	"read",	 "mapfile",  "readarray", "set",     "shopt",	"unset",   "trap",    "let",	  "getopts",
	"bind",	 "complete", "compgen",	  "compopt", "ulimit",	"umask",   "fc",      "history",  "cd",
	"pushd", "popd",     "source",	  ".",	     "eval",	"exec",	   "command", "builtin",  "type",
	"wait",	 "jobs",     "fg",	  "bg",	     "disown",	"suspend", "logout",  "exit",	  "return",
	"break", "continue", "shift",	  "times",   "caller",	"dirs",	   "help",
};

static int fail(struct analyzer *z, const char *fmt, ...) PRINTF_LIKE(2, 3);
static int fail(struct analyzer *z, const char *fmt, ...)
{
	if (!z->out->reason) {
		struct strbuf sb = STRBUF_INIT;
		va_list ap;
		va_start(ap, fmt);
		strbuf_vaddf(&sb, fmt, ap);
		va_end(ap);
		z->out->reason = strbuf_detach(&sb, NULL);
	}
	z->out->ok = 0;
	return -1;
}

/* 1 when word k of argv (inside shell text) is expanded by the shell. */
static int word_expands(const struct analyzer *z, const char *const *argv, size_t k)
{
	return z->seg && z->seg->meta[(size_t)(argv - z->seg->words) + k].expands;
}

/* Word k of argv becomes text in what runs: in the rewritten shell text, or in exec_argv. */
static void replace_word(struct analyzer *z, const char *const *argv, size_t k, const char *text)
{
	if (z->seg) {
		size_t at = (size_t)(argv - z->seg->words) + k;
		free(z->seg->subst[at]);
		z->seg->subst[at] = xstrdup(text);
		return;
	}
	size_t at = (size_t)(argv - z->top) + k;
	if (at < z->out->exec_argv.nr) {
		free(z->out->exec_argv.v[at]);
		z->out->exec_argv.v[at] = xstrdup(text);
	}
}

/* Records an executable the run starts (once); 0, or -1 when it cannot be pinned. */
static int record_executable(struct analyzer *z, const char *path, int direct, struct appr_identity *id)
{
	struct appr_analysis *o = z->out;
	for (size_t i = 0; i < o->nexes; i++)
		if (!strcmp(o->exes[i].path, path)) {
			*id = o->exes[i].id;
			return 0;
		}
	if (direct) {
		*id = o->top_id;
	} else {
		_cleanup_err_ struct err e = ERR_INIT;
		if (appr_path_pinned(path, &e) < 0)
			return fail(z,
				    "%s would be started by its path, which the caller could replace before it "
				    "runs (%s): run it as the command itself, not through a wrapper or shell "
				    "text",
				    path, e.message);
		int fd = appr_open_executable(path, id, &e);
		if (fd < 0)
			return fail(z, "%s", e.message);
		close(fd);
	}
	o->exes = xrealloc(o->exes, (o->nexes + 1) * sizeof(*o->exes));
	o->exes[o->nexes++] = (struct appr_executable){ xstrdup(path), *id, direct };
	return 0;
}

static void add_command(struct analyzer *z, const char *const *argv, char *resolved, int direct,
			const struct appr_identity *id)
{
	struct appr_analysis *o = z->out;
	o->cmds = xrealloc(o->cmds, (o->nr + 1) * sizeof(*o->cmds));
	struct appr_command *c = &o->cmds[o->nr++];
	memset(c, 0, sizeof(*c));
	strvec_init(&c->argv);
	strvec_pushv(&c->argv, argv);
	c->resolved = resolved;
	c->direct = direct;
	c->id = *id;
	for (size_t k = 1; argv[k]; k++)
		c->expands |= word_expands(z, argv, k);
	c->code = appr_code_running(base_name(argv[0]), base_name(resolved), argv, c->expands, &c->code_always);
	if (!c->code && appr_is_git(base_name(argv[0]), base_name(resolved))) {
		c->code = appr_git_config_code(z->cwd, argv);
		c->code_config = c->code != NULL;
	}
	if (!c->code && appr_uses_ssh(base_name(argv[0]), base_name(resolved), argv)) {
		c->code = appr_ssh_config_code();
		c->code_config = c->code != NULL;
	}
}

static int analyze_argv(struct analyzer *z, const char *const *argv, int shell_depth);

/* The text with every replaced word of every segment substituted (shell-quoted). */
static char *rewrite_text(const char *text, struct strvec *segs, struct word_meta **metas, char ***subst, size_t nr)
{
	struct strbuf out = STRBUF_INIT;
	size_t pos = 0;
	for (size_t i = 0; i < nr; i++)
		for (size_t k = 0; k < segs[i].nr; k++) {
			if (!subst[i] || !subst[i][k])
				continue;
			strbuf_add(&out, text + pos, metas[i][k].start - pos);
			const char *w = subst[i][k];
			if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+-,") ==
					  strlen(w))
				strbuf_addstr(&out, w);
			else
				strbuf_add_shell_quoted(&out, w);
			pos = metas[i][k].end;
		}
	strbuf_addstr(&out, text + pos);
	return strbuf_detach(&out, NULL);
}

static int analyze_shell_text(struct analyzer *z, const char *text, int shell_depth, char **rewritten)
{
	if (shell_depth > APPR_SHELL_DEPTH)
		return fail(z, "shell payloads nested deeper than %d", APPR_SHELL_DEPTH);
	struct strvec *segs;
	struct word_meta **metas;
	size_t nr;
	_cleanup_err_ struct err e = ERR_INIT;
	if (split_text(text, &segs, &metas, &nr, &e) < 0)
		return fail(z, "%s", e.message);
	char ***subst = xcalloc(nr, sizeof(*subst));
	struct shell_segment *outer = z->seg;
	int rc = 0;
	for (size_t i = 0; i < nr && rc == 0; i++) {
		struct shell_segment seg = { (const char *const *)segs[i].v, metas[i],
					     xcalloc(segs[i].nr + 1, sizeof(char *)) };
		subst[i] = seg.subst;
		z->seg = &seg;
		rc = analyze_argv(z, seg.words, shell_depth);
	}
	z->seg = outer;
	if (rc == 0)
		*rewritten = rewrite_text(text, segs, metas, subst, nr);
	for (size_t i = 0; i < nr; i++) {
		for (size_t k = 0; subst[i] && k < segs[i].nr; k++)
			free(subst[i][k]);
		free(subst[i]);
	}
	free(subst);
	metas_free(metas, nr);
	appr_segments_free(segs, nr);
	return rc;
}

static int analyze_shell(struct analyzer *z, const char *const *argv, const char *name, int shell_depth)
{
	if (argv[1] && (!strcmp(argv[1], "-lc") || !strcmp(argv[1], "-l")))
		return fail(z, "%s %s: a login shell first runs the caller's profile files", name, argv[1]);
	if (!argv[1] || strcmp(argv[1], "-c"))
		return fail(z, "%s run without -c (a script, stdin or other options) is not allowlistable", name);
	if (!argv[2])
		return fail(z, "%s %s without a command string", name, argv[1]);
	if (word_expands(z, argv, 1) || word_expands(z, argv, 2))
		return fail(z, "%s: the shell would expand its -c or command string (glob, brace or ~)", name);
	_cleanup_free_ char *rewritten = NULL;
	if (analyze_shell_text(z, argv[2], shell_depth + 1, &rewritten) < 0)
		return -1;
	replace_word(z, argv, 2, rewritten);
	return 0;
}

/* A shell or wrapper is taken for what its name says only when it is the system's: a pinned file in
 * one of the system directories (a trojan named `nice` or `sh` elsewhere would be "unwrapped"). */
static int system_program(struct analyzer *z, const char *resolved)
{
	static const char *const dirs[] = { "/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/" };
	const char *base = base_name(resolved);
	int in_system_dir = 0;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if (!strncmp(resolved, dirs[i], strlen(dirs[i])) && resolved + strlen(dirs[i]) == base)
			in_system_dir = 1;
	_cleanup_err_ struct err e = ERR_INIT;
	if (!in_system_dir)
		return fail(z,
			    "%s is named like a shell or wrapper but is not the system's (only "
			    "/usr/bin, /bin, /usr/sbin and /sbin are): not allowlistable",
			    resolved);
	if (appr_path_pinned(resolved, &e) < 0)
		return fail(z, "%s: %s", resolved, e.message);
	return 0;
}

/* Refusals that only apply to a command word inside shell text (the shell, not a program, runs it). */
static int shell_word_refused(struct analyzer *z, const char *const *argv)
{
	if (word_expands(z, argv, 0))
		return fail(z, "shell text is not allowlistable: glob, brace or ~ in a command name");
	for (size_t i = 0; i < ARRAY_SIZE(refused_builtins); i++)
		if (!strcmp(argv[0], refused_builtins[i]))
			return fail(z,
				    "%s is a shell builtin that changes how the shell finds or runs later "
				    "commands (or runs none): not allowlistable in shell text",
				    argv[0]);
	if (!strcmp(argv[0], "printf"))
		for (size_t k = 1; argv[k]; k++)
			if (!strncmp(argv[k], "-v", 2))
				return fail(z, "printf -v assigns a shell variable: not allowlistable in shell text");
	return 0;
}

/* The canonical path argv[0] runs (the top command: the one opened at check time). */
static char *resolve_word(struct analyzer *z, const char *const *argv, int direct)
{
	if (direct)
		return xstrdup(z->out->top_resolved);
	_cleanup_err_ struct err e = ERR_INIT;
	char *resolved = appr_resolve_executable(argv[0], z->cwd, z->path_env, &e);
	if (!resolved)
		fail(z, "%s", e.message);
	return resolved;
}

static int analyze_argv(struct analyzer *z, const char *const *argv, int shell_depth)
{
	for (int wrappers = 0;; wrappers++) {
		if (!argv[0])
			return fail(z, "empty command");
		if (wrappers > APPR_WRAPPER_DEPTH)
			return fail(z, "more than %d nested wrappers", APPR_WRAPPER_DEPTH);
		const char *word = argv[0];
		int direct = !z->seg && argv == z->top;
		if (z->seg && shell_word_refused(z, argv) < 0)
			return -1;
		enum wrapper_kind given = wrapper_kind(base_name(word));
		char *resolved = resolve_word(z, argv, direct);
		struct appr_identity id;
		if (!resolved)
			return -1;
		if (record_executable(z, resolved, direct, &id) < 0) {
			free(resolved);
			return -1;
		}
		replace_word(z, argv, 0, resolved);
		enum wrapper_kind real = wrapper_kind(base_name(resolved));
		if (given != KIND_PLAIN && given != real) {
			fail(z, "%s resolves to %s: a wrapper name that is not the wrapper it runs", word, resolved);
			free(resolved);
			return -1;
		}
		if (real != KIND_PLAIN && real != KIND_FAIL_CLOSED && system_program(z, resolved) < 0) {
			free(resolved);
			return -1;
		}
		if (real == KIND_PLAIN) {
			add_command(z, argv, resolved, direct, &id);
			return 0;
		}
		free(resolved);
		if (real == KIND_SHELL)
			return analyze_shell(z, argv, word, shell_depth);
		if (real == KIND_FAIL_CLOSED)
			return fail(z, "%s runs commands in a way that cannot be allowlisted", word);
		long idx = wrapped_command_index(real, argv);
		if (idx < 0)
			return fail(z,
				    real == KIND_ENV ? "env with options or assignments cannot be allowlisted"
						     : "%s: options not recognised (only exact, known spellings are)",
				    word);
		for (long k = 1; k < idx; k++)
			if (word_expands(z, argv, (size_t)k))
				return fail(z, "%s: the shell would expand its options (glob, brace or ~)", word);
		argv += idx;
	}
}

/* argv[0] resolved, opened and hashed: the executable `approvals exec` runs by descriptor. */
static int pin_top(struct analyzer *z, const char *const *argv)
{
	struct appr_analysis *o = z->out;
	_cleanup_err_ struct err e = ERR_INIT;
	o->top_resolved = appr_resolve_executable(argv[0], z->cwd, z->path_env, &e);
	if (!o->top_resolved)
		return fail(z, "%s", e.message);
	o->top_fd = appr_open_executable(o->top_resolved, &o->top_id, &e);
	if (o->top_fd < 0)
		return fail(z, "%s", e.message);
	return 0;
}

void appr_analyze(const char *const *argv, const char *cwd, const char *path_env, struct appr_analysis *out)
{
	memset(out, 0, sizeof(*out));
	out->ok = 1;
	out->top_fd = -1;
	struct analyzer z = { .cwd = cwd, .path_env = path_env, .top = argv, .out = out };
	strvec_init(&out->exec_argv);
	strvec_pushv(&out->exec_argv, argv);
	if (!argv[0]) {
		fail(&z, "no command");
		return;
	}
	_cleanup_err_ struct err e = ERR_INIT;
	out->path_env = appr_pinned_path(path_env, &e);
	if (!out->path_env) {
		fail(&z, "%s", e.message);
		return;
	}
	if (pin_top(&z, argv) < 0)
		return;
	analyze_argv(&z, argv, 0);
	if (out->ok && out->nr == 0)
		fail(&z, "no command");
}

void appr_analysis_release(struct appr_analysis *a)
{
	for (size_t i = 0; i < a->nr; i++) {
		strvec_clear(&a->cmds[i].argv);
		free(a->cmds[i].resolved);
		free(a->cmds[i].code);
	}
	free(a->cmds);
	for (size_t i = 0; i < a->nexes; i++)
		free(a->exes[i].path);
	free(a->exes);
	free(a->reason);
	free(a->top_resolved);
	free(a->path_env);
	if (a->top_fd >= 0)
		close(a->top_fd);
	strvec_clear(&a->exec_argv);
	memset(a, 0, sizeof(*a));
	a->top_fd = -1;
}

/* ---- decisions ------------------------------------------------------------------------------- */

/* The first pattern that allows c: a path pattern only when c runs no code of its own; an argv pattern
 * when it matches the words as they will run (never words the shell expands), with a trailing `*`
 * only when the extra words add no code-running option. */
static const char *first_match(const struct appr_command *c, const char *const *patterns, size_t n, const char *home)
{
	if (c->code_config) /* code the argv does not show: no pattern can name it */
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!appr_pattern_has_argv(patterns[i])) {
			if (!c->code && appr_glob_match(patterns[i], c->resolved, home))
				return patterns[i];
			continue;
		}
		int trailing;
		if (!c->expands &&
		    appr_argv_pattern_match(patterns[i], c->resolved, (const char *const *)c->argv.v, home,
					    &trailing) &&
		    (!trailing || !c->code || c->code_always))
			return patterns[i];
	}
	return NULL;
}

void appr_decide(const struct appr_effective *eff, const struct appr_analysis *a, const char *const *patterns,
		 size_t npatterns, const char *home, struct appr_verdict *v)
{
	memset(v, 0, sizeof(*v));
	strvec_init(&v->matched);
	strvec_init(&v->resolved);
	int all = a->ok && a->nr > 0;
	for (size_t i = 0; i < a->nr; i++) {
		strvec_push(&v->resolved, a->cmds[i].resolved);
		const char *m = first_match(&a->cmds[i], patterns, npatterns, home);
		if (m)
			strvec_push(&v->matched, m);
		else
			all = 0;
	}
	v->allowlisted = all;
	if (eff->security == APPR_SECURITY_DENY) {
		v->decision = APPR_DENY;
		v->reason = "security=deny";
		return;
	}
	int needs = eff->ask == APPR_ASK_ALWAYS ||
		    (eff->ask == APPR_ASK_ON_MISS && eff->security == APPR_SECURITY_ALLOWLIST && !all);
	if (needs) {
		v->decision = APPR_ASK;
		v->reason = eff->ask == APPR_ASK_ALWAYS ? "approval-required" : "allowlist-miss";
		return;
	}
	if (eff->security == APPR_SECURITY_FULL) {
		v->decision = APPR_ALLOW;
		v->reason = "security=full";
		return;
	}
	v->decision = all ? APPR_ALLOW : APPR_DENY;
	v->reason = all ? "allowlisted" : "allowlist-miss";
}

enum appr_decision appr_fallback(const struct appr_effective *eff, const struct appr_verdict *v, const char **reason)
{
	*reason = "approval-required";
	if (eff->ask_fallback == APPR_SECURITY_FULL)
		return APPR_ALLOW;
	if (eff->ask_fallback == APPR_SECURITY_ALLOWLIST) {
		if (v->allowlisted)
			return APPR_ALLOW;
		*reason = "allowlist-miss";
	}
	return APPR_DENY;
}

void appr_verdict_release(struct appr_verdict *v)
{
	strvec_clear(&v->matched);
	strvec_clear(&v->resolved);
}

int appr_allow_always_patterns(const struct appr_analysis *a, struct strvec *out, struct err *e)
{
	if (!a->ok || a->nr == 0)
		return err_set(e, E_PERMISSION_DENIED, "not recorded: %s", a->reason ? a->reason : "no command");
	for (size_t i = 0; i < a->nr; i++) {
		const char *path = a->cmds[i].resolved;
		if (!path || path[0] != '/' || appr_is_shell_or_wrapper(base_name(path)))
			return err_set(e, E_PERMISSION_DENIED, "not recorded: %s is a shell or wrapper",
				       path ? path : "(unresolved)");
		if (a->cmds[i].code)
			return err_set(e, E_PERMISSION_DENIED,
				       "not recorded: %s (allowing the executable would "
				       "allow any code it is given)",
				       a->cmds[i].code);
	}
	for (size_t i = 0; i < a->nr; i++) {
		char *p = appr_pattern_for_path(a->cmds[i].resolved);
		if (strvec_find(out, p) < 0)
			strvec_push_nodup(out, p);
		else
			free(p);
	}
	return 0;
}
