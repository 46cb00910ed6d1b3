/* daemon.c — `agor daemon`: loads the configuration, starts the control plane (lib/daemon) in the
 * foreground or detached, and maps failures to exit codes; `agor daemon status|stop` read run/daemon.lock
 * (flocked by a running daemon, holding its pid) and signal that pid. Never runs untrusted code itself. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "applet.h"
#include "client.h"
#include "config.h"
#include "daemon_main.h"
#include "daemon_serve.h"
#include "json.h"
#include "log.h"
#include "paths.h"
#include "rpcclient.h"
#include "banned.h"

extern const struct applet applet_daemon;

struct daemon_args {
	const char *action; /* NULL (run), "status" or "stop" */
	int foreground, json;
	const char *config_path;
	const char *timeout; /* stop: seconds to wait for the daemon to end */
};

enum { EXIT_NOT_RUNNING = 3 }; /* `agor daemon status` of a daemon that is not running (as LSB status) */

#define HOME_FLAGS                                                                                                     \
	{ "--config", "config", CLIENT_FLAG_STRING, "config.yaml to read (default: $AGOR_HOME/config.yaml)", "PATH" }, \
	{                                                                                                              \
		"--home", "paths.agor_home", CLIENT_FLAG_STRING, "AGOR_HOME (default: $AGOR_HOME, else ~/.agor)",      \
			"DIR"                                                                                          \
	}
static const struct client_flag start_flags[] = {
	HOME_FLAGS,
	{ "--foreground", "foreground", CLIENT_FLAG_BOOL,
	  "stay attached to the terminal, log to stderr (else detach, log to $AGOR_HOME/logs/daemon.log)" },
	{ "--host", "daemon.host", CLIENT_FLAG_STRING, "the TCP listener's address", "ADDRESS" },
	{ "--port", "daemon.port", CLIENT_FLAG_STRING, "the TCP listener's port", "PORT" },
	{ "--set", "set", CLIENT_FLAG_LIST, "any setting by its dotted key (`agor config show` lists them)",
	  "KEY=VALUE" },
	{ NULL },
};
static const struct client_flag status_flags[] = {
	HOME_FLAGS,
	{ "--json", "json", CLIENT_FLAG_BOOL, "print {running, pid, socket, port, version, uptime} as JSON" },
	{ NULL },
};
static const struct client_flag stop_flags[] = {
	HOME_FLAGS,
	{ "--timeout", "timeout", CLIENT_FLAG_STRING, "seconds to wait for the daemon to end (1 to 3600, default 30)",
	  "SEC" },
	{ "--json", "json", CLIENT_FLAG_BOOL, "print {running, stopped, pid?} as JSON" },
	{ NULL },
};

static const struct client_command commands[] = {
	{ "", NULL, NULL, start_flags, "[--foreground] [--config PATH] [--home DIR] [--host H] [--port N] [--set K=V]…",
	  .example = "agor daemon --home /srv/agor --port 7777 --set execution.sandbox.enabled=true", .local = 1 },
	{ "status", NULL, NULL, status_flags, "[--json] [--config PATH] [--home DIR]",
	  .example = "agor daemon status --json", .local = 1 },
	{ "stop", NULL, NULL, stop_flags, "[--timeout SECONDS] [--json] [--config PATH] [--home DIR]",
	  .example = "agor daemon stop --timeout 60", .local = 1 },
};

/* The settings the flags give (--set first, so --home, --host and --port win over it), into cfg. */
static int apply_settings(struct config *cfg, json_t *params, struct err *e)
{
	json_t *v;
	size_t i;
	json_array_foreach(json_object_get(params, "set"), i,
			   v) if (config_set_flag_assignment(cfg, json_string_value(v), e) < 0) return -1;
	static const char *const keys[] = { "paths.agor_home", "daemon.host", "daemon.port" };
	for (i = 0; i < ARRAY_SIZE(keys); i++)
		if (json_get_str(params, keys[i]) &&
		    config_set_flag(cfg, keys[i], json_get_str(params, keys[i]), e) < 0)
			return -1;
	return 0;
}

static int parse_args(int argc, char **argv, struct config *cfg, struct daemon_args *a, json_t *params)
{
	const struct client_command *c = applet_command(&applet_daemon, argc, argv);
	int skip = *c->name ? 2 : 1, rc = client_parse_args("daemon", c, argc - skip, argv + skip, NULL, params);
	if (rc)
		return rc;
	a->action = *c->name ? c->name : NULL;
	a->foreground = json_is_true(json_object_get(params, "foreground"));
	a->json = json_is_true(json_object_get(params, "json"));
	a->config_path = json_get_str(params, "config");
	a->timeout = json_get_str(params, "timeout");
	struct err e = ERR_INIT;
	if (apply_settings(cfg, params, &e) < 0) {
		rc = applet_usage_error(&applet_daemon, "%s", e.message);
		err_clear(&e);
	}
	return rc;
}

/* --- status and stop ---------------------------------------------------------------------- */

/* Whether a daemon holds home's run/daemon.lock: 1 with its pid and the lock's age (it is written at start),
 * 0 when none does (no lock file, or nobody holds it), -1 with e. */
static int daemon_running(const struct agor_paths *p, pid_t *pid, long long *since, struct err *e)
{
	_cleanup_free_ char *path = xasprintf("%s/daemon.lock", p->run);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : err_errno(e, errno, "opening %s", path);
	if (flock(fd, LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK) {
		close(fd);
		return 0;
	}
	char buf[32] = "";
	struct stat st;
	(void)!read(fd, buf, sizeof(buf) - 1);
	*pid = (pid_t)atoi(buf);
	*since = fstat(fd, &st) == 0 ? (long long)st.st_mtime : 0;
	close(fd);
	return 1;
}

/* The running daemon's ping on its Unix socket (as the caller's agor user: version, pid, port, started_at). */
static json_t *ping_daemon(const char *socket_path, struct err *e)
{
	_cleanup_free_ char *url = xasprintf("unix:%s", socket_path);
	struct rpc_client_options opts = { .call_timeout_ms = 5000 };
	struct rpc_client *cl = rpc_client_connect(url, &opts, e);
	json_t *result = NULL;
	if (cl && rpc_client_call(cl, "ping", NULL, &result, e) < 0)
		result = NULL;
	rpc_client_close(cl);
	return result;
}

static void print_uptime(long long seconds)
{
	if (seconds >= 86400)
		printf("%lldd ", seconds / 86400);
	if (seconds >= 3600)
		printf("%lldh ", seconds / 3600 % 24);
	if (seconds >= 60)
		printf("%lldm ", seconds / 60 % 60);
	printf("%llds\n", seconds % 60);
}

static int show_status(const struct agor_paths *p, const struct daemon_args *a)
{
	struct err e = ERR_INIT;
	pid_t pid = 0;
	long long since = 0;
	int running = daemon_running(p, &pid, &since, &e);
	if (running < 0) {
		fprintf(stderr, "agor daemon status: %s\n", e.message);
		err_clear(&e);
		return EXIT_FAILED;
	}
	_cleanup_json_ json_t *ping = running ? ping_daemon(p->socket, &e) : NULL;
	long long started = ping && json_integer_value(json_object_get(ping, "started_at"))
				    ? json_integer_value(json_object_get(ping, "started_at"))
				    : since;
	if (a->json) {
		json_t *j = json_pack("{s:b,s:s,s:s}", "running", running, "home", p->home, "socket", p->socket);
		if (running)
			json_object_update_new(j, json_pack("{s:i,s:b,s:I,s:I}", "pid", (int)pid, "answering",
							    ping != NULL, "started_at", (json_int_t)started, "uptime_s",
							    (json_int_t)(time(NULL) - started)));
		if (ping)
			json_object_update_new(j, json_pack("{s:O?,s:O?}", "version", json_object_get(ping, "version"),
							    "port", json_object_get(ping, "port")));
		_cleanup_free_ char *text = json_dumps(j, JSON_INDENT(2));
		puts(text);
		json_decref(j);
	} else if (!running) {
		printf("agor daemon: not running (AGOR_HOME %s)\n", p->home);
	} else {
		printf("agor daemon: running (pid %d)\n  home     %s\n  socket   %s", (int)pid, p->home, p->socket);
		if (ping)
			printf("\n  port     %lld\n  version  %s\n  uptime   ",
			       json_integer_value(json_object_get(ping, "port")), json_get_str(ping, "version") ?: "?");
		else
			printf(" (not answering: %s)\n  uptime   ", e.message ? e.message : "?");
		print_uptime(time(NULL) - started);
	}
	int status = !running ? EXIT_NOT_RUNNING : ping ? EXIT_OK : EXIT_FAILED;
	err_clear(&e);
	return status;
}

/* SIGTERM to the daemon holding the lock, then waits (up to --timeout seconds) until the lock is free. */
static int stop_daemon(const struct agor_paths *p, const struct daemon_args *a)
{
	struct err e = ERR_INIT;
	pid_t pid = 0;
	long long since;
	char *end;
	long timeout = a->timeout ? strtol(a->timeout, &end, 10) : 30;
	if (a->timeout && (*end || end == a->timeout || timeout < 1 || timeout > 3600))
		return applet_usage_error(&applet_daemon, "--timeout: give whole seconds from 1 to 3600, not '%s'",
					  a->timeout);
	int running = daemon_running(p, &pid, &since, &e);
	if (running <= 0) {
		if (running < 0)
			fprintf(stderr, "agor daemon stop: %s\n", e.message);
		else if (a->json)
			printf("{\"running\":false,\"stopped\":false}\n");
		else
			printf("agor daemon: not running (AGOR_HOME %s)\n", p->home);
		err_clear(&e);
		return running < 0 ? EXIT_FAILED : EXIT_OK;
	}
	if (pid <= 1 || kill(pid, SIGTERM) < 0) {
		fprintf(stderr, "agor daemon stop: cannot signal pid %d: %s%s\n", (int)pid,
			pid <= 1 ? "no pid in run/daemon.lock" : strerror(errno),
			errno == EPERM ? " (the daemon runs as another user: stop it as that user)" : "");
		return EXIT_FAILED;
	}
	for (long i = 0; i < timeout * 20; i++) {
		struct timespec tick = { 0, 50 * 1000 * 1000 };
		nanosleep(&tick, NULL);
		if (daemon_running(p, &pid, &since, &e) == 0) {
			printf(a->json ? "{\"running\":false,\"stopped\":true,\"pid\":%d}\n"
				       : "agor daemon stopped (pid %d)\n",
			       (int)pid);
			return EXIT_OK;
		}
		err_clear(&e);
	}
	fprintf(stderr,
		"agor daemon stop: pid %d still running after %ld s (it cancels its running tasks first): "
		"wait and run `agor daemon status`, or `kill -KILL %d`\n",
		(int)pid, timeout, (int)pid);
	return EXIT_FAILED;
}

static int daemon_control(struct config *cfg, const struct daemon_args *a)
{
	struct err e = ERR_INIT;
	if (config_load(cfg, &(struct config_overrides){ .config_path = a->config_path }, &e) < 0) {
		fprintf(stderr, "agor daemon %s: %s\n", a->action, e.message);
		err_clear(&e);
		return EXIT_FAILED;
	}
	struct agor_paths p = AGOR_PATHS_INIT;
	paths_from_config(&p, cfg);
	int status = !strcmp(a->action, "status") ? show_status(&p, a) : stop_daemon(&p, a);
	paths_release(&p);
	return status;
}

/* Detaches: the parent exits 0 once the child reports it is serving (or 1 with its error). */
static int detach(int *ready_fd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(p[1]);
		char status[512] = "";
		ssize_t n = read(p[0], status, sizeof(status) - 1);
		if (n > 0 && status[0] == 'R') {
			printf("agor daemon started (pid %d)\n", (int)pid);
			fflush(stdout); /* _exit flushes nothing: into a file or pipe the line would be lost */
			_exit(0);
		}
		fprintf(stderr, "agor daemon: failed to start%s%s\n", n > 1 ? ": " : " (see the log)",
			n > 1 ? status + 1 : "");
		_exit(1);
	}
	close(p[0]);
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	dup2(null, 0);
	dup2(null, 1);
	*ready_fd = p[1];
	return 0;
}

static void report_ready(int fd, const char *error)
{
	if (fd < 0)
		return;
	(void)!write(fd, "E", 1);
	(void)!write(fd, error, strlen(error));
	close(fd);
}

static int daemon_main(int argc, char **argv)
{
	struct daemon_args a = { 0 };
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	struct daemon d;
	_cleanup_json_ json_t *params = json_object();
	int status = parse_args(argc, argv, cfg, &a, params), initialised = 0, ready_fd = -1;
	if (status || a.action) {
		status = status ? status : daemon_control(cfg, &a);
		goto out;
	}
	status = EXIT_FAILED;
	if (config_load(cfg, &(struct config_overrides){ .config_path = a.config_path }, &e) < 0)
		goto fail;
	if (!a.foreground && detach(&ready_fd) < 0) {
		err_errno(&e, errno, "detaching");
		goto fail;
	}
	initialised = 1;
	if (daemon_init(&d, cfg, &e) < 0)
		goto fail;
	d.ready_fd = ready_fd;
	if (!a.foreground) {
		_cleanup_free_ char *log = xasprintf("%s/daemon.log", d.paths.logs);
		if (log_open_file(log) < 0)
			log_warn("cannot open %s: %m", log);
		dup2(open("/dev/null", O_WRONLY | O_CLOEXEC), 2);
	}
	if (daemon_run(&d, &e) < 0)
		goto fail;
	status = EXIT_OK;
	goto out;
fail:
	log_error("%s", e.message);
	report_ready(ready_fd, e.message);
out:
	if (initialised)
		daemon_release(&d);
	config_free(cfg);
	err_clear(&e);
	return status;
}

const struct applet applet_daemon = {
	.name = "daemon",
	.summary = "trusted control plane: database, tokens, JSON-RPC, executor orchestration",
	.usage = "Usage: agor daemon [--foreground] [--config PATH] [--home DIR] [--host H] [--port N] [--set "
		 "KEY=VALUE]…\n"
		 "       agor daemon status [--json] [--config PATH] [--home DIR]\n"
		 "       agor daemon stop [--timeout SECONDS] [--json] [--config PATH] [--home DIR]\n"
		 "\n"
		 "Runs the trusted control plane: the SQLite database, JWT secret and master key,\n"
		 "JSON-RPC over the Unix socket (daemon.socket_path) and HTTP/WebSocket (daemon.host:port),\n"
		 "and executor orchestration. Creates AGOR_HOME (0700) on first start.\n"
		 "\n"
		 "status: whether a daemon runs on AGOR_HOME (the flock of run/daemon.lock), its pid, socket, TCP "
		 "port,\n"
		 "version and uptime (asked with ping); exits 0 running, 3 not running, 1 running but not answering.\n"
		 "stop: SIGTERM to that pid, then waits until it has ended (--timeout, default 30 s); not running is "
		 "0.\n"
		 "\n"
		 "Signals: SIGTERM/SIGINT stop (running tasks are cancelled), SIGHUP reopens the log file.\n",
	.main = daemon_main,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
