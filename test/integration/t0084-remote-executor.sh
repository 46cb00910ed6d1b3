#!/usr/bin/env bash
# t0084-remote-executor — issue 23: executors on another host call the daemon back over TLS. The daemon runs in one
# network namespace, every executor (started by execution.executor_command_template) in another, joined by a veth
# pair (10.84.0.1 ↔ 10.84.0.2; test/remote-scene.sh), without the daemon's Unix socket (a private empty /run/agor): clone, worktree add and
# a prompt with the real Claude Code against the scripted endpoint, a permission answered; a cut link fails the task
# (heartbeats); a wrong CA or fingerprint fails it naming the setting; an executor host that sees no data home, or
# another, at paths.data_home fails naming it. Kills only the pids it started.
. "$(dirname "$0")/../lib.sh"

. "$TEST_TOP/test/agent-cli.sh" # $CLAUDE, pinned, installed once
. "$TEST_TOP/test/remote-scene.sh"

test_case "execution.executor_daemon_url: TLS only, verified, and the daemon serving TLS" '
  "$AGOR" daemon --foreground --port 0 --set execution.executor_daemon_url=ws://agor:3030/ws 2> err && fail "ws:// was accepted"
  expect_contains err "expected a wss:// or https:// URL"
  "$AGOR" daemon --foreground --port 0 --set execution.executor_daemon_fingerprint=12:ab 2> err && fail "a short fingerprint was accepted"
  expect_contains err "expected 64 hex digits"
  expect_exit 1 "$AGOR" daemon --foreground --port 0 --set execution.executor_daemon_url=wss://agor:3030/ws 2> err
  expect_contains err "remote executors must verify the daemon: set execution.executor_daemon_ca_file"
  expect_exit 1 "$AGOR" daemon --foreground --port 0 --set execution.executor_daemon_url=wss://agor:3030/ws \
    --set execution.executor_daemon_fingerprint=$(printf "ab%.0s" $(seq 32)) 2> err
  expect_contains err "the daemon serves no TLS: set daemon.tls_cert"
'

PROMPT='
  # the executor is a credential holder: never closed as unauthenticated between its heartbeats
  AUTH_TIMEOUT=1000 HEARTBEAT=3000 write_config "  executor_daemon_ca_file: $T/ca/ca.crt"; prepare_session
  a prompt "$session" "please RUN: echo hi > made.txt" --yes > out 2> err || { cat out err daemon.log; fail "the remote prompt failed"; }
  expect_contains out "[permission] Bash allowed"
  expect_contains out "[completed]"
  [ "$(stat -c %U "$wt_path/made.txt")" = agor_executor ] || fail "made.txt is not owned by agor_executor"
  task=$(task_of err)
  rpc messages.list "{\"task_id\":\"$task\"}" > msgs
  grep -q "\"message_type\": *\"tool_result\"" msgs || fail "no tool_result relayed over TLS"
  a task get "$task" --json > task.json; expect_json task.json status completed
  grep -q "\"x-api-key\": \"$KEY\"" server.log || fail "the key never reached the agent on the executor host"
  rpc audit.list > audit.json
  for m in get_execution_context get_api_key request_permission report_completion; do
    grep -q "\"$m\"" audit.json || fail "no $m in the audit log"
  done
  ! grep -rq "$KEY" daemon.log out err || fail "the key leaked"
  # 3 s of silence (past daemon.auth_timeout_ms) while a tool runs: the link stays up
  a prompt "$session" "please RUN: sleep 3 && echo late > late.txt" --yes > out3 2> err3 || { cat out3 err3; fail "a quiet remote prompt failed"; }
  [ -e "$wt_path/late.txt" ] || fail "the quiet tool did not run to its end"
  # the pin alone (a self-signed daemon certificate works the same way)
  write_config "  executor_daemon_fingerprint: $PIN"; restart_daemon
  a prompt "$session" "say hello" --yes > out2 2> err2 || { cat out2 err2 daemon.log; fail "the pinned prompt failed"; }
  expect_contains out2 "[completed]"
  # a zellij terminal hands a PTY over on the Unix socket: refused up front, naming why (tmux is relayed: t0085)
  rpc terminal.open "{\"worktree_id\":\"$wt\",\"multiplexer\":\"zellij\"}" > term.json 2>&1 || true
  grep -q "NOT_BUILT" term.json && grep -q "use tmux (relayed)" term.json || { cat term.json; fail "terminal.open was not refused clearly"; }
'

CUT='
  write_config "  executor_daemon_ca_file: $T/ca/ca.crt"; prepare_session
  "$AGOR" prompt "$session" "SLOW 60" --no --config "$PWD/config.yaml" > out 2> err & prompt_pid=$!
  for i in $(seq 1 100); do task=$(task_of err); [ -n "$task" ] && break; sleep 0.1; done
  for i in $(seq 1 300); do rpc messages.list "{\"task_id\":\"$task\"}" | grep -q "\"message_type\": *\"text_delta\"" && break; sleep 0.1; done
  cut_at=$(date +%s)
  nsenter --net=/proc/$B/ns/net -- ip link set eth0 down
  for i in $(seq 1 150); do a task get "$task" --json > task.json 2>/dev/null; [ "$(json_get task.json status)" = failed ] && break; sleep 0.1; done
  expect_json task.json status failed
  grep -q "the daemon connection was lost" task.json || { cat task.json; fail "the failure does not name the lost link"; }
  took=$(( $(date +%s) - cut_at )); [ $took -le 10 ] || fail "the cut link took ${took}s to fail the task"
  echo "cut link → task failed in ${took}s"
  wait $prompt_pid || true
  no_agent_left
'

FROZEN='
  # a permission waits 1 s at most, heartbeats every 0.5 s: an executor silent for 2.5 s is lost
  write_config "  executor_daemon_ca_file: $T/ca/ca.crt"; sed -i "s/permission_timeout_ms: 20000/permission_timeout_ms: 1000/" config.yaml
  prepare_session
  "$AGOR" prompt "$session" "SLOW 60" --no --config "$PWD/config.yaml" > out 2> err & prompt_pid=$!
  for i in $(seq 1 100); do task=$(task_of err); [ -n "$task" ] && break; sleep 0.1; done
  for i in $(seq 1 300); do rpc messages.list "{\"task_id\":\"$task\"}" | grep -q "\"message_type\": *\"text_delta\"" && break; sleep 0.1; done
  # the executor host freezes; its local end (here the template'"'"'s shell, on Kubernetes kubectl) lives on
  frozen=$(pgrep -f -- "$AGOR executor --stdin" | tr "\n" " ")
  [ -n "$frozen" ] || fail "no executor to freeze"
  kill -STOP $frozen; frozen_at=$(date +%s)
  for i in $(seq 1 150); do a task get "$task" --json > task.json 2>/dev/null; [ "$(json_get task.json status)" = failed ] && break; sleep 0.1; done
  kill -CONT $frozen 2>/dev/null || true
  expect_json task.json status failed
  grep -q "the remote executor went silent" task.json || { cat task.json; fail "the failure does not name the silence"; }
  took=$(( $(date +%s) - frozen_at )); [ $took -le 8 ] || fail "the frozen executor took ${took}s to fail the task"
  echo "frozen executor → task failed in ${took}s"
  wait $prompt_pid || true
  grep -q "went silent" daemon.log || fail "the daemon did not log the lost executor"
  no_agent_left
'

TRUST='
  write_config "  executor_daemon_ca_file: $T/other-ca/ca.crt"; prepare_session
  expect_exit 1 a prompt "$session" "say hello" --no > out 2> err
  task=$(last_task); a task get "$task" --json > task.json
  expect_json task.json status failed
  grep -q "execution.executor_daemon_ca_file" task.json || { cat task.json; fail "a wrong CA is not named"; }
  grep -q "verification failed" task.json || fail "the reason is not the certificate"
  bad=$(openssl x509 -in other-ca/server.crt -noout -fingerprint -sha256 | cut -d= -f2)
  write_config "  executor_daemon_fingerprint: $bad"; restart_daemon
  expect_exit 1 a prompt "$session" "say hello" --no > out 2> err
  task=$(last_task); a task get "$task" --json > task.json
  expect_json task.json status failed
  grep -q "execution.executor_daemon_fingerprint" task.json || { cat task.json; fail "a wrong fingerprint is not named"; }
  grep -q "does not match the pinned SHA-256" task.json || fail "the reason is not the pin"
  ! grep -qs "\"x-api-key\"" server.log || fail "the agent ran although the daemon was not verified"
'

DATAHOME='
  write_config "  executor_daemon_ca_file: $T/ca/ca.crt"; prepare_session
  # the first remote executor told the daemon the id of the data home it sees; the daemon keeps it in AGOR_HOME
  [ "$(cat "$AGOR_HOME/data-home-id")" = "$(head -c 32 data/.agor-data-home-id)" ] || fail "the daemon did not learn the data home id"
  wt_dir=$(dirname "$wt_path")
  # the executor host mounts the data home at another path: an empty directory at paths.data_home
  mkdir -p elsewhere; write_executor_template "mount --bind $T/data $T/elsewhere && mount -t tmpfs tmpfs $T/data"
  a worktree add "$repo" wt2 --branch two --create-branch --json > out 2>&1 && { cat out; fail "a worktree was added without the data home"; }
  grep -q "PATH_OUTSIDE_DATA_HOME" out && grep -q "paths.data_home: $T/data on this host is not the daemon" out || { cat out; fail "the missing data home is not named"; }
  [ ! -e "$wt_dir/wt2" ] || fail "a worktree appeared"
  # another data home at that path (the same repository paths, another id): refused, nothing touched there
  cp -a data other && echo 0123456789abcdef0123456789abcdef > other/.agor-data-home-id
  write_executor_template "mount --bind $T/other $T/data"
  a worktree add "$repo" wt3 --branch three --create-branch --json > out 2>&1 && { cat out; fail "a worktree was added in another data home"; }
  grep -q "is another data home (its .agor-data-home-id says 0123456789abcdef0123456789abcdef, the daemon" out || { cat out; fail "the other data home is not named"; }
  [ -z "$(find other -name wt3)" ] && [ ! -e "$wt_dir/wt3" ] || fail "a worktree appeared in a data home"
  make_source_repo src2 && chmod -R a+rX src2
  a repo clone "$PWD/src2" --json > out 2>&1 && { cat out; fail "a clone went into another data home"; }
  grep -q "is another data home" out || { cat out; fail "the clone did not name the other data home"; }
  # the right mount again: it works
  write_executor_template
  a worktree add "$repo" wt4 --branch four --create-branch --json > out 2>&1 || { cat out; fail "the right data home was refused"; }
'

scratch() { remote_scratch "$1"; }

if unmet=$(unmet_needs root,ip,nsenter,netns); then
  test_skip "remote executors over TLS in another network namespace" "$unmet"
elif [ ! -x "$CLAUDE" ]; then
  test_skip "remote executors over TLS in another network namespace" "the agent CLIs are not installed"
else
  test_case "remote: clone, worktree, a prompt with a permission over wss:// (CA, then pin); no Unix socket; no zellij" 'scratch "$PROMPT"'
  test_case "attack: cutting the link mid-prompt fails the task (heartbeat), nothing left running" 'scratch "$CUT"'
  test_case "attack: a frozen executor host fails the task from the daemon side (its silence), nothing left running" 'scratch "$FROZEN"'
  test_case "data home: an executor that sees none, or another, at paths.data_home fails naming it; never another repository" 'scratch "$DATAHOME"'
  test_case "attack: a wrong CA or a wrong fingerprint fails the task naming the setting; the agent never runs" 'scratch "$TRUST"'
fi

test_done
