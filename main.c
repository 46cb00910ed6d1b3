/* main.c — the multi-call dispatcher: one sorted applet table, lookup by argv[0] then argv[1],
 * the global flags (--list, --install, --version, --help) and the central privilege check. No applet logic. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <jansson.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "applets/applet.h"
#include "lib/log.h"
#include "lib/strbuf.h"
#include "lib/version.h"
#include "lib/banned.h"

extern const struct applet applet_admin, applet_apikey, applet_approvals, applet_audit, applet_completion,
	applet_config, applet_daemon, applet_exec, applet_executor, applet_node, applet_nodes, applet_prompt,
	applet_repo, applet_session, applet_setup, applet_task, applet_terminal, applet_user, applet_worktree;

/* Sorted by name: lookup is a binary search, and main() checks the order. */
static const struct applet *const applets[] = {
	&applet_admin,	&applet_apikey,	  &applet_approvals, &applet_audit,    &applet_completion,
	&applet_config, &applet_daemon,	  &applet_exec,	     &applet_executor, &applet_node,
	&applet_nodes,	&applet_prompt,	  &applet_repo,	     &applet_session,  &applet_setup,
	&applet_task,	&applet_terminal, &applet_user,	     &applet_worktree,
};

const struct applet *const *applet_table(unsigned *n)
{
	*n = ARRAY_SIZE(applets);
	return applets;
}

static int compare_name(const void *key, const void *elem)
{
	return strcmp(key, (*(const struct applet *const *)elem)->name);
}

static const struct applet *find_applet(const char *name)
{
	const struct applet *const *found =
		bsearch(name, applets, ARRAY_SIZE(applets), sizeof(applets[0]), compare_name);
	return found ? *found : NULL;
}

static int table_is_sorted(void)
{
	for (size_t i = 1; i < ARRAY_SIZE(applets); i++)
		if (strcmp(applets[i - 1]->name, applets[i]->name) >= 0)
			return 0;
	return 1;
}

static void print_main_usage(FILE *out)
{
	fprintf(out, "Usage: agor APPLET [ARGS…]   (or run a link named agor-APPLET / APPLET)\n"
		     "       agor --list [--verbose] | --install [-s] DIR | --version | --help\n\n"
		     "Applets:\n");
	for (size_t i = 0; i < ARRAY_SIZE(applets); i++)
		fprintf(out, "  %-10s %s\n", applets[i]->name, applets[i]->summary);
	fprintf(out, "\nRun 'agor APPLET --help' for an applet's usage.\n");
}

static int run_list(int argc, char **argv)
{
	int verbose = argc == 3 && !strcmp(argv[2], "--verbose");
	if (argc > 3 || (argc == 3 && !verbose)) {
		fprintf(stderr, "agor: usage: agor --list [--verbose]\n");
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < ARRAY_SIZE(applets); i++) {
		const struct applet *a = applets[i];
		if (!verbose) {
			printf("%s\n", a->name);
			continue;
		}
		/* every registered applet is built: the column stays for the documented --list --verbose format */
		printf("%-10s %-10s %-10s %s\n", a->name, "built",
		       (a->flags & APPLET_ROOT_ONLY) ? "root-only" : "any-user", a->summary);
	}
	return EXIT_OK;
}

static int run_version(void)
{
	struct strbuf sb = STRBUF_INIT;
	version_describe(&sb);
	fputs(sb.buf, stdout);
	strbuf_release(&sb);
	return EXIT_OK;
}

/* The absolute path of this executable: /proc/self/exe, else argv[0] resolved. */
static char *self_path(const char *argv0)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		return xstrdup(buf);
	}
	if (strchr(argv0, '/') && realpath(argv0, buf))
		return xstrdup(buf);
	return NULL;
}

/* True when path already is the wanted link (same inode, or a symlink to target). */
static int link_is_current(const char *path, const char *target, int symbolic)
{
	struct stat want, have;
	if (lstat(path, &have) < 0 || stat(target, &want) < 0)
		return 0;
	if (!symbolic)
		return !S_ISLNK(have.st_mode) && have.st_dev == want.st_dev && have.st_ino == want.st_ino;
	char buf[PATH_MAX];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return !strcmp(buf, target);
}

/* Creates dir/agor-NAME atomically (temporary name, then rename over any stale entry). */
static int install_link(const char *dir, const char *name, const char *target, int symbolic)
{
	char *path = xasprintf("%s/agor-%s", dir, name);
	char *tmp = xasprintf("%s/.agor-%s.tmp.%d", dir, name, (int)getpid());
	int rc = 0;
	if (!link_is_current(path, target, symbolic)) {
		unlink(tmp);
		if ((symbolic ? symlink(target, tmp) : link(target, tmp)) < 0 || rename(tmp, path) < 0) {
			fprintf(stderr, "agor: --install: cannot create %s: %s\n", path, strerror(errno));
			unlink(tmp);
			rc = -1;
		}
	}
	free(path);
	free(tmp);
	return rc;
}

static int run_install(int argc, char **argv)
{
	int symbolic = argc == 4 && !strcmp(argv[2], "-s");
	if (argc != 3 + symbolic || argv[argc - 1][0] == '-') {
		fprintf(stderr, "agor: usage: agor --install [-s] DIR\n");
		return EXIT_USAGE;
	}
	const char *dir = argv[argc - 1];
	struct stat st;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "agor: --install: %s is not a directory\n", dir);
		return EXIT_FAILED;
	}
	char *target = self_path(argv[0]);
	if (!target) {
		fprintf(stderr, "agor: --install: cannot find this executable's path\n");
		return EXIT_FAILED;
	}
	int failed = 0;
	for (size_t i = 0; i < ARRAY_SIZE(applets); i++)
		failed |= install_link(dir, applets[i]->name, target, symbolic) < 0;
	free(target);
	return failed ? EXIT_FAILED : EXIT_OK;
}

static int run_applet(const struct applet *a, int argc, char **argv)
{
	argv[0] = (char *)a->name;
	if (applet_command_help(a, argc, argv))
		return EXIT_OK;
	if (applet_wants_help(a, argc, argv)) {
		fputs(a->usage, stdout);
		return EXIT_OK;
	}
	if ((a->flags & APPLET_ROOT_ONLY) && geteuid() != 0) {
		fprintf(stderr, "agor %s: must run as root (operators reach it through 'sudo -n agor %s …')\n", a->name,
			a->name);
		return EXIT_FAILED;
	}
	log_init(a->name);
	return a->main(argc, argv);
}

static int run_global_flag(int argc, char **argv)
{
	const char *flag = argv[1];
	if (!strcmp(flag, "--list"))
		return run_list(argc, argv);
	if (!strcmp(flag, "--install"))
		return run_install(argc, argv);
	if (!strcmp(flag, "--version") && argc == 2)
		return run_version();
	if ((!strcmp(flag, "--help") || !strcmp(flag, "-h")) && argc == 2) {
		print_main_usage(stdout);
		return EXIT_OK;
	}
	fprintf(stderr, "agor: unknown option '%s'\n\n", flag);
	print_main_usage(stderr);
	return EXIT_USAGE;
}

/* The applet a link name selects: "agor-NAME" or "NAME"; NULL when the name is not a link name. */
static const struct applet *applet_from_program_name(const char *argv0, int *unknown)
{
	const char *base = strrchr(argv0, '/');
	base = base ? base + 1 : argv0;
	*unknown = 0;
	if (!strncmp(base, "agor-", 5)) {
		const struct applet *a = find_applet(base + 5);
		*unknown = !a;
		return a;
	}
	return find_applet(base);
}

/* A process started with fd 0, 1 or 2 closed would hand its next open() to a standard stream
 * (and a result line to a file it opened): fill any gap with /dev/null first. */
static void ensure_standard_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		int opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (opened >= 0 && opened != fd)
			close(opened);
	}
}

/* jansson's hash seed (against collision floods) from getrandom: without it jansson opens, reads and
 * closes /dev/urandom on the first object of every run — three system calls, and a device an empty
 * container may not have. If getrandom fails, jansson seeds itself as before. */
static void seed_json_hashes(void)
{
	uint32_t seed;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
		json_object_seed(seed);
}

int main(int argc, char **argv)
{
	ensure_standard_fds();
	seed_json_hashes();
	if (!table_is_sorted()) {
		fprintf(stderr, "agor: internal error: applet table is not sorted\n");
		return EXIT_FAILED;
	}
	if (argc < 1)
		return EXIT_USAGE;
	int unknown;
	const struct applet *a = applet_from_program_name(argv[0], &unknown);
	if (unknown) {
		fprintf(stderr, "agor: unknown applet '%s' (see 'agor --list')\n", argv[0]);
		return EXIT_UNKNOWN_APPLET;
	}
	if (a)
		return run_applet(a, argc, argv);
	if (argc < 2) {
		print_main_usage(stderr);
		return EXIT_USAGE;
	}
	if (argv[1][0] == '-')
		return run_global_flag(argc, argv);
	a = find_applet(argv[1]);
	if (!a) {
		fprintf(stderr, "agor: unknown applet '%s' (see 'agor --list')\n", argv[1]);
		return EXIT_UNKNOWN_APPLET;
	}
	return run_applet(a, argc - 1, argv + 1);
}
