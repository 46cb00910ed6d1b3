# test/tmux.sh — stopping a test's tmux server for sure, by the pid that holds its socket, and proving none is left.
# Sourced by test/lib.sh, and by the scripts that run outside it (private namespaces, test/bench/*); needs only
# /proc, tmux, setpriv (for tmux_stop_as) and coreutils.
#
#   tmux_socket_pids SOCKET     the pids of the live processes listening on the Unix socket bound at SOCKET, in
#                               any network namespace this shell sees (a server under `nsenter --net` included)
#   tmux_stop SOCKET            kill-server on SOCKET (a client that waits 5 s at most), then SIGKILL whatever
#                               still listens on it once 5 s more have passed, waits until none does, removes the
#                               socket file; returns 1 (and says why on stderr) when the server did not end on
#                               kill-server — a server that does not answer — or when a server listens there again
#                               right after
#   tmux_stop_as USER SOCKET    the same for the server of another Unix user (as root): kill-server is sent as USER
#                               (setpriv, with USER's groups); SOCKET is a path, or a `tmux -L` name made a path by
#                               tmux_socket_of NAME USER. A USER /etc/passwd does not know has no server: returns 0
#   tmux_socket_of NAME [USER]  the socket path of `tmux -L NAME` for this user, or for USER: TMUX_TMPDIR, else /tmp
#                               (agor runs tmux without TMUX_TMPDIR, so its servers are under /tmp)
# A server left behind is the thing under test: the caller fails its case on a non-zero tmux_stop, never warns; an
# EXIT trap, which cannot fail a case otherwise, says why on stderr and exits 1.

tmux_socket_of() { echo "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u ${2:+"$2"})/$1"; }

# tmux_unix_tables — /proc/net/unix, then one /proc/PID/net/unix for each other network namespace of a process
tmux_unix_tables() {
  echo /proc/net/unix
  find /proc/[0-9]*/ns/net -maxdepth 0 -printf '%h %l\n' 2> /dev/null |
    awk '$2 != "" && !seen[$2]++ { sub("/ns$", "", $1); print $1 "/net/unix" }'
}

tmux_socket_pids() {
  local inode
  # /proc/net/unix: Num RefCount Protocol Flags Type St Inode Path; flag 00010000 is a listening socket. Each network
  # namespace has its own table; socket inodes are unique across them. cat, not awk, reads them: a process may be gone
  for inode in $(tmux_unix_tables | xargs cat 2> /dev/null |
    awk -v path="$1" '$8 == path && $4 == "00010000" { print $7 }' | sort -u); do
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

tmux_stop() { tmux_stop_by "" "$1"; }

tmux_stop_as() {
  local user=$1 socket=$2
  id -u "$user" > /dev/null 2>&1 || return 0
  case "$socket" in */*) ;; *) socket=$(tmux_socket_of "$socket" "$user") ;; esac
  tmux_stop_by "$user" "$socket"
}

# tmux_kill_server USER SOCKET — kill-server on SOCKET, as USER when USER is set and is not this shell's user; a
# server that never answers (a stopped one, a stray listener) would hold the client forever: 5 s at most
tmux_kill_server() {
  if [ -n "$1" ] && [ "$(id -u "$1")" != "$(id -u)" ]; then
    timeout -k 1 5 setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups -- tmux -S "$2" kill-server
  else
    timeout -k 1 5 tmux -S "$2" kill-server
  fi
}

# tmux_stop_by USER SOCKET — tmux_stop, with kill-server sent as USER (empty: this shell's user)
tmux_stop_by() {
  local user=$1 socket=$2 pids rc=0 whose=""
  [ -z "$user" ] || whose=" of $user"
  pids=$(tmux_socket_pids "$socket")
  if [ -n "$pids" ]; then
    tmux_kill_server "$user" "$socket" 2> /dev/null || true
    if ! tmux_wait_gone 5 $pids; then
      echo "tmux_stop: the tmux server $pids$whose on $socket did not end on kill-server; killed" >&2
      ps -o pid,ppid,user,stat,args -p "$(echo $pids | tr " " ,)" >&2 2> /dev/null || true
      kill -9 $pids 2> /dev/null || true
      tmux_wait_gone 5 $pids || echo "tmux_stop: $pids outlived SIGKILL" >&2
      rc=1
    fi
  fi
  sleep 0.2 # a server started after the stop (a late executor's new-session) shows up here
  pids=$(tmux_socket_pids "$socket")
  if [ -n "$pids" ]; then
    echo "tmux_stop: a tmux server ($pids$whose) listens on $socket again after it was stopped; killed" >&2
    kill -9 $pids 2> /dev/null || true
    tmux_wait_gone 5 $pids || true
    rc=1
  fi
  rm -f "$socket"
  return $rc
}
