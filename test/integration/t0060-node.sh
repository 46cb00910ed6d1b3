#!/usr/bin/env bash
# t0060-node — issue 8 end to end with the real binary: pairing, node selection, exec.run routed to nodes under
# their own approvals policy, output caps, timeouts, events, daemon and node deaths. Kills only the pids it started.
#
# As root with unshare and ip, the whole file runs in a private network namespace (the "gateway"), and every
# node runs in a network namespace of its own joined to it by a veth pair (10.60.N.2 ↔ 10.60.N.1). Elsewhere
# the nodes share loopback and the remote-IP rule is skipped.
if [ -z "${T0060_NETNS:-}" ] && [ "$(id -u)" = 0 ] && command -v ip > /dev/null && command -v nsenter > /dev/null &&
  unshare --net true 2> /dev/null; then
  T0060_NETNS=1 exec unshare --net -- bash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"

NETNS=${T0060_NETNS:-}
[ -n "$NETNS" ] && ip link set lo up

SCENE='
  GW_HOME="$AGOR_HOME"
  HOLDERS=""; NODE_PIDS=""; DAEMON_HOST=0.0.0.0 DAEMON_SOCKET="$GW_HOME/run/agor.sock"
  scene_cleanup() { # the nodes, when the body ends (after the daemon: daemon_cleanup runs it)
    for p in $NODE_PIDS $HOLDERS; do kill -9 "$p" 2>/dev/null || true; done
    for p in $NODE_PIDS $HOLDERS; do wait "$p" 2>/dev/null || true; done
  }
  trap daemon_cleanup EXIT
  # host N — a machine for node N: its own network namespace and veth when we can, else loopback.
  host() {
    mkdir -p -m 700 "$T/n$1"
    if [ -n "$NETNS" ]; then
      unshare --net sleep 600 & local holder=$!; HOLDERS="$HOLDERS $holder"; echo $holder > "h$1"
      for _ in $(seq 1 100); do [ "$(readlink /proc/$holder/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.02; done
      ip link add "gw$1" type veth peer name eth0 netns "$holder"
      ip addr add "10.60.$1.1/24" dev "gw$1"; ip link set "gw$1" up
      nsenter --net=/proc/$holder/ns/net sh -c "ip link set lo up; ip addr add 10.60.$1.2/24 dev eth0; ip link set eth0 up"
      echo "10.60.$1.1" > "gwaddr$1"
    else
      echo 127.0.0.1 > "gwaddr$1"
    fi
  }
  on() { # on N CMD… — CMD on host N as that node (its own AGOR_HOME)
    local n=$1; shift
    if [ -n "$NETNS" ]; then AGOR_HOME="$T/n$n" nsenter --net=/proc/$(cat h$n)/ns/net -- "$@"
    else AGOR_HOME="$T/n$n" "$@"; fi
  }
  url() { echo "ws://$(cat gwaddr$1):$port/ws"; }
  pair() { on "$1" "$AGOR" node pair --gateway "$(url $1)" --name "$2" > "id$1"; }
  policy() { local n=$1; shift; on "$n" "$AGOR" approvals set "$@" > /dev/null; }
  start_node() {
    if [ -n "$NETNS" ]; then AGOR_HOME="$T/n$1" nsenter --net=/proc/$(cat h$1)/ns/net -- "$AGOR" node run 2>> "node$1.log" &
    else AGOR_HOME="$T/n$1" "$AGOR" node run 2>> "node$1.log" & fi
    echo $! > "pid$1"; NODE_PIDS="$NODE_PIDS $!"
    for _ in $(seq 1 200); do
      rpc nodes.list > nl; python3 -c "import json,sys; r=json.load(open(\"nl\"))[\"result\"]; sys.exit(0 if any(n[\"id\"]==sys.argv[1] and n[\"connected\"] for n in r) else 1)" "$(cat id$1)" && return 0
      sleep 0.05
    done
    cat "node$1.log"; fail "node $1 did not connect"
  }
  exec_on() { # exec_on QUERY ARGV_JSON [EXTRA_JSON_FIELDS]
    rpc exec.run "{\"host\":\"node\",\"node\":\"$1\",\"argv\":$2${3:+,$3}}" > reply
  }
  ran_on() { expect_json reply result.node.id "$(cat id$1)"; expect_json reply result.output "$T/n$1"; }
  HOME_ARGV="[\"/bin/sh\",\"-c\",\"printf %s \\\"\$AGOR_HOME\\\"\"]"
'

test_case "pairing: pending until an admin approves; node.json is 0600 {version,nodeId,displayName,gateway,token}" "$SCENE"'
  start_daemon; host 1
  pair 1 "Build Box"
  id=$(cat id1)
  expect_mode "$T/n1/node.json" 600
  expect_json "$T/n1/node.json" version 1
  expect_json "$T/n1/node.json" nodeId "$id"
  expect_json "$T/n1/node.json" displayName "Build Box"
  expect_json "$T/n1/node.json" gateway.url "$(url 1)"
  json_get "$T/n1/node.json" token | grep -Eqx "[0-9a-f]{64}" || fail "token is not 64 hex digits"
  ls -A "$T/n1" | grep -q tmp && fail "a temporary file was left"
  ! grep -q "$(json_get "$T/n1/node.json" token)" "$GW_HOME/agor.db" || fail "the gateway stored the token itself"
  expect_exit 0 "$AGOR" nodes list --json
  expect_json out 0.status pending
  expect_json out 0.display_name "Build Box"
  if [ -n "$NETNS" ]; then
    expect_json out 0.requested_from 10.60.1.2
    expect_exit 0 "$AGOR" nodes approve 10.60.1.2   # a pending node by the address it asked from
    expect_contains out "approved $id"
  fi
'

test_case "pairing approved and revoked: a revoked token stops working at once and after a restart; a forged one never works" "$SCENE"'
  start_daemon; host 1; host 2
  pair 1 "Build Box"; id=$(cat id1)
  "$AGOR" nodes list > list; expect_contains list "pending"
  on 1 "$AGOR" node run --once 2> once.err && fail "a pending node must not be served"
  expect_contains once.err "not approved yet"
  expect_exit 0 "$AGOR" nodes approve "$id"
  expect_contains out "approved $id (Build Box)"
  expect_exit 1 "$AGOR" nodes approve "$id"
  expect_contains err "unknown node: $id (known: none)"
  policy 1 --security full --ask off
  start_node 1
  exec_on "$id" "$HOME_ARGV" "\"security\":\"full\""; ran_on 1
  # forged: the right node id with another token, from another host
  mkdir -p -m 700 "$T/n2"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d[\"token\"]=\"0\"*64; d[\"gateway\"][\"url\"]=sys.argv[3]; json.dump(d, open(sys.argv[2],\"w\"))" "$T/n1/node.json" "$T/n2/node.json" "$(url 2)"
  chmod 600 "$T/n2/node.json"
  on 2 "$AGOR" node run --once 2> forged.err && fail "a forged token was served"
  expect_contains forged.err "unknown node or wrong token"
  # revoked while connected: the connection is closed and the runner gives up
  expect_exit 0 "$AGOR" nodes revoke "build box"
  for _ in $(seq 1 100); do kill -0 "$(cat pid1)" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$(cat pid1)" 2>/dev/null && fail "the revoked node is still running"
  expect_contains node1.log "was revoked"
  exec_on "$id" "$HOME_ARGV" "\"security\":\"full\""
  expect_json reply error.data.code NOT_FOUND
  expect_contains reply "is revoked: on the node, pair it again"
  expect_not_contains reply "known: none"
  kill_daemon; DAEMON_PORT=$port start_daemon
  on 1 "$AGOR" node run --once 2> again.err && fail "revocation did not survive the restart"
  expect_contains again.err "was revoked"
  rpc audit.list > audit; expect_contains audit "node.hello"
'

test_case "selection: exact id, remote IP, normalized name, id prefix of 6+, connected wins ties; unknown and ambiguous errors" "$SCENE"'
  start_daemon; host 1; host 2; host 3
  pair 1 "Build Box"; pair 2 "build-box"; pair 3 "Mac Mini"
  for n in 1 2 3; do "$AGOR" nodes approve "$(cat id$n)" > /dev/null; policy $n --security full --ask off; done
  start_node 1; start_node 3
  exec_on "$(cat id3)" "$HOME_ARGV" "\"security\":\"full\""; ran_on 3
  if [ -n "$NETNS" ]; then exec_on 10.60.3.2 "$HOME_ARGV" "\"security\":\"full\""; ran_on 3; fi
  exec_on "MAC  mini" "$HOME_ARGV" "\"security\":\"full\""; ran_on 3
  exec_on "$(cut -c1-6 id3)" "$HOME_ARGV" "\"security\":\"full\""; ran_on 3
  exec_on "BUILD BOX" "$HOME_ARGV" "\"security\":\"full\""; ran_on 1   # build-box (node 2) is not connected
  exec_on "$(cut -c1-5 id3)" "$HOME_ARGV"
  expect_json reply error.data.code NOT_FOUND
  expect_contains reply "unknown node: $(cut -c1-5 id3) (known: Build Box ($(cut -c1-8 id1)), build-box ($(cut -c1-8 id2)), Mac Mini ($(cut -c1-8 id3)))"
  start_node 2
  exec_on "build box" "$HOME_ARGV"
  expect_json reply error.data.code INVALID_PAYLOAD
  expect_contains reply "ambiguous node: build box (matches: Build Box ($(cut -c1-8 id1)), build-box ($(cut -c1-8 id2)))"
  exec_on "$(cat id2)" "$HOME_ARGV" "\"security\":\"full\""; ran_on 2
  rpc exec.run "{\"host\":\"node\",\"argv\":[\"true\"]}" > reply
  expect_contains reply "params.node: required when 3 nodes are paired"
  rpc exec.run "{\"host\":\"moon\",\"argv\":[\"true\"]}" > reply
  expect_contains reply "params.host: \\\"moon\\\" is not one of sandbox|gateway|node"
  stop_daemon
'

test_case "a node decides under its own policy: its deny beats the gateway asking for full; the gateway can only tighten" "$SCENE"'
  start_daemon; host 1; host 2
  pair 1 strict; pair 2 open
  for n in 1 2; do "$AGOR" nodes approve "$(cat id$n)" > /dev/null; done
  policy 2 --security full --ask off
  start_node 1; start_node 2
  exec_on strict "$HOME_ARGV" "\"security\":\"full\",\"ask\":\"off\""
  expect_json reply result.denied true
  expect_json reply result.reason security=deny
  expect_json reply result.output ""
  task=$(json_get reply result.task_id)
  rpc tasks.get "{\"id\":\"$task\"}" > task
  expect_json task result.status failed
  expect_contains task "denied by node strict"
  rpc messages.list "{\"task_id\":\"$task\"}" > msgs
  expect_contains msgs "exec.denied"
  # attack: point the node at a permissive policy file through the environment (refused by the gateway; t0062
  # sends it to a node from a forged gateway, which ignores it)
  mkdir -p -m 700 "$T/evil"; AGOR_HOME="$T/evil" "$AGOR" approvals set --security full --ask off
  exec_on strict "$HOME_ARGV" "\"security\":\"full\",\"env\":{\"AGOR_HOME\":\"$T/evil\",\"AGOR_CONFIG_PATH\":\"/dev/null\"}"
  expect_json reply error.data.code INVALID_PAYLOAD
  expect_contains reply "params.env.AGOR_HOME: not allowed"
  # loader variables are refused by the gateway, naming the field
  exec_on open "$HOME_ARGV" "\"security\":\"full\",\"env\":{\"LD_PRELOAD\":\"/x.so\"}"
  expect_contains reply "params.env.LD_PRELOAD: not allowed"
  # the gateway tightens: its default (deny) and an explicit deny both refuse on a full node
  exec_on open "$HOME_ARGV"
  expect_json reply result.denied true
  exec_on open "$HOME_ARGV" "\"security\":\"deny\""
  expect_json reply result.denied true
  # an allowlist node runs what its allowlist names, even when the gateway asks for full
  policy 1 --security allowlist --ask off
  on 1 "$AGOR" approvals allowlist add "$(readlink -f /usr/bin/id)" > /dev/null
  exec_on strict "[\"id\",\"-u\"]" "\"security\":\"full\""
  expect_json reply result.success true
  expect_json reply result.output "$(id -u)"
  exec_on strict "[\"whoami\"]" "\"security\":\"full\""
  expect_json reply result.denied true
  expect_json reply result.reason allowlist-miss
  # env passes names on execution.exec_env_allow (LANG:LC_*:TZ:… by default), nothing else
  exec_on open "[\"/bin/sh\",\"-c\",\"printf %s \\\"\$TZ\\\"\"]" "\"security\":\"full\",\"env\":{\"TZ\":\"UTC0\"}"
  expect_json reply result.output UTC0
  expect_json reply result.success true
  exec_on open "[\"/bin/sh\",\"-c\",\"printf %s \\\"\$GREETING\\\"\"]" "\"security\":\"full\",\"env\":{\"GREETING\":\"hello\"}"
  expect_contains reply "params.env.GREETING: not allowed"
  expect_contains reply "execution.exec_env_allow"
  stop_daemon
'

test_case "output is capped at 200000 bytes with a marker; events carry a 20000-character tail; a timeout kills the command" "$SCENE"'
  start_daemon; host 1
  pair 1 worker; "$AGOR" nodes approve worker > /dev/null
  policy 1 --security full --ask off
  start_node 1
  exec_on worker "[\"/bin/sh\",\"-c\",\"head -c 300000 /dev/zero | tr \\\"\\\\\\\\000\\\" a\"]" "\"security\":\"full\""
  json_get reply result.output > output
  [ "$(head -c 200000 output | tr -d a | wc -c)" -eq 0 ] || fail "the first 200000 bytes are not the output"
  expect_contains output "... (truncated)"
  [ "$(wc -c < output)" -lt 200100 ] || fail "output not capped: $(wc -c < output) bytes"
  task=$(json_get reply result.task_id)
  rpc messages.list "{\"task_id\":\"$task\"}" > msgs
  python3 -c "import json,sys; m=[json.loads(x[\"data\"]) for x in json.load(open(\"msgs\"))[\"result\"] if x[\"message_type\"]==\"exec.finished\"]; assert m and len(m[0][\"output\"]) <= 20100, len(m[0][\"output\"]) if m else m" || fail "exec.finished output not a tail"
  start=$(date +%s)
  exec_on worker "[\"/bin/sleep\",\"30\"]" "\"security\":\"full\",\"timeout_ms\":1000"
  [ $(( $(date +%s) - start )) -lt 15 ] || fail "the timeout did not end the run"
  expect_json reply result.timedOut true
  expect_json reply result.success false
  pgrep -f "^/bin/sleep 30$" && fail "the timed-out command survived"
  # control characters escape sixfold in JSON: the answer still fits the gateway'"'"'s message limit
  exec_on worker "[\"/bin/sh\",\"-c\",\"head -c 300000 /dev/zero | tr \\\"\\\\\\\\000\\\" \\\"\\\\\\\\001\\\"\"]" "\"security\":\"full\""
  expect_json reply result.outputShortened true
  expect_json reply result.success true
  stop_daemon
'

test_case "daemon killed: nodes reconnect when it returns; node killed mid-command: the run fails with the reason" "$SCENE"'
  start_daemon; host 1; host 2
  pair 1 alpha; pair 2 beta
  for n in 1 2; do "$AGOR" nodes approve "$(cat id$n)" > /dev/null; policy $n --security full --ask off; done
  start_node 1; start_node 2
  kill_daemon
  DAEMON_PORT=$port start_daemon
  start_node_wait() { for _ in $(seq 1 300); do rpc nodes.list > nl; grep -q "\"id\":\"$(cat id$1)\"[^}]*\"connected\":true" nl && return 0; sleep 0.1; done; cat nl node$1.log; fail "node $1 did not reconnect"; }
  start_node_wait 1; start_node_wait 2
  exec_on alpha "$HOME_ARGV" "\"security\":\"full\""; ran_on 1
  rpc exec.run "{\"host\":\"node\",\"node\":\"beta\",\"argv\":[\"/bin/sleep\",\"20\"],\"security\":\"full\"}" > killed &
  rpcpid=$!
  for _ in $(seq 1 100); do grep -q "run .* started" node2.log && break; sleep 0.05; done
  kill -9 "$(cat pid2)"
  start=$(date +%s); wait $rpcpid
  [ $(( $(date +%s) - start )) -lt 10 ] || fail "the caller waited for a dead node"
  expect_json killed error.data.code EXEC_FAILED
  expect_contains killed "disconnected during the run"
  sleep 0.2; pgrep -f "^/bin/sleep 20$" && fail "the command of the killed node survived"
  rpc tasks.list > tasks
  python3 -c "import json; t=[x for x in json.load(open(\"tasks\"))[\"result\"] if x[\"execution_user\"]==\"node:\"+open(\"id2\").read().strip()]; assert t and t[-1][\"status\"]==\"failed\", t"
  exec_on alpha "$HOME_ARGV" "\"security\":\"full\""; ran_on 1
'

test_case "node events belong to the session: exec.started and exec.finished stored under the session and the run" "$SCENE"'
  make_source_repo src
  start_daemon; host 1
  rpc repos.clone "{\"url\":\"$PWD/src\"}" > r; repo=$(json_get r result.repo.id)
  rpc worktrees.add "{\"repo_id\":\"$repo\",\"name\":\"w1\",\"branch\":\"w1\",\"create_branch\":true}" > r
  wt=$(json_get r result.worktree.id)
  rpc sessions.create "{\"worktree_id\":\"$wt\",\"tool\":\"claude-code\"}" > r; sid=$(json_get r result.id)
  pair 1 worker; "$AGOR" nodes approve worker > /dev/null; policy 1 --security full --ask off; start_node 1
  exec_on worker "[\"/bin/echo\",\"from the node\"]" "\"security\":\"full\",\"session_id\":\"$sid\""
  expect_json reply result.output "from the node"
  run=$(json_get reply result.runId)
  rpc messages.list "{\"session_id\":\"$sid\"}" > msgs
  python3 - "$run" "$sid" <<PY || fail "session events missing"
import json, sys
rows = json.load(open("msgs"))["result"]
types = [r["message_type"] for r in rows if r["task_id"] == sys.argv[1]]
assert types == ["exec.started", "exec.finished"], types
fin = json.loads(rows[-1]["data"])
assert fin["sessionId"] == sys.argv[2] and fin["runId"] == sys.argv[1] and fin["output"] == "from the node\n", fin
PY
  exec_on worker "[\"/bin/true\"]" "\"session_id\":\"nosuch\""
  expect_json reply error.data.code NOT_FOUND
  stop_daemon
'

test_case "TLS: a node pins the gateway certificate; a wrong pin is refused before anything is sent" "$SCENE"'
  NETNS=""   # localhost names the gateway only on its own loopback
  "$TEST_TOP/test/helpers/make-test-ca.sh" ca
  pin=$(openssl x509 -in ca/server.crt -outform DER | sha256sum | cut -d" " -f1)
  bad=$(printf "%064d" 0)
  DAEMON_HOST=127.0.0.1 start_daemon --set daemon.tls_cert="$PWD/ca/server.crt" --set daemon.tls_key="$PWD/ca/server.key"
  mkdir -p -m 700 n1 n2
  AGOR_HOME="$T/n2" "$AGOR" node pair --gateway "wss://localhost:$port/ws" --name evil --tls-fingerprint "$bad" 2> bad.err && fail "a wrong pin was accepted"
  [ ! -e n2/node.json ] || fail "node.json written after a failed pairing"
  AGOR_HOME="$T/n1" "$AGOR" node pair --gateway "wss://localhost:$port/ws" --name tls --tls-fingerprint "$pin" > id1
  expect_json n1/node.json gateway.tlsFingerprint "$pin"
  "$AGOR" nodes approve tls > /dev/null; policy 1 --security full --ask off; start_node 1
  exec_on tls "$HOME_ARGV" "\"security\":\"full\""; ran_on 1
  expect_exit 2 "$AGOR" node pair --gateway "wss://localhost:$port/ws" --tls-fingerprint abc
  expect_contains err "--tls-fingerprint: expected 64 hex digits"
  expect_exit 2 "$AGOR" node pair --gateway "http://localhost:$port/"
  expect_contains err "expected a ws:// or wss:// URL"
'

test_case "authorization: only admins manage nodes; a node connection is no user and speaks only for its own runs" "$SCENE"'
  start_daemon; host 1
  pair 1 worker; "$AGOR" nodes approve worker > /dev/null; policy 1 --security full --ask off
  ws() { python3 "$TEST_TOP/test/helpers/ws-rpc.py" 127.0.0.1 "$port" "$@"; }
  ws "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nodes.list\"}" > anon
  expect_contains anon "only an admin may manage nodes"
  "$AGOR" user create bob > /dev/null
  tok=$("$AGOR" user token --for bob 2>/dev/null)
  AGOR_TOKEN="$tok" "$AGOR" nodes approve worker --url "ws://127.0.0.1:$port/ws" 2> member.err && fail "a member managed nodes"
  expect_contains member.err "only an admin may manage nodes"
  token=$(json_get "$T/n1/node.json" token); id=$(cat id1)
  hello="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"node.hello\",\"params\":{\"nodeId\":\"$id\",\"token\":\"$token\"}}"
  ws "$hello" \
     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"users.list\"}" \
     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nodes.list\"}" \
     "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"node.event\",\"params\":{\"runId\":\"someone-elses\",\"type\":\"exec.finished\",\"data\":{}}}" \
     "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"exec.run\",\"params\":{\"host\":\"node\",\"argv\":[\"id\"],\"security\":\"full\"}}" > asnode
  sed -n 1p asnode > r1; expect_json r1 result.status approved
  sed -n 2p asnode > r2; expect_json r2 error.data.code AUTH_FAILED
  sed -n 3p asnode > r3; expect_json r3 error.data.code PERMISSION_DENIED
  sed -n 4p asnode > r4; expect_json r4 error.data.code NOT_FOUND
  sed -n 5p asnode > r5; expect_json r5 error.data.code AUTH_FAILED
  ws "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"node.pair\",\"params\":{\"displayName\":\"x\",\"tokenSha256\":\"short\"}}" > badpair
  expect_contains badpair "params.tokenSha256: required, 64 lowercase hex digits"
  # one connection is one node (node_daemon_fuzz: a second node.hello left the first node linked to the
  # connection after it closed, its runs never failed and the next run on it used the freed connection)
  host 2; pair 2 other; "$AGOR" nodes approve other > /dev/null
  hello2="{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"node.hello\",\"params\":{\"nodeId\":\"$(cat id2)\",\"token\":\"$(json_get "$T/n2/node.json" token)\"}}"
  ws "$hello" "$hello2" > twonodes
  sed -n 1p twonodes > t1; expect_json t1 result.status approved
  sed -n 2p twonodes > t2; expect_json t2 error.data.code INVALID_PAYLOAD; expect_contains t2 "already node $id"
  for _ in $(seq 1 100); do
    rpc nodes.list > nl
    python3 -c "import json,sys; r=json.load(open(\"nl\"))[\"result\"]; sys.exit(0 if not any(n[\"connected\"] for n in r) else 1)" && break
    sleep 0.05
  done
  python3 -c "import json,sys; r=json.load(open(\"nl\"))[\"result\"]; sys.exit(0 if not any(n[\"connected\"] for n in r) else 1)" ||
    { cat nl; fail "a node stayed connected after its connection closed"; }
  stop_daemon
'

test_done
