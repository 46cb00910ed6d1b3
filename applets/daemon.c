/* daemon.c — `agor daemon`: loads the configuration, starts the control plane (lib/daemon) in the
 * foreground or detached, and maps failures to exit codes. Never runs untrusted code itself. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "applet.h"
#include "config.h"
#include "daemon_main.h"
#include "daemon_serve.h"
#include "log.h"
#include "banned.h"

extern const struct applet applet_daemon;

struct daemon_args {
	int foreground;
	const char *config_path;
};

static int parse_args(int argc, char **argv, struct config *cfg, struct daemon_args *a)
{
	static const struct option options[] = {
		{ "foreground", no_argument, NULL, 'f' }, { "config", required_argument, NULL, 'c' },
		{ "home", required_argument, NULL, 'H' }, { "host", required_argument, NULL, 'h' },
		{ "port", required_argument, NULL, 'p' }, { "set", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+", options, NULL)) != -1) {
		struct err e = ERR_INIT;
		int rc = 0;
		switch (opt) {
		case 'f': a->foreground = 1; break;
		case 'c': a->config_path = optarg; break;
		case 'H': rc = config_set_flag(cfg, "paths.agor_home", optarg, &e); break;
		case 'h': rc = config_set_flag(cfg, "daemon.host", optarg, &e); break;
		case 'p': rc = config_set_flag(cfg, "daemon.port", optarg, &e); break;
		case 's': rc = config_set_flag_assignment(cfg, optarg, &e); break;
		default: return applet_usage_error(&applet_daemon, "unknown option or missing value: %s", argv[optind - 1]);
		}
		if (rc < 0) {
			int status = applet_usage_error(&applet_daemon, "%s", e.message);
			err_clear(&e);
			return status;
		}
	}
	if (optind < argc)
		return applet_usage_error(&applet_daemon, "unexpected argument '%s'", argv[optind]);
	return 0;
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
			_exit(0);
		}
		fprintf(stderr, "agor daemon: failed to start%s%s\n", n > 1 ? ": " : " (see the log)", n > 1 ? status + 1 : "");
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
	int status = parse_args(argc, argv, cfg, &a), initialised = 0, ready_fd = -1;
	if (status)
		goto out;
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
	.usage = "Usage: agor daemon [--foreground] [--config PATH] [--home DIR] [--host H] [--port N] [--set KEY=VALUE]…\n"
		 "\n"
		 "Runs the trusted control plane: the SQLite database, JWT secret and master key,\n"
		 "JSON-RPC over the Unix socket (daemon.socket_path) and HTTP/WebSocket (daemon.host:port),\n"
		 "and executor orchestration. Creates AGOR_HOME (0700) on first start.\n"
		 "\n"
		 "  --foreground     stay attached to the terminal, log to stderr (otherwise detach and\n"
		 "                   log to $AGOR_HOME/logs/daemon.log)\n"
		 "  --config PATH    config.yaml to read (default: $AGOR_HOME/config.yaml)\n"
		 "  --home DIR       AGOR_HOME;  --host/--port: the TCP listener;  --set KEY=VALUE: any setting\n"
		 "\n"
		 "Signals: SIGTERM/SIGINT stop (running tasks are cancelled), SIGHUP reopens the log file.\n",
	.main = daemon_main,
};
