#!/usr/bin/env bash
# t0085-remote-terminal — issue 23: a terminal whose executor runs on another host (test/remote-scene.sh). No
# descriptor crosses hosts: the executor keeps the tmux control client and relays it over its verified WebSocket; the
# daemon serves it to clients like any terminal. Typed into and read back, the same window after a daemon restart, and
# a hostile executor's relay refused. Kills only the pids it started.
. "$(dirname "$0")/../lib.sh"

. "$TEST_TOP/test/agent-cli.sh" # $CLAUDE (the scene's agent settings)
. "$TEST_TOP/test/remote-scene.sh"

TYPED='
  write_config "  executor_daemon_ca_file: $T/ca/ca.crt"; prepare_session
  term() { python3 "$TEST_TOP/test/helpers/term-client.py" /run/agor/agor.sock "$@"; }
  term "$wt" "type:echo remote-\$((6*7))-seen\n" "expect:remote-42-seen" "type:echo MARK-\$((1000+84))-before\n" \
    "expect:MARK-1084-before" > term1.out || { cat term1.out daemon.log; fail "the relayed terminal did not echo"; }
  head -1 term1.out > open1.json
  expect_json open1.json open.result.tmux.relayed true
  window=$(json_get open1.json open.result.tmux.window)
  rpc audit.list > audit.json
  grep -q "\"terminal.handover\"" audit.json || fail "no hand-over in the audit log"
  # the shell is the execution user
  term "$wt" "type:echo \$(id -un)-is-the-user\n" "expect:agor_executor-is-the-user" > term1b.out \
    || { cat term1b.out; fail "the shell is not the execution user"; }
  # the daemon restarts (the relay ends with it): terminal.open finds the same window, the marker still on screen
  restart_daemon
  term "$wt" "expect:MARK-1084-before" "type:echo after-\$((2*3))\n" "expect:after-6" > term2.out \
    || { cat term2.out daemon.log; fail "after a daemon restart the window was not found again"; }
  head -1 term2.out > open2.json
  expect_json open2.json open.result.tmux.window "$window"
  # closing ends the relay, and with it the task (never a task left running)
  term "$wt" "type:true\n" close > term3.out
  for i in $(seq 1 100); do a task list --json > tasks.json; grep -q "\"running\"" tasks.json || break; sleep 0.1; done
  ! grep -q "\"running\"" tasks.json || { cat tasks.json; fail "a relaying executor outlived its terminal"; }
'

HOSTILE='
  write_config "  executor_daemon_ca_file: $T/ca/ca.crt"; prepare_session
  term() { python3 "$TEST_TOP/test/helpers/term-client.py" /run/agor/agor.sock "$@"; }
  # from here every executor is test/helpers/hostile-executor.py on the executor host, attacking the relay
  cat > hostile-executor.sh <<EOS
#!/bin/sh
exec nsenter --net=/proc/$B/ns/net -- python3 $TEST_TOP/test/helpers/hostile-executor.py $T/hostile-mode /tmp/hostile.log
EOS
  chmod 755 hostile-executor.sh
  sed -i "s|executor_command_template: .*|executor_command_template: $T/hostile-executor.sh|" config.yaml
  restart_daemon
  for mode in forged bad-pane unbound twice oversized; do
    echo $mode > hostile-mode
    term "$wt" "expect-exit" > hostile-$mode.out 2>&1 || true
  done
  cat /tmp/hostile.log
  grep -q "^forged: handover .*AUTH_FAILED" /tmp/hostile.log || fail "a forged token was not refused"
  grep -q "^bad-pane: handover .*tmux ids" /tmp/hostile.log || fail "a window that is not a tmux id was not refused"
  grep -q "^unbound: unbound .*terminal.error" /tmp/hostile.log || fail "bytes before a hand-over were not refused"
  [ "$(grep -c "^twice: handover .*\"accepted\": *true" /tmp/hostile.log)" = 1 ] || fail "a task handed over twice"
  [ "$(grep -c "^twice: handover .*AUTH_FAILED" /tmp/hostile.log)" = 2 ] || fail "a second hand-over was not refused"
  grep -q "^oversized: after oversized (closed)" /tmp/hostile.log || fail "an oversized message did not end the relay"
  grep -q "over the relay" daemon.log || fail "the daemon did not say why the relay ended"
  ! grep -q "forged-output-from-nowhere" hostile-*.out || fail "bytes of no terminal reached a client"
  for mode in forged bad-pane; do grep -q "\"error\"" hostile-$mode.out || { cat hostile-$mode.out; fail "$mode: terminal.open did not fail"; }; done
  rpc audit.list > audit.json
  grep -q "terminal.stream" audit.json || fail "the oversized message is not in the audit log"
  for i in $(seq 1 100); do a task list --json > tasks.json; grep -q "\"running\"" tasks.json || break; sleep 0.1; done
  ! grep -q "\"running\"" tasks.json || { cat tasks.json; fail "a hostile executor left a task running"; }
'

if unmet=$(unmet_needs root,ip,nsenter,netns,tmux,mountns); then
  test_skip "terminals of a remote executor" "$unmet"
else
  test_case "remote terminal: typed into and read back through the daemon; a daemon restart finds the same window" 'remote_scratch "$TYPED"'
  test_case "attack: a hostile executor's relay (forged token, bad ids, unbound bytes, twice, oversized) is refused" 'remote_scratch "$HOSTILE"'
fi

test_done
