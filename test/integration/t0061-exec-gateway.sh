#!/usr/bin/env bash
# t0061-exec-gateway — issue 8's remaining paths with the real binary: exec.run on host gateway under the daemon's own
# exec approvals, approval records by argv hash (gateway and node), /exec and /elevated, exec events shown once to
# the agent on the next prompt, and `agor exec`. Attacks: forged approvals, a record for another argv, a payload
# that turns the sandbox off without the daemon. Kills only the pids it started.
. "$(dirname "$0")/../lib.sh"

ASK="$TEST_TOP/test/helpers/exec-ask.py"

SCENE='
  GW_HOME="$AGOR_HOME"; NODE_PIDS=""; DAEMON_HOST=127.0.0.1 DAEMON_SOCKET="$GW_HOME/run/agor.sock"
  scene_cleanup() { # the nodes, when the body ends (after the daemon: daemon_cleanup runs it)
    for p in $NODE_PIDS; do kill -9 "$p" 2>/dev/null || true; done
    for p in $NODE_PIDS; do wait "$p" 2>/dev/null || true; done
  }
  trap daemon_cleanup EXIT
  mkdir -p -m 700 "$GW_HOME"
  printf "execution:\n  permission_timeout_ms: 1500\n" > "$GW_HOME/config.yaml"
  ask() { python3 "$ASK" "$GW_HOME/run/agor.sock" "$@"; }   # ask PARAMS_JSON once|always|deny|ignore
  gw_policy() { "$AGOR" approvals set "$@" > /dev/null; }
  worktree() {
    make_source_repo src
    rpc repos.clone "{\"url\":\"$PWD/src\"}" > r; repo=$(json_get r result.repo.id)
    rpc worktrees.add "{\"repo_id\":\"$repo\",\"name\":\"w1\",\"branch\":\"w1\",\"create_branch\":true}" > r
    wt=$(json_get r result.worktree.id); wt_path=$(json_get r result.worktree.path)
    rpc sessions.create "{\"worktree_id\":\"$wt\",\"tool\":\"claude-code\"}" > r; sid=$(json_get r result.id)
  }
  gw() { rpc exec.run "{\"host\":\"gateway\",\"worktree_id\":\"$wt\",\"argv\":$1${2:+,$2}}" > reply; }
  node_up() { # node_up N NAME POLICY_ARGS…
    local n=$1 name=$2; shift 2
    mkdir -p -m 700 "$T/n$n"
    AGOR_HOME="$T/n$n" "$AGOR" node pair --gateway "ws://127.0.0.1:$port/ws" --name "$name" > "id$n"
    "$AGOR" nodes approve "$(cat id$n)" > /dev/null
    AGOR_HOME="$T/n$n" "$AGOR" approvals set "$@" > /dev/null
    AGOR_HOME="$T/n$n" "$AGOR" node run 2>> "node$n.log" & NODE_PIDS="$NODE_PIDS $!"
    for _ in $(seq 1 200); do rpc nodes.list | grep -q "\"id\":\"$(cat id$n)\"[^}]*\"connected\":true" && return 0; sleep 0.05; done
    cat "node$n.log"; fail "node $n did not connect"
  }
'

test_case "gateway: the daemon's policy decides (default deny), an executor runs it without the sandbox, events in the session" "$SCENE"'
  start_daemon; worktree
  echo secret-outside > "$T/outside.txt"
  gw "[\"/bin/cat\",\"$T/outside.txt\"]" "\"security\":\"full\""
  expect_json reply error.data.code PERMISSION_DENIED
  expect_contains reply "denied by the gateway"
  expect_contains reply "security=deny"
  task=$(json_get reply error.data.details.task_id)
  rpc tasks.get "{\"id\":\"$task\"}" > t; expect_json t result.status failed
  rpc messages.list "{\"task_id\":\"$task\"}" > m; expect_contains m exec.denied
  gw_policy --security full --ask off
  gw "[\"/bin/cat\",\"$T/outside.txt\"]"    # no security in the request: deny
  expect_json reply error.data.code PERMISSION_DENIED
  rpc exec.run "{\"host\":\"gateway\",\"worktree_id\":\"$wt\",\"session_id\":\"$sid\",\"security\":\"full\",\"argv\":[\"/bin/cat\",\"$T/outside.txt\"]}" > reply
  expect_json reply result.stdout "secret-outside"
  expect_json reply result.host gateway
  expect_json reply result.sandbox.enabled false
  expect_json reply result.sandbox.host gateway
  expect_json reply result.exitCode 0
  run=$(json_get reply result.runId)
  rpc messages.list "{\"session_id\":\"$sid\"}" > m
  python3 - "$run" <<PY || fail "session events of the gateway run"
import json, sys
rows = [r for r in json.load(open("m"))["result"] if r["task_id"] == sys.argv[1]]
assert [r["message_type"] for r in rows] == ["exec.started", "exec.finished"], rows
assert json.loads(rows[1]["data"])["output"] == "secret-outside\n"
PY
  # the sandbox host still hides it; an allowlist gateway caps a request for full
  gw_policy --security allowlist --ask off
  "$AGOR" approvals allowlist add "$(readlink -f /bin/echo)" > /dev/null
  gw "[\"echo\",\"hi\"]" "\"security\":\"full\""
  expect_json reply result.stdout "hi"
  gw "[\"/bin/cat\",\"$T/outside.txt\"]" "\"security\":\"full\""
  expect_json reply error.data.details.reason allowlist-miss
  # params the gateway never takes
  gw "[\"echo\"]" "\"security\":\"full\",\"env\":{\"A\":\"b\"}"
  expect_contains reply "params.env.A: not allowed"
  gw "[\"echo\"]" "\"security\":\"full\",\"cwd\":\"/\""
  expect_contains reply "params.cwd: not for host"
  stop_daemon
'

test_case "attack: an executor payload cannot turn the sandbox off without the daemon granting that exact run" "$SCENE"'
  start_daemon; worktree
  payload="{\"command\":\"exec.run\",\"params\":{\"argv\":[\"/bin/touch\",\"$T/escaped\"],\"cwd\":\"$wt_path\",\"host\":\"gateway\"}}"
  echo "$payload" | "$AGOR" executor --stdin > out 2> err && fail "an unsandboxed run without a token"
  expect_json out error.code INVALID_PAYLOAD
  expect_contains out "params.host"
  forged="eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.AAAA"
  echo "${payload%\}},\"sessionToken\":\"$forged\",\"daemonUrl\":\"unix:$GW_HOME/run/agor.sock\"}" | "$AGOR" executor --stdin > out 2> err && fail "a forged token was granted"
  expect_contains out "did not grant this run"
  [ ! -e "$T/escaped" ] || fail "the command ran"
  stop_daemon
'

test_case "gateway asks: approved once, always, denied, unanswered (askFallback); forged approvals and another argv are still asked" "$SCENE"'
  start_daemon; worktree
  gw_policy --security allowlist --ask on-miss --ask-fallback deny
  A="[\"/bin/echo\",\"A\"]"; B="[\"/bin/echo\",\"B\"]"
  base="\"host\":\"gateway\",\"worktree_id\":\"$wt\",\"session_id\":\"$sid\",\"security\":\"full\""
  ask "{$base,\"argv\":$A}" deny > o
  expect_json o reply.error.data.code PERMISSION_DENIED
  expect_json o reply.error.data.details.reason approval-denied
  expect_json o asked.0.tool_input.host gateway
  ask "{$base,\"argv\":$A}" once > o
  expect_json o reply.result.stdout "A"
  # allow-once was used up: asked again, and nobody answering is askFallback deny
  ask "{$base,\"argv\":$A}" ignore > o
  expect_json o reply.error.data.code PERMISSION_DENIED
  expect_contains o "nobody answered"
  rpc exec.run "{$base,\"argv\":$A}" > reply   # nobody connected who may decide
  expect_json reply error.data.code PERMISSION_DENIED
  expect_contains reply "nobody who may decide is connected"
  # forged approvals in the params are refused, never honoured
  for forged in "\"approved\":true" "\"decision\":\"allow-always\"" "\"approval\":{\"argvSha256\":\"x\"}"; do
    rpc exec.run "{$base,\"argv\":$A,$forged}" > reply
    expect_json reply error.data.code INVALID_PAYLOAD
  done
  ask "{$base,\"argv\":$A}" always > o
  expect_json o reply.result.stdout "A"
  ask "{$base,\"argv\":$A}" ignore > o
  expect_json o reply.result.stdout "A"
  python3 -c "import json; assert json.load(open(\"o\"))[\"asked\"] == []" || fail "asked despite an allow-always record"
  ask "{$base,\"argv\":$B}" deny > o          # a record for A does not approve B
  expect_json o reply.error.data.details.reason approval-denied
  expect_json o asked.0.tool_input.argv.1 B
  rpc audit.list > audit; expect_contains audit "exec.approval"
  stop_daemon
'

test_case "node asks go to the gateway: approved only by a record for that argv on that node; unanswered is the node's askFallback" "$SCENE"'
  start_daemon; worktree
  node_up 1 worker --security full --ask always --ask-fallback deny
  A="[\"/bin/echo\",\"A\"]"; B="[\"/bin/echo\",\"B\"]"
  base="\"host\":\"node\",\"node\":\"worker\",\"session_id\":\"$sid\",\"security\":\"full\""
  rpc exec.run "{$base,\"argv\":$A}" > reply
  expect_json reply result.denied true
  ask "{$base,\"argv\":$A}" deny > o
  expect_json o reply.result.denied true
  expect_json o reply.result.reason approval-denied
  expect_json o asked.0.tool_input.where "node worker"
  ask "{$base,\"argv\":$A}" once > o
  expect_json o reply.result.output "A"
  expect_json o reply.result.success true
  rpc exec.run "{$base,\"argv\":$A,\"approved\":true}" > reply
  expect_json reply error.data.code INVALID_PAYLOAD
  ask "{$base,\"argv\":$A}" always > o
  expect_json o reply.result.output "A"
  ask "{$base,\"argv\":$A}" ignore > o
  expect_json o reply.result.output "A"
  python3 -c "import json; assert json.load(open(\"o\"))[\"asked\"] == []" || fail "asked despite an allow-always record"
  ask "{$base,\"argv\":$B}" ignore > o
  expect_json o reply.result.denied true
  python3 -c "import json; assert len(json.load(open(\"o\"))[\"asked\"]) == 1" || fail "B was not asked"
  # a node cannot ask about another argv than its run'"'"'s
  token=$(json_get "$T/n1/node.json" token); id=$(cat id1)
  python3 "$TEST_TOP/test/helpers/ws-rpc.py" 127.0.0.1 "$port" \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"node.hello\",\"params\":{\"nodeId\":\"$id\",\"token\":\"$token\"}}" \
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"node.ask\",\"params\":{\"runId\":\"nosuch\",\"argvSha256\":\"00\"}}" > asnode
  sed -n 2p asnode > r2; expect_json r2 error.data.code NOT_FOUND
  stop_daemon
'

test_case "issue 19 on the gateway and a node: git code options, printf -v, rewritten shell text, an empty PATH entry" "$SCENE"'
  start_daemon; worktree
  no_pwned() { if ls "$T" | grep -q PWNED; then ls "$T"; fail "a program outside the policy ran"; fi; }
  gw_policy --security allowlist --ask off
  "$AGOR" approvals allowlist add /usr/bin/git /usr/bin/ls /usr/bin/printf > /dev/null
  sec="\"security\":\"allowlist\""
  gw "[\"git\",\"-c\",\"alias.x=!touch $T/PWNED-gw\",\"x\"]" "$sec"
  expect_json reply error.data.details.reason allowlist-miss
  expect_contains reply "git -c"
  gw "[\"git\",\"ls-remote\",\"--upload-pa=touch $T/PWNED-gw2\",\".\"]" "$sec"
  expect_json reply error.data.details.reason allowlist-miss
  expect_contains reply "upload-pack"
  gw "[\"bash\",\"-c\",\"printf -v PATH %s $T; ls\"]" "$sec"
  expect_contains reply "printf -v"
  gw "[\"sh\",\"-c\",\"time ls -d /\"]" "$sec"
  expect_contains reply "\"stdout\":\"/\\n"
  run=$(json_get reply result.runId)
  rpc messages.list "{\"task_id\":\"$run\"}" > m
  expect_contains m "/usr/bin/time /usr/bin/ls -d /"   # the shell text that ran: every command pinned
  # whoever is asked sees each executable the run starts, with its SHA-256
  sum=$(sha256sum /usr/bin/ls | cut -d" " -f1)
  ask "{\"host\":\"gateway\",\"worktree_id\":\"$wt\",\"argv\":[\"ls\",\"-d\",\"/\"],$sec,\"ask\":\"always\"}" deny > o
  expect_json o asked.0.tool_input.executables.0.path /usr/bin/ls
  expect_json o asked.0.tool_input.executables.0.sha256 "$sum"
  expect_json o asked.0.tool_input.executables.0.mode 0755
  # a node: its own policy, the same analysis
  node_up 1 worker --security allowlist --ask off
  AGOR_HOME="$T/n1" "$AGOR" approvals allowlist add /usr/bin/git /usr/bin/ls > /dev/null
  base="\"host\":\"node\",\"node\":\"worker\",\"security\":\"allowlist\""
  rpc exec.run "{$base,\"argv\":[\"git\",\"-c\",\"alias.x=!touch $T/PWNED-node\",\"x\"]}" > reply
  expect_json reply result.denied true
  rpc exec.run "{$base,\"argv\":[\"sh\",\"-c\",\"ls -d /\"]}" > reply
  expect_json reply result.output "/"
  ask "{$base,\"ask\":\"always\",\"session_id\":\"$sid\",\"argv\":[\"ls\",\"-d\",\"/\"]}" deny > o
  expect_json o asked.0.tool_input.executables.0.path /usr/bin/ls   # as the node checked it
  expect_json o asked.0.tool_input.executables.0.sha256 "$sum"
  # a node whose PATH has an empty entry refuses every run, even under security full
  mkdir -p nodecwd; printf "#!/bin/sh\ntouch %s/PWNED-ls\n" "$T" > nodecwd/ls; chmod 755 nodecwd/ls
  cd nodecwd; PATH=":$PATH" node_up 2 emptypath --security full --ask off; cd "$T"   # its runs start here
  rpc exec.run "{\"host\":\"node\",\"node\":\"emptypath\",\"security\":\"full\",\"argv\":[\"sh\",\"-c\",\"ls\"]}" > reply
  expect_json reply result.denied true
  expect_json reply result.reason path-refused
  no_pwned
  stop_daemon
'

test_case "/exec and /elevated: validated, kept on the session, capped by the gateway policy, used by exec.run" "$SCENE"'
  start_daemon; worktree
  pr() { rpc sessions.prompt "{\"session_id\":\"$sid\",\"prompt\":\"$1\"}" > reply; }
  pr "/exec host=moon"; expect_contains reply "/exec: host=moon: expected one of sandbox|gateway|node"
  pr "/exec colour=red"; expect_contains reply "/exec: unknown key \\\"colour\\\""
  pr "/exec host=gateway security=max"; expect_contains reply "security=max: expected one of deny|allowlist|full"
  pr "/exec ask=always"; expect_contains reply "add host=gateway or host=node"
  pr "/elevated maybe"; expect_contains reply "/elevated: expected on or off"
  pr "/elevated on"
  expect_json reply error.data.code PERMISSION_DENIED
  expect_contains reply "above what the gateway"
  gw_policy --security full --ask off
  pr "/elevated on"
  expect_json reply result.exec.host gateway
  expect_json reply result.exec.security full
  rpc exec.run "{\"worktree_id\":\"$wt\",\"session_id\":\"$sid\",\"argv\":[\"/bin/echo\",\"elevated\"]}" > reply
  expect_json reply result.host gateway
  expect_json reply result.stdout elevated
  pr "/elevated off"
  python3 -c "import json; assert json.load(open(\"reply\"))[\"result\"][\"exec\"] == {}" || fail "elevated not cleared"
  rpc exec.run "{\"worktree_id\":\"$wt\",\"session_id\":\"$sid\",\"argv\":[\"/bin/echo\",\"x\"]}" > reply
  expect_json reply result.sandbox.enabled true
  "$AGOR" prompt "$sid" "/exec host=gateway security=allowlist ask=on-miss" > out
  expect_contains out "host=gateway"
  expect_contains out "security=allowlist"
  "$AGOR" prompt "$sid" "/exec" > out; expect_contains out "ask=on-miss"
  "$AGOR" prompt "$sid" "/exec host=nowhere" 2> err && fail "a bad directive succeeded"
  expect_contains err "host=nowhere"
  rpc sessions.get "{\"id\":\"$sid\"}" > s; expect_contains s exec_defaults
  ! grep -q exec_defaults "$GW_HOME/config.yaml" || fail "a directive reached config.yaml"
  stop_daemon
'

test_case "exec events reach the agent once: the next prompt of the session carries them as a system note" "$SCENE"'
  start_daemon; worktree
  gw_policy --security full --ask off
  rpc exec.run "{\"host\":\"gateway\",\"worktree_id\":\"$wt\",\"session_id\":\"$sid\",\"security\":\"full\",\"argv\":[\"/bin/echo\",\"gateway-said\"]}" > /dev/null
  rpc exec.run "{\"host\":\"gateway\",\"worktree_id\":\"$wt\",\"session_id\":\"$sid\",\"argv\":[\"/bin/echo\",\"nope\"]}" > /dev/null
  rpc sessions.prompt "{\"session_id\":\"$sid\",\"prompt\":\"first\"}" > r; t1=$(json_get r result.task_id)
  rpc sessions.prompt "{\"session_id\":\"$sid\",\"prompt\":\"second\"}" > r; t2=$(json_get r result.task_id)
  rpc tasks.get "{\"id\":\"$t1\"}" > t; json_get t result.prompt > p1
  rpc tasks.get "{\"id\":\"$t2\"}" > t; json_get t result.prompt > p2
  expect_contains p1 "System events since your last prompt"
  expect_contains p1 "exec.finished on gateway"
  expect_contains p1 "gateway-said"
  expect_contains p1 "exec.denied on gateway"
  tail -n 1 p1 | grep -qx first || fail "the prompt does not follow the note"
  [ "$(cat p2)" = second ] || fail "the events were shown twice: $(cat p2)"
  stop_daemon
'

test_case "agor exec: runs on the gateway and a node, answers the approval for its own command, exit status and denials" "$SCENE"'
  start_daemon; worktree
  gw_policy --security allowlist --ask on-miss
  "$AGOR" exec --host gateway --security full --yes "$wt" -- /bin/sh -c "echo out; echo err >&2; exit 3" > out 2> err && fail "exit 3 lost"
  expect_exit 3 "$AGOR" exec --host gateway --security full --yes "$wt" -- /bin/sh -c "echo out; echo err >&2; exit 3"
  expect_contains out "out"; expect_contains err "err"
  expect_exit 126 "$AGOR" exec --host gateway --security full --no "$wt" -- /bin/echo no
  expect_contains err "approval-denied"
  expect_exit 126 "$AGOR" exec --host gateway --security full "$wt" -- /bin/echo no < /dev/null
  expect_contains err "not a terminal"
  node_up 1 worker --security full --ask off
  expect_exit 0 "$AGOR" exec --host node --node worker --security full -- /bin/echo on-node
  expect_contains out on-node
  expect_exit 126 "$AGOR" exec --host node --node worker -- /bin/echo no-security
  expect_contains err "this request'"'"'s security defaults to deny; give --security allowlist or full"
  expect_not_contains err "denied by the node'"'"'s policy"
  expect_exit 2 "$AGOR" exec --host gateway "$wt"
  expect_contains err "expected -- ARGV"
  stop_daemon
'

test_done
