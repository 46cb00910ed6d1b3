/* test_sandbox.c — unit tests of the sandbox layers: the seccomp filter (escapes, setuid modes) and Landlock rules
 * (the data rule too) applied in a forked child (each check is an attempt that must fail), lossy JSON strings. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "landlock.h"
#include "seccomp.h"
#include "unit.h"
#include "banned.h"

/* Runs fn in a forked child; returns its exit status (fn returns it). */
static int in_child(int (*fn)(void))
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn());
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

static int errno_of(long rc)
{
	return rc < 0 ? errno : 0;
}

static int filtered_calls(void)
{
	struct seccomp_filter f;
	if (seccomp_filter_build(&f) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    seccomp_filter_install(&f) < 0)
		return 1;
	if (errno_of(syscall(SYS_ptrace, 0 /* TRACEME */, 0, 0, 0)) != EPERM)
		return 2;
	if (errno_of(syscall(SYS_bpf, 0, 0, 0)) != EPERM)
		return 3;
	if (errno_of(syscall(SYS_unshare, CLONE_NEWUSER)) != EPERM)
		return 4;
	if (errno_of(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)) != EPERM)
		return 5;
	if (errno_of(syscall(SYS_clone3, NULL, 0)) != ENOSYS)
		return 6;
	if (errno_of(socket(AF_NETLINK, SOCK_RAW, 0)) != EAFNOSUPPORT)
		return 7;
	if (errno_of(ioctl(0, 0x5412 /* TIOCSTI */, "x")) != EPERM)
		return 8;
	if (errno_of(syscall(SYS_mount, "none", "/", "tmpfs", 0, NULL)) != EPERM)
		return 9;
	if (errno_of(syscall(0x40000000 | 39 /* x32 getpid */)) != EPERM)
		return 10;
	/* what programs need still works */
	int sv[2];
	if (getpid() <= 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 || syscall(SYS_unshare, CLONE_FILES) < 0)
		return 11;
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int status;
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? 0 : 12;
}

TEST(seccomp_filter_denies_escapes_and_allows_ordinary_calls)
{
	CHECK_INT(in_child(filtered_calls), 0);
}

TEST(seccomp_filter_is_straight_line_and_ends_by_allowing)
{
	struct seccomp_filter f;
	CHECK_INT(seccomp_filter_build(&f), 0);
	CHECK(f.len > 40 && f.len <= SECCOMP_MAX_INSNS);
	CHECK_INT(f.insn[f.len - 1].code, 0x06); /* BPF_RET | BPF_K */
	CHECK_INT(f.insn[f.len - 1].k, 0x7fff0000U);
	CHECK_STR(seccomp_denied_names()[0], "ptrace");
}

static char scratch[256];

static int landlocked_reads(void)
{
	struct landlock_plan plan;
	int abi = landlock_abi();
	if (abi < 1)
		return 100; /* reported as a failure below: this kernel should have Landlock */
	landlock_plan_init(&plan, abi, 1, 0);
	landlock_plan_add(&plan, "/usr", LANDLOCK_READ);
	landlock_plan_add(&plan, scratch, LANDLOCK_WRITE);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || landlock_apply(&plan) < 0)
		return 1;
	if (open("/usr/bin/env", O_RDONLY | O_CLOEXEC) < 0)
		return 2;
	if (open("/etc/passwd", O_RDONLY | O_CLOEXEC) >= 0 || errno != EACCES)
		return 3;
	if (open("/usr/agor-unit-x", O_WRONLY | O_CREAT | O_CLOEXEC, 0600) >= 0)
		return 4;
	char path[300];
	snprintf(path, sizeof(path), "%s/made", scratch);
	if (open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) < 0)
		return 5;
	return 0;
}

TEST(landlock_rules_grant_only_what_they_name)
{
	snprintf(scratch, sizeof(scratch), "%s", unit_tmpdir());
	CHECK_INT(in_child(landlocked_reads), 0);
}

/* A git object store's rule (LANDLOCK_DATA): files and directories may be made, a symlink or a fifo may not. */
static int landlocked_data(void)
{
	struct landlock_plan plan;
	int abi = landlock_abi();
	if (abi < 1)
		return 100;
	char dir[300], path[320];
	snprintf(dir, sizeof(dir), "%s/objects", scratch);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return 1;
	landlock_plan_init(&plan, abi, 1, 0);
	landlock_plan_add(&plan, dir, LANDLOCK_DATA);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || landlock_apply(&plan) < 0)
		return 2;
	snprintf(path, sizeof(path), "%s/ab", dir);
	if (mkdir(path, 0755) < 0)
		return 3;
	snprintf(path, sizeof(path), "%s/ab/cdef", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
	if (fd < 0)
		return 4;
	close(fd);
	snprintf(path, sizeof(path), "%s/evil", dir);
	if (symlink("/etc", path) == 0 || errno != EACCES)
		return 5;
	snprintf(path, sizeof(path), "%s/fifo", dir);
	if (mkfifo(path, 0600) == 0 || errno != EACCES)
		return 6;
	return 0;
}

TEST(landlock_data_rule_refuses_symlinks_and_special_files)
{
	snprintf(scratch, sizeof(scratch), "%s", unit_tmpdir());
	CHECK_INT(in_child(landlocked_data), 0);
}

/* setuid and setgid modes are refused wherever a mode is set; ordinary modes are not. */
static int filtered_modes(void)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/mode-file", scratch);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
	if (fd < 0)
		return 1;
	struct seccomp_filter f;
	if (seccomp_filter_build(&f) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    seccomp_filter_install(&f) < 0)
		return 2;
	if (errno_of(chmod(path, 04755)) != EPERM || errno_of(fchmod(fd, 02755)) != EPERM ||
	    errno_of(fchmodat(AT_FDCWD, path, 06755, 0)) != EPERM)
		return 3;
	if (chmod(path, 0700) < 0 || fchmod(fd, 0644) < 0)
		return 4;
	char other[320];
	snprintf(other, sizeof(other), "%s/mode-other", scratch);
	if (errno_of(syscall(SYS_open, other, O_WRONLY | O_CREAT, 04755)) != EPERM ||
	    errno_of(syscall(SYS_openat, AT_FDCWD, other, O_WRONLY | O_CREAT, 02755)) != EPERM ||
	    errno_of(syscall(SYS_creat, other, 04700)) != EPERM ||
	    errno_of(syscall(SYS_mknodat, AT_FDCWD, other, S_IFREG | 04755, 0)) != EPERM)
		return 5;
	if (errno_of(syscall(SYS_openat2, AT_FDCWD, other, NULL, 0)) != ENOSYS)
		return 6;
	int ok = (int)syscall(SYS_openat, AT_FDCWD, other, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	return ok >= 0 ? 0 : 7;
}

TEST(seccomp_filter_refuses_setuid_and_setgid_modes)
{
	snprintf(scratch, sizeof(scratch), "%s", unit_tmpdir());
	CHECK_INT(in_child(filtered_modes), 0);
}

TEST(landlock_receipt_lists_rights_and_scopes_by_abi)
{
	struct landlock_plan plan;
	landlock_plan_init(&plan, 6, 1, 0);
	landlock_plan_add(&plan, "/usr", LANDLOCK_READ);
	json_t *r = landlock_receipt(&plan);
	CHECK_INT(json_integer_value(json_object_get(r, "abi")), 6);
	CHECK_STR(json_string_value(json_object_get(r, "tcp")), "bind and connect denied");
	CHECK_INT(json_array_size(json_object_get(r, "scoped")), 2);
	CHECK_INT(json_array_size(json_object_get(r, "handledFs")), 16); /* ABI 5+: 13 + refer, truncate, ioctl_dev */
	json_decref(r);
	landlock_plan_init(&plan, 3, 0, 0);
	r = landlock_receipt(&plan);
	CHECK_STR(json_string_value(json_object_get(r, "tcp")), "not restricted");
	CHECK_INT(json_array_size(json_object_get(r, "handledFs")), 15); /* ABI 3: no ioctl_dev */
	json_decref(r);
}

TEST(json_string_lossy_keeps_utf8_and_replaces_bad_bytes)
{
	json_t *j = json_string_lossy("h\xc3\xa9llo", 6);
	CHECK_STR(json_string_value(j), "h\xc3\xa9llo");
	json_decref(j);
	j = json_string_lossy("a\xff"
			      "b\xed\xa0\x80"
			      "c\xc0\xaf",
			      10);
	CHECK_STR(json_string_value(j), "a\xef\xbf\xbd"
					"b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
					"c\xef\xbf\xbd\xef\xbf\xbd");
	json_decref(j);
	j = json_string_lossy("x\0y", 3);
	CHECK_INT(json_string_length(j), 3);
	json_decref(j);
}
