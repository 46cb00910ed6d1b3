#!/usr/bin/env bash
# t0039-insulated-host — an insulated host made with nothing but agor's own commands, as docs/modes.md's insulated host
# says, from a scratch /etc: `agor setup isolation`, `agor setup validate`, the unit's `agor admin cgroup-delegate`,
# the daemon as its user, `agor user create|token`; then clone, worktree, exec, sharing and a terminal all work,
# every run as the executor user setup made (shell nologin), files where executors reach them.
. "$(dirname "$0")/../sandbox.sh"
sandbox_enter "$@"
. "$(dirname "$0")/../lib.sh"

sandbox_needs "an insulated host from agor setup alone" sudo
sandbox_setup
if ! command -v tmux > /dev/null; then
  test_skip "an insulated host from agor setup alone" "needs tmux"
  test_done; exit
fi
sandbox_forget_accounts agor agor_executor agor_users alice bob

BIN=/usr/local/bin/agor
STATE="$TEST_TMP_ROOT/t0039-state"   # what one case leaves the next: the daemon pid, its port, tokens, ids
. "$TEST_TOP/test/host.sh"

operator_steps() {
  mkdir -p "$STATE"
  install -m 0755 "$AGOR" "$BIN"
  useradd --system --create-home --home-dir /home/agor --shell /bin/bash agor
  useradd --create-home --shell /bin/bash alice
  useradd --create-home --shell /bin/bash bob
  expect_exit 0 "$BIN" setup isolation --mode insulated
  expect_exit 0 "$BIN" setup validate
  expect_not_contains out FAIL
  expect_exit 0 "$BIN" admin cgroup-delegate agor_executor   # what the systemd unit runs before the daemon
  host_daemon_start
  host_people alice bob
}
test_case "operator: setup isolation and validate, the unit's cgroup step, the daemon as agor, users and tokens" operator_steps

user_steps() {
  as_tcp alice repo clone /srv/src --json > clone.json 2> err || { cat err "$STATE/daemon.log"; fail "alice cannot clone"; }
  as_tcp alice worktree add "$(json_get clone.json repo.id)" feature --json > wt.json 2> err || { cat err; fail "no worktree"; }
  json_get wt.json worktree.id > "$STATE/wt"
  path=$(json_get wt.json worktree.path)
  case "$path" in /srv/agor/worktrees/*) ;; *) fail "the worktree is at $path, not under the data home setup made";; esac
  exec_tcp alice "$(cat "$STATE/wt")" sh -c "id -un; echo from-alice > by-alice.txt" > run.out 2> err || { cat run.out err; fail "exec failed"; }
  grep -qx agor_executor run.out || { cat run.out; fail "the command did not run as the executor user setup made"; }
  [ "$(stat -c %U "$path/by-alice.txt")" = agor_executor ] || fail "the file of the run is not agor_executor"
  as_tcp alice worktree add-owner "$(cat "$STATE/wt")" bob --json > /dev/null 2> err || { cat err; fail "no sharing"; }
  exec_tcp bob "$(cat "$STATE/wt")" cat by-alice.txt > bob.out 2> err || { cat bob.out err; fail "bob, an owner, cannot run there"; }
  grep -qx from-alice bob.out || fail "bob does not see the file of alice"
}
test_case "users over TCP with their tokens: clone, worktree, exec as agor_executor, sharing with bob" user_steps

terminal_steps() {
  cp "$TEST_TOP/test/helpers/term-client.py" /srv/term-client.py && chmod 644 /srv/term-client.py
  as_agor python3 /srv/term-client.py /run/agor/agor.sock "$(cat "$STATE/wt")" "expect:@agor-sandbox:" "type:id -un\n" \
    "expect:\ragor_executor\r\n" > term.out || { cat term.out "$STATE/daemon.log"; fail "no working terminal for a nologin executor"; }
}
test_case "a terminal in the worktree: the nologin executor user setup made gets a working shell" terminal_steps

stop_steps() {
  host_daemon_stop
  tmux_stop_as agor_executor "agor-agor_executor-$(printf %s /srv/agor | sha256sum | cut -c1-8)" ||
    fail "the tmux server of agor_executor's terminal did not stop on kill-server, or came back"
}
test_case "the daemon stops cleanly" stop_steps

test_done
