#!/usr/bin/env python3
# events.py — subscribes to the daemon's events on its Unix socket and prints everything it received, once PATTERN
# (bytes) has been seen, the daemon closed the connection, or TIMEOUT seconds passed without a byte. It touches
# READY_FILE once subscribed, so a test can start what should cause the events only then.
# Usage: events.py SOCKET READY_FILE TIMEOUT [PATTERN]   (no PATTERN: until the timeout or the close)
import socket, sys

sock_path, ready, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
until = sys.argv[4].encode() if len(sys.argv) > 4 else None
s = socket.socket(socket.AF_UNIX)
s.connect(sock_path)
s.settimeout(timeout)
s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"events.subscribe"}\n')
buf = s.recv(65536)
open(ready, "w").close()
try:
    while until is None or until not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
except socket.timeout:
    pass
print(buf.decode())
