/* test_unixperm.c — unit tests of unixperm, unixmode and adminconf.
 * Never touches anything outside its scratch directory; root-only checks pass trivially. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "adminconf.h"
#include "impersonate.h"
#include "unit.h"
#include "unixmode.h"
#include "openat2.h"
#include "unixperm.h"
#include "unixperm_acl.h"
#include "unixperm_account.h"
#include "unixperm_links.h"
#include "unixperm_tree.h"
#include "banned.h"

static char *tmp_path(const char *rel)
{
	return xasprintf("%s/%s", unit_tmpdir(), rel);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
		close(fd);
	}
}

TEST(unixperm_ids_are_validated)
{
	CHECK(unixperm_id_valid("0b4f2c7e-9a1d-4c1e-8f00-123456789abc"));
	CHECK(unixperm_id_valid("wt_1"));
	CHECK(!unixperm_id_valid(""));
	CHECK(!unixperm_id_valid("-x"));
	CHECK(!unixperm_id_valid("_x"));
	CHECK(!unixperm_id_valid("a b"));
	CHECK(!unixperm_id_valid("a;id"));
	CHECK(!unixperm_id_valid("a\nb"));
	CHECK(!unixperm_id_valid("$(id)"));
	CHECK(!unixperm_id_valid("../x"));
	CHECK(!unixperm_id_valid("a/b"));
	char long_id[66];
	memset(long_id, 'a', 65);
	long_id[65] = '\0';
	CHECK(!unixperm_id_valid(long_id));
	long_id[64] = '\0';
	CHECK(unixperm_id_valid(long_id));
}

TEST(unixperm_user_names_follow_the_spec_rule)
{
	CHECK(unixperm_user_name_valid("alice"));
	CHECK(unixperm_user_name_valid("_svc"));
	CHECK(unixperm_user_name_valid("agor_executor"));
	CHECK(unixperm_user_name_valid("a-b_9"));
	CHECK(!unixperm_user_name_valid("-oX"));
	CHECK(!unixperm_user_name_valid("--help"));
	CHECK(!unixperm_user_name_valid("Alice"));
	CHECK(!unixperm_user_name_valid("9lives"));
	CHECK(!unixperm_user_name_valid("al ice"));
	CHECK(!unixperm_user_name_valid("alice;id"));
	CHECK(!unixperm_user_name_valid("alice\nroot"));
	CHECK(!unixperm_user_name_valid(""));
	CHECK(!unixperm_user_name_valid("abcdefghijklmnopqrstuvwxyz0123456"));
	CHECK(unixperm_user_name_valid("abcdefghijklmnopqrstuvwxyz012345"));
}

TEST(unixperm_link_names_and_paths)
{
	CHECK(unixperm_link_name_valid("my-app"));
	CHECK(unixperm_link_name_valid("v1.2_x"));
	CHECK(!unixperm_link_name_valid(".hidden"));
	CHECK(!unixperm_link_name_valid("a/b"));
	CHECK(!unixperm_link_name_valid("-rf"));
	CHECK(!unixperm_link_name_valid("a b"));
	CHECK(unixperm_path_is_clean("/srv/agor/worktrees/o/r/w"));
	CHECK(!unixperm_path_is_clean("/"));
	CHECK(!unixperm_path_is_clean("relative/x"));
	CHECK(!unixperm_path_is_clean("/a//b"));
	CHECK(!unixperm_path_is_clean("/a/./b"));
	CHECK(!unixperm_path_is_clean("/a/../b"));
	CHECK(!unixperm_path_is_clean("/a/.."));
	CHECK(!unixperm_path_is_clean("/a/b/"));
	CHECK(!unixperm_path_is_clean("/a/b\n"));
	CHECK(unixperm_path_is_clean("/a/..b/.c"));
	CHECK_STR(unixperm_path_below("/srv/wt", "/srv/wt/a/b"), "a/b");
	CHECK(!unixperm_path_below("/srv/wt", "/srv/wtx/a"));
	CHECK(!unixperm_path_below("/srv/wt", "/srv/wt"));
}

TEST(unixperm_group_names_are_prefix_plus_16_hex_of_sha256)
{
	char g[UNIXPERM_GROUP_NAME_SIZE];
	unixperm_group_name(UNIXPERM_WORKTREE_PREFIX, "abc", g); /* SHA-256("abc") = ba7816bf8f01cfea… */
	CHECK_STR(g, "agor_wt_ba7816bf8f01cfea");
	unixperm_group_name(UNIXPERM_REPO_PREFIX, "abc", g);
	CHECK_STR(g, "agor_rp_ba7816bf8f01cfea");
	char a[UNIXPERM_GROUP_NAME_SIZE], b[UNIXPERM_GROUP_NAME_SIZE];
	unixperm_group_name(UNIXPERM_WORKTREE_PREFIX, "wt-1", a);
	unixperm_group_name(UNIXPERM_WORKTREE_PREFIX, "WT-1", b);
	CHECK(strcmp(a, b) != 0);
	CHECK(unixperm_managed_group_valid(a));
	CHECK(!unixperm_managed_group_valid("agor_users"));
	CHECK(!unixperm_managed_group_valid("root"));
	CHECK(!unixperm_managed_group_valid("agor_wt_BA7816BF8F01CFEA"));
	CHECK(!unixperm_managed_group_valid("agor_wt_ba7816bf8f01cfe"));
	CHECK(!unixperm_managed_group_valid("agor_xx_ba7816bf8f01cfea"));
}

TEST(unixperm_wrappers_refuse_unmanaged_groups_and_bad_users_before_running_anything)
{
	struct err e = ERR_INIT;
	CHECK_INT(unixperm_groupdel("root", &e), -1);
	CHECK_STR(e.code, E_PERMISSION_DENIED);
	CHECK_INT(unixperm_groupdel("agor_users", &e), -1);
	CHECK_INT(unixperm_groupadd("sudo", false, &e), -1);
	CHECK_INT(unixperm_group_remove_member("agor_wt_ba7816bf8f01cfea", "-oX", &e), -1);
	CHECK_STR(e.code, E_INVALID_PAYLOAD);
	CHECK_INT(unixperm_group_add_member("wheel", "alice", &e), -1);
	CHECK_INT(unixperm_userdel("--help", true, &e), -1);
	CHECK_INT(unixperm_useradd_login("bob\nroot", &e), -1);
	CHECK_CONTAINS(e.message, "\\n");
	err_clear(&e);
}

TEST(unixperm_modes_follow_others_access)
{
	CHECK_INT(unixperm_dir_mode(UNIXPERM_NONE), 02770);
	CHECK_INT(unixperm_dir_mode(UNIXPERM_READ), 02775);
	CHECK_INT(unixperm_dir_mode(UNIXPERM_WRITE), 02777);
	CHECK_INT(unixperm_file_mode(0644, UNIXPERM_NONE), 0660);
	CHECK_INT(unixperm_file_mode(0600, UNIXPERM_READ), 0664);
	CHECK_INT(unixperm_file_mode(0400, UNIXPERM_WRITE), 0466);
	CHECK_INT(unixperm_file_mode(04755, UNIXPERM_READ), 0775);
	CHECK_INT(unixperm_file_mode(0700, UNIXPERM_NONE), 0770);
	enum unixperm_access a;
	CHECK_INT(unixperm_access_parse("write", &a), 0);
	CHECK_INT(a, UNIXPERM_WRITE);
	CHECK_INT(unixperm_access_parse("rw", &a), -1);
}

TEST(unixperm_acl_xattr_bytes_roundtrip)
{
	struct unixperm_acl_entry ent[5], back[8];
	size_t n = unixperm_acl_for_mode(02775, 1234, ent), m = 0;
	CHECK_INT(n, 5);
	struct strbuf sb = STRBUF_INIT;
	unixperm_acl_encode(ent, n, &sb);
	CHECK_INT(sb.len, 4 + 5 * 8);
	static const unsigned char head[] = { 2, 0, 0, 0, 1, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, 4, 0, 7, 0 };
	CHECK(!memcmp(sb.buf, head, sizeof(head)));
	static const unsigned char named[] = { 8, 0, 7, 0, 0xd2, 0x04, 0, 0 }; /* ACL_GROUP rwx gid 1234 */
	CHECK(!memcmp(sb.buf + 4 + 2 * 8, named, sizeof(named)));
	CHECK_INT(unixperm_acl_decode(sb.buf, sb.len, back, 8, &m), 0);
	CHECK_INT(m, 5);
	CHECK_INT(back[4].tag, UNIXPERM_ACL_OTHER);
	CHECK_INT(back[4].perm, 5);
	CHECK_INT(unixperm_acl_decode(sb.buf, sb.len - 1, back, 8, &m), -1);
	struct strbuf text = STRBUF_INIT;
	unixperm_acl_describe(ent, n, "agor_wt_x", &text);
	CHECK_STR(text.buf, "u::rwx,g::rwx,g:agor_wt_x:rwx,m::rwx,o::r-x");
	strbuf_release(&text);
	strbuf_release(&sb);
}

/* root/wt/inside -> link to ../other (inside), root/wt/escape -> /etc, root/abs -> /tmp */
static int make_confinement_tree(void)
{
	char *root = tmp_path("root");
	char *cmd[] = { tmp_path("root"), tmp_path("root/wt"), tmp_path("root/wt/a"), tmp_path("root/other") };
	for (size_t i = 0; i < 4; i++) {
		CHECK(mkdir(cmd[i], 0755) == 0);
		free(cmd[i]);
	}
	char *l1 = tmp_path("root/wt/inside"), *l2 = tmp_path("root/wt/escape"), *l3 = tmp_path("root/wt/dotdot");
	CHECK(symlink("../other", l1) == 0);
	CHECK(symlink("/etc", l2) == 0);
	CHECK(symlink("../../", l3) == 0);
	free(l1);
	free(l2);
	free(l3);
	struct err e = ERR_INIT;
	int fd = unixperm_open_root(root, &e);
	CHECK(fd >= 0);
	free(root);
	err_clear(&e);
	return fd;
}

static int open_below(int rootfd, const char *rel, struct err *e)
{
	char *root = tmp_path("root");
	char *path = xasprintf("%s/%s", root, rel);
	int fd = unixperm_open_beneath(rootfd, root, path, e);
	free(root);
	free(path);
	return fd;
}

TEST(unixperm_open_beneath_confines_paths)
{
	int rootfd = make_confinement_tree();
	struct err e = ERR_INIT;
	int fd = open_below(rootfd, "wt/a", &e);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	fd = open_below(rootfd, "wt/inside/../wt/a", &e); /* not clean */
	CHECK_INT(fd, -1);
	CHECK_STR(e.code, E_PATH_OUTSIDE_DATA_HOME);
	CHECK_INT(open_below(rootfd, "wt/escape", &e), -1);
	CHECK_STR(e.code, E_PATH_OUTSIDE_DATA_HOME);
	CHECK_INT(open_below(rootfd, "wt/escape/ssh", &e), -1);
	CHECK_STR(e.code, E_PATH_OUTSIDE_DATA_HOME);
	CHECK_INT(open_below(rootfd, "wt/dotdot/x", &e), -1);
	CHECK_INT(open_below(rootfd, "wt/inside", &e), -1); /* the last component is a symlink */
	CHECK_INT(open_below(rootfd, "missing", &e), -1);
	CHECK_STR(e.code, E_NOT_FOUND);
	char *root = tmp_path("root");
	CHECK_INT(unixperm_open_beneath(rootfd, root, "/etc", &e), -1);
	CHECK_STR(e.code, E_PATH_OUTSIDE_DATA_HOME);
	CHECK_INT(unixperm_open_beneath(rootfd, root, root, &e), -1);
	char *via_link = tmp_path("root/wt/escape");
	CHECK_INT(unixperm_open_root(via_link, &e), -1); /* a root with a symlink in it */
	free(via_link);
	free(root);
	close(rootfd);
	err_clear(&e);
}

TEST(unixperm_open_beneath_without_openat2_follows_no_symlink_at_all)
{
	openat2_disable_for_tests(true);
	int rootfd = make_confinement_tree();
	struct err e = ERR_INIT;
	int fd = open_below(rootfd, "wt/a", &e);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_INT(open_below(rootfd, "wt/escape/ssh", &e), -1);
	CHECK_STR(e.code, E_PATH_OUTSIDE_DATA_HOME);
	CHECK_INT(open_below(rootfd, "wt/escape", &e), -1);
	CHECK_STR(e.code, E_PATH_OUTSIDE_DATA_HOME);
	CHECK_INT(open_below(rootfd, "wt/inside/x", &e), -1); /* even a symlink that stays inside */
	CHECK_STR(e.code, E_PATH_OUTSIDE_DATA_HOME);
	close(rootfd);
	err_clear(&e);
	openat2_disable_for_tests(false);
}

static bool running_as_root(void)
{
	return geteuid() == 0;
}

static mode_t mode_of(const char *rel, bool follow)
{
	char *p = tmp_path(rel);
	struct stat st;
	int rc = follow ? stat(p, &st) : lstat(p, &st);
	free(p);
	return rc == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

TEST(unixperm_apply_tree_changes_modes_and_acls_without_following_links)
{
	char *t = tmp_path("t"), *sub = tmp_path("t/sub"), *f = tmp_path("t/sub/f"), *x = tmp_path("t/x"),
	     *victim = tmp_path("victim"), *lnk = tmp_path("t/evil"), *hard = tmp_path("t/hard");
	CHECK(mkdir(t, 0700) == 0 && mkdir(sub, 0700) == 0);
	write_file(f, "f");
	write_file(x, "x");
	chmod(x, 04755);
	write_file(victim, "secret");
	chmod(victim, 0600);
	CHECK(symlink(victim, lnk) == 0);
	CHECK(link(victim, hard) == 0);
	int fd = open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct unixperm_tree_spec spec = { getegid(), UNIXPERM_READ, true };
	struct unixperm_tree_stats st;
	struct err e = ERR_INIT;
	CHECK_INT(unixperm_apply_tree(fd, &spec, &st, &e), 0); /* dry run: counts, changes nothing */
	CHECK_INT(mode_of("t/sub/f", false), 0644);
	CHECK(st.changed >= 3);
	spec.dry_run = false;
	int rc = unixperm_apply_tree(fd, &spec, &st, &e);
	if (rc < 0 && strstr(e.message, "POSIX ACLs")) {
		fprintf(stderr, "    (no ACL support on %s: skipped)\n", unit_tmpdir());
	} else {
		CHECK_INT(rc, 0);
		CHECK_INT(mode_of("t", false), 02775);
		CHECK_INT(mode_of("t/sub", false), 02775);
		CHECK_INT(mode_of("t/sub/f", false), 0664);
		CHECK_INT(mode_of("t/x", false), 0775); /* setuid cleared, x kept */
		CHECK_INT(mode_of("victim", false), 0600);
		CHECK_INT(st.skipped_symlinks, 1);
		CHECK_INT(st.skipped_hardlinked, 1);
		CHECK_INT(st.dirs, 2);
		CHECK_INT(st.files, 2);
		char buf[128];
		CHECK(getxattr(sub, "system.posix_acl_default", buf, sizeof(buf)) == 44);
		CHECK(getxattr(f, "system.posix_acl_access", buf, sizeof(buf)) == 44);
		CHECK(getxattr(victim, "system.posix_acl_access", buf, sizeof(buf)) < 0);
		CHECK_INT(unixperm_apply_tree(fd, &spec, &st, &e), 0);
		CHECK_INT(st.changed, 0); /* idempotent */
	}
	close(fd);
	err_clear(&e);
	free(t), free(sub), free(f), free(x), free(victim), free(lnk), free(hard);
}

static int whoami_fn(void *arg, struct strbuf *out, struct err *e)
{
	(void)arg;
	(void)e;
	strbuf_addf(out, "%u:%u", (unsigned)getuid(), (unsigned)geteuid());
	return 0;
}

static int failing_fn(void *arg, struct strbuf *out, struct err *e)
{
	(void)arg;
	(void)out;
	return err_set(e, E_NOT_FOUND, "nothing here for %u", (unsigned)getuid());
}

TEST(unixperm_run_as_user_drops_for_good_and_relays_errors)
{
	if (!running_as_root())
		return;
	struct unixperm_user nobody = { (char *)"nobody", 65534, 65534, (char *)"/", (char *)"/bin/false" };
	struct strbuf out = STRBUF_INIT;
	struct err e = ERR_INIT;
	CHECK_INT(unixperm_run_as_user(&nobody, whoami_fn, NULL, &out, &e), 0);
	CHECK_STR(out.buf, "65534:65534");
	CHECK_INT(unixperm_run_as_user(&nobody, failing_fn, NULL, NULL, &e), -1);
	CHECK_STR(e.code, E_NOT_FOUND);
	CHECK_STR(e.message, "nothing here for 65534");
	strbuf_release(&out);
	err_clear(&e);
}

TEST(unixmode_decides_the_execution_user)
{
	struct unix_mode_settings s = { UNIX_MODE_SIMPLE, "agor", "agor_executor" };
	struct unix_mode_creator alice = { "alice@example.com", "alice" }, nobody = { "bob@example.com", NULL };
	const char *user = NULL;
	struct err e = ERR_INIT;
	CHECK_INT(unix_mode_execution_user(&s, &alice, &user, &e), 0);
	CHECK_STR(user, "agor");
	CHECK(!unix_mode_impersonates(&s, user));
	s.mode = UNIX_MODE_INSULATED;
	CHECK_INT(unix_mode_execution_user(&s, &alice, &user, &e), 0);
	CHECK_STR(user, "agor_executor");
	CHECK(unix_mode_impersonates(&s, user));
	s.mode = UNIX_MODE_STRICT;
	CHECK_INT(unix_mode_execution_user(&s, &alice, &user, &e), 0);
	CHECK_STR(user, "alice");
	CHECK_INT(unix_mode_execution_user(&s, &nobody, &user, &e), -1);
	CHECK_STR(e.code, E_ISOLATION_UNAVAILABLE);
	CHECK_CONTAINS(e.message, "bob@example.com");
	CHECK_CONTAINS(e.message, "agor admin setup-unix-user");
	struct unix_mode_creator as_root = { "eve", "root" }, as_daemon = { "eve", "agor" }, bad = { "eve", "-oX" };
	CHECK_INT(unix_mode_execution_user(&s, &as_root, &user, &e), -1);
	CHECK_STR(e.code, E_PERMISSION_DENIED);
	CHECK_INT(unix_mode_execution_user(&s, &as_daemon, &user, &e), -1);
	CHECK_INT(unix_mode_execution_user(&s, &bad, &user, &e), -1);
	CHECK_STR(e.code, E_INVALID_PAYLOAD);
	s.mode = UNIX_MODE_INSULATED;
	s.executor_user = "agor";
	CHECK_INT(unix_mode_execution_user(&s, &alice, &user, &e), -1);
	CHECK(unix_mode_worktree_rbac_default(UNIX_MODE_STRICT));
	CHECK(!unix_mode_worktree_rbac_default(UNIX_MODE_INSULATED));
	err_clear(&e);
}

TEST(unixmode_sudoers_grants_exactly_two_rules)
{
	struct unix_mode_sudoers s = { UNIX_MODE_INSULATED, "agor", "agor_executor", "/usr/local/bin/agor" };
	struct strbuf out = STRBUF_INIT;
	struct err e = ERR_INIT;
	CHECK_INT(unix_mode_sudoers(&s, &out, &e), 0);
	CHECK_CONTAINS(out.buf, "\nagor ALL = (agor_executor) NOPASSWD: /usr/local/bin/agor executor --stdin\n");
	CHECK_CONTAINS(out.buf, "\nagor ALL = (root) NOPASSWD: /usr/local/bin/agor admin *\n");
	int rules = 0;
	for (const char *l = out.buf; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		rules += *l && *l != '#';
	CHECK_INT(rules, 2);
	strbuf_reset(&out);
	s.mode = UNIX_MODE_STRICT;
	CHECK_INT(unix_mode_sudoers(&s, &out, &e), 0);
	CHECK_CONTAINS(out.buf, "(%agor_users, !root) NOPASSWD: /usr/local/bin/agor executor --stdin\n");
	s.bin = "/usr/local/bin/agor, /bin/sh";
	CHECK_INT(unix_mode_sudoers(&s, &out, &e), -1);
	s.bin = "/usr/local/bin/agor";
	s.daemon_user = "root";
	CHECK_INT(unix_mode_sudoers(&s, &out, &e), -1);
	s.daemon_user = "agor ALL=(ALL) ALL";
	CHECK_INT(unix_mode_sudoers(&s, &out, &e), -1);
	strbuf_release(&out);
	err_clear(&e);
}

static int parse_conf(const char *text, struct adminconf *c, struct err *e)
{
	return adminconf_parse(text, strlen(text), "admin.yaml", c, e);
}

/* adminconf_fuzz found it: a path YAML reads as a line break (U+2028) or a control character was written into the
 * double-quoted scalar as is, and read back as another path. Every such path now comes back as itself. */
TEST(adminconf_format_reads_back_any_clean_path)
{
	static const char *const paths[] = { "/s/a: b #c",   "/s/\xe2\x80\xa8x  ",
					     "/s/tab",	     "/s/\xc2\x85nel\xc2\x9f",
					     "/s/q\"uo\\te", "/s/\xe2\x80\xa9\xef\xbb\xbf" };
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		struct adminconf c = { .worktrees_dir = xstrdup(paths[i]), .repos_dir = xstrdup("/r") }, back;
		struct strbuf sb = STRBUF_INIT;
		struct err e = ERR_INIT;
		adminconf_format(&c, &sb);
		CHECK_INT(parse_conf(sb.buf, &back, &e), 0);
		if (!e.code)
			CHECK_STR(back.worktrees_dir, paths[i]);
		err_clear(&e);
		if (!e.code)
			adminconf_release(&back);
		adminconf_release(&c);
		strbuf_release(&sb);
	}
}

TEST(adminconf_parses_strictly)
{
	struct adminconf c;
	struct err e = ERR_INIT;
	CHECK_INT(parse_conf("worktrees_dir: /srv/a/worktrees\nrepos_dir: "
			     "/srv/a/repos\narchive_dir: /var/backups/agor\n",
			     &c, &e),
		  0);
	CHECK_STR(c.worktrees_dir, "/srv/a/worktrees");
	CHECK_STR(c.archive_dir, "/var/backups/agor");
	struct strbuf sb = STRBUF_INIT;
	adminconf_format(&c, &sb);
	adminconf_release(&c);
	CHECK_INT(parse_conf(sb.buf, &c, &e), 0);
	CHECK_STR(c.repos_dir, "/srv/a/repos");
	adminconf_release(&c);
	strbuf_release(&sb);
	CHECK_INT(parse_conf("worktrees_dir: /a\nrepos_dir: /b\nextra: 1\n", &c, &e), -1);
	CHECK_CONTAINS(e.message, "admin.yaml:3: extra: unknown key");
	CHECK_INT(parse_conf("worktrees_dir: /a\nworktrees_dir: /b\n", &c, &e), -1);
	CHECK_CONTAINS(e.message, "duplicate");
	CHECK_INT(parse_conf("worktrees_dir: /a\nrepos_dir: /a/r\n", &c, &e), -1);
	CHECK_INT(parse_conf("worktrees_dir: a\nrepos_dir: /b\n", &c, &e), -1);
	CHECK_INT(parse_conf("worktrees_dir: /a/../etc\nrepos_dir: /b\n", &c, &e), -1);
	CHECK_INT(parse_conf("worktrees_dir: /\nrepos_dir: /b\n", &c, &e), -1);
	CHECK_INT(parse_conf("worktrees_dir: [/a]\nrepos_dir: /b\n", &c, &e), -1);
	CHECK_INT(parse_conf("worktrees_dir: /a\n", &c, &e), -1);
	CHECK_INT(parse_conf("", &c, &e), -1);
	CHECK_INT(parse_conf("worktrees_dir: /a\nrepos_dir: /b\n---\nx: 1\n", &c, &e), -1);
	CHECK_INT(parse_conf("worktrees_dir: /a\nrepos_dir: /b\narchive_dir: /a/x\n", &c, &e), -1);
	CHECK_INT(parse_conf("worktrees_dir: /a\n  repos_dir: /b\n", &c, &e), -1);
	err_clear(&e);
}

TEST(adminconf_refuses_files_others_can_write)
{
	char *path = tmp_path("admin.yaml");
	write_file(path, "worktrees_dir: /a\nrepos_dir: /b\n");
	struct adminconf c;
	struct err e = ERR_INIT;
	/* The scratch directory lives in a world-writable /tmp (or TMPDIR): never trusted. */
	struct stat st;
	char *parent = xstrndup(unit_tmpdir(), (size_t)(strrchr(unit_tmpdir(), '/') - unit_tmpdir()));
	if (stat(parent, &st) == 0 && (st.st_mode & 022)) {
		CHECK_INT(adminconf_load(path, &c, &e), -1);
		CHECK_STR(e.code, E_CONFIG);
		CHECK_CONTAINS(e.message, "writable by group or others");
	}
	free(parent);
	CHECK_INT(adminconf_load("relative/admin.yaml", &c, &e), -1);
	char *link = tmp_path("link.yaml");
	CHECK(symlink(path, link) == 0);
	CHECK_INT(adminconf_load(link, &c, &e), -1);
	free(link);
	free(path);
	err_clear(&e);
}

TEST(adminconf_override_is_refused_through_sudo)
{
	struct err e = ERR_INIT;
	setenv("SUDO_UID", "1000", 1);
	CHECK_INT(adminconf_override_allowed(&e), -1);
	CHECK_STR(e.code, E_PERMISSION_DENIED);
	unsetenv("SUDO_UID");
	setenv("SUDO_COMMAND", "/usr/local/bin/agor admin", 1);
	CHECK_INT(adminconf_override_allowed(&e), -1);
	unsetenv("SUDO_COMMAND");
	unsetenv("SUDO_USER");
	unsetenv("SUDO_GID");
	CHECK_INT(adminconf_override_allowed(&e), running_as_root() ? 0 : -1);
	err_clear(&e);
}

/* The executor's own passwd reader, read as libc does: the first whole entry (seven fields) of that uid in decimal, a
 * last line without a newline; "not settled" (1, getpwuid decides) for a missing file, no entry, a line cut short
 * or one longer than its buffer. */
TEST(impersonate_passwd_name_reads_the_file_like_getpwuid)
{
	_cleanup_free_ char *file = xasprintf("%s/passwd", unit_tmpdir()),
			    *missing = xasprintf("%s/none", unit_tmpdir());
	struct strbuf text = STRBUF_INIT;
	strbuf_addstr(&text, "junk without fields\n:x:7:7::/:/bin/sh\nbob:x:10000:10000::/home/bob:/bin/sh\n"
			     "alice:x:1000:1000::/home/alice:/bin/sh\nalice2:x:1000:1000::/:/bin/sh\nshort:x:77:77\n"
			     "zed:x:0099:99::/:/bin/sh\ncarol:x:42:42::/:/bin/sh");
	write_file(file, text.buf);
	const struct {
		unsigned uid;
		const char *want;
	} cases[] = { { 1000, "alice" }, { 10000, "bob" }, { 42, "carol" }, { 99, "zed" },
		      { 100, NULL },	 { 7, NULL },	   { 77, NULL } };
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *name = NULL;
		CHECK_INT(impersonate_passwd_name(file, cases[i].uid, &name), cases[i].want ? 0 : 1);
		CHECK_STR(name ? name : "(none)", cases[i].want ? cases[i].want : "(none)");
		free(name);
	}
	char *name = NULL;
	CHECK_INT(impersonate_passwd_name(missing, 0, &name), 1);
	strbuf_reset(&text);
	for (int i = 0; i < 5000; i++)
		strbuf_addch(&text, 'x');
	strbuf_addstr(&text, ":x:1:1::/:/bin/sh\nshort:x:2:2::/:/bin/sh\n");
	write_file(file, text.buf);
	CHECK_INT(impersonate_passwd_name(file, 2, &name), 1); /* past an overlong line: getpwuid decides */
	CHECK(name == NULL);
	struct passwd *pw = getpwuid(geteuid());
	_cleanup_free_ char *me = impersonate_current_user();
	CHECK_STR(me ? me : "(none)", pw ? pw->pw_name : "(none)");
	strbuf_release(&text);
}
