/* daemon_exec_session.h — the session side of exec: /exec and /elevated directives kept on the session (its exec
 * defaults), and the exec events its agent has not been shown yet. Services layer (daemon.h). */
#ifndef AGOR_DAEMON_EXEC_SESSION_H
#define AGOR_DAEMON_EXEC_SESSION_H

#include <jansson.h>
#include "daemon.h"
#include "err.h"

/* A prompt that is a directive (/exec, /elevated: exec_directive.h)
 * updates the session's exec defaults instead of prompting: 1 with *result {session_id, directive, exec}, 0
 * when prompt is no directive, -1 when it is invalid or asks for more security than the gateway's
 * exec-approvals.json allows (PERMISSION_DENIED naming the cap), or when !may_set (only the session's creator
 * or an admin may). session: the session row. */
int daemon_session_directive(struct daemon *d, const json_t *session, const char *prompt, int may_set, json_t **result,
			     struct err *e);
/* The session's exec events its agent has not been shown, as a note to put before the next prompt (NULL when
 * none); *last_id is the last event's message id, to pass to daemon_session_events_seen once the prompt is
 * submitted (so each event is shown exactly once). */
char *daemon_session_events_note(struct daemon *d, const char *session_id, long long *last_id);
void daemon_session_events_seen(struct daemon *d, const char *session_id, long long last_id);

#endif
