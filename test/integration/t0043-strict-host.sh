#!/usr/bin/env bash
# t0043-strict-host — a strict host made with nothing but agor's own commands, as docs/modes.md's strict host says,
# from a scratch /etc: `agor setup isolation --mode strict`, `agor setup validate`, `agor admin setup-unix-user` per
# person, the daemon as its user, `agor user create|token`; then each person's commands run as their own login, a
# worktree has its Unix group and its owners their links, and someone who is no owner sees nothing of it.
. "$(dirname "$0")/../sandbox.sh"
sandbox_enter "$@"
. "$(dirname "$0")/../lib.sh"

sandbox_needs "a strict host from agor setup alone" sudo
sandbox_setup
sandbox_forget_accounts agor agor_executor agor_users alice bob carol

BIN=/usr/local/bin/agor
STATE="$TEST_TMP_ROOT/t0043-state"   # what one case leaves the next: the daemon pid, its port, tokens, ids
. "$TEST_TOP/test/host.sh"

operator_steps() {
  mkdir -p "$STATE"
  install -m 0755 "$AGOR" "$BIN"
  useradd --system --create-home --home-dir /home/agor --shell /bin/bash agor
  expect_exit 0 "$BIN" setup isolation --mode strict
  expect_exit 0 "$BIN" setup validate
  expect_not_contains out FAIL
  for u in alice bob carol; do
    expect_exit 0 "$BIN" admin setup-unix-user $u                     # a login in agor_users
    expect_exit 0 "$BIN" admin cgroup-delegate $u                     # what the systemd unit runs before the daemon
  done
  host_daemon_start
  grep -q "mode strict" "$STATE/daemon.log" || { cat "$STATE/daemon.log"; fail "the daemon is not in strict mode"; }
  host_people alice bob carol
}
test_case "operator: setup isolation --mode strict and validate, one login per person, the daemon as agor" operator_steps

owner_steps() {
  as_tcp alice repo clone /srv/src --json > clone.json 2> err || { cat err "$STATE/daemon.log"; fail "alice cannot clone"; }
  as_tcp alice worktree add "$(json_get clone.json repo.id)" feature --json > wt.json 2> err || { cat err; fail "no worktree"; }
  json_get wt.json worktree.id > "$STATE/wt"
  json_get wt.json worktree.path > "$STATE/wt-path"
  path=$(cat "$STATE/wt-path")
  exec_tcp alice "$(cat "$STATE/wt")" sh -c "id -un; echo from-alice > by-alice.txt" > run.out 2> err || { cat run.out err; fail "exec failed"; }
  grep -qx alice run.out || { cat run.out; fail "alice's command did not run as alice"; }
  [ "$(stat -c %U "$path/by-alice.txt")" = alice ] || fail "alice's file is not hers on disk"
  group=$(stat -c %G "$path")
  case "$group" in agor_wt_*) ;; *) fail "the worktree's group is $group, not its agor_wt_ group";; esac
  [ "$(stat -c %a "$path")" = 2770 ] || fail "the worktree is $(stat -c %a "$path"), not 2770"
  ls -l /home/alice/agor/worktrees/ | grep -q "feature-" || fail "alice, its creator, has no owner link"
}
test_case "alice: clone and worktree; her command runs as alice in the worktree's group; her owner link" owner_steps

sharing_steps() {
  local wt path; wt=$(cat "$STATE/wt") path=$(cat "$STATE/wt-path")
  exec_tcp carol "$wt" true > out 2> err && fail "carol, no owner, ran a command in alice's worktree"
  grep -q "no worktree" err || { cat err; fail "carol was not told the worktree is unknown to her"; }
  setpriv --reuid=carol --regid=carol --init-groups cat "$path/by-alice.txt" 2> /dev/null && fail "carol reads the files"
  as_tcp alice worktree add-owner "$wt" bob --json > /dev/null 2> err || { cat err "$STATE/daemon.log"; fail "no sharing"; }
  id -nG bob | grep -qw "$(stat -c %G "$path")" || fail "bob is not a member of the worktree's group"
  ls /home/bob/agor/worktrees/ | grep -q "feature-" || fail "bob has no owner link"
  exec_tcp bob "$wt" sh -c "id -un; cat by-alice.txt; echo from-bob > by-bob.txt" > bob.out 2> err || { cat bob.out err; fail "bob cannot run there"; }
  grep -qx bob bob.out || fail "bob's command did not run as bob"
  grep -qx from-alice bob.out || fail "bob does not see alice's file"
  [ "$(stat -c %U "$path/by-bob.txt")" = bob ] || fail "bob's file is not his on disk"
  exec_tcp alice "$wt" cat by-bob.txt > out 2> err || { cat err; fail "alice cannot read bob's file"; }
  as_tcp alice worktree remove-owner "$wt" bob --json > /dev/null 2> err || { cat err; fail "remove-owner failed"; }
  ! ls /home/bob/agor/worktrees/ 2> /dev/null | grep -q "feature-" || fail "bob's link stayed"
  ! id -nG bob | grep -qw "$(stat -c %G "$path")" || fail "bob is still a member of the worktree's group"
}
test_case "sharing: carol sees nothing; bob, once an owner, works there as bob; removed, he loses group and link" sharing_steps

removal_steps() {
  local wt path group; wt=$(cat "$STATE/wt") path=$(cat "$STATE/wt-path")
  group=$(stat -c %G "$path")
  as_tcp alice worktree add-owner "$wt" bob --json > /dev/null 2> err || { cat err; fail "no sharing"; }
  as_tcp alice worktree remove "$wt" --force --json > out 2> err || { cat out err "$STATE/daemon.log"; fail "alice cannot remove her worktree"; }
  [ ! -e "$path" ] || fail "the worktree directory stayed"
  ! getent group "$group" > /dev/null || fail "the worktree's group $group stayed"
  ! ls /home/alice/agor/worktrees/ 2> /dev/null | grep -q "feature-" || fail "alice's link stayed"
  ! ls /home/bob/agor/worktrees/ 2> /dev/null | grep -q "feature-" || fail "bob's link stayed"
  as_tcp alice worktree list --json > out 2> err
  ! grep -q "$wt" out || fail "the worktree is still listed"
}
test_case "removal: directory, group, every owner's link and the row go, in that order" removal_steps

stop_steps() {
  host_daemon_stop
}
test_case "the daemon stops cleanly" stop_steps

test_done
