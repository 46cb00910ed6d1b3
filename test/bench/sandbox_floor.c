/* sandbox_floor.c — benchmark helper: what this machine's kernel alone charges for a sandbox of lib/sandbox's
 * shape, as the floor under test/bench/sandbox's overhead. Per run: a raw clone into the same six namespaces,
 * the id maps, a tmpfs root (pivot_root) holding only /usr, its symlinks, /etc/ld.so.cache, /proc and CWD,
 * then PID 1 starts the program (vfork-style) and mirrors its exit. No Landlock, seccomp, cgroup, /dev or
 * /etc view: those are lib/sandbox's own costs. Prints "median p90 p99" in µs; never asserts a time. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "samples.h"
#include "banned.h"

static char **program;
static const char *workdir;
static char uid_map[32], gid_map[32];

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* mkdir -p */
static int make_dirs(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;
		*p = 0;
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		if (!(*p = c))
			return 0;
	}
}

static int bind_at(const char *src, const char *dst, int is_dir, unsigned long extra)
{
	char from[4096];
	snprintf(from, sizeof(from), "/oldroot%s", src);
	if (is_dir ? make_dirs(dst) < 0 : mknod(dst, S_IFREG | 0644, 0) < 0)
		return -1;
	if (mount(from, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -1;
	return extra ? mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | extra, NULL) : 0;
}

/* The smallest root a dynamically linked program runs in. */
static int build_root(void)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0 || chdir("/tmp") < 0 ||
	    mkdir("oldroot", 0700) < 0 || syscall(SYS_pivot_root, ".", "oldroot") < 0 || chdir("/") < 0)
		return -1;
	if (bind_at("/usr", "/usr", 1, MS_RDONLY) < 0 || symlink("usr/bin", "/bin") < 0 ||
	    symlink("usr/lib", "/lib") < 0 || symlink("usr/lib64", "/lib64") < 0 || mkdir("/etc", 0755) < 0 ||
	    bind_at("/etc/ld.so.cache", "/etc/ld.so.cache", 0, MS_RDONLY) < 0 || bind_at(workdir, workdir, 1, 0) < 0 ||
	    mkdir("/proc", 0755) < 0 || mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -1;
	return umount2("/oldroot", MNT_DETACH) < 0 || rmdir("/oldroot") < 0 || chdir(workdir) < 0 ? -1 : 0;
}

static int program_entry(void *unused)
{
	(void)unused;
	execv(program[0], program);
	_exit(127);
}

/* PID 1 of the new namespaces. */
static void pid1(void)
{
	if (write_file("/proc/self/setgroups", "deny") < 0 || write_file("/proc/self/uid_map", uid_map) < 0 ||
	    write_file("/proc/self/gid_map", gid_map) < 0 || build_root() < 0)
		_exit(126);
	static char stack[16384] __attribute__((aligned(16)));
	pid_t pid = clone(program_entry, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	int status;
	while (pid > 0 && waitpid(-1, &status, 0) != pid)
		;
	_exit(pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 125);
}

static int run_once(unsigned long flags)
{
	pid_t pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		pid1();
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* usage: sandbox_floor N net|nonet CWD -- ARGV… (net: with a new network namespace, as network none) */
int main(int argc, char **argv)
{
	if (argc < 6 || strcmp(argv[4], "--") || argv[3][0] != '/') {
		fprintf(stderr, "usage: %s N net|nonet /ABSOLUTE-CWD -- ARGV…\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
	if (!strcmp(argv[2], "net"))
		flags |= CLONE_NEWNET;
	workdir = argv[3];
	program = argv + 5;
	snprintf(uid_map, sizeof(uid_map), "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
	snprintf(gid_map, sizeof(gid_map), "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
	double *samples = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		int rc = run_once(flags);
		if (rc != 0) {
			fprintf(stderr, "run %d: exit %d (126: setup failed, 127: exec failed)\n", i, rc);
			return 1;
		}
		samples[i] = now_us() - t0;
	}
	print_percentiles(samples, n);
	free(samples);
	return 0;
}
