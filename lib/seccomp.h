/* seccomp.h — the sandbox's system-call filter: a classic-BPF program generated here, no libseccomp.
 * Denies what a sandboxed agent never needs and what kernel exploits and escapes are made of. */
#ifndef AGOR_SECCOMP_H
#define AGOR_SECCOMP_H

/*
 * Contract
 * --------
 * seccomp_filter_build(&f) fills f with the filter for this architecture (x86_64 only; on
 * other architectures it returns -1 and the sandbox reports seccomp as unavailable).
 * seccomp_filter_install(&f) runs in the forked child (async-signal-safe: one prctl) after
 * PR_SET_NO_NEW_PRIVS; it returns 0 or -1 with errno.
 *
 * The filter, in order:
 *   - a foreign architecture (ia32 through int 0x80) kills the process;
 *   - x32 system calls (bit 30 of the number) fail with EPERM;
 *   - ptrace, process_vm_readv/writev, bpf, perf_event_open, userfaultfd, keyctl, add_key,
 *     request_key, mount, umount2, pivot_root, chroot, the new mount API (open_tree,
 *     move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr), setns, kexec_load,
 *     kexec_file_load, init_module, finit_module, delete_module, io_uring_*, acct, swapon,
 *     swapoff, reboot, iopl, ioperm, name_to_handle_at, open_by_handle_at, lookup_dcookie,
 *     quotactl, syslog — fail with EPERM;
 *   - clone and unshare with any CLONE_NEW* flag fail with EPERM; clone3 fails with ENOSYS
 *     (its flags live in memory a filter cannot read, so libcs fall back to clone);
 *   - a mode with S_ISUID or S_ISGID fails with EPERM in chmod, fchmod, fchmodat, fchmodat2, creat,
 *     open, openat, mknod and mknodat (a setuid file left in a worktree would run with its
 *     owner's rights outside); openat2 fails with ENOSYS (its mode is out of the filter's reach);
 *   - fallocate fails with EOPNOTSUPP and prctl(PR_SET_DUMPABLE) with EPERM: space allocated without a
 *     write, and a process whose /proc/PID/io its executor cannot read, would escape the write budget;
 *   - socket() of AF_NETLINK, AF_PACKET, AF_VSOCK fails with EAFNOSUPPORT;
 *   - ioctl TIOCSTI (keystroke injection) and TIOCLINUX fail with EPERM;
 *   - everything else is allowed.
 */

#include <stdint.h>

struct seccomp_insn { /* = struct sock_filter */
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};

#define SECCOMP_MAX_INSNS 256

struct seccomp_filter {
	struct seccomp_insn insn[SECCOMP_MAX_INSNS];
	unsigned short len;
};

int seccomp_filter_build(struct seccomp_filter *f);
int seccomp_filter_install(const struct seccomp_filter *f);
/* The names of the denied system calls, for the receipt (NULL-terminated, static). */
const char *const *seccomp_denied_names(void);

#endif
