# test/terminal.sh — the terminal tests' shared scene (t0070-terminal, t0071-terminal-web), sourced after test/lib.sh:
# a private /tmp per case (so the tmux servers a case starts are its own), a daemon, a worktree, terminal clients.

# need_real_tmux NAME — the rest of the test file runs real tmux terminals: when this machine cannot (no tmux, not
# root for a private /tmp), NAME is skipped with the reason and the test file ends here.
need_real_tmux() { file_needs tmux,root,mountns "$1"; }

# PRIVATE_TMP — shell code (run as root inside a private mount namespace) that puts an empty tmpfs on /tmp
# while keeping the checkout reachable at the same path when it lives under /tmp (CI clones may).
PRIVATE_TMP='
  case "$TEST_TOP/" in
    /tmp/*) mount --bind "$TEST_TOP" /mnt
            mount -t tmpfs -o mode=1777 tmpfs /tmp
            mkdir -p "$TEST_TOP" && mount --move /mnt "$TEST_TOP" ;;
    *) mount -t tmpfs -o mode=1777 tmpfs /tmp ;;
  esac
'

# in_private_tmp < BODY — runs BODY (stdin, with `set -e`, test/daemon.sh, test/tmux.sh and the SCENE helpers) in a
# private mount namespace with its own /tmp: the tmux server (/tmp/tmux-UID/agor-USER-HASH) a case starts is its own
# and is stopped with the case (tmux_stop: by the pid on its socket), never one of the host's. The case fails when
# that server did not end on kill-server or came back after it.
in_private_tmp() {
  local script="$T/.private-tmp-body.sh"
  { echo "set -e"; echo ". '$TEST_TOP/test/asserts.sh'; . '$TEST_TOP/test/daemon.sh'; . '$TEST_TOP/test/tmux.sh'"
    echo "cd '$T'"; printf '%s\n' "$SCENE"; cat; } > "$script"
  T="$T" TEST_TOP="$TEST_TOP" unshare --mount --propagation private -- bash -c '
    set -e
    eval "$2"
    . "$TEST_TOP/test/tmux.sh"
    eval "$3"
    trap "rc=\$?; tmux_stop \"\$(tmux_socket_of \"\$(tmux_server \$(id -un))\")\" || rc=1; exit \$rc" EXIT
    bash "$1"' _ "$script" "$PRIVATE_TMP" "$TMUX_SERVER"
}

# tmux_server USER [DATA_HOME] — the tmux server (-L) of USER's terminals of a data home (default $AGOR_HOME)
TMUX_SERVER='tmux_server() { echo "agor-$1-$(printf %s "${2:-$AGOR_HOME}" | sha256sum | cut -c1-8)"; }'
eval "$TMUX_SERVER"

SCENE="$TMUX_SERVER"'
  worktree() { # → $wt, a worktree of a fresh clone
    make_source_repo src
    "$AGOR" repo clone "$PWD/src" --json > clone.json
    "$AGOR" worktree add "$(json_get clone.json repo.id)" feature --json > wt.json
    wt=$(json_get wt.json worktree.id)
  }
  term() { python3 "$TEST_TOP/test/helpers/term-client.py" "$AGOR_HOME/run/agor.sock" "$@"; }
  open_terminal() { # WORKTREE → open.json, the terminal.open answer ({"open": {"result": {terminal_id, token, …}}})
    term "$1" "type:true\n" > open.out || { cat open.out daemon.log; false; }
    head -1 open.out > open.json
  }
  ancestors() { # PID → its ancestors pids, one a line
    local p=$1
    while [ "$p" -gt 1 ]; do p=$(awk "{print \$4}" /proc/$p/stat); echo "$p"; done
  }
'

