#!/usr/bin/env bash
# t0053-executor-races — no check-then-use in the executor (docs/security.md §11): while the real `agor executor`
# clones, adds a worktree or removes one (forced and not), build/race-swap exchanges a parent of the payload path
# with a symlink to a directory outside the data home, thousands of times. Nothing outside may change: the outside
# tree's listing (names, types, sizes, modes, inodes, times) is compared after every try. Each case prints its
# tries, swaps and outcomes.
# AGOR_RACE_TRIES (default 60) sets the tries per case, AGOR_RACE_PAUSE_US (default 50) the racer's pause between
# swaps and AGOR_RACE_QUIET_US (default 1000) one pause in 16: a state held for a moment lets the confined
# resolution succeed, and now and then a whole operation, so the race is fought at every step of the use.
. "$(dirname "$0")/../lib.sh"

RACER="$TEST_TOP/build/race-swap"
TRIES=${AGOR_RACE_TRIES:-60}
PAUSE_US=${AGOR_RACE_PAUSE_US:-50}
QUIET_US=${AGOR_RACE_QUIET_US:-1000}
SUMMARY="$TEST_TMP_ROOT/summary"
: > "$SUMMARY"

# The racer is tiny and has no dependency: build it when `make` has not (e.g. a direct run of this file).
if [ ! -x "$RACER" ] && command -v gcc > /dev/null; then
  RACER="$TEST_TMP_ROOT/race-swap"
  gcc -O2 -o "$RACER" "$TEST_TOP/test/helpers/race_swap.c" || RACER=""
fi

# make_outside — $OUT: the directories the symlinks lead to, each holding a canary (and, under w/, the names the
# worktree cases use, so a removal that follows a link has something to delete).
make_outside() {
  rm -rf "$OUT"
  mkdir -p "$OUT/c" "$OUT/w"
  echo canary > "$OUT/c/canary.txt"
  echo canary > "$OUT/w/canary.txt"
  # a repository outside that libgit2 would gladly open and add a worktree to, had it followed the swap
  [ -z "${OUT_REPO_SRC:-}" ] || git clone -q --bare "$OUT_REPO_SRC" "$OUT/rp/r.git"
  local i
  for i in $(seq 1 $((2 * TRIES))); do
    mkdir -p "$OUT/w/a$i" "$OUT/w/d$i" "$OUT/w/n$i"
    echo "keep a$i" > "$OUT/w/a$i/canary.txt"
    echo "keep d$i" > "$OUT/w/d$i/canary.txt"
    echo "keep n$i" > "$OUT/w/n$i/canary.txt"
  done
}

# What could change outside: every name, its type, size, mode, inode and modification time (a write changes the
# time, a replacement the inode), in one pass.
outside_state() {
  (cd "$OUT" && find . -printf '%p %y %s %m %i %T@\n' | LC_ALL=C sort)
}

# race_dir ROOT SUB — ROOT/SUB a real directory inside the data home, ROOT/SUB.swap a symlink to $OUT/SUB.
race_dir() {
  mkdir -p "$1/$2"
  ln -s "$OUT/$2" "$1/$2.swap"
}

start_racer() { # DIR
  rm -f "$T/ready"
  "$RACER" "$1" "$1.swap" "$T" "$PAUSE_US" "$QUIET_US" > racer.out 2> racer.err &
  racer=$!
  while [ ! -e "$T/ready" ]; do sleep 0.001; done
}

pause_racer() {
  kill -USR1 "$racer"
  local n=0
  while [ ! -e "$T/paused" ]; do
    n=$((n + 1)); [ $n -lt 5000 ] || fail "the racer did not pause"
    sleep 0.001
  done
}

resume_racer() {
  kill -USR2 "$racer"
  while [ -e "$T/paused" ]; do sleep 0.001; done
}

stop_racer() {
  kill -TERM "$racer"
  wait "$racer" || { cat racer.err; fail "the racer failed"; }
  swaps=$(awk '$1 == "swaps" { print $2 }' racer.out)
}

# tally CASE — after one try: counts its outcome (ok or the error code) and whether the outside changed (then
# rebuilt, so every try starts the same).
tally() {
  local outcome
  if [ "$rc" -eq 0 ]; then outcome=ok; else outcome=$(json_get out error.code 2>/dev/null || echo "exit$rc"); fi
  echo "$outcome" >> outcomes
  [ "$rc" -eq 0 ] || json_get out error.message 2>/dev/null | cut -c1-100 >> messages || true
  if [ "$(outside_state)" != "$(cat outside.before)" ]; then
    echo "try $1: outside changed after $outcome" >> breaches
    diff <(cat outside.before) <(outside_state) | head -n 5 >> breaches || true
    make_outside
  fi
}

# report CASE [REGEX] — one summary line (kept for the file's output) and the assertions every case shares: nothing
# outside changed, and some try reached the operation: it succeeded, or it failed with a message matching REGEX
# (an extended regular expression naming what only the operation itself answers).
report() {
  local ok breached refused reached name=$1 regex=${2:-}
  ok=$(grep -cx ok outcomes || true)
  reached=$ok
  [ -z "$regex" ] || reached=$((ok + $(grep -cE "$regex" messages || true)))
  breached=$(grep -c '^try' breaches 2>/dev/null || true)
  refused=$(grep -vx ok outcomes | sort | uniq -c | awk '{ printf "%s%s=%s", sep, $2, $1; sep="," }')
  echo "# $name: $(wc -l < outcomes) tries, $swaps swaps, ok $ok, refused {${refused}}, outside changed in ${breached:-0}" | tee -a "$SUMMARY"
  echo "$swaps" >> "$TEST_TMP_ROOT/swaps"
  [ ! -s messages ] || sort messages | uniq -c | sort -rn | head -n 8   # in the case log: why tries were refused
  [ -z "$breached" ] || [ "$breached" -eq 0 ] || { head -n 40 breaches; fail "$name: the executor changed files outside the data home"; }
  [ "$reached" -gt 0 ] || fail "$name: no try reached the operation (all refused while resolving)"
}

setup_case() {
  OUT="$T/outside"
  make_outside
  outside_state > outside.before
  : > outcomes; : > messages
  REPOS="$AGOR_HOME/repos" WTS="$AGOR_HOME/worktrees"
}

if [ -z "$RACER" ]; then
  test_skip "executor races" "no gcc to build test/helpers/race_swap.c (make build/race-swap)"
  test_done; exit
fi

test_case "git.clone: a parent of outputPath swapped for a symlink leads nowhere outside" '
  setup_case
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"first.git\"}}"
  expect_success
  race_dir "$REPOS/race" c
  start_racer "$REPOS/race/c"
  for i in $(seq 1 "$TRIES"); do
    executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"race/c/r$i.git\"}}"
    tally "$i"
  done
  stop_racer
  report "git.clone"
'

# clone_race_repo — a repository to add worktrees from (not raced) and worktrees/race/w raced.
clone_race_repo() {
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"race/r.git\"}}"
  expect_success
  race_dir "$WTS/race" w
}

test_case "git.worktree.add: a parent of worktreePath swapped for a symlink leads nowhere outside" '
  setup_case
  clone_race_repo
  start_racer "$WTS/race/w"
  for i in $(seq 1 "$TRIES"); do
    executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"race/r.git\",\"worktreeName\":\"a$i\",\"worktreePath\":\"race/w/a$i\"}}"
    tally "$i"
  done
  stop_racer
  report "git.worktree.add"
'

test_case "git.worktree.add: a parent of repoPath swapped for a symlink to a repository outside writes nothing there" '
  make_source_repo src
  OUT_REPO_SRC="$PWD/src"
  setup_case
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"race/rp/r.git\"}}"
  expect_success
  ln -s "$OUT/rp" "$REPOS/race/rp.swap"
  start_racer "$REPOS/race/rp"
  for i in $(seq 1 "$TRIES"); do
    executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"race/rp/r.git\",\"worktreeName\":\"p$i\",\"worktreePath\":\"race/pw/p$i\",\"branch\":\"b$i\",\"createBranch\":true}}"
    tally "$i"
  done
  stop_racer
  report "git.worktree.add (repoPath raced)" "libgit2 opened .* as |checkout: |cannot resolve"  # libgit2 read elsewhere
'

# remove_race PREFIX FORCE — per try: the racer paused, a worktree added; then raced while it is removed. Twice
# the tries: the window between the checks and the removal is the narrowest.
remove_race() {
  local prefix=$1 force=$2 i
  setup_case
  clone_race_repo
  start_racer "$WTS/race/w"
  for i in $(seq 1 $((2 * TRIES))); do
    pause_racer
    executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"race/r.git\",\"worktreeName\":\"$prefix$i\",\"worktreePath\":\"race/w/$prefix$i\"}}"
    expect_success
    [ "$force" = false ] || { mkdir -p "$WTS/race/w/$prefix$i/sub/deeper" && echo x > "$WTS/race/w/$prefix$i/sub/deeper/f"; }
    resume_racer
    executor "{\"command\":\"git.worktree.remove\",\"params\":{\"worktreePath\":\"race/w/$prefix$i\",\"force\":$force}}"
    tally "$i"
  done
  stop_racer
}

test_case "git.worktree.remove (forced): a parent swapped for a symlink deletes nothing outside" '
  remove_race d true
  report "git.worktree.remove force"
'

test_case "git.worktree.remove (not forced): a parent swapped for a symlink deletes nothing outside" '
  remove_race n false
  report "git.worktree.remove" "no git repository at|uncommitted change"  # libgit2 read the status through the swap
'

cat "$SUMMARY"
total=$(awk '{ s += $1 } END { print s + 0 }' "$TEST_TMP_ROOT/swaps" 2>/dev/null || echo 0)
echo "# total swaps: $total"
test_case "the racer swapped at least 5,000 times in all ($total)" '
  [ "$total" -ge 5000 ] || fail "only $total swaps: raise AGOR_RACE_TRIES"
'

test_done
