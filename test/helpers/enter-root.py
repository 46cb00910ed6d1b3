#!/usr/bin/env python3
"""enter-root.py [--masked-proc] ROOT UID:GID [NAME=VALUE...] -- PROGRAM [ARG...] — runs PROGRAM inside the directory
tree ROOT as a container runtime would; call it as root inside `unshare --mount --pid --fork`. It mounts a fresh /proc
(--masked-proc: with the files Docker's default `systempaths` hides covered, as in a default container) and a /dev
of the usual device nodes, makes ROOT the mount namespace's root with pivot_root (a chroot would cost the sandbox its
user namespace), drops to UID:GID with no supplementary groups and no capabilities, and execs PROGRAM with exactly
the NAME=VALUE environment."""
import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_BIND, MS_REC, MNT_DETACH = 0x1, 0x1000, 0x4000, 2
SYS_PIVOT_ROOT = 155  # x86_64
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
MASKED_FILES = ("kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug")  # Docker's defaults
MASKED_DIRS = ("acpi", "scsi")


def check(rc, what):
    if rc != 0:
        sys.exit(f"enter-root: {what}: {os.strerror(ctypes.get_errno())}")


def mount(src, dst, fstype=None, flags=0, data=None):
    check(libc.mount(src.encode(), dst.encode(), fstype.encode() if fstype else None, flags,
                     data.encode() if data else None), f"mount {dst}")


def mask_proc(proc):
    for name in MASKED_FILES:
        if os.path.exists(f"{proc}/{name}"):
            mount("/dev/null", f"{proc}/{name}", flags=MS_BIND)
    for name in MASKED_DIRS:
        if os.path.isdir(f"{proc}/{name}"):
            mount("masked", f"{proc}/{name}", "tmpfs", MS_RDONLY)


def main(args):
    masked = args[:1] == ["--masked-proc"]
    if masked:
        args = args[1:]
    root, ids, rest = args[0], args[1], args[2:]
    sep = rest.index("--")
    env = dict(kv.split("=", 1) for kv in rest[:sep])
    argv = rest[sep + 1:]
    uid, gid = (int(x) for x in ids.split(":"))

    mount(root, root, flags=MS_BIND | MS_REC)
    mount("proc", root + "/proc", "proc")
    if masked:
        mask_proc(root + "/proc")
    mount("dev", root + "/dev", "tmpfs", 0, "mode=0755")
    for node in DEVICES:
        open(f"{root}/dev/{node}", "w").close()
        mount("/dev/" + node, f"{root}/dev/{node}", flags=MS_BIND)
    os.chdir(root)
    check(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")  # the old root now lies over the new one
    check(libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    os.execve(argv[0], argv, env)


main(sys.argv[1:])
