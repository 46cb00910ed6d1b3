#!/usr/bin/env bash
# t0084-remote-executor — issue 23: executors on another host call the daemon back over TLS. The daemon runs in one
# network namespace, every executor (started by execution.executor_command_template) in another, joined by a veth
# pair (10.84.0.1 ↔ 10.84.0.2), without the daemon's Unix socket (a private empty /run/agor): clone, worktree add and
# a prompt with the real Claude Code against the scripted endpoint, a permission answered; a cut link fails the task
# (heartbeats); a wrong CA or fingerprint fails it naming the setting. Kills only the pids it started.
. "$(dirname "$0")/../lib.sh"

. "$TEST_TOP/test/agent-cli.sh" # $CLAUDE, pinned, installed once

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

# Both hosts, the daemon and a session, as root in a private mount namespace (users, /etc/hosts, /run never leak).
# No cgroup limits: the cgroup tree is shared with every other test on the host (t0080 covers them).
SCENE='
  [ -n "${TRACE:-}" ] && set -x
  KEY=sk-ant-SECRET-KEY-8484
  PIDS=""
  # two hosts: a network namespace each, held by a sleeping process, joined by a veth pair
  unshare --net sleep 900 & A=$!; unshare --net sleep 900 & B=$!; PIDS="$A $B"
  scene_cleanup() { kill $PIDS 2> /dev/null; wait 2> /dev/null || true; }
  trap scene_cleanup EXIT   # start_daemon keeps it: its cleanup runs scene_cleanup
  for i in $(seq 1 100); do [ "$(readlink /proc/$B/ns/net)" != "$(readlink /proc/self/ns/net)" ] && [ "$(readlink /proc/$A/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.02; done
  ip link add veth84a netns $A type veth peer name eth0 netns $B
  nsenter --net=/proc/$A/ns/net -- sh -c "ip link set lo up; ip addr add 10.84.0.1/24 dev veth84a; ip link set veth84a up"
  nsenter --net=/proc/$B/ns/net -- sh -c "ip link set lo up; ip addr add 10.84.0.2/24 dev eth0; ip link set eth0 up"
  echo "10.84.0.1 agor-daemon" >> /etc/hosts
  bash "$TEST_TOP/test/helpers/make-test-ca.sh" ca agor-daemon
  bash "$TEST_TOP/test/helpers/make-test-ca.sh" other-ca agor-daemon
  PIN=$(openssl x509 -in ca/server.crt -noout -fingerprint -sha256 | cut -d= -f2)
  # the provider is on the executor host only
  nsenter --net=/proc/$B/ns/net -- python3 "$TEST_TOP/test/helpers/anthropic-server.py" port server.log > /dev/null 2>&1 &
  PIDS="$PIDS $!"
  for i in $(seq 1 400); do [ -s port ] && break; sleep 0.05; done
  [ -s port ] || fail "the scripted endpoint did not start"
  # the executor host: its own network, and no daemon socket (an empty /run/agor)
  cat > remote-executor.sh <<EOF
#!/bin/sh
exec unshare --mount --propagation private sh -c "mount -t tmpfs tmpfs /run/agor && exec nsenter --net=/proc/$B/ns/net -- $AGOR executor --stdin"
EOF
  chmod 755 remote-executor.sh
  mkdir -p data && chmod 755 "$T" data
  write_config() { # EXTRA_EXECUTION_YAML (the trust: ca_file and/or fingerprint)
    printf "paths:\n  data_home: %s/data\ndaemon:\n  socket_path: /run/agor/agor.sock\n  host: 10.84.0.1\n  port: 3030\n  auth_timeout_ms: ${AUTH_TIMEOUT:-10000}\n  tls_cert: %s/ca/server.crt\n  tls_key: %s/ca/server.key\nexecution:\n  unix_user_mode: insulated\n  permission_timeout_ms: 20000\n  executor_command_template: %s/remote-executor.sh\n  executor_daemon_url: wss://agor-daemon:3030/ws\n  executor_heartbeat_ms: ${HEARTBEAT:-500}\n  sandbox:\n    memory_max_mb: 0\n    pids_max: 0\n    cpu_max_percent: 0\n%s\nagents:\n  claude_code:\n    command: %s\n    base_url: http://127.0.0.1:%s\n" \
      "$T" "$T" "$T" "$T" "$1" "$CLAUDE" "$(cat port)" > config.yaml
    chmod 600 config.yaml
  }
  DAEMON_SOCKET=/run/agor/agor.sock DAEMON_PORT=3030 DAEMON_AS="nsenter --net=/proc/$A/ns/net --"
  start_scene_daemon() { start_daemon --config "$PWD/config.yaml"; }
  restart_daemon() { stop_daemon; : > daemon.log; start_scene_daemon; }
  a() { "$AGOR" "$@" --config "$PWD/config.yaml"; }
  prepare_session() {
    groupadd agor_users
    useradd --create-home --home-dir /home/agor_executor --groups agor_users agor_executor
    mkdir -p /run/agor && chgrp agor_users /run/agor && chmod 750 /run/agor
    chown agor_executor data
    make_source_repo src && chmod -R a+rX src
    mkdir -p "$AGOR_HOME" && chmod 700 "$AGOR_HOME"
    start_scene_daemon
    a repo clone "$PWD/src" --json > clone.json || { cat clone.json daemon.log; fail "the remote clone failed"; }
    repo=$(json_get clone.json repo.id)
    a worktree add "$repo" wt1 --branch feat --create-branch --json > wt.json || { cat wt.json; fail "the remote worktree add failed"; }
    wt=$(json_get wt.json worktree.id)
    a worktree get "$wt" --json > wt.json && wt_path=$(json_get wt.json path)
    a session create "$wt" --tool claude-code --permission-mode default --json > session.json
    session=$(json_get session.json id)
    echo "$KEY" | a api-key set anthropic > /dev/null
  }
  task_of() { sed -n "s/^task \([0-9a-f]*\)$/\1/p" "$1" | head -1; }
  last_task() { a task list --json > tasks.json && json_get tasks.json 0.id; }
  mine() { for p in $(pgrep -u agor_executor); do case $(readlink /proc/$p/cwd 2>/dev/null) in "$T"*) echo $p;; esac; done; }
  no_agent_left() {
    for i in $(seq 1 50); do [ -z "$(mine)" ] && return 0; sleep 0.1; done
    ps -fp "$(mine | tr "\n" ,)0"; fail "processes of agor_executor survived"
  }
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
  # terminals need the Unix socket: refused up front, naming why, never a half-open terminal
  rpc terminal.open "{\"worktree_id\":\"$wt\"}" > term.json 2>&1 || true
  grep -q "NOT_BUILT" term.json && grep -q "execution.executor_daemon_url" term.json || { cat term.json; fail "terminal.open was not refused clearly"; }
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

scratch() { in_scratch_system "TEST_TOP='$TEST_TOP' CLAUDE='$CLAUDE' TRACE='${TRACE:-}'
$SCENE
$1"; }

if unmet=$(unmet_needs root,ip,nsenter,netns); then
  test_skip "remote executors over TLS in another network namespace" "$unmet"
elif [ ! -x "$CLAUDE" ]; then
  test_skip "remote executors over TLS in another network namespace" "the agent CLIs are not installed"
else
  test_case "remote: clone, worktree, a prompt with a permission over wss:// (CA, then pin); no Unix socket; no terminal" 'scratch "$PROMPT"'
  test_case "attack: cutting the link mid-prompt fails the task (heartbeat), nothing left running" 'scratch "$CUT"'
  test_case "attack: a frozen executor host fails the task from the daemon side (its silence), nothing left running" 'scratch "$FROZEN"'
  test_case "attack: a wrong CA or a wrong fingerprint fails the task naming the setting; the agent never runs" 'scratch "$TRUST"'
fi

test_done
