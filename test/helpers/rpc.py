#!/usr/bin/env python3
# rpc.py — one JSON-RPC 2.0 call to the agor daemon's Unix socket for tests; prints the reply line.
# Never retries and never hides an error reply.   usage: rpc.py SOCKET METHOD [PARAMS_JSON]
import json, socket, sys

sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
params = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
sock.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": sys.argv[2], "params": params}) + "\n").encode())
buf = b""
while not buf.endswith(b"\n"):
    chunk = sock.recv(65536)
    if not chunk:
        break
    buf += chunk
print(buf.decode().strip())
