/* gitlayout.c — a worktree's git metadata derived from the data home's layout, checked before a run and repaired
 * after it (gitlayout.h). Every file is reached by descriptor beneath repos/ or worktrees/; no link is followed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "confine.h"
#include "crypto.h"
#include "fsutil.h"
#include "gitlayout.h"
#include "gitops.h"
#include "json.h"
#include "log.h"
#include "strbuf.h"
#include "strvec.h"
#include "banned.h"

#define SMALL_FILE_MAX	  4096
#define RENAME_NOREPLACE_ 1
#ifndef SYS_renameat2
#define SYS_renameat2 316
#endif
#define CONFIG_MAX (1 << 20)
#define INDEX_MAX  (128 << 20) /* larger than any real worktree's index; a bigger one is rebuilt, not read */
#define MAX_DEPTH  64	       /* directories below a store (refs/heads/a/b/… is deep, not this deep) */

/* The part of path below root ("." for root itself), or NULL when path is not lexically under root. */
static const char *below(const char *root, const char *path)
{
	size_t n = strlen(root);
	if (strncmp(path, root, n) || (path[n] != '/' && path[n] != '\0'))
		return NULL;
	return path[n] ? path + n + 1 : ".";
}

static int tampered(struct err *e, const char *file, const char *reason)
{
	return err_setd(
		e, E_GIT_ERROR, json_pack("{s:s,s:s,s:b}", "file", file, "reason", reason, "tampered", 1),
		"%s %s. The worktree's git metadata is not what agor made, so nothing runs there (a program that "
		"ran outside the sandbox, or someone by hand, changed it): put it back, or remove the worktree",
		file, reason);
}

/* The whole of the small regular file name in dirfd (not a symlink, not a fifo); -1 when missing or unfit. */
static int read_small(int dirfd, const char *name, size_t max, struct strbuf *out)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	int rc = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max &&
	    strbuf_read_fd(out, fd, max) >= 0)
		rc = 0;
	close(fd);
	return rc;
}

/* 1 when the small file name in dirfd holds exactly `line` (its final newline optional), 0 when not. */
static int holds_line(int dirfd, const char *name, const char *line)
{
	_cleanup_strbuf_ struct strbuf text = STRBUF_INIT;
	if (read_small(dirfd, name, SMALL_FILE_MAX, &text) < 0)
		return 0;
	size_t n = strlen(line);
	return text.len >= n && !memcmp(text.buf, line, n) &&
	       (text.len == n || (text.len == n + 1 && text.buf[n] == '\n'));
}

/* holds_line for any of the NULL-terminated lines. */
static int holds_one_of(int dirfd, const char *name, const char *const *lines)
{
	for (; *lines; lines++)
		if (holds_line(dirfd, name, *lines))
			return 1;
	return 0;
}

static int exists_at(int dirfd, const char *name)
{
	struct stat st;
	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int opened_or_tampered(int fd, const char *path, struct err *e)
{
	if (fd >= 0)
		return fd;
	if (errno == ENOENT)
		return tampered(e, path, "is missing");
	if (errno == ELOOP || errno == EXDEV)
		return tampered(e, path, "is a symlink or is reached through one");
	return err_errno(e, errno, "opening %s", path);
}

int git_layout_check_repository(const struct config *cfg, const char *repo, struct err *e)
{
	const char *rel = below(cfg->paths.repos_dir, repo);
	if (!rel)
		return err_setd(e, E_PATH_OUTSIDE_DATA_HOME, json_pack("{s:s}", "path", repo),
				"%s is not inside the data home's repos/", repo);
	_cleanup_close_ int fd =
		opened_or_tampered(confine_open(cfg->paths.repos_dir, rel, O_PATH | O_DIRECTORY), repo, e);
	if (fd < 0)
		return -1;
	_cleanup_free_ char *commondir = xasprintf("%s/commondir", repo);
	if (exists_at(fd, "commondir"))
		return tampered(e, commondir,
				"exists (it sends git to another directory's objects, refs and config; "
				"agor's repositories have none)");
	struct stat st;
	_cleanup_free_ char *worktrees = xasprintf("%s/worktrees", repo);
	if (fstatat(fd, "worktrees", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
		return tampered(e, worktrees, "is not a directory");
	return 0;
}

/* "gitdir: PATH" of W/.git, checked to be a regular file (a directory there is a planted repository). */
static int read_gitfile(int wfd, const char *dotgit, struct strbuf *admin, struct err *e)
{
	struct stat st;
	if (fstatat(wfd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 1 : err_errno(e, errno, "stat %s", dotgit);
	if (S_ISDIR(st.st_mode))
		return tampered(e, dotgit,
				"is a directory, not the .git file agor wrote (a repository planted in the worktree?)");
	if (!S_ISREG(st.st_mode))
		return tampered(e, dotgit, "is not a regular file");
	if (read_small(wfd, ".git", SMALL_FILE_MAX, admin) < 0 || strncmp(admin->buf, "gitdir: ", 8))
		return tampered(e, dotgit, "is not a \"gitdir: PATH\" file");
	memmove(admin->buf, admin->buf + 8, admin->len - 8 + 1);
	strbuf_setlen(admin, admin->len - 8);
	if (admin->len && admin->buf[admin->len - 1] == '\n')
		strbuf_setlen(admin, admin->len - 1);
	if (strchr(admin->buf, '\n'))
		return tampered(e, dotgit, "has more than one line");
	if (admin->len > 1 && admin->buf[admin->len - 1] == '/') /* libgit2 writes the admin dir with a slash */
		strbuf_setlen(admin, admin->len - 1);
	return 0;
}

/* C from A = C/worktrees/NAME, NAME being the worktree's own name; NULL when A is not of that form. */
static char *common_of(const char *admin, const char *worktree)
{
	const char *name = strrchr(worktree, '/');
	_cleanup_free_ char *tail = xasprintf("/worktrees/%s", name ? name + 1 : worktree);
	size_t n = strlen(admin), t = strlen(tail);
	if (n <= t || strcmp(admin + n - t, tail))
		return NULL;
	return xstrndup(admin, n - t);
}

/* What commondir may say: C relative (git) or absolute (libgit2, with a slash), nothing else. */
static void commondir_forms(const char *common, char *forms[4])
{
	forms[0] = xstrdup("../..");
	forms[1] = xstrdup(common);
	forms[2] = xasprintf("%s/", common);
	forms[3] = NULL;
}

static void free_forms(char *forms[4])
{
	for (int i = 0; forms[i]; i++)
		free(forms[i]);
}

/* A's files as git worktree add writes them: gitdir back to W/.git, commondir to C, no per-worktree config. */
static int check_admin(int afd, const char *admin, const char *common, const char *worktree, struct err *e)
{
	char *forms[4];
	commondir_forms(common, forms);
	int ok = holds_one_of(afd, "commondir", (const char *const *)forms);
	free_forms(forms);
	_cleanup_free_ char *back = xasprintf("%s/.git", worktree);
	_cleanup_free_ char *gitdir = xasprintf("%s/gitdir", admin);
	_cleanup_free_ char *commondir = xasprintf("%s/commondir", admin);
	_cleanup_free_ char *wconfig = xasprintf("%s/config.worktree", admin);
	if (!holds_line(afd, "gitdir", back))
		return tampered(e, gitdir, "does not lead back to this worktree's .git");
	if (!ok)
		return tampered(e, commondir,
				"does not name this worktree's repository (it would send git to another one)");
	if (exists_at(afd, "config.worktree"))
		return tampered(e, wconfig, "exists (agor writes no per-worktree config)");
	/* read by trusted code: a fifo there would hang it, a sparse giant fill its memory */
	static const struct {
		const char *name;
		off_t max_size;
	} files[] = { { "HEAD", SMALL_FILE_MAX }, { "index", INDEX_MAX } };
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		struct stat st;
		_cleanup_free_ char *path = xasprintf("%s/%s", admin, files[i].name);
		if (fstatat(afd, files[i].name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISREG(st.st_mode))
			return tampered(e, path, "is not a regular file");
		if (st.st_size > files[i].max_size)
			return tampered(e, path, "is larger than git ever makes it");
	}
	return 0;
}

/* What a sandbox binds must exist: logs/ and objects/info/ are made when missing, by descriptor. */
static int make_bound_dirs(int cfd, const char *common, struct err *e)
{
	if (mkdirat(cfd, "logs", 0755) < 0 && errno != EEXIST)
		return err_errno(e, errno, "mkdir %s/logs", common);
	_cleanup_close_ int ofd = confine_openat(cfd, "objects", O_PATH | O_DIRECTORY);
	_cleanup_free_ char *objects = xasprintf("%s/objects", common);
	if (opened_or_tampered(ofd, objects, e) < 0)
		return -1;
	if (mkdirat(ofd, "info", 0755) < 0 && errno != EEXIST)
		return err_errno(e, errno, "mkdir %s/info", objects);
	return 0;
}

static int find_admin(const struct config *cfg, const char *worktree, const char *admin, const char *common, int create,
		      struct err *e)
{
	if (git_layout_check_repository(cfg, common, e) < 0)
		return -1;
	_cleanup_close_ int cfd =
		confine_open(cfg->paths.repos_dir, below(cfg->paths.repos_dir, common), O_PATH | O_DIRECTORY);
	if (opened_or_tampered(cfd, common, e) < 0)
		return -1;
	_cleanup_close_ int afd = confine_openat(cfd, admin + strlen(common) + 1, O_PATH | O_DIRECTORY);
	if (opened_or_tampered(afd, admin, e) < 0 || check_admin(afd, admin, common, worktree, e) < 0)
		return -1;
	return create ? make_bound_dirs(cfd, common, e) : 0;
}

int git_layout_find(const struct config *cfg, const char *worktree, const char *expected_repo, int create,
		    struct git_layout *l, struct err *e)
{
	memset(l, 0, sizeof(*l));
	l->worktree = xstrdup(worktree);
	const char *wrel = below(cfg->paths.worktrees_dir, worktree);
	if (!wrel)
		return err_setd(e, E_PATH_OUTSIDE_DATA_HOME, json_pack("{s:s}", "path", worktree),
				"%s is not inside the data home's worktrees/", worktree);
	_cleanup_free_ char *dotgit = xasprintf("%s/.git", worktree);
	_cleanup_close_ int wfd = confine_open(cfg->paths.worktrees_dir, wrel, O_PATH | O_DIRECTORY);
	if (opened_or_tampered(wfd, worktree, e) < 0)
		return -1;
	_cleanup_strbuf_ struct strbuf admin = STRBUF_INIT;
	int rc = read_gitfile(wfd, dotgit, &admin, e);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	if (!below(cfg->paths.repos_dir, admin.buf))
		return err_setd(
			e, E_PATH_OUTSIDE_DATA_HOME,
			json_pack("{s:s,s:s,s:s}", "path", admin.buf, "field", "gitdir", "file", dotgit),
			"%s names %s, which is not inside the data home's repos/: refusing to expose it to the sandbox "
			"(was the worktree's .git file changed?)",
			dotgit, admin.buf);
	_cleanup_free_ char *common = common_of(admin.buf, worktree);
	if (!common)
		return tampered(e, dotgit,
				"does not name this worktree's entry (REPOSITORY/worktrees/NAME) in a repository");
	if (expected_repo && strcmp(common, expected_repo)) {
		_cleanup_free_ char *why =
			xasprintf("names the repository %s, but the worktree belongs to %s", common, expected_repo);
		return tampered(e, dotgit, why);
	}
	if (find_admin(cfg, worktree, admin.buf, common, create, e) < 0)
		return -1;
	l->common = xstrdup(common);
	l->admin = strbuf_detach(&admin, NULL);
	return 0;
}

/* --- snapshot and repair -------------------------------------------------------------------- */

static int open_common(const struct config *cfg, const struct git_layout *l)
{
	return confine_open(cfg->paths.repos_dir, below(cfg->paths.repos_dir, l->common), O_PATH | O_DIRECTORY);
}

int git_layout_open_common(const struct config *cfg, const struct git_layout *l)
{
	return open_common(cfg, l);
}

/* {name: "mode size mtime"} of a directory's entries (symlinks not followed); NULL when it cannot be read. */
static json_t *list_entries(int parent, const char *name)
{
	struct fs_dir d;
	if (fs_dir_start(&d, openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return NULL;
	json_t *entries = json_object();
	struct dirent *de;
	struct stat st;
	while ((de = fs_dir_next(&d)))
		if (fstatat(d.fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			json_object_set_new(entries, de->d_name,
					    json_sprintf("%o %lld %lld", (unsigned)st.st_mode, (long long)st.st_size,
							 (long long)st.st_mtime));
	fs_dir_end(&d);
	return entries;
}

void git_layout_snapshot(const struct config *cfg, struct git_layout *l)
{
	_cleanup_close_ int cfd = l->common ? open_common(cfg, l) : -1;
	if (cfd < 0)
		return;
	struct strbuf config = STRBUF_INIT;
	if (read_small(cfd, "config", CONFIG_MAX, &config) == 0) {
		l->config_len = config.len;
		l->config = strbuf_detach(&config, NULL);
	}
	strbuf_release(&config);
	l->hooks = list_entries(cfd, "hooks");
	_cleanup_close_ int afd = confine_openat(cfd, l->admin + strlen(l->common) + 1, O_PATH | O_DIRECTORY);
	struct strbuf head = STRBUF_INIT;
	if (afd >= 0 && read_small(afd, "HEAD", SMALL_FILE_MAX, &head) == 0 && !memchr(head.buf, 0, head.len))
		l->head = strbuf_detach(&head, NULL);
	strbuf_release(&head);
}

struct repair {
	const struct config *cfg;
	const char *run;
	int qfd; /* the quarantine directory once made, else -1 */
	char *qpath;
	json_t *repaired;
};

/* DATA_HOME/quarantine/<UTC time>-<run>/ (0700), made on first use. */
static int quarantine_dir(struct repair *r)
{
	if (r->qfd >= 0)
		return r->qfd;
	_cleanup_close_ int home = open(r->cfg->paths.data_home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (home < 0 || (mkdirat(home, "quarantine", 0700) < 0 && errno != EEXIST))
		return -1;
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
	_cleanup_free_ char *name = xasprintf("%s-%s", stamp, r->run ? r->run : "run");
	_cleanup_close_ int q = confine_openat(home, "quarantine", O_PATH | O_DIRECTORY);
	if (q < 0 || (mkdirat(q, name, 0700) < 0 && errno != EEXIST))
		return -1;
	r->qfd = confine_openat(q, name, O_PATH | O_DIRECTORY);
	if (r->qfd >= 0)
		r->qpath = xasprintf("%s/quarantine/%s", r->cfg->paths.data_home, name);
	return r->qfd;
}

/* The quarantine's name for path: its place in the data home, '/' written as '%'. */
static char *flat_name(const struct repair *r, const char *path)
{
	const char *rel = below(r->cfg->paths.data_home, path);
	char *flat = xstrdup(rel ? rel : path + 1);
	for (char *p = flat; *p; p++)
		if (*p == '/')
			*p = '%';
	return flat;
}

/* A name from the run's files may be any bytes: kept, escaped where it is not UTF-8, never dropped. */
static json_t *lossy(const char *s)
{
	return s ? json_string_lossy(s, strlen(s)) : json_null();
}

static void note(struct repair *r, const char *path, const char *found, const char *action, const char *to)
{
	json_array_append_new(r->repaired, json_pack("{s:o,s:o,s:s,s:o}", "path", lossy(path), "found", lossy(found),
						     "action", action, "to", lossy(to)));
	log_warn("git metadata: %s %s: %s%s%s", path, found, action, to ? " to " : "", to ? to : "");
}

/* Moves dirfd/name (whatever it is) into the quarantine and returns where to (malloc'd); when it cannot be moved
 * it is removed (NULL, *action "removed" or "could not be removed"). */
static char *move_away(struct repair *r, int dirfd, const char *name, const char *path, const char **action)
{
	_cleanup_free_ char *flat = flat_name(r, path);
	int q = quarantine_dir(r);
	for (int i = 0; q >= 0 && i < 100; i++) { /* never over an earlier one: a/b and a%b flatten alike */
		_cleanup_free_ char *to = i ? xasprintf("%s.%d", flat, i) : xstrdup(flat);
		if (syscall(SYS_renameat2, dirfd, name, q, to, RENAME_NOREPLACE_) == 0) {
			*action = "quarantined";
			return xasprintf("%s/%s", r->qpath, to);
		}
		if (errno != EEXIST)
			break;
	}
	struct err e = ERR_INIT;
	*action = fs_remove_at(dirfd, name, path, &e) == 0 ? "removed" : "could not be removed";
	err_clear(&e);
	return NULL;
}

static void quarantine(struct repair *r, int dirfd, const char *name, const char *path, const char *found)
{
	const char *action;
	_cleanup_free_ char *to = move_away(r, dirfd, name, path, &action);
	note(r, path, found, action, to);
}

/* Writes text as dirfd/name (a new file renamed into place). */
static int put_file(int dirfd, const char *name, const char *text, size_t len, mode_t mode)
{
	_cleanup_free_ char *tmp = xasprintf(".%s.agor-%ld", name, (long)getpid());
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	int rc = fs_write_all(fd, text, len);
	close(fd);
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) == 0)
		return 0;
	unlinkat(dirfd, tmp, 0);
	return -1;
}

static const char *kind_of(int dirfd, const char *name)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return "missing";
	return S_ISDIR(st.st_mode)   ? "a directory"
	       : S_ISLNK(st.st_mode) ? "a symlink"
	       : S_ISREG(st.st_mode) ? "changed"
				     : "a special file";
}

/* Puts agor's text back as dirfd/name after moving away whatever was there instead. */
static void put_back(struct repair *r, int dirfd, const char *name, const char *path, const char *text, size_t len)
{
	const char *found = kind_of(dirfd, name), *action = "written";
	_cleanup_free_ char *to = strcmp(found, "missing") ? move_away(r, dirfd, name, path, &action) : NULL;
	int ok = put_file(dirfd, name, text, len, 0644) == 0;
	_cleanup_free_ char *what =
		xasprintf("%s, %s", action, ok ? "agor's version put back" : "agor's version could not be put back");
	note(r, path, found, what, to);
}

/* dirfd/name must hold exactly one of lines (one line); the first is put back otherwise. */
static void expect_line(struct repair *r, int dirfd, const char *dir, const char *name, const char *const *lines)
{
	if (holds_one_of(dirfd, name, lines))
		return;
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
	_cleanup_free_ char *text = xasprintf("%s\n", lines[0]);
	put_back(r, dirfd, name, path, text, strlen(text));
}

/* dirfd/name must not exist: whatever is there is quarantined. */
static void expect_absent(struct repair *r, int dirfd, const char *dir, const char *name, const char *found)
{
	if (!exists_at(dirfd, name))
		return;
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
	quarantine(r, dirfd, name, path, found);
}

static void repair_config(struct repair *r, const struct git_layout *l, int cfd)
{
	if (!l->config)
		return;
	_cleanup_strbuf_ struct strbuf now = STRBUF_INIT;
	if (read_small(cfd, "config", CONFIG_MAX, &now) == 0 && now.len == l->config_len &&
	    !memcmp(now.buf, l->config, now.len))
		return;
	_cleanup_free_ char *path = xasprintf("%s/config", l->common);
	put_back(r, cfd, "config", path, l->config, l->config_len);
}

/* hooks/ must be the directory it was, holding the entries it held (a new or changed hook is quarantined). */
static void repair_hooks(struct repair *r, const struct git_layout *l, int cfd)
{
	if (!l->hooks)
		return;
	_cleanup_free_ char *dir = xasprintf("%s/hooks", l->common);
	json_t *now = list_entries(cfd, "hooks");
	if (!now) { /* not a directory any more */
		quarantine(r, cfd, "hooks", dir, kind_of(cfd, "hooks"));
		mkdirat(cfd, "hooks", 0755);
		return;
	}
	_cleanup_close_ int hfd = confine_openat(cfd, "hooks", O_PATH | O_DIRECTORY);
	const char *name;
	json_t *value;
	json_object_foreach(now, name, value)
	{
		json_t *before = json_object_get(l->hooks, name);
		if (hfd >= 0 && (!before || !json_equal(before, value))) {
			_cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
			quarantine(r, hfd, name, path, before ? "changed" : "a new hook");
		}
	}
	json_decref(now);
}

static const char *special_kind(unsigned char type)
{
	switch (type) {
	case DT_LNK:
		return "a symlink";
	case DT_FIFO:
		return "a fifo";
	case DT_SOCK:
		return "a socket";
	case DT_CHR:
	case DT_BLK:
		return "a device";
	}
	return "a special file";
}

static unsigned char type_of(int dirfd, const struct dirent *de)
{
	struct stat st;
	if (de->d_type != DT_UNKNOWN || fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return de->d_type;
	return S_ISLNK(st.st_mode)    ? DT_LNK
	       : S_ISDIR(st.st_mode)  ? DT_DIR
	       : S_ISREG(st.st_mode)  ? DT_REG
	       : S_ISFIFO(st.st_mode) ? DT_FIFO
	       : S_ISSOCK(st.st_mode) ? DT_SOCK
				      : DT_CHR;
}

/* Anything below dirfd/name that is neither a regular file nor a directory (a symlink, fifo, socket, device): git
 * makes none in a repository's stores or a worktree's admin entry, and one would lead a later reader (host git,
 * agor's libgit2) elsewhere or make it hang. A directory nested deeper than MAX_DEPTH is moved away whole. */
static void quarantine_specials(struct repair *r, int parent, const char *name, const char *path, int depth,
				off_t max_size)
{
	struct fs_dir d;
	if (fs_dir_start(&d, openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	struct dirent *de;
	while ((de = fs_dir_next(&d))) {
		_cleanup_free_ char *sub = xasprintf("%s/%s", path, de->d_name);
		unsigned char type = type_of(d.fd, de);
		struct stat st;
		if (type == DT_DIR && depth > 0)
			quarantine_specials(r, d.fd, de->d_name, sub, depth - 1, max_size);
		else if (type == DT_DIR)
			quarantine(r, d.fd, de->d_name, sub, "directories nested too deep");
		else if (type != DT_REG)
			quarantine(r, d.fd, de->d_name, sub, special_kind(type));
		else if (max_size && fstatat(d.fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size > max_size)
			quarantine(r, d.fd, de->d_name, sub, "an oversized file (a ref is 41 bytes)");
	}
	fs_dir_end(&d);
}

static void repair_repository(struct repair *r, const struct git_layout *l)
{
	_cleanup_close_ int cfd = open_common(r->cfg, l);
	if (cfd < 0) {
		note(r, l->common, "unreachable without a symlink", "left alone (fix it by hand)", NULL);
		return;
	}
	expect_absent(r, cfd, l->common, "commondir", "a planted commondir");
	repair_config(r, l, cfd);
	repair_hooks(r, l, cfd);
	_cleanup_free_ char *info = xasprintf("%s/objects/info", l->common);
	_cleanup_close_ int ifd = confine_openat(cfd, "objects/info", O_PATH | O_DIRECTORY);
	if (ifd >= 0) {
		expect_absent(r, ifd, info, "alternates", "planted alternates");
		expect_absent(r, ifd, info, "http-alternates", "planted alternates");
	}
	static const struct {
		const char *name;
		off_t max_size; /* a regular file larger than this is moved away too (0: any size) */
	} stores[] = { { "refs", SMALL_FILE_MAX }, { "logs", 0 }, { "objects", 0 } };
	for (size_t i = 0; i < ARRAY_SIZE(stores); i++) {
		_cleanup_free_ char *path = xasprintf("%s/%s", l->common, stores[i].name);
		quarantine_specials(r, cfd, stores[i].name, path, MAX_DEPTH, stores[i].max_size);
	}
}

/* A path git would write outside the worktree or into a .git: absolute, empty, ".", ".." or ".git" components. */
static int index_path_unsafe(const char *path)
{
	if (!*path || *path == '/')
		return 1;
	for (const char *c = path; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && !strncmp(c, "..", 2)) ||
		    (n == 4 && !strncasecmp(c, ".git", 4)))
			return 1;
		c += n;
		if (*c == '/')
			c++;
	}
	return 0;
}

struct index_scan {
	const char *bad;     /* the first unsafe path, or NULL */
	struct strvec links; /* gitlink paths */
};

static int scan_index_entry(const char *path, unsigned mode, void *arg)
{
	struct index_scan *scan = arg;
	if (index_path_unsafe(path)) {
		scan->bad = xstrdup(path);
		return 1;
	}
	if ((mode & 0170000) == 0160000) /* a gitlink: host git enters the repository found there */
		strvec_push(&scan->links, path);
	return 0;
}

/* A nested repository where the index has a gitlink: host `git status` enters it and runs what its config says. */
static void quarantine_nested_repositories(struct repair *r, const struct git_layout *l, const struct strvec *links)
{
	for (size_t i = 0; i < links->nr; i++) {
		_cleanup_close_ int dir = confine_open(l->worktree, links->v[i], O_PATH | O_DIRECTORY);
		if (dir >= 0 && exists_at(dir, ".git")) {
			_cleanup_free_ char *path = xasprintf("%s/%s/.git", l->worktree, links->v[i]);
			quarantine(r, dir, ".git", path, "a nested repository a gitlink leads host git into");
		}
	}
}

/* Where libgit2 works on the admin entry's index (gitops.h): a copy in a private directory in /tmp (sticky and
 * root's: no one else can swap it; and any executing user may write there, unlike the data home), put back into
 * afd. /tmp's descriptor (the caller closes it), or -1. */
static int index_place(const struct git_layout *l, int afd, struct gitops_index_place *at)
{
	int fd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	*at = (struct gitops_index_place){
		.worktree = l->worktree, .admin_fd = afd, .admin = l->admin, .stage_fd = fd, .stage_dir = "/tmp"
	};
	return fd;
}

/* ---- the index agor checked last ----
 * DATA_HOME/index-checked/<SHA-256 of the admin entry's path> (0600, in a 0700 directory): the SHA-256 of the index
 * agor last put back there after checking it, that index's gitlink paths (each ended by a NUL), and a SHA-256 of
 * everything before it. The data home is in no sandbox's view. A record only ever names bytes agor checked and
 * wrote, so a missing, stale, torn or swapped record costs a full check, never a skipped one. */
#define CHECKED_DIR "index-checked"
#define CHECKED_MAX (1 << 20)

static int checked_dir(const struct config *cfg, int create)
{
	_cleanup_close_ int home = open(cfg->paths.data_home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (home < 0 || (create && mkdirat(home, CHECKED_DIR, 0700) < 0 && errno != EEXIST))
		return -1;
	return confine_openat(home, CHECKED_DIR, O_PATH | O_DIRECTORY);
}

static char *checked_name(const struct git_layout *l)
{
	char hex[CRYPTO_SHA256_HEX_LEN + 1];
	crypto_sha256_hex(l->admin, strlen(l->admin), hex);
	return xstrdup(hex);
}

/* The SHA-256 of the regular file index in afd (at most INDEX_MAX bytes); 0, or -1. */
static int sum_index(int afd, uint8_t out[CRYPTO_SHA256_LEN])
{
	_cleanup_close_ int fd = openat(afd, "index", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > INDEX_MAX)
		return -1;
	struct crypto_sha256 h;
	crypto_sha256_init(&h);
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			crypto_sha256_update(&h, buf, (size_t)n);
	crypto_sha256_final(&h, out);
	return n < 0 ? -1 : 0;
}

/* 1 when the index in afd is byte for byte the one agor last checked and put back there; links then holds its
 * gitlinks. */
static int index_is_checked(const struct repair *r, const struct git_layout *l, int afd, struct strvec *links)
{
	_cleanup_close_ int dir = checked_dir(r->cfg, 0);
	_cleanup_free_ char *name = checked_name(l);
	_cleanup_strbuf_ struct strbuf rec = STRBUF_INIT;
	uint8_t now[CRYPTO_SHA256_LEN], whole[CRYPTO_SHA256_LEN];
	if (dir < 0 || read_small(dir, name, CHECKED_MAX, &rec) < 0 || rec.len < 2 * CRYPTO_SHA256_LEN)
		return 0;
	size_t body = rec.len - CRYPTO_SHA256_LEN;
	crypto_sha256(rec.buf, body, whole);
	if (!crypto_equal(whole, rec.buf + body, CRYPTO_SHA256_LEN) ||
	    (body > CRYPTO_SHA256_LEN && rec.buf[body - 1] != '\0') || sum_index(afd, now) < 0 ||
	    !crypto_equal(now, rec.buf, CRYPTO_SHA256_LEN))
		return 0;
	for (size_t at = CRYPTO_SHA256_LEN; at < body; at += strlen(rec.buf + at) + 1)
		strvec_push(links, rec.buf + at);
	return 1;
}

/* Records sum (of the index just put back) and its gitlinks; a record that cannot be written is only a lost skip. */
static void remember_checked_index(const struct repair *r, const struct git_layout *l,
				   const uint8_t sum[CRYPTO_SHA256_LEN], const struct strvec *links)
{
	_cleanup_close_ int dir = checked_dir(r->cfg, 1);
	if (dir < 0)
		return;
	_cleanup_free_ char *name = checked_name(l);
	_cleanup_free_ char *tmp = xasprintf("%s.%ld.tmp", name, (long)getpid());
	_cleanup_strbuf_ struct strbuf rec = STRBUF_INIT;
	strbuf_add(&rec, sum, CRYPTO_SHA256_LEN);
	for (size_t i = 0; i < links->nr; i++)
		strbuf_add(&rec, links->v[i], strlen(links->v[i]) + 1);
	uint8_t whole[CRYPTO_SHA256_LEN];
	crypto_sha256(rec.buf, rec.len, whole);
	strbuf_add(&rec, whole, sizeof(whole));
	int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int ok = fd >= 0 && fs_write_all(fd, rec.buf, rec.len) == 0;
	if (fd >= 0)
		close(fd);
	if (!ok || renameat(dir, tmp, dir, name) < 0)
		unlinkat(dir, tmp, 0);
}

/* Moves the index away and rebuilds it from HEAD (reported as found); the scan then holds the rebuilt one's gitlinks.
 * 0 when the rebuilt index passed the scan and was put back (its SHA-256 in written), else -1. */
static int replace_index(struct repair *r, const struct git_layout *l, int afd, const char *found,
			 struct index_scan *scan, uint8_t written[CRYPTO_SHA256_LEN])
{
	_cleanup_free_ char *path = xasprintf("%s/index", l->admin);
	const char *action;
	_cleanup_free_ char *to = move_away(r, afd, "index", path, &action);
	struct err e = ERR_INIT;
	struct gitops_index_place at;
	_cleanup_close_ int stage_fd = index_place(l, afd, &at);
	at.written_sha256 = written;
	int rebuilt = stage_fd >= 0 && gitops_index_from_head(&at, &e) == 0;
	_cleanup_free_ char *what = xasprintf("%s, %s", action, rebuilt ? "rebuilt from HEAD" : "not rebuilt");
	note(r, path, found, what, to);
	err_clear(&e);
	strvec_clear(&scan->links);
	int rc = rebuilt ? gitops_index_rewrite(&at, scan_index_entry, scan, &e) : -1;
	if (rc != 0)
		strvec_clear(&scan->links); /* HEAD's own tree names a path outside: nothing of it is entered */
	err_clear(&e);
	return rc == 0 ? 0 : -1;
}

/* The admin entry's index, written by the run. libgit2 reads it; when every entry is safe it is written back as
 * read (what threaded git would read beyond libgit2's view, in an offset table, is gone); otherwise — refused,
 * over INDEX_MAX, or an entry git would write outside the worktree or into a .git — it is moved away and rebuilt
 * from HEAD. Then the gitlinks of the index that stays lose the nested repository they lead to. */
static void repair_index(struct repair *r, const struct git_layout *l, int afd)
{
	struct stat st;
	if (fstatat(afd, "index", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return; /* missing, or already moved away as a special file */
	struct index_scan scan = { .links = STRVEC_INIT };
	if (index_is_checked(r, l, afd, &scan.links)) { /* the very bytes checked and written back before: as safe */
		quarantine_nested_repositories(r, l, &scan.links);
		strvec_clear(&scan.links);
		return;
	}
	struct err e = ERR_INIT;
	struct gitops_index_place at;
	uint8_t written[CRYPTO_SHA256_LEN];
	_cleanup_close_ int stage_fd = index_place(l, afd, &at);
	at.written_sha256 = written;
	int rc = st.st_size > INDEX_MAX || stage_fd < 0 ? -1 : gitops_index_rewrite(&at, scan_index_entry, &scan, &e);
	if (rc != 0) {
		_cleanup_free_ char *found = st.st_size > INDEX_MAX
						     ? xasprintf("an index of %lld bytes", (long long)st.st_size)
					     : rc < 0 ? xasprintf("an index libgit2 refuses (%s)", e.message)
						      : xasprintf("an index entry outside the worktree (%s)", scan.bad);
		rc = replace_index(r, l, afd, found, &scan, written);
	}
	if (rc == 0)
		remember_checked_index(r, l, written, &scan.links);
	quarantine_nested_repositories(r, l, &scan.links);
	err_clear(&e);
	free((char *)scan.bad);
	strvec_clear(&scan.links);
}

/* State git keeps per worktree that a later git command acts on as instructions: submodule repositories (host
 * `git submodule update` runs their hooks and config), rebase and sequencer todo lists (`exec` lines run on
 * `--continue`). agor makes none of them; a run that left one is not trusted to. */
static const char *const admin_instructions[] = { "modules", "rebase-merge", "rebase-apply", "sequencer" };

/* HEAD as it was before the run when it is no longer a small regular file (a sparse 2 GiB HEAD made libgit2 read
 * it whole). */
static void repair_head(struct repair *r, const struct git_layout *l, int afd)
{
	struct stat st;
	if (!l->head || (fstatat(afd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
			 st.st_size <= SMALL_FILE_MAX))
		return;
	_cleanup_free_ char *path = xasprintf("%s/HEAD", l->admin);
	put_back(r, afd, "HEAD", path, l->head, strlen(l->head));
}

static void repair_admin_entry(struct repair *r, const struct git_layout *l, int cfd, int afd)
{
	_cleanup_free_ char *entry = xstrdup(l->admin + strlen(l->common) + 1);
	_cleanup_close_ int wtrees = confine_openat(cfd, "worktrees", O_PATH | O_DIRECTORY);
	if (wtrees >= 0) /* the admin entry holds regular files and directories only */
		quarantine_specials(r, wtrees, strrchr(entry, '/') + 1, l->admin, MAX_DEPTH, 0);
	for (size_t i = 0; i < ARRAY_SIZE(admin_instructions); i++)
		expect_absent(r, afd, l->admin, admin_instructions[i], "state a later git command would act on");
	repair_head(r, l, afd);
	repair_index(r, l, afd);
}

/* The worktree's side: its .git file and the admin entry's gitdir, commondir and config.worktree. */
static void repair_worktree(struct repair *r, const struct git_layout *l, int afd)
{
	_cleanup_close_ int wfd = confine_open(r->cfg->paths.worktrees_dir,
					       below(r->cfg->paths.worktrees_dir, l->worktree), O_PATH | O_DIRECTORY);
	_cleanup_free_ char *gitfile = xasprintf("gitdir: %s", l->admin);
	_cleanup_free_ char *slashed = xasprintf("gitdir: %s/", l->admin);
	_cleanup_free_ char *back = xasprintf("%s/.git", l->worktree);
	if (wfd >= 0)
		expect_line(r, wfd, l->worktree, ".git", (const char *const[]){ gitfile, slashed, NULL });
	char *forms[4];
	commondir_forms(l->common, forms);
	expect_line(r, afd, l->admin, "gitdir", (const char *const[]){ back, NULL });
	expect_line(r, afd, l->admin, "commondir", (const char *const *)forms);
	free_forms(forms);
	expect_absent(r, afd, l->admin, "config.worktree", "a planted per-worktree config");
}

/* In an order that never has libgit2 read what was not checked yet: the plain files first, the stores' special
 * and oversized files next, then the admin entry, its HEAD and last its index (rebuilding it reads HEAD and refs). */
json_t *git_layout_repair(const struct config *cfg, const struct git_layout *l, const char *run)
{
	if (!l->common)
		return NULL;
	struct repair r = { .cfg = cfg, .run = run, .qfd = -1, .repaired = json_array() };
	_cleanup_close_ int cfd = open_common(cfg, l);
	_cleanup_close_ int afd =
		cfd < 0 ? -1 : confine_openat(cfd, l->admin + strlen(l->common) + 1, O_PATH | O_DIRECTORY);
	if (afd < 0) {
		note(&r, l->admin, "unreachable without a symlink", "left alone (fix it by hand)", NULL);
	} else {
		repair_worktree(&r, l, afd);
		repair_repository(&r, l);
		repair_admin_entry(&r, l, cfd, afd);
	}
	if (r.qfd >= 0)
		close(r.qfd);
	free(r.qpath);
	return json_pack("{s:b,s:o}", "checked", 1, "repaired", r.repaired);
}

void git_layout_release(struct git_layout *l)
{
	free(l->worktree);
	free(l->common);
	free(l->admin);
	free(l->config);
	free(l->head);
	json_decref(l->hooks);
	memset(l, 0, sizeof(*l));
}
