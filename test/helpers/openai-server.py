#!/usr/bin/env python3
# openai-server.py — a scripted OpenAI Responses API (SSE streaming) on loopback for Codex CLI tests.
# Decides by request content, never by a counter; logs every request (headers + body) as JSON lines.
#   openai-server.py PORT_FILE LOG_FILE
# The newest input item decides the reply:
#   a function_call_output / custom_tool_call_output → message "All done."
#   a user message "RUN: <command>"      → a call of the request's shell tool running that command
#   a user message "PATCH: <file> <text>" → an apply_patch call adding <file> with the line <text>
#   anything else                        → message "Hello from the scripted model."
import json, secrets, sys

from scripted_sse import ScriptedHandler, serve

PORT_FILE, LOG_FILE = sys.argv[1], sys.argv[2]


def newest_user_text(items):
    for item in reversed(items):
        if item.get("type") == "message" and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            texts = [c.get("text", "") for c in content or [] if c.get("type") in ("input_text", "text")]
            return texts[-1] if texts else ""
    return ""


def patch_call(text):
    name, line = (text.split(" ", 1) + [""])[:2]
    return {"type": "custom_tool_call", "id": "ctc_" + secrets.token_hex(8), "call_id": "call_" + secrets.token_hex(8),
            "name": "apply_patch", "input": f"*** Begin Patch\n*** Add File: {name}\n+{line}\n*** End Patch\n",
            "status": "completed"}


def shell_call(tools, command):
    names = [t.get("name") for t in tools or []]
    if "exec_command" in names:
        return "exec_command", {"cmd": command}
    if "shell" in names:
        return "shell", {"command": ["bash", "-lc", command]}
    return None, None


class Handler(ScriptedHandler):
    LOG_FILE = LOG_FILE

    def do_GET(self):
        self.send_json({"object": "list", "data": []})

    def event(self, data):
        self.send_event(data["type"], data)

    def do_POST(self):
        self.stream(self.read_logged_json())

    def reply(self, req):
        items = req.get("input", [])
        rid = "resp_" + secrets.token_hex(8)
        self.event({"type": "response.created", "response": {"id": rid, "status": "in_progress", "output": []}})
        last = items[-1] if items else {}
        answered = last.get("type") in ("function_call_output", "custom_tool_call_output")
        text = newest_user_text(items)
        name, args = (None, None)
        if not answered and "RUN: " in text:
            name, args = shell_call(req.get("tools"), text.split("RUN: ", 1)[1].strip())
        if not answered and "PATCH: " in text:
            item = patch_call(text.split("PATCH: ", 1)[1].strip())
        elif name:
            item = {"type": "function_call", "id": "fc_" + secrets.token_hex(8), "call_id": "call_" + secrets.token_hex(8),
                    "name": name, "arguments": json.dumps(args), "status": "completed"}
        else:
            words = "All done." if answered else "Hello from the scripted model."
            item = {"type": "message", "id": "msg_" + secrets.token_hex(8), "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": words, "annotations": []}]}
        self.event({"type": "response.output_item.added", "output_index": 0, "item": item})
        self.event({"type": "response.output_item.done", "output_index": 0, "item": item})
        self.event({"type": "response.completed", "response": {"id": rid, "status": "completed", "output": [item], "usage": {
            "input_tokens": 42, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 49}}})


serve(Handler, PORT_FILE)
