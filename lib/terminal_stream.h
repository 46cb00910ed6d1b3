/* terminal_stream.h — the executor's half of a terminal on a remote daemon (docs/terminals.md): no descriptor can cross
 * hosts, so the executor keeps the tmux control client and relays its bytes over its own verified TLS WebSocket.
 * Never trusts the daemon's link beyond its heartbeats, never outlives the link: when it ends, so does the relay.
 *
 * Contract:
 *   terminal_stream_relay(target, token, info, fd) connects to target (callback.h: verified TLS), calls
 *   `terminal.handover {session_token, kind:"tmux", stream:true, server, session, window, windowName, pane}` and then
 *   relays until one side ends: every read of fd (the control client's end of a socket pair) is one binary message
 *   (at most TERMINAL_STREAM_FRAME_MAX bytes) to the daemon; every binary message from the daemon is written to fd (the
 *   daemon's tmux commands). A `heartbeat {session_token}` call every heartbeat_ms (the handover answer's, default
 *   10000) proves the link; one unanswered for three of them is a lost link. Returns 0 when the control client or the
 *   daemon ended the terminal, -1 with e set when the daemon refused it or the link was lost.
 */
#ifndef AGOR_TERMINAL_STREAM_H
#define AGOR_TERMINAL_STREAM_H

#include <jansson.h>

#include "callback.h"
#include "err.h"

#define TERMINAL_STREAM_FRAME_MAX 16384 /* bytes of one relayed message; the daemon refuses larger ones */

int terminal_stream_relay(const struct callback_target *target, const char *session_token, const json_t *info, int fd,
			  struct err *e);

#endif
