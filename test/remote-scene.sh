# test/remote-scene.sh — the two-host scene of the remote-executor tests (t0084, t0085), sourced after test/lib.sh and
# test/agent-cli.sh: the daemon in one network namespace, every executor (execution.executor_command_template) in
# another, joined by a veth pair (10.84.0.1 ↔ 10.84.0.2), TLS with a test CA, the scripted Anthropic endpoint on the
# executor host, and a private /tmp (the tmux servers a case starts are its own). Kills only the pids it started.
. "$TEST_TOP/test/terminal.sh" # PRIVATE_TMP, TMUX_SERVER

# Both hosts, the daemon and a session, as root in a private mount namespace (users, /etc/hosts, /run never leak).
# No cgroup limits: the cgroup tree is shared with every other test on the host (t0080 covers them).
REMOTE_SCENE='
  [ -n "${TRACE:-}" ] && set -x
  KEY=sk-ant-SECRET-KEY-8484
  PIDS=""
  # two hosts: a network namespace each, held by a sleeping process, joined by a veth pair
  unshare --net sleep 900 & A=$!; unshare --net sleep 900 & B=$!; PIDS="$A $B"
  scene_cleanup() { # the tmux server of agor_executor (terminals, listening in the executor host network
    local rc=0       # namespace; the case fails when it does not stop), then the pids the scene started
    tmux_stop_as agor_executor "$(tmux_server agor_executor "$T/data")" || rc=1
    kill $PIDS 2> /dev/null; wait 2> /dev/null || true
    [ $rc = 0 ] || exit 1
  }
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
  # the executor host: its own network, its own mounts with the data home but no daemon socket (an empty /run/agor)
  # and no AGOR_HOME (an empty $T/home) — what an executor pod sees (docs/terminals.md, dist/k8s/README.md)
  write_executor_template() { # [MOUNTS]: shell commands run in the executor mount namespace before it starts
    cat > remote-executor.sh <<EOF
#!/bin/sh
exec unshare --mount --propagation private sh -c "mount -t tmpfs tmpfs /run/agor && mount -t tmpfs tmpfs $T/home && ${1:-true} && exec nsenter --net=/proc/$B/ns/net -- $AGOR executor --stdin"
EOF
    chmod 755 remote-executor.sh
  }
  write_executor_template
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

# remote_scratch BODY — BODY after REMOTE_SCENE, as root in a scratch system (test/lib.sh's in_scratch_system).
remote_scratch() { in_scratch_system "TEST_TOP='$TEST_TOP' CLAUDE='$CLAUDE' TRACE='${TRACE:-}'
$PRIVATE_TMP
$TMUX_SERVER
$REMOTE_SCENE
$1"; }
