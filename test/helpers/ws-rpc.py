#!/usr/bin/env python3
# ws-rpc.py — JSON-RPC requests over one raw WebSocket to the agor daemon (RFC 6455 by hand: no npm needed).
# Never sends anything but the messages given; prints each reply line.
#   usage: ws-rpc.py [--origin ORIGIN] [--path /ws|/terminal] [--source ADDR] HOST PORT MSG_JSON…
# --origin sends that Origin header, as a browser would; --source connects from that local address (127.0.0.N);
# a refused upgrade exits 1 with "no upgrade: STATUS LINE".
import base64, os, socket, struct, sys

args, origin, path, source = sys.argv[1:], None, "/ws", None
while args and args[0].startswith("--"):
    if args[0] == "--origin":
        origin = args[1]
    elif args[0] == "--path":
        path = args[1]
    elif args[0] == "--source":
        source = (args[1], 0)
    args = args[2:]
host, port = args[0], int(args[1])
sock = socket.create_connection((host, port), timeout=20, source_address=source)
key = base64.b64encode(os.urandom(16)).decode()
extra = f"Origin: {origin}\r\n" if origin else ""
sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n").encode())
buf = b""
while b"\r\n\r\n" not in buf:
    chunk = sock.recv(4096)
    if not chunk:
        sys.exit("closed during the handshake")
    buf += chunk
head, buf = buf.split(b"\r\n\r\n", 1)
if b" 101 " not in head.split(b"\r\n")[0]:
    sys.exit("no upgrade: " + head.split(b"\r\n")[0].decode(errors="replace"))


def need(k):
    global buf
    while len(buf) < k:
        chunk = sock.recv(65536)
        if not chunk:
            print("(closed)")
            sys.exit(0)
        buf += chunk


def send(text):
    data, mask = text.encode(), os.urandom(4)
    n = len(data)
    hdr = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
                           if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n))
    sock.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


def recv():
    global buf
    need(2)
    op, n, off = buf[0] & 15, buf[1] & 127, 2
    if n == 126:
        need(4)
        n, off = struct.unpack(">H", buf[2:4])[0], 4
    elif n == 127:
        need(10)
        n, off = struct.unpack(">Q", buf[2:10])[0], 10
    need(off + n)
    payload, buf = buf[off:off + n], buf[off + n:]
    return op, payload


for msg in args[2:]:
    send(msg)
    while True:
        op, payload = recv()
        if op == 8:
            print("(closed)")
            sys.exit(0)
        if op == 1:
            print(payload.decode())
            break
