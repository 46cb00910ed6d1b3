#!/usr/bin/env python3
# gemini-server.py — a scripted Gemini API (generativelanguage v1beta, streamGenerateContent SSE) on loopback for
# agent CLI tests. Decides by request content, never by a counter; logs every request (headers + body) as JSON lines.
#   gemini-server.py PORT_FILE LOG_FILE
# The last user turn decides the reply:
#   holds a functionResponse              → text "All done."
#   "RUN: <shell command>"               → a run_shell_command function call with that command
#   anything else                        → text "Hello from the scripted model."
# Any other request (a non-streaming generateContent, countTokens, …) gets a short text answer.
import json, sys

from scripted_sse import ScriptedHandler, serve

PORT_FILE, LOG_FILE = sys.argv[1], sys.argv[2]
USAGE = {"promptTokenCount": 42, "candidatesTokenCount": 7, "totalTokenCount": 49}


def last_user(contents):
    for c in reversed(contents or []):
        if c.get("role", "user") == "user":
            return c
    return {"parts": []}


def has_function_response(turn):
    return any("functionResponse" in p for p in turn.get("parts", []))


def text_of(turn):
    texts = [p.get("text", "") for p in turn.get("parts", []) if "text" in p]
    return texts[-1] if texts else ""


def offers_shell(tools):
    return any(f.get("name") == "run_shell_command" for t in tools or [] for f in t.get("functionDeclarations", []))


def candidate(parts):
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": USAGE, "modelVersion": "gemini-scripted"}


class Handler(ScriptedHandler):
    LOG_FILE = LOG_FILE

    def do_GET(self):
        self.send_json({"error": {"code": 404, "message": "not scripted", "status": "NOT_FOUND"}}, 404)

    def do_POST(self):
        req = self.read_logged_json()
        if ":streamGenerateContent" in self.path:
            self.stream(req)
        elif ":countTokens" in self.path:
            self.send_json({"totalTokens": 42})
        else:
            self.send_json(candidate(self.answer(req)))

    def answer(self, req):
        turn = last_user(req.get("contents"))
        text = text_of(turn)
        if has_function_response(turn):
            return [{"text": "All done."}]
        if "RUN: " in text and offers_shell(req.get("tools")):
            return [{"functionCall": {"name": "run_shell_command",
                                      "args": {"command": text.split("RUN: ", 1)[1].strip(),
                                               "description": "scripted command"}}}]
        return [{"text": "Hello from the scripted model."}]

    def reply(self, req):
        parts = self.answer(req)
        chunks = [[{"text": w}] for w in parts[0]["text"].split(" ")] if "text" in parts[0] else [parts]
        for i, p in enumerate(chunks):
            if "text" in p[0] and i < len(chunks) - 1:
                p[0]["text"] += " "
            body = candidate(p)
            if i < len(chunks) - 1:
                del body["candidates"][0]["finishReason"]
            chunk = f"data: {json.dumps(body)}\r\n\r\n".encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()


serve(Handler, PORT_FILE)
