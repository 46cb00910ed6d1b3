#!/usr/bin/env python3
# hostile-executor.py — plays a hostile remote executor for t0085: started by execution.executor_command_template in
# place of `agor executor --stdin`, it reads the payload and, for a tmux.attach, attacks the daemon's terminal relay
# over the real verified TLS WebSocket (RFC 6455 by hand). Never runs tmux. Every answer goes to LOG, one line each.
#   usage: hostile-executor.py MODE_FILE LOG     modes: forged | bad-pane | unbound | twice | oversized
import base64, json, os, socket, ssl, struct, sys, time

mode_file, log_path = sys.argv[1], sys.argv[2]
mode = open(mode_file).read().strip()
payload = json.loads(sys.stdin.buffer.read().decode())
log = open(log_path, "a")


def note(what):
    log.write(f"{mode}: {what}\n")
    log.flush()


if payload.get("command") != "tmux.attach":
    print(json.dumps({"ok": True, "data": {}}))
    sys.exit(0)

url = payload["daemonUrl"]  # wss://HOST:PORT/PATH
hostport, _, path = url[len("wss://"):].partition("/")
host, _, port = hostport.rpartition(":")
token = payload["sessionToken"]


def connect():
    ctx = ssl.create_default_context(cadata=payload["daemonCa"])
    s = ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=10), server_hostname=host)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("closed during the handshake")
        buf += chunk
    return [s, buf.split(b"\r\n\r\n", 1)[1]]


def send(c, data, op=1):
    mask, n = os.urandom(4), len(data)
    hdr = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
                                if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n))
    c[0].sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


def need(c, k):
    while len(c[1]) < k:
        chunk = c[0].recv(65536)
        if not chunk:
            return False
        c[1] += chunk
    return True


def recv_text(c):
    """The next text message, or "(closed)"; binary messages (tmux commands) are skipped."""
    try:
        while True:
            if not need(c, 2):
                return "(closed)"
            op, n, off = c[1][0] & 15, c[1][1] & 127, 2
            if n == 126:
                need(c, 4)
                n, off = struct.unpack(">H", c[1][2:4])[0], 4
            elif n == 127:
                need(c, 10)
                n, off = struct.unpack(">Q", c[1][2:10])[0], 10
            if not need(c, off + n):
                return "(closed)"
            data, c[1] = c[1][off:off + n], c[1][off + n:]
            if op == 8:
                return "(closed)"
            if op == 1:
                return data.decode()
    except (OSError, ssl.SSLError):
        return "(closed)"


def handover(c, tok=token, window="@0", pane="%0"):
    send(c, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "terminal.handover",
                        "params": {"session_token": tok, "kind": "tmux", "stream": True, "server": "x",
                                   "session": "agor", "window": window, "pane": pane}}).encode())
    answer = recv_text(c)
    note("handover " + answer)
    return answer


c = connect()
if mode == "forged":
    handover(c, tok=token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"))
elif mode == "bad-pane":
    handover(c, window="@0 ; kill-server", pane="%0")
elif mode == "unbound":  # bytes before any hand-over are nobody's terminal
    send(c, b"%output %0 forged-output-from-nowhere\n", op=2)
    note("unbound " + recv_text(c))
elif mode == "twice":  # one terminal per task: a second hand-over, here or on another connection, is refused
    handover(c)
    handover(c)
    handover(connect())
    time.sleep(1)
elif mode == "oversized":
    handover(c)
    send(c, b"%output %0 " + b"x" * 70000 + b"\n", op=2)
    note("after oversized " + recv_text(c))
print(json.dumps({"ok": False, "error": {"code": "INTERNAL", "message": "hostile executor"}}))
sys.exit(1)
