/* daemon_dispatch.c — every JSON-RPC method the daemon serves, in one table sorted by name (daemon_dispatch.h).
 * Never serves a method that is not in the table; a table out of order stops the daemon at start. */
#include "daemon_dispatch.h"
#include "daemon_egress.h"
#include "daemon_executor.h"
#include "daemon_gateway.h"
#include "daemon_methods.h"
#include "daemon_nodes.h"
#include "daemon_permissions.h"
#include "daemon_terminal.h"
#include "daemon_tokens.h"
#include "banned.h"

static const struct rpc_method methods[] = {
	{ "api_keys.list", method_api_keys_list },
	{ "api_keys.remove", method_api_keys_remove },
	{ "api_keys.set", method_api_keys_set },
	{ "audit.list", method_audit_list },
	{ "audit.verify", method_audit_verify },
	{ "auth.token", method_auth_token },
	{ "config.get", method_config_get },
	{ "events.subscribe", method_events_subscribe },
	{ "exec.gateway_grant", method_gateway_grant },
	{ "exec.run", method_exec_run },
	{ "get_api_key", method_get_api_key },
	{ "get_credential", method_get_credential },
	{ "get_execution_context", method_get_execution_context },
	{ "get_known_hosts", method_get_known_hosts },
	{ "heartbeat", method_heartbeat },
	{ "messages.list", method_messages_list },
	{ "node.ask", method_node_ask },
	{ "node.event", method_node_event },
	{ "node.hello", method_node_hello },
	{ "node.pair", method_node_pair },
	{ "nodes.approve", method_nodes_approve },
	{ "nodes.list", method_nodes_list },
	{ "nodes.revoke", method_nodes_revoke },
	{ "permissions.respond", method_permissions_respond },
	{ "ping", method_ping },
	{ "report_completion", method_report_completion },
	{ "report_egress", method_report_egress },
	{ "report_message", method_report_message },
	{ "repos.clone", method_repos_clone },
	{ "repos.get", method_repos_get },
	{ "repos.list", method_repos_list },
	{ "repos.remove", method_repos_remove },
	{ "request_permission", method_request_permission },
	{ "sessions.create", method_sessions_create },
	{ "sessions.egress.add", method_sessions_egress_add },
	{ "sessions.egress.remove", method_sessions_egress_remove },
	{ "sessions.get", method_sessions_get },
	{ "sessions.list", method_sessions_list },
	{ "sessions.prompt", method_sessions_prompt },
	{ "tasks.cancel", method_tasks_cancel },
	{ "tasks.get", method_tasks_get },
	{ "tasks.list", method_tasks_list },
	{ "terminal.attach", method_terminal_attach },
	{ "terminal.close", method_terminal_close },
	{ "terminal.handover", method_terminal_handover },
	{ "terminal.input", method_terminal_input },
	{ "terminal.list", method_terminal_list },
	{ "terminal.open", method_terminal_open },
	{ "terminal.report_egress", method_terminal_report_egress },
	{ "terminal.resize", method_terminal_resize },
	{ "tokens.create", method_tokens_create },
	{ "tokens.list", method_tokens_list },
	{ "tokens.revoke", method_tokens_revoke },
	{ "users.create", method_users_create },
	{ "users.get", method_users_get },
	{ "users.list", method_users_list },
	{ "users.remove", method_users_remove },
	{ "users.update", method_users_update },
	{ "worktrees.add", method_worktrees_add },
	{ "worktrees.get", method_worktrees_get },
	{ "worktrees.list", method_worktrees_list },
	{ "worktrees.owners.add", method_worktrees_owners_add },
	{ "worktrees.owners.list", method_worktrees_owners_list },
	{ "worktrees.owners.remove", method_worktrees_owners_remove },
	{ "worktrees.remove", method_worktrees_remove },
	{ "worktrees.set_access", method_worktrees_set_access },
};

int daemon_dispatch_check(struct err *e)
{
	const char *name = rpc_table_unsorted(methods, ARRAY_SIZE(methods));
	return name ? err_set(e, E_INTERNAL, "the daemon's method table is out of order at %s (daemon_dispatch.c)",
			      name)
		    : 0;
}

char *daemon_handle_message(struct daemon *d, struct daemon_peer *peer, const char *msg, size_t len)
{
	if (daemon_report_message_line(d, msg, len)) /* the executors' stream, read without building JSON */
		return NULL;
	return rpc_process(methods, ARRAY_SIZE(methods), d, peer, msg, len);
}
