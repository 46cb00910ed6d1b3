/* prompt.c — the executor's prompt command (prompt.h): context and key from the daemon, the agent CLI
 * started in the worktree, its stdout relayed line by line, permission requests brokered, the end reported. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "acp.h"
#include "agent.h"
#include "approvals_policy.h"
#include "child.h"
#include "common.h"
#include "confine.h"
#include "egress.h"
#include "execrun.h"
#include "fault.h"
#include "fsutil.h"
#include "impersonate.h"
#include "json.h"
#include "log.h"
#include "loop.h"
#include "net.h"
#include "prompt.h"
#include "rpcclient.h"
#include "strbuf.h"
#include "strvec.h"
#include "url.h"
#include "banned.h"

#define STDERR_TAIL_BYTES      4096
#define MAX_LINE_BYTES	       (16u << 20)
#define STOP_GRACE_MS	       3000
#define BROKER_READ_TIMEOUT_MS 5000

/* --- stopping: daemon cancellation arrives as SIGTERM ------------------------------------------- */

static volatile sig_atomic_t stop_requested;
static int stop_pipe[2] = { -1, -1 };

static void on_stop_signal(int sig)
{
	stop_requested = sig;
	child_kill_all(SIGTERM); /* the agent's group (or the impersonated executor, which relays it) */
	if (stop_pipe[1] >= 0)
		(void)!write(stop_pipe[1], "x", 1);
}

void prompt_install_stop_handlers(void)
{
	child_on_stop_signals(on_stop_signal);
	signal(SIGPIPE, SIG_IGN);
}

/* --- the run's state --------------------------------------------------------------------------- */

struct prompt_run {
	const struct prompt_request *req;
	const struct agent_adapter *adapter;
	struct rpc_client *rpc;
	json_t *context;   /* get_execution_context's answer */
	char run_dir[64];  /* private 0700 directory, or "" */
	char *socket_path; /* the permission broker's socket, or NULL */
	int listen_fd;
	struct agent_state agent;
	struct strbuf line; /* the partial stdout line */
	struct strbuf err_tail;
	int line_overflow;	 /* the current line passed MAX_LINE_BYTES: dropped up to its newline */
	struct err report_error; /* the first failure to reach the daemon */
	json_t *receipt;	 /* the sandbox controls the agent ran under */
	json_t *git_metadata;	 /* what git_layout_repair found after the run (gitlayout.h), or NULL */
	json_t *egress;		 /* the egress proxy's refusals (egress.h), or NULL */
	char *api_key;		 /* from get_api_key until the proxy (or the agent's environment) has it */
	char *sentinel;		 /* what the agent holds instead of the key, or NULL */
	struct egress *proxy;	 /* network proxy: the run's proxy, whose refusals are reported as they come */
	struct acp_client *acp;	 /* the CLI runs as an ACP agent (agent_uses_acp), or NULL */
	/* a remote daemon (callback.h): heartbeats every heartbeat_ms; a call unanswered for 3 of them is a lost link
	 */
	int remote;
	long long heartbeat_ms, permission_timeout_ms;
	uint64_t next_heartbeat;
};

static void run_release(struct prompt_run *r)
{
	if (r->listen_fd >= 0)
		close(r->listen_fd);
	if (r->run_dir[0]) {
		struct err ignored = ERR_INIT;
		fs_remove_tree(r->run_dir, &ignored);
		err_clear(&ignored);
	}
	free(r->socket_path);
	if (r->context)
		json_decref(r->context);
	json_decref(r->receipt);
	json_decref(r->git_metadata);
	json_decref(r->egress);
	if (r->api_key)
		explicit_bzero(r->api_key, strlen(r->api_key));
	free(r->api_key);
	free(r->sentinel);
	rpc_client_close(r->rpc);
	acp_free(r->acp);
	agent_state_release(&r->agent);
	strbuf_release(&r->line);
	strbuf_release(&r->err_tail);
	err_clear(&r->report_error);
}

/* --- talking to the daemon ------------------------------------------------------------------------ */

/* How long a call may wait for its answer: without limit on the Unix socket; from a remote daemon three heartbeats
 * (a permission: as long as the daemon lets a person think, and three heartbeats more). */
static int call_timeout_ms(const struct prompt_run *r, const char *method)
{
	if (!r->remote)
		return 0;
	long long ms = 3 * r->heartbeat_ms + (strcmp(method, "request_permission") ? 0 : r->permission_timeout_ms);
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static int daemon_call(struct prompt_run *r, const char *method, json_t *params /* stolen */, json_t **result,
		       struct err *e)
{
	json_object_set_new(params, "session_token", json_string(r->req->session_token));
	rpc_client_set_call_timeout(r->rpc, call_timeout_ms(r, method));
	int rc = rpc_client_call(r->rpc, method, params, result, e);
	json_decref(params);
	if (rc < 0)
		err_prefix(e, "%s", method);
	return rc;
}

static void report_message(const char *type, json_t *data, void *arg)
{
	struct prompt_run *r = arg;
	json_t *msg = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:o}}", "jsonrpc", "2.0", "method", "report_message", "params",
				"session_token", r->req->session_token, "task_id", r->req->task_id, "message_type",
				type, "data", data ? data : json_null());
	_cleanup_free_ char *text = json_to_compact(msg);
	json_decref(msg);
	static int reported;
	if (!reported++)
		fault_step("prompt.first-message"); /* test builds: a crash point (docs/recovery.md) */
	struct err e = ERR_INIT;
	if (!err_is_set(&r->report_error) && rpc_client_send(r->rpc, text, strlen(text), &e) < 0) {
		r->report_error = e; /* the daemon is gone: the agent is stopped below */
		return;
	}
	err_clear(&e);
}

static const char *context_str(const struct prompt_run *r, const char *key)
{
	return json_get_str(r->context, key);
}

static const char *model_config_str(const struct prompt_run *r, const char *key)
{
	return json_get_str(json_object_get(r->context, "model_config"), key);
}

static int fetch_api_key(struct prompt_run *r, char **key, struct err *e)
{
	json_t *result = NULL;
	if (daemon_call(r, "get_api_key", json_pack("{s:s}", "service", r->adapter->service), &result, e) < 0)
		return -1;
	const char *value = json_get_str(result, "api_key");
	int rc = value ? 0 : err_set(e, E_INTERNAL, "get_api_key: the daemon answered without api_key");
	if (value) {
		*key = xstrdup(value);
		explicit_bzero((char *)value, strlen(value));
	}
	json_decref(result);
	return rc;
}

/* --- the permission broker: `agor executor mcp-permission` connects here ------------------------ */

static int open_broker(struct prompt_run *r, struct err *e)
{
	r->socket_path = xasprintf("%s/permission.sock", r->run_dir);
	struct sockaddr_un sa;
	if (net_unix_address(r->socket_path, &sa, e) < 0)
		return -1;
	r->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->listen_fd < 0 || bind(r->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(r->listen_fd, 8) < 0)
		return err_errno(e, errno, "permission socket %s", r->socket_path);
	return 0;
}

static int write_mcp_config(struct prompt_run *r, const char *self, char **path, struct err *e)
{
	*path = xasprintf("%s/mcp.json", r->run_dir);
	json_t *cfg = json_pack("{s:{s:{s:s,s:s,s:[s,s,s,s]}}}", "mcpServers", "agor", "type", "stdio", "command", self,
				"args", "executor", "mcp-permission", "--socket", r->socket_path);
	_cleanup_free_ char *text = json_to_compact(cfg);
	json_decref(cfg);
	int fd = open(*path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int rc = fd >= 0 && fs_write_all(fd, text, strlen(text)) == 0 ? 0 : err_errno(e, errno, "writing %s", *path);
	if (fd >= 0)
		close(fd);
	return rc;
}

int prompt_read_request_line(int fd, struct strbuf *line)
{
	size_t scanned = 0; /* each byte looked at once, not once per read */
	while (!strbuf_find_newline(line, scanned)) {
		scanned = line->len;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, BROKER_READ_TIMEOUT_MS) <= 0 || line->len > (1u << 20))
			return -1;
		char buf[4096];
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return -1;
		strbuf_add(line, buf, (size_t)n);
	}
	return 0;
}

/* The daemon's answer {approved, reason} to one tool call (request_permission); a failure is a deny. */
static json_t *ask_daemon(const char *tool_name, json_t *input, json_t *tool_use_id, void *arg)
{
	struct prompt_run *r = arg;
	json_t *params = json_pack("{s:s,s:s,s:O?,s:O?}", "task_id", r->req->task_id, "tool_name",
				   tool_name ? tool_name : "", "tool_input", input, "tool_use_id", tool_use_id);
	json_t *result = NULL;
	struct err e = ERR_INIT;
	fault_step("prompt.permission-asked");
	if (daemon_call(r, "request_permission", params, &result, &e) < 0) {
		result = json_pack("{s:b,s:s}", "approved", 0, "reason", e.message);
		err_clear(&e);
	}
	return result;
}

/* An ACP agent's permission request (acp.h): decided as the MCP permission tool's are. */
static int ask_for_acp(json_t *request, void *arg)
{
	json_t *answer = ask_daemon(json_get_str(request, "tool_name"), json_object_get(request, "input"),
				    json_object_get(request, "tool_use_id"), arg);
	int approved = json_is_true(json_object_get(answer, "approved"));
	json_decref(answer);
	return approved;
}

static void serve_one_permission(struct prompt_run *r)
{
	int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	struct strbuf line = STRBUF_INIT;
	json_t *request = prompt_read_request_line(fd, &line) == 0
				  ? json_loadb(line.buf, strcspn(line.buf, "\n"), 0, NULL)
				  : NULL;
	json_t *answer = json_is_object(request)
				 ? ask_daemon(json_get_str(request, "tool_name"), json_object_get(request, "input"),
					      json_object_get(request, "tool_use_id"), r)
				 : json_pack("{s:b,s:s}", "approved", 0, "reason", "malformed permission request");
	_cleanup_free_ char *text = json_to_compact(answer);
	strbuf_reset(&line);
	strbuf_addstr(&line, text);
	strbuf_addch(&line, '\n');
	(void)fs_write_all(fd, line.buf, line.len);
	close(fd);
	strbuf_release(&line);
	json_decref(answer);
	if (request)
		json_decref(request);
}

/* --- the agent child -------------------------------------------------------------------------------- */

static void wipe_secret_entries(struct strvec *env, const char *secret)
{
	for (size_t i = 0; secret && *secret && i < env->nr; i++)
		if (strstr(env->v[i], secret))
			explicit_bzero(env->v[i], strlen(env->v[i]));
}

/* --- the agent's sandbox -------------------------------------------------------------------------- */

static const char *const system_prefixes[] = { "/usr/", "/bin/", "/sbin/", "/lib" };

/* What the sandbox must show of the agent CLI's installation: for an npm package the top node_modules
 * directory (its dependencies and native binaries lie beside it), else the program's directory;
 * nothing for programs in the system directories, which the sandbox shows anyway. */
static char *installation_of(const char *program)
{
	for (size_t i = 0; i < ARRAY_SIZE(system_prefixes); i++)
		if (!strncmp(program, system_prefixes[i], strlen(system_prefixes[i])))
			return NULL;
	const char *nm = strstr(program, "/node_modules/");
	if (nm)
		return xasprintf("%.*s/node_modules", (int)(nm - program), program);
	return xasprintf("%.*s", (int)(strrchr(program, '/') - program), program);
}

struct agent_sandbox {
	struct execrun_confinement cf;
	char *program;		/* the CLI's canonical path */
	const char *state_root; /* the agent state directories' home on the host (in paths), or NULL */
	struct strvec paths;	/* the strings of binds */
	struct sandbox_bind binds[8];
	size_t nbinds;
};

static void agent_sandbox_release(struct agent_sandbox *as)
{
	execrun_confinement_release(&as->cf);
	free(as->program);
	strvec_clear(&as->paths);
}

static const char *keep(struct agent_sandbox *as, char *path /* stolen */)
{
	strvec_push_nodup(&as->paths, path);
	return path;
}

static void add_bind(struct agent_sandbox *as, const char *root, const char *src, const char *dst,
		     enum sandbox_access access)
{
	if (as->nbinds < ARRAY_SIZE(as->binds))
		as->binds[as->nbinds++] =
			(struct sandbox_bind){ .root = root, .src = src, .dst = dst, .access = access };
}

/* Makes rel (plain names only) below the directory rootfd, one component at a time and without following a
 * symlink, 0700. */
static int make_below(int rootfd, const char *rel, const char *where, struct err *e)
{
	_cleanup_free_ char *copy = xstrdup(rel);
	int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0), saved = errno;
	char *save = NULL;
	for (char *c = strtok_r(copy, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
		int next =
			mkdirat(fd, c, 0700) < 0 && errno != EEXIST ? -1 : confine_openat(fd, c, O_PATH | O_DIRECTORY);
		saved = errno;
		close(fd);
		fd = next;
	}
	if (fd < 0)
		return err_errno(e, saved, "making %s/%s", where, rel);
	close(fd);
	return 0;
}

/* The directory holding this user's agent state (one subdirectory per worktree): DATA_HOME/agent-state/USER —
 * agor's, never the CLI's own ~/.claude, so nothing the sandboxed agent writes there is read by the CLI run
 * outside — or, where the data home is not the user's to write, ~/.agor/agent-state. Owned by the user and 0700,
 * or refused. */
static char *state_root(const struct prompt_run *r, const struct passwd *pw, struct err *e)
{
	const char *data = r->req->cfg->paths.data_home;
	_cleanup_free_ char *shared = xasprintf("%s/agent-state", data);
	char *root = NULL;
	if (mkdir(shared, 01733) == 0 || errno == EEXIST)
		root = xasprintf("%s/%s", shared, pw->pw_name);
	else if (errno == EACCES || errno == EROFS)
		root = xasprintf("%s/.agor/agent-state", pw->pw_dir);
	else
		return err_errno(e, errno, "mkdir %s", shared), NULL;
	if (mkdir(root, 0700) < 0 && errno != EEXIST && fs_mkdir_p(root, 0700, e) < 0) {
		free(root);
		return NULL;
	}
	struct stat st;
	if (lstat(root, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		err_set(e, E_PERMISSION_DENIED,
			"%s must be a directory of %s's, mode 0700 (it holds the agent's "
			"sessions): fix or remove it",
			root, pw->pw_name);
		free(root);
		return NULL;
	}
	return root;
}

/* The adapter's state directories, agor-managed per user (state_root), bound read-write where the CLI looks for
 * them in the sandbox's private home: the CLI keeps its sessions for resume, and nothing of the real home is seen. */
/* This worktree's own part of the user's agent state ("org%repo%name"): what an agent leaves there (a hook in
 * settings.json) reaches only later prompts in the same worktree, never another repository's. */
static char *worktree_key(const struct prompt_run *r)
{
	const char *root = r->req->cfg->paths.worktrees_dir, *cwd = r->req->cwd;
	size_t n = strlen(root);
	char *key = xstrdup(!strncmp(cwd, root, n) && cwd[n] == '/' ? cwd + n + 1 : cwd);
	for (char *c = key; *c; c++)
		if (*c == '/')
			*c = '%';
	return key;
}

static int add_state_dirs(struct prompt_run *r, const struct passwd *pw, int plan_only, struct agent_sandbox *as,
			  struct err *e)
{
	_cleanup_free_ char *key = worktree_key(r);
	const char *user =
		plan_only ? keep(as, xasprintf("%s/agent-state/%s", r->req->cfg->paths.data_home, pw->pw_name)) : NULL;
	if (!user) {
		char *made = state_root(r, pw, e);
		if (!made)
			return -1;
		user = keep(as, made);
	}
	_cleanup_close_ int userfd = plan_only ? -1 : open(user, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!plan_only && make_below(userfd, key, user, e) < 0)
		return -1;
	const char *root = as->state_root = keep(as, xasprintf("%s/%s", user, key));
	_cleanup_close_ int rootfd = plan_only ? -1 : confine_open(user, key, O_PATH | O_DIRECTORY);
	_cleanup_free_ char *home = execrun_home_inside(r->req->cfg, pw->pw_dir); /* where $HOME is inside */
	for (const char *const *d = r->adapter->state_dirs; d && *d; d++) {
		if (!plan_only && make_below(rootfd, *d, root, e) < 0)
			return -1;
		add_bind(as, root, keep(as, xasprintf("%s/%s", root, *d)), keep(as, xasprintf("%s/%s", home, *d)),
			 SANDBOX_WRITE);
	}
	return 0;
}

/* The provider endpoint the agent talks to: agents.<tool>.base_url, else the provider's own. */
static const char *provider_url(const struct prompt_run *r, const char *base_url)
{
	return base_url ? base_url : r->adapter->default_endpoint;
}

/* The session's permission mode: the request's, else the daemon's context's, else default. */
static const char *permission_mode(const struct prompt_run *r)
{
	const char *mode = r->req->permission_mode ? r->req->permission_mode : context_str(r, "permission_mode");
	return mode ? mode : "default";
}

static int confine_agent(struct prompt_run *r, const char *program, const char *self, const char *base_url,
			 int plan_only, struct agent_sandbox *as, struct err *e)
{
	memset(&as->cf, 0, sizeof(as->cf));
	const char *path_env = getenv("PATH"); /* where the CLI is found; inside, PATH is the sandbox's own */
	if (!(as->program = appr_resolve_executable(program, r->req->cwd, path_env, e))) {
		if (!plan_only) /* a dry run may use another configuration than the daemon's: the plan goes on */
			return err_prefix(e, "agents.%s.command", r->adapter->config_name), -1;
		err_clear(e);
		as->program = xstrdup(program);
	}
	char *installation = as->program[0] == '/' ? installation_of(as->program) : NULL;
	if (installation)
		add_bind(as, NULL, keep(as, installation), NULL, SANDBOX_READ);
	if (self)
		add_bind(as, NULL, self, NULL, SANDBOX_READ);
	if (r->run_dir[0])
		add_bind(as, NULL, r->run_dir, NULL, SANDBOX_WRITE);
	struct passwd *pw = getpwuid(geteuid());
	if (!r->req->home && pw && pw->pw_dir[0] == '/' && add_state_dirs(r, pw, plan_only, as, e) < 0)
		return -1;
	struct execrun_confine_request cr = {
		.cfg = r->req->cfg,
		.cwd = r->req->cwd,
		.home = r->req->home,
		.repo_path = r->req->repo_path,
		.plan_only = plan_only,
		.read_only = !strcmp(permission_mode(r), "plan"), /* nothing may change: not the agent's own promise */
		.binds = as->binds,
		.nbinds = as->nbinds,
		.agent_cli = 1, /* the CLI talks to its model endpoint: through the egress proxy unless the network is
				   host */
		.provider_url = provider_url(r, base_url),
		.sentinel = r->sentinel,
		.api_key = r->sentinel ? r->api_key : NULL,
	};
	return execrun_confine(&cr, &as->cf, e);
}

static void build_child(struct prompt_run *r, struct agent_invocation *inv, const struct agent_sandbox *as,
			struct child *c, struct strbuf *stdin_text)
{
	child_init(c);
	inv->in_sandbox = as->cf.sb != NULL;
	execrun_environment(&as->cf, r->req->env, &c->env);
	if (as->cf.sb)
		strvec_setenv(&c->env, "IS_SANDBOX", "1"); /* Claude Code: root is allowed to bypass permissions here */
	agent_command(r->adapter, inv, &c->args, &c->env, stdin_text);
	free(c->args.v[0]);
	c->args.v[0] = xstrdup(as->program);
	c->cwd = r->req->cwd;
	c->stdin_io = CHILD_IO_PIPE;
	c->stdout_io = CHILD_IO_PIPE;
	c->stderr_io = CHILD_IO_PIPE;
	c->new_process_group = 1;
	c->before_exec = child_die_with_parent; /* killed with the executor (the sandbox does the same) */
	execrun_confinement_apply(&as->cf, c);
}

/* Starts the CLI in its sandbox; a control missing in the child is refused — or, with
 * fallback_to_unified, the CLI starts again unconfined and the receipt says so. */
static int start_agent(struct prompt_run *r, struct agent_invocation *inv, struct agent_sandbox *as, struct child *c,
		       struct strbuf *stdin_text, struct err *e)
{
	build_child(r, inv, as, c, stdin_text);
	int rc = child_start(c, e);
	wipe_secret_entries(&c->env, inv->api_key);
	if (rc < 0 && execrun_confinement_failed(r->req->cfg, &as->cf, e) == 0) {
		child_release(c);
		strbuf_reset(stdin_text);
		build_child(r, inv, as, c, stdin_text);
		rc = child_start(c, e);
		wipe_secret_entries(&c->env, inv->api_key);
	}
	if (rc < 0)
		err_prefix(e, "starting %s", as->program);
	return rc;
}

/* Writes the opening text; the stdin of a conversing CLI stays open for answer_agent. */
static void feed_stdin(struct prompt_run *r, struct child *c, const struct strbuf *text)
{
	(void)fs_write_all(c->in, text->buf, text->len);
	if (!r->agent.channel) {
		close(c->in);
		c->in = -1;
	}
}

/* A conversing CLI's answers (agent.h): written to its stdin, which is closed once the conversation is over. */
static void answer_agent(struct prompt_run *r, struct child *c)
{
	struct agent_channel *ch = r->agent.channel;
	if (!ch || c->in < 0)
		return;
	if (ch->to_cli.len && fs_write_all(c->in, ch->to_cli.buf, ch->to_cli.len) < 0)
		ch->done = 1; /* the CLI is gone */
	strbuf_reset(&ch->to_cli);
	if (ch->done) {
		close(c->in);
		c->in = -1;
	}
}

/* --- relaying the agent's output ------------------------------------------------------------------ */

static void map_line(const char *line, size_t len, void *arg)
{
	struct prompt_run *r = arg;
	if (r->acp)
		acp_on_line(r->acp, line, len, &r->agent, report_message, r);
	else
		agent_map_line(r->adapter, line, len, &r->agent, report_message, r);
}

/* Reads what is there; returns 0 at end of file. */
static int read_stream(int *fd, struct strbuf *into)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	strbuf_add(into, buf, (size_t)n);
	return 1;
}

static void keep_stderr_tail(struct prompt_run *r)
{
	if (r->err_tail.len > STDERR_TAIL_BYTES * 2)
		strbuf_remove_front(&r->err_tail, r->err_tail.len - STDERR_TAIL_BYTES);
}

static void request_stop(struct child *c, long long *kill_at)
{
	if (*kill_at)
		return;
	child_kill_group(c, SIGTERM);
	*kill_at = (long long)loop_now_ms() + STOP_GRACE_MS;
}

/* The egress proxy's new refusals, audited and announced by the daemon while the run lives. */
static void report_egress(struct prompt_run *r)
{
	json_t *fresh = egress_take_new(r->proxy);
	struct err e = ERR_INIT;
	json_t *result = NULL;
	if (json_array_size(fresh) && !err_is_set(&r->report_error) &&
	    daemon_call(r, "report_egress", json_pack("{s:s,s:O}", "task_id", r->req->task_id, "refused", fresh),
			&result, &e) == 0)
		json_decref(result);
	else if (err_is_set(&e))
		log_warn("%s", e.message); /* the end's report still holds them */
	err_clear(&e);
	json_decref(fresh);
}

/* A remote daemon hears from this run at least every heartbeat_ms; an unanswered heartbeat is a lost link, which
 * stops the agent (the run fails naming it) rather than leaving it working for nobody. */
static void heartbeat(struct prompt_run *r)
{
	if (!r->remote || err_is_set(&r->report_error) || loop_now_ms() < r->next_heartbeat)
		return;
	json_t *result = NULL;
	struct err e = ERR_INIT;
	if (daemon_call(r, "heartbeat", json_object(), &result, &e) < 0)
		r->report_error = e;
	else
		json_decref(result);
	r->next_heartbeat = loop_now_ms() + (uint64_t)r->heartbeat_ms;
}

/* poll's wait: the child's tick, at most 200 ms while stopping, never past the next heartbeat. */
static int pump_wait(const struct prompt_run *r, int tick, long long kill_at)
{
	int wait = kill_at ? (tick >= 0 && tick < 200 ? tick : 200) : tick;
	if (r->remote) {
		uint64_t now = loop_now_ms();
		int until = r->next_heartbeat > now ? (int)(r->next_heartbeat - now) : 0;
		if (wait < 0 || until < wait)
			wait = until;
	}
	return wait;
}

static void pump(struct prompt_run *r, struct child *c)
{
	long long kill_at = 0;
	while (c->out >= 0 || c->err >= 0) {
		if (stop_requested || err_is_set(&r->report_error))
			request_stop(c, &kill_at);
		if (kill_at && (long long)loop_now_ms() >= kill_at)
			child_kill_group(c, SIGKILL);
		struct pollfd p[5] = { { .fd = c->out, .events = POLLIN },
				       { .fd = c->err, .events = POLLIN },
				       { .fd = r->listen_fd, .events = POLLIN },
				       { .fd = stop_pipe[0], .events = POLLIN },
				       { .fd = egress_report_fd(r->proxy), .events = POLLIN } };
		int tick = child_tick(c); /* the sandbox's write budget is sampled meanwhile */
		if (poll(p, 5, pump_wait(r, tick, kill_at)) < 0 && errno != EINTR)
			break;
		heartbeat(r);
		if (p[4].revents & POLLIN)
			report_egress(r);
		if (p[0].revents && !read_stream(&c->out, &r->line))
			strbuf_addch(&r->line, '\n'); /* a last line without its newline still counts */
		agent_relay_lines(&r->line, &r->line_overflow, MAX_LINE_BYTES, map_line, r);
		answer_agent(r, c);
		if (p[1].revents && read_stream(&c->err, &r->err_tail))
			keep_stderr_tail(r);
		if (p[2].revents & POLLIN)
			serve_one_permission(r);
		if (p[3].revents & POLLIN) {
			char drain[16];
			(void)!read(stop_pipe[0], drain, sizeof(drain));
		}
	}
}

/* --- the outcome ---------------------------------------------------------------------------------- */

static const char *stderr_tail(struct prompt_run *r)
{
	size_t len = r->err_tail.len;
	return len > STDERR_TAIL_BYTES ? r->err_tail.buf + len - STDERR_TAIL_BYTES : r->err_tail.buf;
}

static char *failure_reason(struct prompt_run *r, const struct child *c)
{
	if (err_is_set(&r->report_error))
		return xasprintf("the daemon connection was lost: %s", r->report_error.message);
	if (r->agent.failed)
		return xasprintf("the agent reported a failure: %s",
				 r->agent.failure ? r->agent.failure : "(no reason)");
	int code = child_exit_code(c);
	if (code >= 128)
		return xasprintf("the agent was killed by signal %d", code - 128);
	if (code != 0)
		return xasprintf("the agent exited with status %d", code);
	if (!r->agent.finished)
		return xasprintf("the agent ended without a final result%s",
				 r->agent.garbage_lines ? " (its output was not the expected JSON)" : "");
	return NULL;
}

static void report_completion(struct prompt_run *r, const char *status, const char *reason)
{
	json_t *params = json_pack("{s:s,s:s,s:O?,s:s?}", "task_id", r->req->task_id, "status", status, "token_usage",
				   r->agent.usage, "agent_session_id", r->agent.agent_session_id);
	if (reason)
		json_object_set_new(params, "error", json_string(reason));
	json_t *result = NULL;
	struct err e = ERR_INIT;
	if (daemon_call(r, "report_completion", params, &result, &e) < 0)
		log_warn("report_completion: %s", e.message);
	else
		json_decref(result);
	err_clear(&e);
}

static int conclude(struct prompt_run *r, const struct child *c, json_t **data, struct err *e)
{
	_cleanup_free_ char *reason = stop_requested ? xstrdup("cancelled") : failure_reason(r, c);
	const char *status = stop_requested ? "cancelled" : reason ? "failed" : "completed";
	fault_step("prompt.concluded");
	if (!err_is_set(&r->report_error))
		report_completion(r, status, reason);
	json_t *result = json_pack("{s:s,s:i,s:I,s:s?,s:O?,s:I,s:O?}", "status", status, "exitCode", child_exit_code(c),
				   "messages", (json_int_t)r->agent.messages, "agentSessionId",
				   r->agent.agent_session_id, "tokenUsage", r->agent.usage, "garbageLines",
				   (json_int_t)r->agent.garbage_lines, "sandbox", r->receipt);
	if (r->git_metadata)
		json_object_set(result, "gitMetadata", r->git_metadata);
	if (r->egress)
		json_object_set(result, "egress", r->egress);
	if (!reason) {
		*data = result;
		return 0;
	}
	json_object_set_new(result, "reason", json_string(reason));
	json_object_set_new(result, "stderrTail", json_string_lossy(stderr_tail(r), strlen(stderr_tail(r))));
	return err_setd(e, stop_requested ? E_CANCELLED : E_EXEC_FAILED, result, "%s", reason);
}

/* --- the whole run ------------------------------------------------------------------------------ */

static int prepare(struct prompt_run *r, struct err *e)
{
	struct rpc_client_options opt = { 0 };
	if (!(r->rpc = callback_connect(&r->req->daemon, &opt, e)))
		return -1;
	r->remote = callback_is_remote(r->req->daemon.url);
	r->heartbeat_ms = 10000; /* until the daemon says */
	if (daemon_call(r, "get_execution_context", json_object(), &r->context, e) < 0)
		return -1;
	json_int_t hb = json_integer_value(json_object_get(r->context, "heartbeat_ms"));
	json_int_t pt = json_integer_value(json_object_get(r->context, "permission_timeout_ms"));
	r->heartbeat_ms = hb > 0 ? hb : r->heartbeat_ms;
	r->permission_timeout_ms = pt > 0 ? pt : 120000;
	r->next_heartbeat = loop_now_ms() + (uint64_t)r->heartbeat_ms;
	snprintf(r->run_dir, sizeof(r->run_dir), "/tmp/agor-prompt-XXXXXX");
	if (!mkdtemp(r->run_dir)) {
		r->run_dir[0] = 0;
		return err_errno(e, errno, "creating a private run directory in /tmp");
	}
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return err_errno(e, errno, "pipe");
	return 0;
}

/* The CLI: the daemon's agents.<tool>.command (get_execution_context), else its usual name. */
static const char *agent_program(const struct prompt_run *r)
{
	const char *configured = model_config_str(r, "command");
	return configured ? configured : r->adapter->program;
}

static int run_sandboxed(struct prompt_run *r, struct agent_invocation *inv, struct agent_sandbox *as, json_t **data,
			 struct err *e)
{
	if (agent_prepare(r->adapter, inv, e) < 0)
		return -1;
	_cleanup_child_ struct child c;
	_cleanup_strbuf_ struct strbuf input = STRBUF_INIT;
	int rc = start_agent(r, inv, as, &c, &input, e);
	explicit_bzero(r->api_key, strlen(r->api_key));
	if (rc < 0)
		return -1;
	fault_step("prompt.agent-started");
	struct agent_channel channel = { .inv = inv, .ask = ask_daemon, .ask_arg = r, .to_cli = STRBUF_INIT };
	r->agent.channel = r->adapter->converses ? &channel : NULL;
	if (agent_uses_acp(r->adapter, inv->permission_mode)) {
		r->acp = acp_start(c.in, r->req->cwd, inv->prompt, ask_for_acp, r);
		c.in = -1; /* the ACP client's now */
	} else {
		feed_stdin(r, &c, &input);
	}
	r->proxy = as->cf.egress;
	pump(r, &c);
	r->proxy = NULL;
	r->agent.channel = NULL;
	agent_channel_release(&channel);
	int status;
	if (child_wait(&c, &status, e) < 0)
		return -1;
	json_decref(execrun_confinement_finish(&as->cf));
	r->receipt = execrun_confinement_receipt(&as->cf);
	r->git_metadata = json_incref(as->cf.git_repairs);
	r->egress = json_incref(as->cf.egress_report);
	return conclude(r, &c, data, e);
}

/* The agent holds a sentinel instead of the key when the egress proxy swaps it: network proxy, and a provider
 * endpoint the proxy can read (http, or https, whose TLS it terminates: egress.h). */
static int key_is_swapped(const struct prompt_run *r, const char *base_url)
{
	if (!r->req->cfg->execution.sandbox.enabled || execrun_network(r->req->cfg, 1) != CONFIG_SANDBOX_NETWORK_PROXY)
		return 0;
	struct url u = URL_INIT;
	struct err ignored = ERR_INIT;
	int readable = url_parse(provider_url(r, base_url), &u, &ignored) == 0 &&
		       (!strcmp(u.scheme, "http") || !strcmp(u.scheme, "https"));
	url_release(&u);
	err_clear(&ignored);
	return readable;
}

static int run_agent(struct prompt_run *r, json_t **data, struct err *e)
{
	struct agent_invocation inv = {
		.program = agent_program(r),
		.prompt = r->req->prompt,
		.permission_mode = permission_mode(r),
		.resume_id = context_str(r, "agent_session_id"),
		.model = model_config_str(r, "model"),
		.base_url = model_config_str(r, "base_url"),
		.run_dir = r->run_dir,
	};
	if (agent_check_mode(r->adapter, inv.permission_mode, e) < 0) /* the session's mode, or the payload's */
		return -1;
	_cleanup_free_ char *self = impersonate_self_path(), *mcp = NULL;
	if (!strcmp(r->adapter->tool, "claude-code") &&
	    (open_broker(r, e) < 0 || !self || write_mcp_config(r, self, &mcp, e) < 0))
		return err_is_set(e) ? -1 : err_set(e, E_INTERNAL, "cannot find this executable (/proc/self/exe)");
	inv.mcp_config = mcp;
	if (fetch_api_key(r, &r->api_key, e) < 0)
		return -1;
	r->sentinel = key_is_swapped(r, inv.base_url) ? egress_new_sentinel() : NULL;
	inv.api_key = r->sentinel ? r->sentinel : r->api_key;
	struct agent_sandbox as = { .paths = STRVEC_INIT };
	int rc = confine_agent(r, inv.program, self, inv.base_url, 0, &as, e);
	if (rc == 0) {
		inv.home = as.cf.home;
		inv.state_home = as.cf.sb ? as.state_root : NULL; /* bound onto $HOME's state directories inside */
		rc = run_sandboxed(r, &inv, &as, data, e);
	}
	agent_sandbox_release(&as);
	return rc;
}

int prompt_plan(const struct prompt_request *req, json_t **receipt, struct err *e)
{
	struct prompt_run r = {
		.req = req, .listen_fd = -1, .line = STRBUF_INIT, .err_tail = STRBUF_INIT, .report_error = ERR_INIT
	};
	r.adapter = agent_find(req->tool);
	const struct config_agent *settings = agent_config(req->cfg, req->tool);
	int rc = r.adapter ? 0 : err_set(e, E_INVALID_PAYLOAD, "params.tool: unknown agent tool %s", req->tool);
	struct agent_sandbox as = { .paths = STRVEC_INIT };
	_cleanup_free_ char *self = impersonate_self_path();
	if (rc == 0)
		rc = confine_agent(&r, settings->command ? settings->command : r.adapter->program, self,
				   settings->base_url, 1, &as, e);
	if (rc == 0)
		*receipt = execrun_confinement_receipt(&as.cf);
	agent_sandbox_release(&as);
	run_release(&r);
	return rc;
}

int prompt_run(const struct prompt_request *req, json_t **data, struct err *e)
{
	struct prompt_run r = {
		.req = req, .listen_fd = -1, .line = STRBUF_INIT, .err_tail = STRBUF_INIT, .report_error = ERR_INIT
	};
	fault_step("prompt.started"); /* test builds: a crash point (docs/recovery.md) */
	r.adapter = agent_find(req->tool);
	int rc = r.adapter ? 0 : err_set(e, E_INVALID_PAYLOAD, "params.tool: unknown agent tool %s", req->tool);
	if (rc == 0)
		rc = prepare(&r, e);
	if (rc == 0)
		rc = run_agent(&r, data, e);
	run_release(&r);
	fault_step("prompt.done");
	return rc;
}
