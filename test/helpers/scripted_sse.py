# scripted_sse.py — what the scripted model endpoints share: a JSON-lines request log, chunked SSE replies,
# and serving on a free loopback port whose number is written atomically to a file.
import json, os, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_log_lock = threading.Lock()


class ScriptedHandler(BaseHTTPRequestHandler):
    """Subclasses set LOG_FILE and implement reply(request_json) using send_event()."""
    protocol_version = "HTTP/1.1"
    LOG_FILE = None

    def log_message(self, *args):
        pass

    def read_logged_json(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            req = json.loads(body)
        except ValueError:
            req = {}
        with _log_lock, open(self.LOG_FILE, "a") as f:
            f.write(json.dumps({"path": self.path, "headers": dict(self.headers), "body": req}) + "\n")
        return req

    def send_json(self, obj, status=200):
        out = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def stream(self, req):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.reply(req)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def send_event(self, name, data):
        chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.flush()


def serve(handler, port_file):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    tls_dir = os.environ.get("SCRIPTED_TLS_DIR")  # server.crt and server.key (make-test-ca.sh): serve https
    if tls_dir:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(tls_dir, "server.crt"), os.path.join(tls_dir, "server.key"))
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()
