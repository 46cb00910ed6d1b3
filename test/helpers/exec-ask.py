#!/usr/bin/env python3
# exec-ask.py — one exec.run on the daemon's Unix socket while answering its exec permission requests, for tests.
# Never answers anything but the requests of kind "exec".  usage: exec-ask.py SOCKET PARAMS_JSON once|always|deny|ignore
# Prints {"reply": the exec.run reply, "asked": [the permission.requested data seen], "answers": [their replies]}.
import json, socket, sys

sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
answer = sys.argv[3]
buf = b""

def send(obj):
    sock.sendall((json.dumps(obj) + "\n").encode())

def lines():
    global buf
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield json.loads(line)
        chunk = sock.recv(65536)
        if not chunk:
            return
        buf += chunk

send({"jsonrpc": "2.0", "id": 1, "method": "events.subscribe", "params": {}})
send({"jsonrpc": "2.0", "id": 2, "method": "exec.run", "params": json.loads(sys.argv[2])})
out = {"reply": None, "asked": [], "answers": []}
for msg in lines():
    if msg.get("id") == 2:
        out["reply"] = msg
        break
    if msg.get("method") == "event" and msg["params"]["type"] == "permission.requested":
        data = msg["params"]["data"]
        if data.get("kind") != "exec":
            continue
        out["asked"].append(data)
        if answer != "ignore":
            params = {"request_id": data["request_id"], "approved": answer != "deny"}
            if answer == "always":
                params["scope"] = "allow-always"
            send({"jsonrpc": "2.0", "id": 100 + len(out["asked"]), "method": "permissions.respond", "params": params})
    elif isinstance(msg.get("id"), int) and msg["id"] >= 100:
        out["answers"].append(msg)
print(json.dumps(out))
