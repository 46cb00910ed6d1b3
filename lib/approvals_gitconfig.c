/* approvals_gitconfig.c — configuration that makes git run code (approvals_gitconfig.h): keys and hooks.
 * Never executes git or a hook; a file it cannot read or parse counts as code. */
#include <dirent.h>
#include <git2.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approvals_gitconfig.h"
#include "gitops.h"
#include "strbuf.h"
#include "banned.h"

/* ---- keys ------------------------------------------------------------------------------------ */

static int is_boolean(const char *v)
{
	static const char *const words[] = { "", "true", "false", "yes", "no", "on", "off", "1", "0" };
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (!strcasecmp(v, words[i]))
			return 1;
	return 0;
}

static int is_dev_null(const char *v)
{
	return !strcmp(v, "/dev/null");
}
static int no_bang(const char *v)
{
	return v[0] != '!';
}
static int not_always(const char *v)
{
	return strcasecmp(v, "always") != 0;
}
static int is_never(const char *v)
{
	return !strcasecmp(v, "never");
}

/* A program name found in the run's (pinned) PATH: letters, digits, - _ . only. */
static int plain_name(const char *v)
{
	return *v && strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == strlen(v);
}

/* credential.helper: a helper name (git credential-NAME) with plain arguments; git runs it through sh. */
static int plain_command(const char *v)
{
	size_t name = strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_");
	if (name == 0)
		return 0;
	return strspn(v + name, " abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.=/:") ==
	       strlen(v + name);
}

enum subsection { SUB_NONE, SUB_ANY, SUB_EXT };

static const struct code_key {
	const char *section;
	enum subsection sub;
	const char *key;
	int (*safe)(const char *value); /* NULL: any value names code */
} code_keys[] = {
	{ "core", SUB_NONE, "fsmonitor", is_boolean },
	{ "core", SUB_NONE, "hookspath", is_dev_null },
	{ "core", SUB_NONE, "sshcommand", NULL },
	{ "core", SUB_NONE, "gitproxy", NULL },
	{ "core", SUB_NONE, "alternaterefscommand", NULL },
	{ "diff", SUB_NONE, "external", NULL },
	{ "diff", SUB_ANY, "command", NULL },
	{ "diff", SUB_ANY, "textconv", NULL },
	{ "merge", SUB_ANY, "driver", NULL },
	{ "filter", SUB_ANY, "clean", NULL },
	{ "filter", SUB_ANY, "smudge", NULL },
	{ "filter", SUB_ANY, "process", NULL },
	{ "remote", SUB_ANY, "uploadpack", NULL },
	{ "remote", SUB_ANY, "receivepack", NULL },
	{ "uploadpack", SUB_NONE, "packobjectshook", NULL },
	{ "difftool", SUB_ANY, "cmd", NULL },
	{ "mergetool", SUB_ANY, "cmd", NULL },
	{ "interactive", SUB_NONE, "difffilter", NULL },
	{ "submodule", SUB_ANY, "update", no_bang },
	{ "protocol", SUB_EXT, "allow", is_never },
	{ "protocol", SUB_NONE, "allow", not_always },
	{ "credential", SUB_NONE, "helper", plain_command },
	{ "credential", SUB_ANY, "helper", plain_command },
	{ "gpg", SUB_NONE, "program", plain_name },
	{ "gpg", SUB_ANY, "program", plain_name },
};

/* 1 when the entry name section[.subsection].key names code for this value. */
static int names_code(const char *name, const char *value)
{
	const char *first = strchr(name, '.'), *last = strrchr(name, '.');
	if (!first)
		return 0;
	size_t section_len = (size_t)(first - name);
	int has_sub = first != last;
	const char *sub = first + 1;
	size_t sub_len = has_sub ? (size_t)(last - sub) : 0;
	for (size_t i = 0; i < ARRAY_SIZE(code_keys); i++) {
		const struct code_key *k = &code_keys[i];
		if (strlen(k->section) != section_len || strncasecmp(name, k->section, section_len) ||
		    strcasecmp(last + 1, k->key))
			continue;
		if ((k->sub == SUB_NONE) == has_sub)
			continue;
		if (k->sub == SUB_EXT && (sub_len != 3 || strncasecmp(sub, "ext", 3)))
			continue;
		if (!k->safe || !k->safe(value ? value : ""))
			return 1;
	}
	return 0;
}

/* ---- files ----------------------------------------------------------------------------------- */

struct scan {
	const char *file;
	char *reason;
};

/* 1 for an includeIf whose condition libgit2 does not evaluate (git may include a file this never read). */
static int unread_include(const char *name)
{
	static const char *const understood[] = { "gitdir:", "gitdir/i:", "onbranch:" };
	size_t n = strlen(name);
	if (strncasecmp(name, "includeif.", 10) || n < 15 || strcasecmp(name + n - 5, ".path"))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(understood); i++)
		if (!strncasecmp(name + 10, understood[i], strlen(understood[i])))
			return 0;
	return 1;
}

static int scan_entry(const git_config_entry *entry, void *arg)
{
	struct scan *s = arg;
	if (unread_include(entry->name)) {
		s->reason = xasprintf("%s has %s: git may include a file not read here, so code cannot be ruled "
				      "out",
				      s->file, entry->name);
		return 1;
	}
	if (!names_code(entry->name, entry->value))
		return 0;
	s->reason = xasprintf("%s sets %s = %s: code git would run (set where the caller can write it)", s->file,
			      entry->name, entry->value ? entry->value : "true");
	return 1;
}

/* A reason when the config file at path (with its includes) names code; NULL when not or when absent. */
static char *scan_file(const char *path, git_repository *repo)
{
	struct stat st;
	if (!path || stat(path, &st) < 0)
		return NULL;
	git_config *cfg = NULL;
	struct scan s = { path, NULL };
	if (git_config_new(&cfg) < 0 || git_config_add_file_ondisk(cfg, path, GIT_CONFIG_LEVEL_LOCAL, repo, 0) < 0 ||
	    git_config_foreach(cfg, scan_entry, &s) < 0) {
		if (!s.reason) {
			const git_error *err = git_error_last();
			s.reason = xasprintf("%s could not be read as git configuration (%s): code git would run "
					     "cannot be ruled out",
					     path, err ? err->message : "?");
		}
	}
	git_config_free(cfg);
	return s.reason;
}

/* A reason when the hooks directory holds a hook (an executable file that is not *.sample). */
static char *scan_hooks(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	char *reason = NULL;
	struct dirent *de;
	while (!reason && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (de->d_name[0] == '.' || (n > 7 && !strcmp(de->d_name + n - 7, ".sample")))
			continue;
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, de->d_name);
		struct stat st;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			reason = xasprintf("the repository has a hook %s: code git runs on its own", path);
	}
	closedir(d);
	return reason;
}

/* ---- the repository -------------------------------------------------------------------------- */

static char *joined_path(const char *base, const char *p)
{
	return p[0] == '/' ? xstrdup(p) : xasprintf("%s/%s", base, p);
}

/* Applies git's global -C and --git-dir to where git starts; *git_dir is set when named. */
static char *start_directory(const char *cwd, const char *const *argv, char **git_dir)
{
	char *start = xstrdup(cwd ? cwd : ".");
	*git_dir = NULL;
	for (size_t i = 1; argv[i] && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if ((!strcmp(a, "-C") || !strcmp(a, "--git-dir") || !strcmp(a, "--work-tree") ||
		     !strcmp(a, "--namespace")) &&
		    argv[i + 1]) {
			if (!strcmp(a, "-C")) {
				char *next = joined_path(start, argv[i + 1]);
				free(start);
				start = next;
			} else if (!strcmp(a, "--git-dir")) {
				free(*git_dir);
				*git_dir = joined_path(start, argv[i + 1]);
			}
			i++;
		} else if (!strncmp(a, "--git-dir=", 10)) {
			free(*git_dir);
			*git_dir = joined_path(start, a + 10);
		}
	}
	return start;
}

static git_repository *open_repository(const char *cwd, const char *const *argv)
{
	char *git_dir = NULL;
	_cleanup_free_ char *start = start_directory(cwd, argv, &git_dir);
	git_repository *repo = NULL;
	git_buf found = { 0 };
	if (git_dir) {
		git_repository_open_ext(&repo, git_dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	} else if (git_repository_discover(&found, start, 0, NULL) == 0) {
		git_repository_open_ext(&repo, found.ptr, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	}
	git_buf_dispose(&found);
	free(git_dir);
	return repo;
}

/* The user's files, as git finds them with the run's environment. */
static char *scan_user_files(git_repository *repo)
{
	const char *home = getenv("HOME"), *xdg = getenv("XDG_CONFIG_HOME");
	_cleanup_free_ char *xdg_file = xdg && *xdg ? xasprintf("%s/git/config", xdg)
					: home	    ? xasprintf("%s/.config/git/config", home)
						    : NULL;
	_cleanup_free_ char *global = home ? xasprintf("%s/.gitconfig", home) : NULL;
	char *reason = scan_file("/etc/gitconfig", repo);
	if (!reason)
		reason = scan_file(xdg_file, repo);
	if (!reason)
		reason = scan_file(global, repo);
	return reason;
}

static char *scan_repository(git_repository *repo, int depth, int *budget);

/* Submodules and nested repositories git enters (status, diff, checkout recurse into them): every gitlink
 * of the index whose worktree path holds a repository. */
static char *scan_submodules(git_repository *repo, int depth, int *budget)
{
	const char *workdir = git_repository_workdir(repo);
	git_index *index = NULL;
	if (!workdir || git_repository_index(&index, repo) < 0)
		return NULL;
	char *reason = NULL;
	size_t n = git_index_entrycount(index);
	for (size_t i = 0; i < n && !reason; i++) {
		const git_index_entry *entry = git_index_get_byindex(index, i);
		if (!entry || entry->mode != GIT_FILEMODE_COMMIT)
			continue;
		if (depth >= APPR_GIT_NESTING || --*budget < 0) {
			reason = xasprintf("submodules nested deeper than %d or more than %d: code git would run in "
					   "them cannot be ruled out",
					   APPR_GIT_NESTING, APPR_GIT_SUBMODULES);
			break;
		}
		_cleanup_free_ char *path = xasprintf("%s%s", workdir, entry->path);
		git_repository *sub = NULL;
		if (git_repository_open_ext(&sub, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) == 0)
			reason = scan_repository(sub, depth + 1, budget);
		git_repository_free(sub);
	}
	git_index_free(index);
	return reason;
}

/* The repository's config, config.worktree and hooks, then its submodules'. */
static char *scan_repository(git_repository *repo, int depth, int *budget)
{
	const char *common = git_repository_commondir(repo), *dir = git_repository_path(repo);
	_cleanup_free_ char *config = xasprintf("%sconfig", common);
	_cleanup_free_ char *worktree_config = xasprintf("%sconfig.worktree", dir);
	_cleanup_free_ char *hooks = xasprintf("%shooks", common);
	char *reason = scan_file(config, repo);
	if (!reason)
		reason = scan_file(worktree_config, repo);
	if (!reason)
		reason = scan_hooks(hooks);
	if (!reason)
		reason = scan_submodules(repo, depth, budget);
	return reason;
}

char *appr_git_config_code(const char *cwd, const char *const *argv)
{
	_cleanup_err_ struct err e = ERR_INIT;
	if (gitops_init(&e) < 0)
		return xasprintf("git configuration cannot be read (%s): code git would run cannot be ruled out",
				 e.message);
	git_repository *repo = open_repository(cwd, argv);
	char *reason = scan_user_files(repo);
	int budget = APPR_GIT_SUBMODULES;
	if (repo && !reason)
		reason = scan_repository(repo, 0, &budget);
	git_repository_free(repo);
	return reason;
}
