/* approvals_store.c — the exec-approvals file of approvals_store.h: safe open, validation, atomic update.
 * Never follows a symlink, never writes without the lock, never keeps a document it has not validated. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "approvals_store.h"
#include "fsutil.h"
#include "json.h"
#include "strbuf.h"
#include "banned.h"

const struct appr_levels appr_builtin_defaults = { APPR_SECURITY_DENY, APPR_ASK_ON_MISS, APPR_SECURITY_DENY };

/* ---- validation ------------------------------------------------------------------------------ */

static int bad(struct err *e, const char *path, const char *fmt, ...) PRINTF_LIKE(3, 4);
static int bad(struct err *e, const char *path, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	err_setd(e, E_CONFIG, json_pack("{s:s}", "field", path), "%s: %s", path, sb.buf);
	strbuf_release(&sb);
	return -1;
}

static int only_keys(const json_t *obj, const char *path, const char *const *keys, struct err *e)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)obj, k, v)
	{
		size_t i = 0;
		while (keys[i] && strcmp(keys[i], k))
			i++;
		if (!keys[i])
			return bad(e, path[0] ? path : "(top level)", "unknown field \"%s\"", k);
	}
	return 0;
}

static int check_level(const json_t *obj, const char *path, const char *field, int security, struct err *e)
{
	json_t *v = json_object_get(obj, field);
	if (!v)
		return 0;
	_cleanup_free_ char *where = xasprintf("%s.%s", path, field);
	const char *s = json_string_value(v);
	int ok = security ? appr_security_parse(s) >= 0 : appr_ask_parse(s) >= 0;
	if (ok)
		return 0;
	const char *allowed = security ? "deny|allowlist|full" : "off|on-miss|always";
	if (!s) {
		_cleanup_free_ char *txt = json_to_compact(v);
		return bad(e, where, "%s is not one of %s", txt, allowed);
	}
	return bad(e, where, "\"%s\" is not one of %s", s, allowed);
}

static int check_levels(const json_t *obj, const char *path, struct err *e)
{
	if (check_level(obj, path, "security", 1, e) < 0 || check_level(obj, path, "ask", 0, e) < 0 ||
	    check_level(obj, path, "askFallback", 1, e) < 0)
		return -1;
	return 0;
}

static int check_optional_string(const json_t *obj, const char *path, const char *field, struct err *e)
{
	json_t *v = json_object_get(obj, field);
	if (!v || json_is_null(v) || json_is_string(v))
		return 0;
	return bad(e, path, "%s must be a string or null", field);
}

static int check_entry(const json_t *entry, const char *path, struct err *e)
{
	static const char *const keys[] = {
		"id", "pattern", "lastUsedAt", "lastUsedCommand", "lastResolvedPath", NULL
	};
	if (!json_is_object(entry))
		return bad(e, path, "must be an object");
	if (only_keys(entry, path, keys, e) < 0)
		return -1;
	const char *id = json_get_str(entry, "id");
	if (!id || !*id || strlen(id) > 64)
		return bad(e, path, "id must be a non-empty string of at most 64 characters");
	const char *pattern = json_get_str(entry, "pattern");
	if (!pattern)
		return bad(e, path, "pattern must be a string");
	_cleanup_err_ struct err pe = ERR_INIT;
	if (appr_pattern_check(pattern, &pe) < 0)
		return bad(e, path, "pattern: %s", pe.message);
	json_t *at = json_object_get(entry, "lastUsedAt");
	if (at && !json_is_null(at) && !(json_is_integer(at) && json_integer_value(at) >= 0))
		return bad(e, path, "lastUsedAt must be a non-negative integer (ms) or null");
	if (check_optional_string(entry, path, "lastUsedCommand", e) < 0 ||
	    check_optional_string(entry, path, "lastResolvedPath", e) < 0)
		return -1;
	return 0;
}

static int check_agent(const char *id, const json_t *agent, struct err *e)
{
	static const char *const keys[] = { "security", "ask", "askFallback", "allowlist", NULL };
	_cleanup_free_ char *path = xasprintf("agents.%s", id);
	_cleanup_err_ struct err ie = ERR_INIT;
	if (appr_agent_id_check(id, &ie) < 0)
		return bad(e, path, "%s", ie.message);
	if (!json_is_object(agent))
		return bad(e, path, "must be an object");
	if (only_keys(agent, path, keys, e) < 0 || check_levels(agent, path, e) < 0)
		return -1;
	json_t *list = json_object_get(agent, "allowlist");
	if (!list)
		return 0;
	if (!json_is_array(list))
		return bad(e, path, "allowlist must be an array");
	size_t i;
	json_t *entry;
	json_array_foreach(list, i, entry)
	{
		_cleanup_free_ char *where = xasprintf("%s.allowlist.%zu", path, i);
		if (check_entry(entry, where, e) < 0)
			return -1;
	}
	return 0;
}

static int check_socket(const json_t *sock, struct err *e)
{
	static const char *const keys[] = { "path", "token", NULL };
	if (!json_is_object(sock))
		return bad(e, "socket", "must be an object");
	if (only_keys(sock, "socket", keys, e) < 0)
		return -1;
	json_t *p = json_object_get(sock, "path");
	if (p && (!json_is_string(p) || json_string_value(p)[0] != '/' || json_string_length(p) >= 108))
		return bad(e, "socket.path", "must be an absolute path shorter than 108 bytes");
	json_t *t = json_object_get(sock, "token");
	if (!t)
		return 0;
	const char *tok = json_string_value(t);
	if (!tok || strlen(tok) != APPR_TOKEN_HEX_LEN || strspn(tok, "0123456789abcdef") != APPR_TOKEN_HEX_LEN)
		return bad(e, "socket.token", "must be 64 lowercase hex digits (32 bytes)");
	return 0;
}

int appr_store_validate(const json_t *root, struct err *e)
{
	static const char *const keys[] = { "version", "socket", "defaults", "agents", NULL };
	if (!json_is_object(root))
		return bad(e, "(top level)", "must be a JSON object");
	if (only_keys(root, "", keys, e) < 0)
		return -1;
	json_t *v = json_object_get(root, "version");
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return bad(e, "version", "must be 1");
	json_t *sock = json_object_get(root, "socket");
	if (sock && check_socket(sock, e) < 0)
		return -1;
	json_t *d = json_object_get(root, "defaults");
	if (d) {
		static const char *const dkeys[] = { "security", "ask", "askFallback", NULL };
		if (!json_is_object(d))
			return bad(e, "defaults", "must be an object");
		if (only_keys(d, "defaults", dkeys, e) < 0 || check_levels(d, "defaults", e) < 0)
			return -1;
	}
	json_t *agents = json_object_get(root, "agents");
	if (!agents)
		return 0;
	if (!json_is_object(agents))
		return bad(e, "agents", "must be an object");
	const char *id;
	json_t *agent;
	json_object_foreach(agents, id, agent)
	{
		if (check_agent(id, agent, e) < 0)
			return -1;
	}
	return 0;
}

int appr_agent_id_check(const char *agent, struct err *e)
{
	if (!strcmp(agent, "*"))
		return 0;
	size_t n = strlen(agent);
	if (n == 0 || n > 64 || strspn(agent, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
		return err_set(e, E_INVALID_PAYLOAD, "agent id must be \"*\" or 1-64 characters of [A-Za-z0-9._-]");
	return 0;
}

/* ---- safe opening ---------------------------------------------------------------------------- */

/* Opens dir (absolute) component by component with O_NOFOLLOW, creating missing ones (the last
 * 0700, parents 0755); the last must be ours and is made 0700. */
static int open_home(const char *dir, struct err *e)
{
	if (dir[0] != '/')
		return err_set(e, E_CONFIG, "AGOR_HOME %s is not absolute", dir);
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, errno, "open /");
	_cleanup_free_ char *copy = xstrdup(dir);
	char *save = NULL;
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int last = save == NULL || *save == '\0';
		if (!strcmp(c, "..")) {
			close(fd);
			return err_set(e, E_CONFIG, "AGOR_HOME %s contains '..'", dir);
		}
		int next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (mkdirat(fd, c, last ? 0700 : 0755) < 0 && errno != EEXIST) {
				int saved = errno;
				close(fd);
				return err_errno(e, saved, "mkdir %s (in %s)", c, dir);
			}
			next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			int saved = errno;
			struct stat st;
			int is_link = fstatat(fd, c, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
			close(fd);
			if (is_link)
				return err_set(e, E_PERMISSION_DENIED, "refusing %s: its component \"%s\" is a symlink",
					       dir, c);
			return err_errno(e, saved, "open %s (component \"%s\")", dir, c);
		}
		close(fd);
		fd = next;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int saved = errno;
		close(fd);
		return err_errno(e, saved, "stat %s", dir);
	}
	if (st.st_uid != geteuid()) {
		close(fd);
		return err_set(e, E_PERMISSION_DENIED, "refusing %s: owned by uid %u, not %u", dir, (unsigned)st.st_uid,
			       (unsigned)geteuid());
	}
	if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0) {
		int saved = errno;
		close(fd);
		return err_errno(e, saved, "chmod 0700 %s", dir);
	}
	return fd;
}

/* Reads the file into sb: 1 when read, 0 when missing, -1 on error or refusal. */
static int read_file(int dirfd, const char *path, struct strbuf *sb, struct err *e)
{
	int fd = openat(dirfd, APPR_FILE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 && errno == ELOOP)
		return err_set(e, E_PERMISSION_DENIED, "refusing %s: it is a symlink", path);
	if (fd < 0)
		return err_errno(e, errno, "open %s", path);
	struct stat st;
	int rc = -1;
	if (fstat(fd, &st) < 0)
		err_errno(e, errno, "stat %s", path);
	else if (!S_ISREG(st.st_mode))
		err_set(e, E_PERMISSION_DENIED, "refusing %s: not a regular file", path);
	else if (st.st_uid != geteuid())
		err_set(e, E_PERMISSION_DENIED, "refusing %s: owned by uid %u", path, (unsigned)st.st_uid);
	else if (st.st_mode & 077)
		err_set(e, E_PERMISSION_DENIED, "refusing %s: mode %04o, expected 0600", path,
			(unsigned)(st.st_mode & 07777));
	else {
		ssize_t n = strbuf_read_fd(sb, fd, APPR_FILE_MAX);
		if (n == -2)
			err_set(e, E_CONFIG, "%s is larger than %d bytes", path, APPR_FILE_MAX);
		else if (n < 0)
			err_errno(e, errno, "read %s", path);
		else
			rc = 1;
	}
	close(fd);
	return rc;
}

static json_t *new_document(void)
{
	return json_pack("{s:i}", "version", 1);
}

/* Reads and validates the file under dirfd into s->root / s->hash. */
static int load_at(struct appr_store *s, int dirfd, struct err *e)
{
	_cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
	int rc = read_file(dirfd, s->path, &sb, e);
	if (rc < 0)
		return -1;
	json_t *root;
	if (rc == 0) {
		root = new_document();
		s->hash[0] = '\0';
	} else {
		crypto_sha256_hex(sb.buf, sb.len, s->hash);
		root = json_parse(sb.buf, sb.len, e);
		if (!root) {
			err_prefix(e, "%s", s->path);
			return -1;
		}
		if (appr_store_validate(root, e) < 0) {
			json_decref(root);
			err_prefix(e, "%s", s->path);
			return -1;
		}
	}
	if (s->root)
		json_decref(s->root);
	s->root = root;
	return 0;
}

int appr_store_load(struct appr_store *s, const char *home, struct err *e)
{
	free(s->home);
	free(s->path);
	s->home = xstrdup(home);
	s->path = xasprintf("%s/%s", home, APPR_FILE_NAME);
	int dirfd = open_home(home, e);
	if (dirfd < 0)
		return -1;
	int rc = load_at(s, dirfd, e);
	close(dirfd);
	return rc;
}

void appr_store_release(struct appr_store *s)
{
	free(s->home);
	free(s->path);
	if (s->root)
		json_decref(s->root);
	memset(s, 0, sizeof(*s));
}

int appr_err_is_retry(const struct err *e)
{
	return e->details && json_is_true(json_object_get(e->details, "retry"));
}

static int retry_error(struct err *e, const char *fmt, ...) PRINTF_LIKE(2, 3);
static int retry_error(struct err *e, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	err_setd(e, E_CONFIG, json_pack("{s:b}", "retry", 1), "%s", sb.buf);
	strbuf_release(&sb);
	return -1;
}

static int lock_file(int dirfd, const char *path, int wait_ms, struct err *e)
{
	int fd = openat(dirfd, APPR_FILE_NAME ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_errno(e, errno, "open %s.lock", path);
	for (int waited = 0;; waited += 10) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			int saved = errno;
			close(fd);
			return err_errno(e, saved, "lock %s.lock", path);
		}
		if (waited >= wait_ms) {
			close(fd);
			return retry_error(e, "%s is locked by another writer; retry", path);
		}
		usleep(10 * 1000);
	}
}

static int write_atomically(int dirfd, const char *path, const char *text, size_t len, struct err *e)
{
	uint8_t rnd[8];
	char hex[17];
	if (crypto_random(rnd, sizeof(rnd), e) < 0)
		return -1;
	crypto_hex(rnd, sizeof(rnd), hex);
	_cleanup_free_ char *tmp = xasprintf("%s.tmp.%d.%s", APPR_FILE_NAME, (int)getpid(), hex);
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_errno(e, errno, "create %s/%s", path, tmp);
	int rc = 0;
	if (fchmod(fd, 0600) < 0 || fs_write_all(fd, text, len) < 0 || fsync(fd) < 0)
		rc = err_errno(e, errno, "write %s.tmp", path);
	if (close(fd) < 0 && rc == 0)
		rc = err_errno(e, errno, "close %s.tmp", path);
	if (rc == 0 && renameat(dirfd, tmp, dirfd, APPR_FILE_NAME) < 0)
		rc = err_errno(e, errno, "rename onto %s", path);
	if (rc < 0) {
		unlinkat(dirfd, tmp, 0);
		return -1;
	}
	fsync(dirfd);
	return 0;
}

int appr_store_update(struct appr_store *s, const char *expected_hash, appr_store_mutator fn, void *arg, struct err *e)
{
	int dirfd = open_home(s->home, e);
	if (dirfd < 0)
		return -1;
	int lockfd = lock_file(dirfd, s->path, s->no_wait ? 0 : APPR_LOCK_WAIT_MS, e);
	int rc = -1;
	if (lockfd < 0)
		goto out;
	if (load_at(s, dirfd, e) < 0)
		goto out;
	if (expected_hash && strcmp(expected_hash, s->hash)) {
		retry_error(e, "%s changed since it was read (expected hash %s, now %s); re-read and retry", s->path,
			    expected_hash[0] ? expected_hash : "(no file)", s->hash[0] ? s->hash : "(no file)");
		goto out;
	}
	json_t *copy = json_deep_copy(s->root);
	if (fn(copy, arg, e) < 0 || appr_store_validate(copy, e) < 0) {
		json_decref(copy);
		goto out;
	}
	char *text = json_dumps(copy, JSON_INDENT(2));
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, text);
	strbuf_addch(&sb, '\n');
	free(text);
	if (write_atomically(dirfd, s->path, sb.buf, sb.len, e) == 0) {
		crypto_sha256_hex(sb.buf, sb.len, s->hash);
		json_decref(s->root);
		s->root = copy;
		rc = 0;
	} else {
		json_decref(copy);
	}
	strbuf_release(&sb);
out:
	if (lockfd >= 0)
		close(lockfd); /* releases the flock */
	close(dirfd);
	return rc;
}

/* ---- accessors ------------------------------------------------------------------------------- */

static json_t *agent_object(const json_t *root, const char *agent)
{
	return json_object_get(json_object_get(root, "agents"), agent);
}

void appr_store_levels(const json_t *root, const char *agent, struct appr_levels *out)
{
	json_t *obj = agent ? agent_object(root, agent) : json_object_get(root, "defaults");
	out->security = appr_security_parse(json_get_str(obj, "security"));
	out->ask = appr_ask_parse(json_get_str(obj, "ask"));
	out->ask_fallback = appr_security_parse(json_get_str(obj, "askFallback"));
}

void appr_store_defaults(const json_t *root, struct appr_levels *out)
{
	appr_store_levels(root, NULL, out);
	if (out->security == APPR_UNSET)
		out->security = appr_builtin_defaults.security;
	if (out->ask == APPR_UNSET)
		out->ask = appr_builtin_defaults.ask;
	if (out->ask_fallback == APPR_UNSET)
		out->ask_fallback = appr_builtin_defaults.ask_fallback;
}

static void add_patterns(const json_t *agent_obj, struct strvec *out)
{
	size_t i;
	json_t *entry;
	json_array_foreach(json_object_get(agent_obj, "allowlist"), i, entry)
	{
		const char *p = json_get_str(entry, "pattern");
		if (p && strvec_find(out, p) < 0)
			strvec_push(out, p);
	}
}

void appr_store_patterns(const json_t *root, const char *agent, struct strvec *out)
{
	if (strcmp(agent, "*"))
		add_patterns(agent_object(root, agent), out);
	add_patterns(agent_object(root, "*"), out);
}

const char *appr_store_socket_path(const json_t *root)
{
	return json_get_str(json_object_get(root, "socket"), "path");
}

const char *appr_store_token(const json_t *root)
{
	return json_get_str(json_object_get(root, "socket"), "token");
}

/* ---- mutators -------------------------------------------------------------------------------- */

static json_t *object_member(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (!json_is_object(v)) {
		v = json_object();
		json_object_set_new(obj, key, v);
	}
	return v;
}

int appr_store_ensure_socket(json_t *root, const char *home, struct err *e)
{
	json_t *sock = object_member(root, "socket");
	if (!json_get_str(sock, "path")) {
		_cleanup_free_ char *p = xasprintf("%s/%s", home, APPR_SOCKET_NAME);
		if (strlen(p) >= 108)
			return err_set(e, E_CONFIG, "socket path %s is too long for a Unix socket", p);
		json_object_set_new(sock, "path", json_string(p));
	}
	if (!json_get_str(sock, "token")) {
		uint8_t raw[32];
		char hex[APPR_TOKEN_HEX_LEN + 1];
		if (crypto_random(raw, sizeof(raw), e) < 0)
			return -1;
		crypto_hex(raw, sizeof(raw), hex);
		json_object_set_new(sock, "token", json_string(hex));
		crypto_wipe(raw, sizeof(raw));
		crypto_wipe(hex, sizeof(hex));
	}
	return 0;
}

int appr_store_set_level(json_t *root, const char *agent, const char *field, const char *value, struct err *e)
{
	int security = !strcmp(field, "security") || !strcmp(field, "askFallback");
	if (!security && strcmp(field, "ask"))
		return err_set(e, E_INVALID_PAYLOAD, "unknown field %s", field);
	if (agent && appr_agent_id_check(agent, e) < 0)
		return -1;
	if (value && (security ? appr_security_parse(value) : appr_ask_parse(value)) < 0)
		return err_set(e, E_INVALID_PAYLOAD, "%s%s.%s: \"%s\" is not one of %s", agent ? "agents." : "defaults",
			       agent ? agent : "", field, value,
			       security ? "deny|allowlist|full" : "off|on-miss|always");
	json_t *obj = agent ? object_member(object_member(root, "agents"), agent) : object_member(root, "defaults");
	if (value)
		json_object_set_new(obj, field, json_string(value));
	else
		json_object_del(obj, field);
	return 0;
}

int appr_store_allowlist_add(json_t *root, const char *agent, const char *pattern, char **id_out, struct err *e)
{
	if (appr_agent_id_check(agent, e) < 0 || appr_pattern_check(pattern, e) < 0)
		return -1;
	json_t *obj = object_member(object_member(root, "agents"), agent);
	json_t *list = json_object_get(obj, "allowlist");
	if (!json_is_array(list)) {
		list = json_array();
		json_object_set_new(obj, "allowlist", list);
	}
	size_t i;
	json_t *entry;
	json_array_foreach(list, i, entry)
	{
		const char *p = json_get_str(entry, "pattern");
		if (p && !strcmp(p, pattern)) {
			if (id_out)
				*id_out = xstrdup(json_get_str(entry, "id"));
			return 0;
		}
	}
	uint8_t raw[8];
	char hex[17];
	if (crypto_random(raw, sizeof(raw), e) < 0)
		return -1;
	crypto_hex(raw, sizeof(raw), hex);
	json_array_append_new(list, json_pack("{s:s,s:s,s:n,s:n,s:n}", "id", hex, "pattern", pattern, "lastUsedAt",
					      "lastUsedCommand", "lastResolvedPath"));
	if (id_out)
		*id_out = xstrdup(hex);
	return 0;
}

int appr_store_allowlist_remove(json_t *root, const char *agent, const char *key, struct err *e)
{
	json_t *list = json_object_get(agent_object(root, agent), "allowlist");
	size_t i;
	json_t *entry;
	json_array_foreach(list, i, entry)
	{
		const char *id = json_get_str(entry, "id"), *p = json_get_str(entry, "pattern");
		if ((id && !strcmp(id, key)) || (p && !strcmp(p, key))) {
			json_array_remove(list, i);
			return 0;
		}
	}
	return err_set(e, E_NOT_FOUND, "no allowlist entry %s for agent %s", key, agent);
}

static int touch_in(json_t *agent_obj, const char *pattern, const char *command, const char *resolved)
{
	size_t i;
	json_t *entry;
	json_array_foreach(json_object_get(agent_obj, "allowlist"), i, entry)
	{
		const char *p = json_get_str(entry, "pattern");
		if (!p || strcmp(p, pattern))
			continue;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		json_object_set_new(entry, "lastUsedAt",
				    json_integer((json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
		json_object_set_new(entry, "lastUsedCommand", json_string(command));
		json_object_set_new(entry, "lastResolvedPath", json_string(resolved));
		return 1;
	}
	return 0;
}

void appr_store_touch(json_t *root, const char *agent, const char *pattern, const char *command, const char *resolved)
{
	if (!touch_in(agent_object(root, agent), pattern, command, resolved))
		touch_in(agent_object(root, "*"), pattern, command, resolved);
}

json_t *appr_store_redacted(const json_t *root)
{
	json_t *copy = json_deep_copy(root);
	json_t *sock = json_object_get(copy, "socket");
	if (json_object_get(sock, "token"))
		json_object_set_new(sock, "token", json_string("<redacted>"));
	return copy;
}

int appr_argv_sha256(const json_t *argv, char out[CRYPTO_SHA256_HEX_LEN + 1])
{
	size_t i;
	const json_t *word;
	int ok = json_is_array(argv) && json_array_size(argv) > 0;
	json_array_foreach(argv, i, word) ok = ok && json_is_string(word);
	char *text = ok ? json_dumps(argv, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	if (!text) {
		out[0] = 0;
		return -1;
	}
	crypto_sha256_hex(text, strlen(text), out);
	free(text);
	return 0;
}
