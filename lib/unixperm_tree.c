/* unixperm_tree.c — the recursive permission change (unixperm_tree.h).
 * Never follows a symlink when changing an inode; never crosses a filesystem or touches a hard-linked file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fsutil.h"
#include "unixperm.h"
#include "unixperm_acl.h"
#include "unixperm_tree.h"
#include "banned.h"

#define XATTR_ACL_ACCESS  "system.posix_acl_access"
#define XATTR_ACL_DEFAULT "system.posix_acl_default"

/* ---- recursive permission change ------------------------------------------------------------ */

struct tree_walk {
	const struct unixperm_tree_spec *spec;
	struct unixperm_tree_stats *stats;
	dev_t dev;
	struct strbuf path; /* relative path of the current entry, for messages */
	struct err *e;
};

static int walk_fail(struct tree_walk *w, int errnum, const char *what)
{
	return err_errno(w->e, errnum, "%s %s", what, w->path.len ? w->path.buf : ".");
}

/* The mask entry's permissions, or 7 when there is none. */
static unsigned acl_mask(const struct unixperm_acl_entry *ent, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ent[i].tag == UNIXPERM_ACL_MASK)
			return ent[i].perm;
	return 7;
}

/* Same entries granting the same effective permissions: an inherited "g:G:rwx, m::rw-" equals
 * the wanted "g:G:rw-, m::rw-", so a second run does not rewrite what files inherited. */
static bool acl_equivalent(const struct unixperm_acl_entry *a, size_t na, const struct unixperm_acl_entry *b, size_t nb)
{
	if (na != nb || acl_mask(a, na) != acl_mask(b, nb))
		return false;
	unsigned mask = acl_mask(a, na);
	for (size_t i = 0; i < na; i++) {
		bool masked = a[i].tag == UNIXPERM_ACL_GROUP_OBJ || a[i].tag == UNIXPERM_ACL_GROUP ||
			      a[i].tag == UNIXPERM_ACL_USER;
		unsigned pa = masked ? a[i].perm & mask : a[i].perm, pb = masked ? b[i].perm & mask : b[i].perm;
		if (a[i].tag != b[i].tag || a[i].id != b[i].id || pa != pb)
			return false;
	}
	return true;
}

static bool xattr_equals(int fd, const char *name, const struct unixperm_acl_entry *want, size_t nwant)
{
	unsigned char buf[4 + 8 * UNIXPERM_ACL_MAX_ENTRIES];
	struct unixperm_acl_entry have[UNIXPERM_ACL_MAX_ENTRIES];
	size_t nhave;
	ssize_t n = fgetxattr(fd, name, buf, sizeof(buf));
	return n > 0 && unixperm_acl_decode(buf, (size_t)n, have, UNIXPERM_ACL_MAX_ENTRIES, &nhave) == 0 &&
	       acl_equivalent(have, nhave, want, nwant);
}

static int set_acl_if_needed(struct tree_walk *w, int fd, const char *xname, mode_t mode, bool *changed)
{
	struct unixperm_acl_entry ent[5];
	size_t n = unixperm_acl_for_mode(mode, w->spec->gid, ent);
	struct strbuf want = STRBUF_INIT;
	unixperm_acl_encode(ent, n, &want);
	int rc = 0;
	if (!xattr_equals(fd, xname, ent, n)) {
		*changed = true;
		if (!w->spec->dry_run && fsetxattr(fd, xname, want.buf, want.len, 0) < 0) {
			if (errno == ENOTSUP || errno == EOPNOTSUPP)
				rc = err_set(w->e, E_SYSTEM, "the filesystem of %s does not support POSIX ACLs",
					     w->path.len ? w->path.buf : ".");
			else
				rc = walk_fail(w, errno, "set ACL on");
		}
	}
	strbuf_release(&want);
	return rc;
}

/* Group, ACLs, then mode of one inode, each only when it differs. */
static int apply_inode(struct tree_walk *w, int fd, const struct stat *st, bool is_dir)
{
	mode_t want = is_dir ? unixperm_dir_mode(w->spec->others) : unixperm_file_mode(st->st_mode, w->spec->others);
	bool changed = false, dry = w->spec->dry_run;
	if (st->st_gid != w->spec->gid) {
		changed = true;
		if (!dry && fchown(fd, (uid_t)-1, w->spec->gid) < 0)
			return walk_fail(w, errno, "chgrp");
	}
	if (set_acl_if_needed(w, fd, XATTR_ACL_ACCESS, want, &changed) < 0)
		return -1;
	if (is_dir && set_acl_if_needed(w, fd, XATTR_ACL_DEFAULT, want, &changed) < 0)
		return -1;
	struct stat now = *st;
	if (!dry && fstat(fd, &now) < 0)
		return walk_fail(w, errno, "stat");
	if ((now.st_mode & 07777) != want) {
		changed = true;
		if (!dry && fchmod(fd, want) < 0)
			return walk_fail(w, errno, "chmod");
	}
	if (changed)
		w->stats->changed++;
	return 0;
}

static int walk_dir(struct tree_walk *w, int fd, int depth);

static bool raced_away(int errnum)
{
	return errnum == ENOENT || errnum == ELOOP || errnum == ENOTDIR || errnum == ENXIO;
}

/* name below parentfd opened with flags (no symlink followed) and stat'ed: the descriptor; or -1 with *rc the walk's
 * answer: 0 when it went away or became a link meanwhile (counted with the symlinks), -1 on a failure. */
static int open_entry(struct tree_walk *w, int parentfd, const char *name, int flags, struct stat *st, int *rc)
{
	int fd = openat(parentfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (raced_away(errno)) {
			w->stats->skipped_symlinks++;
			*rc = 0;
		} else {
			*rc = walk_fail(w, errno, "open");
		}
		return -1;
	}
	if (fstat(fd, st) < 0) {
		int saved = errno;
		close(fd);
		*rc = walk_fail(w, saved, "stat");
		return -1;
	}
	return fd;
}

static int enter_dir(struct tree_walk *w, int parentfd, const char *name, int depth)
{
	if (depth >= UNIXPERM_MAX_DEPTH)
		return err_set(w->e, E_INVALID_PAYLOAD, "directory tree deeper than %d levels at %s",
			       UNIXPERM_MAX_DEPTH, w->path.buf);
	struct stat st;
	int rc, fd = open_entry(w, parentfd, name, O_RDONLY | O_DIRECTORY, &st, &rc);
	if (fd < 0)
		return rc;
	if (st.st_dev != w->dev) { /* a mount point */
		close(fd);
		w->stats->skipped_other_fs++;
		return 0;
	}
	w->stats->dirs++;
	if (apply_inode(w, fd, &st, true) < 0) {
		close(fd);
		return -1;
	}
	return walk_dir(w, fd, depth + 1);
}

static int change_file(struct tree_walk *w, int parentfd, const char *name)
{
	struct stat st;
	int rc, fd = open_entry(w, parentfd, name, O_RDONLY | O_NOCTTY, &st, &rc);
	if (fd < 0)
		return rc;
	rc = 0;
	if (!S_ISREG(st.st_mode))
		w->stats->skipped_special++;
	else if (st.st_dev != w->dev)
		w->stats->skipped_other_fs++;
	else if (st.st_nlink > 1)
		w->stats->skipped_hardlinked++;
	else {
		w->stats->files++;
		rc = apply_inode(w, fd, &st, false);
	}
	close(fd);
	return rc;
}

static int walk_entry(struct tree_walk *w, int parentfd, const char *name, int depth)
{
	struct stat st;
	if (fstatat(parentfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : walk_fail(w, errno, "stat");
	if (S_ISLNK(st.st_mode)) {
		w->stats->skipped_symlinks++;
		return 0;
	}
	if (st.st_dev != w->dev) {
		w->stats->skipped_other_fs++;
		return 0;
	}
	if (S_ISDIR(st.st_mode))
		return enter_dir(w, parentfd, name, depth);
	if (S_ISREG(st.st_mode))
		return change_file(w, parentfd, name);
	w->stats->skipped_special++;
	return 0;
}

/* Walks the directory dirfd (consumed: closed before returning). */
static int walk_dir(struct tree_walk *w, int fd, int depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		int saved = errno;
		close(fd);
		return walk_fail(w, saved, "read directory");
	}
	size_t base = w->path.len;
	int rc = 0;
	struct dirent *de;
	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		strbuf_setlen(&w->path, base);
		if (base)
			strbuf_addch(&w->path, '/');
		strbuf_addstr(&w->path, de->d_name);
		if ((rc = walk_entry(w, fd, de->d_name, depth)) < 0)
			break;
	}
	if (rc == 0 && errno)
		rc = walk_fail(w, errno, "read directory");
	strbuf_setlen(&w->path, base);
	closedir(d);
	return rc;
}

int unixperm_apply_tree(int dirfd, const struct unixperm_tree_spec *spec, struct unixperm_tree_stats *stats,
			struct err *e)
{
	struct tree_walk w = { spec, stats, 0, STRBUF_INIT, e };
	memset(stats, 0, sizeof(*stats));
	struct stat st;
	if (fstat(dirfd, &st) < 0)
		return err_errno(e, errno, "stat tree top");
	if (!S_ISDIR(st.st_mode))
		return err_set(e, E_INVALID_PAYLOAD, "tree top is not a directory");
	w.dev = st.st_dev;
	int top = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own offset for readdir */
	if (top < 0)
		return err_errno(e, errno, "open tree top");
	stats->dirs++;
	int rc = apply_inode(&w, top, &st, true);
	if (rc < 0)
		close(top);
	else
		rc = walk_dir(&w, top, 1);
	strbuf_release(&w.path);
	return rc;
}
