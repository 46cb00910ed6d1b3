/* test_fsutil.c — unit tests of the descriptor-based removal, staging and moves (fsutil.h) and of confine_hold.
 * Every tree lives in the test's scratch directory; "outside" is a sibling the code must never change. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confine.h"
#include "fsutil.h"
#include "unit.h"
#include "banned.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static char *tmp_path(const char *rel)
{
	return xasprintf("%s/%s", unit_tmpdir(), rel);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(fs_write_all(fd, text, strlen(text)) == 0);
		close(fd);
	}
}

static void mkdirs(const char *rel)
{
	_cleanup_free_ char *path = tmp_path(rel);
	struct err e = ERR_INIT;
	CHECK(fs_mkdir_p(path, 0755, &e) == 0);
	err_clear(&e);
}

/* outside/keep.txt and outside/sub/keep.txt: what a followed link would reach. */
static void make_outside(void)
{
	mkdirs("outside/sub");
	_cleanup_free_ char *a = tmp_path("outside/keep.txt"), *b = tmp_path("outside/sub/keep.txt");
	write_file(a, "keep");
	write_file(b, "keep");
}

static int outside_intact(void)
{
	_cleanup_free_ char *a = tmp_path("outside/keep.txt"), *b = tmp_path("outside/sub/keep.txt");
	return fs_exists(a) && fs_exists(b);
}

static int remove_in_tmp(const char *name)
{
	int dfd = open(unit_tmpdir(), O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct err e = ERR_INIT;
	int rc = fs_remove_at(dfd, name, unit_tmpdir(), &e);
	if (rc < 0)
		fprintf(stderr, "fs_remove_at: %s\n", e.message);
	err_clear(&e);
	close(dfd);
	return rc;
}

TEST(fs_remove_at_removes_a_tree_and_unlinks_links_without_following_them)
{
	make_outside();
	mkdirs("t/a/b/c");
	_cleanup_free_ char *f = tmp_path("t/a/b/c/f"), *l1 = tmp_path("t/a/to-outside"),
			    *l2 = tmp_path("t/a/b/dangling");
	_cleanup_free_ char *l3 = tmp_path("t/to-file"), *outside = tmp_path("outside"), *t = tmp_path("t");
	_cleanup_free_ char *keep = tmp_path("outside/keep.txt");
	write_file(f, "x");
	CHECK(symlink(outside, l1) == 0);
	CHECK(symlink("/nonexistent/x", l2) == 0);
	CHECK(symlink(keep, l3) == 0);
	_cleanup_free_ char *fifo = tmp_path("t/a/fifo");
	CHECK(mkfifo(fifo, 0600) == 0);
	CHECK_INT(remove_in_tmp("t"), 0);
	CHECK(!fs_exists(t));
	CHECK(outside_intact());
}

TEST(fs_remove_at_of_a_link_to_a_directory_removes_the_link_only)
{
	make_outside();
	_cleanup_free_ char *outside = tmp_path("outside"), *link = tmp_path("link");
	CHECK(symlink(outside, link) == 0);
	CHECK_INT(remove_in_tmp("link"), 0);
	CHECK(!fs_exists(link));
	CHECK(outside_intact());
}

TEST(fs_remove_at_of_a_missing_name_is_success)
{
	CHECK_INT(remove_in_tmp("nothing-here"), 0);
}

TEST(fs_remove_at_handles_deep_nesting_with_one_descriptor_per_level)
{
	_cleanup_free_ char *root = tmp_path("deep");
	CHECK(mkdir(root, 0755) == 0);
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 300 && fd >= 0; i++) { /* 300 levels: two descriptors a level would need 600 */
		CHECK(mkdirat(fd, "d", 0755) == 0);
		int next = openat(fd, "d", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = next;
	}
	if (fd >= 0)
		close(fd);
	CHECK_INT(remove_in_tmp("deep"), 0);
	CHECK(!fs_exists(root));
}

/* A child exchanges t/sub (a directory) and t/sub.swap (a symlink to outside/) as fast as it can while the tree
 * is removed: whatever the walk meets, a link is unlinked and never followed. */
TEST(fs_remove_at_never_follows_a_directory_swapped_for_a_link_mid_walk)
{
	make_outside();
	_cleanup_free_ char *outside = tmp_path("outside/sub"), *t = tmp_path("t");
	_cleanup_free_ char *sub = tmp_path("t/sub"), *swap = tmp_path("t/sub.swap");
	for (int round = 0; round < 200; round++) {
		mkdirs("t/sub/x/y");
		for (int i = 0; i < 8; i++) {
			_cleanup_free_ char *f = xasprintf("%s/x/f%d", sub, i);
			write_file(f, "x");
		}
		CHECK(symlink(outside, swap) == 0);
		pid_t pid = fork();
		if (pid == 0) {
			for (;;)
				syscall(SYS_renameat2, AT_FDCWD, sub, AT_FDCWD, swap, RENAME_EXCHANGE);
		}
		struct err e = ERR_INIT;
		int dfd = open(unit_tmpdir(), O_PATH | O_DIRECTORY | O_CLOEXEC);
		fs_remove_at(dfd, "t", unit_tmpdir(), &e); /* may fail (the tree keeps changing); may never follow */
		close(dfd);
		err_clear(&e);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		CHECK(outside_intact());
		CHECK_INT(remove_in_tmp("t"), 0);
		CHECK(!fs_exists(t));
		if (!outside_intact())
			break;
	}
}

TEST(fs_remove_tree_removes_a_path_and_refuses_the_root)
{
	mkdirs("r/a");
	_cleanup_free_ char *r = tmp_path("r");
	struct err e = ERR_INIT;
	CHECK_INT(fs_remove_tree(r, &e), 0);
	CHECK(!fs_exists(r));
	CHECK_INT(fs_remove_tree(r, &e), 0); /* missing: success */
	CHECK_INT(fs_remove_tree("/", &e), -1);
	CHECK_STR(e.code, E_INVALID_PAYLOAD);
	err_clear(&e);
}

TEST(fs_move_at_refuses_to_replace_anything_but_an_empty_directory)
{
	mkdirs("from/a");
	mkdirs("from/b");
	mkdirs("from/c");
	mkdirs("to/empty");
	mkdirs("to/full/x");
	make_outside();
	_cleanup_free_ char *from = tmp_path("from"), *to = tmp_path("to"), *outside = tmp_path("outside");
	_cleanup_free_ char *link = tmp_path("to/link");
	CHECK(symlink(outside, link) == 0);
	int ffd = open(from, O_PATH | O_DIRECTORY | O_CLOEXEC), tfd = open(to, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct err e = ERR_INIT;
	CHECK_INT(fs_move_at(ffd, "a", tfd, "new", "to/new", &e), 0);
	CHECK_INT(fs_move_at(ffd, "b", tfd, "empty", "to/empty", &e), 0);
	CHECK_INT(fs_move_at(ffd, "c", tfd, "full", "to/full", &e), -1);
	CHECK_STR(e.code, E_ALREADY_EXISTS);
	err_clear(&e);
	CHECK_INT(fs_move_at(ffd, "c", tfd, "link", "to/link", &e), -1);
	CHECK_STR(e.code, E_ALREADY_EXISTS);
	err_clear(&e);
	CHECK(outside_intact());
	struct stat st;
	CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	close(ffd);
	close(tfd);
}

TEST(fs_private_dir_at_and_fs_write_at)
{
	int dfd = open(unit_tmpdir(), O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct err e = ERR_INIT;
	char *name = NULL, *path = NULL;
	int fd = fs_private_dir_at(dfd, unit_tmpdir(), ".stage-", &name, &path, &e);
	CHECK(fd >= 0);
	struct stat st;
	CHECK(fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0700);
	CHECK(!strncmp(name, ".stage-", 7) && strlen(name) == 7 + 16);
	CHECK_INT(fs_write_at(fd, "f", "one", 3, 0640, path, &e), 0);
	CHECK_INT(fs_write_at(fd, "f", "two", 3, 0640, path, &e), 0);
	_cleanup_free_ char *f = xasprintf("%s/f", path);
	CHECK(stat(f, &st) == 0 && st.st_size == 3 && (st.st_mode & 0777) == 0640);
	CHECK_INT(fs_dir_is_empty_at(dfd, name), 0);
	CHECK(unlink(f) == 0);
	CHECK_INT(fs_dir_is_empty_at(dfd, name), 1);
	close(fd);
	close(dfd);
	free(name);
	free(path);
	err_clear(&e);
}

/* A staging directory whose maker was killed -9 (its flock free) goes with the next one made there; one in use, a
 * planted link of the same prefix and other names stay, and nothing is followed. */
TEST(fs_private_dir_at_sweeps_stale_staging_only)
{
	make_outside();
	mkdirs("stage/.stage-stale/deep");
	mkdirs("stage/.other-keep");
	_cleanup_free_ char *stage = tmp_path("stage"), *outside = tmp_path("outside");
	_cleanup_free_ char *link = tmp_path("stage/.stage-link"), *stale = tmp_path("stage/.stage-stale");
	_cleanup_free_ char *other = tmp_path("stage/.other-keep");
	CHECK(symlink(outside, link) == 0);
	int dfd = open(stage, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct err e = ERR_INIT;
	char *live_name = NULL, *live_path = NULL, *name = NULL, *path = NULL;
	int live = fs_private_dir_at(dfd, stage, ".stage-", &live_name, &live_path, &e);
	CHECK(live >= 0);
	CHECK(!fs_exists(stale));
	mkdirs("stage/.stage-stale2");
	int fd = fs_private_dir_at(dfd, stage, ".stage-", &name, &path, &e);
	CHECK(fd >= 0);
	_cleanup_free_ char *stale2 = tmp_path("stage/.stage-stale2");
	CHECK(!fs_exists(stale2));
	CHECK(fs_exists(live_path)); /* locked by live: in use */
	CHECK(fs_exists(link) && outside_intact() && fs_exists(other));
	close(fd);
	close(live);
	close(dfd);
	free(live_name);
	free(live_path);
	free(name);
	free(path);
	err_clear(&e);
}

TEST(confine_hold_holds_the_parent_and_refuses_links_and_the_root)
{
	make_outside();
	mkdirs("root/a");
	_cleanup_free_ char *root = tmp_path("root"), *outside = tmp_path("outside"), *link = tmp_path("root/link");
	CHECK(symlink(outside, link) == 0);
	struct confined_path held;
	struct err e = ERR_INIT;
	CHECK_INT(confine_hold(root, "a/b/c/d.git", 1, &held, &e), 0);
	CHECK_STR(held.name, "d.git");
	_cleanup_free_ char *made = tmp_path("root/a/b/c");
	CHECK(fs_exists(made));
	CHECK_CONTAINS(held.path, "/root/a/b/c/d.git");
	CHECK(mkdirat(held.parent_fd, held.name, 0755) == 0);
	confined_path_release(&held);
	CHECK_INT(confine_hold(root, "link/x.git", 1, &held, &e), -1);
	CHECK_STR(e.code, E_PATH_OUTSIDE_DATA_HOME);
	err_clear(&e);
	CHECK_INT(confine_hold(root, "../x.git", 1, &held, &e), -1);
	CHECK_STR(e.code, E_PATH_OUTSIDE_DATA_HOME);
	err_clear(&e);
	CHECK_INT(confine_hold(root, ".", 1, &held, &e), -1);
	CHECK_STR(e.code, E_INVALID_PAYLOAD);
	err_clear(&e);
	CHECK_INT(confine_hold(root, "missing/x.git", 0, &held, &e), -1);
	CHECK_STR(e.code, E_NOT_FOUND);
	err_clear(&e);
	_cleanup_free_ char *none = tmp_path("outside/x.git");
	CHECK(!fs_exists(none));
	CHECK(outside_intact());
}

/* confine_path's result is canonical whichever way it was found: lexically when nothing on the way is a symlink (no
 * read-back through /proc), read back from the descriptor when a root or a component is one. */
TEST(confine_path_gives_the_canonical_path_with_and_without_links)
{
	make_outside();
	mkdirs("croot/a/b");
	_cleanup_free_ char *root = tmp_path("croot"), *alias = tmp_path("calias"), *slashed = tmp_path("croot//");
	_cleanup_free_ char *inner = tmp_path("croot/lnk"), *out = tmp_path("croot/out"),
			    *outside = tmp_path("outside");
	CHECK(symlink(root, alias) == 0); /* a root reached through a symlink */
	CHECK(symlink("a", inner) == 0);  /* a link that stays beneath the root */
	CHECK(symlink(outside, out) == 0);
	char canonical[PATH_MAX];
	CHECK(realpath(root, canonical) != NULL);
	_cleanup_free_ char *want = xasprintf("%s/a/b", canonical), *deeper = xasprintf("%s/a/b/new/deeper", canonical);
	_cleanup_free_ char *via_alias = xasprintf("%s/a/b", alias);
	const struct {
		const char *root, *path, *want;
	} found[] = {
		{ root, "a/b", want },	      { root, "./a//b/", want },
		{ root, "a/../a/b/.", want }, { slashed, "a/b", want },
		{ alias, "a/b", want },	      { root, "lnk/b", want },
		{ alias, "lnk/./b", want },   { root, want, want },
		{ alias, via_alias, want },   { root, "a/b/new/deeper", deeper },
		{ root, ".", canonical },
	};
	struct err e = ERR_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(found); i++) {
		char *got = NULL;
		CHECK_INT(confine_path(found[i].root, found[i].path, 0, &got, &e), 0);
		CHECK_STR(got ? got : "(none)", found[i].want);
		free(got);
		err_clear(&e);
	}
	const struct {
		const char *path, *code;
		int must_exist;
	} refused[] = {
		{ "out/keep.txt", E_PATH_OUTSIDE_DATA_HOME, 0 },
		{ "a/../../x", E_PATH_OUTSIDE_DATA_HOME, 0 },
		{ "lnk/../../x", E_PATH_OUTSIDE_DATA_HOME, 0 },
		{ "a/missing", E_NOT_FOUND, 1 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		char *got = NULL;
		CHECK_INT(confine_path(root, refused[i].path, refused[i].must_exist, &got, &e), -1);
		CHECK_STR(e.code ? e.code : "(none)", refused[i].code);
		CHECK(got == NULL);
		err_clear(&e);
	}
	CHECK(outside_intact());
}

/* fs_canonical: lexical for a path without a symlink, realpath's through one, tidied when nothing resolves. */
TEST(fs_canonical_is_lexical_without_links_and_real_through_them)
{
	mkdirs("canon/a/b");
	_cleanup_free_ char *dir = tmp_path("canon"), *alias = tmp_path("canon-alias");
	CHECK(symlink(dir, alias) == 0);
	char real[PATH_MAX];
	CHECK(realpath(dir, real) != NULL);
	_cleanup_free_ char *want = xasprintf("%s/a/b", real), *missing = xasprintf("%s//none/x/", real);
	const char *const same[] = { "/a/b", "//a/./b/", "/a/../a/b", "/a/b/." };
	for (size_t i = 0; i < ARRAY_SIZE(same); i++) {
		_cleanup_free_ char *given = xasprintf("%s%s", real, same[i]), *got = fs_canonical(given);
		CHECK_STR(got, want);
	}
	_cleanup_free_ char *through = xasprintf("%s/a/../a/b", alias), *got = fs_canonical(through);
	CHECK_STR(got, want); /* the link resolved, and ".." after it physically */
	_cleanup_free_ char *none = fs_canonical(missing), *want_none = xasprintf("%s/none/x", real);
	CHECK_STR(none, want_none);
	const struct {
		const char *base, *path, *want;
	} joins[] = {
		{ "/", "a/../../b", "/b" }, { "/x/", "./y//z/..", "/x/y" }, { "/x", "", "/x" }, { "/", "..", "/" }
	};
	for (size_t i = 0; i < ARRAY_SIZE(joins); i++) {
		_cleanup_free_ char *joined = fs_lexical_join(joins[i].base, joins[i].path);
		CHECK_STR(joined, joins[i].want);
	}
}

/* fs_dir reads what readdir reads, over several buffers of entries, without "." and "..". */
TEST(fs_dir_lists_every_entry_like_readdir)
{
	mkdirs("many");
	_cleanup_free_ char *dir = tmp_path("many");
	for (int i = 0; i < 300; i++) {
		_cleanup_free_ char *f = xasprintf("%s/entry-with-a-rather-long-name-%03d", dir, i);
		write_file(f, "x");
	}
	struct fs_dir d;
	CHECK_INT(fs_dir_start(&d, open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)), 0);
	int seen[300] = { 0 }, total = 0, others = 0, n;
	for (struct dirent *de; (de = fs_dir_next(&d)); total++)
		if (sscanf(de->d_name, "entry-with-a-rather-long-name-%3d", &n) == 1 && n >= 0 && n < 300 &&
		    de->d_type == DT_REG)
			seen[n]++;
		else
			others++;
	CHECK_INT(errno, 0);
	fs_dir_end(&d);
	CHECK_INT(total, 300);
	CHECK_INT(others, 0);
	for (int i = 0; i < 300; i++)
		CHECK_INT(seen[i], 1);
	errno = 0;
	CHECK_INT(fs_dir_start(&d, -1), -1);
	CHECK(fs_dir_start(&d, open(dir, O_RDONLY | O_CLOEXEC | O_PATH)) == 0 && !fs_dir_next(&d) && errno == EBADF);
	fs_dir_end(&d);
}

TEST(fs_path_is_or_below_compares_whole_components)
{
	CHECK(fs_path_is_or_below("/srv/agor", "/srv/agor"));
	CHECK(fs_path_is_or_below("/srv/agor/repos", "/srv/agor"));
	CHECK(!fs_path_is_or_below("/srv/agor2", "/srv/agor")); /* a sibling sharing the prefix is not below */
	CHECK(!fs_path_is_or_below("/srv", "/srv/agor"));
	CHECK(fs_path_is_or_below("/anything", "/"));
}
