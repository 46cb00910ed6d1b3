/* test_terminal.c — the pieces of terminals that need no tmux: SCM_RIGHTS hand-over (lib/fdpass), the shell's
 * environment and tmux argv (lib/terminal), the detach-key parser (lib/terminal_client). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdpass.h"
#include "terminal.h"
#include "terminal_client.h"
#include "unit.h"
#include "zellij.h"
#include "banned.h"

/* A socket pair end crosses another socket and still talks to its partner: the descriptor is the same. */
TEST(fdpass_round_trip_keeps_the_descriptor)
{
	int carrier[2], pair[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, carrier) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
	struct err e = ERR_INIT;
	CHECK_INT(fdpass_send(carrier[0], "hand-over\n", 10, pair[0], &e), 0);
	close(pair[0]);
	char buf[64] = { 0 };
	int fds[FDPASS_MAX_FDS];
	size_t nfds = 0;
	CHECK_INT(fdpass_recv(carrier[1], buf, sizeof(buf), fds, FDPASS_MAX_FDS, &nfds), 10);
	CHECK_STR(buf, "hand-over\n");
	CHECK_INT(nfds, 1);
	CHECK(fcntl(fds[0], F_GETFD) & FD_CLOEXEC);
	CHECK_INT(write(fds[0], "ping", 4), 4);
	char got[8] = { 0 };
	CHECK_INT(read(pair[1], got, sizeof(got)), 4);
	CHECK_STR(got, "ping");
	close(fds[0]);
	close(pair[1]);
	close(carrier[0]);
	close(carrier[1]);
}

/* Descriptors beyond what the caller accepts are closed, not leaked. */
TEST(fdpass_extra_descriptors_are_closed)
{
	int carrier[2], pair[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, carrier) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
	struct err e = ERR_INIT;
	CHECK_INT(fdpass_send(carrier[0], "x", 1, pair[0], &e), 0);
	close(pair[0]);
	char buf[4];
	size_t nfds = 9;
	CHECK_INT(fdpass_recv(carrier[1], buf, sizeof(buf), NULL, 0, &nfds), 1);
	CHECK_INT(nfds, 0);
	CHECK_INT(read(pair[1], buf, sizeof(buf)), 0); /* the only other reference was closed: EOF */
	close(pair[1]);
	close(carrier[0]);
	close(carrier[1]);
}

TEST(fdpass_send_on_a_closed_socket_fails_with_a_message)
{
	int carrier[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, carrier) == 0);
	close(carrier[1]);
	struct err e = ERR_INIT;
	CHECK_INT(fdpass_send(carrier[0], "x", 1, 0, &e), -1);
	CHECK_CONTAINS(e.message, "sending a descriptor");
	err_clear(&e);
	close(carrier[0]);
}

static int env_has(const struct strvec *env, const char *entry)
{
	for (size_t i = 0; i < env->nr; i++)
		if (!strcmp(env->v[i], entry))
			return 1;
	return 0;
}

/* The shell's environment is built from the passwd entry and the payload, never from the caller's. */
TEST(terminal_user_env_is_the_users_not_the_callers)
{
	setenv("AGOR_SECRET_OF_THE_CALLER", "leak", 1);
	struct passwd pw = { .pw_name = "alice", .pw_dir = "/home/alice", .pw_shell = "/bin/zsh" };
	json_t *extra = json_pack("{s:s}", "EDITOR", "vi");
	struct strvec env = STRVEC_INIT;
	terminal_user_env(&pw, "/bin/zsh", extra, &env);
	CHECK(env_has(&env, "HOME=/home/alice"));
	CHECK(env_has(&env, "USER=alice"));
	CHECK(env_has(&env, "LOGNAME=alice"));
	CHECK(env_has(&env, "SHELL=/bin/zsh"));
	CHECK(env_has(&env, "TERM=xterm-256color"));
	CHECK(env_has(&env, "EDITOR=vi"));
	for (size_t i = 0; i < env.nr; i++)
		CHECK(strncmp(env.v[i], "AGOR_", 5) != 0);
	CHECK_INT(env.nr, 8);
	strvec_clear(&env);
	json_decref(extra);
	unsetenv("AGOR_SECRET_OF_THE_CALLER");
}

/* An account without a login shell (empty, nologin, false, not in /etc/shells) still gets one a pane can run. */
TEST(terminal_shell_replaces_a_shell_that_cannot_log_in)
{
	const char *fallback = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
	static char *const unusable[] = { "", "/usr/sbin/nologin", "/bin/false", "relative/sh", "/nonexistent/zsh" };
	for (size_t i = 0; i < sizeof(unusable) / sizeof(unusable[0]); i++) {
		struct passwd pw = { .pw_name = "bob", .pw_dir = "/", .pw_shell = unusable[i] };
		CHECK_STR(terminal_shell(&pw, NULL), fallback);
	}
	struct passwd pw = { .pw_name = "bob", .pw_dir = "/", .pw_shell = "/usr/sbin/nologin" };
	CHECK_STR(terminal_shell(&pw, "/bin/sh"), "/bin/sh"); /* execution.terminal_shell wins */
	struct strvec env = STRVEC_INIT;
	terminal_user_env(&pw, NULL, NULL, &env);
	CHECK(env_has(&env, fallback[5] == 'b' ? "SHELL=/bin/bash" : "SHELL=/bin/sh"));
	strvec_clear(&env);
}

TEST(terminal_tmux_argv_names_the_users_server)
{
	struct strvec argv = STRVEC_INIT;
	terminal_tmux_argv("agor-alice-0123abcd", &argv, (const char *const[]){ "has-session", "-t", "=agor", NULL });
	CHECK_INT(argv.nr, 6);
	CHECK_STR(argv.v[0], "tmux");
	CHECK_STR(argv.v[1], "-L");
	CHECK_STR(argv.v[2], "agor-alice-0123abcd");
	CHECK_STR(argv.v[3], "has-session");
	CHECK_STR(argv.v[5], "=agor");
	strvec_clear(&argv);
	/* one server per user and data home: SHA-256("/srv/agor") begins 3b93670d */
	char *name = terminal_tmux_server_name("bob", "/srv/agor"), *other = terminal_tmux_server_name("bob", "/srv/b");
	CHECK_STR(name, "agor-bob-3b93670d");
	CHECK(strcmp(name, other) != 0);
	free(name);
	free(other);
}

TEST(terminal_client_detach_keys)
{
	CHECK_INT(terminal_client_parse_key("C-]"), 0x1d);
	CHECK_INT(terminal_client_parse_key("C-a"), 0x01);
	CHECK_INT(terminal_client_parse_key("C-z"), 0x1a);
	CHECK_INT(terminal_client_parse_key("C-\\"), 0x1c);
	CHECK_INT(terminal_client_parse_key("X"), -1);
	CHECK_INT(terminal_client_parse_key("C-"), -1);
	CHECK_INT(terminal_client_parse_key("C-ab"), -1);
	CHECK_INT(terminal_client_parse_key("C-1"), -1);
	CHECK_INT(terminal_client_parse_key(NULL), -1);
}

TEST(zellij_config_serializes_sessions_under_the_given_dir)
{
	struct strbuf kdl = STRBUF_INIT;
	zellij_config_kdl("/data/zellij", &kdl);
	CHECK_CONTAINS(kdl.buf, "\nsession_serialization true\n");
	CHECK_CONTAINS(kdl.buf, "\nsession_folder \"/data/zellij/sessions\"\n");
	CHECK_CONTAINS(kdl.buf, "\npane_frames false\n");
	CHECK_CONTAINS(kdl.buf, "\nshow_startup_tips false\n");
	strbuf_release(&kdl);
}

TEST(zellij_install_config_is_idempotent_and_private)
{
	char *dir = xasprintf("%s/zj", unit_tmpdir());
	struct err e = ERR_INIT;
	int changed = -1;
	CHECK_INT(zellij_install_config(dir, &changed, &e), 0);
	CHECK_INT(changed, 1);
	CHECK_INT(zellij_install_config(dir, &changed, &e), 0);
	CHECK_INT(changed, 0);
	char *sessions = xasprintf("%s/sessions", dir);
	struct stat st;
	CHECK(stat(sessions, &st) == 0 && (st.st_mode & 0777) == 0700);
	char *path = zellij_config_path(dir);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
	free(path);
	free(sessions);
	free(dir);
}

TEST(zellij_command_lines)
{
	struct strvec argv = STRVEC_INIT;
	zellij_attach_argv("/d/config.kdl", "agor", &argv);
	CHECK_INT(argv.nr, 6);
	CHECK_STR(argv.v[0], "zellij");
	CHECK_STR(argv.v[2], "/d/config.kdl");
	CHECK_STR(argv.v[3], "attach");
	CHECK_STR(argv.v[4], "agor");
	CHECK_STR(argv.v[5], "--create");
	strvec_clear(&argv);
	zellij_tab_argv("agor", "wt", &argv);
	CHECK_STR(argv.v[4], "go-to-tab-name");
	CHECK_STR(argv.v[6], "wt");
	strvec_clear(&argv);
}
