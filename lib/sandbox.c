/* sandbox.c — plans the sandbox in the parent and applies it between fork and exec (sandbox.h).
 * The child side only makes system calls on strings and tables the parent computed before fork. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "child.h"
#include "common.h"
#include "confine.h"
#include "diskwatch.h"
#include "fsutil.h"
#include "landlock.h"
#include "log.h"
#include "openat2.h"
#include "sandbox.h"
#include "seccomp.h"
#include "strbuf.h"
#include "strvec.h"
#include "banned.h"

#define OLDROOT "/oldroot"

/* Stage timing for test/bench/sandbox (build with -DSANDBOX_TIMING): CLOCK_MONOTONIC stamps in a shared page
 * that the forked processes write and sandbox_stage_times() reads. Compiled out of the product. */
#ifdef SANDBOX_TIMING
#define STAMP(sb, i) stamp((sb)->times, (i))
static void stamp(double *t, int i)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (t)
		t[i] = (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}
static const char *const stamp_names[] = {
	"prepare",
	"probe (landlock, seccomp build)",
	"plan mounts",
	"cgroup mkdir + limits",
	"fork (child.c)",
	"cgroup join",
	"(unused)",
	"uid/gid maps",
	"PID 1 starts confining",
	"private + pivot_root",
	"mount ops",
	"old root gone, root ro",
	"hostname + loopback",
	"rlimits + no_new_privs",
	"landlock",
	"capabilities",
	"seccomp",
	"PID 1 confined",
	"exec + run + exit (PID 1 reaps)",
	"PID 1 exit, namespaces gone, reaped",
	"cgroup events",
	"cgroup rmdir",
};
static double *init_times; /* PID 1's copy of sb->times, for wait_and_mirror() */
#define STAMP_REAPED(pid, got) ((got) == (pid) && init_times ? stamp(init_times, 18) : (void)0)
#else
#define STAMP(sb, i)	       ((void)0)
#define STAMP_REAPED(pid, got) ((void)0)
#endif
#define MAX_OPS 128

enum op_kind {
	OP_BIND,      /* clone src (opened without following anything the sandbox can write) and attach it at dst */
	OP_TMPFS,     /* a fresh tmpfs at dst with options `data` */
	OP_SYMLINK,   /* dst → data */
	OP_PROC,      /* proc of the new PID namespace at dst */
	OP_DEVPTS,    /* a new devpts instance at dst (optional: terminals need it) */
	OP_READ_ONLY, /* the tmpfs of op `target` read-only (the shields, covers and /etc, once their binds are in) */
	OP_SELF_RO,   /* dst, inside the view already (/proc/sys), bound onto itself read-only; skipped when missing */
};

/* The new mount API (Linux 5.2; mount_setattr 5.12): musl's headers lack it. */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define OPEN_TREE_CLONE_	 1
#define OPEN_TREE_CLOEXEC_	 O_CLOEXEC
#define MOVE_MOUNT_F_EMPTY_PATH_ 0x04
#define MOVE_MOUNT_T_EMPTY_PATH_ 0x40
#define AT_RECURSIVE_		 0x8000
#define MOUNT_ATTR_RDONLY_	 0x1
#define MOUNT_ATTR_NOSUID_	 0x2
#define MOUNT_ATTR_NODEV_	 0x4
#define MOUNT_ATTR_NOEXEC_	 0x8
#define MOUNT_ATTR_IDMAP_	 0x100000

struct mount_attr_ {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

struct mount_op {
	enum op_kind kind;
	char *root; /* OP_BIND of untrusted territory: OLDROOT + the trusted directory src lies beneath, else NULL */
	char *src;  /* OP_BIND: the path below root, or OLDROOT + a trusted host path */
	char *dst;  /* path inside */
	char *data; /* tmpfs options or symlink target */
	int is_dir; /* binds: directory (else a file) */
	int dst_in_bind; /* dst lies inside an earlier bind: it must exist there, reached without symlinks */
	int idmap;	 /* OP_BIND: idmapped (a root executor's view of the data home) */
	int target;    /* OP_READ_ONLY: the index of the OP_TMPFS it seals (by descriptor: a later bind may cover it) */
	int recursive; /* OP_READ_ONLY: with every mount below it (/etc: its entries' binds at once) */
	int sealed;    /* OP_TMPFS: an OP_READ_ONLY seals it later (its descriptor is kept) */
	uint64_t attrs; /* OP_BIND: MOUNT_ATTR_* set on the detached clone */
};

enum stage {
	ST_NONE,
	ST_CGROUP,
	ST_UNSHARE,
	ST_ID_MAP,
	ST_MOUNT_PRIVATE,
	ST_ROOT,
	ST_PIVOT,
	ST_MOUNT,
	ST_PROC,
	ST_OLDROOT,
	ST_SHIELD,
	ST_HOSTNAME,
	ST_LOOPBACK,
	ST_RLIMIT,
	ST_NO_NEW_PRIVS,
	ST_LANDLOCK,
	ST_CAPS,
	ST_SECCOMP,
	ST_IDMAP,
	ST_EGRESS,
};

static const char *const stage_controls[] = {
	[ST_NONE] = "sandbox",
	[ST_CGROUP] = "cgroup",
	[ST_UNSHARE] = "user namespace",
	[ST_ID_MAP] = "user namespace",
	[ST_MOUNT_PRIVATE] = "mount namespace",
	[ST_ROOT] = "mount namespace",
	[ST_PIVOT] = "mount namespace",
	[ST_MOUNT] = "mount namespace",
	[ST_PROC] = "proc",
	[ST_OLDROOT] = "mount namespace",
	[ST_SHIELD] = "mount namespace",
	[ST_HOSTNAME] = "uts namespace",
	[ST_LOOPBACK] = "network namespace",
	[ST_RLIMIT] = "rlimits",
	[ST_NO_NEW_PRIVS] = "no_new_privs",
	[ST_LANDLOCK] = "landlock",
	[ST_CAPS] = "capabilities",
	[ST_SECCOMP] = "seccomp",
	[ST_IDMAP] = "idmapped mounts",
	[ST_EGRESS] = "egress relay",
};

struct failure_record {
	int stage, errnum;
	int op; /* index of the mount op, or -1 */
};

struct sandbox {
	struct sandbox_config cfg;
	int use_landlock, use_seccomp, use_cgroup;
	int born_in_cgroup; /* the child was cloned into the v2 group (child.c): it need not move itself */
	struct landlock_plan landlock;
	struct seccomp_filter seccomp;
	struct cgroup cgroup;
	struct mount_op ops[MAX_OPS];
	int nops;
	char uid_map[48], gid_map[48];
	char *data_home;	 /* the request's, canonical: no bind below it is followed, whatever it says */
	struct strvec protected; /* the request's protected paths, canonical: no trusted bind may hold one */
	int as_root;	    /* the executor is root: no user namespace; PID 1 and the program become cfg.root_maps_to */
	int idmap_fd;	    /* as_root: the user namespace of the idmapped binds (0 ↔ root_maps_to), else -1 */
	pid_t idmap_helper; /* the process that made it, until reaped */
	int last_cap;
	uintptr_t env_start, env_end; /* this process's initial environment (/proc/self/stat) */
	int diag[2];
	struct strvec ro_paths, rw_paths, private_paths; /* for the receipt */
	struct strvec open_to_write; /* private mounts the program may write anything in (Landlock WRITE) */
	json_t *warnings;
	json_t *cgroup_receipt; /* kept: the cgroup itself is gone after sandbox_finish() */
	json_t *events;
	struct diskwatch *disk; /* the write budget's watcher while the run lives */
	char tmpfs_size[32];	/* "size=…" of /tmp and the private home */
	int use_egress;		/* network proxy: PID 1 relays 127.0.0.1:SANDBOX_EGRESS_PORT to egress_addr */
	struct sockaddr_un egress_addr;
	char *egress_socket;
	double *times; /* SANDBOX_TIMING: one shared page of stamps, else NULL */
};

#ifdef SANDBOX_TIMING
const double *sandbox_stage_times(const struct sandbox *sb, const char *const **names, int *n)
{
	*names = stamp_names;
	*n = (int)ARRAY_SIZE(stamp_names);
	return sb->times;
}
#endif

/* ---- configuration ------------------------------------------------------------------------ */

void sandbox_config_from(struct sandbox_config *sc, const struct config *cfg)
{
	const typeof(cfg->execution.sandbox) *s = &cfg->execution.sandbox;
	*sc = (struct sandbox_config){
		.enabled = s->enabled,
		.fail_closed = s->fail_closed,
		.network_none = s->network != CONFIG_SANDBOX_NETWORK_HOST, /* none and proxy: a namespace of its own */
		.read_only_paths = s->read_only_paths,
		.read_write_paths = s->read_write_paths,
		.limits = { .memory_max_bytes = s->memory_max_mb * 1024 * 1024,
			    .pids_max = s->pids_max,
			    .cpu_max_percent = (int)s->cpu_max_percent },
		.nofile = s->nofile,
		.fsize_bytes = s->fsize_mb * 1024 * 1024,
		.disk_max_bytes = s->disk_max_mb * 1024 * 1024,
		.cgroup_root = s->cgroup_root,
		.cgroup_parent = s->cgroup_parent,
		.root_maps_to = (unsigned)s->root_maps_to,
	};
}

/* ---- planning (parent) -------------------------------------------------------------------- */

static const char *const system_dirs[] = { "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32" };

static const char *const etc_entries[] = {
	"passwd",	   "group",
	"hosts",	   "resolv.conf",
	"nsswitch.conf",   "host.conf",
	"gai.conf",	   "ld.so.cache",
	"ld.so.conf",	   "ld.so.conf.d",
	"alternatives",	   "ssl",
	"ca-certificates", "ca-certificates.conf",
	"localtime",	   "timezone",
	"os-release",	   "debian_version",
	"profile",	   "bash.bashrc",
	"inputrc",	   "terminfo",
	"mime.types",	   "protocols",
	"services",	   "gitconfig",
	"nodejs",
};

static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };

/* Parts of the new PID namespace's /proc that reach the whole machine: read-only whatever Landlock does. */
static const char *const proc_read_only[] = { "/proc/sys", "/proc/sysrq-trigger" };

static struct mount_op *new_op(struct sandbox *sb, enum op_kind kind, const char *dst)
{
	if (sb->nops == MAX_OPS)
		return NULL;
	struct mount_op *op = &sb->ops[sb->nops++];
	*op = (struct mount_op){ .kind = kind, .dst = xstrdup(dst) };
	return op;
}

static int too_many(struct err *e)
{
	return err_set(e, E_INTERNAL, "sandbox: too many mounts");
}

/* Seals the tmpfs planned at dst (the latest OP_TMPFS there) read-only, with what lies below when recursive. */
static int plan_seal(struct sandbox *sb, const char *dst, int recursive, struct err *e)
{
	int target = -1;
	for (int i = 0; i < sb->nops; i++)
		if (sb->ops[i].kind == OP_TMPFS && !strcmp(sb->ops[i].dst, dst))
			target = i;
	struct mount_op *op = target >= 0 ? new_op(sb, OP_READ_ONLY, dst) : NULL;
	if (!op)
		return target < 0 ? err_set(e, E_INTERNAL, "sandbox: no tmpfs at %s to seal", dst) : too_many(e);
	op->target = target;
	op->recursive = recursive;
	sb->ops[target].sealed = 1;
	return 0;
}

/* 1 when dst lies in a bind made earlier (the nearest enclosing mount of the plan is a bind, not a tmpfs of ours):
 * it is then in territory the program could have written, must exist there and is reached without symlinks. */
static int inside_a_bind(const struct sandbox *sb, const char *dst)
{
	size_t best = 0;
	int in_bind = 0;
	for (int i = 0; i < sb->nops; i++) {
		const struct mount_op *op = &sb->ops[i];
		size_t n = strlen(op->dst);
		int encloses = !strncmp(dst, op->dst, n) && (dst[n] == '/' || n == 1);
		if (encloses && n >= best && ((op->kind == OP_BIND && op->is_dir) || op->kind == OP_TMPFS)) {
			best = n;
			in_bind = op->kind == OP_BIND;
		}
	}
	return in_bind;
}

static enum landlock_kind landlock_kind_of(enum sandbox_access access)
{
	switch (access) {
	case SANDBOX_WRITE:
		return LANDLOCK_WRITE;
	case SANDBOX_DATA:
		return LANDLOCK_DATA;
	case SANDBOX_TREE:
		return LANDLOCK_TREE;
	case SANDBOX_READ:
	case SANDBOX_COVER:
		break;
	}
	return LANDLOCK_READ;
}

static int refuse_source(struct err *e, const char *path, int errnum)
{
	const char *why = errnum == ELOOP   ? "is a symlink or passes through one"
			  : errnum == EXDEV ? "leads outside its directory"
					    : strerror(errnum);
	return err_setd(e, E_PATH_OUTSIDE_DATA_HOME, json_pack("{s:s,s:i}", "path", path, "errno", errnum),
			"sandbox: %s %s: refusing to bind it (something inside a sandbox may have planted it)", path,
			why);
}

/* What the source is: 1 (a directory), 0 (something else), -1 missing (skipped), -2 refused (e set).
 * Beneath a root nothing is followed; a trusted path is followed like any path. */
static int source_kind(const char *root, const char *src, const char **rel, struct err *e)
{
	struct stat st;
	if (!root) {
		*rel = src;
		return stat(src, &st) < 0 ? -1 : S_ISDIR(st.st_mode);
	}
	size_t n = strlen(root);
	if (strncmp(src, root, n) || (src[n] != '/' && src[n] != '\0'))
		return err_set(e, E_INTERNAL, "sandbox: %s is not under %s", src, root), -2;
	*rel = src[n] ? src + n + 1 : ".";
	int fd = confine_open(root, *rel, O_PATH);
	if (fd < 0)
		return errno == ENOENT ? -1 : (refuse_source(e, src, errno), -2);
	int rc = fstat(fd, &st) < 0 ? -1 : S_ISDIR(st.st_mode);
	close(fd);
	return rc;
}

static uint64_t attrs_of(enum sandbox_access access)
{
	uint64_t attrs = MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_;
	return access == SANDBOX_READ ? attrs | MOUNT_ATTR_RDONLY_ : attrs;
}

/* Landlock rights add up along a path: a DATA bind below a private mount the program may write anything in would
 * lose its "no symlink, fifo or device" rule. Refused, naming what to move. */
static int refuse_data_below_writable(const struct sandbox *sb, const char *dst, struct err *e)
{
	for (size_t i = 0; i < sb->open_to_write.nr; i++) {
		const char *w = sb->open_to_write.v[i];
		size_t n = strlen(w);
		if (!strncmp(dst, w, n) && dst[n] == '/')
			return err_setd(
				e, E_ISOLATION_UNAVAILABLE,
				json_pack("{s:s,s:s,s:s}", "missing", "a data home outside the private mounts", "path",
					  dst, "under", w),
				"sandbox: %s lies under %s, which each run replaces with a private directory it may "
				"write anything in, so the repository's objects and refs could not be kept free of "
				"symlinks: move the data home out of %s (paths.data_home)",
				dst, w, w);
	}
	return 0;
}

/* 1 (e set) when the trusted bind src (canonical) is, or holds, a protected path (an agent installed beside the
 * data home). Compared canonically: "/x/", "//x" and a symlink to /x are /x. */
static int holds_protected(const struct sandbox *sb, const char *src, struct err *e)
{
	for (size_t i = 0; i < sb->protected.nr; i++)
		if (fs_path_is_or_below(sb->protected.v[i], src))
			return err_setd(e, E_PATH_OUTSIDE_DATA_HOME,
					json_pack("{s:s,s:s}", "path", src, "holds", sb->protected.v[i]),
					"sandbox: %s would be shown to the run, and it holds %s: install the program "
					"(or "
					"choose the path) elsewhere",
					src, sb->protected.v[i]),
			       1;
	return 0;
}

enum bind_flags {
	BIND_KEEP_LINKS = 1, /* a trusted symlink is recreated as a symlink (/bin → usr/bin) */
	BIND_NO_RULE = 2,    /* no Landlock rule of its own (an /etc entry: /etc has one) */
	BIND_SYSTEM = 4,     /* the fixed system view (/usr, /etc entries): not judged against the data home */
};

/* A bind of b->src (beneath b->root when set) at b->dst (or the same path). A trusted symlink is recreated as
 * a symlink when keep_links (so /bin → usr/bin stays a link). Missing sources are skipped: returns 0. A trusted
 * source is judged by its canonical path: one that holds a protected path is refused, one in the data home is
 * opened beneath it like any other bind there. */
static int plan_bind_ruled(struct sandbox *sb, const struct sandbox_bind *b, unsigned flags, struct err *e)
{
	int keep_links = flags & BIND_KEEP_LINKS, landlock_rule = !(flags & BIND_NO_RULE);
	const char *dst = b->dst ? b->dst : b->src, *rel = NULL;
	struct stat st;
	if (!b->root && keep_links && lstat(b->src, &st) == 0 && S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(b->src, target, sizeof(target) - 1);
		if (n < 0)
			return 0;
		target[n] = 0;
		struct mount_op *op = new_op(sb, OP_SYMLINK, dst);
		if (!op)
			return too_many(e);
		op->data = xstrdup(target);
		return 0;
	}
	_cleanup_free_ char *canonical = b->root || (flags & BIND_SYSTEM) ? NULL : fs_canonical(b->src);
	struct sandbox_bind beneath;
	if (canonical && holds_protected(sb, canonical, e))
		return -1;
	if (canonical && sb->data_home && fs_path_is_or_below(canonical, sb->data_home)) {
		beneath =
			*b; /* "trusted" but in the data home (an agent installed in a worktree): followed like none */
		beneath.root = sb->data_home;
		beneath.src = canonical;
		b = &beneath;
	}
	int kind = source_kind(b->root, b->src, &rel, e);
	if (kind < 0)
		return kind == -2 ? -1 : 0;
	int in_bind = inside_a_bind(sb, dst);
	if (b->access == SANDBOX_DATA && sb->use_landlock && refuse_data_below_writable(sb, dst, e) < 0)
		return -1;
	struct mount_op *op = new_op(sb, OP_BIND, dst);
	if (!op)
		return too_many(e);
	op->root = b->root ? xasprintf(OLDROOT "%s", b->root) : NULL;
	op->src = b->root ? xstrdup(rel) : xasprintf(OLDROOT "%s", canonical ? canonical : b->src);
	op->is_dir = kind;
	op->dst_in_bind = in_bind;
	op->attrs = attrs_of(b->access);
	op->idmap = sb->as_root && (b->root || b->access != SANDBOX_READ); /* the data home, and whatever is written */
	strvec_push(b->access == SANDBOX_READ ? &sb->ro_paths : &sb->rw_paths, dst);
	if (landlock_rule && sb->use_landlock &&
	    landlock_plan_add(&sb->landlock, op->dst, landlock_kind_of(b->access)) < 0)
		return err_set(e, E_INTERNAL, "sandbox: too many Landlock rules");
	return 0;
}

static int plan_bind(struct sandbox *sb, const char *path, int writable, unsigned flags, struct err *e)
{
	const struct sandbox_bind b = { .src = path, .access = writable ? SANDBOX_WRITE : SANDBOX_READ };
	return plan_bind_ruled(sb, &b, flags, e);
}

static int plan_private(struct sandbox *sb, enum op_kind kind, const char *dst, const char *data,
			enum landlock_kind access, struct err *e)
{
	struct mount_op *op = new_op(sb, kind, dst);
	if (!op)
		return too_many(e);
	op->data = data ? xstrdup(data) : NULL;
	op->dst_in_bind = inside_a_bind(sb, dst);
	if (kind != OP_SYMLINK)
		strvec_push(&sb->private_paths, dst);
	if (kind != OP_SYMLINK && access == LANDLOCK_WRITE)
		strvec_push(&sb->open_to_write, dst);
	if (kind != OP_SYMLINK && sb->use_landlock && landlock_plan_add(&sb->landlock, op->dst, access) < 0)
		return err_set(e, E_INTERNAL, "sandbox: too many Landlock rules");
	return 0;
}

/* mount_setattr(2) (Linux 5.12, with open_tree and move_mount of 5.2): an empty change is accepted (or the bad
 * descriptor refused); ENOSYS when missing. */
static int have_mount_api(void)
{
	struct mount_attr_ attr = { 0 };
	return syscall(SYS_mount_setattr, -1, "", 0, &attr, sizeof(attr)) == 0 || errno != ENOSYS;
}

/* /etc inside is a small tmpfs holding only the selected entries (each bound read-only), made read-only once
 * they are in: one Landlock rule on it covers them all. */
static int plan_etc(struct sandbox *sb, struct err *e)
{
	struct mount_op *op = new_op(sb, OP_TMPFS, "/etc");
	if (!op)
		return too_many(e);
	op->data = xstrdup("mode=0755,size=64k");
	for (size_t i = 0; i < ARRAY_SIZE(etc_entries); i++) {
		_cleanup_free_ char *path = xasprintf("/etc/%s", etc_entries[i]);
		const struct sandbox_bind b = { .src = path, .access = SANDBOX_READ };
		if (plan_bind_ruled(sb, &b, BIND_NO_RULE | BIND_SYSTEM, e) < 0)
			return -1;
		if (sb->nops && sb->ops[sb->nops - 1].kind == OP_BIND)
			sb->ops[sb->nops - 1].attrs = 0; /* read-only with /etc's recursive seal */
	}
	if (plan_seal(sb, "/etc", 1, e) < 0)
		return -1;
	if (sb->use_landlock && landlock_plan_add(&sb->landlock, "/etc", LANDLOCK_READ) < 0)
		return err_set(e, E_INTERNAL, "sandbox: too many Landlock rules");
	return 0;
}

static int plan_system(struct sandbox *sb, struct err *e)
{
	for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
		if (plan_bind(sb, system_dirs[i], 0, BIND_KEEP_LINKS | BIND_SYSTEM, e) < 0)
			return -1;
	return plan_etc(sb, e);
}

static int plan_dev(struct sandbox *sb, struct err *e)
{
	if (plan_private(sb, OP_TMPFS, "/dev", "mode=0755,size=64k", LANDLOCK_DEVICE, e) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(dev_nodes); i++) {
		_cleanup_free_ char *path = xasprintf("/dev/%s", dev_nodes[i]);
		struct stat st;
		if (stat(path, &st) < 0)
			continue;
		struct mount_op *op = new_op(sb, OP_BIND, path);
		if (!op)
			return too_many(e);
		op->src = xasprintf(OLDROOT "%s",
				    path); /* a device node: not nodev; nosuid and noexec mean nothing there */
	}
	static const char *const links[][2] = {
		{ "/dev/fd", "/proc/self/fd" },	      { "/dev/stdin", "/proc/self/fd/0" },
		{ "/dev/stdout", "/proc/self/fd/1" }, { "/dev/stderr", "/proc/self/fd/2" },
		{ "/dev/ptmx", "pts/ptmx" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(links); i++)
		if (plan_private(sb, OP_SYMLINK, links[i][0], links[i][1], LANDLOCK_READ, e) < 0)
			return -1;
	if (plan_private(sb, OP_DEVPTS, "/dev/pts", "newinstance,ptmxmode=0666,mode=0620", LANDLOCK_DEVICE, e) < 0)
		return -1;
	return plan_private(sb, OP_TMPFS, "/dev/shm", "mode=1777,size=64m", LANDLOCK_WRITE, e);
}

static int plan_proc(struct sandbox *sb, struct err *e)
{
	if (plan_private(sb, OP_PROC, "/proc", NULL, LANDLOCK_READ, e) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(proc_read_only); i++)
		if (!new_op(sb, OP_SELF_RO, proc_read_only[i]))
			return too_many(e);
	return 0;
}

/* Each ':'-separated absolute path of list, bound read-only or read-write. */
static int plan_extra(struct sandbox *sb, const char *list, int writable, struct err *e)
{
	if (!list)
		return 0;
	_cleanup_free_ char *copy = xstrdup(list);
	char *save = NULL;
	for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
		if (*p != '/')
			return err_set(e, E_CONFIG, "execution.sandbox.%s: %s is not an absolute path",
				       writable ? "read_write_paths" : "read_only_paths", p);
		if (plan_bind(sb, p, writable, 0, e) < 0)
			return -1;
	}
	return 0;
}

/* A bind that lands inside a private writable tmpfs (/tmp, the home) would have its skeleton of parent
 * directories there, writable and listable by the program. A shield — a small tmpfs at the first
 * directory below that mount, remounted read-only once the binds are in — holds the skeleton instead. */
static int plan_shield(struct sandbox *sb, const char *path, const char *private_root, struct strvec *shields,
		       struct err *e)
{
	size_t n = strlen(private_root);
	if (!path || strncmp(path, private_root, n) || path[n] != '/')
		return 0;
	const char *rest = path + n + 1, *slash = strchr(rest, '/');
	if (!slash)
		return 0; /* the bind itself is the first directory: no skeleton */
	_cleanup_free_ char *shield = xasprintf("%.*s", (int)(slash - path), path);
	for (size_t i = 0; i < shields->nr; i++)
		if (!strcmp(shields->v[i], shield))
			return 0;
	strvec_push(shields, shield);
	struct mount_op *op = new_op(sb, OP_TMPFS, shield);
	if (!op)
		return too_many(e);
	op->data = xstrdup("mode=0111,size=64k");
	return 0;
}

static int plan_shields(struct sandbox *sb, const struct sandbox_request *req, struct strvec *shields, struct err *e)
{
	_cleanup_strvec_ struct strvec paths = STRVEC_INIT;
	strvec_push(&paths, req->worktree);
	if (req->home_is_kept)
		strvec_push(&paths, req->home);
	for (size_t i = 0; i < req->nbinds; i++)
		strvec_push(&paths, req->binds[i].dst ? req->binds[i].dst : req->binds[i].src);
	const char *roots[] = { "/tmp", req->home_is_kept ? NULL : req->home };
	for (size_t r = 0; r < ARRAY_SIZE(roots); r++)
		for (size_t i = 0; roots[r] && i < paths.nr; i++)
			if (plan_shield(sb, paths.v[i], roots[r], shields, e) < 0)
				return -1;
	return 0;
}

/* The request's own binds, in order, those of one kind: trusted ones (no root) or the data home's (and covers, empty
 * tmpfs mounts sealed read-only with the shields). */
static int plan_request_binds(struct sandbox *sb, const struct sandbox_request *req, int trusted, struct strvec *seal,
			      struct err *e)
{
	for (size_t i = 0; i < req->nbinds; i++) {
		const struct sandbox_bind *b = &req->binds[i];
		const char *dst = b->dst ? b->dst : b->src;
		if (!b->root != !!trusted || (trusted && b->access == SANDBOX_COVER))
			continue;
		if (b->src[0] != '/' || dst[0] != '/')
			return err_set(e, E_INTERNAL, "sandbox: %s is not an absolute path",
				       b->src[0] != '/' ? b->src : dst);
		if (b->access == SANDBOX_COVER) {
			if (plan_private(sb, OP_TMPFS, dst, "mode=0755,size=16k", LANDLOCK_READ, e) < 0)
				return -1;
			strvec_push(seal, dst);
		} else if (plan_bind_ruled(sb, b, 0, e) < 0) {
			return -1;
		}
	}
	return 0;
}

static int seal_shields(struct sandbox *sb, const struct strvec *shields, struct err *e)
{
	for (size_t i = 0; i < shields->nr; i++)
		if (plan_seal(sb, shields->v[i], 0, e) < 0)
			return -1;
	return 0;
}

/* The private home: a tmpfs the program owns (a root executor's runs are root_maps_to). */
static int plan_home(struct sandbox *sb, const struct sandbox_request *req, struct err *e)
{
	if (req->home_is_kept)
		return 0;
	_cleanup_free_ char *data = sb->as_root ? xasprintf("mode=0700,%s,uid=%u,gid=%u", sb->tmpfs_size,
							    sb->cfg.root_maps_to, sb->cfg.root_maps_to)
						: xasprintf("mode=0700,%s", sb->tmpfs_size);
	return plan_private(sb, OP_TMPFS, req->home, data, LANDLOCK_WRITE, e);
}

static int plan_mounts(struct sandbox *sb, const struct sandbox_request *req, struct err *e)
{
	_cleanup_strvec_ struct strvec shields = STRVEC_INIT;
	if (plan_system(sb, e) < 0 || plan_dev(sb, e) < 0 || plan_proc(sb, e) < 0)
		return -1;
	if (sb->cfg.disk_max_bytes > 0)
		snprintf(sb->tmpfs_size, sizeof(sb->tmpfs_size), "size=%lldk", (sb->cfg.disk_max_bytes + 1023) / 1024);
	else
		snprintf(sb->tmpfs_size, sizeof(sb->tmpfs_size), "size=1g");
	_cleanup_free_ char *tmp = xasprintf("mode=1777,%s", sb->tmpfs_size);
	if (plan_private(sb, OP_TMPFS, "/tmp", tmp, LANDLOCK_WRITE, e) < 0 || plan_home(sb, req, e) < 0)
		return -1;
	/* binds after the shields: a shield mounted later would hide what lies below it */
	if (plan_shields(sb, req, &shields, e) < 0)
		return -1;
	/* trusted binds first: one of them may hold the data home (an agent installed beside it), whose binds then
	 * land inside it rather than being hidden by it */
	if (plan_request_binds(sb, req, 1, &shields, e) < 0 || plan_extra(sb, sb->cfg.read_only_paths, 0, e) < 0 ||
	    plan_extra(sb, sb->cfg.read_write_paths, 1, e) < 0)
		return -1;
	const struct sandbox_bind home = { .root = req->home_root, .src = req->home, .access = SANDBOX_WRITE };
	const struct sandbox_bind worktree = { .root = req->worktree_root,
					       .src = req->worktree,
					       .access = req->worktree_read_only ? SANDBOX_READ : SANDBOX_TREE };
	if ((req->home_is_kept && plan_bind_ruled(sb, &home, 0, e) < 0) || plan_bind_ruled(sb, &worktree, 0, e) < 0 ||
	    plan_request_binds(sb, req, 0, &shields, e) < 0)
		return -1;
	return seal_shields(sb, &shields, e);
}

static int last_capability(void)
{
	_cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
	if (strbuf_read_file(&sb, "/proc/sys/kernel/cap_last_cap", 32) < 0)
		return 40;
	return atoi(sb.buf);
}

/* Where the kernel shows this process's environment from (/proc/PID/environ): fields 50 and 51 of
 * /proc/self/stat. PID 1 of the sandbox is a fork of this process, so it wipes that range. */
static void find_environment(struct sandbox *sb)
{
	_cleanup_strbuf_ struct strbuf st = STRBUF_INIT;
	if (strbuf_read_file(&st, "/proc/self/stat", 4096) < 0)
		return;
	const char *p = strrchr(st.buf, ')'); /* the command name may contain spaces */
	int field = 2;
	for (; p && *p && field < 50; p++)
		if (*p == ' ')
			field++;
	char *end;
	unsigned long long start = p ? strtoull(p, &end, 10) : 0;
	unsigned long long stop = p && *end == ' ' ? strtoull(end + 1, NULL, 10) : 0;
	if (start && stop > start) {
		sb->env_start = (uintptr_t)start;
		sb->env_end = (uintptr_t)stop;
	}
}

static int unavailable(struct err *e, const char *control, const char *why)
{
	return err_setd(e, E_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "missing", control),
			"sandbox: %s is unavailable (%s) and execution.sandbox.fail_closed is true; nothing was run",
			control, why);
}

/* Landlock and seccomp: required unless fail_closed is off, then recorded as warnings. */
static int probe_layers(struct sandbox *sb, struct err *e)
{
	int abi = landlock_abi();
	if (abi > 0) {
		sb->use_landlock = 1;
		landlock_plan_init(&sb->landlock, abi, sb->cfg.network_none, sb->use_egress ? SANDBOX_EGRESS_PORT : 0);
	} else if (sb->cfg.fail_closed) {
		return unavailable(e, "landlock", strerror(errno));
	} else {
		json_array_append_new(sb->warnings, json_sprintf("landlock unavailable: %s", strerror(errno)));
	}
	if (seccomp_filter_build(&sb->seccomp) == 0) {
		sb->use_seccomp = 1;
	} else if (sb->cfg.fail_closed) {
		return unavailable(e, "seccomp", "no filter for this architecture");
	} else {
		json_array_append_new(sb->warnings, json_string("seccomp unavailable on this architecture"));
	}
	return 0;
}

static int required(struct err *e, const char *control, const char *why)
{
	return err_setd(
		e, E_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "missing", control),
		"sandbox: %s is unavailable (%s); the sandbox cannot be built safely without it; nothing was run",
		control, why);
}

static int write_map(pid_t pid, const char *which, unsigned id)
{
	char path[64], text[48];
	snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, which);
	snprintf(text, sizeof(text), "0 %u 1\n", id);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int rc = fd < 0 ? -1 : fs_write_all(fd, text, strlen(text));
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The helper's body: it only waits to be killed. It shares the parent's memory and runs on its own small stack:
 * raw system calls only, nothing read from the parent's memory. */
static int idmap_helper(void *arg)
{
	(void)arg;
	for (;;)
		syscall(SYS_pause);
	return 0;
}

/* A root executor's idmapped mounts: a user namespace mapping uid and gid 0 to id (a helper made in one,
 * mapped from here, its namespace kept by descriptor, the helper killed; it is reaped later, off the start-up's
 * path). The helper shares this process's memory (no page tables to copy). -1 with e set. */
static int make_idmap_userns(unsigned id, pid_t *helper, struct err *e)
{
	static char stack[16384] __attribute__((aligned(16))); /* one helper at a time */
	pid_t pid = clone(idmap_helper, stack + sizeof(stack), CLONE_NEWUSER | CLONE_VM | SIGCHLD, NULL);
	if (pid < 0)
		return required(e, "user namespace", strerror(errno)); /* the idmap is a user namespace's */
	int fd = -1;
	if (write_map(pid, "uid_map", id) == 0 && write_map(pid, "gid_map", id) == 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%ld/ns/user", (long)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	int saved = errno;
	kill(pid, SIGKILL);
	*helper = pid;
	if (fd < 0)
		return required(e, "idmapped mounts", strerror(saved));
	return fd;
}

static void reap_idmap_helper(struct sandbox *sb)
{
	while (sb->idmap_helper > 0 && waitpid(sb->idmap_helper, NULL, 0) < 0 && errno == EINTR)
		;
	sb->idmap_helper = 0;
}

static int prepare_cgroup(struct sandbox *sb, const struct sandbox_request *req, struct err *e)
{
	const struct cgroup_limits *l = &sb->cfg.limits;
	if (!cgroup_limits_any(l))
		return 0;
	if (req->plan_only) {
		sb->cgroup_receipt =
			json_pack("{s:b,s:I,s:I,s:i}", "planned", 1, "memoryMaxBytes", (json_int_t)l->memory_max_bytes,
				  "pidsMax", (json_int_t)l->pids_max, "cpuMaxPercent", l->cpu_max_percent);
		return 0;
	}
	/* root makes its groups under the parent itself; anyone else under the subtree delegated to it */
	struct passwd *pw = geteuid() ? getpwuid(geteuid()) : NULL;
	_cleanup_free_ char *parent =
		pw ? xasprintf("%s/%s", sb->cfg.cgroup_parent, pw->pw_name) : xstrdup(sb->cfg.cgroup_parent);
	if (cgroup_create(&sb->cgroup, sb->cfg.cgroup_root, parent, req->name, &sb->cfg.limits, e) < 0)
		return -1;
	sb->use_cgroup = 1;
	sb->cgroup_receipt = cgroup_receipt(&sb->cgroup);
	return 0;
}

/* Network proxy: the relay's destination, precomputed for PID 1. */
static int egress_plan(struct sandbox *sb, const char *socket_path, struct err *e)
{
	size_t n = strlen(socket_path);
	if (n >= sizeof(sb->egress_addr.sun_path))
		return err_set(e, E_INTERNAL, "sandbox: the egress socket path %s is too long", socket_path);
	sb->egress_addr.sun_family = AF_UNIX;
	memcpy(sb->egress_addr.sun_path, socket_path, n + 1);
	sb->egress_socket = xstrdup(socket_path);
	sb->use_egress = 1;
	sb->cfg.network_none = 1; /* the proxy is the only way out */
	return 0;
}

struct sandbox *sandbox_prepare(const struct sandbox_config *cfg, const struct sandbox_request *req, struct err *e)
{
	struct sandbox *sb = xcalloc(1, sizeof(*sb));
#ifdef SANDBOX_TIMING
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	sb->times = page == MAP_FAILED ? NULL : page;
#endif
	STAMP(sb, 0);
	sb->cfg = *cfg;
	sb->idmap_fd = -1;
	sb->data_home = req->data_home ? fs_canonical(req->data_home) : NULL;
	strvec_init(&sb->protected);
	for (const char *const *p = req->protected_paths; p && *p; p++)
		strvec_push_nodup(&sb->protected, fs_canonical(*p));
	if (req->egress_socket && egress_plan(sb, req->egress_socket, e) < 0) {
		sandbox_free(sb);
		return NULL;
	}
	sb->diag[0] = sb->diag[1] = -1;
	strvec_init(&sb->ro_paths);
	strvec_init(&sb->rw_paths);
	strvec_init(&sb->private_paths);
	strvec_init(&sb->open_to_write);
	sb->warnings = json_array();
	sb->as_root = geteuid() == 0;
	snprintf(sb->uid_map, sizeof(sb->uid_map), "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
	snprintf(sb->gid_map, sizeof(sb->gid_map), "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
	sb->last_cap = last_capability();
	find_environment(sb);
	if (!have_mount_api()) {
		required(e, "mount API", "open_tree, move_mount and mount_setattr need Linux 5.12 or later");
		sandbox_free(sb);
		return NULL;
	}
	if (sb->as_root && sb->cfg.root_maps_to == 0) {
		err_set(e, E_CONFIG, "execution.sandbox.root_maps_to: a root executor's runs must not be uid 0");
		sandbox_free(sb);
		return NULL;
	}
	if (sb->as_root && !req->plan_only &&
	    (sb->idmap_fd = make_idmap_userns(sb->cfg.root_maps_to, &sb->idmap_helper, e)) < 0) {
		sandbox_free(sb);
		return NULL;
	}
	int planned = probe_layers(sb, e) == 0 && (STAMP(sb, 1), plan_mounts(sb, req, e) == 0);
	if (!planned || (STAMP(sb, 2), prepare_cgroup(sb, req, e) < 0) ||
	    (pipe2(sb->diag, O_CLOEXEC | O_NONBLOCK) < 0 && err_errno(e, errno, "sandbox: pipe") < 0)) {
		sandbox_free(sb);
		return NULL;
	}
	STAMP(sb, 3);
	return sb;
}

/* ---- in the child (async-signal-safe) ------------------------------------------------------ */

static int fail(const struct sandbox *sb, int stage, int op)
{
	struct failure_record r = { stage, errno ? errno : EPERM, op };
	ssize_t unused = write(sb->diag[1], &r, sizeof(r));
	(void)unused;
	return r.errnum;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fs_write_all(fd, text, strlen(text));
	close(fd);
	return rc;
}

/* mkdir -p of path's parent directories. */
static int make_parents(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	if (len >= sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	memcpy(buf, path, len + 1);
	for (size_t i = 1; i < len; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = 0;
		/* search-only: the skeleton leading to a bind can be walked, never listed nor written */
		if (mkdir(buf, 0111) < 0 && errno != EEXIST)
			return -1;
		buf[i] = '/';
	}
	return 0;
}

static int make_node(const char *path, int is_dir)
{
	int rc = is_dir ? mkdir(path, 0111) : mknod(path, S_IFREG | 0644, 0);
	return rc < 0 && errno == EEXIST ? 0 : rc;
}

/* A directory (or, when !is_dir, an empty file) at path; the parents are made only when missing, so the
 * usual case is one system call. */
static int make_mountpoint(const char *path, int is_dir)
{
	if (make_node(path, is_dir) == 0)
		return 0;
	if (errno != ENOENT || make_parents(path) < 0)
		return -1;
	return make_node(path, is_dir);
}

/* The link path → target, replacing whatever is there; parents made when missing. */
static int make_symlink(const char *target, const char *path)
{
	if (symlink(target, path) == 0)
		return 0;
	if (errno == EEXIST)
		unlink(path);
	else if (errno != ENOENT || make_parents(path) < 0)
		return -1;
	return symlink(target, path);
}

static int close_keeping_errno(int fd)
{
	int saved = errno;
	if (fd >= 0)
		close(fd);
	errno = saved;
	return -1;
}

/* openat2 from dirfd (AT_FDCWD: an absolute path from the view's root) following no symlink on the way. */
static int open_no_symlinks(int dirfd, const char *path, uint64_t resolve)
{
	/* no O_NOFOLLOW: a final symlink is refused, not opened */
	return openat2_call(dirfd, path, O_PATH, resolve | OPENAT2_RESOLVE_NO_SYMLINKS | OPENAT2_RESOLVE_NO_MAGICLINKS);
}

/* The bind's source: beneath its trusted root following nothing, or a trusted host path. */
static int open_source(const struct mount_op *op)
{
	if (!op->root)
		return open(op->src, O_PATH | O_CLOEXEC);
	int rootfd = open(op->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -1;
	int fd = open_no_symlinks(rootfd, op->src, OPENAT2_RESOLVE_BENEATH);
	close_keeping_errno(rootfd);
	return fd;
}

/* The mount point, reached without following any symlink: made in the view's own skeleton when missing; inside
 * an earlier bind (territory the program could have written) it must exist and be of the source's kind. */
static int open_destination(const struct mount_op *op)
{
	if (!op->dst_in_bind && make_mountpoint(op->dst, op->is_dir) < 0)
		return -1;
	int fd = open_no_symlinks(AT_FDCWD, op->dst, 0);
	struct stat st;
	if (fd >= 0 && op->dst_in_bind && (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) != !op->is_dir)) {
		errno = op->is_dir ? ENOTDIR : EISDIR;
		return close_keeping_errno(fd);
	}
	return fd;
}

/* Clones the tree at src (a descriptor), sets its attributes while it is detached, attaches it at dst. */
static int attach_clone(int src, int dst, uint64_t attrs, int userns_fd)
{
	int tree = (int)syscall(SYS_open_tree, src, "",
				OPEN_TREE_CLONE_ | OPEN_TREE_CLOEXEC_ | AT_EMPTY_PATH | AT_RECURSIVE_);
	if (tree < 0)
		return -1;
	struct mount_attr_ attr = { .attr_set = attrs };
	if (userns_fd >= 0) {
		attr.attr_set |= MOUNT_ATTR_IDMAP_;
		attr.userns_fd = (uint64_t)userns_fd;
	}
	int rc = (int)syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE_, &attr, sizeof(attr));
	if (rc < 0 && userns_fd >= 0)
		rc = -2; /* the filesystem has no idmapped mounts */
	if (rc == 0)
		rc = (int)syscall(SYS_move_mount, tree, "", dst, "",
				  MOVE_MOUNT_F_EMPTY_PATH_ | MOVE_MOUNT_T_EMPTY_PATH_);
	close_keeping_errno(tree);
	return rc;
}

/* A trusted bind (a system path, never one the program could have written) into the view's own skeleton: by path,
 * the attributes set afterwards on the attached mount — two mount calls. */
static int apply_trusted_bind(const struct mount_op *op)
{
	if (make_mountpoint(op->dst, op->is_dir) < 0 || mount(op->src, op->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -1;
	struct mount_attr_ attr = { .attr_set = op->attrs };
	return op->attrs ? (int)syscall(SYS_mount_setattr, AT_FDCWD, op->dst, AT_RECURSIVE_, &attr, sizeof(attr)) : 0;
}

static int apply_bind(const struct sandbox *sb, const struct mount_op *op)
{
	if (!op->root && !op->dst_in_bind && !op->idmap)
		return apply_trusted_bind(op);
	int src = open_source(op);
	if (src < 0)
		return -1;
	int dst = open_destination(op);
	int rc = dst < 0 ? -1 : attach_clone(src, dst, op->attrs, op->idmap ? sb->idmap_fd : -1);
	close_keeping_errno(src);
	close_keeping_errno(dst);
	return rc;
}

/* /proc/sys and the like (our own proc's), bound onto themselves read-only (missing ones are fine). */
static int apply_self_read_only(const struct mount_op *op)
{
	if (mount(op->dst, op->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return errno == ENOENT ? 0 : -1;
	struct mount_attr_ attr = { .attr_set = MOUNT_ATTR_RDONLY_ | MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_ |
						MOUNT_ATTR_NOEXEC_ };
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, op->dst, AT_RECURSIVE_, &attr, sizeof(attr));
}

/* "/proc/self/fd/N" for mount(2) on a descriptor (async-signal-safe). */
static void fd_path(char buf[32], int fd)
{
	char digits[12];
	int n = 0;
	do
		digits[n++] = (char)('0' + fd % 10);
	while ((fd /= 10) > 0);
	memcpy(buf, "/proc/self/fd/", 14);
	for (int i = 0; i < n; i++)
		buf[14 + i] = digits[n - 1 - i];
	buf[14 + n] = 0;
}

/* A tmpfs at dst; inside a bind (a cover) the mount point is reached without symlinks, by descriptor. */
static int apply_tmpfs(const struct mount_op *op)
{
	if (!op->dst_in_bind)
		return make_mountpoint(op->dst, 1) < 0
			       ? -1
			       : mount("tmpfs", op->dst, "tmpfs", MS_NOSUID | MS_NODEV, op->data);
	int fd = open_no_symlinks(AT_FDCWD, op->dst, 0);
	if (fd < 0)
		return -1;
	char path[32];
	fd_path(path, fd);
	int rc = mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, op->data);
	close_keeping_errno(fd);
	return rc;
}

/* The read-only seal of a shield, cover or /etc: by the descriptor kept when its tmpfs was mounted. */
static int seal(int fd, int recursive)
{
	struct mount_attr_ attr = { .attr_set = MOUNT_ATTR_RDONLY_ | MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_ };
	unsigned flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE_ : 0);
	return fd < 0 ? (errno = EBADF, -1) : (int)syscall(SYS_mount_setattr, fd, "", flags, &attr, sizeof(attr));
}

/* roots[i]: an O_PATH descriptor of the tmpfs op i mounted (kept for its seal), else -1. */
static int apply_op(const struct sandbox *sb, const struct mount_op *op, int *roots, int i)
{
	switch (op->kind) {
	case OP_BIND:
		return apply_bind(sb, op);
	case OP_TMPFS:
		if (apply_tmpfs(op) < 0)
			return -1;
		if (!op->sealed)
			return 0;
		roots[i] = open_no_symlinks(AT_FDCWD, op->dst, 0);
		return roots[i] < 0 ? -1 : 0;
	case OP_SYMLINK:
		return make_symlink(op->data, op->dst);
	case OP_PROC:
		if (make_mountpoint(op->dst, 1) < 0)
			return -1;
		return mount("proc", op->dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	case OP_DEVPTS:
		if (make_mountpoint(op->dst, 1) < 0)
			return -1;
		mount("devpts", op->dst, "devpts", MS_NOSUID | MS_NOEXEC, op->data); /* optional */
		return 0;
	case OP_READ_ONLY:
		return seal(roots[op->target], op->recursive);
	case OP_SELF_RO:
		return apply_self_read_only(op);
	}
	return errno = EINVAL, -1;
}

static int stage_of(enum op_kind kind)
{
	return kind == OP_PROC || kind == OP_SELF_RO ? ST_PROC : kind == OP_READ_ONLY ? ST_SHIELD : ST_MOUNT;
}

/* A tmpfs becomes the root; the old root stays reachable at OLDROOT while the binds are made. */
static int build_root(const struct sandbox *sb)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return fail(sb, ST_MOUNT_PRIVATE, -1);
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0 || chdir("/tmp") < 0 ||
	    mkdir("oldroot", 0700) < 0)
		return fail(sb, ST_ROOT, -1);
	if (syscall(SYS_pivot_root, ".", "oldroot") < 0 || chdir("/") < 0)
		return fail(sb, ST_PIVOT, -1);
	STAMP(sb, 9);
	int roots[MAX_OPS];
	for (int i = 0; i < sb->nops; i++)
		roots[i] = -1;
	for (int i = 0; i < sb->nops; i++) {
		int rc = apply_op(sb, &sb->ops[i], roots, i);
		if (rc < 0)
			return fail(sb, rc == -2 ? ST_IDMAP : stage_of(sb->ops[i].kind), i);
	}
	for (int i = 0; i < sb->nops; i++)
		if (roots[i] >= 0)
			close(roots[i]);
	STAMP(sb, 10);
	if (umount2(OLDROOT, MNT_DETACH) < 0 || rmdir(OLDROOT) < 0)
		return fail(sb, ST_OLDROOT, -1);
	if (mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		return fail(sb, ST_ROOT, -1);
	return 0;
}

static int loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	ifr.ifr_flags = IFF_UP | IFF_RUNNING;
	int rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	close(s);
	return rc;
}

static int set_limit(int resource, long long value)
{
	struct rlimit rl = { (rlim_t)value, (rlim_t)value };
	return setrlimit(resource, &rl);
}

static int apply_rlimits(const struct sandbox *sb)
{
	if (set_limit(RLIMIT_CORE, 0) < 0)
		return -1;
	if (sb->cfg.nofile > 0 && set_limit(RLIMIT_NOFILE, sb->cfg.nofile) < 0)
		return -1;
	return sb->cfg.fsize_bytes > 0 ? set_limit(RLIMIT_FSIZE, sb->cfg.fsize_bytes) : 0;
}

#define SECBIT_NOROOT			   (1 << 0)
#define SECBIT_NOROOT_LOCKED		   (1 << 1)
#define SECBIT_NO_SETUID_FIXUP		   (1 << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED	   (1 << 3)
#define SECBIT_KEEP_CAPS_LOCKED		   (1 << 5)
#define SECBIT_NO_CAP_AMBIENT_RAISE	   (1 << 6)
#define SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED (1 << 7)
#define CAPABILITY_VERSION_3		   0x20080522

/* A root executor's run becomes root_maps_to: no supplementary groups, then gid and uid (capabilities are
 * kept across the switch by SECBIT_NO_SETUID_FIXUP, and cleared right after). */
static int become_unprivileged(const struct sandbox *sb)
{
	gid_t id = (gid_t)sb->cfg.root_maps_to;
	if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, id, id, id) < 0 ||
	    syscall(SYS_setresuid, (uid_t)id, (uid_t)id, (uid_t)id) < 0)
		return -1;
	/* A change of credentials clears the parent-death signal: set it again, or PID 1 (and the whole run) would
	 * outlive a killed executor. */
	return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ? -1 : 0;
}

/* Bounding and ambient sets emptied, securebits locked (uid 0 gains nothing at exec), a root executor's run
 * switched to its unprivileged ids, then effective, permitted and inheritable cleared. */
static int drop_capabilities(const struct sandbox *sb)
{
	for (int cap = 0; cap <= sb->last_cap; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -1;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -1;
	if (prctl(PR_SET_SECUREBITS,
		  SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
			  SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
		  0, 0, 0) < 0)
		return -1;
	if (sb->as_root && become_unprivileged(sb) < 0)
		return -1;
	struct {
		uint32_t version;
		int pid;
	} header = { CAPABILITY_VERSION_3, 0 };
	struct {
		uint32_t effective, permitted, inheritable;
	} data[2];
	memset(data, 0, sizeof(data));
	return syscall(SYS_capset, &header, data) < 0 ? -1 : 0;
}

/* ---- the egress relay: 127.0.0.1:SANDBOX_EGRESS_PORT inside, the proxy's Unix socket outside (egress.h) ---- */

static int egress_listener = -1; /* PID 1's, until the relay has it */

static int egress_listen(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(SANDBOX_EGRESS_PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 128) < 0)
		return -1;
	egress_listener = s;
	return 0;
}

/* Copies one read from `from` to `to`; 0 at end of file, -1 on failure. */
static int relay_copy(int from, int to, char *buf, size_t size)
{
	ssize_t n = read(from, buf, size);
	if (n < 0 && errno == EINTR)
		return 1;
	if (n <= 0)
		return n == 0 ? 0 : -1;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += w;
	}
	return 1;
}

static NORETURN void relay_connection(const struct sandbox *sb, int client)
{
	char buf[16384];
	int up = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (up < 0 || connect(up, (const struct sockaddr *)&sb->egress_addr, sizeof(sb->egress_addr)) < 0)
		_exit(1);
	int open_in[2] = { 1, 1 }, fds[2] = { client, up };
	while (open_in[0] || open_in[1]) {
		struct pollfd p[2] = { { .fd = open_in[0] ? client : -1, .events = POLLIN },
				       { .fd = open_in[1] ? up : -1, .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		for (int i = 0; i < 2; i++) {
			if (!p[i].revents)
				continue;
			int rc = relay_copy(fds[i], fds[1 - i], buf, sizeof(buf));
			if (rc < 0)
				_exit(1);
			if (rc == 0) {
				open_in[i] = 0;
				shutdown(fds[1 - i], SHUT_WR);
			}
		}
	}
	_exit(0);
}

static NORETURN void relay_main(const struct sandbox *sb)
{
	/* Nothing of PID 1's but the listener: child.c's exec-report pipe (closed only by an exec, which the relay
	 * never does) and the program's stdio must not be held open by it. */
	syscall(SYS_close_range, 0U, (unsigned)egress_listener - 1, 0U);
	syscall(SYS_close_range, (unsigned)egress_listener + 1, ~0U, 0U);
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigaction(SIGCHLD, &ign, NULL); /* the connections' processes reap themselves */
	sigaction(SIGPIPE, &ign, NULL);
	for (;;) {
		int c = accept4(egress_listener, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS)
				continue;
			_exit(1);
		}
		pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
		if (pid == 0) {
			close(egress_listener);
			relay_connection(sb, c);
		}
		close(c);
	}
}

/* The relay: a child of PID 1, as confined as the program (forked once every control is in force). */
static int start_relay(const struct sandbox *sb)
{
	pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid < 0)
		return -1;
	if (pid == 0)
		relay_main(sb);
	close(egress_listener);
	egress_listener = -1;
	return 0;
}

/* Everything PID 1 does before it forks the program. */
static int confine_init(const struct sandbox *sb)
{
	int rc;
	if ((rc = build_root(sb)) != 0)
		return rc;
	STAMP(sb, 11);
	if (sethostname("agor-sandbox", 12) < 0)
		return fail(sb, ST_HOSTNAME, -1);
	if (sb->cfg.network_none && loopback_up() < 0)
		return fail(sb, ST_LOOPBACK, -1);
	if (sb->use_egress && egress_listen() < 0)
		return fail(sb, ST_EGRESS, -1);
	STAMP(sb, 12);
	if (apply_rlimits(sb) < 0)
		return fail(sb, ST_RLIMIT, -1);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail(sb, ST_NO_NEW_PRIVS, -1);
	STAMP(sb, 13);
	if (sb->use_landlock && landlock_apply(&sb->landlock) < 0)
		return fail(sb, ST_LANDLOCK, -1);
	STAMP(sb, 14);
	if (drop_capabilities(sb) < 0)
		return fail(sb, ST_CAPS, -1);
	STAMP(sb, 15);
	if (sb->use_seccomp && seccomp_filter_install(&sb->seccomp) < 0)
		return fail(sb, ST_SECCOMP, -1);
	STAMP(sb, 16);
	if (sb->use_egress && start_relay(sb) < 0)
		return fail(sb, ST_EGRESS, -1);
	return 0;
}

static NORETURN void exit_like(int status)
{
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
}

static volatile pid_t forward_to;

static void forward_signal(int sig)
{
	if (forward_to > 0)
		kill(forward_to, sig);
}

/* Waits for pid (reaping any other child on the way) and exits with its status; a stop request
 * (SIGTERM, SIGINT, SIGHUP) is passed on to pid, so the program can end gracefully. */
static NORETURN void wait_and_mirror(pid_t pid)
{
	forward_to = pid;
	child_on_stop_signals(forward_signal);
	for (;;) {
		int status;
		pid_t got = waitpid(-1, &status, 0);
		STAMP_REAPED(pid, got);
		if (got == pid)
			exit_like(status);
		if (got < 0 && errno != EINTR)
			_exit(127);
	}
}

/* A root executor needs no user namespace (it may make every namespace itself, and its run ends up unprivileged
 * on the host, not root in a namespace); anyone else makes the others through one. */
static unsigned long namespace_flags(const struct sandbox *sb)
{
	unsigned long flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
	if (!sb->as_root)
		flags |= CLONE_NEWUSER;
	return sb->cfg.network_none ? flags | CLONE_NEWNET : flags;
}

/* The caller's uid and gid mapped to themselves in the new user namespace (setgroups denied); none for root. */
static int map_ids(const struct sandbox *sb)
{
	if (sb->as_root)
		return 0;
	if (write_file("/proc/self/setgroups", "deny") < 0 || write_file("/proc/self/uid_map", sb->uid_map) < 0 ||
	    write_file("/proc/self/gid_map", sb->gid_map) < 0)
		return fail(sb, ST_ID_MAP, -1);
	STAMP(sb, 7);
	return 0;
}

/* PID 1: confines itself; child.c then starts the program and calls init_waits(). */
static int become_init(const struct sandbox *sb)
{
	int rc;
	STAMP(sb, 8);
	if (sb->env_end > sb->env_start) /* the program can read /proc/1/environ: leave nothing there */
		memset((void *)sb->env_start, 0, sb->env_end - sb->env_start);
	if ((rc = confine_init(sb)) != 0)
		return rc;
	return STAMP(sb, 17), 0;
}

/* become_init of child.c, in PID 1 once the program has exec'd (or failed to). */
static NORETURN void init_waits(void *arg, pid_t program)
{
#ifdef SANDBOX_TIMING
	init_times = ((const struct sandbox *)arg)->times;
#else
	(void)arg;
#endif
	syscall(SYS_close_range, 3U, ~0U, 0U);
	wait_and_mirror(program);
}

/* In the child, which child.c cloned as PID 1 of the new namespaces (sandbox_apply's clone_flags). */
static int sandbox_before_exec(void *arg)
{
	const struct sandbox *sb = arg;
	int rc;
	STAMP(sb, 4);
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); /* the run ends with the executor that started it */
	if (sb->use_cgroup && !sb->born_in_cgroup && cgroup_join_self(&sb->cgroup) < 0)
		return fail(sb, ST_CGROUP, -1);
	STAMP(sb, 5);
	if ((rc = map_ids(sb)) != 0)
		return rc;
	return become_init(sb);
}

/* child.c's on_started: the run's PID 1 is there; its write budget is watched from now on, on child.c's ticks. */
static void sandbox_started(pid_t pid, void *arg)
{
	struct sandbox *sb = arg;
	sb->disk = diskwatch_start(pid, sb->cfg.disk_max_bytes);
}

static void sandbox_tick(void *arg)
{
	diskwatch_sample(((struct sandbox *)arg)->disk);
}

void sandbox_apply(struct sandbox *sb, struct child *c)
{
	c->on_started = sandbox_started;
	c->on_started_arg = sb;
	if (sb->cfg.disk_max_bytes > 0) {
		c->on_tick = sandbox_tick;
		c->on_tick_arg = sb;
		c->tick_ms = DISKWATCH_PERIOD_MS;
	}
	c->before_exec = sandbox_before_exec;
	c->before_exec_arg = sb;
	c->clone_flags = namespace_flags(sb);
	if (sb->use_cgroup && sb->cgroup.dir_fd >= 0) {
		c->clone_cgroup_fd = sb->cgroup.dir_fd;
		c->born_in_cgroup = &sb->born_in_cgroup;
	}
	c->become_init = init_waits;
}

/* ---- probing (parent) ---------------------------------------------------------------------- */

void sandbox_probe(struct sandbox_probe *p)
{
	memset(p, 0, sizeof(*p));
	p->landlock_abi = landlock_abi();
	p->landlock_errno = p->landlock_abi < 0 ? errno : 0;
	struct seccomp_filter f;
	p->seccomp = seccomp_filter_build(&f) == 0;
	p->mount_api = have_mount_api();
	pid_t pid = fork();
	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) < 0 ? (errno & 0x7f) : 0);
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		p->user_namespaces_errno = pid < 0 ? errno : ECHILD;
		return;
	}
	p->user_namespaces = WEXITSTATUS(status) == 0;
	p->user_namespaces_errno = WEXITSTATUS(status);
}

/* ---- after the run (parent) ---------------------------------------------------------------- */

/* What a planted symlink or a swap makes the no-follow opens of the child answer. */
static int untrusted_path_error(int errnum)
{
	return errnum == ELOOP || errnum == EXDEV || errnum == ENOTDIR || errnum == EISDIR || errnum == ENOENT;
}

int sandbox_explain_failure(struct sandbox *sb, struct err *e)
{
	struct failure_record r;
	json_t *stage = e->details ? json_object_get(e->details, "stage") : NULL;
	if (read(sb->diag[0], &r, sizeof(r)) != (ssize_t)sizeof(r)) {
		/* child.c's clone with the namespace flags failed: the kernel refused a new user namespace */
		if (!json_is_string(stage) || strcmp(json_string_value(stage), "clone"))
			return -1;
		r = (struct failure_record){ ST_UNSHARE, (int)json_integer_value(json_object_get(e->details, "errno")),
					     -1 };
	}
	if (r.stage <= ST_NONE || r.stage >= (int)ARRAY_SIZE(stage_controls))
		return -1;
	const struct mount_op *op = r.op >= 0 && r.op < sb->nops ? &sb->ops[r.op] : NULL;
	const char *what = op ? op->dst : NULL;
	if (r.stage == ST_MOUNT && op && (op->root || op->dst_in_bind) && untrusted_path_error(r.errnum))
		return err_setd(
			e, E_PATH_OUTSIDE_DATA_HOME, json_pack("{s:s,s:i}", "path", what, "errno", r.errnum),
			"sandbox: %s (or a directory on its way) is a symlink, missing or of another kind than when "
			"the run was planned (%s): something that ran there may have planted it; refusing to bind "
			"it; nothing was run",
			what, strerror(r.errnum));
	if (r.stage == ST_IDMAP)
		return err_setd(
			e, E_ISOLATION_UNAVAILABLE,
			json_pack("{s:s,s:s*,s:i}", "missing", "idmapped mounts", "path", what, "errno", r.errnum),
			"sandbox: idmapped mounts unavailable at %s: %s; a root executor's runs need them on the data "
			"home's filesystem (Linux 5.12+; tmpfs 6.3+): run the executor as a non-root user, or move the "
			"data home; nothing was run",
			what, strerror(r.errnum));
	return err_setd(
		e, E_ISOLATION_UNAVAILABLE,
		json_pack("{s:s,s:s*,s:i}", "missing", stage_controls[r.stage], "path", what, "errno", r.errnum),
		"sandbox: %s unavailable%s%s: %s; nothing was run", stage_controls[r.stage], what ? " at " : "",
		what ? what : "", strerror(r.errnum));
}

static json_t *strvec_to_json(const struct strvec *v)
{
	json_t *a = json_array();
	for (size_t i = 0; i < v->nr; i++)
		json_array_append_new(a, json_string(v->v[i]));
	return a;
}

static json_t *namespaces_json(const struct sandbox *sb)
{
	json_t *a = json_pack("[s,s,s,s]", "mount", "pid", "ipc", "uts");
	if (!sb->as_root)
		json_array_insert_new(a, 0, json_string("user"));
	if (sb->cfg.network_none)
		json_array_append_new(a, json_string("net"));
	return a;
}

static json_t *seccomp_json(const struct sandbox *sb)
{
	if (!sb->use_seccomp)
		return json_null();
	json_t *denied = json_array();
	for (const char *const *n = seccomp_denied_names(); *n; n++)
		json_array_append_new(denied, json_string(*n));
	return json_pack("{s:o,s:s,s:s,s:s,s:s,s:s}", "denied", denied, "namespaceFlags",
			 "clone/unshare denied; clone3 ENOSYS", "sockets", "AF_NETLINK, AF_PACKET, AF_VSOCK denied",
			 "ioctls", "TIOCSTI, TIOCLINUX denied", "setidBits",
			 "setuid/setgid modes denied (chmod, creat, open, mknod)", "foreignArch", "killed");
}

json_t *sandbox_receipt(const struct sandbox *sb)
{
	json_t *r = json_pack("{s:b,s:o,s:s,s:{s:o,s:o,s:o},s:o,s:o,s:b,s:s,s:o,s:{s:i,s:I,s:I},s:O}", "enabled", 1,
			      "namespaces", namespaces_json(sb), "network",
			      sb->use_egress	     ? "proxy"
			      : sb->cfg.network_none ? "none"
						     : "host",
			      "mounts", "readOnly", strvec_to_json(&sb->ro_paths), "readWrite",
			      strvec_to_json(&sb->rw_paths), "private", strvec_to_json(&sb->private_paths), "landlock",
			      sb->use_landlock ? landlock_receipt(&sb->landlock) : json_null(), "seccomp",
			      seccomp_json(sb), "noNewPrivs", 1, "capabilities", "none", "cgroup",
			      sb->cgroup_receipt ? json_incref(sb->cgroup_receipt) : json_null(), "rlimits", "core", 0,
			      "nofile", (json_int_t)sb->cfg.nofile, "fsizeBytes", (json_int_t)sb->cfg.fsize_bytes,
			      "warnings", sb->warnings);
	if (sb->as_root) /* a root executor's run: unprivileged on the host, the data home idmapped */
		json_object_set_new(r, "runAs",
				    json_pack("{s:I,s:I,s:s}", "uid", (json_int_t)sb->cfg.root_maps_to, "gid",
					      (json_int_t)sb->cfg.root_maps_to, "dataHome",
					      "idmapped (uid/gid 0 on disk)"));
	if (sb->events)
		json_object_set(r, "events", sb->events);
	if (sb->use_egress)
		json_object_set_new(r, "egress",
				    json_pack("{s:o,s:s}", "proxy", json_sprintf("127.0.0.1:%d", SANDBOX_EGRESS_PORT),
					      "socket", sb->egress_socket));
	return r;
}

/* The write budget's outcome, once the run is over. */
static void finish_disk(struct sandbox *sb)
{
	long long written;
	int hit = diskwatch_stop(sb->disk, &written);
	sb->disk = NULL;
	if (sb->cfg.disk_max_bytes > 0) {
		json_object_set_new(sb->events, "diskLimitHits", json_integer(hit));
		json_object_set_new(sb->events, "diskMaxBytes", json_integer(sb->cfg.disk_max_bytes));
		json_object_set_new(sb->events, "diskWrittenBytes", json_integer(written));
	}
}

json_t *sandbox_finish(struct sandbox *sb)
{
	STAMP(sb, 19);
	reap_idmap_helper(sb);
	if (!sb->events) {
		sb->events = sb->use_cgroup ? cgroup_events(&sb->cgroup) : json_object();
		finish_disk(sb);
	}
	STAMP(sb, 20);
	if (sb->use_cgroup) {
		cgroup_destroy(&sb->cgroup);
		sb->use_cgroup = 0;
		json_object_set_new(sb->events, "cgroupRemoved", json_true());
	}
	STAMP(sb, 21);
	return json_incref(sb->events);
}

void sandbox_free(struct sandbox *sb)
{
	if (!sb)
		return;
	long long ignored;
	diskwatch_stop(sb->disk, &ignored);
	reap_idmap_helper(sb);
	free(sb->egress_socket);
	if (sb->use_cgroup)
		cgroup_destroy(&sb->cgroup);
	for (int i = 0; i < sb->nops; i++) {
		free(sb->ops[i].root);
		free(sb->ops[i].src);
		free(sb->ops[i].dst);
		free(sb->ops[i].data);
	}
	if (sb->idmap_fd >= 0)
		close(sb->idmap_fd);
	if (sb->diag[0] >= 0)
		close(sb->diag[0]);
	if (sb->diag[1] >= 0)
		close(sb->diag[1]);
	strvec_clear(&sb->ro_paths);
	strvec_clear(&sb->rw_paths);
	strvec_clear(&sb->private_paths);
	strvec_clear(&sb->open_to_write);
	strvec_clear(&sb->protected);
	free(sb->data_home);
	json_decref(sb->warnings);
	json_decref(sb->cgroup_receipt);
	json_decref(sb->events);
#ifdef SANDBOX_TIMING
	if (sb->times)
		munmap(sb->times, 4096);
#endif
	free(sb);
}
