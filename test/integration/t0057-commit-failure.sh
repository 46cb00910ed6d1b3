#!/usr/bin/env bash
# t0057-commit-failure — the commit of a daemon write batch failing with ENOSPC or EIO (docs/recovery.md): no caller
# is told ok for a write that is not stored (its reply names the cause and what to do), no event tells of a lost
# write while every stored one is told, and a task whose ending rode in the lost batch is failed naming why instead
# of staying running; the database passes PRAGMA integrity_check and `agor audit verify`, and a retried prompt runs.
# The faults come from lib/fault.h's seam (the ASan build): in the product build these cases are counted skips.
. "$(dirname "$0")/../lib.sh"

sql() { python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10); r = c.execute(sys.argv[2]).fetchall(); print(\"\" if not r or r[0][0] is None else r[0][0])" "$AGOR_HOME/agor.db" "$1"; }

# The scene: a daemon whose executor is a template that keeps its payload (with the task's session token) and
# waits for ./release, then prints ./result as its outcome; a repository, a worktree and a session to prompt in.
# scene SPEC — the daemon armed with AGOR_FAULT=SPEC (traced in ./trace); a subscriber records every event.
scene() {
  printf 'execution:\n  executor_command_template: "cat > %s/payload.json; while [ ! -e %s/release ]; do sleep 0.02; done; cat %s/result"\n' \
    "$PWD" "$PWD" "$PWD" > config.yaml
  chmod 600 config.yaml
  echo '{"success":true,"data":{}}' > result
  AGOR_FAULT=$1 AGOR_FAULT_TRACE=$PWD/trace start_daemon --config "$PWD/config.yaml"
  owner=$(rpc users.list | python3 -c "import json,sys; print(json.load(sys.stdin)['result'][0]['id'])")
  sql "SELECT 1" > /dev/null
  python3 - "$AGOR_HOME/agor.db" "$owner" << 'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10); o = sys.argv[2]
db.execute("INSERT INTO repos (id, url, path, created_by, created_at) VALUES ('r1', '/src', '/d/repos/o/r.git', ?, 0)", (o,))
db.execute("INSERT INTO worktrees (id, repo_id, name, path, created_by, created_at) VALUES ('w1', 'r1', 'w', '/d/worktrees/o/r/w', ?, 0)", (o,))
db.commit()
PY
  session=$(rpc sessions.create '{"worktree_id":"w1","tool":"claude-code"}' | python3 -c "import json,sys; print(json.load(sys.stdin)['result']['id'])")
  python3 -u -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"events.subscribe\"}\n")
f = s.makefile("rb"); f.readline(); open("subscribed", "w").close()
for line in f:
    sys.stdout.write(line.decode())
' "$AGOR_HOME/run/agor.sock" > events.out &
  events_pid=$!
  for _ in $(seq 1 100); do [ -e subscribed ] && break; sleep 0.05; done
  [ -e subscribed ] || fail "the subscriber did not subscribe"
}

# prompt_task — a prompt in the session, its executor waiting: its task id in $task, its session token in $token.
prompt_task() {
  rm -f payload.json release
  rpc sessions.prompt "{\"session_id\":\"$session\",\"prompt\":\"burst\",\"wait\":false}" > prompt.out
  for _ in $(seq 1 200); do [ -s payload.json ] && break; sleep 0.05; done
  [ -s payload.json ] || { cat prompt.out; fail "the executor never got its payload"; }
  token=$(python3 -c "import json; print(json.load(open('payload.json'))['sessionToken'])")
  task=$(python3 -c "import json; print(json.load(open('payload.json'))['params']['taskId'])")
}

# settled TASK — waits until TASK is neither queued nor running, and prints its status.
settled() {
  local status=""
  for _ in $(seq 1 200); do
    status=$(sql "SELECT status FROM tasks WHERE id = '$1'")
    case $status in queued | running) sleep 0.05 ;; *) echo "$status"; return 0 ;; esac
  done
  fail "task $1 stayed $status"
}

# consistent — the database is whole and the audit chain verifies.
consistent() {
  [ "$(sql "PRAGMA integrity_check")" = ok ] || fail "integrity_check: $(sql "PRAGMA integrity_check")"
  "$AGOR" audit verify > verify.out 2>&1 || { cat verify.out; fail "audit verify failed"; }
}

# the_fault_hit — the armed point was reached (the trace shows its errno).
the_fault_hit() {
  grep -Eq "^daemon [0-9]+ sqlite [0-9]+ sqlite\.(write|sync) (No space left on device|Input/output error)$" trace ||
    { tail -20 trace; fail "the fault was never reached"; }
}

# burst_case ACTION CAUSE — 40 notifications and 10 calls in one write, the first commit after it armed to fail.
burst_case() {
  scene "daemon:sqlite@batch.commit:1:$1"
  prompt_task
  python3 "$TEST_TOP/test/helpers/batch-burst.py" "$AGOR_HOME/run/agor.sock" "$token" "$task" 40 10 > replies || fail "the burst got no replies"
  the_fault_hit
  # every call told ok has its row; the calls of the lost batch were told why, naming the cause and what to do
  python3 - "$AGOR_HOME/agor.db" "$task" replies "$2" << 'PY' || fail "a reply and the database disagree"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
stored = {json.loads(d)["burst"] for (d,) in db.execute("SELECT data FROM messages WHERE task_id = ?", (sys.argv[2],))}
errors = 0
for line in open(sys.argv[3]):
    r = json.loads(line)
    name = "c%d" % r["id"]
    if "result" in r:
        assert name in stored, f"{name} was answered ok but is not stored"
    else:
        errors += 1
        msg = r["error"]["message"]
        assert sys.argv[4] in msg and "not stored" in msg and "retry" in msg, msg
        assert name not in stored, f"{name} was answered with an error but is stored"
assert errors >= 1, "no call of the lost batch was told: every reply said ok"
lost = {f"n{i}" for i in range(40)} - stored
assert lost, "the notifications of the lost batch are stored: the commit did not fail where armed"
print(f"{errors} call(s) told the cause, {len(lost)} notification(s) lost with the batch, {len(stored)} stored")
PY
  touch release
  [ "$(settled "$task")" != running ] || fail "the task stayed running"
  kill "$events_pid" 2> /dev/null || true
  wait "$events_pid" 2> /dev/null || true
  # no event told of a lost message; every stored one was told to the reading subscriber
  python3 - "$AGOR_HOME/agor.db" "$task" events.out << 'PY' || fail "the events and the database disagree"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
stored = {json.loads(d)["burst"] for (d,) in db.execute("SELECT data FROM messages WHERE task_id = ?", (sys.argv[2],))}
told = set()
for line in open(sys.argv[3], "rb").read().decode().splitlines():
    if not line.strip():
        continue
    e = json.loads(line)
    if e.get("method") == "event" and e["params"]["type"] == "message":
        told.add(e["params"]["data"]["data"]["burst"])
assert told <= stored, f"events told of messages that are not stored: {sorted(told - stored)}"
assert stored <= told, f"stored messages were never told: {sorted(stored - told)}"
PY
  grep -q "could not commit a batch of writes" daemon.log || fail "the failed commit was not logged"
  consistent
  stop_daemon
}

test_case --needs faults,python3-sqlite3 "ENOSPC at the commit of a burst of writes: no call told ok for a row that is not stored, no event of a lost row" '
  burst_case ENOSPC "ENOSPC"
'

test_case --needs faults,python3-sqlite3 "EIO at the commit of a burst of writes: no call told ok for a row that is not stored, no event of a lost row" '
  burst_case EIO "EIO"
'

# ending_case ACTION CAUSE — the commit carrying the task's ending (its status, token revocation, audit row) fails.
ending_case() {
  scene "daemon:sqlite@task.ended:1:$1"
  prompt_task
  first=$task
  touch release
  status=$(settled "$first")
  the_fault_hit
  [ "$status" = failed ] || fail "the task whose ending was lost is $status, not failed"
  error=$(sql "SELECT error FROM tasks WHERE id = '$first'")
  case $error in *"its outcome was not stored"*"$2"*) ;; *) fail "the error of the task does not say why: $error" ;; esac
  [ "$(sql "SELECT count(*) FROM tokens WHERE task_id = '$first' AND revoked_at IS NULL")" = 0 ] || fail "the token of the lost task is not revoked"
  grep -q "task.outcome_lost" <(rpc audit.list) || fail "the rewrite is not audited"
  # the retried prompt runs and completes: the session is usable
  prompt_task
  [ "$task" != "$first" ] || fail "no new task"
  touch release
  [ "$(settled "$task")" = completed ] || fail "the retried prompt did not complete"
  kill "$events_pid" 2> /dev/null || true
  wait "$events_pid" 2> /dev/null || true
  python3 - events.out "$first" << 'PY' || fail "the events of the lost ending are wrong"
import json, sys
told = [json.loads(l)["params"]["data"] for l in open(sys.argv[1]) if '"task.updated"' in l]
told = [e["status"] for e in told if e.get("id") == sys.argv[2]]
assert "failed" in told, f"no task.updated told the task failed: {told}"
assert "completed" not in told, f"an event told of the lost completion: {told}"
PY
  consistent
  stop_daemon
  start_daemon --config "$PWD/config.yaml"
  [ "$(sql "SELECT status FROM tasks WHERE id = '$first'")" = failed ] || fail "the restart changed the rewritten task"
  consistent
  stop_daemon
}

test_case --needs faults,python3-sqlite3 "ENOSPC at the commit of a task ending: the task is failed naming why, not left running; the session prompts again" '
  ending_case ENOSPC "ENOSPC"
'

test_case --needs faults,python3-sqlite3 "EIO at the commit of a task ending: the task is failed naming why, not left running; the session prompts again" '
  ending_case EIO "EIO"
'

test_done
