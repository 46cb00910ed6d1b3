/* test_approvals.c — unit tests of approvals_policy/store/socket/exec: globs, shell text, wrappers, policy.
 * Every known bypass (sh -c, env -S, abbreviated options, symlinks, case, allow-always on a shell) is a refused case.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approvals_exec.h"
#include "approvals_gitconfig.h"
#include "approvals_policy.h"
#include "approvals_programs.h"
#include "approvals_socket.h"
#include "approvals_sshconfig.h"
#include "approvals_store.h"
#include "json.h"
#include "strbuf.h"
#include "unit.h"
#include "banned.h"

#define PATH_ENV "/usr/local/bin:/usr/bin:/bin"

/* ---- globs ----------------------------------------------------------------------------------- */

TEST(approvals_glob_table)
{
	static const struct {
		const char *pattern, *path;
		int match;
	} cases[] = {
		{ "/usr/bin/ls", "/usr/bin/ls", 1 },
		{ "/usr/bin/ls", "/usr/bin/lsx", 0 },  /* anchored at the end */
		{ "/usr/bin/ls", "/x/usr/bin/ls", 0 }, /* anchored at the start */
		{ "/usr/bin/*", "/usr/bin/ls", 1 },
		{ "/usr/bin/*", "/usr/bin/x/ls", 0 }, /* * never crosses / */
		{ "/usr/*/ls", "/usr/bin/ls", 1 },
		{ "/usr/*/ls", "/usr/a/b/ls", 0 },
		{ "/usr/**", "/usr/bin/x/ls", 1 }, /* ** does */
		{ "/usr/**/ls", "/usr/a/b/ls", 1 },
		{ "/usr/**/ls", "/usr/a/b/lsx", 0 },
		{ "/usr/bin/l?", "/usr/bin/ls", 1 },
		{ "/usr/bin/l?", "/usr/bin/l/", 0 }, /* ? never matches / */
		{ "/usr/bin/l?", "/usr/bin/lsx", 0 },
		{ "/usr/bin/LS", "/usr/bin/ls", 0 }, /* case-sensitive: the bypass attempt */
		{ "/USR/**", "/usr/bin/ls", 0 },
		{ "/usr/bin/[l]s", "/usr/bin/ls", 0 }, /* [ is literal */
		{ "/usr/bin/\\*", "/usr/bin/*", 1 },   /* escaped * */
		{ "/usr/bin/\\*", "/usr/bin/ls", 0 },
		{ "~/bin/*", "/home/u/bin/tool", 1 }, /* ~ expanded */
		{ "~/bin/*", "/root/bin/tool", 0 },
		{ "~", "/home/u", 1 },
		{ "***", "/anything/at/all", 1 },
		{ "/a*b*c*d*e*f*g*h*i*j*k", "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		if (appr_glob_match(cases[i].pattern, cases[i].path, "/home/u") != cases[i].match)
			unit_fail(__FILE__, __LINE__, "glob %s vs %s: expected %d", cases[i].pattern, cases[i].path,
				  cases[i].match);
	CHECK(!appr_glob_match("~/x", "/x", NULL));
}

TEST(approvals_pattern_check_refuses_names_and_relative_patterns)
{
	static const struct {
		const char *pattern;
		const char *error; /* NULL: accepted */
	} cases[] = {
		{ "/usr/bin/ls", NULL },	{ "~/bin/*", NULL },   { "/usr/**", NULL },
		{ "ls", "has no '/'" },		{ "*", "has no '/'" }, { "bin/ls", "not absolute" },
		{ "~root/bin/x", "not ~user" }, { "", "empty" },       { "/usr/bin/l\ns", "control character" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct err e = ERR_INIT;
		int rc = appr_pattern_check(cases[i].pattern, &e);
		if (!cases[i].error)
			CHECK_INT(rc, 0);
		else {
			CHECK_INT(rc, -1);
			CHECK_CONTAINS(e.message, cases[i].error);
		}
		err_clear(&e);
	}
	char *p = appr_pattern_for_path("/opt/we*ird?/x\\y");
	CHECK_STR(p, "/opt/we\\*ird\\?/x\\\\y");
	CHECK(appr_glob_match(p, "/opt/we*ird?/x\\y", NULL));
	CHECK(!appr_glob_match(p, "/opt/weXXird?/x\\y", NULL));
	free(p);
}

/* ---- shell text ------------------------------------------------------------------------------ */

/* Segments as "w1 w2|w1 w2", or "REFUSED: reason". */
static char *split_summary(const char *text)
{
	struct strvec *segs;
	size_t nr;
	struct err e = ERR_INIT;
	struct strbuf sb = STRBUF_INIT;
	if (appr_shell_split(text, &segs, &nr, &e) < 0) {
		strbuf_addf(&sb, "REFUSED: %s", e.message);
		err_clear(&e);
		return strbuf_detach(&sb, NULL);
	}
	for (size_t i = 0; i < nr; i++) {
		if (i)
			strbuf_addch(&sb, '|');
		for (size_t k = 0; k < segs[i].nr; k++)
			strbuf_addf(&sb, "%s%s", k ? " " : "", segs[i].v[k]);
	}
	appr_segments_free(segs, nr);
	return strbuf_detach(&sb, NULL);
}

TEST(approvals_shell_split_table)
{
	static const struct {
		const char *text;
		int refused;
		const char *expected; /* the segments ("w w|w"), or a substring of the refusal */
	} cases[] = {
		{ "ls -la", 0, "ls -la" },
		{ "ls && pwd || id ; date | wc -l", 0, "ls|pwd|id|date|wc -l" },
		{ "ls;", 0, "ls" },
		{ "echo 'a && b' \"c | d\"", 0, "echo a && b c | d" },
		{ "echo a\\;b", 0, "echo a;b" },
		{ "echo \"x\\\"y\"", 0, "echo x\"y" },
		{ "grep -e '$HOME' f", 0, "grep -e $HOME f" },
		{ "ls > out", 1, "shell text is not allowlistable: redirection" },
		{ "ls 2>&1", 1, "redirection" },
		{ "cat < in", 1, "redirection" },
		{ "cat <<EOF", 1, "heredoc" },
		{ "echo $(rm -rf /)", 1, "command substitution" },
		{ "echo \"$(rm -rf /)\"", 1, "command substitution" },
		{ "echo `rm -rf /`", 1, "command substitution" },
		{ "echo \"`id`\"", 1, "command substitution" },
		{ "echo $HOME", 1, "expansion" },
		{ "(rm -rf /)", 1, "subshell" },
		{ "{ rm; }", 1, "command group" },
		{ "sleep 1 &", 1, "background" },
		{ "ls\nrm -rf /", 1, "newline" },
		{ "echo 'a\nb'", 1, "newline" },
		{ "ls \\\nrm", 1, "line continuation" },
		{ "ls # ; rm", 1, "comment" },
		{ "FOO=1 ls", 1, "assignment" },
		{ "/usr/bin/l* x", 1, "glob or brace characters in a command name" },
		{ "./x{y,} a", 1, "glob or brace characters in a command name" },
		{ "ls {a,b}", 0, "ls {a,b}" },
		{ "~/bin/x", 1, "~ in a command name" },
		{ "if true; then rm; fi", 1, "reserved word" },
		{ "ls && ", 1, "trailing operator" },
		{ "; ls", 1, "empty command" },
		{ "ls |& cat", 1, "|&" },
		{ "echo 'unterminated", 1, "unterminated single quote" },
		{ "echo \"unterminated", 1, "unterminated double quote" },
		{ "", 1, "empty command" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *got = split_summary(cases[i].text);
		int ok = cases[i].refused ? !strncmp(got, "REFUSED: ", 9) && strstr(got, cases[i].expected)
					  : !strcmp(got, cases[i].expected);
		if (!ok)
			unit_fail(__FILE__, __LINE__, "split(%s) = \"%s\", expected %s\"%s\"", cases[i].text, got,
				  cases[i].refused ? "a refusal with " : "", cases[i].expected);
		free(got);
	}
}

/* ---- analysis: wrappers ---------------------------------------------------------------------- */

/* "ok /usr/bin/ls,/usr/bin/wc" or "no: reason". */
static char *analysis_summary(const char *const *argv, const char *cwd)
{
	struct appr_analysis a;
	appr_analyze(argv, cwd, PATH_ENV, &a);
	struct strbuf sb = STRBUF_INIT;
	if (!a.ok) {
		strbuf_addf(&sb, "no: %s", a.reason);
	} else {
		strbuf_addstr(&sb, "ok ");
		for (size_t i = 0; i < a.nr; i++)
			strbuf_addf(&sb, "%s%s", i ? "," : "", a.cmds[i].resolved);
	}
	appr_analysis_release(&a);
	return strbuf_detach(&sb, NULL);
}

#define ARGV(...) ((const char *const[]){ __VA_ARGS__, NULL })

TEST(approvals_wrapper_table)
{
	const struct {
		const char *const *argv;
		const char *expected; /* "ok …" exactly, or a substring of the "no: …" reason */
	} cases[] = {
		{ ARGV("ls", "-la"), "ok /usr/bin/ls" },
		{ ARGV("/bin/ls"), "ok /usr/bin/ls" }, /* /bin → usr/bin: the canonical path */
		{ ARGV("nice", "-n", "5", "ls"), "ok /usr/bin/ls" },
		{ ARGV("nice", "-n5", "ls"), "ok /usr/bin/ls" },
		{ ARGV("nice", "-5", "ls"), "ok /usr/bin/ls" },
		{ ARGV("nice", "--adjustment=5", "ls"), "ok /usr/bin/ls" },
		{ ARGV("nohup", "ls"), "ok /usr/bin/ls" },
		{ ARGV("timeout", "5", "ls"), "ok /usr/bin/ls" },
		{ ARGV("timeout", "-s", "KILL", "-k", "1s", "2.5m", "ls"), "ok /usr/bin/ls" },
		{ ARGV("timeout", "--signal=TERM", "--preserve-status", "5", "ls"), "ok /usr/bin/ls" },
		{ ARGV("stdbuf", "-oL", "-e", "0", "ls"), "ok /usr/bin/ls" },
		{ ARGV("stdbuf", "--output=L", "ls"), "ok /usr/bin/ls" },
		{ ARGV("time", "-p", "ls"), "ok /usr/bin/ls" },
		{ ARGV("env", "ls"), "ok /usr/bin/ls" },
		{ ARGV("nice", "timeout", "5", "nohup", "env", "ls"), "ok /usr/bin/ls" },
		{ ARGV("sh", "-c", "ls | wc -l && id"), "ok /usr/bin/ls,/usr/bin/wc,/usr/bin/id" },
		{ ARGV("bash", "-c", "time ls"), "ok /usr/bin/ls" }, /* /usr/bin/time: dash has no keyword */
		{ ARGV("bash", "-lc", "ls"), "login shell" },
		{ ARGV("bash", "-c", "printf -v PATH %s /tmp/e; ls"), "printf -v" },
		{ ARGV("bash", "-c", "export PATH=/tmp; ls"), "shell builtin" },
		{ ARGV("bash", "-c", "hash -p /tmp/x ls; ls"), "shell builtin" },
		{ ARGV("bash", "-c", "enable -n echo; echo"), "shell builtin" },
		{ ARGV("bash", "-c", "alias ls=id; ls"), "shell builtin" },
		{ ARGV("bash", "-c", "read PATH; ls"), "shell builtin" },
		{ ARGV("bash", "-c", "declare IFS=x; ls"), "shell builtin" },
		{ ARGV("sh", "-c", ". ./x; ls"), "shell builtin" },
		{ ARGV("sh", "-c", "f() { id; }; f"), "subshell or grouping" },
		{ ARGV("sh", "-c", "nice l*"), "glob, brace or ~ in a command name" },
		{ ARGV("sh", "-c", "bash -c ls\\ *"), "would expand its -c or command string" },
		{ ARGV("sh", "-c", "timeout 5* ls"), "options not recognised" },
		{ ARGV("sh", "-c", "nice -n 1* ls"), "options not recognised" },
		{ ARGV("sh", "-c", "bash -c 'dash -c ls'"), "ok /usr/bin/ls" }, /* depth 3 */
		/* refused: the bypasses */
		{ ARGV("sh", "-c", "bash -c 'dash -c \"sh -c ls\"'"), "nested deeper than 3" },
		{ ARGV("sh", "-c", "ls > /etc/passwd"), "redirection" },
		{ ARGV("sh", "-c", "ls; $(rm -rf /)"), "command substitution" },
		{ ARGV("sh", "-c", "ls | sudo rm"), "cannot be allowlisted" },
		{ ARGV("sh", "script.sh"), "without -c" },
		{ ARGV("bash"), "without -c" },
		{ ARGV("bash", "-x", "-c", "ls"), "without -c" },
		{ ARGV("bash", "--rcfile", "x", "-c", "ls"), "without -c" },
		{ ARGV("sh", "-c"), "without a command string" },
		{ ARGV("env", "-S", "ls -la"), "env with options" },
		{ ARGV("env", "--split-string=ls"), "env with options" },
		{ ARGV("env", "--sp", "ls"), "env with options" }, /* abbreviated --split-string */
		{ ARGV("env", "-i", "ls"), "env with options" },
		{ ARGV("env", "-", "ls"), "env with options" },
		{ ARGV("env", "--", "ls"), "env with options" },
		{ ARGV("env", "LD_PRELOAD=/tmp/x.so", "ls"), "env with options" },
		{ ARGV("env"), "env with options" },
		{ ARGV("nice", "--adj=5", "ls"), "options not recognised" }, /* abbreviated --adjustment */
		{ ARGV("nice", "--adjustment", "x", "ls"), "options not recognised" },
		{ ARGV("timeout", "--sig=KILL", "5", "ls"), "options not recognised" }, /* abbreviated */
		{ ARGV("timeout", "--kill=1", "5", "ls"), "options not recognised" },
		{ ARGV("timeout", "-vk1", "5", "ls"), "options not recognised" }, /* bundled */
		{ ARGV("timeout", "ls"), "options not recognised" },		  /* no duration */
		{ ARGV("stdbuf", "--out=L", "ls"), "options not recognised" },
		{ ARGV("time", "-o", "/etc/passwd", "ls"), "options not recognised" },
		{ ARGV("nohup", "--", "--", "ls"), "not found" },
		{ ARGV("sudo", "ls"), "cannot be allowlisted" },
		{ ARGV("setsid", "ls"), "cannot be allowlisted" },
		{ ARGV("valgrind", "ls"), "cannot be allowlisted" },
		{ ARGV("setarch", "x86_64", "ls"), "cannot be allowlisted" },
		{ ARGV("/lib64/ld-linux-x86-64.so.2", "/usr/bin/id"), "cannot be allowlisted" },
		{ ARGV("nice", "sudo", "ls"), "cannot be allowlisted" },
		{ ARGV("nice"), "options not recognised" },
		{ ARGV("no-such-command-xyz"), "not found" },
		{ ARGV("./no-such"), "not found" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *got = analysis_summary(cases[i].argv, "/");
		int ok = !strncmp(cases[i].expected, "ok ", 3)
				 ? !strcmp(got, cases[i].expected)
				 : !strncmp(got, "no: ", 4) && strstr(got, cases[i].expected);
		if (!ok) {
			struct strbuf sb = STRBUF_INIT;
			for (size_t k = 0; cases[i].argv[k]; k++)
				strbuf_addf(&sb, "[%s]", cases[i].argv[k]);
			unit_fail(__FILE__, __LINE__, "analyze %s = \"%s\", expected \"%s\"", sb.buf, got,
				  cases[i].expected);
			strbuf_release(&sb);
		}
		free(got);
	}
}

static char *joined(const struct strvec *sv)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < sv->nr; i++)
		strbuf_addf(&sb, "%s%s", i ? " " : "", sv->v[i]);
	return strbuf_detach(&sb, NULL);
}

TEST(approvals_exec_argv_pins_every_command_word_to_its_canonical_path)
{
	const struct {
		const char *const *argv;
		const char *expected;
	} cases[] = {
		{ ARGV("ls", "-l"), "/usr/bin/ls -l" },
		{ ARGV("nice", "-n", "5", "timeout", "5", "env", "ls", "x"),
		  "/usr/bin/nice -n 5 /usr/bin/timeout 5 /usr/bin/env /usr/bin/ls x" },
		{ ARGV("sh", "-c", "ls | wc"), "/usr/bin/dash -c /usr/bin/ls | /usr/bin/wc" },
		{ ARGV("sh", "-c", "time ls *.c && 'nice' -n 1 \"ls\" 'a b'"),
		  "/usr/bin/dash -c /usr/bin/time /usr/bin/ls *.c && /usr/bin/nice -n 1 /usr/bin/ls 'a b'" },
		{ ARGV("sh", "-c", "bash -c 'ls;id'"), "/usr/bin/dash -c /usr/bin/bash -c '/usr/bin/ls;/usr/bin/id'" },
		{ ARGV("nice", "sh", "-c", "ls"), "/usr/bin/nice /usr/bin/dash -c /usr/bin/ls" },
		{ ARGV("/bin/ls", "ls"), "/usr/bin/ls ls" }, /* arguments are never touched */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct appr_analysis a;
		appr_analyze(cases[i].argv, "/", PATH_ENV, &a);
		char *got = joined(&a.exec_argv);
		CHECK_STR(got, cases[i].expected);
		free(got);
		appr_analysis_release(&a);
	}
}

TEST(approvals_empty_or_relative_path_entries_are_refused_never_skipped)
{
	static const char *const refused[] = { ":/usr/bin:/bin", "/usr/bin::/bin", "/usr/bin:",	  "",
					       ".:/usr/bin",	 "bin:/usr/bin",   "/usr/bin:./x" };
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		struct err e = ERR_INIT;
		char *r = appr_resolve_executable("ls", "/", refused[i], &e);
		if (r || !strstr(e.message ? e.message : "", "PATH entry"))
			unit_fail(__FILE__, __LINE__, "PATH \"%s\": %s", refused[i], r ? r : e.message);
		free(r);
		err_clear(&e);
		struct appr_analysis a;
		appr_analyze(ARGV("sh", "-c", "ls"), "/", refused[i], &a);
		CHECK(!a.ok);
		CHECK(a.path_env == NULL);
		CHECK_CONTAINS(a.reason, "PATH entry");
		appr_analysis_release(&a);
	}
}

TEST(approvals_pinned_path_keeps_only_directories_the_caller_cannot_write)
{
	const char *dir = unit_tmpdir();
	char *open_dir = xasprintf("%s/open", dir), *closed = xasprintf("%s/closed", dir);
	CHECK_INT(mkdir(open_dir, 0777), 0);
	CHECK_INT(chmod(open_dir, 0777), 0);
	CHECK_INT(mkdir(closed, 0755), 0);
	char *path = xasprintf("%s:/usr/bin:/no/such/dir:%s:/bin:/usr/bin", open_dir, closed);
	struct err e = ERR_INIT;
	char *pinned = appr_pinned_path(path, &e);
	/* world-writable dropped, /bin → /usr/bin once, missing dropped, and closed too when it is under a
	 * world-writable directory such as /tmp (anyone could rename it away) */
	struct err probe = ERR_INIT;
	char *want = appr_path_pinned(closed, &probe) == 0 ? xasprintf("/usr/bin:%s", closed) : xstrdup("/usr/bin");
	err_clear(&probe);
	CHECK_STR(pinned, want);
	CHECK_INT(appr_path_pinned(open_dir, &e), -1);
	CHECK_CONTAINS(e.message, "writable by its group or by others");
	err_clear(&e);
	/* a command that runs by path (inside shell text) must live in a pinned directory */
	char *tool = xasprintf("%s/tool", open_dir);
	int fd = open(tool, O_WRONLY | O_CREAT, 0755);
	CHECK(fd >= 0);
	close(fd);
	char *text = xasprintf("%s", tool);
	struct appr_analysis a;
	appr_analyze(ARGV("sh", "-c", text), "/", PATH_ENV, &a);
	CHECK(!a.ok);
	CHECK_CONTAINS(a.reason, "could replace before it runs");
	appr_analysis_release(&a);
	appr_analyze(ARGV(tool), "/", PATH_ENV, &a); /* run directly: by descriptor, so allowed */
	CHECK(a.ok);
	CHECK(a.top_fd >= 0);
	CHECK_STR(a.top_id.sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	appr_analysis_release(&a);
	free(text);
	free(tool);
	free(want);
	free(pinned);
	free(path);
	free(open_dir);
	free(closed);
}

TEST(approvals_identity_detects_a_changed_executable)
{
	const char *dir = unit_tmpdir();
	char *tool = xasprintf("%s/tool", dir);
	int fd = open(tool, O_WRONLY | O_CREAT, 0755);
	CHECK_INT(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
	struct appr_identity id;
	struct err e = ERR_INIT;
	fd = appr_open_executable(tool, &id, &e);
	CHECK(fd >= 0);
	CHECK_INT(appr_identity_recheck_path(tool, &id, &e), 0);
	int w = open(tool, O_WRONLY | O_APPEND);
	CHECK_INT(write(w, "id\n", 3), 3);
	close(w);
	CHECK_INT(appr_identity_recheck_path(tool, &id, &e), -1);
	CHECK_CONTAINS(e.message, "changed since it was checked");
	err_clear(&e);
	close(fd);
	free(tool);
}

/* "-" (no code), "always: …" or "code: …" for argv (no shell expansion). */
static char *code_summary(const char *const *argv)
{
	int always;
	char *why = appr_code_running(argv[0], argv[0], argv, 0, &always);
	char *out = why ? xasprintf("%s: %s", always ? "always" : "code", why) : xstrdup("-");
	free(why);
	return out;
}

TEST(approvals_programs_that_run_programs_table)
{
	const struct {
		const char *const *argv;
		const char *expected; /* "-" or a substring of the summary */
	} cases[] = {
		{ ARGV("git", "status"), "-" },
		{ ARGV("git", "-C", "/x", "--no-pager", "log", "--oneline"), "-" },
		{ ARGV("git", "config", "--get", "user.name"), "-" },
		{ ARGV("git", "add", "-u"), "-" },
		{ ARGV("git", "diff", "--no-ext-diff"), "-" },
		{ ARGV("git", "-c", "alias.x=!id", "x"), "code: git -c" },
		{ ARGV("git", "-c", "core.sshCommand=id", "fetch"), "code: git -c" },
		{ ARGV("git", "--config-env=core.pager=X", "log"), "code: git --config-env" },
		{ ARGV("git", "--exec-path=/tmp", "status"), "code: git --exec-path" },
		{ ARGV("git", "-p", "log"), "code: git -p" },
		{ ARGV("git", "ls-remote", "--upload-pa=id", "."), "--upload-pack" },
		{ ARGV("git", "ls-remote", "-u", "id", "."), "(-u)" },
		{ ARGV("git", "fetch", "--upload-pack", "id", "origin"), "--upload-pack" },
		{ ARGV("git", "clone", "-cx=y", "u", "d"), "(-c)" },
		{ ARGV("git", "clone", "--template=/tmp/t", "u", "d"), "--template" },
		{ ARGV("git", "push", "--receive-pack=id"), "--receive-pack" },
		{ ARGV("git", "push", "--ex=id"), "--exec" },
		{ ARGV("git", "rebase", "-ix", "id"), "(-x)" },
		{ ARGV("git", "grep", "-Oid", "x"), "(-O)" },
		{ ARGV("git", "log", "--ext-diff"), "--ext-diff" },
		{ ARGV("git", "x"), "not a git command known" },
		{ ARGV("git", "submodule", "foreach", "id"), "not a git command known" },
		{ ARGV("git", "config", "alias.x", "!id"), "git config that writes" },
		{ ARGV("git", "log", "--", "--exec=x"), "-" }, /* after --: a path */
		{ ARGV("ssh", "-oProxyCommand=id", "h"), "(-o)" },
		{ ARGV("ssh", "-vF", "cfg", "h"), "(-F)" },
		{ ARGV("scp", "-S", "id", "a", "b"), "(-S)" },
		{ ARGV("tar", "--to-command=id", "-xf", "t"), "--to-command" },
		{ ARGV("tar", "--use=id", "-cf", "t", "x"), "--use-compress-program" },
		{ ARGV("tar", "-I", "id", "-cf", "t", "x"), "(-I)" },
		{ ARGV("tar", "cIf", "id", "t", "x"), "old-style bundle" },
		{ ARGV("tar", "-xzf", "t.tgz"), "-" },
		{ ARGV("rsync", "-ave", "id", "a", "b"), "(-e)" },
		{ ARGV("rsync", "--rsh=id", "a", "b"), "--rsh" },
		{ ARGV("find", ".", "-name", "x"), "-" },
		{ ARGV("find", ".", "-exec", "id", ";"), "find -exec" },
		{ ARGV("find", ".", "-okdir", "id", ";"), "find -okdir" },
		{ ARGV("make"), "always: make" },
		{ ARGV("python3", "-c", "print(1)"), "always: python3 is an interpreter" },
		{ ARGV("python3.11", "script.py"), "always: python3.11 is an interpreter" },
		{ ARGV("python3", "--version"), "-" },
		{ ARGV("node", "-e", "1"), "always" },
		{ ARGV("perl5.36.0", "-e", "1"), "always" },
		{ ARGV("vim.basic", "-c", "!id"), "always" },
		{ ARGV("awk", "{print $1}"), "-" },
		{ ARGV("mawk", "BEGIN{system(\"id\")}"), "system" },
		{ ARGV("awk", "BEGIN{print | \"id\"}"), "system, |" },
		{ ARGV("gawk", "-f", "prog.awk"), "reads program code" },
		{ ARGV("gawk", "--exec=prog.awk"), "reads program code" },
		{ ARGV("mawk", "-W", "exec", "p"), "reads program code" },
		{ ARGV("sed", "s/a/b/g", "f"), "-" },
		{ ARGV("sed", "-n", "-e", "s/[/]/x/p", "-e", "/a/,/b/{p;d}", "f"), "-" },
		{ ARGV("sed", "s/a/id/e"), "runs a command" },
		{ ARGV("sed", "1e id"), "runs a command" },
		{ ARGV("sed", ":a e id"), "runs a command" },
		{ ARGV("sed", "b end e id"), "runs a command" },
		{ ARGV("sed", "y/x/e/;e id"), "runs a command" },
		{ ARGV("sed", "-f", "s.sed"), "script file" },
		{ ARGV("sed", "-ne", "p"), "option not recognised" },
		{ ARGV("sed", "a foo; e id"), "-" }, /* a's text runs to the end of the line */
		{ ARGV("sed", "a foo\ne id"), "runs a command" },
		{ ARGV("ls", "-la"), "-" },
		{ ARGV("openssl", "req", "-engine", "x"), "openssl -engine" },
		{ ARGV("ssh", "-I", "/tmp/p11.so", "h"), "(-I)" },
		{ ARGV("sftp", "-b", "batch", "h"), "(-b)" },
		{ ARGV("ip", "netns", "exec", "n", "id"), "ip exec" },
		{ ARGV("ip", "addr"), "-" },
		{ ARGV("xdg-open", "x.desktop"), "always" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *got = code_summary(cases[i].argv);
		int ok = !strcmp(cases[i].expected, "-") ? !strcmp(got, "-") : strstr(got, cases[i].expected) != NULL;
		if (!ok) {
			struct strbuf sb = STRBUF_INIT;
			for (size_t k = 0; cases[i].argv[k]; k++)
				strbuf_addf(&sb, "[%s]", cases[i].argv[k]);
			unit_fail(__FILE__, __LINE__, "code %s = \"%s\", expected \"%s\"", sb.buf, got,
				  cases[i].expected);
			strbuf_release(&sb);
		}
		free(got);
	}
	int always;
	char *why = appr_code_running("git", "git", ARGV("git", "status", "*"), 1, &always);
	CHECK_CONTAINS(why, "expands");
	free(why);
}

/* Writes text to dir/name (mode), creating dir. */
static void put_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	mkdir(dir, 0755);
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, text, strlen(text)), (long long)strlen(text));
	close(fd);
	free(path);
}

TEST(approvals_git_configuration_and_hooks_that_run_code)
{
	const char *dir = unit_tmpdir();
	char *home = xasprintf("%s/home", dir), *repo = xasprintf("%s/repo", dir), *git = xasprintf("%s/.git", repo);
	char *sub = xasprintf("%s/a/b", repo);
	mkdir(home, 0755);
	mkdir(repo, 0755);
	setenv("HOME", home, 1);
	unsetenv("XDG_CONFIG_HOME");
	put_file(git, "HEAD", "ref: refs/heads/main\n", 0644);
	char *objects = xasprintf("%s/objects", git), *refs = xasprintf("%s/refs", git),
	     *hooks = xasprintf("%s/hooks", git);
	mkdir(objects, 0755);
	mkdir(refs, 0755);
	char *a_dir = xasprintf("%s/a", repo);
	mkdir(a_dir, 0755);
	mkdir(sub, 0755);
	free(a_dir);
	const struct {
		const char *config;   /* .git/config after [core] basics */
		const char *global;   /* ~/.gitconfig */
		const char *hook;     /* a hooks/ file name (executable) or NULL */
		const char *expected; /* NULL or a substring of the reason */
	} cases[] = {
		{ "", "", NULL, NULL },
		{ "\tfsmonitor = false\n\thooksPath = /dev/null\n", "[credential]\n\thelper = store --file=/x/y\n",
		  NULL, NULL },
		{ "\tfsmonitor = touch /tmp/x\n", "", NULL, "core.fsmonitor = touch /tmp/x" },
		{ "\thooksPath = /tmp/h\n", "", NULL, "core.hookspath" },
		{ "\tsshCommand = id\n", "", NULL, "core.sshcommand" },
		{ "[filter \"lfs\"]\n\tclean = id\n", "", NULL, "filter.lfs.clean" },
		{ "[diff \"x\"]\n\ttextconv = id\n", "", NULL, "diff.x.textconv" },
		{ "[remote \"o\"]\n\tuploadpack = id\n", "", NULL, "remote.o.uploadpack" },
		{ "[protocol \"ext\"]\n\tallow = always\n", "", NULL, "protocol.ext.allow" },
		{ "[submodule \"s\"]\n\tupdate = !id\n", "", NULL, "submodule.s.update" },
		{ "", "[credential]\n\thelper = !id\n", NULL, "credential.helper = !id" },
		{ "", "[credential]\n\thelper = \"store && id\"\n", NULL, "credential.helper" },
		{ "", "[credential]\n\thelper = store; a comment\n", NULL, NULL },
		{ "", "[gpg]\n\tprogram = /tmp/gpg\n", NULL, "gpg.program" },
		{ "", "[include]\n\tpath = inc\n", NULL, "diff.external" }, /* through an include */
		{ "", "[includeIf \"hasconfig:remote.*.url:x\"]\n\tpath = inc\n", NULL, "not read here" },
		{ "", "[includeIf \"gitdir:/nowhere/\"]\n\tpath = inc\n", NULL, NULL },
		{ "", "", "pre-commit", "has a hook" },
		{ "", "", "pre-commit.sample", NULL },
	};
	put_file(home, "inc", "[diff]\n\texternal = id\n", 0644);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *config = xasprintf("[core]\n\trepositoryformatversion = 0\n\tbare = false\n%s", cases[i].config);
		put_file(git, "config", config, 0644);
		put_file(home, ".gitconfig", cases[i].global, 0644);
		if (cases[i].hook)
			put_file(hooks, cases[i].hook, "#!/bin/sh\n", 0755);
		char *why = appr_git_config_code(sub, ARGV("git", "status")); /* discovered from a subdirectory */
		int ok = cases[i].expected ? why && strstr(why, cases[i].expected) : !why;
		if (!ok)
			unit_fail(__FILE__, __LINE__, "case %zu: %s, expected %s", i, why ? why : "(none)",
				  cases[i].expected ? cases[i].expected : "(none)");
		free(why);
		if (cases[i].hook) {
			char *h = xasprintf("%s/%s", hooks, cases[i].hook);
			unlink(h);
			free(h);
		}
		free(config);
	}
	/* -C names the repository from elsewhere; an argv pattern never allows configured code */
	put_file(git, "config", "[core]\n\tfsmonitor = id\n", 0644);
	put_file(home, ".gitconfig", "", 0644);
	char *why = appr_git_config_code("/", ARGV("git", "-C", repo, "status"));
	CHECK_CONTAINS(why, "core.fsmonitor");
	free(why);
	struct appr_analysis a;
	appr_analyze(ARGV("git", "status"), repo, PATH_ENV, &a);
	const char *patterns[] = { "/usr/bin/git status", "/usr/bin/git" };
	struct appr_effective eff = { APPR_SECURITY_ALLOWLIST, APPR_ASK_OFF, APPR_SECURITY_DENY };
	struct appr_verdict v;
	appr_decide(&eff, &a, patterns, 2, NULL, &v);
	CHECK_INT(v.decision, APPR_DENY);
	CHECK(a.cmds[0].code_config);
	appr_verdict_release(&v);
	appr_analysis_release(&a);
	free(home);
	free(repo);
	free(git);
	free(sub);
	free(objects);
	free(refs);
	free(hooks);
}

TEST(approvals_ssh_configuration_that_runs_code)
{
	const char *dir = unit_tmpdir();
	char *home = xasprintf("%s/home", dir), *ssh = xasprintf("%s/home/.ssh", dir),
	     *confd = xasprintf("%s/home/.ssh/conf.d", dir);
	mkdir(home, 0755);
	setenv("HOME", home, 1);
	const struct {
		const char *config, *included; /* ~/.ssh/config, ~/.ssh/conf.d/a.conf */
		const char *expected;	       /* NULL or a substring of the reason */
	} cases[] = {
		{ "Host x\n  User u\n  ProxyJump bastion\n", "", NULL },
		{ "Host x\n  ProxyCommand none\n", "", NULL },
		{ "Host x\n  ProxyCommand nc %h %p\n", "", ":2: proxycommand" },
		{ "Host x\n\tproxycommand=id\n", "", ":2: proxycommand" },
		{ "Match host x exec \"id\"\n", "", "Match exec" },
		{ "Host x\n  LocalCommand id\n", "", "localcommand" },
		{ "Host *\n  KnownHostsCommand /tmp/k\n", "", "knownhostscommand" },
		{ "Host *\n  PKCS11Provider /tmp/p.so\n", "", "pkcs11provider" },
		{ "Include conf.d/*.conf\n", "Host y\n  User z\n", NULL },
		{ "Include conf.d/*.conf\n", "Host y\n  ProxyCommand id\n", "conf.d/a.conf:2" },
		{ "Include ~/.ssh/conf.d/a.conf\n", "Match all exec id\n", "Match exec" },
	};
	mkdir(ssh, 0700);
	mkdir(confd, 0700);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		put_file(ssh, "config", cases[i].config, 0600);
		put_file(confd, "a.conf", cases[i].included, 0600);
		char *why = appr_ssh_config_code();
		int ok = cases[i].expected ? why && strstr(why, cases[i].expected) : !why;
		if (!ok)
			unit_fail(__FILE__, __LINE__, "ssh case %zu: %s, expected %s", i, why ? why : "(none)",
				  cases[i].expected ? cases[i].expected : "(none)");
		free(why);
	}
	put_file(ssh, "config", "Include config\n", 0600); /* includes itself */
	char *why = appr_ssh_config_code();
	CHECK_CONTAINS(why, "nested deeper");
	free(why);
	CHECK(appr_uses_ssh("git", "git", ARGV("git", "-C", "x", "fetch")));
	CHECK(!appr_uses_ssh("git", "git", ARGV("git", "status")));
	CHECK(appr_uses_ssh("rsync", "rsync", ARGV("rsync", "a", "b")));
	/* the analysis: ssh and git fetch are not allowed by any entry while the file names code */
	put_file(ssh, "config", "Host *\n  ProxyCommand id\n", 0600);
	struct appr_analysis a;
	appr_analyze(ARGV("git", "fetch"), "/", PATH_ENV, &a);
	CHECK(a.nr == 1 && a.cmds[0].code_config);
	appr_analysis_release(&a);
	free(home);
	free(ssh);
	free(confd);
}

TEST(approvals_argv_patterns_and_executable_only_entries)
{
	struct appr_effective eff = { APPR_SECURITY_ALLOWLIST, APPR_ASK_OFF, APPR_SECURITY_DENY };
	const struct {
		const char *pattern;
		const char *const *argv;
		int allowed;
	} cases[] = {
		{ "/usr/bin/git", ARGV("git", "status"), 1 },
		{ "/usr/bin/git", ARGV("git", "-c", "alias.x=!id", "x"), 0 },
		{ "/usr/bin/git", ARGV("git", "ls-remote", "--upload-pa=id", "."), 0 },
		{ "/usr/bin/git status *", ARGV("git", "status"), 1 },
		{ "/usr/bin/git status *", ARGV("git", "status", "-s", "x/y"), 1 },
		{ "/usr/bin/git status *", ARGV("git", "log"), 0 },
		{ "/usr/bin/git fetch *", ARGV("git", "fetch", "--upload-pack=id"), 0 }, /* trailing * adds no code */
		{ "/usr/bin/git fetch --upload-pack=/usr/bin/git-upload-pack origin",
		  ARGV("git", "fetch", "--upload-pack=/usr/bin/git-upload-pack", "origin"), 1 },
		{ "/usr/bin/make", ARGV("make", "test"), 0 },
		{ "/usr/bin/make test", ARGV("make", "test"), 1 },
		{ "/usr/bin/make *", ARGV("make", "-j2"), 1 },
		{ "/usr/bin/python3* -c print(1)", ARGV("python3", "-c", "print(1)"), 1 },
		{ "/usr/bin/python3*", ARGV("python3", "-c", "print(1)"), 0 },
		{ "/usr/bin/ls -l?", ARGV("ls", "-la"), 1 },
		{ "/usr/bin/ls a\\ b", ARGV("ls", "a b"), 1 },
		{ "/usr/bin/ls a\\ b", ARGV("ls", "a", "b"), 0 },
		{ "/usr/bin/ls", ARGV("sh", "-c", "ls *"), 1 },
		{ "/usr/bin/git status *", ARGV("sh", "-c", "git status *"), 0 }, /* expanded words never match */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *patterns[] = { cases[i].pattern };
		struct appr_analysis a;
		appr_analyze(cases[i].argv, "/", PATH_ENV, &a);
		struct appr_verdict v;
		appr_decide(&eff, &a, patterns, 1, NULL, &v);
		if ((v.decision == APPR_ALLOW) != cases[i].allowed)
			unit_fail(__FILE__, __LINE__, "pattern \"%s\" on %s %s: %s (%s)", cases[i].pattern,
				  cases[i].argv[0], cases[i].argv[1] ? cases[i].argv[1] : "",
				  appr_decision_name(v.decision), a.ok ? "ok" : a.reason);
		appr_verdict_release(&v);
		appr_analysis_release(&a);
	}
}

TEST(approvals_symlinks_are_matched_by_their_target)
{
	const char *dir = unit_tmpdir();
	char *fake_ls = xasprintf("%s/ls", dir), *fake_nice = xasprintf("%s/nice", dir);
	CHECK_INT(symlink("/usr/bin/rm", fake_ls), 0);
	CHECK_INT(symlink("/usr/bin/env", fake_nice), 0);
	/* A symlink named ls to rm resolves to rm: an allowlist of /usr/bin/ls does not cover it. */
	char *got = analysis_summary(ARGV(fake_ls, "-rf", "/"), dir);
	CHECK_STR(got, "ok /usr/bin/rm");
	free(got);
	got = analysis_summary(ARGV("./ls"), dir); /* relative to cwd */
	CHECK_STR(got, "ok /usr/bin/rm");
	free(got);
	/* A symlink named nice to env is not unwrapped as nice. */
	got = analysis_summary(ARGV(fake_nice, "-S", "rm -rf /"), dir);
	CHECK_CONTAINS(got, "not the wrapper it runs");
	free(got);
	/* A file named nice or sh that is not the system's is never unwrapped (it runs by descriptor as
	 * argv[0], so it could be anything: issue 19). */
	char *trojan_nice = xasprintf("%s/t/nice", dir), *trojan_sh = xasprintf("%s/t/sh", dir),
	     *tdir = xasprintf("%s/t", dir);
	CHECK_INT(mkdir(tdir, 0755), 0);
	for (int k = 0; k < 2; k++) {
		int fd = open(k ? trojan_sh : trojan_nice, O_WRONLY | O_CREAT, 0755);
		CHECK(fd >= 0);
		close(fd);
	}
	got = analysis_summary(ARGV(trojan_nice, "ls"), dir);
	CHECK_CONTAINS(got, "is not the system's");
	free(got);
	got = analysis_summary(ARGV(trojan_sh, "-c", "ls"), dir);
	CHECK_CONTAINS(got, "is not the system's");
	free(got);
	free(trojan_nice);
	free(trojan_sh);
	free(tdir);
	struct appr_analysis a;
	appr_analyze(ARGV(fake_ls), dir, PATH_ENV, &a);
	struct appr_effective eff = { APPR_SECURITY_ALLOWLIST, APPR_ASK_OFF, APPR_SECURITY_DENY };
	const char *patterns[] = { "/usr/bin/ls" };
	struct appr_verdict v;
	appr_decide(&eff, &a, patterns, 1, NULL, &v);
	CHECK_INT(v.decision, APPR_DENY);
	CHECK_STR(v.reason, "allowlist-miss");
	CHECK_STR(a.top_resolved, "/usr/bin/rm"); /* and exec would run rm's canonical path */
	appr_verdict_release(&v);
	appr_analysis_release(&a);
	/* A PATH entry holding the symlink: resolution still gives the target. */
	struct err e = ERR_INIT;
	char *path_env = xasprintf("%s:/usr/bin", dir);
	char *r = appr_resolve_executable("ls", "/", path_env, &e);
	CHECK_STR(r, "/usr/bin/rm");
	free(r);
	/* A directory or a non-executable file is not an executable. */
	char *plain = xasprintf("%s/plain", dir);
	int fd = open(plain, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	close(fd);
	CHECK(appr_resolve_executable(plain, "/", NULL, &e) == NULL);
	CHECK_STR(e.code, E_NOT_FOUND);
	err_clear(&e);
	CHECK(appr_resolve_executable("/usr/bin", "/", NULL, &e) == NULL);
	err_clear(&e);
	free(plain);
	free(path_env);
	free(fake_ls);
	free(fake_nice);
}

/* ---- policy ---------------------------------------------------------------------------------- */

#define U APPR_UNSET
#define D APPR_SECURITY_DENY
#define L APPR_SECURITY_ALLOWLIST
#define F APPR_SECURITY_FULL

TEST(approvals_policy_resolution_table)
{
	static const struct {
		struct appr_levels request, agent, star, defaults;
		struct appr_effective want;
	} cases[] = {
		/* built-in defaults */
		{ { U, U, U }, { U, U, U }, { U, U, U }, { D, 1, D }, { D, 1, D } },
		/* agent beats star beats defaults, per field */
		{ { U, U, U }, { F, U, U }, { L, 0, U }, { D, 2, D }, { F, 0, D } },
		{ { U, U, U }, { U, U, F }, { F, U, L }, { D, 1, D }, { F, 1, F } },
		/* a request may lower security but never raise it */
		{ { L, U, U }, { F, U, U }, { U, U, U }, { D, 1, D }, { L, 1, D } },
		{ { F, U, U }, { L, U, U }, { U, U, U }, { D, 1, D }, { L, 1, D } },
		{ { F, U, U }, { U, U, U }, { U, U, U }, { D, 1, D }, { D, 1, D } },
		/* a request may raise ask but never lower it */
		{ { U, 2, U }, { L, 0, U }, { U, U, U }, { D, 1, D }, { L, 2, D } },
		{ { U, 0, U }, { L, 2, U }, { U, U, U }, { D, 1, D }, { L, 2, D } },
		/* askFallback: capped by the host's and clamped to the effective security */
		{ { U, U, F }, { L, U, L }, { U, U, U }, { D, 1, D }, { L, 1, L } },
		{ { U, U, D }, { F, U, F }, { U, U, U }, { D, 1, D }, { F, 1, D } },
		{ { U, U, U }, { L, U, F }, { U, U, U }, { D, 1, D }, { L, 1, L } },
		{ { D, U, U }, { F, U, F }, { U, U, U }, { D, 1, D }, { D, 1, D } },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct appr_effective got;
		appr_policy_resolve(&cases[i].request, &cases[i].agent, &cases[i].star, &cases[i].defaults, &got);
		if (got.security != cases[i].want.security || got.ask != cases[i].want.ask ||
		    got.ask_fallback != cases[i].want.ask_fallback)
			unit_fail(__FILE__, __LINE__, "case %zu: got %d/%d/%d, expected %d/%d/%d", i, got.security,
				  got.ask, got.ask_fallback, cases[i].want.security, cases[i].want.ask,
				  cases[i].want.ask_fallback);
	}
	CHECK_INT(appr_security_parse("maybe"), -1);
	CHECK_INT(appr_security_parse("Full"), -1);
	CHECK_INT(appr_ask_parse("on-miss"), APPR_ASK_ON_MISS);
}

TEST(approvals_decision_table)
{
	const struct {
		const char *const *argv;
		struct appr_effective eff;
		enum appr_decision want;
		const char *reason;
	} cases[] = {
		{ ARGV("ls"), { D, 2, F }, APPR_DENY, "security=deny" },
		{ ARGV("ls"), { L, 0, D }, APPR_ALLOW, "allowlisted" },
		{ ARGV("ls"), { L, 1, D }, APPR_ALLOW, "allowlisted" },
		{ ARGV("ls"), { L, 2, D }, APPR_ASK, "approval-required" },
		{ ARGV("id"), { L, 0, D }, APPR_DENY, "allowlist-miss" },
		{ ARGV("id"), { L, 1, D }, APPR_ASK, "allowlist-miss" },
		{ ARGV("id"), { F, 1, D }, APPR_ALLOW, "security=full" },
		{ ARGV("id"), { F, 2, D }, APPR_ASK, "approval-required" },
		{ ARGV("sh", "-c", "ls && ls"), { L, 0, D }, APPR_ALLOW, "allowlisted" },
		{ ARGV("sh", "-c", "ls && id"), { L, 0, D }, APPR_DENY, "allowlist-miss" }, /* every segment */
		{ ARGV("sh", "-c", "ls > x"), { L, 1, D }, APPR_ASK, "allowlist-miss" },
		{ ARGV("env", "-S", "ls"), { L, 0, D }, APPR_DENY, "allowlist-miss" },
		{ ARGV("LS"), { L, 0, D }, APPR_DENY, "allowlist-miss" },
	};
	const char *patterns[] = { "/usr/bin/ls", "/usr/bin/nosuch*" };
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct appr_analysis a;
		appr_analyze(cases[i].argv, "/", PATH_ENV, &a);
		struct appr_verdict v;
		appr_decide(&cases[i].eff, &a, patterns, 2, NULL, &v);
		if (v.decision != cases[i].want || strcmp(v.reason, cases[i].reason))
			unit_fail(__FILE__, __LINE__, "case %zu (%s): %s/%s, expected %s/%s", i, cases[i].argv[0],
				  appr_decision_name(v.decision), v.reason, appr_decision_name(cases[i].want),
				  cases[i].reason);
		appr_verdict_release(&v);
		appr_analysis_release(&a);
	}
}

TEST(approvals_fallback)
{
	struct appr_verdict v = { .allowlisted = 0 };
	const char *reason;
	struct appr_effective eff = { F, 2, F };
	CHECK_INT(appr_fallback(&eff, &v, &reason), APPR_ALLOW);
	eff.ask_fallback = L;
	CHECK_INT(appr_fallback(&eff, &v, &reason), APPR_DENY);
	CHECK_STR(reason, "allowlist-miss");
	v.allowlisted = 1;
	CHECK_INT(appr_fallback(&eff, &v, &reason), APPR_ALLOW);
	eff.ask_fallback = D;
	CHECK_INT(appr_fallback(&eff, &v, &reason), APPR_DENY);
	CHECK_STR(reason, "approval-required");
}

TEST(approvals_allow_always_records_the_inner_command_never_the_shell)
{
	const struct {
		const char *const *argv;
		const char *expected; /* patterns joined by ',' or "REFUSED" */
	} cases[] = {
		{ ARGV("sh", "-c", "ls"), "/usr/bin/ls" },
		{ ARGV("bash", "-c", "ls | wc -l && ls"), "/usr/bin/ls,/usr/bin/wc" },
		{ ARGV("nice", "-n", "1", "timeout", "5", "id"), "/usr/bin/id" },
		{ ARGV("bash", "script.sh"), "REFUSED" },
		{ ARGV("sh", "-c", "ls > x"), "REFUSED" },
		{ ARGV("env", "-S", "ls"), "REFUSED" },
		{ ARGV("sudo", "ls"), "REFUSED" },
		{ ARGV("python3", "-c", "print(1)"), "REFUSED" }, /* an interpreter given code */
		{ ARGV("sh", "-c", "git -c alias.x=!id x"), "REFUSED" },
		{ ARGV("make"), "REFUSED" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct appr_analysis a;
		appr_analyze(cases[i].argv, "/", PATH_ENV, &a);
		struct strvec out = STRVEC_INIT;
		struct err e = ERR_INIT;
		struct strbuf got = STRBUF_INIT;
		if (appr_allow_always_patterns(&a, &out, &e) < 0)
			strbuf_addstr(&got, "REFUSED");
		for (size_t k = 0; k < out.nr; k++)
			strbuf_addf(&got, "%s%s", k ? "," : "", out.v[k]);
		if (strcmp(got.buf, cases[i].expected))
			unit_fail(__FILE__, __LINE__, "allow-always %s…: %s, expected %s", cases[i].argv[0], got.buf,
				  cases[i].expected);
		for (size_t k = 0; k < out.nr; k++)
			CHECK(!appr_is_shell_or_wrapper(strrchr(out.v[k], '/') + 1));
		strbuf_release(&got);
		strvec_clear(&out);
		err_clear(&e);
		appr_analysis_release(&a);
	}
}

/* ---- store ----------------------------------------------------------------------------------- */

TEST(approvals_store_validation_names_the_field)
{
	static const struct {
		const char *doc, *message;
	} cases[] = {
		{ "{\"version\":1}", NULL },
		{ "{\"version\":1,\"defaults\":{\"security\":\"full\",\"ask\":\"always\",\"askFallback\":\"allowlist\"}"
		  "}",
		  NULL },
		{ "{\"version\":2}", "version: must be 1" },
		{ "{}", "version: must be 1" },
		{ "[]", "must be a JSON object" },
		{ "{\"version\":1,\"extra\":1}", "unknown field \"extra\"" },
		{ "{\"version\":1,\"agents\":{\"foo\":{\"security\":\"maybe\"}}}",
		  "agents.foo.security: \"maybe\" is not one of deny|allowlist|full" },
		{ "{\"version\":1,\"defaults\":{\"ask\":\"sometimes\"}}",
		  "defaults.ask: \"sometimes\" is not one of off|on-miss|always" },
		{ "{\"version\":1,\"defaults\":{\"askFallback\":1}}", "defaults.askFallback: 1 is not one of" },
		{ "{\"version\":1,\"agents\":{\"a b\":{}}}", "agents.a b: agent id must be" },
		{ "{\"version\":1,\"agents\":{\"*\":{\"allowlist\":[{\"id\":\"x\",\"pattern\":\"ls\"}]}}}",
		  "agents.*.allowlist.0: pattern: pattern \"ls\" has no '/'" },
		{ "{\"version\":1,\"agents\":{\"*\":{\"allowlist\":[{\"id\":\"x\",\"pattern\":\"/"
		  "a\",\"lastUsedAt\":-1}]}}}",
		  "lastUsedAt" },
		{ "{\"version\":1,\"socket\":{\"token\":\"short\"}}", "socket.token: must be 64" },
		{ "{\"version\":1,\"socket\":{\"path\":\"rel\"}}", "socket.path: must be an absolute" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct err e = ERR_INIT;
		json_t *j = json_parse(cases[i].doc, strlen(cases[i].doc), &e);
		CHECK(j != NULL);
		int rc = appr_store_validate(j, &e);
		if (!cases[i].message)
			CHECK_INT(rc, 0);
		else {
			CHECK_INT(rc, -1);
			CHECK_CONTAINS(e.message, cases[i].message);
		}
		json_decref(j);
		err_clear(&e);
	}
}

static int add_pattern(json_t *root, void *arg, struct err *e)
{
	return appr_store_allowlist_add(root, "*", arg, NULL, e);
}

TEST(approvals_store_update_is_atomic_private_and_checks_the_hash)
{
	char *home = xasprintf("%s/home", unit_tmpdir());
	struct appr_store s = APPR_STORE_INIT;
	struct err e = ERR_INIT;
	CHECK_INT(appr_store_load(&s, home, &e), 0);
	CHECK_STR(s.hash, "");
	struct stat st;
	CHECK_INT(stat(home, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0700);
	CHECK_INT(appr_store_update(&s, "", add_pattern, "/usr/bin/ls", &e), 0);
	CHECK_INT(strlen(s.hash), 64);
	char *file = xasprintf("%s/exec-approvals.json", home);
	CHECK_INT(stat(file, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0600);
	/* A write against a stale hash fails with a retry error and changes nothing. */
	char stale[65];
	memcpy(stale, s.hash, sizeof(stale));
	CHECK_INT(appr_store_update(&s, NULL, add_pattern, "/usr/bin/id", &e), 0);
	CHECK(strcmp(stale, s.hash) != 0);
	CHECK_INT(appr_store_update(&s, stale, add_pattern, "/usr/bin/wc", &e), -1);
	CHECK(appr_err_is_retry(&e));
	CHECK_CONTAINS(e.message, "changed since it was read");
	err_clear(&e);
	struct strvec patterns = STRVEC_INIT;
	appr_store_patterns(s.root, "any", &patterns);
	CHECK_INT(patterns.nr, 2);
	strvec_clear(&patterns);
	/* An invalid mutation is refused, the file keeps its content. */
	CHECK_INT(appr_store_update(&s, NULL, add_pattern, "relative", &e), -1);
	err_clear(&e);
	/* Looser modes and symlinks are refused. */
	CHECK_INT(chmod(file, 0644), 0);
	CHECK_INT(appr_store_load(&s, home, &e), -1);
	CHECK_CONTAINS(e.message, "mode 0644");
	err_clear(&e);
	CHECK_INT(chmod(file, 0600), 0);
	char *moved = xasprintf("%s/real.json", unit_tmpdir());
	CHECK_INT(rename(file, moved), 0);
	CHECK_INT(symlink(moved, file), 0);
	CHECK_INT(appr_store_load(&s, home, &e), -1);
	CHECK_CONTAINS(e.message, "symlink");
	err_clear(&e);
	char *link_home = xasprintf("%s/linked", unit_tmpdir());
	CHECK_INT(symlink(home, link_home), 0);
	char *below = xasprintf("%s/sub", link_home);
	CHECK_INT(appr_store_load(&s, below, &e), -1);
	CHECK_CONTAINS(e.message, "is a symlink");
	err_clear(&e);
	appr_store_release(&s);
	free(below);
	free(link_home);
	free(moved);
	free(file);
	free(home);
}

TEST(approvals_store_socket_and_levels)
{
	json_t *root = json_pack("{s:i}", "version", 1);
	struct err e = ERR_INIT;
	CHECK_INT(appr_store_ensure_socket(root, "/h", &e), 0);
	CHECK_STR(appr_store_socket_path(root), "/h/approvals.sock");
	CHECK_INT(strlen(appr_store_token(root)), 64);
	CHECK_INT(appr_store_validate(root, &e), 0);
	json_t *red = appr_store_redacted(root);
	CHECK_STR(appr_store_token(red), "<redacted>");
	json_decref(red);
	CHECK_INT(appr_store_set_level(root, "ci", "security", "maybe", &e), -1);
	CHECK_CONTAINS(e.message, "agents.ci.security: \"maybe\" is not one of deny|allowlist|full");
	err_clear(&e);
	CHECK_INT(appr_store_set_level(root, "ci", "security", "full", &e), 0);
	CHECK_INT(appr_store_set_level(root, NULL, "ask", "always", &e), 0);
	struct appr_levels l, d;
	appr_store_levels(root, "ci", &l);
	CHECK_INT(l.security, APPR_SECURITY_FULL);
	CHECK_INT(l.ask, APPR_UNSET);
	appr_store_defaults(root, &d);
	CHECK_INT(d.security, APPR_SECURITY_DENY);
	CHECK_INT(d.ask, APPR_ASK_ALWAYS);
	CHECK_INT(appr_store_allowlist_remove(root, "ci", "/nope", &e), -1);
	CHECK_STR(e.code, E_NOT_FOUND);
	err_clear(&e);
	json_decref(root);
}

/* ---- protocol and output --------------------------------------------------------------------- */

TEST(approvals_request_hmac_covers_every_field)
{
	const char *token = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	struct appr_ask_request r = { ARGV("ls", "-l"), "/tmp", "a1", "/usr/bin/ls" };
	json_t *req = appr_request_object(&r);
	char h1[65], h2[65], h3[65];
	appr_request_hmac(token, "nonce-0123456789ab", 100, req, h1);
	appr_request_hmac(token, "nonce-0123456789ab", 101, req, h2);
	CHECK(strcmp(h1, h2) != 0);
	json_object_set_new(req, "cwd", json_string("/"));
	appr_request_hmac(token, "nonce-0123456789ab", 100, req, h3);
	CHECK(strcmp(h1, h3) != 0);
	/* The canonical form sorts keys: the same object built in another order signs the same. */
	json_t *other = json_pack("{s:s,s:s,s:s,s:[s,s]}", "resolvedPath", "/usr/bin/ls", "cwd", "/", "agentId", "a1",
				  "argv", "ls", "-l");
	char h4[65];
	appr_request_hmac(token, "nonce-0123456789ab", 100, other, h4);
	CHECK_STR(h4, h3);
	json_decref(other);
	json_decref(req);
	struct appr_ask_request bad = { ARGV("ls", "f\xff"), "/tmp", "a1", NULL };
	CHECK(appr_request_object(&bad) == NULL); /* what cannot be shown faithfully is not asked */
	CHECK_INT(appr_answer_parse("a"), APPR_ANSWER_ALLOW_ALWAYS);
	CHECK_INT(appr_answer_parse("o"), APPR_ANSWER_ALLOW_ONCE);
	CHECK_INT(appr_answer_parse("d"), APPR_ANSWER_DENY);
	CHECK_INT(appr_answer_parse("yes"), -1);
}

TEST(approvals_format_argv_is_terminal_safe)
{
	json_t *argv = json_pack("[s,s,s]", "ls", "a b", "\x1b]0;evil\x07");
	struct strbuf sb = STRBUF_INIT;
	appr_format_argv(argv, &sb);
	CHECK_STR(sb.buf, "ls 'a b' '\\x1b]0;evil\\x07'");
	strbuf_release(&sb);
	json_decref(argv);
}

TEST(approvals_event_output_keeps_the_tail_in_characters)
{
	struct strbuf out = STRBUF_INIT;
	appr_event_output("short", 5, &out);
	CHECK_STR(out.buf, "short");
	strbuf_reset(&out);
	appr_event_output("a\xff"
			  "b",
			  3, &out); /* invalid UTF-8 becomes U+FFFD */
	CHECK_STR(out.buf, "a\xef\xbf\xbd"
			   "b");
	strbuf_reset(&out);
	struct strbuf big = STRBUF_INIT;
	strbuf_addstr(&big, "HEAD");
	for (int i = 0; i < APPR_EVENT_OUTPUT_MAX; i++)
		strbuf_addstr(&big, "\xc3\xa9"); /* é: 2 bytes, 1 character */
	appr_event_output(big.buf, big.len, &out);
	CHECK(!strncmp(out.buf, "... (truncated) \xc3\xa9", 18));
	CHECK_INT(out.len, strlen("... (truncated) ") + 2 * APPR_EVENT_OUTPUT_MAX);
	CHECK(strstr(out.buf, "HEAD") == NULL);
	strbuf_release(&big);
	strbuf_release(&out);
}

TEST(approvals_exec_caps_output_at_the_head)
{
	struct appr_exec_result r;
	struct err e = ERR_INIT;
	CHECK_INT(appr_exec_run("/usr/bin/head", -1, NULL, ARGV("head", "-c", "300000", "/dev/zero"), 0, &r, &e), 0);
	CHECK_INT(r.exit_code, 0);
	CHECK(r.success);
	CHECK_INT(r.output.len, APPR_OUTPUT_MAX + strlen("\n... (truncated)"));
	CHECK_STR(r.output.buf + APPR_OUTPUT_MAX, "\n... (truncated)");
	appr_exec_result_release(&r);
	CHECK_INT(appr_exec_run("/usr/bin/sleep", -1, NULL, ARGV("sleep", "5"), 200, &r, &e), 0);
	CHECK(r.timed_out);
	CHECK(!r.success);
	appr_exec_result_release(&r);
}

TEST(approvals_exec_runs_the_descriptor_checked_not_the_path)
{
	const char *dir = unit_tmpdir();
	char *tool = xasprintf("%s/tool", dir), *moved = xasprintf("%s/moved", dir);
	int fd = open(tool, O_WRONLY | O_CREAT, 0755);
	CHECK_INT(write(fd, "#!/bin/sh\necho checked\n", 24), 24);
	close(fd);
	struct appr_analysis a;
	appr_analyze(ARGV(tool), "/", PATH_ENV, &a);
	CHECK(a.ok);
	/* swapped after the check: a new file at the path; the checked one still runs (by descriptor) */
	CHECK_INT(rename(tool, moved), 0);
	fd = open(tool, O_WRONLY | O_CREAT, 0755);
	CHECK_INT(write(fd, "#!/bin/sh\necho TROJAN\n", 23), 23);
	close(fd);
	struct err e = ERR_INIT;
	CHECK_INT(appr_exec_checked(&a, &e), 0);
	struct appr_exec_result r;
	CHECK_INT(appr_exec_run(a.top_resolved, a.top_fd, a.path_env, (const char *const *)a.exec_argv.v, 5000, &r, &e),
		  0);
	CHECK_STR(r.output.buf, "checked\n");
	appr_exec_result_release(&r);
	/* changed in place after the check: refused before anything runs */
	int w = open(moved, O_WRONLY | O_APPEND);
	CHECK_INT(write(w, "id\n", 3), 3);
	close(w);
	CHECK_INT(appr_exec_checked(&a, &e), -1);
	CHECK_CONTAINS(e.message, "changed since it was checked");
	err_clear(&e);
	appr_analysis_release(&a);
	free(tool);
	free(moved);
}

TEST(approvals_display_escapes_bidi_c1_and_invisible_characters)
{
	struct strbuf sb = STRBUF_INIT;
	appr_display_escape("ls \xe2\x80\xae"
			    "fdp.exe\xc2\x9b"
			    "1m \xe2\x81\xa6x\xe2\x81\xa9 \xe2\x80\x8b \xc3\xa9",
			    &sb);
	CHECK_STR(sb.buf, "ls \\u{202e}fdp.exe\\u{009b}1m \\u{2066}x\\u{2069} \\u{200b} \xc3\xa9");
	strbuf_release(&sb);
	json_t *argv = json_pack("[s,s]", "echo",
				 "a\xe2\x80\xaa"
				 "b");
	appr_format_argv(argv, &sb);
	CHECK_STR(sb.buf, "echo 'a\\u{202a}b'");
	strbuf_release(&sb);
	json_decref(argv);
}

TEST(approvals_exec_scrubs_code_injecting_environment)
{
	static const struct {
		const char *entry;
		int scrubbed;
	} cases[] = {
		{ "LD_PRELOAD=/x.so", 1 },
		{ "LD_LIBRARY_PATH=/x", 1 },
		{ "BASH_FUNC_ls%%=() { :; }", 1 },
		{ "BASH_ENV=/x", 1 },
		{ "ENV=/x", 1 },
		{ "SHELLOPTS=xtrace", 1 },
		{ "IFS=/", 1 },
		{ "GCONV_PATH=/x", 1 },
		{ "PATH=/usr/bin", 0 },
		{ "HOME=/root", 0 },
		{ "ENVIRONMENT=x", 0 },
		{ "LANG=C", 0 },
		{ "GIT_SSH_COMMAND=id", 1 },
		{ "GIT_CONFIG_PARAMETERS='alias.x=!id'", 1 },
		{ "GIT_CONFIG_KEY_0=x", 1 },
		{ "GIT_DIR=/tmp/x", 1 },
		{ "GIT_AUTHOR_NAME=a", 0 },
		{ "SSH_CLIENT=1 2 3", 1 },
		{ "PAGER=id", 1 },
		{ "TAR_OPTIONS=--to-command=id", 1 },
		{ "NODE_OPTIONS=--require=/x", 1 },
		{ "PERL5OPT=-Mx", 1 },
		{ "CDPATH=/tmp", 1 },
		{ "GLOBIGNORE=*", 1 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		if (appr_env_is_scrubbed(cases[i].entry) != cases[i].scrubbed)
			unit_fail(__FILE__, __LINE__, "%s: expected scrubbed=%d", cases[i].entry, cases[i].scrubbed);
}

/* Deterministic random inputs: the splitter, the analysis and the glob never crash or leak
 * (run under ASan/LSan), and whatever the splitter accepts has no operator left in a command name. */
TEST(approvals_random_shell_text_and_globs_are_handled)
{
	static const char alphabet[] = "ls -;&|<>()$`'\"\\\n\t*?[]{}~#=!/abc";
	unsigned state = 12345;
	for (int round = 0; round < 3000; round++) {
		char text[48];
		size_t len = (size_t)(round % 40);
		for (size_t i = 0; i < len; i++) {
			state = state * 1103515245u + 12345u;
			text[i] = alphabet[(state >> 16) % (sizeof(alphabet) - 1)];
		}
		text[len] = '\0';
		struct strvec *segs;
		size_t nr;
		struct err e = ERR_INIT;
		if (appr_shell_split(text, &segs, &nr, &e) == 0) {
			for (size_t i = 0; i < nr; i++) {
				CHECK(segs[i].nr > 0);
				int quoted = strchr(text, '\'') || strchr(text, '"') || strchr(text, '\\');
				CHECK(quoted || (strpbrk(segs[i].v[0], "*?[{}") == NULL && segs[i].v[0][0] != '~'));
			}
			appr_segments_free(segs, nr);
		}
		err_clear(&e);
		struct appr_analysis a;
		appr_analyze((const char *const[]){ "sh", "-c", text, NULL }, "/", PATH_ENV, &a);
		appr_analysis_release(&a);
		appr_glob_match(text, "/usr/bin/ls", "/home/u");
		appr_glob_match("/usr/**", text, NULL);
	}
}
