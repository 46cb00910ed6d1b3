/* gitops.c — clone and worktree operations on libgit2 (gitops.h), with errors mapped to SPEC codes.
 * Never runs an external program, never reads global/system git config, never prints to stdout. */
#include <errno.h>
#include <git2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fsutil.h"
#include "gitops.h"
#include "json.h"
#include "log.h"
#include "url.h"
#include "banned.h"

static int initialized;

static const char *const error_classes[] = {
	"NONE",	     "NOMEMORY",  "OS",	      "INVALID",   "REFERENCE",	 "ZLIB",       "REPOSITORY",
	"CONFIG",    "REGEX",	  "ODB",      "INDEX",	   "OBJECT",	 "NET",	       "TAG",
	"TREE",	     "INDEXER",	  "SSL",      "SUBMODULE", "THREAD",	 "STASH",      "CHECKOUT",
	"FETCHHEAD", "MERGE",	  "SSH",      "FILTER",	   "REVERT",	 "CALLBACK",   "CHERRYPICK",
	"DESCRIBE",  "REBASE",	  "FILESYSTEM", "PATCH",   "WORKTREE",	 "SHA",	       "HTTP",
	"INTERNAL",
};

/* Sets E_GIT_ERROR from libgit2's last error: "what: message", details {class, message}. */
static int git_fail(struct err *e, const char *what)
{
	const git_error *ge = git_error_last();
	int klass = ge ? ge->klass : 0;
	const char *msg = ge && ge->message ? ge->message : "unknown libgit2 error";
	const char *cls = klass >= 0 && (size_t)klass < ARRAY_SIZE(error_classes) ? error_classes[klass] : "UNKNOWN";
	return err_setd(e, E_GIT_ERROR, json_pack("{s:s,s:i,s:s}", "class", cls, "klass", klass, "message", msg),
			"%s: %s", what, msg);
}

static int is_readable_file(const char *path)
{
	struct stat st;
	return path && *path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

static int is_readable_dir(const char *path)
{
	struct stat st;
	return path && *path && stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(path, R_OK | X_OK) == 0;
}

/* SSL_CERT_FILE, SSL_CERT_DIR, then the usual distribution bundles (BUILD-NOTES); once, before the first
 * network operation. */
static void configure_ca_locations(void)
{
	static int configured;
	if (configured)
		return;
	configured = 1;
	static const char *const bundles[] = {
		"/etc/ssl/certs/ca-certificates.crt",
		"/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/cert.pem",
	};
	const char *file = getenv("SSL_CERT_FILE");
	const char *dir = getenv("SSL_CERT_DIR");
	if (!is_readable_file(file))
		file = NULL;
	if (!is_readable_dir(dir))
		dir = NULL;
	for (size_t i = 0; !file && !dir && i < ARRAY_SIZE(bundles); i++)
		if (is_readable_file(bundles[i]))
			file = bundles[i];
	if (!file && !dir) {
		log_debug("no CA bundle found: HTTPS certificate checks will fail");
		return;
	}
	if (git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, file, dir) < 0)
		log_warn("cannot load CA certificates from %s: %s", file ? file : dir,
			 git_error_last() ? git_error_last()->message : "?");
}

int gitops_init(struct err *e)
{
	if (initialized)
		return 0;
	if (git_libgit2_init() < 0)
		return git_fail(e, "initialising libgit2");
	static const int levels[] = { GIT_CONFIG_LEVEL_PROGRAMDATA, GIT_CONFIG_LEVEL_SYSTEM,
				      GIT_CONFIG_LEVEL_XDG, GIT_CONFIG_LEVEL_GLOBAL };
	for (size_t i = 0; i < ARRAY_SIZE(levels); i++)
		git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, levels[i], "");
	git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
	initialized = 1;
	return 0;
}

/* scp-like: user@host:path (no "://", a ':' before any '/'). */
static int is_scp_like(const char *url)
{
	const char *colon = strchr(url, ':');
	const char *slash = strchr(url, '/');
	const char *at = strchr(url, '@');
	return colon && at && at < colon && (!slash || colon < slash) && colon[1] != '\0';
}

const char *gitops_url_kind(const char *url)
{
	static const char *const schemes[] = { "https", "http", "ssh", "git", "file" };
	for (size_t i = 0; i < ARRAY_SIZE(schemes); i++) {
		size_t n = strlen(schemes[i]);
		if (!strncmp(url, schemes[i], n) && !strncmp(url + n, "://", 3) && url[n + 3])
			return schemes[i];
	}
	if (!strncmp(url, "ssh+git://", 10) || !strncmp(url, "git+ssh://", 10))
		return "ssh";
	if (url[0] == '/')
		return "local";
	if (is_scp_like(url))
		return "ssh";
	return NULL;
}

static int invalid_url(struct err *e, const char *reason)
{
	return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s,s:s}", "path", "params.url", "reason", reason),
			"params.url: %s", reason);
}

/* A network URL parses strictly (url.h), and one that could carry a daemon credential names no user: the host
 * is what follows the '@', so "https://github.com@evil/…" is evil's, and credentials come from the daemon. */
static int check_network_url(const char *url, const char *kind, struct err *e)
{
	if (!strcmp(kind, "local") || !strcmp(kind, "file") || !strstr(url, "://"))
		return 0;
	_cleanup_url_ struct url u = URL_INIT;
	struct err why = ERR_INIT;
	int rc = url_parse(url, &u, &why) < 0 ? invalid_url(e, why.message) : 0;
	err_clear(&why);
	if (rc == 0 && u.userinfo && strcmp(kind, "ssh"))
		rc = invalid_url(e, "user information (user@ or user:password@ before the host) is refused: remove it; "
				    "credentials come just in time from the daemon");
	return rc;
}

int gitops_check_clone_url(const char *url, struct err *e)
{
	const char *kind = gitops_url_kind(url);
	if (!kind)
		return invalid_url(e, "unsupported URL: use https://, ssh://, git://, file://, user@host:path or an absolute path");
	if (!strcmp(kind, "http"))
		return invalid_url(e, "plain http:// is refused (credentials and code in clear text): use https://");
	return check_network_url(url, kind, e);
}

/* Copies a path segment, refusing names that would escape or hide (".", "..", leading '-' or '.'). */
static char *safe_segment(const char *s, size_t n)
{
	if (n == 0 || n > 100 || s[0] == '.' || s[0] == '-')
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '_' || c == '.'))
			return NULL;
	}
	return xstrndup(s, n);
}

/* Splits url into host (or "local") and path part; -1 when a URL with "://" does not parse (url.h). */
static int split_url(const char *url, const char *kind, char **host, const char **path, struct err *e)
{
	if (!strcmp(kind, "local")) {
		*host = xstrdup("local");
		*path = url;
		return 0;
	}
	const char *rest = strstr(url, "://");
	if (!rest) { /* scp-like */
		const char *at = strchr(url, '@'), *colon = strchr(url, ':');
		*host = xstrndup(at + 1, (size_t)(colon - at - 1));
		*path = colon + 1;
		return 0;
	}
	if (!strcmp(kind, "file")) {
		*host = xstrdup("local");
		*path = rest + 3 + strcspn(rest + 3, "/");
		return 0;
	}
	_cleanup_url_ struct url u = URL_INIT;
	if (url_parse(url, &u, e) < 0)
		return -1;
	*host = xstrdup(u.host);
	*path = url + strlen(url) - strlen(u.path);
	return 0;
}

char *gitops_default_repo_subpath(const char *url, struct err *e)
{
	const char *kind = gitops_url_kind(url);
	if (!kind)
		return err_set(e, E_INVALID_PAYLOAD, "unsupported URL: %s", url), NULL;
	_cleanup_free_ char *host = NULL;
	const char *path;
	if (split_url(url, kind, &host, &path, e) < 0)
		return err_prefix(e, "%s", url), NULL;
	size_t len = strlen(path);
	while (len && path[len - 1] == '/')
		len--;
	if (len > 4 && !strncmp(path + len - 4, ".git", 4))
		len -= 4;
	size_t repo_start = len;
	while (repo_start && path[repo_start - 1] != '/')
		repo_start--;
	size_t org_end = repo_start ? repo_start - 1 : 0, org_start = org_end;
	while (org_start && path[org_start - 1] != '/')
		org_start--;
	_cleanup_free_ char *provider = safe_segment(host, strlen(host));
	_cleanup_free_ char *repo = safe_segment(path + repo_start, len - repo_start);
	_cleanup_free_ char *org = safe_segment(path + org_start, org_end - org_start);
	if (!provider || !repo || !org) {
		err_set(e, E_INVALID_PAYLOAD, "cannot derive <provider>/<org>/<repo> from URL %s: give params.outputPath", url);
		return NULL;
	}
	return xasprintf("%s/%s/%s.git", provider, org, repo);
}

/* --- clone -------------------------------------------------------------------------------- */

struct clone_state {
	const struct gitops_clone *opts;
	unsigned last_percent;
	struct err *e;
	int credential_attempts;
	char *origin;	       /* the clone URL's origin (url.h), the only one a credential may go to */
	int credential_given;  /* a credential went to libgit2: no connection to another origin from now on */
	char *connect_origin;  /* the origin of libgit2's last connection, from its trace */
};

/*
 * Which server libgit2 really talks to. libgit2 1.5 hands the credential callback the URL it was given, not the
 * one a redirect led to, so its trace is read instead: "Connecting to remote HOST port PORT" comes before each
 * new connection (a redirect to another host or port always makes one). One clone runs at a time in an
 * executor; `traced` points at it while it runs. Nothing traced, nothing given: the callbacks fail closed.
 */
static struct clone_state *traced;

static const char *after(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	return strncmp(s, prefix, n) ? NULL : s + n;
}

static void remember_connection(struct clone_state *st, const char *host_port)
{
	const char *port = strstr(host_port, " port ");
	if (!port)
		return;
	_cleanup_free_ char *host = xstrndup(host_port, (size_t)(port - host_port));
	_cleanup_free_ char *text = xasprintf(strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port + 6);
	struct url u = URL_INIT;
	struct err ignored = ERR_INIT;
	free(st->connect_origin);
	st->connect_origin = url_parse(text, &u, &ignored) == 0 ? url_origin(&u) : NULL;
	url_release(&u);
	err_clear(&ignored);
}

static void on_trace(git_trace_level_t level, const char *msg)
{
	(void)level;
	const char *rest = msg ? after(msg, "Connecting to remote ") : NULL;
	if (traced && rest)
		remember_connection(traced, rest);
}

/* The origin of url (url.h), or NULL when it does not parse. */
static char *origin_of(const char *url)
{
	struct url u = URL_INIT;
	struct err ignored = ERR_INIT;
	char *origin = url_parse(url, &u, &ignored) == 0 ? url_origin(&u) : NULL;
	if (origin)
		url_release(&u);
	err_clear(&ignored);
	return origin;
}

/* 0 when the server answering with a challenge is the clone URL's own https origin. */
static int check_credential_target(struct clone_state *st, const char *given_url)
{
	const char *target = st->connect_origin;
	if (!st->origin || strncmp(st->origin, "https://", 8))
		return err_set(st->e, E_AUTH_FAILED, "%s asks for credentials: they are given over https:// only", given_url);
	if (!target)
		return err_set(st->e, E_AUTH_FAILED, "%s asks for credentials, and which server asks is unknown (libgit2 "
						     "traced no connection): none are given", given_url);
	if (strcmp(target, st->origin))
		return err_setd(st->e, E_AUTH_FAILED, json_pack("{s:s,s:s}", "origin", st->origin, "asking", target),
				"%s redirected to %s, which asks for credentials: a credential for %s is never sent to "
				"another origin", st->opts->url, target, st->origin);
	return 0;
}

static int on_transfer_progress(const git_indexer_progress *stats, void *payload)
{
	struct clone_state *st = payload;
	if (!st->opts->progress || !stats->total_objects)
		return 0;
	unsigned percent = (unsigned)(100ull * stats->received_objects / stats->total_objects);
	if (percent / 10 != st->last_percent / 10 || stats->received_objects == stats->total_objects) {
		if (percent != st->last_percent || percent == 0)
			fprintf(stderr, "Receiving objects: %3u%% (%u/%u), %zu KiB\n", percent,
				stats->received_objects, stats->total_objects, stats->received_bytes / 1024);
		st->last_percent = percent;
	}
	return 0;
}

static int on_sideband(const char *str, int len, void *payload)
{
	struct clone_state *st = payload;
	if (st->opts->progress)
		fprintf(stderr, "remote: %.*s", len, str);
	return 0;
}

static int on_credentials(git_credential **out, const char *url, const char *username_from_url,
			  unsigned int allowed_types, void *payload)
{
	struct clone_state *st = payload;
	(void)username_from_url;
	if (!(allowed_types & GIT_CREDENTIAL_USERPASS_PLAINTEXT) || !st->opts->credentials) {
		err_set(st->e, E_AUTH_FAILED,
			"%s requires credentials and none are available (they come just in time from the daemon with a sessionToken)",
			url);
		return GIT_EUSER;
	}
	if (++st->credential_attempts > 1) {
		err_set(st->e, E_AUTH_FAILED, "the credentials for %s were rejected", url);
		return GIT_EUSER;
	}
	if (check_credential_target(st, url) < 0)
		return GIT_EUSER;
	char *user = NULL, *pass = NULL;
	if (st->opts->credentials(st->opts->credentials_arg, st->origin, &user, &pass, st->e) < 0)
		return GIT_EUSER;
	st->credential_given = 1;
	int rc = git_credential_userpass_plaintext_new(out, user, pass);
	explicit_bzero(pass, strlen(pass));
	free(user);
	free(pass);
	return rc;
}

/* Once a credential went to libgit2, it may replay it to whatever server it connects to next (a redirect that
 * carries a challenge): a connection to another origin is refused before anything is sent on it. */
static int on_certificate(git_cert *cert, int valid, const char *host, void *payload)
{
	(void)cert;
	(void)valid;
	struct clone_state *st = payload;
	if (!st->credential_given || (st->connect_origin && !strcmp(st->connect_origin, st->origin)))
		return GIT_PASSTHROUGH; /* libgit2's own certificate check decides */
	err_setd(st->e, E_AUTH_FAILED, json_pack("{s:s,s:s?}", "origin", st->origin, "connecting", st->connect_origin),
		 "after a credential for %s was given, libgit2 was led to %s (%s): that connection is refused", st->origin,
		 st->connect_origin ? st->connect_origin : "an unknown port", host);
	return GIT_EUSER;
}

static json_t *describe_head(git_repository *repo)
{
	git_reference *head = NULL;
	json_t *o = json_object();
	if (git_repository_head(&head, repo) == 0) {
		char oid[GIT_OID_HEXSZ + 1];
		git_oid_tostr(oid, sizeof(oid), git_reference_target(head));
		json_object_set_new(o, "head", json_string(oid));
		json_object_set_new(o, "defaultBranch", git_reference_is_branch(head)
							? json_string(git_reference_shorthand(head))
							: json_null());
		git_reference_free(head);
	} else {
		json_object_set_new(o, "head", json_null());
		json_object_set_new(o, "defaultBranch", json_null());
	}
	return o;
}

static int check_clone_target(const char *path, struct err *e)
{
	if (!fs_exists(path))
		return 0;
	if (fs_dir_is_empty(path) == 1)
		return 0;
	return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "path", path),
			"%s already exists and is not an empty directory", path);
}

int gitops_clone(const struct gitops_clone *o, json_t **result, struct err *e)
{
	const char *kind = gitops_url_kind(o->url);
	if (!kind)
		return err_set(e, E_INVALID_PAYLOAD, "unsupported URL: %s", o->url);
	if (check_clone_target(o->path, e) < 0 || gitops_init(e) < 0)
		return -1;
	configure_ca_locations();
	if (!strcmp(kind, "ssh") && !(git_libgit2_features() & GIT_FEATURE_SSH))
		return err_setd(e, E_GIT_ERROR, json_pack("{s:s,s:s}", "class", "SSH", "message", "built without SSH"),
				"cannot clone %s: this agor build has no SSH transport (libgit2 without libssh2); use an https:// URL",
				o->url);
	int existed = fs_exists(o->path);
	struct clone_state st = { .opts = o, .last_percent = 101, .e = e, .origin = origin_of(o->url) };
	git_clone_options opts = GIT_CLONE_OPTIONS_INIT;
	opts.bare = o->bare;
	opts.local = GIT_CLONE_NO_LOCAL; /* through the transport: a copy (a run may rewrite its objects, never the source's) with progress */
	opts.checkout_opts.disable_filters = 1; /* SPEC §3.4: no filters ever run */
	opts.checkout_branch = o->branch;
	opts.fetch_opts.callbacks.transfer_progress = on_transfer_progress;
	opts.fetch_opts.callbacks.sideband_progress = on_sideband;
	opts.fetch_opts.callbacks.credentials = on_credentials;
	opts.fetch_opts.callbacks.certificate_check = on_certificate;
	opts.fetch_opts.callbacks.payload = &st;
	git_repository *repo = NULL;
	if (o->progress)
		fprintf(stderr, "Cloning %s into %s\n", o->url, o->path);
	traced = &st;
	git_trace_set(GIT_TRACE_DEBUG, on_trace);
	int rc = git_clone(&repo, o->url, o->path, &opts);
	git_trace_set(GIT_TRACE_NONE, NULL);
	traced = NULL;
	free(st.origin);
	free(st.connect_origin);
	if (rc < 0) {
		if (!err_is_set(e))
			git_fail(e, "clone failed");
		struct err ignored = ERR_INIT;
		if (!existed)
			fs_remove_tree(o->path, &ignored);
		err_clear(&ignored);
		return -1;
	}
	json_t *r = describe_head(repo);
	json_object_set_new(r, "path", json_string(o->path));
	json_object_set_new(r, "url", json_string(o->url));
	json_object_set_new(r, "bare", json_boolean(o->bare));
	git_repository_free(repo);
	*result = r;
	return 0;
}

/* --- the index ------------------------------------------------------------------------------ */

int gitops_index_rewrite(const char *worktree_path, gitops_index_entry_fn fn, void *arg, struct err *e)
{
	if (gitops_init(e) < 0)
		return -1;
	git_repository *repo = NULL;
	git_index *index = NULL;
	int rc = -1;
	if (git_repository_open_ext(&repo, worktree_path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0 ||
	    git_repository_index(&index, repo) < 0 || git_index_read(index, 1) < 0) {
		git_fail(e, "reading the index");
		goto out;
	}
	size_t n = git_index_entrycount(index);
	rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const git_index_entry *entry = git_index_get_byindex(index, i);
		if (entry && fn(entry->path, entry->mode, arg))
			rc = 1;
	}
	if (rc == 0 && git_index_write(index) < 0)
		rc = git_fail(e, "writing the index back");
out:
	git_index_free(index);
	git_repository_free(repo);
	return rc;
}

int gitops_index_from_head(const char *worktree_path, struct err *e)
{
	if (gitops_init(e) < 0)
		return -1;
	git_repository *repo = NULL;
	git_object *tree = NULL;
	git_index *index = NULL;
	int rc = -1;
	if (git_repository_open_ext(&repo, worktree_path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0 ||
	    git_revparse_single(&tree, repo, "HEAD^{tree}") < 0 || git_repository_index(&index, repo) < 0 ||
	    git_index_read_tree(index, (git_tree *)tree) < 0 || git_index_write(index) < 0)
		git_fail(e, "rebuilding the index from HEAD");
	else
		rc = 0;
	git_index_free(index);
	git_object_free(tree);
	git_repository_free(repo);
	return rc;
}

/* --- worktree add ------------------------------------------------------------------------- */

static int valid_worktree_name(const char *name)
{
	_cleanup_free_ char *copy = safe_segment(name, strlen(name));
	return copy != NULL && strcmp(name, "..") && !strstr(name, ".lock");
}

static int open_repo(const char *path, git_repository **repo, struct err *e)
{
	if (git_repository_open_ext(repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) == 0)
		return 0;
	const git_error *ge = git_error_last();
	return err_setd(e, E_NOT_FOUND, json_pack("{s:s,s:s}", "path", path, "message", ge ? ge->message : ""),
			"no git repository at %s", path);
}

/* The commit a name designates: local branch, origin's branch, or any revision; NULL: HEAD. */
static int resolve_start(git_repository *repo, const char *name, git_commit **commit, struct err *e)
{
	git_object *obj = NULL;
	int rc;
	if (!name) {
		rc = git_revparse_single(&obj, repo, "HEAD");
	} else {
		_cleanup_free_ char *local = xasprintf("refs/heads/%s", name);
		_cleanup_free_ char *remote = xasprintf("refs/remotes/origin/%s", name);
		rc = git_revparse_single(&obj, repo, local);
		if (rc < 0)
			rc = git_revparse_single(&obj, repo, remote);
		if (rc < 0 && strncmp(name, "-", 1))
			rc = git_revparse_single(&obj, repo, name);
	}
	if (rc < 0)
		return err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "ref", name ? name : "HEAD"),
				"cannot resolve %s in the repository", name ? name : "HEAD");
	rc = git_object_peel((git_object **)commit, obj, GIT_OBJECT_COMMIT);
	git_object_free(obj);
	return rc < 0 ? git_fail(e, "not a commit") : 0;
}

/* The branch reference for the new worktree; *created tells whether we made it. */
static int prepare_branch(git_repository *repo, const struct gitops_worktree_add *o, git_commit *start,
			  const char *branch, git_reference **ref, int *created, struct err *e)
{
	*created = 0;
	int found = git_branch_lookup(ref, repo, branch, GIT_BRANCH_LOCAL) == 0;
	if (found && o->create_branch) {
		git_reference_free(*ref);
		*ref = NULL;
		return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "branch", branch),
				"branch '%s' already exists (drop createBranch to use it)", branch);
	}
	if (found)
		return 0;
	if (!o->create_branch) {
		git_reference *remote = NULL;
		_cleanup_free_ char *remote_name = xasprintf("origin/%s", branch);
		if (git_branch_lookup(&remote, repo, remote_name, GIT_BRANCH_REMOTE) < 0)
			return err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "branch", branch),
					"branch '%s' does not exist (set createBranch: true to create it from sourceBranch)",
					branch);
		git_commit *tip = NULL;
		int rc = git_commit_lookup(&tip, repo, git_reference_target(remote));
		git_reference_free(remote);
		if (rc == 0)
			rc = git_branch_create(ref, repo, branch, tip, 0);
		git_commit_free(tip);
		if (rc < 0)
			return git_fail(e, "creating the local branch");
		*created = 1;
		return 0;
	}
	if (git_branch_create(ref, repo, branch, start, 0) < 0)
		return git_fail(e, "creating the branch");
	*created = 1;
	return 0;
}

static int create_temp_branch(git_repository *repo, const char *name, git_commit *start, git_reference **ref,
			      int *created, struct err *e)
{
	if (git_branch_create(ref, repo, name, start, 1) < 0)
		return git_fail(e, "creating a temporary branch");
	*created = 1;
	return 0;
}

static void remove_failed_worktree(git_repository *repo, const char *name, const char *path, int path_existed)
{
	struct err ignored = ERR_INIT;
	_cleanup_free_ char *meta = xasprintf("%s/worktrees/%s", git_repository_commondir(repo), name);
	fs_remove_tree(meta, &ignored);
	if (!path_existed)
		fs_remove_tree(path, &ignored);
	err_clear(&ignored);
}

static int detach_worktree_head(const char *path, const git_oid *oid, struct err *e)
{
	git_repository *wt = NULL;
	if (git_repository_open(&wt, path) < 0)
		return git_fail(e, "opening the new worktree");
	int rc = git_repository_set_head_detached(wt, oid);
	git_repository_free(wt);
	return rc < 0 ? git_fail(e, "detaching the worktree's HEAD") : 0;
}

static int check_worktree_target(git_repository *repo, const struct gitops_worktree_add *o, struct err *e)
{
	git_worktree *existing = NULL;
	if (git_worktree_lookup(&existing, repo, o->name) == 0) {
		git_worktree_free(existing);
		return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "worktreeName", o->name),
				"a worktree named '%s' already exists in %s", o->name, o->repo_path);
	}
	if (fs_exists(o->path) && fs_dir_is_empty(o->path) != 1)
		return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "path", o->path),
				"%s already exists and is not an empty directory", o->path);
	return 0;
}

static json_t *worktree_result(const struct gitops_worktree_add *o, const char *branch, const git_oid *oid,
			       int created)
{
	char hex[GIT_OID_HEXSZ + 1];
	git_oid_tostr(hex, sizeof(hex), oid);
	return json_pack("{s:s,s:s,s:s,s:o,s:s,s:b,s:b}", "worktreePath", o->path, "worktreeName", o->name,
			 "repoPath", o->repo_path, "branch", branch ? json_string(branch) : json_null(), "head",
			 hex, "detached", branch == NULL, "createdBranch", created);
}

/* Adds the worktree on ref (a branch); for a detached HEAD, ref is a temporary branch. */
static int add_on_branch(git_repository *repo, const struct gitops_worktree_add *o, git_reference *ref,
			 struct err *e)
{
	git_worktree_add_options opts = GIT_WORKTREE_ADD_OPTIONS_INIT;
	opts.ref = ref;
	opts.checkout_options.checkout_strategy = GIT_CHECKOUT_FORCE;
	/* SPEC §3.4: no filters ever run — and skipping them skips a per-file attribute lookup
	 * (a realpath per directory level), which made checkout 2x slower than git's. */
	opts.checkout_options.disable_filters = 1;
	git_worktree *wt = NULL;
	int path_existed = fs_exists(o->path);
	if (path_existed && rmdir(o->path) < 0) /* libgit2 creates it exclusively; it is empty */
		return err_errno(e, errno, "rmdir %s", o->path);
	if (git_worktree_add(&wt, repo, o->name, o->path, &opts) < 0) {
		git_fail(e, "adding the worktree");
		remove_failed_worktree(repo, o->name, o->path, 0);
		return -1;
	}
	git_worktree_free(wt);
	return 0;
}

int gitops_worktree_add(const struct gitops_worktree_add *o, json_t **result, struct err *e)
{
	if (!valid_worktree_name(o->name))
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s,s:s}", "path", "params.worktreeName", "reason",
								 "letters, digits, '.', '_', '-' only; no leading '.' or '-'"),
				"params.worktreeName: invalid worktree name '%s'", o->name);
	if (gitops_init(e) < 0)
		return -1;
	git_repository *repo = NULL;
	git_commit *start = NULL;
	git_reference *ref = NULL;
	int created = 0, rc = -1;
	_cleanup_free_ char *temp_branch = NULL;
	if (open_repo(o->repo_path, &repo, e) < 0)
		return -1;
	if (check_worktree_target(repo, o, e) < 0 || resolve_start(repo, o->source_branch, &start, e) < 0)
		goto out;
	const char *branch = o->branch;
	if (!branch) /* detached: check out through a short-lived branch, then detach */
		temp_branch = xasprintf("agor-detached-%s-%ld", o->name, (long)getpid());
	if (branch ? prepare_branch(repo, o, start, branch, &ref, &created, e) < 0
		   : create_temp_branch(repo, temp_branch, start, &ref, &created, e) < 0)
		goto out;
	if (add_on_branch(repo, o, ref, e) < 0) {
		if (created)
			git_branch_delete(ref);
		goto out;
	}
	const git_oid *oid = git_reference_target(ref);
	if (!branch) {
		if (detach_worktree_head(o->path, oid, e) < 0)
			goto out;
		git_branch_delete(ref);
	}
	*result = worktree_result(o, branch, oid, branch ? created : 0);
	rc = 0;
out:
	git_reference_free(ref);
	git_commit_free(start);
	git_repository_free(repo);
	return rc;
}

/* --- worktree remove ---------------------------------------------------------------------- */

static int list_changes(git_repository *wt, json_t **paths, size_t *count, struct err *e)
{
	git_status_options so = GIT_STATUS_OPTIONS_INIT;
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		   GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	git_status_list *list = NULL;
	if (git_status_list_new(&list, wt, &so) < 0)
		return git_fail(e, "reading the worktree status");
	*count = git_status_list_entrycount(list);
	*paths = json_array();
	for (size_t i = 0; i < *count && i < 100; i++) {
		const git_status_entry *s = git_status_byindex(list, i);
		const git_diff_delta *d = s->index_to_workdir ? s->index_to_workdir : s->head_to_index;
		if (d)
			json_array_append_new(*paths, json_string(d->new_file.path));
	}
	git_status_list_free(list);
	return 0;
}

static int refuse_dirty(const char *path, json_t *paths, size_t count, struct err *e)
{
	return err_setd(e, E_WORKTREE_DIRTY, json_pack("{s:O,s:I}", "paths", paths, "count", (json_int_t)count),
			"%s has %zu uncommitted change%s (set force: true to discard them)", path, count,
			count == 1 ? "" : "s");
}

/* Removes the working tree (never following symlinks), then the metadata in the main repository. */
static int remove_and_prune(git_repository *wt_repo, const char *path, char **name, struct err *e)
{
	git_worktree *wt = NULL;
	if (git_worktree_open_from_repository(&wt, wt_repo) < 0)
		return git_fail(e, "finding the worktree's metadata");
	*name = xstrdup(git_worktree_name(wt));
	int rc = fs_remove_tree(path, e);
	if (rc == 0) {
		git_worktree_prune_options po = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
		po.flags = GIT_WORKTREE_PRUNE_VALID | GIT_WORKTREE_PRUNE_LOCKED;
		rc = git_worktree_prune(wt, &po) < 0 ? git_fail(e, "pruning the worktree metadata") : 0;
	}
	git_worktree_free(wt);
	return rc;
}

int gitops_worktree_remove(const char *worktree_path, int force, json_t **result, struct err *e)
{
	if (gitops_init(e) < 0)
		return -1;
	git_repository *wt = NULL;
	if (open_repo(worktree_path, &wt, e) < 0)
		return -1;
	int rc = -1;
	json_t *paths = NULL;
	size_t count = 0;
	_cleanup_free_ char *name = NULL;
	if (!git_repository_is_worktree(wt)) {
		err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "path", worktree_path),
			 "%s is not a linked worktree (refusing to remove a main repository)", worktree_path);
		goto out;
	}
	/* forced, nothing is counted: a status walk reads what runs left in the worktree (a fifo .gitignore would
	 * hang it, 100 nested directories fail it) and would only say what is discarded anyway */
	if (!force && list_changes(wt, &paths, &count, e) < 0)
		goto out;
	if (count && !force) {
		refuse_dirty(worktree_path, paths, count, e);
		goto out;
	}
	if (remove_and_prune(wt, worktree_path, &name, e) < 0)
		goto out;
	*result = json_pack("{s:s,s:s,s:b,s:o}", "worktreePath", worktree_path, "worktreeName", name, "removed", 1,
			    "discardedChanges", force ? json_null() : json_integer((json_int_t)count));
	rc = 0;
out:
	if (paths)
		json_decref(paths);
	git_repository_free(wt);
	return rc;
}
