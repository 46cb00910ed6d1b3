/* daemon_executor.h — the methods an executor calls back with its task's session token (get_execution_context,
 * get_api_key, get_credential, get_known_hosts, request_permission, report_*, heartbeat), and the stored API keys and
 * git credentials they hand out. Features layer (daemon.h). Never returns a secret to anyone but the token's task. */
#ifndef AGOR_DAEMON_EXECUTOR_H
#define AGOR_DAEMON_EXECUTOR_H

#include <jansson.h>
#include "daemon.h"
#include "err.h"
#include "rpc.h"
#include "strbuf.h"

RPC_METHOD(method_get_api_key);		  /* get_api_key */
RPC_METHOD(method_get_credential);	  /* get_credential */
RPC_METHOD(method_get_known_hosts);	  /* get_known_hosts */
RPC_METHOD(method_get_execution_context); /* get_execution_context */
RPC_METHOD(method_heartbeat);		  /* heartbeat */
RPC_METHOD(method_report_completion);	  /* report_completion */
RPC_METHOD(method_report_egress);	  /* report_egress */
RPC_METHOD(method_report_message);	  /* report_message */
RPC_METHOD(method_request_permission);	  /* request_permission */

/* Opens the sealed API key of service into out when its scope (owner | admins | members) admits the agor user
 * user (a task's); PERMISSION_DENIED naming the scope otherwise, NOT_FOUND when none is stored. *scope (may be
 * NULL) gets the key's scope, malloc'd, when the key exists. */
int daemon_open_api_key(struct daemon *d, const char *service, const char *user, struct strbuf *out, char **scope,
			struct err *e);
/* 1 when scope is one of owner, admins, members. */
int daemon_api_key_scope_valid(const char *scope);
/* The name api_keys.set stores service under: a git credential git:HOST[:PORT] or an ssh key git-ssh:HOST[:PORT]
 * canonical (host lower-cased, an IPv6 literal in brackets, port 443 or 22 left out), any other name as given;
 * INVALID_PAYLOAD naming params.service when a git: or git-ssh: name is not an origin. */
int daemon_canonical_service(const char *service, char **out, struct err *e);
/* 1 when service is a git credential (git: or git-ssh:), the only keys a user name is stored with. */
int daemon_git_service(const char *service);
/* Handles line when it is a report_message notification that report_scan reads (the common case of an
 * executor's stream): the same checks, audit, row and event as the JSON-RPC method, nothing to answer.
 * 0 when the line must go through the full JSON-RPC path instead. */
int daemon_report_message_line(struct daemon *d, const char *line, size_t len);

#endif
