#!/usr/bin/env bash
# t0082-agent-codex — Codex through its app-server (issue 21): `agor prompt` drives the real Codex CLI (npm) via the
# daemon against the scripted Responses endpoint. Each command and patch Codex wants asks the daemon
# (request_permission): the creator's no means it never runs, yes means it runs; acceptEdits approves patches
# only, bypassPermissions everything; plan mode reads but cannot write (agor's sandbox, no nested bwrap); the
# thread resumes on the next prompt.
. "$(dirname "$0")/../lib.sh"

. "$TEST_TOP/test/agent-cli.sh"   # $CODEX, pinned, installed once

# The daemon runs as root in insulated mode: every executor (and so Codex) runs as agor_executor, sandboxed.
SCENE='
  [ -n "${TRACE:-}" ] && set -x
  OPENAI_KEY=sk-openai-SECRET-7777
  python3 "$TEST_TOP/test/helpers/openai-server.py" openai-port openai.log > /dev/null 2>&1 &
  openai_pid=$!
  for i in $(seq 1 400); do [ -s openai-port ] && break; sleep 0.05; done
  [ -s openai-port ] || fail "the scripted endpoint did not start"
  mkdir -p data && chmod 755 "$T" data
  printf "paths:\n  data_home: %s/data\ndaemon:\n  socket_path: /run/agor/agor.sock\nexecution:\n  unix_user_mode: insulated\n  permission_timeout_ms: 20000\nagents:\n  codex:\n    command: %s\n    base_url: http://127.0.0.1:%s/v1\n    model: gpt-5.5\n" \
    "$T" "$CODEX" "$(cat openai-port)" > config.yaml
  chmod 600 config.yaml
  a() { "$AGOR" "$@" --config "$PWD/config.yaml"; }
  DAEMON_SOCKET=/run/agor/agor.sock
  insulated_agent_host
  scene_cleanup() {
    kill $openai_pid 2> /dev/null || true
    rmdir /sys/fs/cgroup/*/agor/agor_executor /sys/fs/cgroup/agor/agor_executor 2> /dev/null || true
  }
  start_daemon --config "$PWD/config.yaml"
  a repo clone "$PWD/src" --json > clone.json || { cat clone.json daemon.log; fail "clone failed"; }
  a worktree add "$(json_get clone.json repo.id)" wt1 --branch feat --create-branch --json > wt.json || { cat wt.json; fail "worktree add failed"; }
  wt=$(json_get wt.json worktree.id)
  a worktree get "$wt" --json > wt.json && wt_path=$(json_get wt.json path)
  a session create "$wt" --tool codex --permission-mode "$MODE" --json > session.json
  session=$(json_get session.json id)
  echo "$OPENAI_KEY" | a api-key set openai > /dev/null
  task_of() { sed -n "s/^task \([0-9a-f]*\)$/\1/p" "$1" | head -1; }
  # ask ANSWER PROMPT OUT — one prompt answered --yes or --no; OUT and OUT.err hold what it printed
  ask() { a prompt "$session" "$2" "--$1" > "$3" 2> "$3.err" || { cat "$3" "$3.err" daemon.log; fail "prompt failed: $2"; }; }
  # decisions TOOL — the audited permission decisions of TOOL, one "outcome decider" a line
  decisions() {
    rpc audit.list > audit.json
    python3 - audit.json "$1" <<PY
import json, sys
rows = json.load(open(sys.argv[1]))["result"]
for r in rows:
    d = r.get("details") or {}
    d = json.loads(d) if isinstance(d, str) else d
    if r.get("action") == "request_permission" and d.get("tool") == sys.argv[2]:
        print(r.get("outcome"), d.get("decider"))
PY
  }
'

DEFAULT_NO='
  ask no "please RUN: echo no > denied.txt" out
  expect_contains out "[tool] command_execution"
  expect_contains out "[permission] command_execution denied"
  expect_contains out "All done."
  expect_contains out "[completed]"
  [ ! -e "$wt_path/denied.txt" ] || fail "a command the creator declined ran"
  ask no "please PATCH: patched.txt from-a-patch" out2
  expect_contains out2 "[permission] file_change denied"
  [ ! -e "$wt_path/patched.txt" ] || fail "a patch the creator declined was applied"
  decisions command_execution > cmd.decisions; decisions file_change > patch.decisions
  cat cmd.decisions patch.decisions
  grep -q . cmd.decisions && grep -q . patch.decisions || { tail -c 3000 audit.json; fail "no permission request was recorded"; }
  ! grep -qi "approved" cmd.decisions patch.decisions || fail "a declined request is audited as approved"
  task=$(task_of out.err)
  rpc messages.list "{\"task_id\":\"$task\"}" > msgs
  python3 - msgs <<PY
import json, sys
rows = json.load(open(sys.argv[1]))["result"]
results = [json.loads(r["data"]) if isinstance(r["data"], str) else r["data"] for r in rows if r["message_type"] == "tool_result"]
assert results and all(r["is_error"] and r["status"] == "declined" for r in results), results
PY
  ! grep -rq "$OPENAI_KEY" daemon.log out out.err out2 out2.err || fail "the key leaked into a log or the output"
'

DEFAULT_YES='
  ask yes "please RUN: echo yes > made.txt" out
  expect_contains out "[permission] command_execution allowed"
  expect_contains out "[completed]"
  [ "$(stat -c %U "$wt_path/made.txt")" = agor_executor ] || { cat out; fail "an approved command did not run as the execution user"; }
  ask yes "please PATCH: patched.txt from-a-patch" out2
  expect_contains out2 "[permission] file_change allowed"
  grep -qx from-a-patch "$wt_path/patched.txt" || { cat out2; fail "an approved patch was not applied"; }
  a task get "$(task_of out.err)" --json > task.json
  python3 -c "import json; t=json.load(open(\"task.json\")); u=json.loads(t[\"token_usage\"]); assert u[\"input_tokens\"] >= 84 and u[\"output_tokens\"] >= 14, u"
  # resume: the next prompt continues the same thread (the endpoint sees the earlier turns)
  a session get "$session" --json > session.json && thread=$(json_get session.json agent_session_id)
  [ -n "$thread" ] && [ "$thread" != null ] || fail "the codex thread id was not kept"
  ask no "say hello" out3
  expect_contains out3 "Hello from the scripted model."
  tail -1 openai.log | grep -q "echo yes > made.txt" || fail "the next prompt did not resume the codex thread"
  a session get "$session" --json > session.json && expect_json session.json agent_session_id "$thread"
'

PLAN='
  ask no "please RUN: cat hello.txt && ls -a" out
  expect_contains out "[tool result]"
  expect_contains out "hello"
  expect_not_contains out "[permission]"
  expect_not_contains out "bwrap"
  ask no "please RUN: echo x > plan.txt" out2
  expect_contains out2 "[tool error]"
  expect_contains out2 "Read-only file system"
  [ ! -e "$wt_path/plan.txt" ] || fail "plan mode wrote to the worktree"
  ask no "please PATCH: plan-patch.txt x" out3
  [ ! -e "$wt_path/plan-patch.txt" ] || fail "plan mode applied a patch"
  head=$(git -c safe.directory="*" -C "$wt_path" rev-parse HEAD)
  ask no "please RUN: git -c user.name=a -c user.email=a@b commit --allow-empty -m sneaky" out4
  expect_contains out4 "Read-only file system"
  [ "$(git -c safe.directory="*" -C "$wt_path" rev-parse HEAD)" = "$head" ] || fail "plan mode committed to the repository"
  a task get "$(task_of out.err)" --json > task.json
  python3 - task.json "$wt_path" <<PY
import json, sys
mounts = json.loads(json.load(open(sys.argv[1]))["result"])["sandbox"]["mounts"]
assert sys.argv[2] in mounts["readOnly"] and sys.argv[2] not in mounts["readWrite"], mounts
PY
'

ACCEPT_EDITS='
  ask no "please PATCH: patched.txt by-mode" out
  grep -qx by-mode "$wt_path/patched.txt" || { cat out; fail "acceptEdits did not approve a patch"; }
  decisions file_change | grep -q . || fail "the patch approval was not recorded"
  ask no "please RUN: echo no > denied.txt" out2
  expect_contains out2 "[permission] command_execution denied"
  [ ! -e "$wt_path/denied.txt" ] || fail "acceptEdits ran a command the creator declined"
'

BYPASS='
  ask no "please RUN: echo yes > made.txt" out
  expect_not_contains out "[permission]"
  [ -e "$wt_path/made.txt" ] || { cat out; fail "bypassPermissions did not run the command"; }
'

# The creator is connected but never answers; the task is cancelled while Codex waits for the decision.
CANCEL_WAITING='
  python3 - /run/agor/agor.sock events.out > /dev/null 2>&1 <<PY &
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"events.subscribe\",\"params\":{}}\n")
with open(sys.argv[2], "w") as out:
    for line in s.makefile():
        out.write(line); out.flush()
PY
  watcher=$!
  for i in $(seq 1 100); do grep -q subscribed events.out 2> /dev/null && break; sleep 0.1; done
  rpc sessions.prompt "{\"session_id\":\"$session\",\"prompt\":\"please RUN: echo late > late.txt\"}" > reply
  task=$(json_get reply result.task_id)
  for i in $(seq 1 300); do grep -q permission.requested events.out && break; sleep 0.1; done
  grep -q permission.requested events.out || { kill $watcher; fail "codex never asked"; }
  a task cancel "$task" > /dev/null
  for i in $(seq 1 100); do a task get "$task" --json > task.json && [ "$(json_get task.json status)" = cancelled ] && break; sleep 0.1; done
  kill $watcher
  expect_json task.json status cancelled
  mine() { for p in $(pgrep -u agor_executor); do case $(readlink /proc/$p/cwd 2>/dev/null) in "$T"*) echo $p;; esac; done; }
  for i in $(seq 1 50); do [ -z "$(mine)" ] && break; sleep 0.1; done
  [ -z "$(mine)" ] || { ps -fp "$(mine | tr "\n" ,)0"; fail "codex or its executor survived the cancel"; }
  sleep 1
  [ ! -e "$wt_path/late.txt" ] || fail "the command ran after the cancel"
'

scratch() { in_scratch_system "TEST_TOP='$TEST_TOP' CODEX='$CODEX' MODE='$1' TRACE='${TRACE:-}'
$SCENE
$2"; }

if ! is_root; then
  test_skip "Codex through the daemon" "needs root (users are made in a private mount namespace)"
elif [ ! -x "$CODEX" ]; then
  test_skip "Codex through the daemon" "the npm registry is unreachable: the Codex CLI is not installed"
else
  test_case "attack: default mode, the creator says no: neither the command nor the patch runs; both were asked" 'scratch default "$DEFAULT_NO"'
  test_case "default mode, the creator says yes: the command runs, the patch applies; usage kept; the thread resumes" 'scratch default "$DEFAULT_YES"'
  test_case "attack: plan mode: a read-only command works (no nested bwrap), a write or patch fails" 'scratch plan "$PLAN"'
  test_case "acceptEdits: a patch is approved by the mode, a command still asks" 'scratch acceptEdits "$ACCEPT_EDITS"'
  test_case "bypassPermissions: the command runs without asking" 'scratch bypassPermissions "$BYPASS"'
  test_case "attack: a task cancelled while Codex waits for a decision ends; nothing is left running, nothing ran" 'scratch default "$CANCEL_WAITING"'
fi

test_done
