/* seccomp.c — generates and installs the sandbox's classic-BPF system-call filter (seccomp.h).
 * The program is straight-line: one comparison per rule, so what it denies reads off the tables. */
#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "seccomp.h"
#include "banned.h"

/* From linux/filter.h, linux/seccomp.h and linux/audit.h (not all toolchains carry them). */
#define BPF_LD			 0x00
#define BPF_JMP			 0x05
#define BPF_JA			 0x00
#define BPF_RET			 0x06
#define BPF_W			 0x00
#define BPF_ABS			 0x20
#define BPF_JEQ			 0x10
#define BPF_JGE			 0x30
#define BPF_JSET		 0x40
#define BPF_K			 0x00
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#define SECCOMP_RET_ERRNO	 0x00050000U
#define SECCOMP_RET_ALLOW	 0x7fff0000U
#define SECCOMP_MODE_FILTER	 2
#define AUDIT_ARCH_X86_64	 0xc000003eU
#define X32_SYSCALL_BIT		 0x40000000U

#define OFF_NR	      0
#define OFF_ARCH      4
#define OFF_ARG_LO(i) (16 + 8 * (i)) /* little-endian: the low 32 bits of args[i] */

#define CLONE_NAMESPACE_FLAGS                                                                                          \
	(0x00020000U /* NEWNS */ | 0x02000000U /* NEWCGROUP */ | 0x04000000U /* NEWUTS */ | 0x08000000U /* NEWIPC */ | \
	 0x10000000U /* NEWUSER */ | 0x20000000U /* NEWPID */ | 0x40000000U /* NEWNET */ | 0x00000080U /* NEWTIME */)

#define SETID_BITS 06000U /* S_ISUID | S_ISGID */

struct denied_call {
	const char *name;
	int nr;
};

#if defined(__x86_64__)
static const struct denied_call denied_calls[] = {
	{ "ptrace", 101 },
	{ "process_vm_readv", 310 },
	{ "process_vm_writev", 311 },
	{ "bpf", 321 },
	{ "perf_event_open", 298 },
	{ "userfaultfd", 323 },
	{ "keyctl", 250 },
	{ "add_key", 248 },
	{ "request_key", 249 },
	{ "mount", 165 },
	{ "umount2", 166 },
	{ "pivot_root", 155 },
	{ "chroot", 161 },
	{ "open_tree", 428 },
	{ "move_mount", 429 },
	{ "fsopen", 430 },
	{ "fsconfig", 431 },
	{ "fsmount", 432 },
	{ "fspick", 433 },
	{ "mount_setattr", 442 },
	{ "setns", 308 },
	{ "kexec_load", 246 },
	{ "kexec_file_load", 320 },
	{ "init_module", 175 },
	{ "finit_module", 313 },
	{ "delete_module", 176 },
	{ "io_uring_setup", 425 },
	{ "io_uring_enter", 426 },
	{ "io_uring_register", 427 },
	{ "acct", 163 },
	{ "swapon", 167 },
	{ "swapoff", 168 },
	{ "reboot", 169 },
	{ "iopl", 172 },
	{ "ioperm", 173 },
	{ "name_to_handle_at", 303 },
	{ "open_by_handle_at", 304 },
	{ "lookup_dcookie", 212 },
	{ "quotactl", 179 },
	{ "syslog", 103 },
};
#define NR_CLONE	 56
#define NR_CLONE3	 435
#define NR_UNSHARE	 272
#define NR_SOCKET	 41
#define NR_IOCTL	 16
#define NR_OPENAT2	 437
#define NR_FALLOCATE	 285
#define NR_PRCTL	 157
#define PR_SET_DUMPABLE_ 4
#define BUILD_ARCH	 AUDIT_ARCH_X86_64
/* Calls that set a file's mode, by the argument that holds it: S_ISUID and S_ISGID are refused there. */
static const int mode_in_arg1[] = { 90 /* chmod */, 91 /* fchmod */, 85 /* creat */, 133 /* mknod */, -1 };
static const int mode_in_arg2[] = { 268 /* fchmodat */, 452 /* fchmodat2 */, 2 /* open */, 259 /* mknodat */, -1 };
static const int mode_in_arg3[] = { 257 /* openat */, -1 };
#else
static const struct denied_call denied_calls[] = { { NULL, -1 } };
#endif

static const uint32_t denied_families[] = { 16 /* AF_NETLINK */, 17 /* AF_PACKET */, 40 /* AF_VSOCK */ };
static const uint32_t denied_ioctls[] = { 0x5412 /* TIOCSTI */, 0x541C /* TIOCLINUX */ };

static void emit(struct seccomp_filter *f, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	if (f->len < SECCOMP_MAX_INSNS)
		f->insn[f->len] = (struct seccomp_insn){ code, jt, jf, k };
	f->len++;
}

static void load(struct seccomp_filter *f, uint32_t offset)
{
	emit(f, BPF_LD | BPF_W | BPF_ABS, 0, 0, offset);
}

/* if (A == value) return ret; */
static void return_if_equal(struct seccomp_filter *f, uint32_t value, uint32_t ret)
{
	emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, value);
	emit(f, BPF_RET | BPF_K, 0, 0, ret);
}

static uint32_t fail_with(int errnum)
{
	return SECCOMP_RET_ERRNO | (uint32_t)errnum;
}

#ifdef BUILD_ARCH
/* if (nr in denied_calls) return EPERM; — one comparison per call, all leading to one return: a short program
 * is quicker to install, and every allowed call walks fewer instructions. */
static void deny_calls(struct seccomp_filter *f)
{
	size_t n = ARRAY_SIZE(denied_calls);
	for (size_t i = 0; i < n; i++) /* a match jumps over the remaining comparisons and the JA */
		emit(f, BPF_JMP | BPF_JEQ | BPF_K, (uint8_t)(n - i), 0, (uint32_t)denied_calls[i].nr);
	emit(f, BPF_JMP | BPF_JA, 0, 0, 1);
	emit(f, BPF_RET | BPF_K, 0, 0, fail_with(EPERM));
}

/* if (nr in calls) { A = low32(args[arg]); if (A & mask) return EPERM; } — then reload nr. One comparison per
 * call and one shared test, so the calls most programs make often (open, openat) cost a few instructions. */
static void deny_flags_of(struct seccomp_filter *f, const int *calls, int arg, uint32_t mask)
{
	size_t n = 0;
	while (calls[n] >= 0)
		n++;
	for (size_t i = 0; i < n; i++) /* a match jumps to the test below the remaining comparisons */
		emit(f, BPF_JMP | BPF_JEQ | BPF_K, (uint8_t)(n - i), 0, (uint32_t)calls[i]);
	emit(f, BPF_JMP | BPF_JA, 0, 0, 4); /* none matched: past the test */
	load(f, OFF_ARG_LO(arg));
	emit(f, BPF_JMP | BPF_JSET | BPF_K, 0, 1, mask);
	emit(f, BPF_RET | BPF_K, 0, 0, fail_with(EPERM));
	load(f, OFF_NR);
}

/* if (nr == call) { A = low32(args[arg]); if (A & mask) return EPERM; } — then reload nr. */
static void deny_flags(struct seccomp_filter *f, int call, int arg, uint32_t mask)
{
	emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 3, (uint32_t)call);
	load(f, OFF_ARG_LO(arg));
	emit(f, BPF_JMP | BPF_JSET | BPF_K, 0, 1, mask);
	emit(f, BPF_RET | BPF_K, 0, 0, fail_with(EPERM));
	load(f, OFF_NR);
}

/* if (nr == call) { A = low32(args[arg]); if (A in values) return errnum; } — then reload nr. */
static void deny_values(struct seccomp_filter *f, int call, int arg, const uint32_t *values, size_t n, int errnum)
{
	emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0, (uint8_t)(2 * n + 1), (uint32_t)call);
	load(f, OFF_ARG_LO(arg));
	for (size_t i = 0; i < n; i++)
		return_if_equal(f, values[i], fail_with(errnum));
	load(f, OFF_NR);
}

int seccomp_filter_build(struct seccomp_filter *f)
{
	f->len = 0;
	load(f, OFF_ARCH);
	emit(f, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, BUILD_ARCH);
	emit(f, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_KILL_PROCESS);
	load(f, OFF_NR);
	emit(f, BPF_JMP | BPF_JGE | BPF_K, 0, 1, X32_SYSCALL_BIT);
	emit(f, BPF_RET | BPF_K, 0, 0, fail_with(EPERM));
	deny_calls(f);
	return_if_equal(f, NR_CLONE3, fail_with(ENOSYS));
	return_if_equal(f, NR_OPENAT2, fail_with(ENOSYS));	 /* its mode lives in memory a filter cannot read */
	return_if_equal(f, NR_FALLOCATE, fail_with(EOPNOTSUPP)); /* space the write budget would not see */
	deny_values(f, NR_PRCTL, 0, (const uint32_t[]){ PR_SET_DUMPABLE_ }, 1, EPERM); /* hiding from the budget */
	deny_flags_of(f, mode_in_arg1, 1, SETID_BITS);
	deny_flags_of(f, mode_in_arg2, 2, SETID_BITS);
	deny_flags_of(f, mode_in_arg3, 3, SETID_BITS);
	deny_flags(f, NR_CLONE, 0, CLONE_NAMESPACE_FLAGS);
	deny_flags(f, NR_UNSHARE, 0, CLONE_NAMESPACE_FLAGS);
	deny_values(f, NR_SOCKET, 0, denied_families, ARRAY_SIZE(denied_families), EAFNOSUPPORT);
	deny_values(f, NR_IOCTL, 1, denied_ioctls, ARRAY_SIZE(denied_ioctls), EPERM);
	emit(f, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
	if (f->len > SECCOMP_MAX_INSNS) {
		errno = E2BIG;
		return -1;
	}
	return 0;
}
#else
int seccomp_filter_build(struct seccomp_filter *f)
{
	f->len = 0;
	errno = ENOSYS; /* no system-call table for this architecture yet */
	return -1;
}
#endif

int seccomp_filter_install(const struct seccomp_filter *f)
{
	struct {
		unsigned short len;
		const struct seccomp_insn *filter;
	} prog = { f->len, f->insn };
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0 ? -1 : 0;
}

const char *const *seccomp_denied_names(void)
{
	static const char *names[ARRAY_SIZE(denied_calls) + 1];
	for (size_t i = 0; i < ARRAY_SIZE(denied_calls); i++)
		names[i] = denied_calls[i].name;
	return names;
}
