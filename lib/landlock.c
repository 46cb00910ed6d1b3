/* landlock.c — probes the Landlock ABI, builds rulesets and applies them in the sandbox child (landlock.h).
 * Our own definitions of the kernel's structures: the toolchain's headers may predate ABI 4–6. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "landlock.h"
#include "banned.h"

#define NR_LANDLOCK_CREATE_RULESET	444
#define NR_LANDLOCK_ADD_RULE		445
#define NR_LANDLOCK_RESTRICT_SELF	446
#define LANDLOCK_CREATE_RULESET_VERSION 1U
#define LANDLOCK_RULE_PATH_BENEATH	1
#define LANDLOCK_RULE_NET_PORT		2

#define FS_EXECUTE		   (1ULL << 0)
#define FS_WRITE_FILE		   (1ULL << 1)
#define FS_READ_FILE		   (1ULL << 2)
#define FS_READ_DIR		   (1ULL << 3)
#define FS_MAKE_CHAR		   (1ULL << 6)
#define FS_MAKE_SOCK		   (1ULL << 9)
#define FS_MAKE_FIFO		   (1ULL << 10)
#define FS_MAKE_BLOCK		   (1ULL << 11)
#define FS_MAKE_SYM		   (1ULL << 12)
#define FS_TRUNCATE		   (1ULL << 14)
#define FS_IOCTL_DEV		   (1ULL << 15)
#define NET_BIND_TCP		   (1ULL << 0)
#define NET_CONNECT_TCP		   (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SCOPE_SIGNAL		   (1ULL << 1)

#define FILE_RIGHTS (FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV)

static const char *const fs_right_names[] = {
	"execute",  "write_file", "read_file", "read_dir",   "remove_dir", "remove_file", "make_char", "make_dir",
	"make_reg", "make_sock",  "make_fifo", "make_block", "make_sym",   "refer",	  "truncate",  "ioctl_dev",
};

struct ruleset_attr {
	uint64_t handled_access_fs, handled_access_net, scoped;
};

struct path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

int landlock_abi(void)
{
	long abi = syscall(NR_LANDLOCK_CREATE_RULESET, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return abi < 1 ? -1 : (int)abi;
}

static uint64_t fs_rights_of_abi(int abi)
{
	uint64_t rights = (1ULL << 13) - 1; /* ABI 1: execute … make_sym */
	if (abi >= 2)
		rights |= 1ULL << 13; /* refer */
	if (abi >= 3)
		rights |= FS_TRUNCATE;
	if (abi >= 5)
		rights |= FS_IOCTL_DEV;
	return rights;
}

void landlock_plan_init(struct landlock_plan *plan, int abi, int network_none, int connect_port)
{
	plan->connect_port = abi >= 4 && network_none ? connect_port : 0;
	plan->abi = abi;
	plan->nrules = 0;
	plan->handled_fs = fs_rights_of_abi(abi);
	plan->handled_net = abi >= 4 && network_none ? NET_BIND_TCP | NET_CONNECT_TCP : 0;
	plan->scoped = abi >= 6 ? SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL : 0;
}

int landlock_plan_add(struct landlock_plan *plan, const char *path, enum landlock_kind kind)
{
	if (plan->nrules == LANDLOCK_MAX_RULES)
		return -1;
	plan->rules[plan->nrules].path = path;
	plan->rules[plan->nrules].kind = kind;
	plan->nrules++;
	return 0;
}

static uint64_t rights_of_kind(const struct landlock_plan *plan, enum landlock_kind kind)
{
	switch (kind) {
	case LANDLOCK_READ:
		return (FS_EXECUTE | FS_READ_FILE | FS_READ_DIR) & plan->handled_fs;
	case LANDLOCK_DEVICE:
		return (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_READ_DIR | FS_IOCTL_DEV) & plan->handled_fs;
	case LANDLOCK_DATA:
		return plan->handled_fs & ~(FS_MAKE_CHAR | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM);
	case LANDLOCK_TREE:
		return plan->handled_fs & ~(FS_MAKE_CHAR | FS_MAKE_FIFO | FS_MAKE_BLOCK);
	case LANDLOCK_WRITE:
		break;
	}
	return plan->handled_fs;
}

static size_t ruleset_attr_size(int abi)
{
	if (abi >= 6)
		return sizeof(struct ruleset_attr);
	return abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
}

/* One path_beneath rule; a path that does not exist is skipped. */
static int add_path_rule(int ruleset, const char *path, uint64_t rights)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		rights &= FILE_RIGHTS;
	struct path_beneath_attr attr = { .allowed_access = rights, .parent_fd = fd };
	long r = syscall(NR_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0);
	int saved = errno;
	close(fd);
	errno = saved;
	return r < 0 ? -1 : 0;
}

int landlock_apply(const struct landlock_plan *plan)
{
	struct ruleset_attr attr = {
		.handled_access_fs = plan->handled_fs,
		.handled_access_net = plan->handled_net,
		.scoped = plan->scoped,
	};
	long ruleset = syscall(NR_LANDLOCK_CREATE_RULESET, &attr, ruleset_attr_size(plan->abi), 0);
	if (ruleset < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < plan->nrules && rc == 0; i++)
		rc = add_path_rule((int)ruleset, plan->rules[i].path, rights_of_kind(plan, plan->rules[i].kind));
	if (rc == 0 && plan->connect_port) {
		struct net_port_attr port = { .allowed_access = NET_CONNECT_TCP, .port = (uint64_t)plan->connect_port };
		if (syscall(NR_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_NET_PORT, &port, 0) < 0)
			rc = -1;
	}
	if (rc == 0 && syscall(NR_LANDLOCK_RESTRICT_SELF, ruleset, 0) < 0)
		rc = -1;
	int saved = errno;
	close((int)ruleset);
	errno = saved;
	return rc;
}

static json_t *right_names(uint64_t rights)
{
	json_t *a = json_array();
	for (size_t i = 0; i < ARRAY_SIZE(fs_right_names); i++)
		if (rights & (1ULL << i))
			json_array_append_new(a, json_string(fs_right_names[i]));
	return a;
}

json_t *landlock_receipt(const struct landlock_plan *plan)
{
	static const char *const kinds[] = { "read", "write", "device", "data", "tree" };
	json_t *rules = json_array();
	for (size_t i = 0; i < plan->nrules; i++)
		json_array_append_new(rules, json_pack("{s:s,s:s}", "path", plan->rules[i].path, "access",
						       kinds[plan->rules[i].kind]));
	json_t *scoped = json_array();
	if (plan->scoped & SCOPE_ABSTRACT_UNIX_SOCKET)
		json_array_append_new(scoped, json_string("abstract_unix_socket"));
	if (plan->scoped & SCOPE_SIGNAL)
		json_array_append_new(scoped, json_string("signal"));
	json_t *tcp = !plan->handled_net   ? json_string("not restricted")
		      : plan->connect_port ? json_sprintf("bind denied; connect to port %d only", plan->connect_port)
					   : json_string("bind and connect denied");
	return json_pack("{s:i,s:o,s:o,s:o,s:o}", "abi", plan->abi, "handledFs", right_names(plan->handled_fs), "tcp",
			 tcp, "scoped", scoped, "rules", rules);
}
