#!/usr/bin/env python3
# git-https-server.py — a real HTTPS git server for tests: serves `git http-backend` (smart HTTP) over TLS
# with a given certificate; optional basic auth. Never listens beyond 127.0.0.1.
#   git-https-server.py --root DIR --cert CERT --key KEY --port-file FILE [--user U --password P]
#     [--auth-log FILE] [--redirect-to BASE_URL [--challenge-on-redirect]]
# --auth-log appends each request's Authorization header ("-" when none); --redirect-to answers every
# (authorized) request with 302 to BASE_URL + the request's path, --challenge-on-redirect with a
# WWW-Authenticate header on that 302 too.
import argparse, base64, os, ssl, subprocess, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def read_body(handler):
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().strip().split(b";")[0], 16)
            if size == 0:
                handler.rfile.readline()
                break
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
        return b"".join(chunks)
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


class GitHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def authorized(self):
        if self.server.auth_log:
            with open(self.server.auth_log, "a") as f:
                f.write(f"{self.command} {self.path} {self.headers.get('Authorization') or '-'}\n")
        if not self.server.credentials:
            return True
        want = "Basic " + base64.b64encode(self.server.credentials.encode()).decode()
        if self.headers.get("Authorization") == want:
            return True
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False

    def redirect(self):
        self.send_response(302)
        self.send_header("Location", self.server.redirect_to + self.path)
        if self.server.challenge_on_redirect:
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def run_backend(self, method):
        if not self.authorized():
            return
        if self.server.redirect_to:
            return self.redirect()
        path, _, query = self.path.partition("?")
        body = read_body(self) if method == "POST" else b""
        env = {
            "GIT_PROJECT_ROOT": self.server.root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
            "QUERY_STRING": query, "REQUEST_METHOD": method, "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        }
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.split(b"\r\n"):
            name, _, value = line.decode().partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        self.run_backend("GET")

    def do_POST(self):
        self.run_backend("POST")

    def log_message(self, fmt, *args):
        sys.stderr.write("git-https-server: " + fmt % args + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--user")
    ap.add_argument("--password")
    ap.add_argument("--auth-log")
    ap.add_argument("--redirect-to")
    ap.add_argument("--challenge-on-redirect", action="store_true")
    a = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), GitHandler)
    server.root = a.root
    server.credentials = f"{a.user}:{a.password}" if a.user else None
    server.auth_log, server.redirect_to, server.challenge_on_redirect = a.auth_log, a.redirect_to, a.challenge_on_redirect
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(a.port_file + ".tmp", a.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
