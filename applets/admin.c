/* admin.c — `agor admin`, the only root code (docs/admin.md): a fixed table of validated subcommands.
 * Never trusts its caller: paths confined by admin.yaml, agor users only, no shell, ever. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adminconf.h"
#include "adminops.h"
#include "admin_serve.h"
#include "applet.h"
#include "client.h"
#include "cgroup.h"
#include "json.h"
#include "unixperm.h"
#include "unixperm_acl.h"
#include "unixperm_account.h"
#include "unixperm_links.h"
#include "unixperm_tree.h"
#include "banned.h"

struct admin {
	struct admin_call call; /* the operation and its arguments, as adminops_parse read them */

	struct adminconf conf;
	struct strvec actions; /* what was done (or, dry run, would be done), one line each */
	bool changed;	       /* something was (would be) changed */
	struct strvec notes;   /* comment lines for humans (tree summaries) */
	json_t *data;	       /* the result object's data */
	struct err e;
};

/* ---- small helpers ------------------------------------------------------------------------------
 */

static void add_action(struct admin *a, const char *fmt, va_list ap)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_vaddf(&sb, fmt, ap);
	strvec_push_nodup(&a->actions, strbuf_detach(&sb, NULL));
}

/* Records an action that changes something. */
static void PRINTF_LIKE(2, 3) act(struct admin *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_action(a, fmt, ap);
	va_end(ap);
	a->changed = true;
}

/* Records an action that is always applied, changing something only where it differs. */
static void PRINTF_LIKE(2, 3) describe(struct admin *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_action(a, fmt, ap);
	va_end(ap);
}

static void set_str(struct admin *a, const char *key, const char *value)
{
	json_object_set_new(a->data, key, value ? json_string(value) : json_null());
}

static int load_conf(struct admin *a)
{
	if (a->conf.path)
		return 0;
	return adminconf_load(a->call.root_config, &a->conf, &a->e);
}

/* The directory path, confined below root; the descriptor is O_RDONLY|O_DIRECTORY. */
static int open_confined(struct admin *a, const char *root, const char *path)
{
	int rootfd = unixperm_open_root(root, &a->e);
	if (rootfd < 0) {
		err_prefix(&a->e, "%s", a->conf.path);
		return -1;
	}
	int fd = unixperm_open_beneath(rootfd, root, path, &a->e);
	close(rootfd);
	return fd;
}

static const char *id8(const char *id, char out[9])
{
	size_t n = strlen(id) < 8 ? strlen(id) : 8;
	memcpy(out, id, n);
	out[n] = '\0';
	return out;
}

/* A path argument: anything but a clean absolute path is refused as an escape attempt. */
static int check_path(struct admin *a, const char *what, const char *path)
{
	if (unixperm_path_is_clean(path))
		return 0;
	if (unixperm_check_clean_path(what, path, &a->e) < 0) {
		a->e.code = E_PATH_OUTSIDE_DATA_HOME;
		err_prefix(&a->e, "refused");
	}
	return -1;
}

static int check_others(struct admin *a, const char *value, enum unixperm_access *out)
{
	if (unixperm_access_parse(value, out) < 0)
		return err_set(&a->e, E_INVALID_PAYLOAD, "access must be none, read or write");
	return 0;
}

/* Refuses a worktree directory that already belongs to another worktree's group. */
static int check_not_foreign_group(struct admin *a, int fd, const char *path, const char *group)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(&a->e, errno, "stat %s", path);
	struct group *gr = getgrgid(st.st_gid);
	if (gr && unixperm_managed_group_valid(gr->gr_name) && strcmp(gr->gr_name, group))
		return err_set(&a->e, E_PERMISSION_DENIED, "%s belongs to group %s, not to this worktree's %s", path,
			       gr->gr_name, group);
	return 0;
}

static void add_tree_stats(struct admin *a, const struct unixperm_tree_stats *s)
{
	json_object_set_new(a->data, "tree",
			    json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "dirs", (json_int_t)s->dirs, "files",
				      (json_int_t)s->files, "changed", (json_int_t)s->changed, "skippedSymlinks",
				      (json_int_t)s->skipped_symlinks, "skippedSpecial", (json_int_t)s->skipped_special,
				      "skippedHardlinked", (json_int_t)s->skipped_hardlinked, "skippedOtherFilesystems",
				      (json_int_t)s->skipped_other_fs));
}

static void describe_tree(struct admin *a, const char *path, const char *group, enum unixperm_access others)
{
	mode_t dmode = unixperm_dir_mode(others);
	struct unixperm_acl_entry ent[5];
	struct strbuf acl = STRBUF_INIT;
	unixperm_acl_describe(ent, unixperm_acl_for_mode(dmode, 0, ent), group, &acl);
	static const char *const file_others[] = { "o=", "o=r", "o=rw" };
	describe(a, "chgrp -R %s %s", group, path);
	describe(a,
		 "chmod -R %04o %s  # directories; files: g=rw,%s (+x where executable), "
		 "setuid/setgid cleared",
		 (unsigned)dmode, path, file_others[others]);
	describe(a,
		 "setfacl-equivalent -R --set %s --set-default %s %s  # files: the same without x "
		 "unless executable",
		 acl.buf, acl.buf, path);
	strbuf_release(&acl);
}

/* The recursive change of docs/admin.md (or, dry run, its count). have_gid is false in a dry run
 * whose group does not exist yet: then only the description is given. */
static int apply_tree(struct admin *a, int fd, const char *path, const char *group, gid_t gid, bool have_gid,
		      enum unixperm_access others)
{
	describe_tree(a, path, group, others);
	if (!have_gid)
		return 0;
	struct unixperm_tree_spec spec = { gid, others, a->call.dry_run };
	struct unixperm_tree_stats stats;
	if (unixperm_apply_tree(fd, &spec, &stats, &a->e) < 0)
		return -1;
	add_tree_stats(a, &stats);
	a->changed |= stats.changed > 0;
	struct strbuf note = STRBUF_INIT;
	strbuf_addf(&note,
		    "# %s: %lu directories, %lu files, %lu %s; skipped %lu symlinks, %lu "
		    "hard-linked, %lu special, %lu on other filesystems",
		    path, stats.dirs, stats.files, stats.changed, a->call.dry_run ? "would change" : "changed",
		    stats.skipped_symlinks, stats.skipped_hardlinked, stats.skipped_special, stats.skipped_other_fs);
	strvec_push_nodup(&a->notes, strbuf_detach(&note, NULL));
	return 0;
}

/* groupadd when missing; fills *gid (have_gid false only in a dry run that would create it). */
static int ensure_group(struct admin *a, const char *group, gid_t *gid, bool *have_gid)
{
	*have_gid = unixperm_group_lookup(group, gid);
	if (*have_gid)
		return 0;
	act(a, "groupadd %s", group);
	if (a->call.dry_run)
		return 0;
	if (unixperm_groupadd(group, false, &a->e) < 0)
		return -1;
	if (!unixperm_group_lookup(group, gid))
		return err_set(&a->e, E_SYSTEM, "groupadd %s succeeded but the group is not there", group);
	*have_gid = true;
	return 0;
}

static int require_group(struct admin *a, const char *group, const char *id, gid_t *gid)
{
	if (unixperm_group_lookup(group, gid))
		return 0;
	return err_set(&a->e, E_NOT_FOUND,
		       "group %s of worktree %s does not exist (fix: agor admin "
		       "create-worktree-group %s PATH)",
		       group, id, id);
}

/* ---- worktree groups
 * ------------------------------------------------------------------------------ */

static int set_worktree_tree(struct admin *a, const char *id, const char *path, enum unixperm_access others,
			     bool create)
{
	char group[UNIXPERM_GROUP_NAME_SIZE];
	unixperm_group_name(UNIXPERM_WORKTREE_PREFIX, id, group);
	set_str(a, "worktreeId", id);
	set_str(a, "group", group);
	set_str(a, "path", path);
	set_str(a, "others", unixperm_access_name(others));
	if (load_conf(a) < 0)
		return -1;
	int fd = open_confined(a, a->conf.worktrees_dir, path);
	if (fd < 0)
		return -1;
	gid_t gid = 0;
	bool have_gid = false;
	int rc = create ? 0 : require_group(a, group, id, &gid);
	have_gid = !create;
	if (rc == 0)
		rc = check_not_foreign_group(a, fd, path, group);
	if (rc == 0 && create)
		rc = ensure_group(a, group, &gid, &have_gid);
	if (rc == 0)
		rc = apply_tree(a, fd, path, group, gid, have_gid, others);
	close(fd);
	return rc;
}

static int cmd_create_worktree_group(struct admin *a)
{
	const char *id = a->call.pos[0], *path = a->call.pos[1];
	enum unixperm_access others = UNIXPERM_READ;
	if (unixperm_check_id("worktree-id", id, &a->e) < 0 || check_path(a, "worktree-path", path) < 0 ||
	    (a->call.others && check_others(a, a->call.others, &others) < 0))
		return -1;
	return set_worktree_tree(a, id, path, others, true);
}

static int cmd_set_worktree_permissions(struct admin *a)
{
	const char *id = a->call.pos[0], *path = a->call.pos[1];
	enum unixperm_access others;
	if (unixperm_check_id("worktree-id", id, &a->e) < 0 || check_path(a, "worktree-path", path) < 0 ||
	    check_others(a, a->call.pos[2], &others) < 0)
		return -1;
	return set_worktree_tree(a, id, path, others, false);
}

/* Finds a member's owner links of this worktree and removes them (as the member). */
static int remove_owner_links(struct admin *a, const struct unixperm_user *u, const char *id, gid_t gid)
{
	char short_id[9];
	struct strvec found = STRVEC_INIT;
	int rc = unixperm_links_find(u, id8(id, short_id), gid, &found, &a->e);
	char *dir = unixperm_links_dir(u);
	for (size_t i = 0; rc == 0 && i < found.nr; i++)
		act(a, "rm %s/%s  # as %s", dir, found.v[i], u->name);
	if (rc == 0 && !a->call.dry_run)
		rc = unixperm_links_remove(u, &found, &a->e);
	free(dir);
	strvec_clear(&found);
	return rc;
}

static int cmd_delete_worktree_group(struct admin *a)
{
	const char *id = a->call.pos[0];
	if (unixperm_check_id("worktree-id", id, &a->e) < 0)
		return -1;
	char group[UNIXPERM_GROUP_NAME_SIZE];
	unixperm_group_name(UNIXPERM_WORKTREE_PREFIX, id, group);
	set_str(a, "worktreeId", id);
	set_str(a, "group", group);
	gid_t gid;
	if (!unixperm_group_lookup(group, &gid))
		return 0;
	struct strvec members = STRVEC_INIT;
	unixperm_group_members(group, &members);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < members.nr; i++) {
		struct unixperm_user u;
		if (!unixperm_user_name_valid(members.v[i]) || unixperm_user_lookup(members.v[i], &u, &a->e) != 1)
			continue;
		if (u.uid != 0)
			rc = remove_owner_links(a, &u, id, gid);
		unixperm_user_release(&u);
	}
	strvec_clear(&members);
	if (rc < 0)
		return -1;
	act(a, "groupdel %s", group);
	return a->call.dry_run ? 0 : unixperm_groupdel(group, &a->e);
}

/* The link name: --link-name, else the worktree directory's own name. */
static int owner_link_name(struct admin *a, const char *path, const char *id, char **out)
{
	const char *name = a->call.link_name ? a->call.link_name : strrchr(path, '/') + 1;
	if (unixperm_check_link_name(a->call.link_name ? "--link-name" : "worktree directory name (use --link-name)",
				     name, &a->e) < 0)
		return -1;
	char short_id[9];
	*out = xasprintf("%s-%s", name, id8(id, short_id));
	return 0;
}

static int check_worktree_owned_by_group(struct admin *a, int fd, const char *path, const char *group, gid_t gid)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(&a->e, errno, "stat %s", path);
	if (st.st_gid != gid)
		return err_set(&a->e, E_PERMISSION_DENIED,
			       "%s is not this worktree's directory (its group is not %s; fix: "
			       "agor admin create-worktree-group)",
			       path, group);
	return 0;
}

static int add_owner(struct admin *a, const struct unixperm_user *u, const char *group, const char *path,
		     const char *link)
{
	if (!unixperm_user_in_group(u, group)) {
		act(a, "gpasswd -a %s %s", u->name, group);
		if (!a->call.dry_run && unixperm_group_add_member(group, u->name, &a->e) < 0)
			return -1;
	}
	int changed = unixperm_link_add(u, link, path, true, &a->e);
	if (changed < 0)
		return -1;
	if (!changed)
		return 0;
	char *dir = unixperm_links_dir(u);
	act(a, "ln -sfn %s %s/%s  # as %s", path, dir, link, u->name);
	free(dir);
	return a->call.dry_run ? 0 : (unixperm_link_add(u, link, path, false, &a->e) < 0 ? -1 : 0);
}

static int cmd_add_worktree_owner(struct admin *a)
{
	const char *id = a->call.pos[0], *user = a->call.pos[1], *path = a->call.pos[2];
	char *link = NULL;
	if (unixperm_check_id("worktree-id", id, &a->e) < 0 || unixperm_check_user_name("unix-user", user, &a->e) < 0 ||
	    check_path(a, "worktree-path", path) < 0 || owner_link_name(a, path, id, &link) < 0)
		return -1;
	char group[UNIXPERM_GROUP_NAME_SIZE];
	unixperm_group_name(UNIXPERM_WORKTREE_PREFIX, id, group);
	set_str(a, "worktreeId", id);
	set_str(a, "group", group);
	set_str(a, "user", user);
	set_str(a, "path", path);
	set_str(a, "link", link);
	struct unixperm_user u = { 0 };
	gid_t gid;
	int fd = -1, rc = -1;
	if (load_conf(a) < 0 || unixperm_require_agor_user(user, &u, &a->e) < 0)
		goto out;
	if ((fd = open_confined(a, a->conf.worktrees_dir, path)) < 0 || require_group(a, group, id, &gid) < 0 ||
	    check_worktree_owned_by_group(a, fd, path, group, gid) < 0)
		goto out;
	rc = add_owner(a, &u, group, path, link);
out:
	if (fd >= 0)
		close(fd);
	unixperm_user_release(&u);
	free(link);
	return rc;
}

static int cmd_remove_worktree_owner(struct admin *a)
{
	const char *id = a->call.pos[0], *user = a->call.pos[1];
	if (unixperm_check_id("worktree-id", id, &a->e) < 0 || unixperm_check_user_name("unix-user", user, &a->e) < 0)
		return -1;
	char group[UNIXPERM_GROUP_NAME_SIZE];
	unixperm_group_name(UNIXPERM_WORKTREE_PREFIX, id, group);
	set_str(a, "worktreeId", id);
	set_str(a, "group", group);
	set_str(a, "user", user);
	struct unixperm_user u;
	if (unixperm_require_agor_user(user, &u, &a->e) < 0)
		return -1;
	gid_t gid;
	int rc = 0;
	if (unixperm_group_lookup(group, &gid)) {
		rc = remove_owner_links(a, &u, id, gid);
		if (rc == 0 && unixperm_user_in_group(&u, group)) {
			act(a, "gpasswd -d %s %s", user, group);
			if (!a->call.dry_run)
				rc = unixperm_group_remove_member(group, user, &a->e);
		}
	}
	unixperm_user_release(&u);
	return rc;
}

/* ---- repositories -------------------------------------------------------------------------------
 */

/* Reads a small file below dirfd, following no symlink; NULL when absent or unreadable. */
static char *read_small_file_at(int dirfd, const char *const *parts, size_t nparts)
{
	int cur = dirfd;
	for (size_t i = 0; i < nparts; i++) {
		int flags = i + 1 < nparts ? O_PATH | O_DIRECTORY : O_RDONLY | O_NONBLOCK;
		int next = openat(cur, parts[i], flags | O_NOFOLLOW | O_CLOEXEC);
		if (cur != dirfd)
			close(cur);
		if (next < 0)
			return NULL;
		cur = next;
	}
	struct stat st;
	struct strbuf sb = STRBUF_INIT;
	if (fstat(cur, &st) < 0 || !S_ISREG(st.st_mode) || strbuf_read_fd(&sb, cur, 4096) < 0) {
		close(cur);
		strbuf_release(&sb);
		return NULL;
	}
	close(cur);
	return strbuf_detach(&sb, NULL);
}

/* The worktree directory a linked worktree's gitdir file names ("/wt/x/.git" → "/wt/x"). */
static char *worktree_from_gitdir(char *text)
{
	char *nl = strchr(text, '\n');
	if (nl)
		*nl = '\0';
	size_t n = strlen(text);
	if (n < 6 || strcmp(text + n - 5, "/.git"))
		return NULL;
	text[n - 5] = '\0';
	return unixperm_path_is_clean(text) ? text : NULL;
}

/* Adds the agor users among the members of the worktree group owning path to owners. */
static void add_worktree_owners(struct admin *a, const char *path, struct strvec *owners)
{
	struct err ignored = ERR_INIT;
	int rootfd = unixperm_open_root(a->conf.worktrees_dir, &ignored);
	int fd = rootfd < 0 ? -1 : unixperm_open_beneath(rootfd, a->conf.worktrees_dir, path, &ignored);
	struct stat st;
	struct group *gr = fd >= 0 && fstat(fd, &st) == 0 ? getgrgid(st.st_gid) : NULL;
	struct strvec members = STRVEC_INIT;
	if (gr && !strncmp(gr->gr_name, UNIXPERM_WORKTREE_PREFIX, strlen(UNIXPERM_WORKTREE_PREFIX)) &&
	    unixperm_managed_group_valid(gr->gr_name))
		unixperm_group_members(gr->gr_name, &members);
	for (size_t i = 0; i < members.nr; i++) {
		struct unixperm_user u;
		if (strvec_find(owners, members.v[i]) >= 0 || !unixperm_user_name_valid(members.v[i]) ||
		    unixperm_require_agor_user(members.v[i], &u, &ignored) < 0)
			continue;
		strvec_push(owners, u.name);
		unixperm_user_release(&u);
	}
	strvec_clear(&members);
	if (fd >= 0)
		close(fd);
	if (rootfd >= 0)
		close(rootfd);
	err_clear(&ignored);
}

/* Owners of every linked worktree of the repository: <repo>/worktrees/<name>/gitdir (bare) or
 * <repo>/.git/worktrees/<name>/gitdir. Everything read here is confined again before use. */
static void collect_repo_owners(struct admin *a, int repofd, struct strvec *owners)
{
	static const char *const admin_dirs[][2] = { { "worktrees", NULL }, { ".git", "worktrees" } };
	for (size_t k = 0; k < ARRAY_SIZE(admin_dirs); k++) {
		int fd = openat(repofd, admin_dirs[k][0], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && admin_dirs[k][1]) {
			int inner = openat(fd, admin_dirs[k][1], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			close(fd);
			fd = inner;
		}
		if (fd < 0)
			continue;
		DIR *d = fdopendir(fd);
		if (!d) {
			close(fd);
			continue;
		}
		for (struct dirent *de; (de = readdir(d));) {
			if (de->d_name[0] == '.')
				continue;
			const char *parts[] = { de->d_name, "gitdir" };
			char *text = read_small_file_at(dirfd(d), parts, 2);
			const char *wt = text ? worktree_from_gitdir(text) : NULL;
			if (wt)
				add_worktree_owners(a, wt, owners);
			free(text);
		}
		closedir(d);
	}
}

static bool same_members(const char *group, const struct strvec *want)
{
	struct strvec have = STRVEC_INIT;
	unixperm_group_members(group, &have);
	bool same = have.nr == want->nr;
	for (size_t i = 0; same && i < want->nr; i++)
		same = strvec_find(&have, want->v[i]) >= 0;
	strvec_clear(&have);
	return same;
}

static int sync_repo_members(struct admin *a, const char *group, const struct strvec *owners)
{
	json_t *list = json_array();
	for (size_t i = 0; i < owners->nr; i++)
		json_array_append_new(list, json_string(owners->v[i]));
	json_object_set_new(a->data, "members", list);
	if (same_members(group, owners))
		return 0;
	struct strbuf joined = STRBUF_INIT;
	for (size_t i = 0; i < owners->nr; i++)
		strbuf_addf(&joined, "%s%s", i ? "," : "", owners->v[i]);
	act(a, "gpasswd -M '%s' %s", joined.buf, group);
	strbuf_release(&joined);
	return a->call.dry_run ? 0 : unixperm_group_set_members(group, owners, &a->e);
}

static int cmd_update_repo_permissions(struct admin *a)
{
	const char *path = a->call.pos[0];
	if (check_path(a, "repo-path", path) < 0 || load_conf(a) < 0)
		return -1;
	const char *rel = unixperm_path_below(a->conf.repos_dir, path);
	char group[UNIXPERM_GROUP_NAME_SIZE];
	unixperm_group_name(UNIXPERM_REPO_PREFIX, rel ? rel : path, group);
	enum unixperm_access others = a->call.repo_mode == ADMIN_REPO_WORLD ? UNIXPERM_WRITE : UNIXPERM_NONE;
	set_str(a, "path", path);
	set_str(a, "group", group);
	set_str(a, "mode", a->call.repo_mode == ADMIN_REPO_WORLD ? "world" : "group");
	int fd = open_confined(a, a->conf.repos_dir, path);
	if (fd < 0)
		return -1;
	struct strvec owners = STRVEC_INIT;
	collect_repo_owners(a, fd, &owners);
	gid_t gid = 0;
	bool have_gid = false;
	int rc = ensure_group(a, group, &gid, &have_gid);
	if (rc == 0)
		rc = sync_repo_members(a, group, &owners);
	if (rc == 0)
		rc = apply_tree(a, fd, path, group, gid, have_gid, others);
	strvec_clear(&owners);
	close(fd);
	return rc;
}

/* ---- Unix users
 * ------------------------------------------------------------------------------------ */

static bool reserved_user_name(const char *name)
{
	return !strcmp(name, "root") || !strcmp(name, UNIXPERM_USERS_GROUP) ||
	       !strncmp(name, UNIXPERM_WORKTREE_PREFIX, strlen(UNIXPERM_WORKTREE_PREFIX)) ||
	       !strncmp(name, UNIXPERM_REPO_PREFIX, strlen(UNIXPERM_REPO_PREFIX));
}

static int cmd_setup_unix_user(struct admin *a)
{
	const char *user = a->call.pos[0];
	if (unixperm_check_user_name("unix-user", user, &a->e) < 0)
		return -1;
	if (reserved_user_name(user))
		return err_set(&a->e, E_PERMISSION_DENIED, "%s is a reserved name", user);
	set_str(a, "user", user);
	struct unixperm_user u;
	int found = unixperm_user_lookup(user, &u, &a->e);
	if (found < 0)
		return -1;
	if (found) {
		bool ours = u.uid != 0 && unixperm_user_in_group(&u, UNIXPERM_USERS_GROUP);
		unixperm_user_release(&u);
		if (ours)
			return 0;
		return err_set(&a->e, E_PERMISSION_DENIED,
			       "%s already exists and is not an agor user: refusing to adopt an "
			       "existing account "
			       "(an operator may run 'gpasswd -a %s %s' deliberately)",
			       user, user, UNIXPERM_USERS_GROUP);
	}
	if (!unixperm_group_lookup(UNIXPERM_USERS_GROUP, NULL)) {
		act(a, "groupadd --system %s", UNIXPERM_USERS_GROUP);
		if (!a->call.dry_run && unixperm_groupadd(UNIXPERM_USERS_GROUP, true, &a->e) < 0)
			return -1;
	}
	act(a, "useradd --create-home --user-group --shell /bin/bash --groups %s %s", UNIXPERM_USERS_GROUP, user);
	return a->call.dry_run ? 0 : unixperm_useradd_login(user, &a->e);
}

/* ---- cgroups
 * ------------------------------------------------------------------------------------------- */

/* --pid: a running process of the user (its daemon); 0 when not given. */
static int delegated_process(struct admin *a, const struct unixperm_user *u, pid_t *pid)
{
	*pid = 0;
	if (!a->call.pid)
		return 0;
	char *end;
	errno = 0;
	long v = strtol(a->call.pid, &end, 10);
	if (errno || *end || v <= 1 || v > INT32_MAX)
		return err_setd(&a->e, E_INVALID_PAYLOAD, json_pack("{s:s}", "field", "--pid"),
				"--pid: '%s' is not a process id (the daemon's pid, e.g. $(pidof agor))", a->call.pid);
	char proc[32];
	struct stat st;
	snprintf(proc, sizeof(proc), "/proc/%ld", v);
	if (stat(proc, &st) < 0)
		return err_setd(&a->e, E_INVALID_PAYLOAD, json_pack("{s:s}", "field", "--pid"), "--pid: no process %ld",
				v);
	if (st.st_uid != u->uid)
		return err_set(&a->e, E_PERMISSION_DENIED, "--pid: process %ld runs as uid %u, not as %s (uid %u)", v,
			       (unsigned)st.st_uid, u->name, (unsigned)u->uid);
	*pid = (pid_t)v;
	return 0;
}

/* A cgroup subtree for a non-root executor user: its sandboxed runs make their groups below it. With --pid
 * (cgroup v2) that process, the user's daemon, moves into it, so the executors it starts live inside.
 * cgroupfs forgets it at reboot, so a boot-time unit (or `agor setup isolation`) runs this again. */
static int cmd_cgroup_delegate(struct admin *a)
{
	const char *user = a->call.pos[0];
	struct unixperm_user u;
	pid_t pid = 0;
	if (unixperm_check_user_name("unix-user", user, &a->e) < 0 || unixperm_require_agor_user(user, &u, &a->e) < 0)
		return -1;
	int rc = u.uid == 0 ? err_set(&a->e, E_PERMISSION_DENIED, "%s has uid 0: root needs no delegation", user)
			    : delegated_process(a, &u, &pid);
	set_str(a, "user", user);
	act(a, "mkdir + chown %s: %s/{memory,pids,cpu}/%s/%s (or the cgroup2 equivalent)", user, CGROUP_DEFAULT_ROOT,
	    CGROUP_DEFAULT_PARENT, user);
	if (rc == 0 && pid > 0)
		act(a, "cgroup v2: move process %d into %s/%s/%s/%s (v1 needs no move)", (int)pid, CGROUP_DEFAULT_ROOT,
		    CGROUP_DEFAULT_PARENT, user, CGROUP_DELEGATED_LEAF);
	json_t *made = json_array();
	if (rc == 0 && !a->call.dry_run)
		rc = cgroup_delegate(CGROUP_DEFAULT_ROOT, CGROUP_DEFAULT_PARENT, user, u.uid, u.gid, pid, made, &a->e);
	json_object_set_new(a->data, "cgroups", made);
	unixperm_user_release(&u);
	return rc;
}

/* The archive directory: --archive must be archive_dir of admin.yaml or a directory below it,
 * owned by root and not writable by group or others (archives hold a user's private files). */
static int open_archive_dir(struct admin *a, const char *dir)
{
	if (check_path(a, "--archive", dir) < 0 || load_conf(a) < 0)
		return -1;
	if (!a->conf.archive_dir)
		return err_set(&a->e, E_PERMISSION_DENIED, "--archive needs archive_dir in %s", a->conf.path);
	int rootfd = unixperm_open_root(a->conf.archive_dir, &a->e);
	if (rootfd < 0)
		return -1;
	int fd = !strcmp(dir, a->conf.archive_dir) ? openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
						   : unixperm_open_beneath(rootfd, a->conf.archive_dir, dir, &a->e);
	if (fd < 0 && !err_is_set(&a->e))
		err_errno(&a->e, errno, "open %s", dir);
	close(rootfd);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022))) {
		close(fd);
		return err_set(&a->e, E_PERMISSION_DENIED,
			       "%s must be owned by root and not writable by group or others", dir);
	}
	return fd;
}

static int archive_home(struct admin *a, const struct unixperm_user *u, int dirfd, const char *dir)
{
	if (!unixperm_path_is_clean(u->home))
		return err_set(&a->e, E_INVALID_PAYLOAD, "home directory of %s is not a clean path", u->name);
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	char *name = xasprintf("%s-%s.tar.gz", u->name, stamp);
	char *parent = xstrndup(u->home, (size_t)(strrchr(u->home, '/') - u->home));
	const char *base = strrchr(u->home, '/') + 1;
	act(a, "tar --create --gzip --one-file-system --file %s/%s --directory %s %s", dir, name,
	    *parent ? parent : "/", base);
	set_str(a, "archive", name);
	int rc = 0;
	if (!a->call.dry_run) {
		int out = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0)
			rc = err_errno(&a->e, errno, "create %s/%s", dir, name);
		else {
			const char *argv[] = { "/usr/bin/tar",
					       "--create",
					       "--gzip",
					       "--one-file-system",
					       "--file=-",
					       "--directory",
					       *parent ? parent : "/",
					       "--",
					       base,
					       NULL };
			rc = unixperm_run_tool_fd(argv, out, &a->e);
			close(out);
		}
	}
	free(parent);
	free(name);
	return rc;
}

static int check_deletable(struct admin *a, const struct unixperm_user *u)
{
	if (u->uid == 0 || !unixperm_user_in_group(u, UNIXPERM_USERS_GROUP))
		return err_set(&a->e, E_PERMISSION_DENIED, "refusing to delete %s: not an agor user (not in %s)",
			       u->name, UNIXPERM_USERS_GROUP);
	if (u->uid < unixperm_uid_min())
		return err_set(&a->e, E_PERMISSION_DENIED, "refusing to delete %s: a system account (uid %u)", u->name,
			       (unsigned)u->uid);
	return 0;
}

static int cmd_delete_unix_user(struct admin *a)
{
	const char *user = a->call.pos[0];
	if (unixperm_check_user_name("unix-user", user, &a->e) < 0)
		return -1;
	set_str(a, "user", user);
	int dirfd = -1;
	if (a->call.archive && (dirfd = open_archive_dir(a, a->call.archive)) < 0)
		return -1;
	struct unixperm_user u;
	int found = unixperm_user_lookup(user, &u, &a->e);
	int rc = found < 0 ? -1 : 0;
	if (found == 1) {
		rc = check_deletable(a, &u);
		if (rc == 0 && a->call.archive)
			rc = archive_home(a, &u, dirfd, a->call.archive);
		if (rc == 0) {
			act(a, "userdel --remove %s", user);
			if (!a->call.dry_run)
				rc = unixperm_userdel(user, true, &a->e);
		}
		unixperm_user_release(&u);
	}
	if (dirfd >= 0)
		close(dirfd);
	return rc;
}

/* ---- the table and the driver
 * ------------------------------------------------------------------------- */

/* What runs each operation of adminops.h's table. */
static int (*const runners[ADMIN_NOPS])(struct admin *a) = {
	[ADMIN_ADD_WORKTREE_OWNER] = cmd_add_worktree_owner,
	[ADMIN_CGROUP_DELEGATE] = cmd_cgroup_delegate,
	[ADMIN_CREATE_WORKTREE_GROUP] = cmd_create_worktree_group,
	[ADMIN_DELETE_UNIX_USER] = cmd_delete_unix_user,
	[ADMIN_DELETE_WORKTREE_GROUP] = cmd_delete_worktree_group,
	[ADMIN_REMOVE_WORKTREE_OWNER] = cmd_remove_worktree_owner,
	[ADMIN_SET_WORKTREE_PERMISSIONS] = cmd_set_worktree_permissions,
	[ADMIN_SETUP_UNIX_USER] = cmd_setup_unix_user,
	[ADMIN_UPDATE_REPO_PERMISSIONS] = cmd_update_repo_permissions,
};

extern const struct applet applet_admin;

static int exit_code_for(const struct err *e)
{
	return !strcmp(e->code, E_INVALID_PAYLOAD) || !strcmp(e->code, E_USAGE) ? EXIT_USAGE : EXIT_FAILED;
}

static int report(struct admin *a, int rc)
{
	if (rc < 0) {
		fprintf(stderr, "agor admin %s: %s\n", adminops[a->call.op].name,
			a->e.message ? a->e.message : "failed");
		if (a->call.json) {
			json_t *res = json_pack("{s:b,s:o}", "success", 0, "error", err_to_json(&a->e));
			json_write_line(1, res);
			json_decref(res);
		}
		return exit_code_for(&a->e);
	}
	if (a->call.json) {
		json_t *actions = json_array();
		for (size_t i = 0; i < a->actions.nr; i++)
			json_array_append_new(actions, json_string(a->actions.v[i]));
		json_object_set_new(a->data, "command", json_string(adminops[a->call.op].name));
		json_object_set_new(a->data, "dryRun", json_boolean(a->call.dry_run));
		json_object_set_new(a->data, "changed", json_boolean(a->changed));
		json_object_set_new(a->data, "actions", actions);
		json_t *res = json_pack("{s:b,s:O}", "success", 1, "data", a->data);
		json_write_line(1, res);
		json_decref(res);
		return EXIT_OK;
	}
	for (size_t i = 0; i < a->actions.nr; i++)
		printf("%s\n", a->actions.v[i]);
	for (size_t i = 0; i < a->notes.nr; i++)
		printf("%s\n", a->notes.v[i]);
	if (!a->changed)
		printf("# nothing to change: already in place\n");
	return EXIT_OK;
}

/* `agor admin [SUB] … --help`: the usage (of SUB when it is one), nothing else done; -1 when help is not asked.
 * No argument admin acts on can be spelled --help or -h (names are checked against their patterns). */
static int help_asked(int argc, char **argv)
{
	int op = -1, asked = 0;
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		asked |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
		if (op < 0 && argv[i][0] != '-')
			op = adminops_find(argv[i]);
	}
	if (!asked)
		return -1;
	if (op < 0)
		fputs(applet_admin.usage, stdout);
	else
		printf("Usage: agor admin %s %s [--dry-run] [--json]\n", adminops[op].name, adminops[op].args);
	return EXIT_OK;
}

/* Runs one parsed call and reports it (its --json line on stdout when call->json). */
static int run_call(const struct admin_call *call, bool refused_early, const struct err *early)
{
	struct admin a = { .call = *call, .actions = STRVEC_INIT, .notes = STRVEC_INIT, .data = json_object() };
	if (refused_early)
		a.e = *early;
	int status = report(&a, refused_early ? -1 : runners[a.call.op](&a));
	strvec_clear(&a.actions);
	strvec_clear(&a.notes);
	adminconf_release(&a.conf);
	json_decref(a.data);
	if (!refused_early)
		err_clear(&a.e);
	return status;
}

int admin_run_call(const struct admin_call *call)
{
	return run_call(call, false, NULL);
}

static int admin_main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "serve"))
		return admin_serve_main(argc - 1, argv + 1);
	int help = help_asked(argc, argv);
	if (help >= 0)
		return help;
	struct admin_call call;
	struct err e = ERR_INIT;
	int status;
	if (adminops_parse(argc, argv, &call, &e) < 0) {
		status = applet_usage_error(&applet_admin, "%s", e.message);
	} else {
		/* --root-config is judged before anything else, whatever the subcommand */
		bool refused = call.root_config && adminconf_override_allowed(&e) < 0;
		status = run_call(&call, refused, &e);
	}
	err_clear(&e);
	return status;
}

/* What `agor admin SUB --help` and the shell completion show; adminops (lib/adminops.h) stays the one parser, the
 * typed boundary the daemon shares: this table names the same operations, arguments and options for people. */
#define GLOBAL_FLAGS                                                                                                   \
	{ "--dry-run", "dry_run", CLIENT_FLAG_BOOL, "validate everything, print the exact actions, change nothing" },  \
		{ "--json", "json", CLIENT_FLAG_BOOL, "print one result object {success, data|error}" },               \
	{                                                                                                              \
		"--root-config", "root_config", CLIENT_FLAG_STRING,                                                    \
			"another admin.yaml (only when root runs agor directly, never through sudo)", "PATH"           \
	}

static const struct client_flag global_flags[] = { GLOBAL_FLAGS, { NULL } };
static const struct client_flag owner_flags[] = {
	GLOBAL_FLAGS,
	{ "--link-name", "link_name", CLIENT_FLAG_STRING, "the link's name under ~/agor/worktrees/", "NAME" },
	{ NULL },
};
static const struct client_flag pid_flags[] = {
	GLOBAL_FLAGS,
	{ "--pid", "pid", CLIENT_FLAG_STRING, "cgroup v2: move this daemon pid inside the subtree", "PID" },
	{ NULL },
};
static const struct client_flag group_flags[] = {
	GLOBAL_FLAGS,
	{ "--others", "others", CLIENT_FLAG_STRING, "none, read or write: what others get", "ACCESS" },
	{ NULL },
};
static const struct client_flag archive_flags[] = {
	GLOBAL_FLAGS,
	{ "--archive", "archive", CLIENT_FLAG_STRING, "move the home into this directory (under archive_dir)", "DIR" },
	{ NULL },
};
static const struct client_flag repo_flags[] = {
	GLOBAL_FLAGS,
	{ "--group", "group", CLIENT_FLAG_BOOL, "readable by agor_users (the default)" },
	{ "--world", "world", CLIENT_FLAG_BOOL, "readable by everyone" },
	{ NULL },
};

static const struct client_command commands[] = {
	{ "add-worktree-owner", NULL, NULL, owner_flags, "WORKTREE-ID UNIX-USER WORKTREE-PATH [--link-name NAME]",
	  .local = 1, .example = "sudo -n agor admin add-worktree-owner 1aa81221 alice /srv/agor/worktrees/feature" },
	{ "cgroup-delegate", NULL, NULL, pid_flags, "UNIX-USER [--pid DAEMON_PID]", .local = 1,
	  .example = "sudo -n agor admin cgroup-delegate alice --dry-run" },
	{ "create-worktree-group", NULL, NULL, group_flags, "WORKTREE-ID WORKTREE-PATH [--others none|read|write]",
	  .local = 1, .example = "sudo -n agor admin create-worktree-group 1aa81221 /srv/agor/worktrees/feature" },
	{ "delete-unix-user", NULL, NULL, archive_flags, "UNIX-USER [--archive DIR]", .local = 1,
	  .example = "sudo -n agor admin delete-unix-user alice --archive /srv/agor/archive" },
	{ "delete-worktree-group", NULL, NULL, global_flags, "WORKTREE-ID", .local = 1,
	  .example = "sudo -n agor admin delete-worktree-group 1aa81221" },
	{ "remove-worktree-owner", NULL, NULL, global_flags, "WORKTREE-ID UNIX-USER", .local = 1,
	  .example = "sudo -n agor admin remove-worktree-owner 1aa81221 alice" },
	{ "set-worktree-permissions", NULL, NULL, global_flags, "WORKTREE-ID WORKTREE-PATH none|read|write", .local = 1,
	  .example = "sudo -n agor admin set-worktree-permissions 1aa81221 /srv/agor/worktrees/feature read" },
	{ "setup-unix-user", NULL, NULL, global_flags, "UNIX-USER", .local = 1,
	  .example = "sudo -n agor admin setup-unix-user alice --dry-run" },
	{ "update-repo-permissions", NULL, NULL, repo_flags, "REPO-PATH [--group|--world]", .local = 1,
	  .example = "sudo -n agor admin update-repo-permissions /srv/agor/repos/github.com/org/repo.git" },
};

static const char admin_usage[] =
	"Usage: agor admin SUBCOMMAND [--dry-run] [--json] [--root-config PATH] ARGS…\n"
	"(root only; the daemon reaches it through 'sudo -n agor admin …', or through the socket of\n"
	"'agor admin serve' when execution.privileged_socket is set)\n"
	"\n"
	"  create-worktree-group    <worktree-id> <worktree-path> [--others none|read|write]\n"
	"  delete-worktree-group    <worktree-id>\n"
	"  add-worktree-owner       <worktree-id> <unix-user> <worktree-path> [--link-name N]\n"
	"  remove-worktree-owner    <worktree-id> <unix-user>\n"
	"  set-worktree-permissions <worktree-id> <worktree-path> <none|read|write>\n"
	"  update-repo-permissions  <repo-path> [--group|--world]     (default --group)\n"
	"  setup-unix-user          <unix-user>\n"
	"  cgroup-delegate          <unix-user> [--pid DAEMON_PID]\n"
	"                           (a cgroup subtree for its sandboxed runs; v2: --pid moves its daemon inside)\n"
	"  delete-unix-user         <unix-user> [--archive DIR]\n"
	"  serve --daemon-user USER --run-as USER|%GROUP [--socket PATH]\n"
	"                           the privileged socket: these operations and executors for the daemon\n"
	"                           (docs/admin.md#socket; systemd: agor-admin.socket passes the socket)\n"
	"\n"
	"Paths must lie inside the roots named in the root-owned /etc/agor/admin.yaml\n"
	"(worktrees_dir, repos_dir, archive_dir); --root-config names another file, accepted\n"
	"only when root runs agor directly, never through sudo. Users must be members of\n"
	"agor_users. A worktree's group is agor_wt_ + 16 hex of SHA-256(id); others\n"
	"none|read|write gives directories 2770|2775|2777 with matching POSIX ACLs and\n"
	"default ACLs, applied recursively without following symlinks. Owners get the link\n"
	"~/agor/worktrees/<name>-<id8>.\n"
	"\n"
	"  --dry-run, -n   validate everything, print the exact actions, change nothing\n"
	"  --json          print one result object on stdout: "
	"{\"success\":…,\"data\"|\"error\":…}\n"
	"\n"
	"Exit status: 0 done (also when nothing needed doing), 1 refused or failed,\n"
	"2 invalid arguments.\n";

const struct applet applet_admin = {
	.name = "admin",
	.summary = "the only root code: validated user, group, ACL and symlink operations",
	.usage = admin_usage,
	.main = admin_main,
	.flags = APPLET_ROOT_ONLY,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
