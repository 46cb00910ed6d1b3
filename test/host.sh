# test/host.sh — a whole host made with agor's own commands, across the cases of one file (t0039 insulated, t0043
# strict): the binary installed where sudo runs it, the daemon as its user `agor`, people with tokens over TCP, a
# source repository, and the daemon stopped at the end. Sourced after lib.sh, with BIN and STATE set: BIN the
# installed binary, STATE a directory one case leaves the next (the daemon's pid and port, each user's token).

as_agor() { setpriv --reuid=agor --regid=agor --init-groups -- env -i PATH=/usr/bin:/bin HOME=/home/agor "$@"; }
as_tcp() { # USER CMD… — an agor client command of USER over TCP with USER's token
  local u=$1; shift
  setpriv --reuid="$u" --regid="$u" --init-groups -- env -i PATH=/usr/bin:/bin HOME="/home/$u" \
    AGOR_TOKEN="$(cat "$STATE/token-$u")" "$BIN" "$@" --url "ws://127.0.0.1:$(cat "$STATE/port")/ws"
}
exec_tcp() { # USER WORKTREE ARGV… — `agor exec` over TCP (the URL before "--")
  local u=$1 wt=$2; shift 2
  setpriv --reuid="$u" --regid="$u" --init-groups -- env -i PATH=/usr/bin:/bin HOME="/home/$u" \
    AGOR_TOKEN="$(cat "$STATE/token-$u")" "$BIN" exec --url "ws://127.0.0.1:$(cat "$STATE/port")/ws" "$wt" -- "$@"
}

# host_daemon_start — the daemon as agor on the host setup made (not a child of the case: its pid and port in STATE)
host_daemon_start() {
  setpriv --reuid=agor --regid=agor --init-groups -- env -i PATH=/usr/bin:/bin HOME=/home/agor \
    "$BIN" daemon --foreground --port 0 2> "$STATE/daemon.log" &   # $! is the daemon itself
  echo $! > "$STATE/pid"
  for i in $(seq 1 200); do grep -q "serving on" "$STATE/daemon.log" && break; sleep 0.05; done
  grep -q "serving on" "$STATE/daemon.log" || { cat "$STATE/daemon.log"; fail "the daemon did not start on the host setup made"; }
  sed -n "s/.*:\([0-9][0-9]*\) (pid.*/\1/p" "$STATE/daemon.log" | head -1 > "$STATE/port"
}

# host_people USER… — an agor user for each Unix user, and their token in STATE; then a source repository /srv/src
host_people() {
  for u in "$@"; do
    expect_exit 0 as_agor "$BIN" user create "$u" --unix-user "$u"
    as_agor "$BIN" user token --for "$u" > "$STATE/token-$u" 2> /dev/null || fail "no token for $u"
  done
  mkdir -p /srv/src && git init -q -b main /srv/src && echo hi > /srv/src/hello.txt
  git -C /srv/src add -A && git -C /srv/src -c user.name=o -c user.email=o@o commit -q -m start && chmod -R a+rX /srv/src
}

# host_daemon_stop — SIGTERM; it must be gone within 10 s without logging an error
host_daemon_stop() {
  local pid; pid=$(cat "$STATE/pid")
  kill -TERM "$pid" || fail "no daemon $pid"
  for i in $(seq 1 200); do kill -0 "$pid" 2> /dev/null || break; sleep 0.05; done   # not a child of this case
  ! kill -0 "$pid" 2> /dev/null || { tail -20 "$STATE/daemon.log"; fail "the daemon did not stop within 10 s"; }
  ! grep -q "error" "$STATE/daemon.log" || { grep error "$STATE/daemon.log"; fail "the daemon logged errors"; }
}
