/* approvals.c — `agor approvals`: the exec-approval policy's command line (logic in lib/approvals_*).
 * Never runs a command the policy has not allowed, never runs one through a shell it built. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "applet.h"
#include "client.h"
#include "approvals_exec.h"
#include "approvals_policy.h"
#include "approvals_programs.h"
#include "approvals_socket.h"
#include "approvals_store.h"
#include "config.h"
#include "json.h"
#include "strbuf.h"
#include "banned.h"

extern const struct applet applet_approvals;

#define APPROVALS_USAGE                                                                                                \
	"Usage: agor approvals get [--json]\n"                                                                         \
	"       agor approvals set [--agent ID] [--expect-hash H] [--security S] [--ask A]\n"                          \
	"                          [--ask-fallback S] [--unset FIELD]…\n"                                            \
	"       agor approvals allowlist add [--agent ID] [--expect-hash H] PATTERN…\n"                              \
	"       agor approvals allowlist rm [--agent ID] [--expect-hash H] ID|PATTERN…\n"                            \
	"       agor approvals allowlist list [--agent ID] [--json]\n"                                                 \
	"       agor approvals check [--json] [REQUEST OPTIONS] -- ARGV…\n"                                          \
	"       agor approvals exec [REQUEST OPTIONS] [--timeout SEC] [--ask-timeout SEC]\n"                           \
	"                           [--events FD] [--ask-stdin] -- ARGV…\n"                                          \
	"       agor approvals serve\n"                                                                                \
	"\n"                                                                                                           \
	"The policy lives in $AGOR_HOME/exec-approvals.json (0600). security: deny|allowlist|full;\n"                  \
	"ask: off|on-miss|always; askFallback: deny|allowlist|full. Built-in defaults: deny,\n"                        \
	"on-miss, deny. Without --agent, set edits the defaults and allowlist uses agent \"*\"\n"                      \
	"(every agent); check and exec ask for agent \"default\".\n"                                                   \
	"\n"                                                                                                           \
	"REQUEST OPTIONS (they can only tighten the file's policy):\n"                                                 \
	"  --agent ID  --security S  --ask A  --ask-fallback S\n"                                                      \
	"\n"                                                                                                           \
	"Patterns match the resolved, canonical executable: ** any characters, * and ? never\n"                        \
	"cross '/', ~/ is the account's home (from passwd, not $HOME), anchored, case-sensitive;\n"                    \
	"they must start with / or ~/. A pattern with a space is an argv pattern: the path glob,\n"                    \
	"then one glob per argument ('\\ ' a space), a final * any further arguments\n"                                \
	"(`/usr/bin/git status *`). Programs that run code (git -c/--upload-pack, find -exec,\n"                       \
	"make, python -c, … see docs/approvals.md) need an argv pattern for those options.\n"                        \
	"exec runs argv[0] by the descriptor it checked, shell text with every command word\n"                         \
	"replaced by its canonical path, and PATH fixed at check time; an empty or relative\n"                         \
	"PATH entry is refused.\n"                                                                                     \
	"\n"                                                                                                           \
	"check prints the decision and reason (--json: {decision,reason,resolvedPaths,matched})\n"                     \
	"and exits 0 allow, 1 deny, 3 ask. exec runs ARGV under the policy (asking the UI of\n"                        \
	"`approvals serve` when approval is needed; no UI or no answer → askFallback), prints\n"                     \
	"its output (at most 200000 bytes) and writes JSON events (exec.started, exec.finished,\n"                     \
	"exec.denied) to stderr or FD. exec exits with the command's status, 126 when denied,\n"                       \
	"127 when the command is not found. serve shows each request on this terminal and\n"                           \
	"reads o (allow once), a (allow always), d (deny) followed by Enter.\n"                                        \
	"--ask-stdin (the node runner): an ask is an exec.ask event {argv, argvSha256, …} and the\n"                 \
	"answer one line on stdin {decision: approved|denied|unanswered, argvSha256}; approved\n"                      \
	"counts only with this argv's hash; unanswered (or none in --ask-timeout) → askFallback.\n"                  \
	"Exit status: 0 ok, 1 failed, 2 usage, 75 the file changed or is busy (retry).\n"

enum { EXIT_DENIED = 126, EXIT_NOT_FOUND = 127, EXIT_RETRY = 75 };

struct opts {
	const char *agent;
	const char *expect_hash;
	struct appr_levels req;
	struct strvec unset;
	int json;
	int timeout_s;
	int ask_timeout_s;
	int events_fd;
	int ask_stdin;
	char **rest; /* positional arguments / ARGV after -- */
	int nrest;
};

static int fail_err(const char *what, const struct err *e)
{
	fprintf(stderr, "agor approvals %s: %s\n", what, e->message);
	return appr_err_is_retry(e) ? EXIT_RETRY : EXIT_FAILED;
}

static int parse_level(const char *flag, const char *v, int security, int *out)
{
	int l = security ? appr_security_parse(v) : appr_ask_parse(v);
	if (l < 0)
		return applet_usage_error(&applet_approvals, "%s: \"%s\" is not one of %s", flag, v,
					  security ? "deny|allowlist|full" : "off|on-miss|always");
	*out = l;
	return 0;
}

static int parse_seconds(const char *flag, const char *v, int *out)
{
	char *end;
	long n = strtol(v, &end, 10);
	if (!*v || *end || n < 0 || n > 86400)
		return applet_usage_error(&applet_approvals, "%s: \"%s\" is not a number of seconds", flag, v);
	*out = (int)n;
	return 0;
}

#define AGENT_FLAG                                                                                                     \
	{                                                                                                              \
		"--agent", "agent", CLIENT_FLAG_STRING, "the agent whose policy (default: * to edit, default to ask)", \
			"AGENT"                                                                                        \
	}
#define HASH_FLAG                                                                                                      \
	{                                                                                                              \
		"--expect-hash", "expect_hash", CLIENT_FLAG_STRING,                                                    \
			"refuse (exit 75) unless the file still has this hash", "HASH"                                 \
	}
#define JSON_FLAG                                                                                                      \
	{                                                                                                              \
		"--json", "json", CLIENT_FLAG_BOOL, "print the answer as JSON"                                         \
	}
#define LEVEL_FLAGS                                                                                                    \
	{ "--security", "security", CLIENT_FLAG_STRING, "deny, allowlist or full", "LEVEL" },                          \
		{ "--ask", "ask", CLIENT_FLAG_STRING, "off, on-miss or always", "WHEN" },                              \
	{                                                                                                              \
		"--ask-fallback", "ask_fallback", CLIENT_FLAG_STRING, "deny, allowlist or full: when nobody answers",  \
			"LEVEL"                                                                                        \
	}

static const struct client_flag get_flags[] = { JSON_FLAG, { NULL } };
static const struct client_flag set_flags[] = {
	AGENT_FLAG,
	HASH_FLAG,
	LEVEL_FLAGS,
	JSON_FLAG,
	{ "--unset", "unset", CLIENT_FLAG_LIST, "security, ask or askFallback: back to the default", "KEY" },
	{ NULL },
};
static const struct client_flag edit_flags[] = { AGENT_FLAG, HASH_FLAG, JSON_FLAG, { NULL } };
static const struct client_flag list_flags[] = { AGENT_FLAG, JSON_FLAG, { NULL } };
static const struct client_flag check_flags[] = { AGENT_FLAG, LEVEL_FLAGS, JSON_FLAG, { NULL } };
static const struct client_flag exec_flags[] = {
	AGENT_FLAG,
	LEVEL_FLAGS,
	JSON_FLAG,
	{ "--timeout", "timeout", CLIENT_FLAG_STRING, "stop the command after SEC seconds", "SEC" },
	{ "--ask-timeout", "ask_timeout", CLIENT_FLAG_STRING, "wait SEC seconds for an answer", "SEC" },
	{ "--events", "events", CLIENT_FLAG_STRING, "write the JSON events to this descriptor (default stderr)", "FD" },
	{ "--ask-stdin", "ask_stdin", CLIENT_FLAG_BOOL, "ask as an exec.ask event, the answer a line on stdin" },
	{ NULL },
};

static const struct client_command commands[] = {
	{ "get", NULL, NULL, get_flags, "[--json]", .local = 1, .example = "agor approvals get --json" },
	{ "set", NULL, NULL, set_flags, "[--agent ID] [--expect-hash H] [--security S] [--ask A] [--ask-fallback S]",
	  .local = 1, .example = "agor approvals set --security allowlist --ask on-miss" },
	{ "allowlist add", NULL, NULL, edit_flags, "[--agent ID] [--expect-hash H] PATTERN…", .rest = "patterns",
	  .rest_at_word = 1, .local = 1, .example = "agor approvals allowlist add '/usr/bin/git status *'" },
	{ "allowlist rm", NULL, NULL, edit_flags, "[--agent ID] [--expect-hash H] ID|PATTERN…", .rest = "patterns",
	  .rest_at_word = 1, .local = 1, .example = "agor approvals allowlist rm /usr/bin/make" },
	{ "allowlist list", NULL, NULL, list_flags, "[--agent ID] [--json]", .local = 1,
	  .example = "agor approvals allowlist list --json" },
	{ "check", NULL, NULL, check_flags, "[--json] [--agent ID] [--security S] [--ask A] -- ARGV…", .rest = "argv",
	  .rest_at_word = 1, .local = 1, .example = "agor approvals check --json -- /usr/bin/git status" },
	{ "exec", NULL, NULL, exec_flags, "[--agent ID] [--timeout SEC] [--ask-timeout SEC] [--events FD] -- ARGV…",
	  .rest = "argv", .rest_at_word = 1, .local = 1,
	  .example = "agor approvals exec --timeout 60 -- /usr/bin/make test" },
	{ "serve", NULL, NULL, NULL, "", .local = 1, .example = "agor approvals serve" },
};

/* The level flag's value into *out (unset when absent); 0 or EXIT_USAGE. */
static int take_level(json_t *params, const char *key, const char *flag, int security, int *out)
{
	const char *v = json_get_str(params, key);
	return v ? parse_level(flag, v, security, out) : 0;
}

static int take_seconds(json_t *params, const char *key, const char *flag, int *out)
{
	const char *v = json_get_str(params, key);
	return v ? parse_seconds(flag, v, out) : 0;
}

/* The parsed flags into o, each checked; 0 or EXIT_USAGE. */
static int opts_from_params(json_t *params, struct opts *o)
{
	o->json = json_is_true(json_object_get(params, "json"));
	o->ask_stdin = json_is_true(json_object_get(params, "ask_stdin"));
	o->expect_hash = json_get_str(params, "expect_hash");
	if ((o->agent = json_get_str(params, "agent"))) {
		_cleanup_err_ struct err e = ERR_INIT;
		if (appr_agent_id_check(o->agent, &e) < 0)
			return applet_usage_error(&applet_approvals, "--agent: %s", e.message);
	}
	int rc = take_level(params, "security", "--security", 1, &o->req.security);
	if (!rc)
		rc = take_level(params, "ask", "--ask", 0, &o->req.ask);
	if (!rc)
		rc = take_level(params, "ask_fallback", "--ask-fallback", 1, &o->req.ask_fallback);
	if (!rc)
		rc = take_seconds(params, "timeout", "--timeout", &o->timeout_s);
	if (!rc)
		rc = take_seconds(params, "ask_timeout", "--ask-timeout", &o->ask_timeout_s);
	if (rc)
		return rc;
	const char *events = json_get_str(params, "events");
	if (events) {
		char *end;
		long fd = strtol(events, &end, 10);
		if (!*events || *end || fd < 1 || fd > 1024)
			return applet_usage_error(&applet_approvals, "--events: bad descriptor %s", events);
		o->events_fd = (int)fd;
	}
	json_t *v;
	size_t i;
	json_array_foreach(json_object_get(params, "unset"), i, v)
	{
		const char *field = json_string_value(v);
		if (strcmp(field, "security") && strcmp(field, "ask") && strcmp(field, "askFallback"))
			return applet_usage_error(&applet_approvals, "--unset: %s is not security|ask|askFallback",
						  field);
		strvec_push(&o->unset, field);
	}
	json_t *rest =
		json_object_get(params, "argv") ? json_object_get(params, "argv") : json_object_get(params, "patterns");
	o->nrest = (int)json_array_size(rest);
	o->rest = xcalloc((size_t)o->nrest + 1, sizeof(*o->rest));
	json_array_foreach(rest, i, v) o->rest[i] = (char *)json_string_value(v);
	return 0;
}

static int load_store(struct appr_store *s, struct err *e)
{
	struct config *cfg = config_new();
	int rc = config_load(cfg, NULL, e);
	if (rc == 0)
		rc = appr_store_load(s, config_str(cfg, "paths.agor_home"), e);
	config_free(cfg);
	return rc;
}

static void print_json(const json_t *j, int compact)
{
	char *s = json_dumps(j, compact ? JSON_COMPACT : JSON_INDENT(2));
	if (s)
		printf("%s\n", s);
	free(s);
}

/* ---- get / set / allowlist ------------------------------------------------------------------- */

/* "security allowlist, ask always" from an object of levels; "" when it sets none. */
static void print_levels(const json_t *levels)
{
	static const char *const fields[] = { "security", "ask", "askFallback" };
	const char *sep = "";
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if (json_get_str(levels, fields[i])) {
			printf("%s%s %s", sep, fields[i], json_get_str(levels, fields[i]));
			sep = ", ";
		}
}

/* The policy file for a person: where it is, its hash, the effective defaults, each agent's own settings. */
static void print_policy(const json_t *out)
{
	printf("file      %s\nhash      %s\ndefaults  ", json_get_str(out, "path"), json_get_str(out, "hash"));
	print_levels(json_object_get(out, "effectiveDefaults"));
	printf(" (effective)\n");
	const char *agent;
	json_t *a, *entry;
	json_object_foreach(json_object_get(json_object_get(out, "approvals"), "agents"), agent, a)
	{
		printf("agent %s  ", agent);
		print_levels(a);
		printf("%s%zu allowlist entr%s\n",
		       json_get_str(a, "security") || json_get_str(a, "ask") || json_get_str(a, "askFallback") ? ", "
													       : "",
		       json_array_size(json_object_get(a, "allowlist")),
		       json_array_size(json_object_get(a, "allowlist")) == 1 ? "y" : "ies");
		size_t i;
		json_array_foreach(json_object_get(a, "allowlist"), i, entry)
			printf("  %s  %s\n", json_get_str(entry, "id"), json_get_str(entry, "pattern"));
	}
}

static int cmd_get(struct appr_store *s, struct opts *o)
{
	struct appr_levels d;
	appr_store_defaults(s->root, &d);
	json_t *out =
		json_pack("{s:s,s:s,s:o,s:{s:s,s:s,s:s}}", "path", s->path, "hash", s->hash, "approvals",
			  appr_store_redacted(s->root), "effectiveDefaults", "security", appr_security_name(d.security),
			  "ask", appr_ask_name(d.ask), "askFallback", appr_security_name(d.ask_fallback));
	if (o->json)
		print_json(out, 1);
	else
		print_policy(out);
	json_decref(out);
	return EXIT_OK;
}

static int set_mutator(json_t *root, void *arg, struct err *e)
{
	struct opts *o = arg;
	static const char *const fields[] = { "security", "ask", "askFallback" };
	const int *values[] = { &o->req.security, &o->req.ask, &o->req.ask_fallback };
	for (size_t i = 0; i < 3; i++) {
		if (*values[i] == APPR_UNSET)
			continue;
		const char *v = i == 1 ? appr_ask_name(*values[i]) : appr_security_name(*values[i]);
		if (appr_store_set_level(root, o->agent, fields[i], v, e) < 0)
			return -1;
	}
	for (size_t i = 0; i < o->unset.nr; i++)
		if (appr_store_set_level(root, o->agent, o->unset.v[i], NULL, e) < 0)
			return -1;
	return 0;
}

static int cmd_set(struct appr_store *s, struct opts *o)
{
	if (o->nrest)
		return applet_usage_error(&applet_approvals, "set: unexpected argument %s", o->rest[0]);
	if (o->req.security == APPR_UNSET && o->req.ask == APPR_UNSET && o->req.ask_fallback == APPR_UNSET &&
	    o->unset.nr == 0)
		return applet_usage_error(&applet_approvals,
					  "set: nothing to set (--security, --ask, --ask-fallback, --unset)");
	_cleanup_err_ struct err e = ERR_INIT;
	if (appr_store_update(s, o->expect_hash, set_mutator, o, &e) < 0)
		return fail_err("set", &e);
	if (o->json) {
		json_t *out = json_pack("{s:s,s:s}", "path", s->path, "hash", s->hash);
		print_json(out, 1);
		json_decref(out);
	} else {
		printf("saved %s (hash %s: give it to --expect-hash)\n", s->path, s->hash);
	}
	return EXIT_OK;
}

struct list_edit {
	struct opts *o;
	int add;
	json_t *added; /* [{id, pattern}] */
};

static int allowlist_mutator(json_t *root, void *arg, struct err *e)
{
	struct list_edit *l = arg;
	const char *agent = l->o->agent ? l->o->agent : "*";
	json_array_clear(l->added);
	for (int i = 0; i < l->o->nrest; i++) {
		char *id = NULL;
		int rc = l->add ? appr_store_allowlist_add(root, agent, l->o->rest[i], &id, e)
				: appr_store_allowlist_remove(root, agent, l->o->rest[i], e);
		if (rc < 0) {
			err_prefix(e, "%s", l->o->rest[i]);
			return -1;
		}
		if (id)
			json_array_append_new(l->added, json_pack("{s:s,s:s}", "id", id, "pattern", l->o->rest[i]));
		free(id);
	}
	return 0;
}

/* What allowlist add added: [{id, pattern}] with --json, else "added PATTERN as ID" lines. */
static void print_added(const json_t *added, int json)
{
	size_t i;
	json_t *row;
	if (json)
		print_json(added, 1);
	else
		json_array_foreach(added, i, row)
			printf("added %s as %s\n", json_get_str(row, "pattern"), json_get_str(row, "id"));
}

static int cmd_allowlist_list(struct appr_store *s, struct opts *o)
{
	json_t *agents = json_object_get(s->root, "agents");
	json_t *out = json_array();
	const char *id;
	json_t *agent;
	json_object_foreach(agents, id, agent)
	{
		if (o->agent && strcmp(o->agent, id))
			continue;
		size_t i;
		json_t *entry;
		json_array_foreach(json_object_get(agent, "allowlist"), i, entry)
		{
			json_t *row = json_deep_copy(entry);
			json_object_set_new(row, "agent", json_string(id));
			json_array_append_new(out, row);
		}
	}
	if (o->json) {
		print_json(out, 1);
	} else {
		size_t i;
		json_t *row;
		json_array_foreach(out, i, row) printf("%s\t%s\t%s\n", json_get_str(row, "agent"),
						       json_get_str(row, "id"), json_get_str(row, "pattern"));
	}
	json_decref(out);
	return EXIT_OK;
}

static int cmd_allowlist(struct appr_store *s, const char *sub, struct opts *o)
{
	int rc = 0;
	if (!strcmp(sub, "list"))
		return cmd_allowlist_list(s, o);
	struct list_edit l = { .o = o, .add = !strcmp(sub, "add"), .added = json_array() };
	_cleanup_err_ struct err e = ERR_INIT;
	if (o->nrest == 0)
		rc = applet_usage_error(&applet_approvals, "allowlist %s: no pattern", sub);
	else if (appr_store_update(s, o->expect_hash, allowlist_mutator, &l, &e) < 0)
		rc = fail_err(l.add ? "allowlist add" : "allowlist rm", &e);
	if (rc == 0 && l.add)
		print_added(l.added, o->json);
	json_decref(l.added);
	return rc;
}

/* ---- check / exec ---------------------------------------------------------------------------- */

/* A JSON string of s that never fails: invalid UTF-8 bytes become U+FFFD. */
static json_t *text_json(const char *s)
{
	return json_string_lossy(s, strlen(s));
}

static json_t *argv_json(char *const *argv)
{
	json_t *a = json_array();
	for (size_t i = 0; argv[i]; i++)
		json_array_append_new(a, text_json(argv[i]));
	return a;
}

/* Why each inner command runs code of its own (approvals_programs.h), if any does. */
static json_t *code_json(const struct appr_analysis *a)
{
	json_t *out = json_array();
	for (size_t i = 0; i < a->nr; i++)
		if (a->cmds[i].code)
			json_array_append_new(out, text_json(a->cmds[i].code));
	return out;
}

struct evaluation {
	struct appr_effective eff;
	struct appr_analysis analysis;
	struct appr_verdict verdict;
	char *cwd;
	const char *agent;
};

static int evaluate(struct appr_store *s, struct opts *o, struct evaluation *ev)
{
	ev->agent = o->agent ? o->agent : "default";
	ev->cwd = getcwd(NULL, 0);
	if (!ev->cwd) {
		fprintf(stderr, "agor approvals: cannot determine the current directory: %s\n", strerror(errno));
		return -1;
	}
	struct appr_levels agent, star, defaults;
	appr_store_levels(s->root, ev->agent, &agent);
	appr_store_levels(s->root, "*", &star);
	appr_store_defaults(s->root, &defaults);
	appr_policy_resolve(&o->req, &agent, &star, &defaults, &ev->eff);
	appr_analyze((const char *const *)o->rest, ev->cwd, getenv("PATH"), &ev->analysis);
	struct strvec patterns = STRVEC_INIT;
	appr_store_patterns(s->root, ev->agent, &patterns);
	/* ~ in patterns is the account's home from the password database, never $HOME, which the
	 * command's caller controls. */
	struct passwd *pw = getpwuid(geteuid());
	appr_decide(&ev->eff, &ev->analysis, (const char *const *)patterns.v, patterns.nr, pw ? pw->pw_dir : NULL,
		    &ev->verdict);
	strvec_clear(&patterns);
	return 0;
}

/* Why an executable-only allowlist entry did not cover a command (it runs code of its own), or NULL. */
static const char *code_detail(const struct evaluation *ev)
{
	for (size_t i = 0; i < ev->analysis.nr; i++)
		if (ev->analysis.cmds[i].code)
			return ev->analysis.cmds[i].code;
	return NULL;
}

static void evaluation_release(struct evaluation *ev)
{
	appr_analysis_release(&ev->analysis);
	appr_verdict_release(&ev->verdict);
	free(ev->cwd);
}

static int cmd_check(struct appr_store *s, struct opts *o)
{
	if (o->nrest == 0)
		return applet_usage_error(&applet_approvals, "check: no command (check -- ARGV…)");
	struct evaluation ev = { 0 };
	if (evaluate(s, o, &ev) < 0)
		return EXIT_FAILED;
	const struct appr_verdict *v = &ev.verdict;
	if (o->json) {
		json_t *out = json_pack(
			"{s:s,s:s,s:o,s:o,s:{s:s,s:s,s:s},s:b}", "decision", appr_decision_name(v->decision), "reason",
			v->reason, "resolvedPaths", argv_json(v->resolved.v), "matched", argv_json(v->matched.v),
			"effective", "security", appr_security_name(ev.eff.security), "ask", appr_ask_name(ev.eff.ask),
			"askFallback", appr_security_name(ev.eff.ask_fallback), "allowlistable", ev.analysis.ok);
		if (!ev.analysis.ok && ev.analysis.reason)
			json_object_set_new(out, "detail", text_json(ev.analysis.reason));
		json_object_set_new(out, "executables", appr_executables_json(&ev.analysis));
		json_object_set_new(out, "codeRunning", code_json(&ev.analysis));
		print_json(out, 1);
		json_decref(out);
	} else {
		printf("%s: %s\n", appr_decision_name(v->decision), v->reason);
		for (size_t i = 0; i < v->resolved.nr; i++)
			printf("  resolved: %s\n", v->resolved.v[i]);
		for (size_t i = 0; i < v->matched.nr; i++)
			printf("  matched:  %s\n", v->matched.v[i]);
		for (size_t i = 0; i < ev.analysis.nr; i++)
			if (ev.analysis.cmds[i].code)
				printf("  runs code: %s (%s)\n", ev.analysis.cmds[i].code,
				       ev.analysis.cmds[i].code_config ? "no allowlist entry allows it"
								       : "an executable-only entry does not allow it");
		if (!ev.analysis.ok && ev.analysis.reason)
			printf("  not allowlistable: %s\n", ev.analysis.reason);
	}
	int rc = (int)v->decision;
	evaluation_release(&ev);
	return rc;
}

static void emit(int fd, json_t *event)
{
	if (json_write_line(fd, event) < 0)
		fprintf(stderr, "agor approvals exec: cannot write an event: %s\n", strerror(errno));
	json_decref(event);
}

static int deny(int fd, const char *reason, const char *detail)
{
	emit(fd, json_pack("{s:s,s:s,s:o?}", "type", "exec.denied", "reason", reason, "detail",
			   detail ? text_json(detail) : NULL));
	fprintf(stderr, "agor approvals exec: denied (%s)%s%s\n", reason, detail ? ": " : "", detail ? detail : "");
	return EXIT_DENIED;
}

/* Asks the UI; returns the final decision and sets *reason / *detail for a denial. */
static enum appr_decision ask_ui(struct appr_store *s, struct opts *o, struct evaluation *ev, const char **reason,
				 char **detail)
{
	const char *path = appr_store_socket_path(s->root), *token = appr_store_token(s->root);
	_cleanup_json_ json_t *exes = appr_executables_json(&ev->analysis), *always = json_array();
	struct strvec patterns = STRVEC_INIT;
	_cleanup_err_ struct err why_not = ERR_INIT;
	if (appr_allow_always_patterns(&ev->analysis, &patterns, &why_not) == 0)
		for (size_t i = 0; i < patterns.nr; i++)
			json_array_append_new(always, text_json(patterns.v[i]));
	strvec_clear(&patterns);
	struct appr_ask_request r = { (const char *const *)o->rest,
				      ev->cwd,
				      ev->agent,
				      ev->analysis.top_resolved,
				      exes,
				      always,
				      err_is_set(&why_not) ? why_not.message : NULL };
	enum appr_answer answer;
	_cleanup_err_ struct err e = ERR_INIT;
	int timeout_ms = (o->ask_timeout_s ? o->ask_timeout_s : 120) * 1000;
	if (!path || !token)
		err_set(&e, E_NOT_FOUND, "no approval socket configured (run `agor approvals serve`)");
	else if (appr_ask(path, token, &r, timeout_ms, &answer, &e) == 0) {
		if (answer != APPR_ANSWER_DENY)
			return APPR_ALLOW;
		*reason = "approval-required";
		*detail = xstrdup("denied by the user");
		return APPR_DENY;
	}
	enum appr_decision d = appr_fallback(&ev->eff, &ev->verdict, reason);
	if (!strcmp(e.code, E_TIMEOUT))
		*reason = "approval-timeout";
	*detail = xasprintf("%s; askFallback=%s", e.message, appr_security_name(ev->eff.ask_fallback));
	if (d == APPR_ALLOW)
		fprintf(stderr, "agor approvals exec: %s: allowed by askFallback\n", *detail);
	return d;
}

/* One line from stdin within timeout_ms (0 when none came). */
static int read_answer_line(int timeout_ms, struct strbuf *line)
{
	long long deadline = (long long)timeout_ms;
	while (deadline > 0 && !memchr(line->buf ? line->buf : "", '\n', line->len)) {
		struct pollfd pfd = { .fd = 0, .events = POLLIN };
		int n = poll(&pfd, 1, 100);
		deadline -= 100;
		if (n < 0 && errno != EINTR)
			return 0;
		if (n <= 0)
			continue;
		char buf[4096];
		ssize_t got = read(0, buf, sizeof(buf));
		if (got <= 0)
			return 0;
		strbuf_add(line, buf, (size_t)got);
		if (line->len > 65536)
			return 0;
	}
	return memchr(line->buf ? line->buf : "", '\n', line->len) != NULL;
}

/* Asks whoever runs this exec (the node runner → its gateway) over the events and stdin (--ask-stdin). */
static enum appr_decision ask_stdin(struct opts *o, struct evaluation *ev, int events, const char **reason,
				    char **detail)
{
	json_t *argv = argv_json(o->rest);
	char hash[CRYPTO_SHA256_HEX_LEN + 1];
	appr_argv_sha256(argv, hash);
	emit(events, json_pack("{s:s,s:o,s:s,s:s,s:s?,s:s,s:o}", "type", "exec.ask", "argv", argv, "argvSha256", hash,
			       "cwd", ev->cwd, "resolvedPath", ev->analysis.top_resolved, "agentId", ev->agent,
			       "executables", appr_executables_json(&ev->analysis)));
	struct strbuf line = STRBUF_INIT;
	int got = read_answer_line((o->ask_timeout_s ? o->ask_timeout_s : 120) * 1000, &line);
	json_t *answer = got ? json_loadb(line.buf, line.len, 0, NULL) : NULL;
	strbuf_release(&line);
	const char *decision = answer ? json_get_str(answer, "decision") : NULL;
	const char *theirs = answer ? json_get_str(answer, "argvSha256") : NULL;
	const char *why = answer ? json_get_str(answer, "reason") : NULL;
	enum appr_decision d;
	if (decision && !strcmp(decision, "approved") && theirs && !strcmp(theirs, hash)) {
		d = APPR_ALLOW;
	} else if (decision && !strcmp(decision, "denied")) {
		*reason = "approval-denied";
		*detail = xstrdup(why ? why : "denied on the gateway");
		d = APPR_DENY;
	} else {
		d = appr_fallback(&ev->eff, &ev->verdict, reason);
		*detail = xasprintf("%s; askFallback=%s", why ? why : "no answer from the gateway",
				    appr_security_name(ev->eff.ask_fallback));
	}
	if (answer)
		json_decref(answer);
	return d;
}

static int touch_mutator(json_t *root, void *arg, struct err *e)
{
	struct evaluation *ev = arg;
	(void)e;
	for (size_t i = 0; i < ev->verdict.matched.nr && i < ev->analysis.nr; i++) {
		struct strbuf cmd = STRBUF_INIT;
		json_t *argv = json_array();
		for (size_t k = 0; k < ev->analysis.cmds[i].argv.nr; k++)
			json_array_append_new(argv, json_string(ev->analysis.cmds[i].argv.v[k]));
		appr_format_argv(argv, &cmd);
		json_decref(argv);
		appr_store_touch(root, ev->agent, ev->verdict.matched.v[i], cmd.buf, ev->analysis.cmds[i].resolved);
		strbuf_release(&cmd);
	}
	return 0;
}

static int run_command(struct opts *o, struct evaluation *ev, int events)
{
	const char *resolved = ev->analysis.top_resolved;
	emit(events, json_pack("{s:s,s:o,s:o,s:o,s:o,s:s,s:o,s:s}", "type", "exec.started", "argv", argv_json(o->rest),
			       "execArgv", argv_json(ev->analysis.exec_argv.v), "resolvedPath", text_json(resolved),
			       "cwd", text_json(ev->cwd), "agentId", ev->agent, "executables",
			       appr_executables_json(&ev->analysis), "path", ev->analysis.path_env));
	struct appr_exec_result r;
	_cleanup_err_ struct err e = ERR_INIT;
	if (appr_exec_run(resolved, ev->analysis.top_fd, ev->analysis.path_env,
			  (const char *const *)ev->analysis.exec_argv.v, o->timeout_s * 1000, &r, &e) < 0) {
		appr_exec_result_release(&r);
		fprintf(stderr, "agor approvals exec: %s\n", e.message);
		return EXIT_FAILED;
	}
	fwrite(r.output.buf, 1, r.output.len, stdout);
	fflush(stdout);
	struct strbuf tail = STRBUF_INIT;
	appr_event_output(r.output.buf, r.output.len, &tail);
	emit(events, json_pack("{s:s,s:i,s:b,s:b,s:s%}", "type", "exec.finished", "exitCode", r.exit_code, "timedOut",
			       r.timed_out, "success", r.success, "output", tail.buf, tail.len));
	strbuf_release(&tail);
	int code = r.exit_code;
	appr_exec_result_release(&r);
	return code;
}

static int cmd_exec(struct appr_store *s, struct opts *o)
{
	if (o->nrest == 0)
		return applet_usage_error(&applet_approvals, "exec: no command (exec -- ARGV…)");
	int events = o->events_fd ? o->events_fd : 2;
	if (fcntl(events, F_GETFD) < 0)
		return applet_usage_error(&applet_approvals, "--events %d: not an open descriptor", events);
	struct evaluation ev = { 0 };
	if (evaluate(s, o, &ev) < 0)
		return EXIT_FAILED;
	const char *reason = ev.verdict.reason;
	_cleanup_free_ char *detail = NULL;
	enum appr_decision d = ev.verdict.decision;
	if (d == APPR_ASK && ev.analysis.path_env)
		d = o->ask_stdin ? ask_stdin(o, &ev, events, &reason, &detail) : ask_ui(s, o, &ev, &reason, &detail);
	int rc;
	_cleanup_err_ struct err changed = ERR_INIT;
	if (!ev.analysis.path_env) { /* an empty or relative PATH entry: never run, whatever the policy */
		rc = deny(events, "path-refused", ev.analysis.reason);
	} else if (d == APPR_DENY) {
		rc = deny(events, reason, detail ? detail : ev.analysis.reason ? ev.analysis.reason : code_detail(&ev));
	} else if (ev.analysis.top_resolved && ev.analysis.top_fd < 0) { /* unreadable, too large: not pinnable */
		rc = deny(events, "not-pinned", ev.analysis.reason);
	} else if (ev.analysis.top_resolved && appr_exec_checked(&ev.analysis, &changed) < 0) {
		rc = deny(events, "changed-since-check", changed.message);
	} else if (!ev.analysis.top_resolved) {
		fprintf(stderr, "agor approvals exec: %s: command not found\n", o->rest[0]);
		rc = EXIT_NOT_FOUND;
	} else {
		if (ev.verdict.matched.nr && s->hash[0]) {
			_cleanup_err_ struct err e = ERR_INIT; /* best effort: usage stamps only, */
			s->no_wait = 1;			       /* never a wait for the lock */
			appr_store_update(s, NULL, touch_mutator, &ev, &e);
		}
		rc = run_command(o, &ev, events);
	}
	evaluation_release(&ev);
	return rc;
}

/* ---- serve ----------------------------------------------------------------------------------- */

struct serve_ui {
	struct appr_store *store;
};

/* One line per executable the run starts: path, owner, mode and the first 16 digits of its SHA-256. */
static void show_executables(const json_t *exes)
{
	size_t i;
	json_t *x;
	json_array_foreach(exes, i, x)
	{
		struct strbuf path = STRBUF_INIT, owner = STRBUF_INIT;
		appr_display_escape(json_get_str(x, "path"), &path);
		appr_display_escape(json_get_str(x, "owner"), &owner);
		printf("  runs:    %s (owner %s, mode %.4s, sha256 %.16s)\n", path.buf, owner.buf,
		       json_get_str(x, "mode"), json_get_str(x, "sha256"));
		strbuf_release(&path);
		strbuf_release(&owner);
	}
	if (!json_array_size(exes))
		printf("  runs:    (the request names no checked executable)\n");
}

static void show_allow_always(const json_t *request)
{
	json_t *always = json_object_get(request, "allowAlways");
	const char *why = json_get_str(request, "allowAlwaysRefused");
	struct strbuf text = STRBUF_INIT;
	if (json_array_size(always)) {
		appr_format_argv(always, &text);
		printf("  always:  would record %s\n", text.buf);
	} else {
		appr_display_escape(why ? why : "the request names nothing to record", &text);
		printf("  always:  not offered (%s)\n", text.buf);
	}
	strbuf_release(&text);
}

static void ui_show(void *arg, const json_t *request, size_t waiting)
{
	(void)arg;
	struct strbuf cmd = STRBUF_INIT, cwd = STRBUF_INIT, agent = STRBUF_INIT;
	appr_format_argv(json_object_get(request, "argv"), &cmd);
	appr_display_escape(json_get_str(request, "cwd"), &cwd);
	appr_display_escape(json_get_str(request, "agentId"), &agent);
	printf("\n== approval request (%zu waiting) ==\n  agent:   %s\n  cwd:     %s\n  command: %s\n", waiting,
	       agent.buf, cwd.buf, cmd.buf);
	show_executables(json_object_get(request, "executables"));
	show_allow_always(request);
	printf("[o] allow once  [a] allow always  [d] deny  (then Enter) > ");
	fflush(stdout);
	strbuf_release(&cmd);
	strbuf_release(&cwd);
	strbuf_release(&agent);
}

struct always_edit {
	const char *agent;
	struct strvec patterns;
};

static int always_mutator(json_t *root, void *arg, struct err *e)
{
	struct always_edit *a = arg;
	for (size_t i = 0; i < a->patterns.nr; i++)
		if (appr_store_allowlist_add(root, a->agent, a->patterns.v[i], NULL, e) < 0)
			return -1;
	return 0;
}

static void print_escaped(const char *before, const char *text)
{
	struct strbuf safe = STRBUF_INIT;
	appr_display_escape(text, &safe);
	printf("%s%s", before, safe.buf);
	strbuf_release(&safe);
}

/* The patterns the request says allow-always records — what the client checked, never a new analysis
 * here (this process's PATH and cwd are not the requester's). */
static int recorded_patterns(const json_t *request, struct strvec *out, struct err *e)
{
	json_t *always = json_object_get(request, "allowAlways"), *p;
	const char *why = json_get_str(request, "allowAlwaysRefused");
	size_t i;
	if (!json_array_size(always))
		return err_set(e, E_PERMISSION_DENIED, "not recorded: %s",
			       why ? why : "the request names nothing to record");
	json_array_foreach(always, i, p)
	{
		if (appr_pattern_check(json_string_value(p), e) < 0 || appr_pattern_has_argv(json_string_value(p)))
			return err_prefix(e, "not recorded"), -1;
		strvec_push(out, json_string_value(p));
	}
	return 0;
}

static void ui_answered(void *arg, const json_t *request, enum appr_answer *answer)
{
	struct serve_ui *ui = arg;
	if (*answer != APPR_ANSWER_ALLOW_ALWAYS) {
		printf("-> %s\n", appr_answer_name(*answer));
		fflush(stdout);
		return;
	}
	struct always_edit edit = { .agent = json_get_str(request, "agentId") };
	strvec_init(&edit.patterns);
	_cleanup_err_ struct err e = ERR_INIT;
	if (appr_agent_id_check(edit.agent, &e) < 0 || recorded_patterns(request, &edit.patterns, &e) < 0 ||
	    appr_store_update(ui->store, NULL, always_mutator, &edit, &e) < 0) {
		*answer = APPR_ANSWER_ALLOW_ONCE;
		struct strbuf why = STRBUF_INIT;
		appr_display_escape(e.message, &why);
		printf("-> allow-once (allow-always %s)\n", why.buf);
		strbuf_release(&why);
	} else {
		printf("-> allow-always: recorded");
		for (size_t i = 0; i < edit.patterns.nr; i++)
			print_escaped(" ", edit.patterns.v[i]);
		printf(" for agent %s\n", edit.agent);
	}
	fflush(stdout);
	strvec_clear(&edit.patterns);
}

static void ui_ready(void *arg, const char *socket_path)
{
	(void)arg;
	printf("agor approvals: serving on %s (Ctrl-C to stop)\n", socket_path);
	fflush(stdout);
}

/* A note quotes what a peer sent (an unknown field's name, …): never raw on the terminal. */
static void ui_note(void *arg, const char *text)
{
	(void)arg;
	struct strbuf safe = STRBUF_INIT;
	appr_display_escape(text, &safe);
	printf("\n[%s]\n", safe.buf);
	fflush(stdout);
	strbuf_release(&safe);
}

static int socket_mutator(json_t *root, void *arg, struct err *e)
{
	return appr_store_ensure_socket(root, arg, e);
}

static int cmd_serve(struct appr_store *s, struct opts *o)
{
	if (o->nrest)
		return applet_usage_error(&applet_approvals, "serve: unexpected argument %s", o->rest[0]);
	_cleanup_err_ struct err e = ERR_INIT;
	if ((!appr_store_socket_path(s->root) || !appr_store_token(s->root)) &&
	    appr_store_update(s, NULL, socket_mutator, s->home, &e) < 0)
		return fail_err("serve", &e);
	_cleanup_free_ char *path = xstrdup(appr_store_socket_path(s->root));
	_cleanup_free_ char *token = xstrdup(appr_store_token(s->root));
	if (!isatty(0))
		fprintf(stderr, "agor approvals serve: stdin is not a terminal; reading answers from it anyway\n");
	struct serve_ui ui = { .store = s };
	struct appr_server_ops ops = { ui_ready, ui_show, ui_answered, ui_note, &ui };
	int rc = appr_serve(path, token, 0, &ops, &e);
	explicit_bzero(token, strlen(token));
	if (rc < 0)
		return fail_err("serve", &e);
	return EXIT_OK;
}

/* ---- dispatch -------------------------------------------------------------------------------- */

/* The command argv names, its words parsed into o; NULL after a usage error (*rc). */
static const struct client_command *parse_command(int argc, char **argv, struct opts *o, json_t *params, int *rc)
{
	const struct client_command *c = applet_command(&applet_approvals, argc, argv);
	*rc = 0;
	if (!c && argc > 1 && !strcmp(argv[1], "allowlist"))
		*rc = applet_usage_error(&applet_approvals,
					 argc > 2 ? "allowlist: unknown subcommand %s"
						  : "allowlist: add, rm or list?%s",
					 argc > 2 ? argv[2] : "");
	else if (!c)
		*rc = argc < 2 ? applet_usage_error(&applet_approvals, "missing subcommand")
			       : applet_usage_error(&applet_approvals, "unknown subcommand '%s'", argv[1]);
	if (!*rc) {
		int words = client_command_words(c);
		*rc = client_parse_args("approvals", c, argc - 1 - words, argv + 1 + words, NULL, params);
	}
	if (!*rc)
		*rc = opts_from_params(params, o);
	return *rc ? NULL : c;
}

static int approvals_main(int argc, char **argv)
{
	struct opts o = { .req = APPR_LEVELS_UNSET };
	strvec_init(&o.unset);
	_cleanup_json_ json_t *params = json_object();
	int rc;
	const struct client_command *c = parse_command(argc, argv, &o, params, &rc);
	struct appr_store s = APPR_STORE_INIT;
	_cleanup_err_ struct err e = ERR_INIT;
	const char *sub = c ? c->name : NULL;
	if (!c) {
		/* rc is the usage error */
	} else if (load_store(&s, &e) < 0) {
		rc = fail_err(sub, &e);
	} else if (!strncmp(sub, "allowlist ", 10)) {
		rc = cmd_allowlist(&s, sub + 10, &o);
	} else {
		rc = !strcmp(sub, "get")     ? cmd_get(&s, &o)
		     : !strcmp(sub, "set")   ? cmd_set(&s, &o)
		     : !strcmp(sub, "check") ? cmd_check(&s, &o)
		     : !strcmp(sub, "exec")  ? cmd_exec(&s, &o)
					     : cmd_serve(&s, &o);
	}
	appr_store_release(&s);
	strvec_clear(&o.unset);
	free(o.rest);
	return rc;
}

const struct applet applet_approvals = {
	.name = "approvals",
	.summary = "exec-approval policy: allowlists, ask flow, policy-checked exec",
	.usage = APPROVALS_USAGE,
	.main = approvals_main,
	.flags = APPLET_SUBCOMMAND_HELP,
	.commands = commands,
	.ncommands = ARRAY_SIZE(commands),
};
