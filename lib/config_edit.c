/* config_edit.c — `agor config set`: one key of config.yaml replaced or inserted as text (config_edit.h).
 * Never re-emits the document (comments stay), never renames a file the real loader would refuse. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "common.h"
#include "config.h"
#include "config_edit.h"
#include "fsutil.h"
#include "yaml_depth.h"
#include "banned.h"

#define MAX_KEY_PARTS 4

/* ---- rendering a value ------------------------------------------------------------------------ */

static bool plain_safe(const char *v)
{
	static const char *const reserved[] = { "null",	 "Null",  "NULL",  "~",	  "true", "True", "TRUE",
						"false", "False", "FALSE", "yes", "Yes",  "no",	  "No",
						"on",	 "On",	  "off",   "Off", "y",	  "n" };
	if (!*v || strchr("-?:,[]{}#&*!|>'\"%@`0123456789+.", v[0]))
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
		if (!strcmp(v, reserved[i]))
			return false;
	for (const char *p = v; *p; p++)
		if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') ||
		      strchr("_-./@+", *p)))
			return false;
	return true;
}

char *config_render_value(const char *key, const char *value)
{
	struct config *cfg = config_new();
	struct config_entry en;
	int known = config_entry_get(cfg, key, &en) == 0;
	enum config_type type = en.type;
	config_free(cfg);
	if (!known)
		return NULL;
	if (type == CONFIG_INT || type == CONFIG_BOOL || type == CONFIG_ENUM || plain_safe(value))
		return xstrdup(value);
	if (type == CONFIG_NULLABLE_STRING && !*value)
		return xstrdup("null");
	struct strbuf sb = STRBUF_INIT;
	strbuf_addch(&sb, '"');
	for (const char *p = value; *p; p++) {
		if (*p == '"' || *p == '\\')
			strbuf_addch(&sb, '\\');
		strbuf_addch(&sb, *p);
	}
	strbuf_addch(&sb, '"');
	return strbuf_detach(&sb, NULL);
}

/* ---- finding the key in the text --------------------------------------------------------------- */

struct frame {
	bool is_map, expect_key;
	int depth; /* how many leading key parts this mapping matches; -1: off the path */
	char *key; /* the current key (maps) */
	yaml_mark_t key_mark, key_end;
};

struct target {
	char *parts[MAX_KEY_PARTS];
	int n;
	/* the value itself */
	bool found;
	yaml_mark_t value_start, value_end, key_end;
	bool value_empty;
	/* else the deepest mapping on the path */
	int anc_depth;	     /* 0: the root */
	yaml_mark_t anc_key; /* the key line of that mapping (anc_depth > 0) */
	int child_col;	     /* the column of its first key; -1 none */
	bool anc_flow, anc_empty;
};

static int edit_error(struct err *e, const char *name, const char *key, yaml_mark_t m, const char *why)
{
	return err_set(e, E_CONFIG, "%s:%zu: %s: %s", name, m.line + 1, key, why);
}

static void note_mapping(struct target *t, int depth, const yaml_event_t *ev, yaml_mark_t key_mark)
{
	if (depth < t->anc_depth)
		return;
	t->anc_depth = depth;
	t->anc_key = key_mark;
	t->child_col = -1;
	t->anc_flow = ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
	t->anc_empty = false;
}

/* A node event as the value of the current key of map frame f (on the path at depth f->depth). */
static int on_path_value(struct target *t, struct frame *f, const yaml_event_t *ev, const char *name, const char *key,
			 struct err *e, int *child_depth)
{
	*child_depth = -1;
	if (f->depth < 0 || !f->key || strcmp(f->key, t->parts[f->depth]))
		return 0;
	int d = f->depth + 1;
	if (d == t->n) {
		if (ev->type != YAML_SCALAR_EVENT)
			return edit_error(e, name, key, ev->start_mark, "is a mapping or a sequence here, not a value");
		t->found = true;
		t->value_start = ev->start_mark;
		t->value_end = ev->end_mark;
		t->key_end = f->key_end;
		t->value_empty = ev->data.scalar.length == 0 && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		return 0;
	}
	if (ev->type == YAML_MAPPING_START_EVENT) {
		note_mapping(t, d, ev, f->key_mark);
		*child_depth = d;
		return 0;
	}
	if (ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length == 0 &&
	    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && d > t->anc_depth) {
		t->anc_depth = d;
		t->anc_key = f->key_mark;
		t->child_col = -1;
		t->anc_flow = false;
		t->anc_empty = true;
		return 0;
	}
	return edit_error(e, name, key, ev->start_mark, "its section is not a mapping (write it as `section:` first)");
}

/* Runs the parser over text, filling t. */
static int find_target(const char *name, const char *text, size_t len, const char *key, struct target *t, struct err *e)
{
	yaml_parser_t parser;
	if (yaml_check_depth(name, text, len, e) < 0)
		return -1;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	struct frame stack[64];
	int top = -1, rc = 0, docs = 0;
	bool done = false;
	t->anc_depth = -1;
	while (!done && rc == 0) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&parser, &ev)) {
			rc = err_set(e, E_CONFIG, "%s:%zu: invalid YAML (%s); fix it first", name,
				     parser.problem_mark.line + 1, parser.problem ? parser.problem : "?");
			break;
		}
		bool node = ev.type == YAML_SCALAR_EVENT || ev.type == YAML_MAPPING_START_EVENT ||
			    ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_ALIAS_EVENT;
		if (ev.type == YAML_DOCUMENT_START_EVENT && ++docs > 1)
			rc = err_set(e, E_CONFIG, "%s: more than one YAML document; fix it first", name);
		if (node) {
			int child_depth = -1;
			struct frame *f = top >= 0 ? &stack[top] : NULL;
			bool is_key = f && f->is_map && f->expect_key;
			if (!f) {
				if (ev.type == YAML_MAPPING_START_EVENT) {
					note_mapping(t, 0, &ev, ev.start_mark);
					child_depth = 0;
				} else if (!(ev.type == YAML_SCALAR_EVENT && ev.data.scalar.length == 0)) {
					rc = err_set(e, E_CONFIG, "%s: the top level is not a mapping", name);
				}
			} else if (is_key) {
				free(f->key);
				f->key = ev.type == YAML_SCALAR_EVENT ? xstrdup((const char *)ev.data.scalar.value)
								      : NULL;
				f->key_mark = ev.start_mark;
				f->key_end = ev.end_mark;
				f->expect_key = false;
				if (f->depth == t->anc_depth && f->depth >= 0 && t->child_col < 0)
					t->child_col = (int)ev.start_mark.column;
			} else if (f->is_map) {
				rc = on_path_value(t, f, &ev, name, key, e, &child_depth);
				f->expect_key = true;
			}
			if (rc == 0 && (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT)) {
				if (top + 1 >= (int)ARRAY_SIZE(stack)) {
					rc = err_set(e, E_CONFIG, "%s: nested too deeply", name);
				} else {
					stack[++top] = (struct frame){ .is_map = ev.type == YAML_MAPPING_START_EVENT,
								       .expect_key = true,
								       .depth = child_depth };
				}
			}
		} else if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) {
			free(stack[top].key);
			top--;
		} else if (ev.type == YAML_STREAM_END_EVENT) {
			done = true;
		}
		yaml_event_delete(&ev);
	}
	while (top >= 0)
		free(stack[top--].key);
	yaml_parser_delete(&parser);
	return rc;
}

/* ---- editing ------------------------------------------------------------------------------------ */

/* The byte offset of a (line, column in characters) mark. */
static size_t offset_of(const char *text, size_t len, yaml_mark_t m)
{
	size_t i = 0;
	for (size_t line = 0; line < m.line && i < len; i++)
		if (text[i] == '\n')
			line++;
	for (size_t col = 0; col < m.column && i < len && text[i] != '\n'; col++) {
		i++;
		while (i < len && ((unsigned char)text[i] & 0xc0) == 0x80)
			i++;
	}
	return i;
}

/* Just past the end of the line holding offset (after its '\n', or len). */
static size_t end_of_line(const char *text, size_t len, size_t at)
{
	const char *nl = memchr(text + at, '\n', len - at);
	return nl ? (size_t)(nl - text) + 1 : len;
}

static void add_new_keys(struct strbuf *sb, const struct target *t, int from, int indent, const char *rendered)
{
	for (int i = from; i < t->n; i++, indent += 2) {
		strbuf_addf(sb, "%*s", indent, "");
		if (i + 1 < t->n)
			strbuf_addf(sb, "%s:\n", t->parts[i]);
		else
			strbuf_addf(sb, "%s: %s\n", t->parts[i], rendered);
	}
}

static int split_key(const char *key, struct target *t, struct err *e)
{
	for (const char *p = key;; p++) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (!n || t->n == MAX_KEY_PARTS)
			return err_set(e, E_CONFIG, "%s: not a setting", key);
		t->parts[t->n++] = xstrndup(p, n);
		if (!dot)
			return 0;
		p = dot;
	}
}

int config_text_set(const char *name, const char *text, size_t len, const char *key, const char *rendered,
		    struct strbuf *out, struct err *e)
{
	struct target t = { 0 };
	int rc = split_key(key, &t, e);
	if (rc == 0)
		rc = find_target(name, text, len, key, &t, e);
	if (rc == 0 && t.found) {
		size_t start = offset_of(text, len, t.value_start), end = offset_of(text, len, t.value_end);
		if (t.value_empty) { /* `key:` with nothing after it: the value goes after the colon */
			start = end = offset_of(text, len, t.key_end);
			while (end < len && text[end] == ' ')
				end++;
			if (end < len && text[end] == ':')
				end++;
			start = end;
		}
		strbuf_add(out, text, start);
		if (t.value_empty)
			strbuf_addch(out, ' ');
		strbuf_addstr(out, rendered);
		strbuf_add(out, text + end, len - end);
	} else if (rc == 0 && t.anc_flow) {
		rc = edit_error(e, name, key, t.anc_key, "its section is written in flow style ({…}); edit it by hand");
	} else if (rc == 0 && t.anc_depth <= 0) {
		strbuf_add(out, text, len);
		if (len && text[len - 1] != '\n')
			strbuf_addch(out, '\n');
		add_new_keys(out, &t, 0, 0, rendered);
	} else if (rc == 0) {
		size_t at = end_of_line(text, len, offset_of(text, len, t.anc_key));
		int indent = t.child_col >= 0 ? t.child_col : (int)t.anc_key.column + 2;
		strbuf_add(out, text, at);
		if (at && text[at - 1] != '\n')
			strbuf_addch(out, '\n');
		add_new_keys(out, &t, t.anc_depth, indent, rendered);
		strbuf_add(out, text + at, len - at);
	}
	for (int i = 0; i < t.n; i++)
		free(t.parts[i]);
	return rc;
}

/* ---- the file ------------------------------------------------------------------------------------- */

static int read_current(const char *path, struct strbuf *text, mode_t *mode, struct err *e)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return err_errno(e, errno, "%s%s", path, errno == ELOOP ? ": is a symlink; edit its target" : "");
	struct stat st;
	int rc = fstat(fd, &st) < 0 ? err_errno(e, errno, "stat %s", path) : 0;
	if (rc == 0)
		rc = config_check_file_security(&st, path, e);
	if (rc == 0 && st.st_size > (1 << 20))
		rc = err_set(e, E_CONFIG, "%s: larger than 1 MiB", path);
	if (rc == 0 && strbuf_read_fd(text, fd, 1 << 20) < 0)
		rc = err_errno(e, errno, "read %s", path);
	*mode = st.st_mode & 0644; /* never group/other write (the loader refuses it anyway) */
	close(fd);
	return rc;
}

static int write_checked(const char *path, const char *tmp, const struct strbuf *text, mode_t mode, struct err *e)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return err_errno(e, errno, "create %s", tmp);
	int rc = fchmod(fd, mode) == 0 && fs_write_all(fd, text->buf, text->len) == 0 && fsync(fd) == 0
			 ? 0
			 : err_errno(e, errno, "write %s", tmp);
	close(fd);
	if (rc == 0) {
		struct config *cfg = config_new();
		rc = config_load(cfg, &(struct config_overrides){ .config_path = tmp }, e);
		config_free(cfg);
		if (rc < 0)
			err_prefix(e, "%s: the edited file would not load", path);
	}
	if (rc == 0 && rename(tmp, path) < 0)
		rc = err_errno(e, errno, "rename %s", tmp);
	if (rc < 0)
		(void)unlink(tmp);
	return rc;
}

int config_file_set(const char *path, const char *key, const char *value, struct err *e)
{
	struct config *check = config_new();
	int rc = config_set_flag(check, key, value, e);
	config_free(check);
	if (rc < 0) {
		err_prefix(e, "%s", path);
		return -1;
	}
	_cleanup_free_ char *dir = xstrndup(path, strrchr(path, '/') ? (size_t)(strrchr(path, '/') - path) : 0);
	int dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return err_errno(e, errno, "open %s", *dir ? dir : "/");
	if (flock(dfd, LOCK_EX) < 0) {
		rc = err_errno(e, errno, "lock %s", dir);
		close(dfd);
		return rc;
	}
	struct strbuf in = STRBUF_INIT, out = STRBUF_INIT;
	mode_t mode = 0600;
	_cleanup_free_ char *rendered = config_render_value(key, value);
	_cleanup_free_ char *tmp = xasprintf("%s.agor-set.%d.tmp", path, (int)getpid());
	rc = read_current(path, &in, &mode, e);
	if (rc == 0)
		rc = config_text_set(path, in.buf ? in.buf : "", in.len, key, rendered, &out, e);
	if (rc == 0)
		rc = write_checked(path, tmp, &out, mode ? mode : 0600, e);
	if (rc == 0)
		(void)fsync(dfd);
	strbuf_release(&in);
	strbuf_release(&out);
	close(dfd); /* releases the lock */
	return rc;
}
