/* gitops.c — clone and worktree operations on libgit2 (gitops.h), errors mapped to docs/payloads.md#results.
 * Never runs an external program, never reads global/system git config, never prints to stdout. */
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "confine.h"
#include "crypto.h"
#include "fault.h"
#include "fsutil.h"
#include "gitops.h"
#include "json.h"
#include "log.h"
#include "sshkey.h"
#include "strbuf.h"
#include "url.h"
#include "banned.h"

#define RENAME_NOREPLACE_ 1
#ifndef SYS_renameat2
#define SYS_renameat2 316
#endif

static int initialized;

static const char *const error_classes[] = {
	"NONE",	    "NOMEMORY",	 "OS",	     "INVALID",	   "REFERENCE", "ZLIB",	     "REPOSITORY", "CONFIG",
	"REGEX",    "ODB",	 "INDEX",    "OBJECT",	   "NET",	"TAG",	     "TREE",	   "INDEXER",
	"SSL",	    "SUBMODULE", "THREAD",   "STASH",	   "CHECKOUT",	"FETCHHEAD", "MERGE",	   "SSH",
	"FILTER",   "REVERT",	 "CALLBACK", "CHERRYPICK", "DESCRIBE",	"REBASE",    "FILESYSTEM", "PATCH",
	"WORKTREE", "SHA",	 "HTTP",     "INTERNAL",
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
	static const int levels[] = { GIT_CONFIG_LEVEL_PROGRAMDATA, GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_XDG,
				      GIT_CONFIG_LEVEL_GLOBAL };
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
		return invalid_url(
			e,
			"unsupported URL: use https://, ssh://, git://, file://, user@host:path or an absolute path");
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
		err_set(e, E_INVALID_PAYLOAD,
			"cannot derive <provider>/<org>/<repo> from URL %s: it must name an "
			"organisation and a repository, as in https://host/org/repo.git or /srv/git/org/repo",
			url);
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
	char *origin;	      /* the clone URL's origin (url.h), the only one a credential may go to */
	int credential_given; /* a credential went to libgit2: no connection to another origin from now on */
	char *connect_origin; /* the origin of libgit2's last connection, from its trace */
	int ssh; /* an ssh:// or scp-like URL: the host key and the user key are agor's to check and give */
	int host_key_checked; /* the ssh server's host key matched execution.git.known_hosts */
	char *ssh_user;	      /* the stored credential's user name, once fetched */
	struct sshkey key;    /* the stored ssh key, parsed in memory once fetched (never on disk) */
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

/* "ssh://HOST:PORT" of an ssh:// or scp-like user@HOST:path URL (the user left out), or NULL. */
static char *ssh_origin_of(const char *url)
{
	if (strstr(url, "://")) {
		_cleanup_free_ char *plain =
			!strncmp(url, "ssh://", 6) ? NULL : xasprintf("ssh://%s", strstr(url, "://") + 3);
		return origin_of(plain ? plain : url);
	}
	const char *at = strchr(url, '@'), *colon = strchr(url, ':');
	_cleanup_free_ char *text = xasprintf("ssh://%.*s", (int)(colon - at - 1), at + 1);
	return origin_of(text);
}

/* 0 when the server answering with a challenge is the clone URL's own https origin. */
static int check_credential_target(struct clone_state *st, const char *given_url)
{
	const char *target = st->connect_origin;
	if (!st->origin || strncmp(st->origin, "https://", 8))
		return err_set(st->e, E_AUTH_FAILED, "%s asks for credentials: they are given over https:// only",
			       given_url);
	if (!target)
		return err_set(st->e, E_AUTH_FAILED,
			       "%s asks for credentials, and which server asks is unknown (libgit2 "
			       "traced no connection): none are given",
			       given_url);
	if (strcmp(target, st->origin))
		return err_setd(st->e, E_AUTH_FAILED, json_pack("{s:s,s:s}", "origin", st->origin, "asking", target),
				"%s redirected to %s, which asks for credentials: a credential for %s is never sent to "
				"another origin",
				st->opts->url, target, st->origin);
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
			fprintf(stderr, "Receiving objects: %3u%% (%u/%u), %zu KiB\n", percent, stats->received_objects,
				stats->total_objects, stats->received_bytes / 1024);
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

/* --- ssh: host keys from the daemon, the user key from memory ------------------------------------------ */

/* The key type a raw SSH key blob names (its first string), or NULL when the blob is malformed. */
static char *blob_type(const unsigned char *blob, size_t len)
{
	if (len < 4)
		return NULL;
	size_t n = (size_t)blob[0] << 24 | (size_t)blob[1] << 16 | (size_t)blob[2] << 8 | blob[3];
	return n && n <= len - 4 ? xstrndup((const char *)blob + 4, n) : NULL;
}

/* 0 when the server's host key is one execution.git.known_hosts lists for the clone's host and port (the daemon
 * reads the file: nothing a run can write is trusted); else E_AUTH_FAILED naming the key's SHA256 fingerprint.
 * Whichever server libgit2 reached, the key for this origin goes only to one holding a host key listed for it.
 * libgit2's own verdict (valid) is never used: it is built to read no $HOME/.ssh/known_hosts (mk/deps.sh). */
static int check_host_key(struct clone_state *st, const git_cert_hostkey *cert, const char *host)
{
	if (!(cert->type & GIT_CERT_SSH_RAW))
		return err_set(st->e, E_AUTH_FAILED, "%s: libssh2 gave no raw host key to check", host);
	_cleanup_free_ char *fp = sshkey_fingerprint(cert->hostkey, cert->hostkey_len);
	_cleanup_free_ char *type = blob_type((const unsigned char *)cert->hostkey, cert->hostkey_len);
	json_t *known = NULL;
	if (!st->opts->host_keys || st->opts->host_keys(st->opts->credentials_arg, st->origin, &known, st->e) < 0)
		return err_is_set(st->e) ? -1
					 : err_set(st->e, E_AUTH_FAILED, "%s: no known host keys are available", host);
	struct strbuf b64 = STRBUF_INIT;
	crypto_base64_encode(cert->hostkey, cert->hostkey_len, &b64);
	_cleanup_free_ char *line = xasprintf("%s %s", type ? type : "?", b64.buf);
	strbuf_release(&b64);
	int listed = (int)json_array_size(known), match = 0;
	size_t i;
	json_t *v;
	json_array_foreach(known, i, v) match |= !strcmp(json_string_value(v), line);
	json_decref(known);
	if (match) {
		st->host_key_checked = 1;
		return 0;
	}
	return err_setd(
		st->e, E_AUTH_FAILED,
		json_pack("{s:s,s:s,s:s?,s:b}", "origin", st->origin, "fingerprint", fp, "type", type, "known",
			  listed > 0),
		listed ? "%s: the host key %s (%s) is not the one execution.git.known_hosts lists for this host: the "
			 "key "
			 "changed or someone is in between; if the server's key really changed, the operator updates "
			 "the file"
		       : "%s: unknown host key %s (%s): execution.git.known_hosts lists no key for this host and "
			 "port (no trust on first use: the operator adds the server's key, checked out of band)",
		st->origin, fp, type ? type : "unknown type");
}

/* libssh2's sign callback: the stored key signs the authentication request. */
static int sign_with_key(LIBSSH2_SESSION *session, unsigned char **sig, size_t *sig_len, const unsigned char *data,
			 size_t data_len, void **abstract)
{
	(void)session;
	return sshkey_sign(*abstract, data, data_len, sig, sig_len) < 0 ? -1 : 0;
}

/* The stored ssh key for the clone's origin, fetched from the daemon once and parsed in memory. */
static int fetch_ssh_key(struct clone_state *st)
{
	if (st->key.public_blob)
		return 0;
	char *user = NULL, *key = NULL;
	if (st->opts->credentials(st->opts->credentials_arg, st->origin, &user, &key, st->e) < 0)
		return -1;
	int rc = sshkey_load(&st->key, key, strlen(key), st->e);
	if (rc < 0)
		err_prefix(st->e, "%s", st->origin);
	crypto_wipe(key, strlen(key));
	free(key);
	st->ssh_user = user;
	return rc;
}

static int ssh_credentials(struct clone_state *st, git_credential **out, const char *username_from_url,
			   unsigned int allowed_types)
{
	if (!st->host_key_checked)
		return err_set(st->e, E_AUTH_FAILED, "%s asks for credentials before its host key was checked",
			       st->origin);
	if (!(allowed_types & (GIT_CREDENTIAL_USERNAME | GIT_CREDENTIAL_SSH_CUSTOM)))
		return err_set(st->e, E_AUTH_FAILED,
			       "%s accepts no public key authentication: agor authenticates over "
			       "ssh with a stored key only",
			       st->origin);
	if (fetch_ssh_key(st) < 0)
		return -1;
	const char *user = username_from_url ? username_from_url : st->ssh_user ? st->ssh_user : "git";
	if (allowed_types & GIT_CREDENTIAL_USERNAME)
		return git_credential_username_new(out, user);
	if (++st->credential_attempts > 1)
		return err_setd(st->e, E_AUTH_FAILED, json_pack("{s:s,s:s}", "origin", st->origin, "user", user),
				"%s refused the stored ssh key for user %s (is its public key in the server's "
				"authorized_keys?)",
				st->origin, user);
	st->credential_given = 1;
	return git_credential_ssh_custom_new(out, user, (const char *)st->key.public_blob, st->key.public_len,
					     sign_with_key, &st->key);
}

static int on_credentials(git_credential **out, const char *url, const char *username_from_url,
			  unsigned int allowed_types, void *payload)
{
	struct clone_state *st = payload;
	if (st->ssh)
		return ssh_credentials(st, out, username_from_url, allowed_types) < 0 ? GIT_EUSER : 0;
	if (!(allowed_types & GIT_CREDENTIAL_USERPASS_PLAINTEXT) || !st->opts->credentials) {
		err_set(st->e, E_AUTH_FAILED,
			"%s requires credentials and none are available (they come just in time from the daemon with a "
			"sessionToken)",
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
	(void)valid;
	struct clone_state *st = payload;
	if (cert->cert_type == GIT_CERT_HOSTKEY_LIBSSH2)
		return st->ssh && check_host_key(st, (const git_cert_hostkey *)cert, host) == 0 ? 0 : GIT_EUSER;
	if (!st->credential_given || (st->connect_origin && !strcmp(st->connect_origin, st->origin)))
		return GIT_PASSTHROUGH; /* libgit2's own certificate check decides */
	err_setd(st->e, E_AUTH_FAILED, json_pack("{s:s,s:s?}", "origin", st->origin, "connecting", st->connect_origin),
		 "after a credential for %s was given, libgit2 was led to %s (%s): that connection is refused",
		 st->origin, st->connect_origin ? st->connect_origin : "an unknown port", host);
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
		json_object_set_new(o, "defaultBranch",
				    git_reference_is_branch(head) ? json_string(git_reference_shorthand(head))
								  : json_null());
		git_reference_free(head);
	} else {
		json_object_set_new(o, "head", json_null());
		json_object_set_new(o, "defaultBranch", json_null());
	}
	return o;
}

/* An interrupted clone's repository at the destination, taken as the result when o->resume: the clone is moved
 * into place in one rename, so a bare repository there whose origin is this URL is whole (docs/recovery.md). */
static json_t *resume_interrupted_clone(const struct gitops_clone *o)
{
	git_repository *repo = NULL;
	git_remote *origin = NULL;
	json_t *r = NULL;
	if (!o->resume || !o->bare || git_repository_open_bare(&repo, o->path) < 0)
		return NULL;
	if (git_remote_lookup(&origin, repo, "origin") == 0 && git_remote_url(origin) &&
	    !strcmp(git_remote_url(origin), o->url)) {
		r = describe_head(repo);
		json_object_set_new(r, "resumed", json_true());
		log_warn("%s: an interrupted clone of %s had made it; taken as this clone's", o->path, o->url);
	}
	git_remote_free(origin);
	git_repository_free(repo);
	return r;
}

static int check_clone_target(const struct gitops_clone *o, struct err *e)
{
	struct stat st;
	if (fstatat(o->parent_fd, o->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : err_errno(e, errno, "stat %s", o->path);
	if (S_ISDIR(st.st_mode) && fs_dir_is_empty_at(o->parent_fd, o->name) == 1)
		return 0;
	return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "path", o->path),
			"%s already exists and is not an empty directory", o->path);
}

/* A failed ssh key exchange, said with its likely cause: libssh2 1.10 on mbedTLS checks ECDSA host keys, and RSA
 * ones only signed with SHA-1 (ssh-rsa), which OpenSSH 8.8 and later no longer offer; a server with only an Ed25519
 * or an RSA host key ends the exchange before any key is shown. Any other failure: libgit2's words. */
static int ssh_clone_failed(struct err *e, const char *origin)
{
	const git_error *ge = git_error_last();
	if (!ge || !ge->message || !strstr(ge->message, "Unable to exchange encryption keys"))
		return git_fail(e, "clone failed");
	return err_setd(e, E_GIT_ERROR,
			json_pack("{s:s,s:i,s:s,s:s}", "class", "SSH", "klass", ge->klass, "message", ge->message,
				  "origin", origin),
			"%s: the ssh key exchange failed (%s): agor checks ECDSA host keys only (its libssh2 1.10 "
			"verifies RSA ones with SHA-1 alone, which OpenSSH 8.8 and later no longer offer, and no "
			"Ed25519 ones); a server with only an Ed25519 or RSA host key needs an ECDSA one too "
			"(ssh-keygen -t ecdsa -f /etc/ssh/ssh_host_ecdsa_key), listed in execution.git.known_hosts",
			origin, ge->message);
}

/* libgit2's clone into work (a path inside the private staging directory); the result object or NULL. */
static json_t *clone_into(const struct gitops_clone *o, const char *work, struct err *e)
{
	int ssh = !strcmp(gitops_url_kind(o->url), "ssh");
	struct clone_state st = { .opts = o,
				  .last_percent = 101,
				  .e = e,
				  .ssh = ssh,
				  .origin = ssh ? ssh_origin_of(o->url) : origin_of(o->url) };
	if (ssh && !st.origin) /* a key and host keys are asked for by origin: none, nothing to ask */
		return err_setd(e, E_INVALID_PAYLOAD, json_pack("{s:s}", "path", "params.url"),
				"params.url: cannot tell the ssh server's host and port from %s", o->url),
		       NULL;
	git_clone_options opts = GIT_CLONE_OPTIONS_INIT;
	opts.bare = o->bare;
	opts.local = GIT_CLONE_NO_LOCAL; /* through the transport: a copy (a run may rewrite its objects, never the
					    source's) with progress */
	opts.checkout_opts.disable_filters = 1; /* docs/payloads.md (git): no filters ever run */
	opts.checkout_branch = o->branch;
	opts.fetch_opts.callbacks.transfer_progress = on_transfer_progress;
	opts.fetch_opts.callbacks.sideband_progress = on_sideband;
	opts.fetch_opts.callbacks.credentials = on_credentials;
	opts.fetch_opts.callbacks.certificate_check = on_certificate;
	opts.fetch_opts.callbacks.payload = &st;
	git_repository *repo = NULL;
	traced = &st;
	git_trace_set(GIT_TRACE_DEBUG, on_trace);
	int rc = git_clone(&repo, o->url, work, &opts);
	git_trace_set(GIT_TRACE_NONE, NULL);
	traced = NULL;
	if (rc < 0 && !err_is_set(e))
		ssh && !st.host_key_checked ? ssh_clone_failed(e, st.origin) : git_fail(e, "clone failed");
	free(st.origin);
	free(st.connect_origin);
	free(st.ssh_user);
	sshkey_release(&st.key);
	if (rc < 0)
		return NULL;
	json_t *r = describe_head(repo);
	git_repository_free(repo);
	return r;
}

static json_t *clone_result(const struct gitops_clone *o, json_t *r)
{
	json_object_set_new(r, "path", json_string(o->path));
	json_object_set_new(r, "url", json_string(o->url));
	json_object_set_new(r, "bare", json_boolean(o->bare));
	return r;
}

int gitops_clone(const struct gitops_clone *o, json_t **result, struct err *e)
{
	const char *kind = gitops_url_kind(o->url);
	if (!kind)
		return err_set(e, E_INVALID_PAYLOAD, "unsupported URL: %s", o->url);
	if (gitops_init(e) < 0)
		return -1;
	json_t *resumed = resume_interrupted_clone(o);
	if (resumed) {
		*result = clone_result(o, resumed);
		return 0;
	}
	if (check_clone_target(o, e) < 0)
		return -1;
	configure_ca_locations();
	_cleanup_free_ char *stage_name = NULL, *stage_path = NULL;
	_cleanup_close_ int sfd =
		fs_private_dir_at(o->stage_fd, o->stage_dir, ".agor-clone-", &stage_name, &stage_path, e);
	if (sfd < 0)
		return err_prefix(e,
				  "staging the clone (libgit2 works in a private directory the executing user makes in "
				  "%s, then it is moved into place)",
				  o->stage_dir),
		       -1;
	if (o->progress)
		fprintf(stderr, "Cloning %s into %s\n", o->url, o->path);
	fault_step("clone.staged");
	_cleanup_free_ char *work = xasprintf("%s/%s", stage_path, o->name);
	json_t *r = clone_into(o, work, e);
	if (r)
		fault_step("clone.fetched");
	int rc = r && fs_move_at(sfd, o->name, o->parent_fd, o->name, o->path, e) == 0 ? 0 : -1;
	struct err ignored = ERR_INIT;
	fs_remove_at(o->stage_fd, stage_name, o->stage_dir, &ignored); /* empty after the move; else the failed clone */
	err_clear(&ignored);
	if (rc < 0) {
		json_decref(r);
		return -1;
	}
	*result = clone_result(o, r);
	return 0;
}

/* --- the index ------------------------------------------------------------------------------ */

/* Copies everything from src to dst (both open), adding it to sum when sum is not NULL; -1 with errno. */
static int copy_fd_summed(int src, int dst, struct crypto_sha256 *sum)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(src, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return (int)n;
		if (fs_write_all(dst, buf, (size_t)n) < 0)
			return -1;
		if (sum)
			crypto_sha256_update(sum, buf, (size_t)n);
	}
}

static int copy_fd(int src, int dst)
{
	return copy_fd_summed(src, dst, NULL);
}

/* A private directory for one index job, S/index its copy; the stage's name and path are returned for cleanup. */
struct index_stage {
	int fd;
	char *name, *path, *index;
};

static int stage_open(const struct gitops_index_place *at, struct index_stage *s, struct err *e)
{
	s->fd = fs_private_dir_at(at->stage_fd, at->stage_dir, ".agor-index-", &s->name, &s->path, e);
	s->index = s->fd < 0 ? NULL : xasprintf("%s/index", s->path);
	return s->fd < 0 ? -1 : 0;
}

static void stage_close(const struct gitops_index_place *at, struct index_stage *s)
{
	struct err ignored = ERR_INIT;
	if (s->fd >= 0) {
		close(s->fd);
		fs_remove_at(at->stage_fd, s->name, at->stage_dir, &ignored);
	}
	err_clear(&ignored);
	free(s->name);
	free(s->path);
	free(s->index);
}

/* A/index copied into the stage (a regular file, not through a link). */
static int stage_copy_in(const struct gitops_index_place *at, struct index_stage *s, struct err *e)
{
	_cleanup_close_ int in = openat(at->admin_fd, "index", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode))
		return err_errno(e, in < 0 ? errno : EINVAL, "reading %s/index (a regular file)", at->admin);
	_cleanup_close_ int out = openat(s->fd, "index", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0 || copy_fd(in, out) < 0)
		return err_errno(e, errno, "copying %s/index into %s", at->admin, s->path);
	return 0;
}

/* The staged index put back as A/index: A/index.lock made exclusively, filled, renamed over it; the SHA-256 of the
 * bytes put back into at->written_sha256 when it is set (summed as they are copied, never read back from A). */
static int stage_copy_out(const struct gitops_index_place *at, struct index_stage *s, struct err *e)
{
	_cleanup_close_ int in = openat(s->fd, "index", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return err_errno(e, errno, "reading %s", s->index);
	int out = openat(at->admin_fd, "index.lock", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0)
		return err_errno(e, errno, "creating %s/index.lock (is a git command running there?)", at->admin);
	struct crypto_sha256 sum;
	crypto_sha256_init(&sum);
	int rc = copy_fd_summed(in, out, &sum) == 0 && fsync(out) == 0 ? 0 : -1;
	int saved = errno;
	close(out);
	if (rc == 0 && renameat(at->admin_fd, "index.lock", at->admin_fd, "index") == 0) {
		uint8_t digest[CRYPTO_SHA256_LEN];
		crypto_sha256_final(&sum, digest);
		if (at->written_sha256)
			memcpy(at->written_sha256, digest, sizeof(digest));
		return 0;
	}
	saved = rc == 0 ? errno : saved;
	unlinkat(at->admin_fd, "index.lock", 0);
	return err_errno(e, saved, "writing %s/index", at->admin);
}

/* The entries of the standalone index at path: fn for each; 1 when fn stopped. */
static int scan_entries(git_index *index, gitops_index_entry_fn fn, void *arg)
{
	size_t n = git_index_entrycount(index);
	for (size_t i = 0; i < n; i++) {
		const git_index_entry *entry = git_index_get_byindex(index, i);
		if (entry && fn(entry->path, entry->mode, arg))
			return 1;
	}
	return 0;
}

int gitops_index_rewrite(const struct gitops_index_place *at, gitops_index_entry_fn fn, void *arg, struct err *e)
{
	struct index_stage s = { .fd = -1 };
	git_index *index = NULL;
	int rc = gitops_init(e) < 0 || stage_open(at, &s, e) < 0 || stage_copy_in(at, &s, e) < 0 ? -1 : 0;
	if (rc == 0 && git_index_open(&index, s.index) < 0)
		rc = git_fail(e, "reading the index");
	if (rc == 0)
		rc = scan_entries(index, fn, arg);
	if (rc == 0 && git_index_write(index) < 0)
		rc = git_fail(e, "writing the index back");
	if (rc == 0)
		rc = stage_copy_out(at, &s, e);
	git_index_free(index);
	stage_close(at, &s);
	return rc;
}

int gitops_index_from_head(const struct gitops_index_place *at, struct err *e)
{
	struct index_stage s = { .fd = -1 };
	git_repository *repo = NULL;
	git_object *tree = NULL;
	git_index *index = NULL;
	int rc = gitops_init(e) < 0 || stage_open(at, &s, e) < 0 ? -1 : 0;
	if (rc == 0 && (git_repository_open_ext(&repo, at->worktree, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0 ||
			git_revparse_single(&tree, repo, "HEAD^{tree}") < 0 || git_index_open(&index, s.index) < 0 ||
			git_index_read_tree(index, (git_tree *)tree) < 0 || git_index_write(index) < 0))
		rc = git_fail(e, "rebuilding the index from HEAD");
	if (rc == 0)
		rc = stage_copy_out(at, &s, e);
	git_index_free(index);
	git_object_free(tree);
	git_repository_free(repo);
	stage_close(at, &s);
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

/* --- branches, written by descriptor ---------------------------------------------------------- */

/* refs/heads/BRANCH split into its directory ("refs/heads/a") and file name ("b"); -1 when not a valid name. */
static int branch_ref_parts(const char *branch, char **dir, char **leaf, struct err *e)
{
	_cleanup_free_ char *refname = xasprintf("refs/heads/%s", branch);
	int valid = 0;
	if (git_reference_name_is_valid(&valid, refname) < 0 || !valid)
		return err_setd(e, E_INVALID_PAYLOAD,
				json_pack("{s:s,s:s}", "path", "params.branch", "reason", "not a valid branch name"),
				"params.branch: '%s' is not a valid branch name", branch);
	char *slash = strrchr(refname, '/');
	*leaf = xstrdup(slash + 1);
	*slash = '\0';
	*dir = xstrdup(refname);
	return 0;
}

/* Creates refs/heads/BRANCH at oid in the repository held at cfd, as git does (BRANCH.lock made exclusively,
 * then renamed into place without replacing anything): no path string is resolved. */
static int create_branch_ref(int cfd, const char *branch, const git_oid *oid, struct err *e)
{
	_cleanup_free_ char *dir = NULL, *leaf = NULL;
	if (branch_ref_parts(branch, &dir, &leaf, e) < 0)
		return -1;
	_cleanup_close_ int dfd = confine_open_dirs(cfd, dir, 1);
	if (dfd < 0 && (errno == ENOTDIR || errno == EEXIST))
		return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "branch", branch),
				"branch '%s' cannot be made: a branch named like one of its leading parts exists",
				branch);
	if (dfd < 0 && (errno == ELOOP || errno == EXDEV))
		return err_setd(e, E_GIT_ERROR, json_pack("{s:s,s:s}", "branch", branch, "reason", "symlink in refs"),
				"branch '%s' cannot be made: a symlink is on the way in %s (refused, never followed)",
				branch, dir);
	if (dfd < 0)
		return err_errno(e, errno, "opening %s of the repository", dir);
	_cleanup_free_ char *lock = xasprintf("%s.lock", leaf);
	int fd = openat(dfd, lock, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_errno(e, errno, "creating %s/%s (is another git command running?)", dir, lock);
	char hex[GIT_OID_HEXSZ + 2];
	git_oid_tostr(hex, GIT_OID_HEXSZ + 1, oid);
	hex[GIT_OID_HEXSZ] = '\n';
	hex[GIT_OID_HEXSZ + 1] = '\0';
	int rc = fs_write_all(fd, hex, strlen(hex)) == 0 && fsync(fd) == 0 ? 0 : -1;
	int saved = errno;
	close(fd);
	if (rc == 0 && syscall(SYS_renameat2, dfd, lock, dfd, leaf, RENAME_NOREPLACE_) == 0)
		return 0;
	saved = rc == 0 ? errno : saved;
	unlinkat(dfd, lock, 0);
	if (saved == EEXIST)
		return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "branch", branch), "branch '%s' already exists",
				branch);
	return err_errno(e, saved, "writing %s/%s", dir, leaf);
}

static void delete_branch_ref(int cfd, const char *branch)
{
	struct err ignored = ERR_INIT;
	_cleanup_free_ char *dir = NULL, *leaf = NULL;
	if (branch_ref_parts(branch, &dir, &leaf, &ignored) == 0) {
		_cleanup_close_ int dfd = confine_open_dirs(cfd, dir, 0);
		if (dfd >= 0)
			unlinkat(dfd, leaf, 0);
	}
	err_clear(&ignored);
}

/* The commit the new worktree's branch points at, in *oid; *created when the branch was made (by descriptor). */
static int prepare_branch(git_repository *repo, int cfd, const struct gitops_worktree_add *o, git_commit *start,
			  git_oid *oid, int *created, struct err *e)
{
	*created = 0;
	git_reference *ref = NULL;
	int found = git_branch_lookup(&ref, repo, o->branch, GIT_BRANCH_LOCAL) == 0;
	if (found) {
		int checked_out = git_branch_is_checked_out(ref) == 1;
		git_oid_cpy(oid, git_reference_target(ref));
		git_reference_free(ref);
		if (o->create_branch && !checked_out && git_oid_equal(oid, git_commit_id(start)))
			return 0; /* made by an add interrupted before its worktree was in place (docs/recovery.md) */
		if (o->create_branch)
			return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "branch", o->branch),
					"branch '%s' already exists (drop createBranch to use it)", o->branch);
		if (checked_out)
			return err_setd(e, E_GIT_ERROR,
					json_pack("{s:s,s:i,s:s}", "class", "WORKTREE", "klass", GIT_ERROR_WORKTREE,
						  "message", "reference is already checked out"),
					"adding the worktree: branch '%s' is already checked out in another worktree",
					o->branch);
		return 0;
	}
	if (o->create_branch) {
		git_oid_cpy(oid, git_commit_id(start));
	} else {
		_cleanup_free_ char *remote_name = xasprintf("origin/%s", o->branch);
		if (git_branch_lookup(&ref, repo, remote_name, GIT_BRANCH_REMOTE) < 0)
			return err_setd(
				e, E_NOT_FOUND, json_pack("{s:s}", "branch", o->branch),
				"branch '%s' does not exist (set createBranch: true to create it from sourceBranch)",
				o->branch);
		git_commit *tip = NULL;
		int rc = git_commit_lookup(&tip, repo, git_reference_target(ref));
		git_reference_free(ref);
		if (rc < 0)
			return git_fail(e, "reading origin's branch");
		git_oid_cpy(oid, git_commit_id(tip));
		git_commit_free(tip);
	}
	if (create_branch_ref(cfd, o->branch, oid, e) < 0)
		return -1;
	*created = 1;
	return 0;
}

/* --- worktree add: staged, then moved into place ------------------------------------------------- */

/* The private staging directory of one worktree add: S/admin/NAME (the entry) and S/tree/LEAF (the worktree). */
struct wt_stage {
	int fd; /* S */
	char *name, *path;
	int admin_fd, tree_fd; /* S/admin, S/tree */
};

static void stage_release(const struct gitops_worktree_add *o, struct wt_stage *s)
{
	if (s->admin_fd >= 0)
		close(s->admin_fd);
	if (s->tree_fd >= 0)
		close(s->tree_fd);
	if (s->fd >= 0) {
		struct err ignored = ERR_INIT;
		close(s->fd);
		fs_remove_at(o->stage_fd, s->name, o->stage_dir,
			     &ignored); /* empty after the moves; else the failed add */
		err_clear(&ignored);
	}
	free(s->name);
	free(s->path);
}

static int open_made_dir(int fd, const char *name, const char *where, struct err *e)
{
	if (mkdirat(fd, name, 0755) < 0)
		return err_errno(e, errno, "mkdir %s/%s", where, name);
	int dfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return dfd < 0 ? err_errno(e, errno, "open %s/%s", where, name) : dfd;
}

static int write_text_at(int dirfd, const char *name, const char *text, const char *where, struct err *e)
{
	return fs_write_at(dirfd, name, text, strlen(text), 0644, where, e);
}

/* The entry and the worktree as git worktree add writes them, but linked to each other inside the stage: libgit2
 * then opens the staged worktree and checks it out there (writing its files and its index in the stage only). */
static int stage_metadata(const struct gitops_worktree_add *o, struct wt_stage *s, const char *common,
			  const git_oid *oid, struct err *e)
{
	_cleanup_free_ char *admin = xasprintf("%s/admin/%s", s->path, o->name);
	_cleanup_free_ char *tree = xasprintf("%s/tree/%s", s->path, o->leaf);
	_cleanup_free_ char *gitfile = xasprintf("gitdir: %s/\n", admin);
	_cleanup_free_ char *back = xasprintf("%s/.git\n", tree);
	_cleanup_free_ char *commondir = xasprintf("%s/\n", common);
	char hex[GIT_OID_HEXSZ + 1];
	git_oid_tostr(hex, sizeof(hex), oid);
	_cleanup_free_ char *head = o->branch ? xasprintf("ref: refs/heads/%s\n", o->branch) : xasprintf("%s\n", hex);
	_cleanup_close_ int afd = open_made_dir(s->admin_fd, o->name, s->path, e);
	_cleanup_close_ int tfd = afd < 0 ? -1 : open_made_dir(s->tree_fd, o->leaf, s->path, e);
	if (tfd < 0)
		return -1;
	const struct {
		int fd;
		const char *name, *text, *where;
	} files[] = { { tfd, ".git", gitfile, tree },
		      { afd, "commondir", commondir, admin },
		      { afd, "gitdir", back, admin },
		      { afd, "HEAD", head, admin } };
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		if (write_text_at(files[i].fd, files[i].name, files[i].text, files[i].where, e) < 0)
			return -1;
	return 0;
}

static int checkout_stage(struct wt_stage *s, const char *leaf, struct err *e)
{
	_cleanup_free_ char *tree = xasprintf("%s/tree/%s", s->path, leaf);
	git_repository *wt = NULL;
	if (git_repository_open_ext(&wt, tree, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0)
		return git_fail(e, "opening the new worktree");
	git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
	co.checkout_strategy = GIT_CHECKOUT_FORCE;
	/* docs/payloads.md (git): no filters ever run — and skipping them skips a per-file attribute lookup
	 * (a realpath per directory level), which made checkout 2x slower than git's. */
	co.disable_filters = 1;
	int rc = git_checkout_head(wt, &co) < 0 ? git_fail(e, "adding the worktree: checkout") : 0;
	git_repository_free(wt);
	return rc;
}

/* After the checkout: the staged entry and worktree name their final places (what git_layout_find checks). */
static int point_at_final_places(const struct gitops_worktree_add *o, struct wt_stage *s, const char *common,
				 struct err *e)
{
	_cleanup_free_ char *gitfile = xasprintf("gitdir: %s/worktrees/%s/\n", common, o->name);
	_cleanup_free_ char *back = xasprintf("%s/.git\n", o->path);
	_cleanup_close_ int afd = openat(s->admin_fd, o->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int tfd = openat(s->tree_fd, o->leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (afd < 0 || tfd < 0)
		return err_errno(e, errno, "reopening the staged worktree in %s", s->path);
	if (write_text_at(tfd, ".git", gitfile, o->path, e) < 0)
		return -1;
	return write_text_at(afd, "gitdir", back, common, e);
}

/* Moves the entry into the held repository's worktrees/ and the worktree into its held parent. */
static int move_into_place(const struct gitops_worktree_add *o, struct wt_stage *s, int cfd, const char *common,
			   struct err *e)
{
	_cleanup_free_ char *worktrees = xasprintf("%s/worktrees", common);
	_cleanup_free_ char *admin = xasprintf("%s/%s", worktrees, o->name);
	if (mkdirat(cfd, "worktrees", 0755) < 0 && errno != EEXIST)
		return err_errno(e, errno, "mkdir %s", worktrees);
	_cleanup_close_ int wfd = confine_openat(cfd, "worktrees", O_PATH | O_DIRECTORY);
	if (wfd < 0)
		return err_errno(e, errno, "opening %s (no symlink is followed there)", worktrees);
	if (fs_move_at(s->admin_fd, o->name, wfd, o->name, admin, e) < 0)
		return -1;
	fault_step("worktree.entry-moved");
	if (fs_move_at(s->tree_fd, o->leaf, o->parent_fd, o->leaf, o->path, e) == 0)
		return 0;
	struct err ignored = ERR_INIT;
	fs_remove_at(wfd, o->name, worktrees, &ignored);
	err_clear(&ignored);
	return -1;
}

/* The repository's common directory, held: the repository itself (bare) or its .git; *common its path. */
static int open_common(git_repository *repo, const struct gitops_worktree_add *o, char **common, struct err *e)
{
	_cleanup_free_ char *libgit2s = fs_tidy_path(git_repository_commondir(repo));
	_cleanup_free_ char *dotgit = xasprintf("%s/.git", o->repo_path);
	if (!strcmp(libgit2s, o->repo_path)) {
		*common = xstrdup(o->repo_path);
		return fcntl(o->repo_fd, F_DUPFD_CLOEXEC, 0);
	}
	if (!strcmp(libgit2s, dotgit)) {
		*common = xstrdup(dotgit);
		int fd = confine_openat(o->repo_fd, ".git", O_PATH | O_DIRECTORY);
		return fd < 0 ? err_errno(e, errno, "opening %s (no symlink is followed there)", dotgit), -1 : fd;
	}
	return err_setd(e, E_PATH_OUTSIDE_DATA_HOME,
			json_pack("{s:s,s:s}", "path", o->repo_path, "commondir", libgit2s),
			"libgit2 opened %s as %s: the repository moved while it was opened (a parent swapped?); try "
			"again",
			o->repo_path, libgit2s),
	       -1;
}

static json_t *worktree_result(const struct gitops_worktree_add *o, const git_oid *oid, int created);

/* --- an add interrupted by a kill -9 (docs/recovery.md) --------------------------------------------------
 * The entry is moved into the repository's worktrees/ first, the worktree second, and each move is atomic; an add
 * killed between them leaves the entry alone, one killed after them (or whose daemon died before it recorded the
 * row) leaves both. The entry was already pointed at the final path (its gitdir file) before the moves, so it says
 * which of the two it is; the daemon sends an add only when it has no row of that name. */

/* The text of a small file name in dirfd (never through a link), or NULL. */
static char *small_file_at(int dirfd, const char *name)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char buf[PATH_MAX + 64];
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return NULL;
	buf[n] = 0;
	return xstrdup(buf);
}

/* 1 when the entry worktrees/NAME names this add's path, 0 when it names another (or is unreadable). */
static int entry_is_ours(int entry_fd, const struct gitops_worktree_add *o)
{
	_cleanup_free_ char *back = small_file_at(entry_fd, "gitdir");
	_cleanup_free_ char *want = xasprintf("%s/.git\n", o->path);
	return back && !strcmp(back, want);
}

/* 1 when the worktree at the path is there and its .git names the entry. */
static int tree_is_ours(const struct gitops_worktree_add *o, const char *common)
{
	_cleanup_close_ int tfd = confine_openat(o->parent_fd, o->leaf, O_RDONLY | O_DIRECTORY);
	_cleanup_free_ char *gitfile = tfd < 0 ? NULL : small_file_at(tfd, ".git");
	_cleanup_free_ char *want = xasprintf("gitdir: %s/worktrees/%s/\n", common, o->name);
	return gitfile && !strcmp(gitfile, want);
}

/* The commit the resumed worktree's HEAD names (a branch's tip, or a detached commit). */
static int resumed_head(git_repository *repo, int entry_fd, const struct gitops_worktree_add *o, git_oid *oid,
			struct err *e)
{
	_cleanup_free_ char *head = small_file_at(entry_fd, "HEAD");
	_cleanup_free_ char *want = o->branch ? xasprintf("ref: refs/heads/%s\n", o->branch) : NULL;
	if (!head || (want && strcmp(head, want)) || (!want && !strncmp(head, "ref:", 4)))
		return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "worktreeName", o->name),
				"a worktree named '%s' already exists in %s on another branch", o->name, o->repo_path);
	if (want) {
		_cleanup_free_ char *ref = xasprintf("refs/heads/%s", o->branch);
		return git_reference_name_to_id(oid, repo, ref) < 0 ? git_fail(e, "reading the worktree's branch") : 0;
	}
	head[strcspn(head, "\n")] = 0;
	return git_oid_fromstr(oid, head) < 0 ? git_fail(e, "reading the worktree's HEAD") : 0;
}

/* Before an add: a whole worktree left by an interrupted add of the same name and path is the result (1, *result
 * set); an entry left alone is removed, and the add goes on (0); anything else is left to check_worktree_target. */
static int resume_interrupted_add(git_repository *repo, int cfd, const char *common,
				  const struct gitops_worktree_add *o, json_t **result, struct err *e)
{
	_cleanup_close_ int wfd = confine_openat(cfd, "worktrees", O_PATH | O_DIRECTORY);
	_cleanup_close_ int efd = wfd < 0 ? -1 : confine_openat(wfd, o->name, O_RDONLY | O_DIRECTORY);
	if (efd < 0 || !entry_is_ours(efd, o))
		return 0;
	if (tree_is_ours(o, common)) {
		git_oid oid;
		if (resumed_head(repo, efd, o, &oid, e) < 0)
			return -1;
		*result = worktree_result(o, &oid, 0);
		json_object_set_new(*result, "resumed", json_true());
		log_warn("worktree %s: an interrupted add had made it; taken as this add's", o->path);
		return 1;
	}
	struct stat st;
	if (fstatat(o->parent_fd, o->leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0; /* something else is at the path: check_worktree_target says so */
	_cleanup_free_ char *worktrees = xasprintf("%s/worktrees", common);
	log_warn("%s/%s: the entry of an interrupted add, without its worktree; removed", worktrees, o->name);
	return fs_remove_at(wfd, o->name, worktrees, e) < 0 ? -1 : 0;
}

static int check_worktree_target(git_repository *repo, int cfd, const struct gitops_worktree_add *o, struct err *e)
{
	git_worktree *existing = NULL;
	struct stat st;
	_cleanup_free_ char *entry = xasprintf("worktrees/%s", o->name);
	if (git_worktree_lookup(&existing, repo, o->name) == 0 || fstatat(cfd, entry, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		git_worktree_free(existing);
		return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "worktreeName", o->name),
				"a worktree named '%s' already exists in %s", o->name, o->repo_path);
	}
	if (fstatat(o->parent_fd, o->leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !(S_ISDIR(st.st_mode) && fs_dir_is_empty_at(o->parent_fd, o->leaf) == 1))
		return err_setd(e, E_ALREADY_EXISTS, json_pack("{s:s}", "path", o->path),
				"%s already exists and is not an empty directory", o->path);
	return 0;
}

static json_t *worktree_result(const struct gitops_worktree_add *o, const git_oid *oid, int created)
{
	char hex[GIT_OID_HEXSZ + 1];
	git_oid_tostr(hex, sizeof(hex), oid);
	return json_pack("{s:s,s:s,s:s,s:o,s:s,s:b,s:b}", "worktreePath", o->path, "worktreeName", o->name, "repoPath",
			 o->repo_path, "branch", o->branch ? json_string(o->branch) : json_null(), "head", hex,
			 "detached", o->branch == NULL, "createdBranch", created);
}

/* Stages, checks out and moves the worktree (oid: its HEAD's commit). */
static int add_staged(const struct gitops_worktree_add *o, int cfd, const char *common, const git_oid *oid,
		      struct err *e)
{
	struct wt_stage s = { .fd = -1, .admin_fd = -1, .tree_fd = -1 };
	s.fd = fs_private_dir_at(o->stage_fd, o->stage_dir, ".agor-worktree-", &s.name, &s.path, e);
	int rc = s.fd < 0 ? -1 : 0;
	if (rc < 0)
		err_prefix(
			e,
			"staging the worktree (libgit2 checks out in a private directory the executing user makes in "
			"%s, then it is moved into place)",
			o->stage_dir);
	if (rc == 0 && ((s.admin_fd = open_made_dir(s.fd, "admin", s.path, e)) < 0 ||
			(s.tree_fd = open_made_dir(s.fd, "tree", s.path, e)) < 0))
		rc = -1;
	if (rc == 0)
		rc = stage_metadata(o, &s, common, oid, e);
	if (rc == 0)
		fault_step("worktree.staged");
	if (rc == 0)
		rc = checkout_stage(&s, o->leaf, e);
	if (rc == 0)
		fault_step("worktree.checked-out");
	if (rc == 0)
		rc = point_at_final_places(o, &s, common, e);
	if (rc == 0)
		rc = move_into_place(o, &s, cfd, common, e);
	stage_release(o, &s);
	return rc;
}

int gitops_worktree_add(const struct gitops_worktree_add *o, json_t **result, struct err *e)
{
	if (!valid_worktree_name(o->name))
		return err_setd(e, E_INVALID_PAYLOAD,
				json_pack("{s:s,s:s}", "path", "params.worktreeName", "reason",
					  "letters, digits, '.', '_', '-' only; no leading '.' or '-'"),
				"params.worktreeName: invalid worktree name '%s'", o->name);
	if (gitops_init(e) < 0)
		return -1;
	git_repository *repo = NULL;
	git_commit *start = NULL;
	_cleanup_free_ char *common = NULL;
	int created = 0, rc = -1, cfd = -1;
	git_oid oid;
	if (open_repo(o->repo_path, &repo, e) < 0)
		return -1;
	if ((cfd = open_common(repo, o, &common, e)) < 0)
		goto out;
	int resumed = resume_interrupted_add(repo, cfd, common, o, result, e);
	if (resumed != 0) {
		rc = resumed > 0 ? 0 : -1;
		goto out;
	}
	if (check_worktree_target(repo, cfd, o, e) < 0 || resolve_start(repo, o->source_branch, &start, e) < 0)
		goto out;
	if (!o->branch) /* detached: HEAD names the commit, no branch is made */
		git_oid_cpy(&oid, git_commit_id(start));
	else if (prepare_branch(repo, cfd, o, start, &oid, &created, e) < 0)
		goto out;
	if (add_staged(o, cfd, common, &oid, e) < 0) {
		if (created)
			delete_branch_ref(cfd, o->branch);
		goto out;
	}
	*result = worktree_result(o, &oid, created);
	rc = 0;
out:
	if (cfd >= 0)
		close(cfd);
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

/* Unless forced, the status libgit2 reads through the worktree's path: 0 clean, -1 dirty or unreadable. The read
 * changes nothing (no index update), so a parent swapped meanwhile can only make it read elsewhere. */
static int check_clean(const struct gitops_worktree_remove *o, json_t **discarded, struct err *e)
{
	git_repository *wt = NULL;
	if (open_repo(o->path, &wt, e) < 0)
		return -1;
	json_t *paths = NULL;
	size_t count = 0;
	int rc = -1;
	if (!git_repository_is_worktree(wt))
		err_setd(e, E_NOT_FOUND, json_pack("{s:s}", "path", o->path),
			 "%s is not a linked worktree (refusing to remove a main repository)", o->path);
	else if (list_changes(wt, &paths, &count, e) == 0)
		rc = count ? refuse_dirty(o->path, paths, count, e) : 0;
	if (paths)
		json_decref(paths);
	git_repository_free(wt);
	*discarded = rc == 0 ? json_integer(0) : NULL;
	return rc;
}

/* The working tree, then the entry: each removed beneath its held parent, never following a link. */
static int remove_held(const struct gitops_worktree_remove *o, struct err *e)
{
	_cleanup_free_ char *worktrees = xasprintf("%s/worktrees", o->common);
	if (fs_remove_at(o->parent_fd, o->leaf, o->path, e) < 0)
		return -1;
	fault_step("worktree.tree-removed");
	_cleanup_close_ int wfd = confine_openat(o->common_fd, "worktrees", O_PATH | O_DIRECTORY);
	if (wfd < 0)
		return err_errno(e, errno, "opening %s (no symlink is followed there)", worktrees);
	return fs_remove_at(wfd, o->admin_name, worktrees, e);
}

int gitops_worktree_remove(const struct gitops_worktree_remove *o, json_t **result, struct err *e)
{
	if (gitops_init(e) < 0)
		return -1;
	/* forced, nothing is counted: a status walk reads what runs left in the worktree (a fifo .gitignore would
	 * hang it, 100 nested directories fail it) and would only say what is discarded anyway */
	json_t *discarded = json_null();
	if (!o->force && check_clean(o, &discarded, e) < 0)
		return -1;
	fault_step("worktree.remove-checked");
	if (remove_held(o, e) < 0) {
		json_decref(discarded);
		return -1;
	}
	*result = json_pack("{s:s,s:s,s:b,s:o}", "worktreePath", o->path, "worktreeName", o->admin_name, "removed", 1,
			    "discardedChanges", discarded);
	return 0;
}
