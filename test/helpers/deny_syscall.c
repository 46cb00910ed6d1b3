/* deny_syscall.c — test helper: runs a command with system calls made to fail with a given errno.
 * Usage: deny-syscall NR[,NR…] ERRNO [MASK] -- COMMAND [ARG…]; simulates kernels without Landlock or user namespaces.
 */
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

#define MAX_NRS 8

/* With MASK, only calls whose first argument has one of MASK's bits set fail (e.g. CLONE_NEWUSER
 * for clone and unshare); without it, every call fails. */
int main(int argc, char **argv)
{
	int dash = argc > 4 && !strcmp(argv[3], "--") ? 3 : argc > 5 && !strcmp(argv[4], "--") ? 4 : 0;
	if (!dash) {
		fprintf(stderr, "usage: deny-syscall NR[,NR…] ERRNO [MASK] -- COMMAND [ARG…]\n");
		return 2;
	}
	unsigned nrs[MAX_NRS], n = 0, errnum = (unsigned)atoi(argv[2]);
	unsigned mask = dash == 4 ? (unsigned)strtoul(argv[3], NULL, 0) : 0;
	for (char *p = argv[1]; *p && n < MAX_NRS; p += *p == ',')
		nrs[n++] = (unsigned)strtoul(p, &p, 10);
	struct sock_filter insns[MAX_NRS + 6];
	unsigned k = 0;
	insns[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (unsigned i = 0; i < n; i++) /* a match jumps to the argument check; none falls to ALLOW */
		insns[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nrs[i], (unsigned char)(n - i), 0);
	insns[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	if (mask) {
		insns[k++] =
			(struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
		insns[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 1, 0);
		insns[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	insns[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | errnum);
	struct sock_fprog prog = { (unsigned short)k, insns };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("deny-syscall: seccomp");
		return 1;
	}
	execvp(argv[dash + 1], argv + dash + 1);
	perror(argv[dash + 1]);
	return 127;
}
