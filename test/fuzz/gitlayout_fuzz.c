/* gitlayout_fuzz.c — libFuzzer target over git_layout_find, which reads files a sandboxed agent can write: the
 * worktree's .git and the admin directory's gitdir and commondir. A data home with one repository R (with its
 * worktree entry W) and one repository outside it is made once; the input, cut at NUL bytes, becomes W/.git,
 * A/gitdir and A/commondir, each "$B" in them standing for the data home's path (so that seeds name it). Invariants: a
 * refusal has a message; with the daemon's record of R, only R is ever accepted; without it, whatever is accepted is R
 * itself once resolved, and the admin directory is R's entry for W — never a directory outside repos/, never another
 * repository's. */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ftw.h>

#include "config.h"
#include "gitlayout.h"
#include "strbuf.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* tmpfs when there is one: ext4 flushes a file truncated and rewritten at close, a wait per input on /tmp. */
static const char *scratch_dir(void)
{
	struct stat st;
	return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

static char base[PATH_MAX], repo[PATH_MAX + 32], admin_dir[PATH_MAX + 64], worktree[PATH_MAX + 32];
static struct config *cfg;

static void make_dirs(const char *const *rel)
{
	char path[PATH_MAX + 64];
	for (; *rel; rel++) {
		snprintf(path, sizeof(path), "%s/%s", base, *rel);
		if (mkdir(path, 0755) < 0)
			abort();
	}
}

/* text with each "$B" replaced by base, written to path. */
static void put(const char *path, const char *text, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '$' && i + 1 < len && text[i + 1] == 'B') {
			strbuf_addstr(&sb, base);
			i++;
		} else {
			strbuf_addch(&sb, text[i]);
		}
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, sb.buf, sb.len) != (ssize_t)sb.len)
		abort();
	close(fd);
	strbuf_release(&sb);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void clean_up(void)
{
	nftw(base, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void set_up(void)
{
	snprintf(base, sizeof(base), "%s/agor-gitlayout-fuzz-%d", scratch_dir(), (int)getpid());
	if (mkdir(base, 0755) < 0 || !realpath(base, base))
		abort();
	atexit(clean_up);
	make_dirs((const char *const[]){ "repos", "repos/r.git", "repos/r.git/worktrees", "repos/r.git/worktrees/w",
					 "repos/r.git/objects", "worktrees", "worktrees/w", "outside", "outside/o.git",
					 "outside/o.git/worktrees", "outside/o.git/worktrees/w", NULL });
	snprintf(repo, sizeof(repo), "%s/repos/r.git", base);
	snprintf(admin_dir, sizeof(admin_dir), "%s/worktrees/w", repo);
	snprintf(worktree, sizeof(worktree), "%s/worktrees/w", base);
	char *const env[] = { (char *)"HOME=/nonexistent", NULL };
	struct config_overrides ov = { .env = env };
	struct err e = ERR_INIT;
	char repos[PATH_MAX + 16], worktrees[PATH_MAX + 16];
	snprintf(repos, sizeof(repos), "%s/repos", base);
	snprintf(worktrees, sizeof(worktrees), "%s/worktrees", base);
	cfg = config_new();
	if (config_set_flag(cfg, "paths.agor_home", base, &e) < 0 ||
	    config_set_flag(cfg, "paths.repos_dir", repos, &e) < 0 ||
	    config_set_flag(cfg, "paths.worktrees_dir", worktrees, &e) < 0 || config_load(cfg, &ov, &e) < 0)
		abort();
}

/* What was accepted is R's entry for W, however it was spelled. */
static void check_accepted(const struct git_layout *l)
{
	char common[PATH_MAX], admin[PATH_MAX];
	if (!l->common)
		return; /* no .git: no layout */
	if (!realpath(l->common, common) || strcmp(common, repo) || !realpath(l->admin, admin) ||
	    strcmp(admin, admin_dir))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!cfg)
		set_up();
	if (size > 8192)
		return 0;
	const char *parts[3] = { "", "", "" };
	size_t lens[3] = { 0, 0, 0 }, n = 0;
	for (size_t off = 0; off <= size && n < 3; n++) {
		const char *nul = memchr(data + off, 0, size - off);
		parts[n] = (const char *)data + off;
		lens[n] = nul ? (size_t)(nul - parts[n]) : size - off;
		off += lens[n] + 1;
	}
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/.git", worktree);
	put(path, parts[0], lens[0]);
	snprintf(path, sizeof(path), "%s/gitdir", admin_dir);
	put(path, parts[1], lens[1]);
	snprintf(path, sizeof(path), "%s/commondir", admin_dir);
	put(path, parts[2], lens[2]);
	for (int with_record = 0; with_record < 2; with_record++) {
		struct git_layout l;
		struct err e = ERR_INIT;
		if (git_layout_find(cfg, worktree, with_record ? repo : NULL, 0, &l, &e) == 0) {
			check_accepted(&l);
			if (with_record && l.common && strcmp(l.common, repo))
				abort();
		} else if (!e.message) {
			abort();
		}
		err_clear(&e);
		git_layout_release(&l);
	}
	return 0;
}
