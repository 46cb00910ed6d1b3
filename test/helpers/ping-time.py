#!/usr/bin/env python3
# ping-time.py — how long the daemon takes to answer `ping` on its Unix socket: connect, send, read the reply.
# Prints the milliseconds (e.g. "3.2"); exits 1 with a reason when there is no pong within the timeout.
#   usage: ping-time.py SOCKET [TIMEOUT_S]
import socket, sys, time

path, timeout = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
t0 = time.monotonic()
s = socket.socket(socket.AF_UNIX)
s.settimeout(timeout)
try:
    s.connect(path)
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
except OSError as e:
    sys.exit("no pong after %.0f ms: %s" % ((time.monotonic() - t0) * 1000, e))
ms = (time.monotonic() - t0) * 1000
if b'"pong":true' not in buf:
    sys.exit("no pong after %.0f ms: %r" % (ms, buf[:200]))
print("%.1f" % ms)
