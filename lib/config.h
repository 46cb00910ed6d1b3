/* config.h — agor's settings (docs/config.md): one table of typed keys; defaults, file, env, flags.
 * Never writes config.yaml (lib/config_edit does, for `agor config set`), never keeps an unchecked value,
 * never reads a file others can write. */
#ifndef AGOR_CONFIG_H
#define AGOR_CONFIG_H

#include <stdbool.h>
#include <sys/stat.h>

#include "err.h"
#include "strbuf.h"

/*
 * The contract
 * ------------
 * Every setting is one row of the table in config.c: a dotted key
 * ("execution.executor_pool.max_executors"), a type, a built-in default (or a default derived
 * from other settings), optionally an environment variable, and the field of struct config it
 * fills. Adding a setting = adding a field below and one row to the table.
 *
 * Precedence, per setting: flag > environment > config.yaml > built-in default.
 *
 * Loading:
 *     struct config *cfg = config_new();
 *     config_set_flag(cfg, "daemon.port", "4000", &e);       // the applet's own flags, if any
 *     config_load(cfg, &(struct config_overrides){ .config_path = opt_config }, &e);
 *     ... cfg->daemon.port, cfg->execution.unix_user_mode ...
 *     config_free(cfg);
 *
 * Which file: --config (config_overrides.config_path; relative to the working directory) >
 * AGOR_CONFIG_PATH (must be absolute, `~/` expanded) > <agor_home>/config.yaml, where agor_home
 * is the flag, else AGOR_HOME, else ~/.agor ("~" is $HOME, else the passwd entry of the
 * effective uid). paths.agor_home set *inside* config.yaml moves everything else
 * (database, logs, run/) but not the file that was already read. A missing file is fine at the
 * default location and an error when named explicitly.
 *
 * The file must be a regular file owned by the effective uid or root and not writable by group
 * or others; a symlink is followed and the target is what is checked.
 *
 * Values, by type (the same rules for file, environment and flags):
 *   string    non-empty, no control characters; some keys add a check (user names follow
 *             docs/payloads.md#impersonation: ^[a-z_][a-z0-9_-]{0,31}$).
 *   path      absolute after expanding a leading "~/" (or a lone "~"); trailing slashes dropped;
 *             "~user/" is not expanded and is refused like any relative path.
 *   integer   decimal digits with an optional sign, no leading zeros (YAML 1.1 would read 010
 *             as octal), inside the key's [min, max].
 *   boolean   exactly `true` or `false`.
 *   enum      one of the key's words.
 *   nullable  a string or null (YAML: `null`, `~`, empty; environment/flag: the empty string).
 * In config.yaml, a quoted scalar is a string: `port: "3030"` is refused (integers and
 * booleans are written bare). A section (`daemon:`) may be empty or null (every key commented
 * out). Unknown keys, duplicate keys, a sequence or mapping where a scalar belongs (and the
 * reverse), more than one YAML document, or a top level that is not a mapping are errors.
 * Empty environment variables count as unset.
 *
 * Derived defaults, computed after every source is applied (so AGOR_DATA_HOME moves repos_dir
 * unless repos_dir itself is set): paths.data_home = agor_home; paths.repos_dir,
 * worktrees_dir, zellij_dir = data_home/{repos,worktrees,zellij}; daemon.socket_path =
 * agor_home/run/agor.sock; execution.worktree_rbac = (unix_user_mode == strict). In strict
 * mode an explicit `worktree_rbac: false` is an error (docs/modes.md: groups are made in strict).
 *
 * executor_command_template: placeholders are `{name}` with name of [A-Za-z0-9_]+; only those
 * of docs/payloads.md#spawning are allowed. `${...}` is shell parameter expansion, not a placeholder, and
 * braces around anything else (`{a,b}`, `{print $1}`) are left to the shell.
 * config_template_next() is the one scanner; the spawner must use it too.
 *
 * Errors (struct err, code E_CONFIG) say where the value came from, then the key:
 *   FILE:12: execution.unix_user_mode: expected one of simple|insulated|strict|sandbox, got "x"
 *   FILE:3: daemon.prot: unknown key (known: host, port, unix_user, socket_path)
 *   FILE:2: invalid YAML: did not find expected key (while parsing a block mapping that …)
 *   AGOR_DAEMON_PORT: daemon.port: expected an integer 1..65535, got "abc"
 *   daemon.port: expected an integer 1..65535, got "abc"    (config_set_flag: no origin;
 *                                                           callers prefix their flag name)
 * FILE is the absolute path of the config file. Values quoted in messages are cut to about
 * 60 bytes and escaped so that a message is always valid UTF-8. Only the first error is
 * reported.
 *
 * Execution policy
 * ----------------
 * How an executor confines what it runs is the daemon's to decide, never the execution user's:
 * the policy keys are every key under execution.sandbox. (one added to the table later is one
 * too) plus execution.fallback_to_unified, execution.timeout_ms, execution.terminal_shell, execution.privileged_socket
 * and the roots payload paths
 * are confined to, paths.repos_dir and paths.worktrees_dir (config_is_policy_key). The daemon puts its own values in
 * every payload it writes (config_execution_policy), and the executor applies them over the config it loaded as
 * whichever user it runs as (config_apply_policy). A value that user set (file, environment; built-in defaults do not
 * count) wins only where it is stricter:
 *   execution.sandbox.enabled, fail_closed   true is stricter
 *   execution.fallback_to_unified            false is stricter
 *   execution.sandbox.network                none, then proxy, then host (strictest first)
 *   execution.timeout_ms                     the smaller
 *   limits where 0 means none (memory_max_mb, pids_max, cpu_max_percent, nofile, fsize_mb and
 *   any later execution.sandbox integer named *_mb or *max*)   the smaller non-zero
 * Every other policy key (path lists, cgroup_root, cgroup_parent, keys added later) takes the
 * daemon's value. A policy is a JSON object {KEY: canonical text}: each value a string exactly
 * as config_entry_at gives it ("true", "4096", "/abs/path"), or null for a nullable key.
 */

enum config_type {
	CONFIG_STRING,
	CONFIG_PATH,
	CONFIG_INT,
	CONFIG_BOOL,
	CONFIG_ENUM,
	CONFIG_NULLABLE_STRING,
};

/* Ordered by precedence: a source overrides every source below it. */
enum config_source {
	CONFIG_SOURCE_DEFAULT,
	CONFIG_SOURCE_FILE,
	CONFIG_SOURCE_ENV,
	CONFIG_SOURCE_FLAG,
	CONFIG_SOURCE_POLICY, /* the daemon's execution policy (config_apply_policy) */
};

/* execution.unix_user_mode (docs/modes.md). */
enum config_user_mode {
	CONFIG_MODE_SIMPLE,
	CONFIG_MODE_INSULATED,
	CONFIG_MODE_STRICT,
	CONFIG_MODE_SANDBOX,
};

/* execution.sandbox.network */
enum config_sandbox_network {
	CONFIG_SANDBOX_NETWORK_NONE,  /* loopback only; an agent CLI run gets proxy instead */
	CONFIG_SANDBOX_NETWORK_PROXY, /* loopback only, and egress through agor's filtering proxy (egress.h) */
	CONFIG_SANDBOX_NETWORK_HOST,
};

struct config_state; /* private to config.c */

/*
 * The effective configuration, typed. Fields are valid after a successful config_load();
 * strings are borrowed from cfg (valid until config_free or the next config_set_flag) and
 * never NULL except nullable keys (executor_command_template, executor_daemon_*, …: NULL = unset).
 */
struct config {
	struct {
		const char *agor_home;
		const char *data_home;
		const char *repos_dir;
		const char *worktrees_dir;
		const char *zellij_dir;
	} paths;
	struct {
		const char *host;
		int port;
		const char *unix_user;
		const char *socket_path;
		const char *tls_cert; /* PEM certificate (chain) for HTTPS/WSS on the TCP listener; NULL: plain */
		const char *tls_key;  /* its private key; both or neither */
		/* Limits (docs/security.md section 9): what a port scan, a slowloris or a hostile page can take. */
		const char
			*allowed_origins;  /* browser origins served besides the daemon's own (origin.h); NULL: none */
		long long max_connections; /* open TCP connections */
		long long max_connections_per_ip; /* TCP connections from one address (IPv6: one /64); 0: no cap */
		long long max_unauthenticated;	  /* TCP connections that presented no credential yet; 0: no cap */
		long long auth_timeout_ms;	  /* such a connection completing no request for this long is closed */
		long long fd_reserve;		  /* descriptors TCP connections never take (Unix socket, executors) */
		long long audit_refusals_window_ms; /* a refused call's repeats in this window become one counted row */
		long long audit_refusals_max;	/* kinds of refusal audited one row each per window; the rest counted */
		long long wal_max_mb;		/* past this the WAL is checkpointed and truncated */
		long long db_size_alarm_mb;	/* past this the database size is logged and flagged; 0: never */
		long long node_pair_per_minute; /* node.pair calls per address and minute */
		long long node_pair_pending_per_ip; /* pending pairing requests per address */
	} daemon;
	struct {
		enum config_user_mode unix_user_mode;
		const char *executor_unix_user;
		const char *executor_command_template;
		/* the root `agor admin serve` socket for admin operations and executors as other users; NULL: sudo */
		const char *privileged_socket;
		/* Remote executors: where they call back (wss:// or https://; NULL: the Unix socket) and how they
		 * verify the daemon's certificate (a CA file whose PEM the payload carries, and/or its SHA-256) */
		const char *executor_daemon_url, *executor_daemon_ca_file, *executor_daemon_fingerprint;
		long long executor_heartbeat_ms; /* a remote prompt's heartbeat; 3 missed: the link is lost */
		bool worktree_rbac;
		bool fallback_to_unified;
		const char *terminal_shell; /* NULL: the passwd shell when it is a login shell, else bash, else sh */
		struct {
			const char *known_hosts; /* the operator's known_hosts file, read by the daemon; NULL: no ssh */
		} git;
		struct {
			int max_executors;
			long long idle_timeout_ms;
		} executor_pool;
		struct {
			long long expiration_ms;
		} session_tokens;
		long long timeout_ms;
		long long permission_timeout_ms; /* an unanswered permission request is denied after this */
		/* exec.run env names nodes and the gateway pass (exec_env.h): ':'-separated, a trailing '*' a prefix;
		 * NULL: none */
		const char *exec_env_allow;
		struct {
			bool enabled;		  /* sandbox what the executor starts (agent CLIs, exec.run) */
			bool fail_closed;	  /* a missing Landlock/seccomp refuses the run */
			int network;		  /* enum config_sandbox_network */
			const char *egress_allow; /* proxy mode: hosts reachable besides the provider (egress.h); NULL:
						     none */
			const char *upstream_ca_file; /* proxy, https provider: verifies it; NULL: the system bundle */
			const char *home_expose;     /* ':'-separated paths relative to the user's home, bound read-only
						      * into the private home of exec.run and terminal runs; NULL: none */
			const char *read_only_paths; /* ':'-separated; NULL: none */
			const char *read_write_paths; /* ':'-separated; NULL: none */
			long long memory_max_mb, pids_max, cpu_max_percent, nofile, fsize_mb; /* 0: no limit */
			long long disk_max_mb;	   /* a run's write budget (storage, and each private tmpfs); 0: none */
			const char *cgroup_root;   /* where the cgroup hierarchies are mounted */
			const char *cgroup_parent; /* the group under which each run gets its own */
			long long root_maps_to;	   /* a root executor's runs are this uid and gid inside (never 0) */
		} sandbox;
	} execution;

	struct {
		/* Per agent CLI: the program (NULL: its usual name in PATH), the provider endpoint handed to
		 * it (NULL: the CLI's default) and the model (NULL: the CLI's default). */
		struct config_agent {
			const char *command, *base_url, *model;
		} claude_code, codex, gemini, opencode;
	} agents;

	const char *config_file; /* the file read, or that would be read (absolute) */
	bool config_file_found;	 /* false: it did not exist (only allowed at the default location) */

	struct config_state *state;
};

/* What config_load takes besides flags. Every member may be NULL. */
struct config_overrides {
	const char *config_path; /* --config: this file, which must exist */
	char *const *env;	 /* "NAME=value" strings to read instead of the process environment */
};

/* One setting as config_entry_at() describes it. */
struct config_entry {
	const char *key;
	enum config_type type;
	const char *value; /* canonical text ("3030", "true", "/abs/path"); NULL when null */
	enum config_source source;
	const char *env;  /* the environment variable this key reads, or NULL */
	const char *file; /* source == FILE: the file */
	int line;	  /* source == FILE: the 1-based line of the key */
};

struct config *config_new(void);
void config_free(struct config *cfg);

/* Sets key from the command line (source flag), parsing value by the key's type. Call before
 * config_load (flags for paths.agor_home decide where config.yaml is); calling it after a load
 * also works and recomputes derived defaults. -1 on an unknown key or a bad value. */
int config_set_flag(struct config *cfg, const char *key, const char *value, struct err *e);
/* The same for "KEY=VALUE" (the --set form). */
int config_set_flag_assignment(struct config *cfg, const char *assignment, struct err *e);

/* Applies the environment and the config file under the flags already set, derives the
 * remaining defaults and fills the typed fields. On -1 the typed fields are unspecified. */
int config_load(struct config *cfg, const struct config_overrides *ov, struct err *e);
/* The config file config_load chose (absolute), also after it failed to read or apply it; NULL
 * when even choosing failed. `agor config set` edits this file. */
const char *config_chosen_file(const struct config *cfg);

/* Typed access by key, for code that iterates keys; the rest should read the struct.
 * Asking for an unknown key or the wrong type is a programming error: it aborts. */
const char *config_str(const struct config *cfg, const char *key); /* string, path, enum, nullable */
long long config_int(const struct config *cfg, const char *key);
bool config_bool(const struct config *cfg, const char *key);

/* Iteration in table order: 0 and *out filled for i < count, -1 past the end. */
size_t config_count(void);
int config_entry_at(const struct config *cfg, size_t i, struct config_entry *out);
/* The entry of key; -1 when key is not a setting. */
int config_entry_get(const struct config *cfg, const char *key, struct config_entry *out);

const char *config_source_name(enum config_source source); /* default | file | env | flag | policy */
const char *config_user_mode_name(enum config_user_mode mode);

/* `agor config show`: one aligned line per setting, `key  value  (source[, file:line])`, after
 * a `# config file: …` line. */
void config_format_text(const struct config *cfg, struct strbuf *out);
/* `agor config show --json`: {"settings":[{"key","value","source","env"?,"file"?,"line"?}…],
 * "configFile": path, "configFileFound": bool}; values typed (numbers, booleans, null). */
json_t *config_to_json(const struct config *cfg);
/* One setting as config_to_json lists it ({key, value, source, env?, file?, line?}); NULL for an
 * unknown key. `agor config get --json` and the daemon's config.get {key} answer with it. */
json_t *config_entry_to_json(const struct config *cfg, const char *key);

/* True when key is a setting of the execution policy (see "Execution policy" above). */
int config_is_policy_key(const char *key);
/* The policy object of cfg's effective values (a new reference): what the daemon puts in payloads. */
json_t *config_execution_policy(const struct config *cfg);
/* Checks a policy object: every member a policy key with its canonical text (null only for a
 * nullable key). -1 with E_INVALID_PAYLOAD, details {"path":"policy.KEY","reason":…}, and the
 * message "policy.KEY: reason". */
int config_policy_check(const json_t *policy, struct err *e);
/* After config_load: each policy key gets the policy's value (its built-in default when the policy
 * leaves it out) unless the value loaded from the file or environment is stricter; applied values
 * have source "policy". The
 * policy is checked first (config_policy_check). A later config_load forgets it. */
int config_apply_policy(struct config *cfg, const json_t *policy, struct err *e);

/* Refuses a config file that others could have written: not a regular file, owned by someone
 * other than the effective uid or root, or writable by group/others. The message names the fix. */
int config_check_file_security(const struct stat *st, const char *path, struct err *e);

/* Template placeholders (docs/payloads.md#spawning). Finds the next `{name}` at or after s (skipping
 * `${…}`): returns a pointer to its '{' and sets *name and *name_len, or NULL when none is left. */
const char *config_template_next(const char *s, const char **name, size_t *name_len);
/* True when name[0..len) is one of the placeholders docs/payloads.md#spawning allows. */
bool config_template_placeholder_known(const char *name, size_t len);

#endif
