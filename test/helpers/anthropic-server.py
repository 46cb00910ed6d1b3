#!/usr/bin/env python3
# anthropic-server.py — a scripted Anthropic Messages API (SSE streaming) on loopback for agent CLI tests.
# Decides by request content, never by a counter; logs every request (headers + body) as JSON lines.
#   anthropic-server.py PORT_FILE LOG_FILE
# The last user message decides the reply:
#   ends with a tool_result              → text "All done." (end_turn)
#   "RUN: <shell command>"               → a Bash (or OpenCode's bash) tool_use running that command (tool_use)
#   "SLOW <seconds>"                     → text deltas spread over that many seconds (end_turn)
#   anything else                        → text "Hello from the scripted model." (end_turn)
import json, secrets, sys, time

from scripted_sse import ScriptedHandler, serve

PORT_FILE, LOG_FILE = sys.argv[1], sys.argv[2]


def text_of(content):
    """The newest text of a message (a resumed conversation keeps older prompts in the same message)."""
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return texts[-1] if texts else ""


def last_user(messages):
    for m in reversed(messages):
        if m.get("role") == "user":
            return m
    return {"content": ""}


def has_tool_result(message):
    """The message ends with a tool result (a resumed conversation puts new text after old results)."""
    content = message.get("content")
    return isinstance(content, list) and bool(content) and content[-1].get("type") == "tool_result"


def bash_tool(tools):
    """The shell tool's name: Bash (Claude Code) or bash (OpenCode)."""
    for t in tools or []:
        if t.get("name") in ("Bash", "bash"):
            return t["name"]
    return None


class Handler(ScriptedHandler):
    LOG_FILE = LOG_FILE

    def do_HEAD(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.do_HEAD()

    def event(self, name, data):
        self.send_event(name, data)

    def do_POST(self):
        req = self.read_logged_json()
        if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
            self.send_json({"input_tokens": 10})
            return
        self.stream(req)

    def reply(self, req):
        user = last_user(req.get("messages", []))
        text = text_of(user.get("content", "")) if not has_tool_result(user) else ""
        model = req.get("model", "claude-scripted")
        self.event("message_start", {"type": "message_start", "message": {
            "id": "msg_" + secrets.token_hex(8), "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 42, "output_tokens": 1}}})
        command = text.split("RUN: ", 1)[1].strip() if "RUN: " in text else None
        if not has_tool_result(user) and command and bash_tool(req.get("tools")):
            self.tool_use(bash_tool(req.get("tools")), command)
            stop = "tool_use"
        else:
            words = ["All done."] if has_tool_result(user) else ["Hello ", "from ", "the ", "scripted ", "model."]
            delay = 0.0
            if "SLOW " in text:
                seconds = float(text.split("SLOW ", 1)[1].split()[0])
                words = [f"tick{i} " for i in range(20)]
                delay = seconds / len(words)
            self.text(words, delay)
            stop = "end_turn"
        self.event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 7}})
        self.event("message_stop", {"type": "message_stop"})

    def tool_use(self, name, command):
        self.event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_" + secrets.token_hex(8), "name": name, "input": {}}})
        arguments = json.dumps({"command": command, "description": "scripted command"})
        for i in range(0, len(arguments), 16):
            self.event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "input_json_delta", "partial_json": arguments[i:i + 16]}})
        self.event("content_block_stop", {"type": "content_block_stop", "index": 0})

    def text(self, words, delay):
        self.event("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})
        for w in words:
            self.event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": w}})
            if delay:
                time.sleep(delay)
        self.event("content_block_stop", {"type": "content_block_stop", "index": 0})


serve(Handler, PORT_FILE)
