#!/usr/bin/env python3
# ws-rpc.py — JSON-RPC requests over one raw WebSocket to the agor daemon (RFC 6455 by hand: no npm needed).
# Never sends anything but the messages given; prints each reply line.   usage: ws-rpc.py HOST PORT MSG_JSON…
import base64, os, socket, struct, sys

host, port = sys.argv[1], int(sys.argv[2])
sock = socket.create_connection((host, port), timeout=20)
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall((f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
buf = b""
while b"\r\n\r\n" not in buf:
    chunk = sock.recv(4096)
    if not chunk:
        sys.exit("closed during the handshake")
    buf += chunk
head, buf = buf.split(b"\r\n\r\n", 1)
if b" 101 " not in head.split(b"\r\n")[0]:
    sys.exit("no upgrade: " + head.decode(errors="replace"))


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


for msg in sys.argv[3:]:
    send(msg)
    while True:
        op, payload = recv()
        if op == 8:
            print("(closed)")
            sys.exit(0)
        if op == 1:
            print(payload.decode())
            break
