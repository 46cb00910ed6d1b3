#!/usr/bin/env python3
# held-rpc.py — several JSON-RPC calls on ONE Unix-socket connection to the agor daemon, paced by the test: call i
# (from 1 on) waits for the file DIR/go.i; each reply line goes to DIR/reply.i. Shows what a connection that stays
# open sees when its user changes between calls.   usage: held-rpc.py SOCKET DIR METHOD PARAMS_JSON [METHOD PARAMS_JSON…]
import json, os, socket, sys, time

sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
out, calls = sys.argv[2], sys.argv[3:]
reader = sock.makefile("rb")
for i in range(len(calls) // 2):
    if i:
        deadline = time.time() + 60
        while not os.path.exists(f"{out}/go.{i}"):
            if time.time() > deadline:
                sys.exit(f"held-rpc: no {out}/go.{i} within 60 s")
            time.sleep(0.02)
    request = {"jsonrpc": "2.0", "id": i + 1, "method": calls[2 * i], "params": json.loads(calls[2 * i + 1])}
    sock.sendall((json.dumps(request) + "\n").encode())
    line = reader.readline()
    with open(f"{out}/reply.{i}.tmp", "wb") as f:
        f.write(line)
    os.rename(f"{out}/reply.{i}.tmp", f"{out}/reply.{i}")
