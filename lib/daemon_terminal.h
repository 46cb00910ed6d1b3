/* daemon_terminal.h — terminals: terminal.open|attach|input|resize|close|list and terminal.handover, each a tmux
 * window run as its opener's execution user, streamed to the attached connections. Features layer (daemon.h). */
#ifndef AGOR_DAEMON_TERMINAL_H
#define AGOR_DAEMON_TERMINAL_H

#include <jansson.h>
#include "daemon.h"
#include "daemon_peer.h"
#include "rpc.h"

RPC_METHOD(method_terminal_attach);   /* terminal.attach */
RPC_METHOD(method_terminal_close);    /* terminal.close */
RPC_METHOD(method_terminal_handover); /* terminal.handover */
RPC_METHOD(method_terminal_input);    /* terminal.input */
RPC_METHOD(method_terminal_list);     /* terminal.list */
RPC_METHOD(method_terminal_open);     /* terminal.open */
RPC_METHOD(method_terminal_resize);   /* terminal.resize */

/* Bytes typed into the terminal the connection is attached to (WebSocket binary frames). */
void daemon_terminal_on_binary(struct daemon_peer *peer, const void *data, size_t len);
/* The connection closes: it leaves its terminal. */
void daemon_terminal_on_close(struct daemon_peer *peer);
/* Lets every terminal go (the daemon stops; sessions stay): a tmux control client is asked to detach and its socket
 * read until tmux closes it (at most a few seconds), so tmux never keeps a client whose output cannot be written
 * (such a client keeps its server from ever exiting). daemon_terminals_detaching() is true until all are closed. */
void daemon_terminals_detach(struct daemon *d);
int daemon_terminals_detaching(const struct daemon *d);
/* Frees every terminal and closes every socket still detaching, at once (the loop is going away). */
void daemon_terminals_release(struct daemon *d);
/* Who may have opened a terminal in the worktree (its owners and the admins: a terminal runs as its opener's
 * execution user, in that user's tmux server): their user ids, a JSON array (never NULL). */
json_t *daemon_terminal_openers(struct daemon *d, const char *worktree_id);
/* A removed worktree: its open terminals end ("the worktree was removed") and a tmux.close task for each distinct
 * execution user of openers kills its window there (the shell would stay in a deleted directory). */
void daemon_terminals_worktree_removed(struct daemon *d, const char *worktree_id, const char *name,
				       const json_t *openers);
/* At start: for each execution user of the agor users, a tmux.close task closes the windows agor made for
 * worktrees that no longer exist (removed while the daemon was down, or before this was done). */
void daemon_terminals_sweep(struct daemon *d);

#endif
