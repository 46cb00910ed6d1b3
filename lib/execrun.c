/* execrun.c — exec.run for the executor (execrun.h): git directories found and confined, the sandbox
 * prepared, the program run with a rebuilt environment, and the outcome with its receipt returned. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "common.h"
#include "confine.h"
#include "crypto.h"
#include "egress.h"
#include "execrun.h"
#include "fsutil.h"
#include "json.h"
#include "log.h"
#include "sandbox.h"
#include "strbuf.h"
#include "strvec.h"
#include "url.h"
#include "banned.h"

static char *run_name(void)
{
	uint8_t raw[6];
	char hex[13];
	struct err ignored = ERR_INIT;
	if (crypto_random(raw, sizeof(raw), &ignored) < 0) {
		err_clear(&ignored);
		memset(raw, 0, sizeof(raw));
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	return xasprintf("run-%ld-%s", (long)getpid(), hex);
}

void execrun_confinement_release(struct execrun_confinement *pr)
{
	if (pr->cwd_held)
		close(pr->cwd_fd);
	pr->cwd_held = 0;
	git_layout_release(&pr->git);
	free(pr->binds);
	strvec_clear(&pr->git_paths);
	json_decref(pr->git_repairs);
	egress_free(pr->egress);
	json_decref(pr->egress_report);
	sandbox_free(pr->sb);
	json_decref(pr->fallback);
	free(pr->name);
	free(pr->home);
	free(pr->passwd_home);
	json_decref(pr->home_exposed);
	free(pr->user);
}

static json_t *unsandboxed_receipt(const struct err *why)
{
	if (!why)
		return json_pack("{s:b,s:s}", "enabled", 0, "reason", "execution.sandbox.enabled is false");
	json_t *missing = why->details ? json_object_get(why->details, "missing") : NULL;
	return json_pack("{s:b,s:b,s:O*,s:s}", "enabled", 0, "fallback", 1, "missing", missing, "warning",
			 why->message);
}

/* A missing control: an error, or with fallback_to_unified a loud warning and no sandbox. */
static int isolation_missing(const struct config *cfg, struct execrun_confinement *pr, struct err *e)
{
	if (strcmp(e->code, E_ISOLATION_UNAVAILABLE) || !cfg->execution.fallback_to_unified)
		return -1;
	log_warn("a program in a worktree runs WITHOUT a sandbox (execution.fallback_to_unified is true): %s",
		 e->message);
	pr->fallback = unsandboxed_receipt(e);
	err_clear(e);
	return 0;
}

static int valid_home_name(const char *s)
{
	return *s && *s != '.' && strlen(s) <= 64 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(s);
}

char *execrun_home_inside(const struct config *cfg, const char *passwd_home)
{
	_cleanup_free_ char *home = fs_canonical(passwd_home), *data = fs_canonical(cfg->paths.data_home);
	size_t n = strlen(home);
	int holds_data = n > 1 && !strncmp(data, home, n) && (data[n] == '/' || !data[n]);
	return holds_data ? xstrdup(EXECRUN_SHARED_HOME) : fs_tidy_path(passwd_home);
}

/* The caller's account (one passwd lookup), then its home inside: the private one of execrun_home_inside, or a
 * per-user home DATA_HOME/homes/NAME, a real directory (made 0700 unless plan_only). */
static int resolve_home(const struct config *cfg, const char *home, int plan_only, struct execrun_confinement *pr,
			struct err *e)
{
	struct passwd *pw = getpwuid(geteuid());
	int usable = pw && pw->pw_dir && pw->pw_dir[0] == '/' && pw->pw_dir[1];
	pr->user = xstrdup(pw ? pw->pw_name : "agor");
	pr->passwd_home = usable ? fs_canonical(pw->pw_dir) : NULL;
	if (!home) {
		pr->home = execrun_home_inside(cfg, usable ? pw->pw_dir : "/home/agor");
		return 0;
	}
	if (!valid_home_name(home))
		return err_setd(
			e, E_INVALID_PAYLOAD,
			json_pack("{s:s,s:s}", "path", "params.home", "reason", "not a home name"),
			"params.home: expected a name of letters, digits, '.', '_' and '-' (not starting with '.')");
	_cleanup_free_ char *homes = xasprintf("%s/homes", cfg->paths.data_home);
	pr->home_kept = 1;
	if (plan_only && !fs_exists(homes)) {
		pr->home = xasprintf("%s/%s", homes, home);
		return 0;
	}
	if (fs_mkdir_p(homes, 0700, e) < 0 || confine_path(homes, home, 0, &pr->home, e) < 0)
		return -1;
	if (!plan_only && mkdir(pr->home, 0700) < 0 && errno != EEXIST)
		return err_errno(e, errno, "mkdir %s", pr->home);
	return 0;
}

static void add_bind(struct execrun_confinement *pr, const char *root, const char *src, enum sandbox_access access)
{
	pr->binds[pr->nbinds++] = (struct sandbox_bind){ .root = root, .src = src, .access = access };
}

static const char *keep_path(struct execrun_confinement *pr, const char *base, const char *tail)
{
	strvec_pushf(&pr->git_paths, "%s%s", base, tail);
	return pr->git_paths.v[pr->git_paths.nr - 1];
}

/* The worktree's git metadata as the sandbox shows it (paths kept in pr->git_paths until release). */
static void plan_git_binds(const struct config *cfg, struct execrun_confinement *pr, int read_only)
{
	const struct git_layout *g = &pr->git;
	const char *repos = cfg->paths.repos_dir;
	static const struct {
		const char *name;
		enum sandbox_access access;
	} repository[] = {
		{ "", SANDBOX_READ },	   { "/objects", SANDBOX_DATA }, { "/objects/info", SANDBOX_READ },
		{ "/refs", SANDBOX_DATA }, { "/logs", SANDBOX_DATA },	 { "/worktrees", SANDBOX_COVER },
	};
	for (size_t i = 0; i < ARRAY_SIZE(repository); i++)
		add_bind(pr, repos, keep_path(pr, g->common, repository[i].name),
			 read_only && repository[i].access == SANDBOX_DATA ? SANDBOX_READ : repository[i].access);
	add_bind(pr, repos, g->admin,
		 read_only ? SANDBOX_READ : SANDBOX_DATA); /* HEAD, index, logs: files and dirs only */
	add_bind(pr, repos, keep_path(pr, g->admin, "/gitdir"), SANDBOX_READ);
	add_bind(pr, repos, keep_path(pr, g->admin, "/commondir"), SANDBOX_READ);
	add_bind(pr, cfg->paths.worktrees_dir, keep_path(pr, g->worktree, "/.git"), SANDBOX_READ);
}

static size_t count_entries(const char *list)
{
	size_t n = list && *list ? 1 : 0;
	for (const char *p = list; p && *p; p++)
		n += *p == ':';
	return n;
}

static void skip_entry(json_t *skipped, const char *entry, const char *why)
{
	json_array_append_new(skipped, json_pack("{s:s,s:s}", "entry", entry, "reason", why));
}

/* Why entry of the real home may not be shown inside (NULL: it may): it must be there, reached without any
 * symlink, and hold none of agor's own files (ours: AGOR_HOME and the data home, canonical) nor lie within them. */
static const char *expose_refusal(const char *const ours[2], int homefd, const char *home, const char *entry)
{
	int fd = confine_openat(homefd, entry, O_PATH);
	if (fd < 0)
		return errno == ENOENT			  ? "missing"
		       : errno == ELOOP || errno == EXDEV ? "a symlink on the way"
							  : "unreadable";
	close(fd);
	_cleanup_free_ char *path = xasprintf("%s/%s", home, entry);
	for (size_t i = 0; i < 2; i++)
		if (fs_path_is_or_below(ours[i], path) || fs_path_is_or_below(path, ours[i]))
			return "holds agor's own files";
	return NULL;
}

/* execution.sandbox.home_expose: each entry of the caller's real home bound read-only at the same place in the
 * private one (never into a kept home, never for an agent CLI: its prompts could make it send them away). */
static void plan_home_expose(const struct execrun_confine_request *req, struct execrun_confinement *pr)
{
	const char *list = req->cfg->execution.sandbox.home_expose;
	if (!list || !*list || req->agent_cli || pr->home_kept)
		return;
	json_t *bound = json_array(), *skipped = json_array();
	pr->home_exposed = json_pack("{s:o,s:o}", "bound", bound, "skipped", skipped);
	int homefd = pr->passwd_home ? open(pr->passwd_home, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	_cleanup_free_ char *agor_home = fs_canonical(req->cfg->paths.agor_home);
	_cleanup_free_ char *data_home = fs_canonical(req->cfg->paths.data_home);
	const char *const ours[2] = { agor_home, data_home };
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ":");
		_cleanup_free_ char *entry = xstrndup(p, len);
		p += len + (p[len] == ':');
		const char *why = homefd < 0 ? "no home" : expose_refusal(ours, homefd, pr->passwd_home, entry);
		if (why) {
			skip_entry(skipped, entry, why);
			continue;
		}
		_cleanup_free_ char *tail = xasprintf("/%s", entry);
		pr->binds[pr->nbinds++] = (struct sandbox_bind){ .root = pr->passwd_home,
								 .src = keep_path(pr, pr->passwd_home, tail),
								 .dst = keep_path(pr, pr->home, tail),
								 .access = SANDBOX_READ };
		json_array_append_new(bound, json_string(entry));
	}
	if (homefd >= 0)
		close(homefd);
}

static void plan_binds(const struct execrun_confine_request *req, struct execrun_confinement *pr)
{
	pr->binds =
		xcalloc(16 + req->nbinds + count_entries(req->cfg->execution.sandbox.home_expose), sizeof(*pr->binds));
	if (pr->git.common)
		plan_git_binds(req->cfg, pr, req->read_only);
	for (size_t i = 0; i < req->nbinds; i++)
		pr->binds[pr->nbinds++] = req->binds[i];
	plan_home_expose(req, pr);
}

int execrun_network(const struct config *cfg, int agent_cli)
{
	int network = cfg->execution.sandbox.network;
	return agent_cli && network == CONFIG_SANDBOX_NETWORK_NONE ? CONFIG_SANDBOX_NETWORK_PROXY : network;
}

/* Network proxy: the run's egress proxy opened and started (a dry run only names it); its directory bound
 * read-only, where the sandbox's relay reaches its socket. */
static int open_egress(const struct execrun_confine_request *req, struct execrun_confinement *pr,
		       struct sandbox_request *sr, struct err *e)
{
	if (req->plan_only) {
		sr->egress_socket = "/tmp/agor-egress-(planned)/egress.sock";
		return 0;
	}
	_cleanup_url_ struct url provider = URL_INIT;
	if (req->provider_url && url_parse(req->provider_url, &provider, e) < 0)
		return err_prefix(e, "the provider endpoint %s", req->provider_url), -1;
	struct egress_config ec = {
		.allow = req->cfg->execution.sandbox.egress_allow,
		.provider_host = provider.host,
		.provider_port = provider.port,
		.provider_tls = provider.scheme && !strcmp(provider.scheme, "https"),
		.upstream_ca_file = req->cfg->execution.sandbox.upstream_ca_file,
		.run_uid = geteuid() == 0 ? (uid_t)req->cfg->execution.sandbox.root_maps_to : geteuid(),
	};
	if (!(pr->egress = egress_open(&ec, e)))
		return -1;
	egress_set_credential(pr->egress, req->sentinel, req->api_key);
	if (egress_launch(pr->egress, e) < 0)
		return -1;
	add_bind(pr, NULL, egress_dir(pr->egress), SANDBOX_READ);
	sr->egress_socket = egress_socket_path(pr->egress);
	return 0;
}

int execrun_confine(const struct execrun_confine_request *req, struct execrun_confinement *pr, struct err *e)
{
	memset(pr, 0, sizeof(*pr));
	strvec_init(&pr->git_paths);
	pr->cfg = req->cfg;
	pr->name = run_name();
	if (git_layout_find(req->cfg, req->cwd, req->repo_path, !req->plan_only, &pr->git, e) < 0 ||
	    resolve_home(req->cfg, req->home, req->plan_only, pr, e) < 0)
		return -1;
	if (!req->plan_only) {
		git_layout_snapshot(req->cfg, &pr->git);
		if ((pr->cwd_fd = confine_open_path(req->cfg->paths.worktrees_dir, req->cwd, O_PATH | O_DIRECTORY, e)) <
		    0)
			return err_prefix(e, "cwd"), -1;
		pr->cwd_held = 1;
	}
	if (req->unsandboxed) {
		pr->fallback = json_pack("{s:b,s:s,s:s}", "enabled", 0, "host", "gateway", "reason", req->unsandboxed);
		return 0;
	}
	struct sandbox_config sc;
	sandbox_config_from(&sc, req->cfg);
	if (!sc.enabled) {
		pr->fallback = unsandboxed_receipt(NULL);
		return 0;
	}
	plan_binds(req, pr);
	_cleanup_free_ char *homes = xasprintf("%s/homes", req->cfg->paths.data_home);
	struct sandbox_request sr = {
		.worktree = req->cwd,
		.worktree_root = req->cfg->paths.worktrees_dir,
		.data_home = req->cfg->paths.data_home,
		.protected_paths = (const char *const[]){ req->cfg->paths.data_home, req->cfg->paths.agor_home, NULL },
		.home = pr->home,
		.home_root = homes,
		.home_is_kept = pr->home_kept,
		.name = pr->name,
		.plan_only = req->plan_only,
		.worktree_read_only = req->read_only,
		.binds = pr->binds,
		.nbinds = pr->nbinds,
	};
	int network = execrun_network(req->cfg, req->agent_cli);
	sc.network_none = network != CONFIG_SANDBOX_NETWORK_HOST;
	if (network == CONFIG_SANDBOX_NETWORK_PROXY && open_egress(req, pr, &sr, e) < 0)
		return -1;
	sr.nbinds = pr->nbinds;
	pr->sb = sandbox_prepare(&sc, &sr, e);
	return pr->sb ? 0 : isolation_missing(req->cfg, pr, e);
}

static int prepare(const struct execrun_request *req, int plan_only, struct execrun_confinement *pr, struct err *e)
{
	struct execrun_confine_request cr = { .cfg = req->cfg,
					      .cwd = req->cwd,
					      .home = req->home,
					      .repo_path = req->repo_path,
					      .plan_only = plan_only,
					      .unsandboxed = req->unsandboxed };
	return execrun_confine(&cr, pr, e);
}

void execrun_confinement_apply(const struct execrun_confinement *pr, struct child *c)
{
	if (pr->sb)
		sandbox_apply(pr->sb,
			      c); /* the worktree is bound from a descriptor; the run starts there, in its view */
	else if (pr->cwd_held)
		c->cwd_fd = pr->cwd_fd;
}

json_t *execrun_confinement_finish(struct execrun_confinement *pr)
{
	json_t *events = pr->sb ? sandbox_finish(pr->sb) : json_object();
	if (pr->egress && !pr->egress_report)
		pr->egress_report = egress_finish(pr->egress);
	if (!pr->git_repairs)
		pr->git_repairs = git_layout_repair(pr->cfg, &pr->git, pr->name);
	return events;
}

json_t *execrun_confinement_receipt(const struct execrun_confinement *pr)
{
	json_t *receipt = pr->sb ? sandbox_receipt(pr->sb) : json_incref(pr->fallback);
	if (pr->sb && pr->home_exposed)
		json_object_set(receipt, "homeExposed", pr->home_exposed);
	return receipt;
}

int execrun_confinement_failed(const struct config *cfg, struct execrun_confinement *pr, struct err *e)
{
	if (!pr->sb)
		return -1;
	sandbox_explain_failure(pr->sb, e);
	if (isolation_missing(cfg, pr, e) < 0)
		return -1;
	sandbox_free(pr->sb); /* a control failed in the child before exec: nothing ran yet */
	pr->sb = NULL;
	egress_free(pr->egress); /* unconfined, the program has the host's network */
	pr->egress = NULL;
	return 0;
}

int execrun_plan(const struct execrun_request *req, json_t **step, struct err *e)
{
	struct execrun_confinement pr;
	if (prepare(req, 1, &pr, e) < 0) {
		execrun_confinement_release(&pr);
		return -1;
	}
	*step = json_pack("{s:s,s:O,s:s,s:o}", "step", "exec.run", "argv", req->argv, "cwd", req->cwd, "sandbox",
			  execrun_confinement_receipt(&pr));
	execrun_confinement_release(&pr);
	return 0;
}

/* The proxy variables every HTTP client of note reads (curl, git, pip, npm, Node with NODE_USE_ENV_PROXY, Bun,
 * Rust's reqwest), set last so that the payload's env cannot point them elsewhere. */
static void set_proxy_environment(const struct egress *eg, struct strvec *env)
{
	static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
					     "http_proxy", "https_proxy", "all_proxy" };
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", SANDBOX_EGRESS_PORT);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		strvec_setenv(env, names[i], url);
	strvec_setenv(env, "NO_PROXY", "");
	strvec_setenv(env, "no_proxy", "");
	strvec_setenv(env, "NODE_USE_ENV_PROXY", "1");
	if (!egress_ca_file(eg))
		return;
	/* An https provider: the per-task CA is trusted — added to Node's roots, and the CA with the system bundle
	 * where a variable replaces the roots (Codex, OpenSSL, curl, Python requests, git). */
	strvec_setenv(env, "NODE_EXTRA_CA_CERTS", egress_ca_file(eg));
	static const char *const bundles[] = { "SSL_CERT_FILE", "CODEX_CA_CERTIFICATE", "CURL_CA_BUNDLE",
					       "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO" };
	for (size_t i = 0; i < ARRAY_SIZE(bundles); i++)
		strvec_setenv(env, bundles[i], egress_ca_bundle(eg));
}

void execrun_environment(const struct execrun_confinement *pr, json_t *extra, struct strvec *env)
{
	strvec_push(env, "PATH=/usr/local/bin:/usr/bin:/bin");
	strvec_pushf(env, "HOME=%s", pr->home);
	strvec_pushf(env, "USER=%s", pr->user);
	strvec_pushf(env, "LOGNAME=%s", pr->user);
	strvec_push(env, "LANG=C.UTF-8");
	strvec_push(env, "TERM=dumb");
	const char *name;
	json_t *value;
	json_object_foreach(extra, name, value) strvec_setenv(env, name, json_string_value(value));
	if (pr->sb && pr->egress)
		set_proxy_environment(pr->egress, env);
}

static void setup_child(const struct execrun_request *req, struct child *c, const struct execrun_confinement *pr)
{
	child_init(c);
	size_t i;
	json_t *arg;
	json_array_foreach(req->argv, i, arg) strvec_push(&c->args, json_string_value(arg));
	execrun_environment(pr, req->env, &c->env);
	c->cwd = req->cwd;
	c->stdin_io = CHILD_IO_NULL;
	c->new_process_group = 1;
	c->timeout_ms = (int)(req->timeout_ms > 0 ? req->timeout_ms : req->cfg->execution.timeout_ms);
	c->kill_grace_ms = 2000;
	execrun_confinement_apply(pr, c);
}

static const char *outcome_of(const struct child *c, json_t *events)
{
	if (c->timed_out)
		return "timeout";
	if (json_integer_value(json_object_get(events, "oomKills")) > 0)
		return "oom";
	if (json_integer_value(json_object_get(events, "pidsLimitHits")) > 0)
		return "pids-limit";
	if (json_integer_value(json_object_get(events, "diskLimitHits")) > 0)
		return "disk-limit";
	return child_exited_ok(c) ? "ok" : "exit-nonzero";
}

static int run_child(const struct execrun_request *req, struct execrun_confinement *pr, json_t **data, struct err *e)
{
	_cleanup_child_ struct child c;
	setup_child(req, &c, pr);
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT, errout = STRBUF_INIT;
	int rc = child_run(&c, NULL, 0, &out, &errout, EXECRUN_MAX_CAPTURE, e);
	json_t *events = execrun_confinement_finish(pr);
	if (rc < 0) {
		json_decref(events);
		return -1;
	}
	*data = json_pack("{s:i,s:b,s:s,s:o,s:o,s:I,s:I,s:o,s:o}", "exitCode", child_exit_code(&c), "timedOut",
			  c.timed_out, "outcome", outcome_of(&c, events), "stdout", json_string_lossy(out.buf, out.len),
			  "stderr", json_string_lossy(errout.buf, errout.len), "stdoutDroppedBytes",
			  (json_int_t)c.out_dropped, "stderrDroppedBytes", (json_int_t)c.err_dropped, "events", events,
			  "sandbox", execrun_confinement_receipt(pr));
	if (pr->git_repairs)
		json_object_set(*data, "gitMetadata", pr->git_repairs);
	if (pr->egress_report)
		json_object_set(*data, "egress", pr->egress_report);
	return 0;
}

int execrun(const struct execrun_request *req, json_t **data, struct err *e)
{
	struct execrun_confinement pr;
	int rc = prepare(req, 0, &pr, e);
	if (rc == 0)
		rc = run_child(req, &pr, data, e);
	if (rc < 0 && execrun_confinement_failed(req->cfg, &pr, e) == 0)
		rc = run_child(req, &pr, data, e);
	execrun_confinement_release(&pr);
	return rc;
}

/* --- an interactive program on the caller's terminal (the shell of a terminal pane) --------------- */

static void setup_interactive(const struct execrun_confinement *cf, const char *cwd, const char *const *argv,
			      struct child *c)
{
	child_init(c);
	strvec_pushv(&c->args, argv);
	execrun_environment(cf, NULL, &c->env);
	const char *term = getenv("TERM");
	strvec_setenv(&c->env, "TERM", term && *term ? term : "xterm-256color");
	strvec_setenv(&c->env, "SHELL", argv[0]);
	c->cwd = cwd;
	execrun_confinement_apply(cf, c);
}

#define REPORT_TICK_MS 1000

/* The pane's periodic work: the sandbox's own (the write budget), then the proxy's new refusals to the reporter. */
struct interactive_tick {
	void (*inner)(void *arg);
	void *inner_arg;
	struct egress *egress;
	const struct execrun_reporter *reporter;
};

static void report_new_refusals(const struct interactive_tick *t)
{
	json_t *fresh = egress_take_new(t->egress);
	if (json_array_size(fresh))
		t->reporter->report(fresh, t->reporter->arg);
	json_decref(fresh);
}

static void interactive_tick(void *arg)
{
	struct interactive_tick *t = arg;
	if (t->inner)
		t->inner(t->inner_arg);
	struct pollfd p = { .fd = egress_report_fd(t->egress), .events = POLLIN };
	if (p.fd >= 0 && poll(&p, 1, 0) > 0)
		report_new_refusals(t);
}

/* With a reporter and a proxy: the child's tick also reports refusals, at least every REPORT_TICK_MS. */
static void watch_refusals(struct child *c, struct interactive_tick *t)
{
	if (!t->reporter || !t->egress)
		return;
	t->inner = c->on_tick;
	t->inner_arg = c->on_tick_arg;
	c->on_tick = interactive_tick;
	c->on_tick_arg = t;
	if (c->tick_ms <= 0 || c->tick_ms > REPORT_TICK_MS)
		c->tick_ms = REPORT_TICK_MS;
}

static int run_interactive(const struct config *cfg, struct execrun_confinement *cf, const char *cwd,
			   const char *const *argv, struct interactive_tick *tick, int *exit_code, struct err *e)
{
	_cleanup_child_ struct child c;
	setup_interactive(cf, cwd, argv, &c);
	watch_refusals(&c, tick);
	int rc = child_start(&c, e);
	if (rc < 0 && execrun_confinement_failed(cfg, cf, e) == 0) {
		child_release(&c);
		setup_interactive(cf, cwd, argv, &c);
		watch_refusals(&c, tick);
		rc = child_start(&c, e);
	}
	int status;
	if (rc == 0 && (rc = child_wait(&c, &status, e)) == 0)
		*exit_code = child_exit_code(&c);
	return rc;
}

int execrun_interactive(const struct config *cfg, const char *cwd, const char *const *argv,
			const struct execrun_reporter *reporter, int *exit_code, struct err *e)
{
	struct execrun_confinement cf;
	struct execrun_confine_request cr = { .cfg = cfg, .cwd = cwd };
	int rc = execrun_confine(&cr, &cf, e);
	struct interactive_tick tick = { .reporter = reporter, .egress = rc == 0 ? cf.egress : NULL };
	if (rc == 0)
		rc = run_interactive(cfg, &cf, cwd, argv, &tick, exit_code, e);
	if (tick.reporter && tick.egress)
		report_new_refusals(&tick); /* what arrived after the last tick */
	json_decref(execrun_confinement_finish(&cf));
	if (cf.git_repairs && json_array_size(json_object_get(cf.git_repairs, "repaired"))) {
		_cleanup_free_ char *what = json_dumps(json_object_get(cf.git_repairs, "repaired"), JSON_COMPACT);
		fprintf(stderr, "agor: the worktree's git metadata was changed and has been put back: %s\n", what);
	}
	if (cf.egress_report) {
		_cleanup_free_ char *what = json_dumps(json_object_get(cf.egress_report, "refused"), JSON_COMPACT);
		fprintf(stderr, "agor: network connections refused by the egress proxy: %s\n", what);
	}
	execrun_confinement_release(&cf);
	return rc;
}
