#!/usr/bin/env python3
# term-client.py — a terminal client for the tests over the daemon's Unix socket (NDJSON, base64 input/output).
# Usage: term-client.py SOCKET WORKTREE STEP...   steps: type:TEXT (\n → Enter) expect:REGEX resize:COLSxROWS
#        attach:ID:TOKEN (attach to a given terminal instead of opening one) expect-exit close sleep:SECONDS
# TERM_MULTIPLEXER=zellij opens a zellij terminal. Prints the terminal.open result as the first line ({"open": …}); exits 1 with the output seen on a failed expect.
import base64, json, os, re, socket, sys, time

sock_path, worktree, steps = sys.argv[1], sys.argv[2], sys.argv[3:]
s = socket.socket(socket.AF_UNIX)
s.connect(sock_path)
buf, seen, next_id = b"", b"", 0
exited = None


def read_message(deadline):
    global buf
    while b"\n" not in buf:
        s.settimeout(max(0.01, deadline - time.time()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return None
        if not chunk:
            raise SystemExit("the daemon closed the connection")
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    return json.loads(line)


def handle_event(m):
    global seen, exited
    p = m.get("params", {})
    if p.get("type") == "terminal.output":
        seen += base64.b64decode(p["data"]["data"])
    elif p.get("type") == "terminal.exited":
        exited = p["data"]


def call(method, params, timeout=30):
    global next_id
    next_id += 1
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}) + "\n").encode())
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = read_message(deadline)
        if m is None:
            break
        if m.get("id") == next_id:
            return m
        handle_event(m)
    raise SystemExit(f"no answer to {method}")


def pump(seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        m = read_message(deadline)
        if m is not None:
            handle_event(m)


if steps and steps[0].startswith("attach:"):
    _, tid, token = steps.pop(0).split(":", 2)
    opened = {"result": {"terminal_id": tid, "token": token}}
else:
    opened = call("terminal.open", {"worktree_id": worktree, "cols": 80, "rows": 24,
                                    "multiplexer": os.environ.get("TERM_MULTIPLEXER", "tmux")})
print(json.dumps({"open": opened}), flush=True)
if "error" in opened:
    sys.exit(1)
r = opened["result"]
att = call("terminal.attach", {"terminal_id": r["terminal_id"], "token": r["token"]})
print(json.dumps({"attach": att}), flush=True)
if "error" in att:
    sys.exit(1)
for step in steps:
    kind, _, arg = step.partition(":")
    if kind == "type":
        data = arg.replace("\\n", "\r").encode()
        rep = call("terminal.input", {"data": base64.b64encode(data).decode()})
        if "error" in rep:
            raise SystemExit(json.dumps(rep))
    elif kind == "expect":
        deadline = time.time() + 20
        while not re.search(arg.encode(), seen) and time.time() < deadline:
            pump(0.1)
        if not re.search(arg.encode(), seen):
            sys.stdout.write(f"expected /{arg}/ in the output; seen:\n{seen.decode(errors='replace')}\n")
            sys.exit(1)
        print(f"seen /{arg}/", flush=True)
        seen = seen[re.search(arg.encode(), seen).end():]
    elif kind == "resize":
        cols, rows = arg.split("x")
        rep = call("terminal.resize", {"cols": int(cols), "rows": int(rows)})
        if "error" in rep:
            raise SystemExit(json.dumps(rep))
    elif kind == "expect-exit":
        deadline = time.time() + 20
        while exited is None and time.time() < deadline:
            pump(0.1)
        if exited is None:
            sys.exit("no terminal.exited event")
        print(json.dumps({"exited": exited}), flush=True)
    elif kind == "close":
        print(json.dumps({"close": call("terminal.close", {"terminal_id": r["terminal_id"]})}), flush=True)
    elif kind == "sleep":
        pump(float(arg))
    else:
        sys.exit(f"unknown step {step}")
