/* mcp_permission.c — the permission prompt tool's MCP stdio server (mcp_permission.h): answers the MCP
 * handshake and turns each tools/call into one question to the executor's broker socket. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fsutil.h"
#include "json.h"
#include "mcp_permission.h"
#include "net.h"
#include "strbuf.h"
#include "version.h"
#include "banned.h"

#define MAX_MESSAGE (8u << 20)

static json_t *tool_list(void)
{
	return json_pack("{s:[{s:s,s:s,s:{s:s,s:{s:{s:s},s:{s:s},s:{s:s}},s:[s,s]}}]}", "tools", "name", "approve",
			 "description", "Asks the agor daemon whether a tool call may run.", "inputSchema", "type",
			 "object", "properties", "tool_name", "type", "string", "input", "type", "object",
			 "tool_use_id", "type", "string", "required", "tool_name", "input");
}

/* One line to the broker, one line back; NULL when anything fails. */
static json_t *ask_broker(const char *socket_path, json_t *question)
{
	struct sockaddr_un sa;
	struct err e = ERR_INIT;
	int fits = net_unix_address(socket_path, &sa, &e) == 0;
	err_clear(&e);
	if (!fits)
		return NULL;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	json_t *answer = NULL;
	struct strbuf buf = STRBUF_INIT;
	json_add_to_strbuf(&buf, question);
	strbuf_addch(&buf, '\n');
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && fs_write_all(fd, buf.buf, buf.len) == 0) {
		strbuf_reset(&buf);
		if (strbuf_read_fd(&buf, fd, 1u << 20) >= 0)
			answer = json_loadb(buf.buf, strcspn(buf.buf, "\n"), 0, NULL);
	}
	close(fd);
	strbuf_release(&buf);
	return answer;
}

static json_t *decision_text(json_t *arguments, json_t *answer)
{
	json_t *input = json_object_get(arguments, "input");
	json_t *d;
	if (json_is_true(json_object_get(answer, "approved")) && json_is_object(input)) {
		d = json_pack("{s:s,s:O}", "behavior", "allow", "updatedInput", input);
	} else {
		const char *reason = json_get_str(answer, "reason");
		d = json_pack("{s:s,s:s}", "behavior", "deny", "message",
			      reason && *reason ? reason : "denied: the agor daemon could not be asked (fail closed)");
	}
	char *text = json_to_compact(d);
	json_decref(d);
	json_t *result = json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", text);
	free(text);
	return result;
}

static json_t *call_tool(json_t *params, const char *socket_path)
{
	json_t *arguments = json_object_get(params, "arguments");
	if (strcmp(json_get_str(params, "name") ? json_get_str(params, "name") : "", "approve") ||
	    !json_is_object(arguments))
		return decision_text(arguments, NULL);
	const char *tool_name = json_get_str(arguments, "tool_name");
	json_t *question = json_pack("{s:s,s:O?,s:O?}", "tool_name", tool_name ? tool_name : "", "input",
				     json_object_get(arguments, "input"), "tool_use_id",
				     json_object_get(arguments, "tool_use_id"));
	json_t *answer = ask_broker(socket_path, question);
	json_decref(question);
	json_t *result = decision_text(arguments, answer);
	if (answer)
		json_decref(answer);
	return result;
}

static json_t *answer_method(const char *method, json_t *params, const char *socket_path)
{
	if (!strcmp(method, "initialize")) {
		const char *version = json_get_str(params, "protocolVersion");
		return json_pack("{s:s,s:{s:{}},s:{s:s,s:s}}", "protocolVersion", version ? version : "2025-06-18",
				 "capabilities", "tools", "serverInfo", "name", "agor", "version", agor_version());
	}
	if (!strcmp(method, "ping"))
		return json_object();
	if (!strcmp(method, "tools/list"))
		return tool_list();
	if (!strcmp(method, "tools/call"))
		return call_tool(params, socket_path);
	return NULL;
}

static void handle_message(int out_fd, json_t *msg, const char *socket_path)
{
	json_t *id = json_object_get(msg, "id");
	const char *method = json_get_str(msg, "method");
	if (!id || !method)
		return; /* a notification (notifications/initialized, …) or a stray response */
	json_t *result = answer_method(method, json_object_get(msg, "params"), socket_path);
	json_t *reply = result ? json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result)
			       : json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error", "code", -32601,
					   "message", "method not found");
	json_write_line(out_fd, reply);
	json_decref(reply);
}

int mcp_permission_serve(int in_fd, int out_fd, const char *socket_path)
{
	struct strbuf in = STRBUF_INIT;
	char buf[65536];
	for (;;) {
		size_t done = 0, len; /* the complete lines handled; removed at once, not line by line (quadratic) */
		for (const char *line; (line = strbuf_next_line(&in, &done, &len));) {
			json_t *msg = json_loadb(line, len - 1, 0, NULL);
			if (json_is_object(msg))
				handle_message(out_fd, msg, socket_path);
			if (msg)
				json_decref(msg);
		}
		strbuf_remove_front(&in, done);
		ssize_t n = read(in_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || in.len + (size_t)n > MAX_MESSAGE)
			break;
		strbuf_add(&in, buf, (size_t)n);
	}
	strbuf_release(&in);
	return 0;
}
