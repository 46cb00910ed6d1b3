#!/usr/bin/env bash
# t0081-agent-egress — network `proxy` (issue 21): a sandboxed run's only way out is agor's egress proxy, which
# reaches allowlisted destinations only, refuses (and reports) the rest, and — for an agent CLI — swaps the run's
# sentinel for the real API key on requests to the provider alone. First exec.run (the proxy without an agent),
# then the real Claude Code against a scripted endpoint.
. "$(dirname "$0")/../lib.sh"

if ! is_root; then
  test_skip "egress proxy tests" "need root for cgroups and users (run as root in CI)"
  test_done; exit
fi

# exec.run as root (the run is root_maps_to inside), as t0050 does. Two plain HTTP servers outside the sandbox:
# "allowed" (named by an egress_allow entry with its exact address and port) and "outside" (named by nothing).
EXEC='
  python3 "$TEST_TOP/test/helpers/egress-target.py" allowed-port allowed.log > /dev/null 2>&1 &
  allowed_pid=$!
  python3 "$TEST_TOP/test/helpers/egress-target.py" outside-port outside.log > /dev/null 2>&1 &
  outside_pid=$!
  trap "kill $allowed_pid $outside_pid 2>/dev/null" EXIT
  for i in $(seq 1 200); do [ -s allowed-port ] && [ -s outside-port ] && break; sleep 0.05; done
  ALLOWED=$(cat allowed-port) OUTSIDE=$(cat outside-port)
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"r.git\"}}"
  expect_success
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$AGOR_HOME/repos/r.git\",\"worktreeName\":\"w1\",\"worktreePath\":\"w1\",\"branch\":\"w1\",\"createBranch\":true,\"sourceBranch\":\"main\"}}"
  expect_success
  W="$AGOR_HOME/worktrees/w1"
  config() { printf "%s\n" "execution:" "  sandbox:" "$@" > "$AGOR_HOME/config.yaml"; }
  config "    network: proxy" "    egress_allow: 127.0.0.1:$ALLOWED, *.example.com, localhost:$OUTSIDE"
  # run SCRIPT — /bin/sh -c SCRIPT in the worktree through exec.run; out holds the result.
  run() {
    python3 -c "import json,sys; print(json.dumps({\"command\":\"exec.run\",\"params\":{\"cwd\":sys.argv[1],\"argv\":[\"/bin/sh\",\"-c\",sys.argv[2]],\"timeoutMs\":30000}}))" "$W" "$1" > payload.json
    "$AGOR" executor --stdin < payload.json > out 2> err || true
    expect_success
    json_get out data.stdout > stdout
  }
'

test_case "proxy: the run has its own loopback-only network; an allowlisted address is reached through the proxy" "$EXEC"'
  run "env | grep -i _proxy | sort; ip -o addr 2>/dev/null | grep -v \" lo \" || true; curl -sS --max-time 10 http://127.0.0.1:$ALLOWED/hello"
  expect_json out data.sandbox.network proxy
  expect_json out data.sandbox.egress.proxy 127.0.0.1:3128
  expect_contains out "connect to port 3128 only"
  expect_contains stdout "HTTP_PROXY=http://127.0.0.1:3128"
  expect_contains stdout "https_proxy=http://127.0.0.1:3128"
  expect_contains stdout "hello from target"
  grep -q "\"path\": \"/hello\"" allowed.log || fail "the allowed server saw no request"
  grep -q "\"Connection\": \"close\"" allowed.log || fail "the proxy did not ask for Connection: close"
  ! grep -qi "proxy-connection" allowed.log || fail "a Proxy-* header reached the server"
  [ -z "$(json_get out data.egress 2>/dev/null)" ] || fail "a refusal was reported for an allowed request"
'

test_case "proxy: a listener outside, a name not allowed, DNS and direct TCP all fail; each refusal is reported" "$EXEC"'
  run "
    curl -sS --max-time 10 -o /dev/null -w \"outside %{http_code}\n\" http://127.0.0.1:$OUTSIDE/ ;
    curl -sS --max-time 10 -o /dev/null -w \"connect-outside %{http_code}\n\" -p http://127.0.0.1:$OUTSIDE/ ;
    curl -sS --max-time 10 -o /dev/null -w \"name %{http_code}\n\" http://not-allowed.invalid/ ;
    curl -sS --max-time 10 -o /dev/null -w \"by-name %{http_code}\n\" http://localhost:$OUTSIDE/ ;
    curl -sS --max-time 10 -o /dev/null -w \"https %{http_code}\n\" https://127.0.0.1:$OUTSIDE/ ;
    if getent hosts example.org; then echo DNS-WORKED; fi ;
    if (exec 3<>/dev/tcp/127.0.0.1/$OUTSIDE) 2>/dev/null; then echo DIRECT-TCP-WORKED; fi ;
    if env -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -sS --max-time 5 http://127.0.0.1:$OUTSIDE/ ; then echo NOPROXY-WORKED; fi ;
    true"
  cat stdout
  expect_contains stdout "outside 403"
  expect_contains stdout "name 403"
  expect_contains stdout "by-name 403"
  expect_not_contains stdout "WORKED"
  [ ! -s outside.log ] || { cat outside.log; fail "the outside listener was reached"; }
  python3 - out "$OUTSIDE" <<PY
import json, sys
refused = json.load(open(sys.argv[1]))["data"]["egress"]["refused"]
port = int(sys.argv[2])
got = {(r["host"], r["port"], r["reason"]) for r in refused}
want = {("127.0.0.1", port, "not-allowed"), ("not-allowed.invalid", 80, "not-allowed"), ("localhost", port, "loopback")}
assert want <= got, got
assert all(r["count"] >= 1 for r in refused), refused
PY
'

test_case "proxy: the payload cannot point the proxy variables elsewhere; network none has no proxy" "$EXEC"'
  python3 -c "import json,sys; print(json.dumps({\"command\":\"exec.run\",\"params\":{\"cwd\":sys.argv[1],\"argv\":[\"/bin/sh\",\"-c\",\"env | grep -i _proxy\"]},\"env\":{\"HTTP_PROXY\":\"http://evil:1\",\"NO_PROXY\":\"*\"}}))" "$W" > payload.json
  "$AGOR" executor --stdin < payload.json > out 2> err || true
  json_get out data.stdout > stdout
  expect_contains stdout "HTTP_PROXY=http://127.0.0.1:3128"
  expect_not_contains stdout "evil"
  expect_not_contains stdout "NO_PROXY=*"
  config "    network: none"
  run "env | grep -i _proxy || echo no-proxy-vars; curl -sS --max-time 5 http://127.0.0.1:$ALLOWED/ || echo unreachable"
  expect_json out data.sandbox.network none
  expect_contains stdout "no-proxy-vars"
  expect_contains stdout "unreachable"
  "$AGOR" executor --stdin --dry-run < payload.json > plan.json
  config "    network: proxy"
  "$AGOR" executor --stdin --dry-run < payload.json > plan.json
  expect_json plan.json data.plan.1.sandbox.network proxy
'

test_case "proxy: a killed root executor leaves no proxy, no sandboxed run and no socket directory behind; stale ones are swept" "$EXEC"'
  ls -d /tmp/agor-egress-* 2> /dev/null | sort > before || true
  python3 -c "import json,sys; print(json.dumps({\"command\":\"exec.run\",\"params\":{\"cwd\":sys.argv[1],\"argv\":[\"/bin/sleep\",\"30\"]}}))" "$W" > payload.json
  "$AGOR" executor --stdin < payload.json > out 2> err &
  ex=$!
  for i in $(seq 1 100); do ls -d /tmp/agor-egress-* 2> /dev/null | sort > after || true; ! cmp -s before after && break; sleep 0.05; done
  dir=$(comm -13 before after | head -1)
  [ -n "$dir" ] && [ -S "$dir/egress.sock" ] || fail "no egress socket appeared"
  proxies=$(pgrep -P $ex | while read p; do [ "$(ps -o pgid= -p $p | tr -d " ")" = "$p" ] && echo $p; done)
  kill -KILL $ex; wait $ex 2> /dev/null || true
  for i in $(seq 1 100); do [ ! -e "$dir" ] && break; sleep 0.05; done
  [ ! -e "$dir" ] || fail "$dir was left behind"
  alive() { kill -0 $1 2> /dev/null && ! grep -q "^State:.*Z" /proc/$1/status 2> /dev/null; }
  for p in $proxies; do
    for i in $(seq 1 100); do alive $p || break; sleep 0.05; done
    ! alive $p || { ps -o pid,stat,args -p $p; fail "process $p of the executor survived"; }
  done
  # what a proxy killed outright (SIGKILL to it too) leaves is swept by the next run: stale, of the same owner
  stale=$(mktemp -d /tmp/agor-egress-XXXXXX) young=$(mktemp -d /tmp/agor-egress-XXXXXX) kept=$(mktemp -d /tmp/agor-egress-XXXXXX)
  touch "$kept/other"
  chown 65534:65534 "$stale" "$young" "$kept"
  touch -d "2 minutes ago" "$stale" "$kept"
  run "true"
  [ ! -e "$stale" ] || fail "a stale proxy directory was not swept"
  [ -d "$young" ] && [ -d "$kept" ] || fail "a young proxy directory, or one holding other files, was removed"
  rm -rf "$young" "$kept"
'

test_case "proxy: a terminal pane's shell (sandbox-shell --policy) reaches only the allowlist, and says what was refused" "$EXEC"'
  rm -f "$AGOR_HOME/config.yaml"
  printf "curl -sS -m 5 http://127.0.0.1:$ALLOWED/pane\ncurl -sS -m 5 -o /dev/null -w \"outside %%{http_code}\\\\n\" http://127.0.0.1:$OUTSIDE/\nexit\n" > cmds
  SHELL=/bin/sh "$AGOR" executor sandbox-shell --data-home "$AGOR_HOME" --cwd "$W" \
    --policy "{\"execution.sandbox.network\":\"proxy\",\"execution.sandbox.egress_allow\":\"127.0.0.1:$ALLOWED\"}" < cmds > pane.out 2> pane.err
  cat pane.out pane.err
  expect_contains pane.out "hello from target"
  expect_contains pane.out "outside 403"
  expect_contains pane.err "refused by the egress proxy"
  expect_contains pane.err "\"port\":$OUTSIDE"
  [ ! -s outside.log ] || fail "the listener outside was reached"
'

# proxy_scene NAME — a listener NAME outside the sandbox (its port in $TARGET, its requests in NAME.log), a daemon
# whose runs have network proxy, and a fresh repository cloned with its worktree w1 ($repo, $wt).
proxy_scene() {
  python3 "$TEST_TOP/test/helpers/egress-target.py" "$1-port" "$1.log" > /dev/null 2>&1 &
  target_pid=$!
  for i in $(seq 1 200); do [ -s "$1-port" ] && break; sleep 0.05; done
  TARGET=$(cat "$1-port")
  make_source_repo src
  mkdir -p "$AGOR_HOME" && chmod 700 "$AGOR_HOME"
  printf "execution:\n  sandbox:\n    network: proxy\n" > "$AGOR_HOME/config.yaml"
  scene_cleanup() { kill $target_pid 2> /dev/null || true; }
  start_daemon
  rpc repos.clone "{\"url\":\"$PWD/src\"}" > reply && repo=$(json_get reply result.repo.id)
  rpc worktrees.add "{\"repo_id\":\"$repo\",\"name\":\"w1\",\"branch\":\"w1\",\"create_branch\":true}" > reply
  wt=$(json_get reply result.worktree.id)
}

test_case "proxy: the daemon's exec.run turns each refusal into an audit row and a task.egress_refused event" '
  proxy_scene outside
  OUTSIDE=$TARGET
  python3 "$TEST_TOP/test/helpers/events.py" "$AGOR_HOME/run/agor.sock" subscribed 20 "\"status\":\"completed\"" > events.out &
  sub_pid=$!
  for i in $(seq 1 100); do [ -e subscribed ] && break; sleep 0.05; done
  rpc exec.run "{\"worktree_id\":\"$wt\",\"argv\":[\"/bin/sh\",\"-c\",\"curl -sS -m 10 -o /dev/null -w %{http_code} http://127.0.0.1:$OUTSIDE/; curl -sS -m 10 -o /dev/null -w %{http_code} http://127.0.0.1:$OUTSIDE/\"]}" > reply
  expect_contains reply "\"stdout\":\"403403\""
  task=$(json_get reply result.task_id)
  rpc audit.list > audit.json
  python3 "$TEST_TOP/test/helpers/audit-egress.py" audit.json "$task" \
    "{\"host\":\"127.0.0.1\",\"port\":$OUTSIDE,\"reason\":\"not-allowed\",\"count\":2}"
  wait $sub_pid
  grep -q "task.egress_refused" events.out || { cat events.out; fail "no task.egress_refused event"; }
  grep "task.egress_refused" events.out | grep -q "\"port\": *$OUTSIDE" || fail "the event does not name the port"
  [ ! -s outside.log ] || fail "the listener outside was reached"
'

test_case "a session's own egress entries: its creator or an admin adds them, only its runs reach them, each change is audited" '
  proxy_scene extra
  EXTRA=$TARGET
  rpc sessions.create "{\"worktree_id\":\"$wt\",\"tool\":\"claude-code\"}" > reply && session=$(json_get reply result.id)
  # curl_run [SESSION] — exec.run of a curl to the extra listener, in the session when one is named
  curl_run() {
    in_session=${1:+,\"session_id\":\"$1\"}
    rpc exec.run "{\"worktree_id\":\"$wt\",\"argv\":[\"/bin/sh\",\"-c\",\"curl -sS -m 10 -o /dev/null -w %{http_code} http://127.0.0.1:$EXTRA/\"]$in_session}" > reply
  }
  curl_run "$session"
  expect_contains reply "\"stdout\":\"403\""
  expect_exit 0 "$AGOR" session allow-host "$session" "127.0.0.1:$EXTRA"
  expect_contains out "may also reach: 127.0.0.1:$EXTRA"
  curl_run "$session"
  expect_contains reply "\"stdout\":\"200\""
  curl_run
  expect_contains reply "\"stdout\":\"403\""   # a run outside the session does not get its entries
  "$AGOR" session get "$session" > out && expect_contains out "egress    127.0.0.1:$EXTRA"
  # bad entries are refused naming the field; adding one twice changes nothing
  for bad in "evil.example, other.example" "*" "http://x.example/" "a b"; do
    expect_exit 1 "$AGOR" session allow-host "$session" "$bad"
    expect_contains err "params.entry"
  done
  expect_exit 0 "$AGOR" session allow-host "$session" "127.0.0.1:$EXTRA" --json
  [ "$(json_get out egress_allow | grep -c "127.0.0.1:$EXTRA")" = 1 ] || fail "the entry was stored twice"
  # another user (over TCP with their token) can neither see nor change the session
  rpc users.create "{\"name\":\"bob\"}" > reply && bob=$(json_get reply result.id)
  rpc tokens.create "{\"user_id\":\"$bob\"}" > reply && bob_token=$(json_get reply result.token)
  expect_exit 1 "$AGOR" session allow-host "$session" "*.example.com" --url "ws://127.0.0.1:$port/ws" --token "$bob_token"
  expect_contains err "no session"
  expect_exit 1 "$AGOR" session disallow-host "$session" "127.0.0.1:$EXTRA" --url "ws://127.0.0.1:$port/ws" --token "$bob_token"
  curl_run "$session"
  expect_contains reply "\"stdout\":\"200\""
  # removal takes the entry away again; removing it twice is NOT_FOUND
  expect_exit 0 "$AGOR" session disallow-host "$session" "127.0.0.1:$EXTRA"
  expect_contains out "nothing more"
  curl_run "$session"
  expect_contains reply "\"stdout\":\"403\""
  expect_exit 1 "$AGOR" session disallow-host "$session" "127.0.0.1:$EXTRA"
  expect_contains err "no egress entry"
  # a session on another worktree cannot lend its entries to a run here
  rpc worktrees.add "{\"repo_id\":\"$repo\",\"name\":\"w2\",\"branch\":\"w2\",\"create_branch\":true}" > reply
  wt2=$(json_get reply result.worktree.id)
  rpc sessions.create "{\"worktree_id\":\"$wt2\",\"tool\":\"claude-code\"}" > reply && other=$(json_get reply result.id)
  rpc sessions.egress.add "{\"session_id\":\"$other\",\"entry\":\"127.0.0.1:$EXTRA\"}" > /dev/null
  curl_run "$other"
  expect_contains reply "another worktree"
  rpc audit.list > audit.json
  [ "$(grep -o "sessions.egress.add" audit.json | wc -l)" -ge 3 ] || fail "the additions were not audited"
  grep -q "sessions.egress.remove" audit.json || fail "the removal was not audited"
'

# --- the real Claude Code, as t0080 drives it: the daemon runs as root in insulated mode, every executor (and so
# the agent) as agor_executor; the network setting is left at its default (none), which an agent run raises to proxy.
. "$TEST_TOP/test/agent-cli.sh"   # $CLAUDE and $CODEX, pinned, installed once

SCENE='
  [ -n "${TRACE:-}" ] && set -x
  KEY=sk-ant-SECRET-KEY-4242 OPENAI_KEY=sk-openai-SECRET-7777
  if [ -n "$TLS" ]; then bash "$TEST_TOP/test/helpers/make-test-ca.sh" tls; export SCRIPTED_TLS_DIR=$PWD/tls; fi
  python3 "$TEST_TOP/test/helpers/anthropic-server.py" port server.log > /dev/null 2>&1 &
  server_pid=$!
  python3 "$TEST_TOP/test/helpers/openai-server.py" openai-port openai.log > /dev/null 2>&1 &
  openai_pid=$!
  unset SCRIPTED_TLS_DIR
  python3 "$TEST_TOP/test/helpers/egress-target.py" allowed-port allowed.log > /dev/null 2>&1 &
  allowed_pid=$!
  python3 "$TEST_TOP/test/helpers/egress-target.py" outside-port outside.log > /dev/null 2>&1 &
  outside_pid=$!
  for i in $(seq 1 400); do [ -s port ] && [ -s openai-port ] && [ -s allowed-port ] && [ -s outside-port ] && break; sleep 0.05; done
  [ -s port ] && [ -s openai-port ] && [ -s allowed-port ] && [ -s outside-port ] || fail "the scripted servers did not start"
  ALLOWED=$(cat allowed-port) OUTSIDE=$(cat outside-port)
  mkdir -p data && chmod 755 "$T" data
  ALLOW="127.0.0.1:$ALLOWED" PROVIDER="http://127.0.0.1:$(cat port)" UPSTREAM_CA=""
  OPENAI_PROVIDER="http://127.0.0.1:$(cat openai-port)/v1"
  if [ -n "$TLS" ]; then # https://localhost:PORT: the loopback address must be named, and the test CA verifies it
    ALLOW="$ALLOW, 127.0.0.1:$(cat port), 127.0.0.1:$(cat openai-port)" PROVIDER="https://localhost:$(cat port)"
    OPENAI_PROVIDER="https://localhost:$(cat openai-port)/v1"
    UPSTREAM_CA="    upstream_ca_file: $PWD/tls/ca.crt"
    if [ -n "$WRONG_CA" ]; then # another CA than the one that signed the endpoint
      bash "$TEST_TOP/test/helpers/make-test-ca.sh" other-ca
      UPSTREAM_CA="    upstream_ca_file: $PWD/other-ca/ca.crt"
      chmod a+rX other-ca
    fi
  fi
  printf "paths:\n  data_home: %s/data\ndaemon:\n  socket_path: /run/agor/agor.sock\nexecution:\n  unix_user_mode: insulated\n  sandbox:\n    egress_allow: %s\n%s\nagents:\n  claude_code:\n    command: %s\n    base_url: %s\n  codex:\n    command: %s\n    base_url: %s\n    model: gpt-5.5\n" \
    "$T" "$ALLOW" "$UPSTREAM_CA" "${AGENT_COMMAND:-$CLAUDE}" "$PROVIDER" "$CODEX" "$OPENAI_PROVIDER" > config.yaml
  chmod a+rX "$PWD/tls" 2> /dev/null || true
  chmod 600 config.yaml
  a() { "$AGOR" "$@" --config "$PWD/config.yaml"; }
  insulated_agent_host
  scene_cleanup() {
    kill $server_pid $openai_pid $allowed_pid $outside_pid 2> /dev/null || true
    rmdir /sys/fs/cgroup/*/agor/agor_executor /sys/fs/cgroup/agor/agor_executor 2> /dev/null || true
  }
  DAEMON_SOCKET=/run/agor/agor.sock
  start_daemon --config "$PWD/config.yaml"
  daemon_port=$port
  a repo clone "$PWD/src" --json > clone.json || { cat clone.json daemon.log; fail "clone failed"; }
  a worktree add "$(json_get clone.json repo.id)" wt1 --branch feat --create-branch --json > wt.json || { cat wt.json; fail "worktree add failed"; }
  wt=$(json_get wt.json worktree.id)
  a worktree get "$wt" --json > wt.json && wt_path=$(json_get wt.json path)
  a session create "$wt" --tool "$TOOL" --permission-mode "$MODE" --json > session.json
  session=$(json_get session.json id)
  echo "$KEY" | a api-key set anthropic > /dev/null
  echo "$OPENAI_KEY" | a api-key set openai > /dev/null
  # write_probe — the worktree gets probe.sh (test/helpers/egress-probe.sh with the ports it needs)
  write_probe() {
    { echo "ALLOWED=$ALLOWED OUTSIDE=$OUTSIDE DAEMON_PORT=$daemon_port"; cat "$TEST_TOP/test/helpers/egress-probe.sh"; } > "$wt_path/probe.sh"
  }
  expect_refusals() {
    grep -q "^sentinel-seen agor$" "$wt_path/probe.txt" || fail "the probe found no sentinel"
    for what in outside outside-connect daemon daemon-connect name sentinel sentinel-bearer sentinel-body sentinel-host; do
      grep -q "^$what 403$" "$wt_path/probe.txt" || fail "$what was not refused by the proxy"
    done
  }
'

# What the agent's Bash tool runs: every way out it might try, each result a line of probe.txt.
AGENT_EGRESS='
  write_probe
  a prompt "$session" "please RUN: sh probe.sh" --json > events.jsonl 2> err || { cat events.jsonl err daemon.log; fail "prompt failed"; }
  cat "$wt_path/probe.txt"
  grep -q probe-done "$wt_path/probe.txt" || fail "the probe did not run to its end"
  # the key: never in the agent (or its tools), always at the endpoint
  grep -q "^ANTHROPIC_API_KEY=agor-sentinel-[0-9a-f]\{32\}$" "$wt_path/env.txt" || { cat "$wt_path/env.txt"; fail "the agent holds no sentinel"; }
  ! grep -q "$KEY" "$wt_path/env.txt" || fail "the real key is in the environment of the agent'"'"'s tools"
  ! grep -q "eyJ" "$wt_path/env.txt" || fail "a token is in the environment of the agent'"'"'s tools"
  grep -q "^HTTPS_PROXY=http://127.0.0.1:3128$" "$wt_path/env.txt" || fail "the tools have no proxy"
  grep -q "\"x-api-key\": \"$KEY\"" server.log || fail "the scripted endpoint never received the real key"
  ! grep -q "agor-sentinel" server.log || grep -q "\"x-api-key\": \"$KEY\"" server.log || fail "the endpoint got only the sentinel"
  # the allowlisted host works; nothing else is reached; the sentinel goes nowhere
  grep -q "hello from target" "$wt_path/allowed.txt" || { cat "$wt_path/allowed.txt"; fail "the allowlisted host was not reached"; }
  expect_refusals
  ! grep -q WORKED "$wt_path/probe.txt" || fail "a way out worked"
  [ ! -s outside.log ] || { cat outside.log; fail "the listener outside was reached"; }
  ! grep -q "agor-sentinel\|/leak" allowed.log || { cat allowed.log; fail "the sentinel reached another host"; }
  ! grep -rq "$KEY" daemon.log events.jsonl err || fail "the key leaked into a log or the output"
  # each refusal: an event on the task and an audit row
  python3 - events.jsonl "$OUTSIDE" "$daemon_port" "$ALLOWED" <<PY
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
got = {(e["data"]["host"], e["data"]["port"], e["data"]["reason"]) for e in events if e.get("type") == "task.egress_refused"}
outside, daemon, allowed = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
want = {("127.0.0.1", outside, "not-allowed"), ("127.0.0.1", daemon, "not-allowed"),
        ("not-allowed.invalid", 80, "not-allowed"), ("127.0.0.1", allowed, "sentinel")}
assert want <= got, (want - got, got)
kinds = [e.get("type") if e.get("type") != "message" else e["data"].get("message_type") for e in events]
first_refusal = kinds.index("task.egress_refused")
assert first_refusal < kinds.index("result"), kinds  # announced while the agent ran, not after it
PY
  "$AGOR" audit list --json --config "$PWD/config.yaml" > audit.json 2>/dev/null || python3 "$TEST_TOP/test/helpers/rpc.py" /run/agor/agor.sock audit.list > audit.json
  python3 - audit.json "$ALLOWED" <<PY
import json, sys
rows = json.load(open(sys.argv[1]))
while isinstance(rows, dict):
    rows = rows.get("result", rows.get("entries", rows.get("rows", [])))
refused = [r for r in rows if r.get("action") == "egress.refused"]
reasons = {r.get("outcome") for r in refused}
assert {"not-allowed", "sentinel"} <= reasons, rows[-5:]
text = json.dumps(refused)
assert str(sys.argv[2]) in text and "not-allowed.invalid" in text, text
named = [r for r in refused if json.loads(r["details"]).get("host") == "not-allowed.invalid"]
assert len(named) == 1, named  # once, live: not again when the run ended
PY
'

CODEX_EGRESS='
  write_probe
  a prompt "$session" "please RUN: sh probe.sh" --yes --json > events.jsonl 2> err || { cat events.jsonl err daemon.log; fail "prompt failed"; }
  cat "$wt_path/probe.txt"
  grep -q probe-done "$wt_path/probe.txt" || fail "the probe did not run to its end"
  ! grep -q "$OPENAI_KEY" "$wt_path/env.txt" || fail "the real key is in the environment of codex'"'"'s commands"
  grep -q "^HTTPS_PROXY=http://127.0.0.1:3128$" "$wt_path/env.txt" || fail "the commands have no proxy"
  grep -qi "\"authorization\": \"Bearer $OPENAI_KEY\"" openai.log || { head -c 2000 openai.log; fail "the scripted endpoint never received the real key"; }
  grep -q "hello from target" "$wt_path/allowed.txt" || { cat "$wt_path/allowed.txt"; fail "the allowlisted host was not reached"; }
  expect_refusals
  ! grep -q WORKED "$wt_path/probe.txt" || fail "a way out worked"
  [ ! -s outside.log ] || { cat outside.log; fail "the listener outside was reached"; }
  ! grep -q "agor-sentinel\|/leak" allowed.log || { cat allowed.log; fail "the sentinel reached another host"; }
  ! grep -rq "$OPENAI_KEY" daemon.log events.jsonl err || fail "the key leaked into a log or the output"
  grep -q "task.egress_refused" events.jsonl || fail "no refusal event"
'

# agent_scratch TOOL MODE BODY — BODY after SCENE with a session of TOOL in MODE, as root in a private mount namespace.
agent_scratch() { in_scratch_system "TEST_TOP='$TEST_TOP' CLAUDE='$CLAUDE' CODEX='$CODEX' TOOL='$1' MODE='$2' TLS='${TLS:-}' WRONG_CA='${WRONG_CA:-}' AGENT_COMMAND='${AGENT_COMMAND:-}' TRACE='${TRACE:-}'
$SCENE
$3"; }

CODEX_TLS='
  a prompt "$session" "please RUN: env > env.txt" --yes --json > events.jsonl 2> err || { cat events.jsonl err daemon.log; fail "prompt failed"; }
  grep -q "\"status\":\"completed\"" events.jsonl || { tail -5 events.jsonl; fail "the prompt did not complete"; }
  grep -q "^CODEX_CA_CERTIFICATE=" "$wt_path/env.txt" || fail "codex trusts no per-task CA"
  ! grep -q "$OPENAI_KEY" "$wt_path/env.txt" || fail "the real key is in the environment of codex'"'"'s commands"
  grep -qi "\"authorization\": \"Bearer $OPENAI_KEY\"" openai.log || { head -c 1500 openai.log; fail "the https endpoint never received the real key"; }
  ! grep -q "agor-sentinel" openai.log || fail "the endpoint saw the sentinel"
'

# A stand-in for the CLI (no retries to wait through): it sends its sentinel to the https endpoint through the
# proxy, which must verify that endpoint against upstream_ca_file before the key goes anywhere.
WRONG_CA_BODY='
  a prompt "$session" "anything" --json > events.jsonl 2> err || true
  cat "$wt_path/upstream.txt"
  grep -q "^502$" "$wt_path/upstream.txt" || fail "the proxy did not refuse an endpoint its CA file does not vouch for"
  grep -q "verification failed" "$wt_path/body.txt" || { cat "$wt_path/body.txt"; fail "the 502 does not say why"; }
  [ ! -s server.log ] || { cat server.log; fail "the endpoint received a request"; }
'


# An https provider endpoint: the proxy terminates the agent's TLS with a per-task CA and verifies the real one.
TLS_EGRESS='
  cat > "$wt_path/tls-probe.sh" <<SH
env > env.txt
curl -sS -m 10 -o /dev/null -w "%{http_code}" https://localhost:$(cat port)/ > ca.txt 2>&1
# the key in cleartext to the provider'"'"'s TLS port: the proxy must not swap it there
curl -sS -m 10 -o /dev/null -w "%{http_code}" -H "x-api-key: \$ANTHROPIC_API_KEY" http://localhost:$(cat port)/v1/messages > clear.txt 2>&1
SH
  a prompt "$session" "please RUN: sh tls-probe.sh" --json > events.jsonl 2> err || { cat events.jsonl err daemon.log; fail "prompt failed"; }
  grep -q "\"status\":\"completed\"" events.jsonl || { tail -5 events.jsonl; fail "the prompt did not complete"; }
  grep -q "^ANTHROPIC_API_KEY=agor-sentinel-[0-9a-f]\{32\}$" "$wt_path/env.txt" || fail "the agent holds no sentinel"
  ! grep -q "$KEY" "$wt_path/env.txt" || fail "the real key is in the environment of the agent'"'"'s tools"
  ca=$(sed -n "s/^NODE_EXTRA_CA_CERTS=//p" "$wt_path/env.txt")
  [ -n "$ca" ] && grep -q "^SSL_CERT_FILE=" "$wt_path/env.txt" && grep -q "^CODEX_CA_CERTIFICATE=" "$wt_path/env.txt" || fail "the agent trusts no per-task CA"
  grep -q "\"x-api-key\": \"$KEY\"" server.log || { head -c 1500 server.log; fail "the https endpoint never received the real key"; }
  ! grep -q "agor-sentinel" server.log || fail "the endpoint saw the sentinel"
  grep -qx "404" "$wt_path/ca.txt" || { cat "$wt_path/ca.txt"; fail "curl in the sandbox did not reach the endpoint through the proxy with the per-task CA"; }
  grep -qx "403" "$wt_path/clear.txt" || { cat "$wt_path/clear.txt"; fail "the sentinel went to the provider in cleartext"; }
  grep -q "task.egress_refused.*sentinel" events.jsonl || fail "the cleartext attempt was not reported"
  ! grep -rq "$KEY" daemon.log events.jsonl err || fail "the key leaked into a log or the output"
'


if [ ! -x "$CLAUDE" ] || [ ! -x "$CODEX" ]; then
  test_skip "Claude Code and Codex through the egress proxy" "the npm registry is unreachable: the agent CLIs are not installed"
else
  test_case "claude code: the tools hold a sentinel, the endpoint gets the key; only allowlisted hosts are reached; refusals are events and audit rows" 'agent_scratch claude-code bypassPermissions "$AGENT_EGRESS"'
  test_case "codex: the same through its Authorization header; its own calls elsewhere are refused and reported" 'agent_scratch codex default "$CODEX_EGRESS"'
  test_case "claude code, https endpoint: the proxy terminates TLS with a per-task CA, verifies the endpoint, swaps the key" 'TLS=1 agent_scratch claude-code bypassPermissions "$TLS_EGRESS"'
  test_case "codex, https endpoint: it trusts the per-task CA (CODEX_CA_CERTIFICATE) and the endpoint gets the key" 'TLS=1 agent_scratch codex default "$CODEX_TLS"'
fi
if is_root; then
  test_case "attack: an https endpoint the upstream CA file does not vouch for never gets the key" '
    mkdir -p agent && cat > agent/fake-claude <<"SH"
#!/bin/sh
cat > /dev/null
curl -sS -m 10 -o body.txt -w "%{http_code}" -X POST -H "x-api-key: $ANTHROPIC_API_KEY" "$ANTHROPIC_BASE_URL/v1/messages" > upstream.txt 2> curl.err
echo "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s1\"}"
echo "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\",\"session_id\":\"s1\"}"
SH
    chmod 755 agent agent/fake-claude
    TLS=1 WRONG_CA=1 AGENT_COMMAND="$PWD/agent/fake-claude" agent_scratch claude-code bypassPermissions "$WRONG_CA_BODY"'
fi

test_done
