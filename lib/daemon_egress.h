/* daemon_egress.h — a session's own egress allowlist: entries its creator (or an admin) adds to
 * execution.sandbox.egress_allow for that session's runs only (prompts, and exec.run naming the session).
 * Features layer (daemon.h). Each entry is checked as the setting is (egress_allow.h) and audited. */
#ifndef AGOR_DAEMON_EGRESS_H
#define AGOR_DAEMON_EGRESS_H

#include "daemon.h"
#include "rpc.h"

/* sessions.egress.add {session_id, entry} / sessions.egress.remove {session_id, entry} → {session_id,
 * egress_allow: [entries]}. Only the session's creator or an admin; a session the caller may not see answers
 * as unknown. add: one entry (no ',' or space), INVALID_PAYLOAD naming params.entry and the expected form when
 * it is not one; adding an entry already there changes nothing. remove: NOT_FOUND when the entry is not there. */
RPC_METHOD(method_sessions_egress_add);
RPC_METHOD(method_sessions_egress_remove);

/* Terminal panes. A pane's shell outlives every task and terminal id, so its egress proxy reports with a ticket
 * instead of a task token: "WORKTREE_ID.USER_ID.MAC", MAC = hex HMAC-SHA256 of both ids under the daemon's secret.
 * daemon_pane_ticket makes it (for the tmux.attach payload, paneTicket); it names that worktree and user only and
 * stays valid while the secret does, as the pane does.
 * terminal.report_egress {ticket, refused: [{host, port, reason, count}]} (≤ 100) → {}: an audit row
 * egress.refused (actor the user, target the worktree, details.terminal = true) and a terminal.egress_refused
 * event {worktree_id, host, port, reason, count} for that user, per refusal. A bad ticket, or one naming a worktree
 * or user that is gone, is AUTH_FAILED (audited as a refusal). */
char *daemon_pane_ticket(struct daemon *d, const char *worktree_id, const char *user_id);
RPC_METHOD(method_terminal_report_egress);

#endif
