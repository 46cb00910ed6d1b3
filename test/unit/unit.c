/* unit.c — runs every registered unit test in a forked child and prints "N passed, N failed".
 * Never lets one test's crash, exit or leftover state decide another test's result. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

#if defined(__SANITIZE_ADDRESS__)
int __lsan_do_recoverable_leak_check(void);
#endif
#include "banned.h"

struct unit_test {
	const char *name;
	const char *file;
	void (*fn)(void);
};

static struct unit_test tests[1024];
static size_t ntests;
static int failures_in_child;
static char tmpdir[256];

void unit_register(const char *name, void (*fn)(void), const char *file)
{
	if (ntests == sizeof(tests) / sizeof(tests[0]))
		abort();
	tests[ntests++] = (struct unit_test){ name, file, fn };
}

void unit_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "    %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failures_in_child++;
}

char *unit_hex(const void *bytes, size_t n)
{
	const unsigned char *b = bytes;
	char *s = malloc(2 * n + 1);
	if (!s)
		abort();
	for (size_t i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", b[i]);
	s[2 * n] = 0;
	return s;
}

const char *unit_tmpdir(void)
{
	return tmpdir;
}

static void remove_tree(const char *dir)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", dir, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static int run_one(const struct unit_test *t)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/unit-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 0;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		t->fn();
		fflush(NULL);
#if defined(__SANITIZE_ADDRESS__)
		/* _exit skips LeakSanitizer's exit-time check: run it here, so leaks fail the test */
		if (__lsan_do_recoverable_leak_check())
			failures_in_child++;
#endif
		_exit(failures_in_child ? 1 : 0);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	remove_tree(tmpdir);
	if (WIFSIGNALED(status))
		fprintf(stderr, "    killed by signal %d\n", WTERMSIG(status));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;
	for (size_t i = 0; i < ntests; i++) {
		if (only && !strstr(tests[i].name, only))
			continue;
		int ok = run_one(&tests[i]);
		printf("%s %s (%s)\n", ok ? "ok" : "FAIL", tests[i].name, tests[i].file);
		fflush(stdout);
		ok ? passed++ : failed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
