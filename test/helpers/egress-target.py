#!/usr/bin/env python3
# egress-target.py — a plain HTTP server on loopback that a sandboxed run may (or may not) reach through agor's
# egress proxy: logs every request (method, path, headers) as a JSON line and answers "hello from target".
#   egress-target.py PORT_FILE LOG_FILE
import json, sys
from http.server import BaseHTTPRequestHandler

from scripted_sse import serve

PORT_FILE, LOG_FILE = sys.argv[1], sys.argv[2]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with open(LOG_FILE, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                "body": body.decode("utf-8", "replace")}) + "\n")
        out = b"hello from target\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_HEAD = answer


serve(Handler, PORT_FILE)
