/* egress.c — the egress proxy (egress.h): a Unix socket outside the sandbox, one process per connection that
 * decides the destination, swaps the sentinel for the key on the provider's requests and relays bytes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "crypto.h"
#include "egress.h"
#include "egress_allow.h"
#include "fsutil.h"
#include "json.h"
#include "net.h"
#include "strbuf.h"
#include "tls.h"
#include "egress_ca.h"
#include "banned.h"

#define MAX_HEAD_BYTES	   (32u << 10)
#define HEAD_TIMEOUT_MS	   30000
#define CONNECT_TIMEOUT_MS 10000
#define IDLE_TIMEOUT_MS	   (10 * 60 * 1000)
#define MAX_ADDRESSES	   8
#define REPORT_LINE_MAX	   512
#define MAX_CONNECTIONS	   128 /* at once: each is a process outside the sandbox's cgroup */

struct egress {
	struct egress_allow allow;
	char *provider_host;
	int provider_port;
	char *sentinel, *key;
	char dir[64];
	char *socket_path;
	int listen_fd;
	int report[2];		       /* refusals, one JSON line each, from the connection processes */
	pid_t pid;		       /* the proxy (leader of its process group), 0 before egress_launch */
	struct egress_ca *ca;	       /* an https provider: the per-task CA (egress_ca.h), else NULL */
	struct tls_config *tls_server; /* its certificate for the provider host */
	struct tls_config *tls_client; /* upstream: the system bundle or cfg.upstream_ca_file */
	char *ca_path, *bundle_path;   /* in dir: the CA alone; the CA and the system bundle */
	json_t *refused;	       /* what the proxy refused so far ({host, port, reason, count[, reported]}) */
	long long dropped;	       /* refusals past EGRESS_MAX_REPORTED entries */
	struct strbuf partial;	       /* a line of the pipe not read whole yet */
};

/* --- opening ------------------------------------------------------------------------------------ */

static int make_socket(struct egress *eg, uid_t run_uid, struct err *e)
{
	eg->socket_path = xasprintf("%s/egress.sock", eg->dir);
	struct sockaddr_un sa;
	if (net_unix_address(eg->socket_path, &sa, e) < 0)
		return -1;
	eg->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (eg->listen_fd < 0 || bind(eg->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(eg->listen_fd, 64) < 0 || chmod(eg->socket_path, 0666) < 0)
		return err_errno(e, errno, "egress proxy socket %s", eg->socket_path);
	if (run_uid != geteuid() && chown(eg->dir, run_uid, run_uid) < 0)
		return err_errno(e, errno, "chown %s to %u (execution.sandbox.root_maps_to)", eg->dir,
				 (unsigned)run_uid);
	return 0;
}

static int write_file_0644(const char *path, const char *a, size_t alen, const char *b, size_t blen, struct err *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	int rc = fd >= 0 && fs_write_all(fd, a, alen) == 0 && (!blen || fs_write_all(fd, b, blen) == 0) ? 0 : -1;
	if (rc < 0)
		err_errno(e, errno, "writing %s", path);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* An https provider: the per-task CA, its certificate for the provider host, the upstream verification, and the
 * files the agent trusts (the CA alone, and the CA with the system's bundle for tools that replace their roots). */
static int open_interception(struct egress *eg, const struct egress_config *cfg, struct err *e)
{
	if (!(eg->ca = egress_ca_new(eg->provider_host, e)) ||
	    !(eg->tls_server =
		      tls_server_config_new_pem(egress_ca_leaf_pem(eg->ca), egress_ca_leaf_key_pem(eg->ca), e)) ||
	    !(eg->tls_client = tls_client_config_new(cfg->upstream_ca_file, NULL, e)))
		return err_prefix(e, "the egress proxy for %s", eg->provider_host), -1;
	const char *pem = egress_ca_pem(eg->ca);
	_cleanup_strbuf_ struct strbuf system = STRBUF_INIT;
	const char *bundle = tls_default_ca_file();
	if (bundle)
		(void)strbuf_read_file(&system, bundle, 16u << 20);
	eg->ca_path = xasprintf("%s/ca.pem", eg->dir);
	eg->bundle_path = xasprintf("%s/ca-bundle.pem", eg->dir);
	return write_file_0644(eg->ca_path, pem, strlen(pem), NULL, 0, e) < 0 ||
			       write_file_0644(eg->bundle_path, pem, strlen(pem), system.buf, system.len, e) < 0
		       ? -1
		       : 0;
}

/* A proxy killed outright (SIGKILL to the executor and its proxy together) leaves its directory: one of owner's
 * older than a minute whose socket no longer answers is removed (its known files only; anything else keeps it). */
static void sweep_one(int tmp, const char *name, uid_t owner)
{
	struct stat st;
	if (strncmp(name, "agor-egress-", 12) || strlen(name) > 32 ||
	    fstatat(tmp, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != owner ||
	    st.st_mtime > time(NULL) - 60)
		return;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/%.32s/egress.sock", name);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int stale = s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
		    (errno == ECONNREFUSED || errno == ENOENT);
	if (s >= 0)
		close(s);
	int dir = stale ? openat(tmp, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (dir < 0)
		return;
	static const char *const files[] = { "egress.sock", "ca.pem", "ca-bundle.pem" };
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		unlinkat(dir, files[i], 0);
	close(dir);
	unlinkat(tmp, name, AT_REMOVEDIR);
}

static void sweep_stale(uid_t owner)
{
	int tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = tmp >= 0 ? fdopendir(dup(tmp)) : NULL;
	for (struct dirent *de; d && (de = readdir(d));)
		sweep_one(tmp, de->d_name, owner);
	if (d)
		closedir(d);
	if (tmp >= 0)
		close(tmp);
}

struct egress *egress_open(const struct egress_config *cfg, struct err *e)
{
	struct egress *eg = xcalloc(1, sizeof(*eg));
	eg->listen_fd = eg->report[0] = eg->report[1] = -1;
	eg->refused = json_array();
	strbuf_init(&eg->partial, 0);
	if (egress_allow_parse(&eg->allow, cfg->allow, e) < 0) {
		err_prefix(e, "execution.sandbox.egress_allow");
		return egress_free(eg), NULL;
	}
	if (cfg->provider_host) {
		eg->provider_host = xstrdup(cfg->provider_host);
		eg->provider_port = cfg->provider_port;
		egress_host_normalise(eg->provider_host);
		egress_allow_add(&eg->allow, eg->provider_host, eg->provider_port);
	}
	sweep_stale(cfg->run_uid);
	snprintf(eg->dir, sizeof(eg->dir), "/tmp/agor-egress-XXXXXX");
	if (!mkdtemp(eg->dir)) {
		err_errno(e, errno, "creating the egress proxy's directory in /tmp");
		eg->dir[0] = 0;
		return egress_free(eg), NULL;
	}
	if (make_socket(eg, cfg->run_uid, e) < 0 || pipe2(eg->report, O_CLOEXEC | O_NONBLOCK) < 0) {
		if (!err_is_set(e))
			err_errno(e, errno, "pipe");
		return egress_free(eg), NULL;
	}
	if (cfg->provider_host && cfg->provider_tls && open_interception(eg, cfg, e) < 0)
		return egress_free(eg), NULL;
	return eg;
}

const char *egress_ca_file(const struct egress *eg)
{
	return eg->ca_path;
}

const char *egress_ca_bundle(const struct egress *eg)
{
	return eg->bundle_path;
}

const char *egress_dir(const struct egress *eg)
{
	return eg->dir;
}

const char *egress_socket_path(const struct egress *eg)
{
	return eg->socket_path;
}

void egress_set_credential(struct egress *eg, const char *sentinel, const char *key)
{
	free(eg->sentinel);
	if (eg->key) {
		explicit_bzero(eg->key, strlen(eg->key));
		free(eg->key);
	}
	eg->sentinel = sentinel ? xstrdup(sentinel) : NULL;
	eg->key = key ? xstrdup(key) : NULL;
}

char *egress_new_sentinel(void)
{
	uint8_t raw[16];
	char hex[33];
	struct err ignored = ERR_INIT;
	if (crypto_random(raw, sizeof(raw), &ignored) < 0)
		abort(); /* a guessable sentinel would be worse than none */
	crypto_hex(raw, sizeof(raw), hex);
	return xasprintf("%s%s", EGRESS_SENTINEL_PREFIX, hex);
}

/* --- one connection ------------------------------------------------------------------------------ */

struct request {
	char method[16];
	char host[256];
	int port;
	int is_connect;
	char *path; /* absolute-URI requests: the origin form */
	int provider;
	struct sockaddr_storage addr[MAX_ADDRESSES];
	socklen_t addrlen[MAX_ADDRESSES];
	int naddr;
};

static void report_refusal(const struct egress *eg, const char *host, int port, const char *reason)
{
	json_t *j = json_pack("{s:s,s:i,s:s}", "host", host, "port", port, "reason", reason);
	_cleanup_free_ char *text = json_to_compact(j);
	json_decref(j);
	if (strlen(text) < REPORT_LINE_MAX - 1) {
		char line[REPORT_LINE_MAX];
		int n = snprintf(line, sizeof(line), "%s\n", text);
		(void)!write(eg->report[1], line, (size_t)n); /* atomic (< PIPE_BUF); dropped when the pipe is full */
	}
}

static void answer(int fd, const char *status, const char *body)
{
	char buf[512];
	int n = snprintf(
		buf, sizeof(buf),
		"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s", status,
		strlen(body), body);
	(void)fs_write_all(fd, buf, (size_t)n);
}

static void refuse(const struct egress *eg, int fd, const char *host, int port, const char *reason)
{
	report_refusal(eg, host, port, reason);
	char body[384];
	snprintf(body, sizeof(body), "agor egress: %s:%d refused (%s)\n", host, port, reason);
	answer(fd, "403 Forbidden", body);
}

static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int rc;
	while ((rc = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	return rc;
}

/* One side of a relayed connection: a socket, with a TLS session over it where the proxy terminates TLS. */
struct end {
	int fd;
	struct tls *tls; /* NULL: plain */
};

/* Bytes read (> 0), 0 at end of stream, -1 on failure. Blocking. */
static ssize_t end_read(struct end *x, void *buf, size_t len)
{
	for (;;) {
		ssize_t n;
		if (x->tls) {
			struct err ignored = ERR_INIT;
			n = tls_read(x->tls, buf, len, &ignored);
			err_clear(&ignored);
			if (n == TLS_WANT_READ || n == TLS_WANT_WRITE)
				continue;
			return n < 0 ? -1 : n;
		}
		n = read(x->fd, buf, len);
		if (n >= 0 || errno != EINTR)
			return n;
	}
}

static int end_write(struct end *x, const void *buf, size_t len)
{
	if (!x->tls)
		return fs_write_all(x->fd, buf, len);
	for (size_t off = 0; off < len;) {
		struct err ignored = ERR_INIT;
		ssize_t n = tls_write(x->tls, (const char *)buf + off, len - off, &ignored);
		err_clear(&ignored);
		if (n == TLS_WANT_READ || n == TLS_WANT_WRITE)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

/* No more bytes towards x. */
static void end_shutdown(struct end *x)
{
	if (x->tls)
		tls_close_notify(x->tls);
	shutdown(x->fd, SHUT_WR);
}

/* Bytes that poll() cannot see: decrypted already, or a record received. */
static int end_pending(const struct end *x)
{
	return x->tls && tls_pending(x->tls);
}

/* The request head up to and including its blank line into head; what came after it stays in head past *len. */
static int read_head(struct end *x, struct strbuf *head, size_t *len)
{
	for (;;) {
		char *end = head->len ? memmem(head->buf, head->len, "\r\n\r\n", 4) : NULL;
		if (end) {
			*len = (size_t)(end - head->buf) + 4;
			return 0;
		}
		if (head->len > MAX_HEAD_BYTES || (!end_pending(x) && wait_fd(x->fd, POLLIN, HEAD_TIMEOUT_MS) <= 0))
			return -1;
		char buf[8192];
		ssize_t n = end_read(x, buf, sizeof(buf));
		if (n <= 0)
			return -1;
		strbuf_add(head, buf, (size_t)n);
	}
}

/* "host:port" or "[v6]:port" into r. */
static int parse_authority(const char *text, size_t n, struct request *r, int default_port)
{
	if (n >= sizeof(r->host))
		return -1;
	char buf[sizeof(r->host)];
	memcpy(buf, text, n);
	buf[n] = 0;
	char *colon = buf[0] == '[' ? strstr(buf, "]:") : strrchr(buf, ':');
	if (colon && buf[0] == '[')
		colon++;
	r->port = default_port;
	if (colon) {
		*colon = 0;
		const char *d = colon + 1;
		if (!*d || strspn(d, "0123456789") != strlen(d) || strlen(d) > 5 || (r->port = atoi(d)) < 1 ||
		    r->port > 65535)
			return -1;
	}
	if (!r->port)
		return -1;
	memcpy(r->host, buf, strlen(buf) + 1);
	return egress_host_normalise(r->host);
}

/* The request line: CONNECT host:port, or METHOD http://authority/path. */
static int parse_request_line(const char *head, struct request *r)
{
	const char *sp1 = strchr(head, ' '), *eol = strstr(head, "\r\n");
	const char *sp2 = sp1 && sp1 < eol ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp2 || (size_t)(sp1 - head) >= sizeof(r->method) || sp1 == head || strncmp(sp2 + 1, "HTTP/1.", 7))
		return -1;
	memcpy(r->method, head, (size_t)(sp1 - head));
	r->method[sp1 - head] = 0;
	if (strspn(r->method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(r->method))
		return -1;
	const char *target = sp1 + 1;
	size_t tlen = (size_t)(sp2 - target);
	r->is_connect = !strcmp(r->method, "CONNECT");
	if (r->is_connect)
		return parse_authority(target, tlen, r, 0);
	if (tlen < 8 || strncasecmp(target, "http://", 7))
		return -1;
	const char *auth = target + 7;
	size_t alen = strcspn(auth, "/?# ");
	if (memchr(auth, '@', alen) || alen > tlen - 7)
		return -1; /* userinfo: nothing of the kind is forwarded */
	const char *path = auth + alen;
	size_t plen = (size_t)(sp2 - path);
	r->path = plen && path[0] == '/' ? xstrndup(path, plen) : xasprintf("/%.*s", (int)plen, path);
	return parse_authority(auth, alen, r, 80);
}

static int contains_sentinel(const struct egress *eg, const char *data, size_t len)
{
	return eg->sentinel && memmem(data, len, eg->sentinel, strlen(eg->sentinel));
}

/* NULL: allowed (r->addr filled); else the reason of the refusal. head: the request's bytes so far, checked for
 * the sentinel before anything (a DNS query included) could carry it away. */
static const char *decide(const struct egress *eg, struct request *r, const struct strbuf *head)
{
	/* The provider as configured: an https one only through CONNECT (whose TLS is terminated here), an http one
	 * only in absolute-URI requests — never the key in cleartext to a TLS port, never inside a raw tunnel. */
	r->provider = eg->provider_host && !strcmp(r->host, eg->provider_host) && r->port == eg->provider_port &&
		      r->is_connect == (eg->tls_server != NULL);
	if (!r->provider && contains_sentinel(eg, head->buf, head->len))
		return "sentinel";
	if (!egress_allow_match(&eg->allow, r->host, r->port))
		return "not-allowed";
	char port[8];
	snprintf(port, sizeof(port), "%d", r->port);
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *list = NULL;
	if (getaddrinfo(r->host, port, &hints, &list) != 0 || !list)
		return "resolve-failed";
	const char *why = "resolve-failed";
	for (struct addrinfo *ai = list; ai && r->naddr < MAX_ADDRESSES; ai = ai->ai_next) {
		const char *cls = egress_address_class(ai->ai_addr);
		if (cls && !egress_allow_names_address(&eg->allow, ai->ai_addr, r->port)) {
			why = cls;
			continue;
		}
		memcpy(&r->addr[r->naddr], ai->ai_addr, ai->ai_addrlen);
		r->addrlen[r->naddr++] = ai->ai_addrlen;
	}
	freeaddrinfo(list);
	return r->naddr ? NULL : why;
}

static int connect_one(const struct sockaddr_storage *sa, socklen_t len)
{
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	int err = 0;
	socklen_t elen = sizeof(err);
	if ((connect(fd, (const struct sockaddr *)sa, len) == 0 ||
	     (errno == EINPROGRESS && wait_fd(fd, POLLOUT, CONNECT_TIMEOUT_MS) > 0 &&
	      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err == 0)) &&
	    fcntl(fd, F_SETFL, 0) == 0)
		return fd;
	close(fd);
	return -1;
}

static int connect_upstream(const struct request *r)
{
	for (int i = 0; i < r->naddr; i++) {
		int fd = connect_one(&r->addr[i], r->addrlen[i]);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/* The sentinel scanner on bytes towards a destination that must never see it: it keeps back the last
 * strlen(sentinel) - 1 bytes, so a sentinel split between two reads is found before any of it leaves. */
struct scanner {
	const char *needle; /* NULL: no scan */
	size_t n;
	struct strbuf pending;
};

/* 0 and what is safe written to fd; -1 when the sentinel is in it (nothing of it written) or fd failed. */
static int scan_and_send(struct scanner *s, struct end *to, const char *data, size_t len, int *found)
{
	if (!s->needle)
		return end_write(to, data, len);
	strbuf_add(&s->pending, data, len);
	if (memmem(s->pending.buf, s->pending.len, s->needle, s->n)) {
		*found = 1;
		return -1;
	}
	size_t keep = s->n - 1, out = s->pending.len > keep ? s->pending.len - keep : 0;
	if (out && end_write(to, s->pending.buf, out) < 0)
		return -1;
	strbuf_remove_front(&s->pending, out);
	return 0;
}

static int scan_flush(struct scanner *s, struct end *to)
{
	int rc = s->pending.len ? end_write(to, s->pending.buf, s->pending.len) : 0;
	strbuf_reset(&s->pending);
	return rc;
}

static int header_is(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);
	return len > n && line[n] == ':' && !strncasecmp(line, name, n);
}

static int hop_by_hop(const char *line, size_t len)
{
	return header_is(line, len, "connection") || header_is(line, len, "proxy-connection") ||
	       header_is(line, len, "keep-alive") || header_is(line, len, "proxy-authorization");
}

/* A header line into out; for the provider, the sentinel in its authentication headers becomes the key. */
static void add_header(const struct egress *eg, const struct request *r, struct strbuf *out, const char *line,
		       size_t len)
{
	const char *at = eg->sentinel && eg->key && r->provider &&
					 (header_is(line, len, "x-api-key") || header_is(line, len, "authorization") ||
					  header_is(line, len, "x-goog-api-key"))
				 ? memmem(line, len, eg->sentinel, strlen(eg->sentinel))
				 : NULL;
	if (!at) {
		strbuf_add(out, line, len);
		return;
	}
	strbuf_add(out, line, (size_t)(at - line));
	strbuf_addstr(out, eg->key);
	size_t skip = (size_t)(at - line) + strlen(eg->sentinel);
	strbuf_add(out, line + skip, len - skip);
}

/* The absolute-URI request's head in origin form, hop-by-hop headers replaced by "Connection: close". */
static void rewrite_request_head(const struct egress *eg, const struct request *r, const char *head, size_t len,
				 struct strbuf *out)
{
	strbuf_addf(out, "%s %s HTTP/1.1\r\n", r->method, r->path);
	const char *p = strstr(head, "\r\n") + 2, *end = head + len - 2;
	while (p < end) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t n = eol ? (size_t)(eol - p) + 2 : (size_t)(end - p);
		if (!hop_by_hop(p, n))
			add_header(eg, r, out, p, n);
		p += n;
	}
	strbuf_addstr(out, "Connection: close\r\n\r\n");
}

/* The upstream response's head with its hop-by-hop headers replaced by "Connection: close". */
static void rewrite_response_head(const char *head, size_t len, struct strbuf *out)
{
	const char *p = head, *end = head + len - 2;
	int first = 1;
	while (p < end) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t n = eol ? (size_t)(eol - p) + 2 : (size_t)(end - p);
		if (first || !hop_by_hop(p, n))
			strbuf_add(out, p, n);
		first = 0;
		p += n;
	}
	strbuf_addstr(out, "Connection: close\r\n\r\n");
}

struct relay {
	struct end client, upstream;
	struct scanner scan; /* client → upstream */
	int response_head;   /* absolute-URI mode: the response's head is still being read */
	struct strbuf head;  /* its bytes so far */
	int client_eof, upstream_eof;
	int sentinel_found;
};

/* upstream → client: raw, but for the response head of an absolute-URI request. */
static int pass_response(struct relay *rl, const char *buf, size_t n)
{
	if (!rl->response_head)
		return end_write(&rl->client, buf, n);
	strbuf_add(&rl->head, buf, n);
	char *end = memmem(rl->head.buf, rl->head.len, "\r\n\r\n", 4);
	if (!end)
		return rl->head.len > MAX_HEAD_BYTES ? -1 : 0;
	size_t len = (size_t)(end - rl->head.buf) + 4;
	_cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
	rewrite_response_head(rl->head.buf, len, &out);
	strbuf_add(&out, rl->head.buf + len, rl->head.len - len);
	rl->response_head = 0;
	return end_write(&rl->client, out.buf, out.len);
}

/* One read from fd and its bytes passed on; 0 at end of file, -1 on failure or a sentinel. */
static int pump_once(struct relay *rl, int from_client)
{
	char buf[65536];
	ssize_t n = end_read(from_client ? &rl->client : &rl->upstream, buf, sizeof(buf));
	if (n <= 0)
		return n == 0 ? 0 : -1;
	if (!from_client)
		return pass_response(rl, buf, (size_t)n) < 0 ? -1 : 1;
	return scan_and_send(&rl->scan, &rl->upstream, buf, (size_t)n, &rl->sentinel_found) < 0 ? -1 : 1;
}

static void relay_run(struct relay *rl)
{
	while (!rl->upstream_eof) {
		struct pollfd p[2] = { { .fd = rl->client_eof ? -1 : rl->client.fd, .events = POLLIN },
				       { .fd = rl->upstream.fd, .events = POLLIN } };
		int buffered = (!rl->client_eof && end_pending(&rl->client)) || end_pending(&rl->upstream);
		int rc = poll(p, 2, buffered ? 0 : IDLE_TIMEOUT_MS);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0 || (rc == 0 && !buffered))
			return;
		if (!rl->client_eof && end_pending(&rl->client))
			p[0].revents |= POLLIN;
		if (end_pending(&rl->upstream))
			p[1].revents |= POLLIN;
		if (p[0].revents) {
			int got = pump_once(rl, 1);
			if (got < 0)
				return;
			if (got == 0) {
				rl->client_eof = 1;
				if (scan_flush(&rl->scan, &rl->upstream) < 0)
					return;
				end_shutdown(&rl->upstream);
			}
		}
		if (p[1].revents) {
			int got = pump_once(rl, 0);
			if (got < 0)
				return;
			rl->upstream_eof = got == 0;
		}
	}
}

static const char ESTABLISHED[] = "HTTP/1.1 200 Connection established\r\n\r\n";

/* After the head was decided and upstream connected: the head (or 200) sent, then the relay. A CONNECT whose TLS
 * the proxy terminated (intercept) is relayed as a request of its own, like an absolute-URI one. */
static void forward(const struct egress *eg, struct request *r, struct end client, struct end upstream,
		    const struct strbuf *in, size_t head_len, int intercept)
{
	struct relay rl = { .client = client,
			    .upstream = upstream,
			    .head = STRBUF_INIT,
			    .scan = { .needle = r->provider ? NULL : eg->sentinel, .pending = STRBUF_INIT } };
	rl.scan.n = rl.scan.needle ? strlen(rl.scan.needle) : 0;
	int ok;
	if (r->is_connect && !intercept) {
		ok = end_write(&rl.client, ESTABLISHED, sizeof(ESTABLISHED) - 1) == 0;
	} else {
		_cleanup_strbuf_ struct strbuf head = STRBUF_INIT;
		rewrite_request_head(eg, r, in->buf, head_len, &head);
		ok = end_write(&rl.upstream, head.buf, head.len) == 0;
		explicit_bzero(head.buf, head.len);
		rl.response_head = 1;
	}
	if (ok && in->len > head_len)
		ok = scan_and_send(&rl.scan, &rl.upstream, in->buf + head_len, in->len - head_len,
				   &rl.sentinel_found) == 0;
	if (ok)
		relay_run(&rl);
	if (rl.sentinel_found)
		report_refusal(eg, r->host, r->port, "sentinel");
	strbuf_release(&rl.scan.pending);
	strbuf_release(&rl.head);
}

/* origin-form "METHOD /path HTTP/1.x" (inside a terminated tunnel) into r's method and path. */
static int parse_origin_line(const char *head, struct request *r)
{
	const char *sp1 = strchr(head, ' '), *eol = strstr(head, "\r\n");
	const char *sp2 = sp1 && eol && sp1 < eol ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp2 || sp1 == head || (size_t)(sp1 - head) >= sizeof(r->method) || sp1[1] != '/' ||
	    strncmp(sp2 + 1, "HTTP/1.", 7))
		return -1;
	memcpy(r->method, head, (size_t)(sp1 - head));
	r->method[sp1 - head] = 0;
	if (strspn(r->method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(r->method))
		return -1;
	free(r->path);
	r->path = xstrndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
	return 0;
}

int egress_parse_head(const char *head, size_t len, int origin_form, const char *sentinel, const char *provider_key,
		      struct egress_head *out)
{
	struct egress eg = { .sentinel = (char *)sentinel, .key = (char *)provider_key };
	struct request r = { .port = 0, .provider = provider_key != NULL };
	_cleanup_strbuf_ struct strbuf text = STRBUF_INIT;
	strbuf_add(&text, head, len); /* NUL-terminated, as serve_connection hands it over */
	memset(out, 0, sizeof(*out));
	strbuf_init(&out->forward, 0);
	if ((origin_form ? parse_origin_line(text.buf, &r) : parse_request_line(text.buf, &r)) < 0) {
		free(r.path);
		return -1;
	}
	if (!r.is_connect)
		rewrite_request_head(&eg, &r, text.buf, len, &out->forward);
	memcpy(out->method, r.method, sizeof(out->method));
	memcpy(out->host, r.host, sizeof(out->host));
	out->port = r.port;
	out->is_connect = r.is_connect;
	out->path = r.path;
	return 0;
}

void egress_head_release(struct egress_head *h)
{
	free(h->path);
	h->path = NULL;
	strbuf_release(&h->forward);
}

/* The provider's https endpoint: the agent's TLS ends here (the per-task CA's certificate for that host), one
 * request is read, its sentinel swapped, and it goes on over TLS verified against the real chain. */
static void intercept(const struct egress *eg, struct request *r, int client, size_t early_bytes)
{
	struct err e = ERR_INIT;
	struct end down = { .fd = client }, up = { .fd = -1 };
	_cleanup_strbuf_ struct strbuf in = STRBUF_INIT;
	size_t head_len = 0;
	struct timeval limit = { .tv_sec = HEAD_TIMEOUT_MS / 1000 };
	setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	if (early_bytes || end_write(&down, ESTABLISHED, sizeof(ESTABLISHED) - 1) < 0 ||
	    !(down.tls = tls_new(eg->tls_server, client, NULL, &e)) || tls_handshake(down.tls, &e) != 0 ||
	    read_head(&down, &in, &head_len) < 0 || parse_origin_line(in.buf, r) < 0)
		goto out; /* the agent did not speak TLS and HTTP/1.1 to its provider: nothing was sent anywhere */
	if ((up.fd = connect_upstream(r)) < 0 || !(up.tls = tls_new(eg->tls_client, up.fd, r->host, &e)) ||
	    tls_handshake(up.tls, &e) != 0) {
		_cleanup_free_ char *body = xasprintf("agor egress: %s:%d: %s\n", r->host, r->port,
						      err_is_set(&e) ? e.message : "the provider did not answer");
		char head[160];
		int n = snprintf(head, sizeof(head),
				 "HTTP/1.1 502 Bad Gateway\r\nContent-Length: %zu\r\n"
				 "Connection: close\r\n\r\n",
				 strlen(body));
		if (end_write(&down, head, (size_t)n) == 0)
			(void)end_write(&down, body, strlen(body));
		goto out;
	}
	limit.tv_sec = 0;
	setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	forward(eg, r, down, up, &in, head_len, 1);
	tls_close_notify(down.tls);
out:
	err_clear(&e);
	tls_free(down.tls);
	tls_free(up.tls);
	if (up.fd >= 0)
		close(up.fd);
}

static void serve_connection(const struct egress *eg, int client)
{
	_cleanup_strbuf_ struct strbuf in = STRBUF_INIT;
	struct request r = { .port = 0 };
	size_t head_len = 0;
	struct end down = { .fd = client };
	if (read_head(&down, &in, &head_len) < 0)
		return;
	strbuf_setlen(&in, in.len); /* NUL-terminated for the parsers */
	if (parse_request_line(in.buf, &r) < 0) {
		report_refusal(eg, "", 0, "malformed");
		answer(client, "400 Bad Request", "agor egress: only CONNECT host:port and http:// absolute URIs\n");
		goto out;
	}
	const char *why = decide(eg, &r, &in);
	if (why) {
		refuse(eg, client, r.host, r.port, why);
		goto out;
	}
	if (r.is_connect && r.provider && eg->tls_server) {
		intercept(eg, &r, client, in.len - head_len);
		goto out;
	}
	int upstream = connect_upstream(&r);
	if (upstream < 0) {
		answer(client, "502 Bad Gateway", "agor egress: the destination did not answer\n");
		goto out;
	}
	forward(eg, &r, down, (struct end){ .fd = upstream }, &in, head_len, 0);
	close(upstream);
out:
	free(r.path);
}

/* --- the proxy process --------------------------------------------------------------------------- */

/* Nothing of the executor's (its stdio to the daemon, its RPC connection) stays open in the proxy. */
static void close_all_but(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3; fd++)
		if (devnull >= 0 && fd != lo && fd != hi)
			dup2(devnull, fd); /* a stray write to stdio goes nowhere */
	if (devnull > 2 && devnull != lo && devnull != hi)
		close(devnull);
	for (int fd = 3; fd < lo; fd++)
		close(fd);
	for (int fd = lo + 1; fd < hi; fd++)
		close(fd);
	syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0U);
}

static const struct egress *orphaned_proxy; /* the proxy's own egress, for on_executor_death */

/* The executor died (it was killed: egress_free never runs): the directory goes, then the proxy and its
 * connections. */
static void on_executor_death(int sig)
{
	(void)sig;
	unlink(orphaned_proxy->socket_path);
	rmdir(orphaned_proxy->dir);
	kill(0, SIGKILL);
	_exit(1);
}

static NORETURN void proxy_main(struct egress *eg, pid_t executor)
{
	setpgid(0, 0); /* first: on_executor_death kills this group */
	orphaned_proxy = eg;
	signal(SIGHUP, on_executor_death);
	prctl(PR_SET_PDEATHSIG, SIGHUP, 0, 0, 0);
	if (getppid() != executor)
		on_executor_death(SIGHUP);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* it holds the key: no ptrace, no /proc/PID/mem for its own uid */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	close_all_but(eg->listen_fd, eg->report[1]);
	int live = 0;
	for (;;) {
		while (live > 0 && waitpid(-1, NULL, live >= MAX_CONNECTIONS ? 0 : WNOHANG) > 0)
			live--; /* at the cap, the next connection waits in the backlog until one ends */
		int fd = accept4(eg->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE)
				continue;
			_exit(1);
		}
		pid_t pid = fork();
		if (pid == 0) {
			signal(SIGHUP, SIG_DFL);
			prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
			close(eg->listen_fd);
			serve_connection(eg, fd);
			_exit(0);
		}
		live += pid > 0;
		close(fd);
	}
}

int egress_launch(struct egress *eg, struct err *e)
{
	if (eg->pid > 0)
		return 0;
	pid_t executor = getpid(), pid = fork();
	if (pid < 0)
		return err_errno(e, errno, "starting the egress proxy");
	if (pid == 0)
		proxy_main(eg, executor);
	setpgid(pid, pid);
	eg->pid = pid;
	if (eg->key) /* the proxy has its copy */
		explicit_bzero(eg->key, strlen(eg->key));
	return 0;
}

/* --- the end ---------------------------------------------------------------------------------------- */

/* One refusal into the run's list: a repeat counted in its entry; 1 when it is a new entry. */
static int count_refusal(struct egress *eg, json_t *entry)
{
	size_t i;
	json_t *old;
	json_array_foreach(eg->refused, i, old)
	{
		if (json_equal(json_object_get(old, "host"), json_object_get(entry, "host")) &&
		    json_equal(json_object_get(old, "port"), json_object_get(entry, "port")) &&
		    json_equal(json_object_get(old, "reason"), json_object_get(entry, "reason"))) {
			json_object_set_new(old, "count",
					    json_integer(json_integer_value(json_object_get(old, "count")) + 1));
			return 0;
		}
	}
	if (json_array_size(eg->refused) >= EGRESS_MAX_REPORTED) {
		eg->dropped++;
		return 0;
	}
	json_object_set_new(entry, "count", json_integer(1));
	json_array_append(eg->refused, entry);
	return 1;
}

/* What the connection processes wrote since the last call; new entries also appended to fresh (when set). */
static void drain(struct egress *eg, json_t *fresh)
{
	char buf[16384];
	ssize_t n;
	while (eg->report[0] >= 0 && (n = read(eg->report[0], buf, sizeof(buf))) > 0)
		strbuf_add(&eg->partial, buf, (size_t)n);
	char *line = eg->partial.buf, *nl;
	while ((nl = memchr(line, '\n', eg->partial.len - (size_t)(line - eg->partial.buf)))) {
		json_t *entry = json_loadb(line, (size_t)(nl - line), 0, NULL);
		if (json_is_object(entry) && count_refusal(eg, entry) && fresh)
			json_array_append(fresh, entry);
		json_decref(entry);
		line = nl + 1;
	}
	strbuf_remove_front(&eg->partial, (size_t)(line - eg->partial.buf));
}

int egress_report_fd(const struct egress *eg)
{
	return eg ? eg->report[0] : -1;
}

json_t *egress_take_new(struct egress *eg)
{
	json_t *fresh = json_array();
	drain(eg, fresh);
	size_t i;
	json_t *entry;
	json_array_foreach(fresh, i, entry) json_object_set_new(entry, "reported", json_true());
	return fresh;
}

json_t *egress_finish(struct egress *eg)
{
	if (!eg)
		return NULL;
	if (eg->pid > 0) {
		kill(-eg->pid, SIGKILL);
		int status;
		while (waitpid(eg->pid, &status, 0) < 0 && errno == EINTR)
			;
		eg->pid = 0;
	}
	drain(eg, NULL);
	if (!json_array_size(eg->refused))
		return NULL;
	return json_pack("{s:O,s:I}", "refused", eg->refused, "dropped", (json_int_t)eg->dropped);
}

void egress_free(struct egress *eg)
{
	if (!eg)
		return;
	json_decref(egress_finish(eg));
	egress_set_credential(eg, NULL, NULL);
	if (eg->listen_fd >= 0)
		close(eg->listen_fd);
	for (int i = 0; i < 2; i++)
		if (eg->report[i] >= 0)
			close(eg->report[i]);
	if (eg->dir[0]) {
		struct err ignored = ERR_INIT;
		fs_remove_tree(eg->dir, &ignored);
		err_clear(&ignored);
	}
	free(eg->socket_path);
	free(eg->provider_host);
	free(eg->ca_path);
	free(eg->bundle_path);
	json_decref(eg->refused);
	strbuf_release(&eg->partial);
	tls_config_free(eg->tls_server);
	tls_config_free(eg->tls_client);
	egress_ca_free(eg->ca);
	egress_allow_release(&eg->allow);
	free(eg);
}
