/* zellij.c — the zellij configuration and command lines of terminals (zellij.h).
 * Never replaces a config file in place: a new one is written beside it and renamed over it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "zellij.h"
#include "banned.h"

void zellij_config_kdl(const char *dir, struct strbuf *out)
{
	strbuf_addf(out,
		    "// config.kdl — zellij as agor's embedded terminals use it (written by `agor setup zellij`).\n"
		    "// Sessions are serialized under the data home so a terminal comes back after any restart.\n"
		    "session_serialization true\n"
		    "session_folder \"%s/sessions\"\n"
		    "scroll_buffer_size 10000\n"
		    "pane_frames false\n"
		    "simplified_ui true\n"
		    "default_layout \"compact\"\n"
		    "show_startup_tips false\n"
		    "show_release_notes false\n"
		    "mouse_mode false\n"
		    "on_force_close \"detach\"\n",
		    dir);
}

char *zellij_config_path(const char *dir)
{
	return xasprintf("%s/config.kdl", dir);
}

static int same_content(const char *path, const struct strbuf *want)
{
	struct strbuf have = STRBUF_INIT;
	int same = strbuf_read_file(&have, path, 0) >= 0 && have.len == want->len &&
		   !memcmp(have.buf, want->buf, want->len);
	strbuf_release(&have);
	return same;
}

static int write_atomically(const char *path, const struct strbuf *text, struct err *e)
{
	_cleanup_free_ char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return err_errno(e, errno, "creating %s", tmp);
	int rc = fs_write_all(fd, text->buf, text->len) < 0 || fsync(fd) < 0 ? err_errno(e, errno, "writing %s", tmp)
									     : 0;
	close(fd);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = err_errno(e, errno, "renaming %s to %s", tmp, path);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

int zellij_install_config(const char *dir, int *changed, struct err *e)
{
	_cleanup_free_ char *sessions = xasprintf("%s/sessions", dir);
	_cleanup_free_ char *path = zellij_config_path(dir);
	struct strbuf text = STRBUF_INIT;
	*changed = 0;
	zellij_config_kdl(dir, &text);
	int rc = fs_mkdir_p(sessions, 0700, e);
	if (rc == 0 && !same_content(path, &text)) {
		rc = write_atomically(path, &text, e);
		*changed = rc == 0;
	}
	strbuf_release(&text);
	return rc;
}

void zellij_attach_argv(const char *config, const char *session, struct strvec *argv)
{
	strvec_push(argv, "zellij");
	strvec_push(argv, "--config");
	strvec_push(argv, config);
	strvec_push(argv, "attach");
	strvec_push(argv, session);
	strvec_push(argv, "--create");
}

void zellij_tab_argv(const char *session, const char *tab, struct strvec *argv)
{
	strvec_push(argv, "zellij");
	strvec_push(argv, "--session");
	strvec_push(argv, session);
	strvec_push(argv, "action");
	strvec_push(argv, "go-to-tab-name");
	strvec_push(argv, "--create");
	strvec_push(argv, tab);
}
