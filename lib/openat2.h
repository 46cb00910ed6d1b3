/* openat2.h — openat2(2) for a libc that does not wrap it (musl's headers carry no kernel uapi): the ABI, one call
 * that retries what the kernel asks to retry, and the walk that stands in for it where it is missing. The one
 * place agor calls openat2; confine, unixperm and the sandbox build on it. Never follows a symlink it was told
 * not to, openat2 or not.
 */
#ifndef AGOR_OPENAT2_H
#define AGOR_OPENAT2_H

/*
 * Contract
 * --------
 * openat2_call(dirfd, path, flags, resolve): openat2 with O_CLOEXEC added; EAGAIN (a concurrent rename raced a
 *   ".." check) and EINTR are retried a bounded number of times. The descriptor, or -1 with errno.
 * openat2_unavailable(err): err says openat2 itself is missing (ENOSYS: before Linux 5.6) or forbidden (EPERM: a
 *   seccomp filter), not that the path was refused: the caller then walks instead. Tests force it with
 *   openat2_disable_for_tests.
 * openat2_walk_nofollow(dirfd, rel, last_flags): rel opened below dirfd one component at a time with O_NOFOLLOW,
 *   the way RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS resolves it: an absolute rel or a ".." component is EXDEV, a
 *   symlink anywhere (the last component included) ELOOP; empty and "." components are skipped. Intermediate
 *   components are opened O_PATH, the last with last_flags. The descriptor (O_CLOEXEC), or -1 with errno.
 */

#include <stdbool.h>
#include <stdint.h>

#define OPENAT2_RESOLVE_NO_XDEV	      0x01
#define OPENAT2_RESOLVE_NO_MAGICLINKS 0x02
#define OPENAT2_RESOLVE_NO_SYMLINKS   0x04
#define OPENAT2_RESOLVE_BENEATH	      0x08

int openat2_call(int dirfd, const char *path, uint64_t flags, uint64_t resolve);
bool openat2_unavailable(int err);
void openat2_disable_for_tests(bool disabled);
int openat2_walk_nofollow(int dirfd, const char *rel, int last_flags);

#endif
