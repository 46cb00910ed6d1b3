#!/usr/bin/env python3
# batch-burst.py — plays a task's executor for t0057: in ONE write to the daemon's Unix socket, NOTES report_message
# notifications and then CALLS report_message calls (ids 1..CALLS), so that the notifications and the first call share
# the daemon's write batch; prints each call's reply line, one a line, in id order. Every message's data names it:
# {"burst": "n7"} for the 8th notification, {"burst": "c3"} for call 3.
#   usage: batch-burst.py SOCKET TOKEN TASK NOTES CALLS
import json, socket, sys

sock_path, token, task, notes, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])


def message(name, call_id=None):
    m = {"jsonrpc": "2.0", "method": "report_message",
         "params": {"session_token": token, "task_id": task, "message_type": "assistant", "data": {"burst": name}}}
    if call_id is not None:
        m["id"] = call_id
    return (json.dumps(m) + "\n").encode()


s = socket.socket(socket.AF_UNIX)
s.connect(sock_path)
s.sendall(b"".join([message(f"n{i}") for i in range(notes)] + [message(f"c{i}", i) for i in range(1, calls + 1)]))
replies = {}
f = s.makefile("rb")
while len(replies) < calls:
    line = f.readline()
    if not line:
        sys.exit(f"the daemon closed the connection after {len(replies)} of {calls} replies")
    r = json.loads(line)
    replies[r["id"]] = line.decode().strip()
for i in range(1, calls + 1):
    print(replies[i])
