#!/usr/bin/env bash
# t0035-hidden-ids — an id the caller may not see answers exactly as an unknown one: a member (over TCP with a user
# token) calls every method that takes a worktree, session, task or permission-request id, once with an id hidden
# from them and once with a random unknown id; code, message and details must be the same apart from the id.
. "$(dirname "$0")/../lib.sh"

# The executor is a template that keeps its task running, so that a prompt task can ask for a permission.
SCENE='
  mkdir -p -m 700 "$AGOR_HOME"
  printf "execution:\n  executor_command_template: \"cat > %s/payload.json; sleep 60\"\n" "$PWD" > "$AGOR_HOME/config.yaml"
  chmod 600 "$AGOR_HOME/config.yaml"
  start_daemon
  owner=$(rpc users.list | python3 -c "import json,sys; print(json.load(sys.stdin)[\"result\"][0][\"id\"])")
  "$AGOR" user create bob > /dev/null
  bob=$(rpc users.list | python3 -c "import json,sys; print([u[\"id\"] for u in json.load(sys.stdin)[\"result\"] if u[\"name\"] == \"bob\"][0])")
  bob_token=$("$AGOR" user token --for bob 2> /dev/null)
  # the owner (an admin) has a worktree hidden from others (others_can none) with a session and tasks; bob owns one
  python3 - "$AGOR_HOME/agor.db" "$owner" "$bob" <<PY
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); o, b = sys.argv[2], sys.argv[3]
db.execute("INSERT INTO repos (id, url, path, created_by, created_at) VALUES (\"r1\", \"/src\", \"/d/repos/o/r.git\", ?, 0)", (o,))
for wt, who in (("hw00000000000000000000000000000a", o), ("bw00000000000000000000000000000b", b)):
    db.execute("INSERT INTO worktrees (id, repo_id, name, path, created_by, created_at) VALUES (?, \"r1\", ?, ?, ?, 0)", (wt, wt[:2], "/d/worktrees/" + wt, who))
    db.execute("INSERT INTO worktree_owners (worktree_id, user_id) VALUES (?, ?)", (wt, who))
db.execute("INSERT INTO sessions (id, worktree_id, tool, created_by, created_at, exec_defaults) VALUES (\"hs00000000000000000000000000000c\", \"hw00000000000000000000000000000a\", \"claude-code\", ?, 0, ?)", (o, "{\"host\":\"node\"}"))
db.execute("INSERT INTO tasks (id, session_id, command, status, created_by, created_at) VALUES (\"ht00000000000000000000000000000d\", \"hs00000000000000000000000000000c\", \"prompt\", \"completed\", ?, 0)", (o,))
db.execute("INSERT INTO tasks (id, session_id, command, status, created_by, created_at) VALUES (\"hc00000000000000000000000000000e\", NULL, \"git.clone\", \"completed\", ?, 0)", (o,))
db.commit()
PY
'

test_case "every method taking an id answers a hidden id exactly as an unknown one" "$SCENE"'
  rpc sessions.prompt "{\"session_id\":\"hs00000000000000000000000000000c\",\"prompt\":\"hello\"}" > prompted
  for _ in $(seq 1 100); do [ -s payload.json ] && break; sleep 0.05; done
  [ -s payload.json ] || { cat prompted daemon.log; fail "the prompt task did not start"; }
  python3 - "$AGOR_HOME/run/agor.sock" "$TEST_TOP/test/helpers/ws-rpc.py" "$port" "$bob_token" "$bob" <<PY
import json, os, socket, subprocess, sys, uuid
sock_path, ws_rpc, port, token, bob = sys.argv[1:6]
payload = json.load(open("payload.json"))

def line_reader(s):
    f = s.makefile("rb")
    return lambda: json.loads(f.readline())

# the owner watches (events.subscribe), and the prompt task asks a permission: a pending request hidden from bob
watcher = socket.socket(socket.AF_UNIX); watcher.connect(sock_path); read_watcher = line_reader(watcher)
watcher.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "events.subscribe", "params": {}}) + "\n").encode())
assert "result" in read_watcher()
asker = socket.socket(socket.AF_UNIX); asker.connect(sock_path)
asker.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "request_permission", "params": {
    "session_token": payload["sessionToken"], "task_id": payload["params"]["taskId"], "tool_name": "Bash",
    "tool_input": {"command": "ls"}}}) + "\n").encode())
request_id = None
while not request_id:
    m = read_watcher()
    if m.get("params", {}).get("type") == "permission.requested":
        request_id = m["params"]["data"]["request_id"]

W, S, T, C = ("hw00000000000000000000000000000a", "hs00000000000000000000000000000c",
              "ht00000000000000000000000000000d", "hc00000000000000000000000000000e")
mine = "bw00000000000000000000000000000b"
probes = [  # (method, params with {id} for the id under test)
    ("worktrees.get", {"id": "{id}"}, W),
    ("worktrees.remove", {"id": "{id}", "wait": False}, W),
    ("worktrees.owners.list", {"worktree_id": "{id}"}, W),
    ("worktrees.owners.add", {"worktree_id": "{id}", "user_id": bob}, W),
    ("worktrees.owners.remove", {"worktree_id": "{id}", "user_id": bob}, W),
    ("worktrees.set_access", {"worktree_id": "{id}", "others_can": "view"}, W),
    ("sessions.create", {"worktree_id": "{id}", "tool": "claude-code"}, W),
    ("exec.run", {"worktree_id": "{id}", "argv": ["true"], "wait": False}, W),
    ("exec.run", {"host": "gateway", "worktree_id": "{id}", "argv": ["true"], "wait": False}, W),
    ("terminal.open", {"worktree_id": "{id}"}, W),
    ("sessions.get", {"id": "{id}"}, S),
    ("sessions.prompt", {"session_id": "{id}", "prompt": "hi"}, S),
    ("messages.list", {"session_id": "{id}"}, S),
    ("exec.run", {"host": "node", "session_id": "{id}", "argv": ["true"], "wait": False}, S),
    ("exec.run", {"host": "gateway", "worktree_id": mine, "session_id": "{id}", "argv": ["true"], "wait": False}, S),
    ("exec.run", {"worktree_id": mine, "session_id": "{id}", "argv": ["true"], "wait": False}, S),
    ("tasks.get", {"id": "{id}"}, T),
    ("tasks.cancel", {"id": "{id}"}, T),
    ("messages.list", {"task_id": "{id}"}, T),
    ("tasks.get", {"id": "{id}"}, C),
    ("tasks.cancel", {"id": "{id}"}, C),
    ("messages.list", {"task_id": "{id}"}, C),
    ("permissions.respond", {"request_id": "{id}", "approved": False}, request_id),
]

def fill(v, ident):
    return json.loads(json.dumps(v).replace("{id}", ident))

msgs = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "auth.token", "params": {"token": token}})]
unknown = {}
for i, (method, params, hidden) in enumerate(probes):
    unknown[i] = uuid.uuid4().hex
    msgs.append(json.dumps({"jsonrpc": "2.0", "id": 2 * i + 1, "method": method, "params": fill(params, hidden)}))
    msgs.append(json.dumps({"jsonrpc": "2.0", "id": 2 * i + 2, "method": method, "params": fill(params, unknown[i])}))
out = subprocess.run([sys.executable, ws_rpc, "127.0.0.1", port] + msgs, capture_output=True, text=True, timeout=60).stdout
replies = {r["id"]: r for r in map(json.loads, filter(None, out.splitlines())) if "id" in r}
assert "result" in replies[0], replies[0]

def shape(reply, ident):
    if reply is None:
        return ("no answer",)
    err = reply.get("error")
    if not err:
        return ("answered", json.dumps(reply.get("result"))[:200])
    data = err.get("data", {})
    return (data.get("code"), err["message"].replace(ident, "<id>"), json.dumps(data.get("details")).replace(ident, "<id>"))

bad = 0
for i, (method, params, hidden) in enumerate(probes):
    h, u = shape(replies.get(2 * i + 1), hidden), shape(replies.get(2 * i + 2), unknown[i])
    ok = h == u and h[0] == "NOT_FOUND"
    bad += not ok
    print(("ok   " if ok else "LEAK ") + method + " " + json.dumps(params) + "\n  hidden:  " + str(h) + "\n  unknown: " + str(u))
sys.exit(1 if bad else 0)
PY
'

test_done
