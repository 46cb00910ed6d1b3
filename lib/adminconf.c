/* adminconf.c — loads, checks and formats /etc/agor/admin.yaml (see adminconf.h).
 * Never follows a symlink to reach it; never returns a configuration it did not fully validate. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "adminconf.h"
#include "unixperm.h"
#include "yaml_depth.h"
#include "banned.h"

int adminconf_override_allowed(struct err *e)
{
	static const char *const sudo_vars[] = { "SUDO_UID", "SUDO_GID", "SUDO_USER", "SUDO_COMMAND" };
	for (size_t i = 0; i < ARRAY_SIZE(sudo_vars); i++)
		if (getenv(sudo_vars[i]))
			return err_set(e, E_PERMISSION_DENIED,
				       "--root-config is refused through sudo (%s is set): admin reads %s",
				       sudo_vars[i], ADMINCONF_DEFAULT_PATH);
	if (getuid() != 0 || geteuid() != 0)
		return err_set(e, E_PERMISSION_DENIED, "--root-config is only accepted when root runs agor directly");
	return 0;
}

/* Owned by root and not writable by group or others. */
static int check_trusted_stat(const struct stat *st, const char *what, struct err *e)
{
	if (st->st_uid != 0)
		return err_set(e, E_CONFIG, "%s is owned by uid %u, not root (fix: chown root:root %s)", what,
			       (unsigned)st->st_uid, what);
	if (st->st_mode & 022)
		return err_set(e, E_CONFIG, "%s is writable by group or others (mode %04o; fix: chmod go-w %s)", what,
			       (unsigned)(st->st_mode & 07777), what);
	return 0;
}

static int check_trusted_fd(int fd, const char *what, struct err *e)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(e, errno, "stat %s", what);
	return check_trusted_stat(&st, what, e);
}

/* Walks path from "/" without following symlinks, checking every directory on the way. With
 * include_last the last component is a directory to open and check too; otherwise *last points
 * at it and the returned descriptor is its parent. */
static int open_trusted_chain(const char *path, bool include_last, const char **last, struct err *e)
{
	int cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return err_errno(e, errno, "open /");
	if (check_trusted_fd(cur, "/", e) < 0) {
		close(cur);
		return -1;
	}
	struct strbuf sofar = STRBUF_INIT;
	const char *comp = path + 1;
	for (;;) {
		const char *slash = strchr(comp, '/');
		if (!slash && !include_last)
			break;
		size_t len = slash ? (size_t)(slash - comp) : strlen(comp);
		strbuf_addch(&sofar, '/');
		strbuf_add(&sofar, comp, len);
		char *name = xstrndup(comp, len);
		int next = openat(cur, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int saved = errno;
		free(name);
		close(cur);
		if (next < 0) {
			err_errno(e, saved == ENOTDIR ? ELOOP : saved, "open %s", sofar.buf);
			strbuf_release(&sofar);
			return -1;
		}
		cur = next;
		if (check_trusted_fd(cur, sofar.buf, e) < 0) {
			close(cur);
			strbuf_release(&sofar);
			return -1;
		}
		if (!slash)
			break;
		comp = slash + 1;
	}
	strbuf_release(&sofar);
	if (last)
		*last = comp;
	return cur;
}

int adminconf_open_trusted_dir(const char *path, struct err *e)
{
	if (!unixperm_path_is_clean(path))
		return err_set(e, E_CONFIG, "%s: must be a clean absolute path", path);
	return open_trusted_chain(path, true, NULL, e);
}

int adminconf_open_trusted(const char *path, struct err *e)
{
	if (!unixperm_path_is_clean(path))
		return err_set(e, E_CONFIG, "%s: must be a clean absolute path", path);
	const char *last = NULL;
	int dirfd = open_trusted_chain(path, false, &last, e);
	if (dirfd < 0)
		return -1;
	int fd = openat(dirfd, last, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int saved = errno;
	close(dirfd);
	if (fd < 0) {
		if (saved == ENOENT)
			return err_set(e, E_CONFIG, "%s does not exist (fix: sudo agor setup isolation)", path);
		return err_errno(e, saved, "open %s", path);
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, E_CONFIG, "%s is not a regular file", path);
	}
	if (check_trusted_stat(&st, path, e) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- parsing ------------------------------------------------------------------------------- */

struct parse_state {
	const char *origin;
	struct adminconf conf;
	struct err *e;
};

static int fail_at(struct parse_state *ps, const yaml_node_t *node, const char *key, const char *msg)
{
	unsigned long line = node ? (unsigned long)node->start_mark.line + 1 : 0;
	return err_set(ps->e, E_CONFIG, "%s:%lu: %s%s%s", ps->origin, line, key ? key : "", key ? ": " : "", msg);
}

static char **slot_for_key(struct adminconf *c, const char *key)
{
	if (!strcmp(key, "worktrees_dir"))
		return &c->worktrees_dir;
	if (!strcmp(key, "repos_dir"))
		return &c->repos_dir;
	if (!strcmp(key, "archive_dir"))
		return &c->archive_dir;
	return NULL;
}

static int take_pair(struct parse_state *ps, yaml_document_t *doc, const yaml_node_pair_t *pair)
{
	yaml_node_t *k = yaml_document_get_node(doc, pair->key);
	yaml_node_t *v = yaml_document_get_node(doc, pair->value);
	if (!k || k->type != YAML_SCALAR_NODE)
		return fail_at(ps, k, NULL, "keys must be plain words");
	const char *key = (const char *)k->data.scalar.value;
	char **slot = slot_for_key(&ps->conf, key);
	if (!slot)
		return fail_at(ps, k, key, "unknown key (known: worktrees_dir, repos_dir, archive_dir)");
	if (*slot)
		return fail_at(ps, k, key, "duplicate key");
	if (!v || v->type != YAML_SCALAR_NODE)
		return fail_at(ps, v ? v : k, key, "expected a path");
	const char *value = (const char *)v->data.scalar.value;
	if (strlen(value) != v->data.scalar.length || !unixperm_path_is_clean(value))
		return fail_at(ps, v, key,
			       "expected a clean absolute path other than / (no '.', '..', '//', "
			       "trailing '/')");
	*slot = xstrdup(value);
	return 0;
}

static bool nested(const char *a, const char *b)
{
	return !strcmp(a, b) || unixperm_path_below(a, b) || unixperm_path_below(b, a);
}

static int check_roots(struct parse_state *ps, const yaml_node_t *root)
{
	struct adminconf *c = &ps->conf;
	if (!c->worktrees_dir)
		return fail_at(ps, root, "worktrees_dir", "required");
	if (!c->repos_dir)
		return fail_at(ps, root, "repos_dir", "required");
	if (nested(c->worktrees_dir, c->repos_dir))
		return fail_at(ps, root, "repos_dir", "must not contain, or lie inside, worktrees_dir");
	if (c->archive_dir && (nested(c->archive_dir, c->worktrees_dir) || nested(c->archive_dir, c->repos_dir)))
		return fail_at(ps, root, "archive_dir", "must lie outside worktrees_dir and repos_dir");
	return 0;
}

static int parse_document(struct parse_state *ps, yaml_document_t *doc)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);
	if (!root)
		return err_set(ps->e, E_CONFIG, "%s: empty file (worktrees_dir and repos_dir are required)",
			       ps->origin);
	if (root->type != YAML_MAPPING_NODE)
		return fail_at(ps, root, NULL, "the top level must be a mapping");
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++)
		if (take_pair(ps, doc, p) < 0)
			return -1;
	return check_roots(ps, root);
}

static int yaml_fail(struct parse_state *ps, const yaml_parser_t *parser)
{
	return err_set(ps->e, E_CONFIG, "%s:%lu: invalid YAML: %s", ps->origin,
		       (unsigned long)parser->problem_mark.line + 1, parser->problem ? parser->problem : "error");
}

/* A second document after the first is an error. */
static int expect_single_document(struct parse_state *ps, yaml_parser_t *parser)
{
	yaml_document_t extra;
	if (!yaml_parser_load(parser, &extra))
		return yaml_fail(ps, parser);
	bool more = yaml_document_get_root_node(&extra) != NULL;
	yaml_document_delete(&extra);
	return more ? err_set(ps->e, E_CONFIG, "%s: more than one YAML document", ps->origin) : 0;
}

int adminconf_parse(const char *text, size_t len, const char *origin, struct adminconf *c, struct err *e)
{
	struct parse_state ps = { origin, { NULL, NULL, NULL, NULL }, e };
	yaml_parser_t parser;
	yaml_document_t doc;
	if (yaml_check_depth(origin, text, len, e) < 0)
		return -1;
	if (!yaml_parser_initialize(&parser))
		return err_set(e, E_INTERNAL, "yaml_parser_initialize failed");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	int rc;
	if (!yaml_parser_load(&parser, &doc))
		rc = yaml_fail(&ps, &parser);
	else {
		rc = parse_document(&ps, &doc);
		yaml_document_delete(&doc);
		if (rc == 0)
			rc = expect_single_document(&ps, &parser);
	}
	yaml_parser_delete(&parser);
	if (rc < 0) {
		adminconf_release(&ps.conf);
		return -1;
	}
	ps.conf.path = xstrdup(origin);
	*c = ps.conf;
	return 0;
}

int adminconf_load(const char *path, struct adminconf *c, struct err *e)
{
	if (!path)
		path = ADMINCONF_DEFAULT_PATH;
	int fd = adminconf_open_trusted(path, e);
	if (fd < 0)
		return -1;
	struct strbuf text = STRBUF_INIT;
	ssize_t n = strbuf_read_fd(&text, fd, ADMINCONF_MAX_BYTES);
	int saved = errno;
	close(fd);
	int rc;
	if (n == -2)
		rc = err_set(e, E_CONFIG, "%s is larger than %u bytes", path, ADMINCONF_MAX_BYTES);
	else if (n < 0)
		rc = err_errno(e, saved, "read %s", path);
	else if (memchr(text.buf, '\0', text.len))
		rc = err_set(e, E_CONFIG, "%s contains a NUL byte", path);
	else
		rc = adminconf_parse(text.buf, text.len, path, c, e);
	strbuf_release(&text);
	return rc;
}

/* One character of a double-quoted YAML scalar: escaped when YAML would not read it back as itself — '"', '\\',
 * control characters (C0, DEL, C1), the line and paragraph separators (a line break to YAML, folded away) and the
 * non-characters libyaml refuses. Returns how many bytes beyond *p it took. */
static size_t add_yaml_quoted_char(struct strbuf *out, const unsigned char *p)
{
	if (*p == '"' || *p == '\\') {
		strbuf_addf(out, "\\%c", *p);
		return 0;
	}
	if (*p < 0x20 || *p == 0x7f) {
		strbuf_addf(out, "\\x%02x", *p);
		return 0;
	}
	if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
		strbuf_addf(out, "\\x%02x", p[1]);
		return 1;
	}
	if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
		strbuf_addstr(out, p[2] == 0xa8 ? "\\L" : "\\P");
		return 2;
	}
	if (p[0] == 0xef && ((p[1] == 0xbb && p[2] == 0xbf) || (p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf)))) {
		strbuf_addf(out, "\\u%s", p[1] == 0xbb ? "FEFF" : p[2] == 0xbe ? "FFFE" : "FFFF");
		return 2;
	}
	strbuf_addch(out, (char)*p);
	return 0;
}

/* A YAML scalar for a clean path: plain when it only has safe characters, else double-quoted. */
static void add_yaml_path(struct strbuf *out, const char *key, const char *path)
{
	bool plain = true;
	for (const char *p = path; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-+", *p))
			plain = false;
	strbuf_addf(out, "%s: ", key);
	if (plain)
		strbuf_addstr(out, path);
	else {
		strbuf_addch(out, '"');
		for (const unsigned char *p = (const unsigned char *)path; *p; p++)
			p += add_yaml_quoted_char(out, p);
		strbuf_addch(out, '"');
	}
	strbuf_addch(out, '\n');
}

void adminconf_format(const struct adminconf *c, struct strbuf *out)
{
	strbuf_addstr(out, "# admin.yaml — the only directories `agor admin` (root) may act in.\n"
			   "# Must stay owned by root and not writable by group or others, like "
			   "every directory above it.\n");
	add_yaml_path(out, "worktrees_dir", c->worktrees_dir);
	add_yaml_path(out, "repos_dir", c->repos_dir);
	if (c->archive_dir)
		add_yaml_path(out, "archive_dir", c->archive_dir);
	else
		strbuf_addstr(out, "# archive_dir: /var/backups/agor   # where delete-unix-user "
				   "--archive may write\n");
}

void adminconf_release(struct adminconf *c)
{
	free(c->path);
	free(c->worktrees_dir);
	free(c->repos_dir);
	free(c->archive_dir);
	memset(c, 0, sizeof(*c));
}
