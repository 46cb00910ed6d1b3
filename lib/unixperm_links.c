/* unixperm_links.c — owner links in ~/agor/worktrees (unixperm_links.h), made and removed as the user.
 * Never acts as root in a directory the user controls. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unixperm.h"
#include "unixperm_account.h"
#include "unixperm_links.h"
#include "banned.h"

/* ---- owner links (these functions run in the child, as the user) -------------------------------
 */

struct link_job {
	const char *home;
	const char *name;	    /* link_add */
	const char *target;	    /* link_add */
	bool dry_run;		    /* link_add: only tell whether it would change */
	const char *suffix;	    /* links_find */
	gid_t gid;		    /* links_find */
	const struct strvec *names; /* links_remove */
};

/* Opens <home>/agor/worktrees (creating it when create); *fd = -1 when absent and !create. */
static int open_links_dir(const char *home, bool create, int *fd, struct err *e)
{
	*fd = -1;
	int h = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (h < 0)
		return errno == ENOENT && !create ? 0 : err_errno(e, errno, "open home directory %s", home);
	static const char *const parts[] = { "agor", "worktrees" };
	int cur = h;
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		if (create && mkdirat(cur, parts[i], 0755) < 0 && errno != EEXIST) {
			int saved = errno;
			close(cur);
			return err_errno(e, saved, "mkdir %s/…/%s", home, parts[i]);
		}
		int flags = i + 1 < ARRAY_SIZE(parts) ? O_PATH | O_DIRECTORY : O_RDONLY | O_DIRECTORY;
		int next = openat(cur, parts[i], flags | O_CLOEXEC);
		int saved = errno;
		close(cur);
		if (next < 0)
			return saved == ENOENT && !create ? 0 : err_errno(e, saved, "open %s/…/%s", home, parts[i]);
		cur = next;
	}
	*fd = cur;
	return 0;
}

static int link_add_as_user(void *arg, struct strbuf *out, struct err *e)
{
	const struct link_job *job = arg;
	int fd;
	if (open_links_dir(job->home, !job->dry_run, &fd, e) < 0)
		return -1;
	if (fd < 0) { /* dry run: the directory does not exist yet */
		strbuf_addstr(out, "changed");
		return 0;
	}
	char buf[PATH_MAX];
	ssize_t n = readlinkat(fd, job->name, buf, sizeof(buf) - 1);
	if (n >= 0 && (size_t)n == strlen(job->target) && !memcmp(buf, job->target, (size_t)n)) {
		close(fd);
		strbuf_addstr(out, "unchanged");
		return 0;
	}
	if (job->dry_run) {
		close(fd);
		strbuf_addstr(out, "changed");
		return 0;
	}
	char *tmp = xasprintf(".%s.agor-tmp", job->name);
	int rc = 0;
	(void)unlinkat(fd, tmp, 0);
	if (symlinkat(job->target, fd, tmp) < 0)
		rc = err_errno(e, errno, "symlink %s", job->name);
	else if (renameat(fd, tmp, fd, job->name) < 0) {
		rc = err_errno(e, errno, "replace %s/agor/worktrees/%s (it exists and is not a symlink?)", job->home,
			       job->name);
		(void)unlinkat(fd, tmp, 0);
	} else
		strbuf_addstr(out, "changed");
	free(tmp);
	close(fd);
	return rc;
}

static bool ends_with_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	return n > s + 1 && name[n - s - 1] == '-' && !strcmp(name + n - s, suffix);
}

static bool link_points_at_group(int fd, const char *name, gid_t gid)
{
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
		return false;
	if (fstatat(fd, name, &st, 0) < 0)
		return errno == ENOENT; /* dangling: the worktree is gone */
	return S_ISDIR(st.st_mode) && st.st_gid == gid;
}

static int links_find_as_user(void *arg, struct strbuf *out, struct err *e)
{
	const struct link_job *job = arg;
	int fd;
	if (open_links_dir(job->home, false, &fd, e) < 0)
		return -1;
	if (fd < 0)
		return 0;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_errno(e, errno, "read %s/agor/worktrees", job->home);
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (ends_with_suffix(de->d_name, job->suffix) && link_points_at_group(dirfd(d), de->d_name, job->gid)) {
			strbuf_addstr(out, de->d_name);
			strbuf_addch(out, '\0');
		}
	closedir(d);
	return 0;
}

static int links_remove_as_user(void *arg, struct strbuf *out, struct err *e)
{
	const struct link_job *job = arg;
	(void)out;
	int fd;
	if (open_links_dir(job->home, false, &fd, e) < 0)
		return -1;
	if (fd < 0)
		return 0;
	int rc = 0;
	for (size_t i = 0; i < job->names->nr && rc == 0; i++) {
		struct stat st;
		const char *name = job->names->v[i];
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
			continue;
		if (unlinkat(fd, name, 0) < 0 && errno != ENOENT)
			rc = err_errno(e, errno, "remove %s/agor/worktrees/%s", job->home, name);
	}
	close(fd);
	return rc;
}

int unixperm_link_add(const struct unixperm_user *u, const char *link_name, const char *target, bool dry_run,
		      struct err *e)
{
	if (unixperm_check_link_name("link name", link_name, e) < 0 ||
	    unixperm_check_clean_path("link target", target, e) < 0)
		return -1;
	struct link_job job = { .home = u->home, .name = link_name, .target = target, .dry_run = dry_run };
	struct strbuf out = STRBUF_INIT;
	int rc = unixperm_run_as_user(u, link_add_as_user, &job, &out, e);
	if (rc == 0)
		rc = !strcmp(out.buf, "changed");
	strbuf_release(&out);
	return rc;
}

int unixperm_links_find(const struct unixperm_user *u, const char *suffix, gid_t gid, struct strvec *found,
			struct err *e)
{
	struct link_job job = { .home = u->home, .suffix = suffix, .gid = gid };
	struct strbuf out = STRBUF_INIT;
	int rc = unixperm_run_as_user(u, links_find_as_user, &job, &out, e);
	for (size_t off = 0; rc == 0 && off < out.len; off += strlen(out.buf + off) + 1)
		strvec_push(found, out.buf + off);
	strbuf_release(&out);
	return rc;
}

int unixperm_links_remove(const struct unixperm_user *u, const struct strvec *names, struct err *e)
{
	if (!names->nr)
		return 0;
	struct link_job job = { .home = u->home, .names = names };
	return unixperm_run_as_user(u, links_remove_as_user, &job, NULL, e);
}

char *unixperm_links_dir(const struct unixperm_user *u)
{
	return xasprintf("%s/agor/worktrees", u->home);
}
