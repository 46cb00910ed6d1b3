/* mcp_permission.h — `agor executor mcp-permission --socket S`: the MCP stdio server Claude Code asks
 * before a tool runs (--permission-prompt-tool mcp__agor__approve); every question goes to the executor's
 * broker socket, which asks the daemon. Holds no token, decides nothing itself, fails closed. */
#ifndef AGOR_MCP_PERMISSION_H
#define AGOR_MCP_PERMISSION_H

/*
 * Contract
 * --------
 * mcp_permission_serve(in_fd, out_fd, socket_path): JSON-RPC 2.0, one message per line, until EOF.
 *   initialize → {protocolVersion: the client's, capabilities: {tools: {}}, serverInfo}; ping → {};
 *   tools/list → the one tool "approve" {tool_name, input, tool_use_id?}; tools/call approve → one
 *   request line {"tool_name","input","tool_use_id"} to socket_path, one answer line {"approved","reason"}
 *   back, returned as content[0].text = {"behavior":"allow","updatedInput":input} or
 *   {"behavior":"deny","message":reason}. Anything that goes wrong (socket, malformed answer) is a deny.
 *   Notifications get no answer; unknown methods get -32601. Returns the process exit status.
 */

int mcp_permission_serve(int in_fd, int out_fd, const char *socket_path);

#endif
