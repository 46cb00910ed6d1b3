/* daemon_egress.h — a session's own egress allowlist: entries its creator (or an admin) adds to
 * execution.sandbox.egress_allow for that session's runs only (prompts, and exec.run naming the session).
 * Features layer (daemon.h). Each entry is checked as the setting is (egress_allow.h) and audited. */
#ifndef AGOR_DAEMON_EGRESS_H
#define AGOR_DAEMON_EGRESS_H

#include "rpc.h"

/* sessions.egress.add {session_id, entry} / sessions.egress.remove {session_id, entry} → {session_id,
 * egress_allow: [entries]}. Only the session's creator or an admin; a session the caller may not see answers
 * as unknown. add: one entry (no ',' or space), INVALID_PAYLOAD naming params.entry and the expected form when
 * it is not one; adding an entry already there changes nothing. remove: NOT_FOUND when the entry is not there. */
RPC_METHOD(method_sessions_egress_add);
RPC_METHOD(method_sessions_egress_remove);

#endif
