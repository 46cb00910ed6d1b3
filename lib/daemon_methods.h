/* daemon_methods.h — the client methods: users, repos, worktrees and their owners and access, exec.run, sessions,
 * tasks, messages, events, config, audit, API keys, ping. Features layer (daemon.h). Never lets a caller act as
 * another user; never opens the data home itself: every git change is a task run by an executor, and rows are
 * written when it succeeds. */
#ifndef AGOR_DAEMON_METHODS_H
#define AGOR_DAEMON_METHODS_H

#include "rpc.h"

RPC_METHOD(method_api_keys_list);	    /* api_keys.list */
RPC_METHOD(method_api_keys_remove);	    /* api_keys.remove */
RPC_METHOD(method_api_keys_set);	    /* api_keys.set */
RPC_METHOD(method_audit_list);		    /* audit.list */
RPC_METHOD(method_audit_verify);	    /* audit.verify */
RPC_METHOD(method_config_get);		    /* config.get */
RPC_METHOD(method_events_subscribe);	    /* events.subscribe */
RPC_METHOD(method_exec_run);		    /* exec.run */
RPC_METHOD(method_messages_list);	    /* messages.list */
RPC_METHOD(method_ping);		    /* ping */
RPC_METHOD(method_repos_clone);		    /* repos.clone */
RPC_METHOD(method_repos_get);		    /* repos.get */
RPC_METHOD(method_repos_list);		    /* repos.list */
RPC_METHOD(method_repos_remove);	    /* repos.remove */
RPC_METHOD(method_sessions_create);	    /* sessions.create */
RPC_METHOD(method_sessions_get);	    /* sessions.get */
RPC_METHOD(method_sessions_list);	    /* sessions.list */
RPC_METHOD(method_sessions_prompt);	    /* sessions.prompt */
RPC_METHOD(method_tasks_cancel);	    /* tasks.cancel */
RPC_METHOD(method_tasks_get);		    /* tasks.get */
RPC_METHOD(method_tasks_list);		    /* tasks.list */
RPC_METHOD(method_users_create);	    /* users.create */
RPC_METHOD(method_users_get);		    /* users.get */
RPC_METHOD(method_users_list);		    /* users.list */
RPC_METHOD(method_users_remove);	    /* users.remove */
RPC_METHOD(method_users_update);	    /* users.update */
RPC_METHOD(method_worktrees_add);	    /* worktrees.add */
RPC_METHOD(method_worktrees_get);	    /* worktrees.get */
RPC_METHOD(method_worktrees_list);	    /* worktrees.list */
RPC_METHOD(method_worktrees_owners_add);    /* worktrees.owners.add */
RPC_METHOD(method_worktrees_owners_list);   /* worktrees.owners.list */
RPC_METHOD(method_worktrees_owners_remove); /* worktrees.owners.remove */
RPC_METHOD(method_worktrees_remove);	    /* worktrees.remove */
RPC_METHOD(method_worktrees_set_access);    /* worktrees.set_access */

/* At start: each worktree whose removal was recorded but not finished (a failure, a kill -9) is finished now, as
 * `agor worktree remove ID` would: logged, audited, the rest removed. */
struct daemon;
void daemon_worktrees_finish_removals(struct daemon *d);

#endif
