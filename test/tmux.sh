# test/tmux.sh — stopping a test's tmux server for sure, by the pid that holds its socket, and proving none is left.
# Sourced by test/lib.sh, and by the scripts that run outside it (private namespaces, test/bench/*); needs only
# /proc, tmux and coreutils.
#
#   tmux_socket_pids SOCKET   the pids of the live processes listening on the Unix socket bound at SOCKET
#   tmux_stop SOCKET          kill-server on SOCKET, then SIGKILL whatever still listens on it once 5 s have passed,
#                             waits until none does, removes the socket file; returns 1 (and says why on stderr)
#                             when the server did not end on kill-server — a server that does not answer — or
#                             when a server listens there again right after
#   tmux_socket_of NAME       the socket path of `tmux -L NAME` for this user (TMUX_TMPDIR, else /tmp)
# A server left behind is the thing under test: the caller fails its case on a non-zero tmux_stop, never warns.

tmux_socket_of() { echo "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$1"; }

tmux_socket_pids() {
  local inode
  # /proc/net/unix: Num RefCount Protocol Flags Type St Inode Path; flag 00010000 is a listening socket
  for inode in $(awk -v path="$1" '$8 == path && $4 == "00010000" { print $7 }' /proc/net/unix 2> /dev/null); do
    find /proc/[0-9]*/fd -lname "socket:\[$inode\]" 2> /dev/null | cut -d/ -f3
  done | sort -u | while read -r pid; do tmux_pid_alive "$pid" && echo "$pid"; done
}

# tmux_pid_alive PID — the process exists and is not a zombie (a daemonized server is reaped by whoever adopted it)
tmux_pid_alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# tmux_wait_gone SECONDS PID… — waits until none of the pids is alive; 1 when one still is after SECONDS
tmux_wait_gone() {
  local tries=$(($1 * 20)) pid=""
  shift
  for _ in $(seq 1 "$tries"); do
    for pid in "$@"; do tmux_pid_alive "$pid" && break; pid=""; done
    [ -z "$pid" ] && return 0
    sleep 0.05
  done
  return 1
}

tmux_stop() {
  local socket=$1 pids rc=0
  pids=$(tmux_socket_pids "$socket")
  if [ -n "$pids" ]; then
    tmux -S "$socket" kill-server 2> /dev/null || true
    if ! tmux_wait_gone 5 $pids; then
      echo "tmux_stop: the tmux server $pids on $socket did not end on kill-server; killed" >&2
      ps -o pid,ppid,stat,args -p "$(echo $pids | tr " " ,)" >&2 2> /dev/null || true
      kill -9 $pids 2> /dev/null || true
      tmux_wait_gone 5 $pids || echo "tmux_stop: $pids outlived SIGKILL" >&2
      rc=1
    fi
  fi
  sleep 0.2 # a server started after the stop (a late executor's new-session) shows up here
  pids=$(tmux_socket_pids "$socket")
  if [ -n "$pids" ]; then
    echo "tmux_stop: a tmux server ($pids) listens on $socket again after it was stopped; killed" >&2
    kill -9 $pids 2> /dev/null || true
    tmux_wait_gone 5 $pids || true
    rc=1
  fi
  rm -f "$socket"
  return $rc
}
