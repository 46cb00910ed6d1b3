# test/daemon.sh — the one daemon scene for test bodies: a daemon started on the case's AGOR_HOME, waited for, called
# over JSON-RPC, stopped cleanly, and killed when the body ends. Sourced by test/lib.sh and inside private namespaces.
#
# Settings, as variables the scene sets before start_daemon (or as a prefix: DAEMON_ULIMIT="-Sn 1024" start_daemon):
#   DAEMON_HOST    AGOR_DAEMON_HOST for the daemon alone (e.g. 0.0.0.0 for nodes in other network namespaces)
#   DAEMON_PORT    its TCP port (default 0: any free one, read back into $port)
#   DAEMON_ULIMIT  ulimit arguments applied to the daemon alone (e.g. "-Sn 1024")
#   DAEMON_AS      a command prefix that execs what follows, to run the daemon as another user (setpriv … env -i …)
#   DAEMON_BIN     the agor binary to run (default $AGOR)
# A scene with more to stop when the body ends (nodes, floods) defines scene_cleanup; it runs after the daemon dies.

# start_daemon [daemon flags…] — starts `agor daemon --foreground` in the background, its log appended to daemon.log,
# and waits until that daemon says it serves: sets $daemon_pid and $port (its TCP port).
start_daemon() {
  (
    [ -z "${DAEMON_HOST:-}" ] || export AGOR_DAEMON_HOST=$DAEMON_HOST
    [ -z "${DAEMON_ULIMIT:-}" ] || ulimit $DAEMON_ULIMIT
    exec ${DAEMON_AS:-} "${DAEMON_BIN:-$AGOR}" daemon --foreground --port "${DAEMON_PORT:-0}" "$@"
  ) 2>> daemon.log &
  daemon_pid=$!
  trap daemon_cleanup EXIT
  port=""
  for _ in $(seq 1 300); do
    port=$(sed -n "s/^.*serving on .*:\([0-9][0-9]*\) (pid $daemon_pid,.*/\1/p" daemon.log 2> /dev/null | tail -1)
    [ -n "$port" ] && return 0
    kill -0 "$daemon_pid" 2> /dev/null || break
    sleep 0.05
  done
  tail -n 40 daemon.log
  fail "daemon did not start"
}

# stop_daemon — SIGTERM; the daemon must exit 0 (under ASan: without a leak report).
stop_daemon() {
  local rc=0
  kill -TERM "$daemon_pid"
  wait "$daemon_pid" || rc=$?
  daemon_pid=""
  [ $rc -eq 0 ] || { tail -n 40 daemon.log; fail "daemon exited $rc"; }
}

# kill_daemon — SIGKILL, as a crash would.
kill_daemon() {
  kill -9 "$daemon_pid"
  wait "$daemon_pid" 2> /dev/null || true
  daemon_pid=""
}

# daemon_cleanup — the EXIT trap start_daemon sets: no daemon outlives its case (one the body already ended is
# fine), then the scene's own scene_cleanup.
daemon_cleanup() {
  if [ -n "${daemon_pid:-}" ]; then
    kill -9 "$daemon_pid" 2> /dev/null || true
    wait "$daemon_pid" 2> /dev/null || true
  fi
  if declare -F scene_cleanup > /dev/null; then scene_cleanup; fi
}

# rpc METHOD [PARAMS_JSON] — one JSON-RPC call on the daemon's Unix socket ($DAEMON_SOCKET, default under
# $AGOR_HOME); prints the reply line.
rpc() { python3 "$TEST_TOP/test/helpers/rpc.py" "${DAEMON_SOCKET:-$AGOR_HOME/run/agor.sock}" "$@"; }

# insulated_agent_host — what a prompt test's scene runs as root in its private system before the daemon: the
# insulated mode's agor_users group and agor_executor user (every executor, and so the agent, runs as it), the
# socket directory, the data home ./data made over to it, its cgroup subtree, a source repository and AGOR_HOME.
insulated_agent_host() {
  groupadd agor_users
  useradd --create-home --home-dir /home/agor_executor --groups agor_users agor_executor
  mkdir -p /run/agor && chgrp agor_users /run/agor && chmod 750 /run/agor
  chown agor_executor data
  "$AGOR" admin cgroup-delegate agor_executor > /dev/null # cgroup limits for the agent sandbox of a non-root user
  make_source_repo src && chmod -R a+rX src
  mkdir -p "$AGOR_HOME" && chmod 700 "$AGOR_HOME"
}
