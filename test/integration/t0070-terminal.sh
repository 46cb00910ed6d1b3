#!/usr/bin/env bash
# t0070-terminal — terminals end to end with real tmux: the executor's tmux.attach hands a control socket to the
# daemon (SCM_RIGHTS), the daemon relays it; resize, exit, re-attach after kill -9, access attacks, environment.
. "$(dirname "$0")/../lib.sh"

WS_DIR="$TEST_TOP/build/test-tmp/node-ws"
export WS_MODULE_DIR="$WS_DIR" TEST_TOP
. "$TEST_TOP/test/terminal.sh"

test_case "tmux.attach dry run: one server per user and data home (-L agor-USER-HASH), session, window per worktree, control client" '
  mkdir -p "$AGOR_HOME/worktrees/o/r/feature"
  executor "{\"command\":\"tmux.attach\",\"params\":{\"sessionName\":\"agor\",\"cwd\":\"o/r/feature\"}}" --dry-run
  expect_success
  user=$(id -un)
  expect_json out data.plan.1.argv "[\"tmux\", \"-L\", \"$(tmux_server $user)\", \"has-session\", \"-t\", \"=agor\"]"
  expect_contains out "\"new-window\",\"-d\",\"-t\",\"=agor:\",\"-n\",\"feature\""
  expect_contains out "\"-C\",\"attach-session\""
  expect_contains out "terminal.handover (SCM_RIGHTS)"
  executor "{\"command\":\"tmux.attach\",\"params\":{\"sessionName\":\"agor\",\"cwd\":\"/etc\"}}" --dry-run
  expect_error PATH_OUTSIDE_DATA_HOME 1
  executor "{\"command\":\"tmux.attach\",\"params\":{\"sessionName\":\"agor\",\"cwd\":\"o/r/feature\"},\"daemonUrl\":\"http://x\",\"sessionToken\":\"t\"}"
  expect_error INVALID_PAYLOAD 2
  expect_contains out "daemonCa or daemonFingerprint"
'

test_case "zellij.attach dry run: command line, environment, config path; agor setup zellij installs config.kdl" '
  mkdir -p "$AGOR_HOME/worktrees/o/r/feature"
  AGOR_SECRET_OF_THE_CALLER=x executor "{\"command\":\"zellij.attach\",\"params\":{\"sessionName\":\"agor\",\"cwd\":\"o/r/feature\",\"tabName\":\"feature\"},\"env\":{\"EDITOR\":\"vi\"}}" --dry-run
  expect_success
  expect_json out data.plan.2.argv "[\"zellij\", \"--config\", \"$AGOR_HOME/zellij/config.kdl\", \"attach\", \"agor\", \"--create\"]"
  expect_json out data.plan.3.argv "[\"zellij\", \"--session\", \"agor\", \"action\", \"go-to-tab-name\", \"--create\", \"feature\"]"
  json_get out data.plan.2.env > env.json
  for v in "HOME=$(getent passwd $(id -un) | cut -d: -f6)" "USER=$(id -un)" "TERM=xterm-256color" "EDITOR=vi"; do
    expect_contains env.json "\"$v\""
  done
  expect_not_contains env.json AGOR_
  expect_not_contains env.json SECRET
  [ ! -e "$AGOR_HOME/zellij/config.kdl" ] || fail "a dry run wrote the config"
  executor "{\"command\":\"zellij.attach\",\"params\":{\"sessionName\":\"agor\",\"cwd\":\"o/r/feature\",\"create\":false}}" --dry-run
  expect_error INVALID_PAYLOAD 2
  expect_exit 0 "$AGOR" setup zellij
  expect_contains out "wrote $AGOR_HOME/zellij/config.kdl"
  expect_contains "$AGOR_HOME/zellij/config.kdl" "session_serialization true"
  expect_contains "$AGOR_HOME/zellij/config.kdl" "session_folder \"$AGOR_HOME/zellij/sessions\""
  expect_contains "$AGOR_HOME/zellij/config.kdl" "pane_frames false"
  [ -d "$AGOR_HOME/zellij/sessions" ]
  expect_exit 0 "$AGOR" setup zellij
  expect_contains out "nothing to change"
'

need_real_tmux "terminals with real tmux"

test_case "echo hi, resize (tput cols), no daemon secret in the shell, screen and state kept across kill -9 of the daemon, exit" '
  in_private_tmp <<"BODY"
    AGOR_TEST_SECRET=s3cr3t-of-the-daemon start_daemon
    worktree
    term $wt "expect:@agor-sandbox:" "type:echo h\"\"i\n" "expect:hi\r\n" "type:tput cols\n" "expect:80\r\n" \
      resize:117x33 "type:tput cols; tput lines\n" "expect:117\r\n33\r\n" \
      "type:echo \"[\$AGOR_TEST_SECRET][\$AGOR_HOME][\$USER]\"\n" "expect:\[\]\[\]\[$(id -un)\]\r\n" \
      "type:env | grep -c AGOR_\n" "expect:\r0\r\n" \
      "type:STATE=kept-\$((40+2))\n" "sleep:0.5" > first.out || { cat first.out daemon.log; false; }
    # the pane is quiet before the kill -9: output tmux still held for the dead daemon would stick its client in
    # the server for good (tmux 3.3a), a server the EXIT trap would then fail to stop — a crash no daemon can tidy
    head -1 first.out > open.json
    expect_json open.json open.result.tmux.server "$(tmux_server $(id -un))"
    expect_json open.json open.result.tmux.session agor
    kill_daemon
    start_daemon
    term $wt "expect:STATE=kept-\\\$\\(\\(40\\+2\\)\\)" "type:echo \"[\$STATE]\"\n" "expect:\[kept-42\]" "type:exit\n" expect-exit > second.out || { cat second.out daemon.log; false; }
    expect_contains second.out "\"reason\": \"exited\""
    ! tmux -L $(tmux_server $(id -un)) has-session -t =agor 2> /dev/null || fail "the session outlived its last shell"
    stop_daemon
BODY
'

test_case "removing a worktree closes its tmux window; a daemon start closes windows of worktrees gone meanwhile, never one the user made" '
  in_private_tmp <<"BODY"
    start_daemon
    worktree
    open_terminal $wt
    server="$(tmux_server $(id -un))"
    window=$(tmux -L $server list-windows -t =agor -F "#{window_name}" | grep -- "-${wt:0:8}$")
    [ -n "$window" ] || fail "no tmux window for the worktree"
    "$AGOR" worktree remove "$wt" > /dev/null || { cat daemon.log; fail "remove failed"; }
    for i in $(seq 1 100); do tmux -L $server list-windows -t =agor -F "#{window_name}" 2> /dev/null | grep -qx -- "$window" || break; sleep 0.05; done
    ! tmux -L $server list-windows -t =agor -F "#{window_name}" 2> /dev/null | grep -qx -- "$window" || fail "the window of the removed worktree stays"
    # the sweep: a worktree row removed behind the back of the daemon while it was down, and a window the user made
    "$AGOR" worktree add "$(json_get clone.json repo.id)" second --json > wt2.json
    wt2=$(json_get wt2.json worktree.id)
    "$AGOR" worktree add "$(json_get clone.json repo.id)" third --json > wt3.json
    wt3=$(json_get wt3.json worktree.id)
    open_terminal $wt2
    open_terminal $wt3
    tmux -L $server new-window -d -t =agor: -n mine
    stop_daemon
    python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(\"DELETE FROM worktree_owners WHERE worktree_id = ?\", (sys.argv[2],)); c.execute(\"DELETE FROM worktrees WHERE id = ?\", (sys.argv[2],)); c.commit()" "$AGOR_HOME/agor.db" "$wt2"
    start_daemon
    for i in $(seq 1 100); do tmux -L $server list-windows -t =agor -F "#{window_name}" | grep -q -- "-${wt2:0:8}$" || break; sleep 0.05; done
    tmux -L $server list-windows -t =agor -F "#{window_name}" > windows
    ! grep -q -- "-${wt2:0:8}$" windows || { cat windows daemon.log; fail "the sweep left the window of a worktree that is gone"; }
    grep -q -- "-${wt3:0:8}$" windows || { cat windows; fail "the sweep closed a live worktree window"; }
    grep -qx mine windows || { cat windows; fail "the sweep closed the user window"; }
    stop_daemon
BODY
'

test_case "attack: the pane shell is sandboxed to its worktree (no AGOR_HOME, no tmux server, no writes outside)" '
  in_private_tmp <<"BODY"
    start_daemon
    worktree
    term $wt "expect:@agor-sandbox:" "type:hostname; cat $AGOR_HOME/jwt.secret || echo no-secret\n" "expect:agor-sandbox\r\n" "expect:no-secret" \
      "type:tmux -L $(tmux_server $(id -un)) new-window true || echo no-tmux\n" "expect:\r\nno-tmux" \
      "type:touch $T/escape || echo no-escape; touch made-here && echo ma\"\"de-ok\n" "expect:\r\nno-escape\r\n" "expect:made-ok" \
      > out || { cat out daemon.log; false; }
    [ ! -e "$T/escape" ] || fail "the shell wrote outside its worktree"
    "$AGOR" worktree get $wt --json > wtget.json
    [ -e "$(json_get wtget.json path)/made-here" ] || fail "the shell could not write its worktree"
    [ "$(tmux -L $(tmux_server $(id -un)) list-windows -a | wc -l)" = 1 ] || fail "the sandboxed shell reached the tmux server"
    stop_daemon
BODY
'

test_case "network proxy: what the pane refuses is an audit row and an event of its user; a forged ticket is refused" '
  in_private_tmp <<"BODY"
    python3 "$TEST_TOP/test/helpers/egress-target.py" outside-port outside.log > /dev/null 2>&1 &
    target_pid=$!
    scene_cleanup() { kill $target_pid 2> /dev/null || true; }
    for i in $(seq 1 200); do [ -s outside-port ] && break; sleep 0.05; done
    OUTSIDE=$(cat outside-port)
    mkdir -p "$AGOR_HOME" && chmod 700 "$AGOR_HOME"
    printf "execution:\n  sandbox:\n    network: proxy\n" > "$AGOR_HOME/config.yaml"
    start_daemon
    worktree
    python3 "$TEST_TOP/test/helpers/events.py" "$AGOR_HOME/run/agor.sock" subscribed 30 terminal.egress_refused > events.out &
    sub_pid=$!
    for i in $(seq 1 100); do [ -e subscribed ] && break; sleep 0.05; done
    term $wt "expect:@agor-sandbox:" "type:curl -sS -m 5 -o /dev/null -w \"code%{http_code}\\\\n\" http://127.0.0.1:$OUTSIDE/\n" "expect:code403" \
      "type:cat /proc/[0-9]*/cmdline | tr \"\\\\0\" \" \" | grep -c -- --tic\"\"ket || echo no-ticket-here\n" "expect:no-ticket-here" \
      > out || { cat out daemon.log; false; }
    wait $sub_pid
    grep -q "terminal.egress_refused" events.out || { cat events.out daemon.log; fail "no terminal.egress_refused event"; }
    grep "terminal.egress_refused" events.out | grep -q "\"port\": *$OUTSIDE" || fail "the event does not name the port"
    grep "terminal.egress_refused" events.out | grep -q "\"worktree_id\": *\"$wt\"" || fail "the event does not name the worktree"
    rpc audit.list > audit.json
    python3 "$TEST_TOP/test/helpers/audit-egress.py" audit.json "$wt" \
      "{\"host\":\"127.0.0.1\",\"port\":$OUTSIDE,\"reason\":\"not-allowed\",\"count\":1,\"terminal\":true}"
    [ ! -s outside.log ] || fail "the listener outside was reached"
    # the ticket, read from the pane start command as only its tmux server user can; altered, it is refused
    tmux -L $(tmux_server $(id -un)) list-panes -a -F "#{pane_start_command}" > start.txt
    ticket=$(grep -o -- "--ticket [^ ]*" start.txt | head -1 | cut -d" " -f2 | tr -cd "0-9a-zA-Z.-")
    [ -n "$ticket" ] || { cat start.txt; fail "no ticket in the pane command"; }
    refused="[{\"host\":\"evil.example\",\"port\":1,\"reason\":\"not-allowed\",\"count\":1}]"
    rpc terminal.report_egress "{\"ticket\":\"$ticket\",\"refused\":$refused}" > ok.json
    expect_contains ok.json "\"result\""
    wt2=$(printf %s "$ticket" | cut -d. -f1 | tr 0-9a-f 1-9a-f0)
    for forged in "${ticket%?}0" "${ticket%?}1" "$wt2.${ticket#*.}" "$(printf %s "$ticket" | cut -d. -f1).admin.$(printf %s "$ticket" | cut -d. -f3)" "nodots" ""; do
      [ "$forged" != "$ticket" ] || continue
      rpc terminal.report_egress "{\"ticket\":\"$forged\",\"refused\":$refused}" > forged.json
      grep -q "AUTH_FAILED\|INVALID_PAYLOAD" forged.json || { cat forged.json; fail "a forged ticket was taken: $forged"; }
    done
    rpc audit.list > audit2.json
    [ "$(grep -o evil.example audit2.json | wc -l)" = 1 ] || fail "a forged report reached the audit"
    stop_daemon
BODY
'

test_case "SCM_RIGHTS: the daemon holds the executor tmux client socket, and neither tmux nor the shell is its child" '
  in_private_tmp <<"BODY"
    start_daemon
    worktree
    term $wt "expect:@agor-sandbox:" "type:echo round\$((1+1))trip\n" "expect:round2trip\r\n" > out || { cat out daemon.log; false; }
    head -1 out > open.json
    cpid=$(json_get open.json open.result.tmux.controlPid)
    [ -d /proc/$cpid ] || fail "no tmux control client $cpid"
    client_sock=$(readlink /proc/$cpid/fd/0 | sed -n "s/socket:\[\([0-9]*\)\]/\1/p")
    [ -n "$client_sock" ] || fail "the control client stdin is not a socket"
    ss -xpn > ss.out
    # the line of the daemon end: its peer is the client socket
    awk -v peer="$client_sock" "\$8 == peer" ss.out | grep -q "pid=$daemon_pid," || { cat ss.out; fail "the daemon holds no peer of socket $client_sock"; }
    shell=$(tmux -L $(tmux_server $(id -un)) display-message -p -t "=agor:" "#{pane_pid}")
    server=$(tmux -L $(tmux_server $(id -un)) display-message -p "#{pid}")
    for p in $cpid $shell $server; do
      ancestors $p > anc.$p
      ! grep -qx "$daemon_pid" anc.$p || fail "process $p descends from the daemon"
    done
    stop_daemon
BODY
'

test_case "attack: a pane that prints without pause — closing its terminal and stopping the daemon leave no tmux client stuck, the server stops" '
  in_private_tmp <<"BODY"
    start_daemon
    worktree
    server=$(tmux_server $(id -un))
    # output always queued in tmux: a control client whose socket is closed under it would never finish detaching,
    # and its server would answer kill-server by dropping the connection, forever (the EXIT trap checks it stops)
    term $wt "expect:@agor-sandbox:" "type:while :; do echo flood-flood-flood-flood-flood-flood-flood-flood; done\n" \
      "expect:flood-flood" "sleep:0.3" close > out || { cat out daemon.log; false; }
    for i in $(seq 1 100); do pgrep -f "^tmux -L $server -C attach" > /dev/null || break; sleep 0.05; done
    ! pgrep -af "^tmux -L $server -C attach" || fail "the control client of the closed terminal stays in its server"
    term $wt "expect:flood-flood" "sleep:0.3" > out2 || { cat out2 daemon.log; false; }   # left open: the stop ends it
    stop_daemon
    for i in $(seq 1 100); do pgrep -f "^tmux -L $server -C attach" > /dev/null || break; sleep 0.05; done
    ! pgrep -af "^tmux -L $server -C attach" || fail "a control client stays in its server after the daemon stopped"
BODY
'

test_case "a stop while tmux.attach runs: its tmux command ends with the executor, no server starts after the daemon stopped" '
  in_private_tmp <<"BODY"
    mount -t tmpfs tmpfs /usr/local/bin   # first on the PATH tmux runs with: a tmux whose new-session is slow
    cat > /usr/local/bin/tmux <<SLOW
#!/bin/sh
case " \$* " in *" new-session "*) touch "$T/new-session-started"; sleep 3 ;; esac
exec /usr/bin/tmux "\$@"
SLOW
    chmod 755 /usr/local/bin/tmux
    start_daemon
    worktree
    term $wt "type:true\n" > out 2>&1 &
    for i in $(seq 1 200); do [ -e new-session-started ] && break; sleep 0.05; done
    [ -e new-session-started ] || { cat out daemon.log; fail "tmux new-session never ran"; }
    stop_daemon
    wait $! || true   # the client: its terminal never opened
    sleep 4           # past the slow new-session, had it been left running
    [ -z "$(tmux_socket_pids "$(tmux_socket_of "$(tmux_server $(id -un))")")" ] ||
      fail "a tmux server started after the daemon had stopped"
BODY
'

test_case "agor terminal: raw-mode TTY through the daemon, SIGWINCH resizes, the detach key detaches and the shell stays" '
  in_private_tmp <<"BODY"
    start_daemon
    worktree
    drive() { python3 "$TEST_TOP/test/helpers/pty-drive.py" "$@"; }
    # keys typed before the sandboxed shell has its terminal could be flushed: wait for its prompt first
    drive 90x20 "expect:@agor-sandbox" "type:echo cli\$((2+3))ok\n" "expect:cli5ok\r\n" "type:tput cols\n" "expect:90\r\n" \
      winsize:132x40 "expect:.*" "type:sleep 0.3; tput cols\n" "expect:132\r\n" "type:KEEP=me\n" \
      "expect:KEEP=me\r\n.*@agor-sandbox" "type:\x1d" wait-exit -- "$AGOR" terminal feature > cli.out || { cat cli.out daemon.log; false; }
    expect_contains cli.out "exit 0"
    expect_contains cli.out "[agor terminal: detached]"
    drive 80x24 "type:echo \"<\$KEEP>\"\n" "expect:<me>" "type:exit\n" wait-exit -- "$AGOR" terminal feature > cli2.out || { cat cli2.out daemon.log; false; }
    expect_contains cli2.out "exit 0"
    expect_contains cli2.out "[agor terminal: exited]"
    expect_exit 2 "$AGOR" terminal
    expect_exit 2 "$AGOR" terminal feature --detach-key X
    expect_exit 1 "$AGOR" terminal no-such-worktree < /dev/null
    expect_contains err NOT_FOUND
    stop_daemon
BODY
'

test_case "zellij terminals: a PTY master handed over (fake zellij on PATH): argv, environment, echo, resize, exit" '
  in_private_tmp <<"BODY"
    mount -t tmpfs tmpfs /usr/local/bin
    printf "#!/bin/sh\necho \"\$*\" >> /tmp/zellij.argv\nenv > /tmp/zellij.env\n[ \"\$1\" = --config ] && exec bash --norc -i\nexit 0\n" > /usr/local/bin/zellij
    chmod 755 /usr/local/bin/zellij
    AGOR_TEST_SECRET=daemon-only start_daemon
    worktree
    TERM_MULTIPLEXER=zellij term $wt "type:echo z\$((3*3))z\n" "expect:z9z\r\n" "type:tput cols\n" "expect:80\r\n" \
      resize:99x30 "type:tput cols\n" "expect:99\r\n" "type:exit\n" expect-exit > z.out || { cat z.out daemon.log; false; }
    head -1 z.out > open.json
    expect_json open.json open.result.tmux.multiplexer zellij
    expect_contains /tmp/zellij.argv "--config $AGOR_HOME/zellij/config.kdl attach agor --create"
    expect_contains /tmp/zellij.argv "--session agor action go-to-tab-name --create feature-"
    expect_not_contains /tmp/zellij.env AGOR_
    expect_contains /tmp/zellij.env "TERM=xterm-256color"
    expect_contains "$AGOR_HOME/zellij/config.kdl" "session_serialization true"
    expect_contains z.out "\"reason\": \"exited\""
    stop_daemon
BODY
'

test_case --needs zellij "zellij terminals with the real zellij: echo through zellij attach --create" '
  in_private_tmp <<"BODY"
    start_daemon
    worktree
    TERM_MULTIPLEXER=zellij term $wt "sleep:2" "type:echo real\$((2*4))zellij\n" "expect:real8zellij" > z.out || { cat z.out daemon.log; false; }
    stop_daemon
BODY
'

# Insulated mode for real (users in a scratch /etc): the daemon runs as agord, terminals as alice through sudo.
ISO_SCENE="TEST_TOP='$TEST_TOP'
$TMUX_SERVER
$PRIVATE_TMP"'
  groupadd -f agor_users
  useradd -m -s /bin/bash -G agor_users agord
  useradd -m -s /bin/bash -G agor_users alice
  mkdir -p bin && cp "$AGOR" bin/agor && cp "$TEST_TOP/test/helpers/term-client.py" bin/ && chmod 755 bin bin/*
  BIN="$T/bin/agor"
  chmod 755 "$T" && d="$T"; while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  printf "agord ALL=(alice) NOPASSWD: %s executor --stdin\nDefaults!%s env_keep += \"AGOR_IMPERSONATED\"\n" "$BIN" "$BIN" > /etc/sudoers.d/agor-test
  chmod 440 /etc/sudoers.d/agor-test && visudo -cf /etc/sudoers.d/agor-test > /dev/null
  mkdir -p data /run/agor && chown alice:agor_users data && chmod 2770 data
  chown agord:agor_users /run/agor && chmod 750 /run/agor
  "$BIN" admin cgroup-delegate alice > /dev/null   # the sandboxed shells of alice make their cgroups there
  make_source_repo src && chmod -R a+rX src
  as_agord() { setpriv --reuid=agord --regid=agord --init-groups env -i HOME=/home/agord AGOR_HOME=/home/agord/.agor PATH=/usr/bin:/bin AGOR_SECRET_ENV=daemon-only "$@"; }
  as_agord mkdir -m 700 /home/agord/.agor
  printf "daemon:\n  socket_path: /run/agor/agor.sock\npaths:\n  data_home: %s\nexecution:\n  unix_user_mode: insulated\n  executor_unix_user: alice\n" "$T/data" > config.yaml
  chmod 644 config.yaml && as_agord cp config.yaml /home/agord/.agor/config.yaml
  scene_cleanup() { # the tmux server of alice (the case fails when it does not stop), then the cgroups of her shells
    local rc=0
    tmux_stop "/tmp/tmux-$(id -u alice)/$(tmux_server alice "$T/data")" || rc=1
    rmdir /sys/fs/cgroup/*/agor/alice /sys/fs/cgroup/agor/alice 2> /dev/null || true
    [ $rc = 0 ] || exit 1
  }
  DAEMON_AS="setpriv --reuid=agord --regid=agord --init-groups env -i HOME=/home/agord AGOR_HOME=/home/agord/.agor"
  DAEMON_AS="$DAEMON_AS PATH=/usr/bin:/bin AGOR_SECRET_ENV=daemon-only" DAEMON_BIN=$BIN
  start_daemon
'

test_case "insulated mode: the shell runs as the execution user with its own environment, not the daemon's" '
  in_scratch_system "$ISO_SCENE"'"'"'
  as_agord "$BIN" repo clone "$T/src" --json > clone.json 2> clone.err || { cat clone.err daemon.log; false; }
  as_agord "$BIN" worktree add "$(json_get clone.json repo.id)" feature --json > wt.json
  wt=$(json_get wt.json worktree.id)
  as_agord python3 bin/term-client.py /run/agor/agor.sock $wt "expect:@agor-sandbox:" "type:id -un; echo \"[\$HOME][\$AGOR_SECRET_ENV]\"\n" \
    "expect:\ralice\r\n\[/home/alice\]\[\]\r\n" "type:cat /home/agord/.agor/jwt.secret > /dev/null || echo no-secret-here\n" \
    "expect:\r\nno-secret-here\r\n" > out || { cat out daemon.log; false; }
  head -1 out > open.json
  expect_json open.json open.result.tmux.server "$(tmux_server alice "$T/data")"
  [ "$(stat -c %U /tmp/tmux-$(id -u alice)/$(tmux_server alice "$T/data"))" = alice ] || fail "the tmux socket is not alice"
  for p in $(pgrep -f "^tmux -L $(tmux_server alice "$T/data")"); do [ "$(stat -c %U /proc/$p)" = alice ] || fail "tmux process $p is not alice"; done
'"'"'
'

test_case "insulated mode: the execution user's own config cannot unsandbox the pane (the daemon's policy wins)" '
  in_scratch_system "$ISO_SCENE"'"'"'
  setpriv --reuid=alice --regid=alice --init-groups sh -c "umask 077; mkdir -p /home/alice/.agor && printf \"execution:\\n  sandbox:\\n    enabled: false\\n\" > /home/alice/.agor/config.yaml"
  as_agord "$BIN" repo clone "$T/src" --json > clone.json 2> clone.err || { cat clone.err daemon.log; false; }
  as_agord "$BIN" worktree add "$(json_get clone.json repo.id)" feature --json > wt.json
  as_agord python3 bin/term-client.py /run/agor/agor.sock "$(json_get wt.json worktree.id)" "expect:@agor-sandbox:" \
    "type:id -un; hostname\n" "expect:\ralice\r\nagor-sandbox\r\n" > out || { cat out daemon.log; false; }
  pgrep -u alice -af "executor sandbox-shell" > panes
  expect_contains panes " --policy {"   # the pane gets the policy, never deciding from the config of alice alone
  expect_contains panes "\"execution.sandbox.enabled\":\"true\""
'"'"'
'

test_case "insulated mode: an execution user with a nologin shell (as agor setup isolation makes it) gets bash; the daemon setting execution.terminal_shell wins" '
  in_scratch_system "$ISO_SCENE"'"'"'
  usermod -s /usr/sbin/nologin alice
  as_agord "$BIN" repo clone "$T/src" --json > clone.json 2> clone.err || { cat clone.err daemon.log; false; }
  repo=$(json_get clone.json repo.id)
  as_agord "$BIN" worktree add "$repo" feature --json > wt.json
  as_agord python3 bin/term-client.py /run/agor/agor.sock "$(json_get wt.json worktree.id)" "expect:@agor-sandbox:" \
    "type:echo \"<\$SHELL>\"\n" "expect:<\/bin\/bash>" > out || { cat out daemon.log; false; }
  stop_daemon
  printf "  terminal_shell: /bin/sh\n" >> config.yaml && as_agord cp config.yaml /home/agord/.agor/config.yaml
  DAEMON_AS="setpriv --reuid=agord --regid=agord --init-groups env -i HOME=/home/agord AGOR_HOME=/home/agord/.agor PATH=/usr/bin:/bin"
  start_daemon
  as_agord "$BIN" worktree add "$repo" second --json > wt2.json
  as_agord python3 bin/term-client.py /run/agor/agor.sock "$(json_get wt2.json worktree.id)" "expect:[$]" \
    "type:echo \"<\$SHELL>\"\n" "expect:<\/bin\/sh>" > out2 || { cat out2 daemon.log; false; }
'"'"'
'

file_needs node-ws "terminals over WebSocket (binary frames, two clients, another user's attacks)"

test_case "WebSocket /terminal: binary frames, two clients see the same output, bad sizes refused" '
  in_private_tmp <<"BODY"
    start_daemon
    worktree
    open_terminal $wt
    node "$TEST_TOP/test/helpers/term-ws.mjs" relay $port "$(json_get open.json open.result.terminal_id)" \
      "$(json_get open.json open.result.token)" > ws.out || { cat ws.out daemon.log; false; }
    expect_json ws.out a ok
    expect_json ws.out b ok
    expect_json ws.out both_saw_output true
    expect_json ws.out resize INVALID_PAYLOAD
    stop_daemon
BODY
'

test_case "access: another user cannot open, attach, list or close a terminal; tokens are per terminal; forged hand-over" '
  in_private_tmp <<"BODY"
    make_source_repo src2
    start_daemon
    worktree
    "$AGOR" worktree add "$(json_get clone.json repo.id)" second --json > wt2.json
    wt2=$(json_get wt2.json worktree.id)
    term $wt "type:true\n" > one.out || { cat one.out daemon.log; false; }
    term $wt2 "type:true\n" > two.out || { cat two.out daemon.log; false; }
    head -1 one.out > one.json; head -1 two.out > two.json
    [ "$(json_get one.json open.result.tmux.window)" != "$(json_get two.json open.result.tmux.window)" ] || fail "one window for two worktrees"
    "$AGOR" user create bob --json > bob.json
    BOB_TOKEN=$("$AGOR" user token --for bob 2> /dev/null)
    node "$TEST_TOP/test/helpers/term-ws.mjs" attacks $port "$BOB_TOKEN" $wt "$(json_get one.json open.result.terminal_id)" \
      "$(json_get one.json open.result.token)" "$(json_get two.json open.result.token)" > attacks.out || { cat attacks.out daemon.log; false; }
    cat attacks.out
    expect_json attacks.out bob_auth ok
    expect_json attacks.out bob_open_alices_worktree NOT_FOUND   # others_can none: as an unknown id, existence does not leak
    expect_json attacks.out bob_attach_with_alices_token PERMISSION_DENIED
    expect_json attacks.out bob_list "[]"
    expect_json attacks.out bob_close NOT_FOUND
    expect_json attacks.out other_terminals_token AUTH_FAILED
    expect_json attacks.out garbage_token AUTH_FAILED
    expect_json attacks.out no_such_terminal AUTH_FAILED
    expect_json attacks.out input_unattached INVALID_PAYLOAD
    expect_json attacks.out handover_forged AUTH_FAILED
    expect_json attacks.out binary_unattached "[\"terminal.error\"]"
    ! grep -q pwned "$(tmux -L $(tmux_server $(id -un)) capture-pane -p -t "=agor:" > pane.txt; echo pane.txt)" || fail "unattached input reached a shell"
    "$AGOR" audit verify > /dev/null
    stop_daemon
BODY
'

test_done
