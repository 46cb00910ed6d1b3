/* deny_syscall.c — test helper: runs a command with one system call made to fail with a given errno.
 * Usage: deny-syscall NR ERRNO -- COMMAND [ARG…]; simulates kernels without Landlock or user namespaces. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 5 || strcmp(argv[3], "--")) {
		fprintf(stderr, "usage: deny-syscall NR ERRNO -- COMMAND [ARG…]\n");
		return 2;
	}
	unsigned nr = (unsigned)atoi(argv[1]), errnum = (unsigned)atoi(argv[2]);
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | errnum),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(insns) / sizeof(insns[0]), insns };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("deny-syscall: seccomp");
		return 1;
	}
	execvp(argv[4], argv + 4);
	perror(argv[4]);
	return 127;
}
