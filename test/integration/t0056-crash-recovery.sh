#!/usr/bin/env bash
# t0056-crash-recovery — kill -9 of the daemon and of the executor at every step of clone, worktree add and worktree
# remove, and ENOSPC/EIO at their writes, renames and database commits (docs/recovery.md). After each: the database
# passes PRAGMA integrity_check, `agor audit verify` passes, no task is left queued or running, nothing half-made is
# left on disk without a row (or a row without its directory), and the operation retried succeeds.
# The steps come from lib/fault.h's seam, compiled into the ASan build only: in the product build these cases are
# counted skips, and one case checks that the product ignores AGOR_FAULT.
. "$(dirname "$0")/../lib.sh"

# --- the scene ----------------------------------------------------------------------------------------------------

sql() { python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10); r = c.execute(sys.argv[2]).fetchall(); print(\"\" if not r or r[0][0] is None else r[0][0])" "$AGOR_HOME/agor.db" "$1"; }

# snapshot NAME / restore NAME — the data home (AGOR_HOME: database, repos/, worktrees/) saved with the daemon
# stopped, and put back at the same absolute path (rows name absolute paths).
snapshot() { cp -a "$AGOR_HOME" "snap-$1"; }
restore() { rm -rf "$AGOR_HOME" && cp -a "snap-$1" "$AGOR_HOME"; }

# The three operations; each leaves the client's output in op.out and its status in op.rc.
op_clone() { "$AGOR" repo clone "$PWD/src" --json; }
op_add() { "$AGOR" worktree add "$repo" feat --branch feat --create-branch --json; }
op_remove() { "$AGOR" worktree remove "$wt" --json; }

# done_already OP — the operation's effect is there (its rows were committed before the crash).
done_already() {
  case $1 in
    clone) [ "$(sql "SELECT count(*) FROM repos")" = 1 ] ;;
    add) [ "$(sql "SELECT count(*) FROM worktrees WHERE name = 'feat'")" = 1 ] ;;
    remove) [ "$(sql "SELECT count(*) FROM worktrees WHERE id = '$wt'")" = 0 ] ;;
  esac
}

# settle — waits until no task is queued or running (the daemon's start may finish an interrupted removal).
settle() {
  for _ in $(seq 1 200); do
    [ "$(sql "SELECT count(*) FROM tasks WHERE status IN ('queued','running')")" = 0 ] && return 0
    sleep 0.05
  done
  sql "SELECT group_concat(id || ' ' || command || ' ' || status) FROM tasks WHERE status IN ('queued','running')"
  fail "a task stayed queued or running"
}

# consistent WHAT — the checks after any crash or fault.
consistent() {
  [ "$(sql "PRAGMA integrity_check")" = ok ] || fail "$1: integrity_check: $(sql "PRAGMA integrity_check")"
  "$AGOR" audit verify > verify.out 2>&1 || { cat verify.out; fail "$1: audit verify failed"; }
  settle
}

# no_half_made WHAT — every repository and worktree directory has its row and every row its directory; no staging
# directory (.agor-*) is left behind. after_failure WHAT: the same, except that a directory without its row is
# allowed when the failure named it (the retry takes it).
after_failure() { allow_named=1 no_half_made "$@"; }
# (a reply whose write batch did not commit says "not stored: …" and carries the answer it replaces: the path)
named() { [ "${allow_named:-0}" = 1 ] && grep -q "into $2 but not recorded\|at $2 but not recorded\|not stored: .*$2" op.out && echo "$1: $2 left, named" >> faults.log; }
no_half_made() {
  local left
  left=$(find "$AGOR_HOME/repos" "$AGOR_HOME/worktrees" -name '.agor-*' 2> /dev/null || true)
  [ -z "$left" ] || fail "$1: staging left behind: $left"
  local d
  for d in "$AGOR_HOME"/repos/*/*/*.git; do
    [ -e "$d" ] || continue
    [ "$(sql "SELECT count(*) FROM repos WHERE path = '$d'")" = 1 ] || named "$1" "$d" || fail "$1: $d has no row"
  done
  for d in "$AGOR_HOME"/worktrees/*/*/*/*; do
    [ -e "$d" ] || continue
    [ "$(sql "SELECT count(*) FROM worktrees WHERE path = '$d'")" = 1 ] || named "$1" "$d" || fail "$1: $d has no row"
  done
  for d in $(sql "SELECT group_concat(path, ' ') FROM worktrees"); do
    [ -d "$d" ] || fail "$1: the row of $d has no directory"
  done
}

# stopped_pid — the pid the armed point stopped (SIGSTOP), once it is stopped (the daemon may get there after the
# client's reply: a removal's terminals are closed after it); empty when none stopped within 20 s.
stopped_pid() {
  local pid=""
  for _ in $(seq 1 400); do
    pid=$(awk '$NF == "stop" { print $2; exit }' trace 2> /dev/null)
    if [ -n "$pid" ] && [ "$(awk '{ print $3 }' "/proc/$pid/stat" 2> /dev/null)" = T ]; then
      echo "$pid"
      return 0
    fi
    sleep 0.05
  done
}

# reap_executors — kill -9 of every executor the trace names that is still there (the daemon was killed under it).
reap_executors() {
  local pid
  for pid in $(awk '$1 == "executor" { print $2 }' trace | sort -u); do
    for _ in $(seq 1 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2> /dev/null || true
  done
}

# kill_at OP ROLE SPEC — from snapshot OP, the daemon armed with AGOR_FAULT=SPEC runs OP; the ROLE process it stops
# is killed -9 (an executor's daemon is then stopped too); the daemon restarts unarmed; then the checks and a retry.
# retry_and_check OP SPEC — after a restart: OP again unless it had finished, then nothing half made and the
# state consistent; the daemon stopped.
retry_and_check() {
  local op=$1 spec=$2
  if ! done_already "$op"; then
    "op_$op" > retry.out 2>&1 || { cat retry.out; fail "$spec: the retry of $op failed"; }
  fi
  settle
  no_half_made "$spec"
  consistent "$spec after the retry"
  stop_daemon
}

kill_at() {
  local op=$1 role=$2 spec=$3 pid
  restore "$op"
  : > trace
  AGOR_FAULT=$spec start_daemon
  "op_$op" > op.out 2>&1 &
  op_pid=$!
  pid=$(stopped_pid)
  [ -n "$pid" ] || { cat op.out; fail "$spec: nothing stopped"; }
  kill -9 "$pid"
  if [ "$role" = daemon ]; then
    wait "$daemon_pid" 2> /dev/null || true
    daemon_pid=""
  else
    stop_daemon
  fi
  wait "$op_pid" 2> /dev/null || true
  reap_executors
  start_daemon
  consistent "$spec"
  retry_and_check "$op" "$spec"
  echo "killed $role at $spec: recovered" >> kills.log
}

# count_points OP — the operation run once, traced, from its snapshot: its points in trace.OP.
count_points() {
  restore "$1"
  : > trace
  start_daemon
  "op_$1" > op.out 2>&1 || { cat op.out; fail "$1 failed unarmed"; }
  settle
  stop_daemon
  cp trace "trace.$1"
}

# kill_everywhere OP — kill_at every named step of the daemon (SPEC daemon:NAME:K, K its pass from the start), and
# every named step and move of the operation's first executor (SPEC executor:any:I, I its point's index).
kill_everywhere() {
  count_points "$1"
  local spec
  for spec in $(awk '$1 == "daemon" && $3 == "step" { n[$5]++; print "daemon:" $5 ":" n[$5] ":stop" }' "trace.$1"); do
    kill_at "$1" daemon "$spec"
  done
  for spec in $(awk '$1 == "executor" { if (!p) p = $2; if ($2 != p) exit; i++
                 if ($3 == "step" || $5 == "fs.move") print "executor:any:" i ":stop" }' "trace.$1"); do
    kill_at "$1" executor "$spec"
  done
}

# fault_at OP SPEC CAUSE — from snapshot OP, the daemon armed with AGOR_FAULT=SPEC (an ENOSPC or EIO) runs OP: CAUSE
# is said, by the failed operation (the errno's text) or, for a database write, in its reply or the daemon's log;
# a client told ok has its rows (a reply waits for its batch's commit), and no task is left running even before the
# restart (a lost ending is rewritten failed); then the daemon restarts unarmed, the checks pass and the operation
# retried succeeds.
fault_at() {
  local op=$1 spec=$2 cause=$3
  restore "$op"
  : > trace
  : > daemon.log
  AGOR_FAULT=$spec start_daemon
  "op_$op" > op.out 2>&1 && rc=0 || rc=$?
  [ -n "$(awk 'NF > 5 && $NF != "stop"' trace)" ] || fail "$spec: the fault was never reached"
  settle
  case $spec in
    daemon:sqlite*) grep -q "$cause" daemon.log op.out || { cat op.out daemon.log; fail "$spec: nothing said $cause"; }
       [ "$rc" != 0 ] || done_already "$op" || { cat op.out; fail "$spec: $op was told ok but its rows are not stored"; } ;;
    *) [ "$rc" = 1 ] || { cat op.out; fail "$spec: $op did not fail"; }
       expect_contains op.out "$cause" ;;
  esac
  stop_daemon
  start_daemon
  consistent "$spec"
  after_failure "$spec (failed)"
  retry_and_check "$op" "$spec"
  echo "$spec: $op said $cause, recovered" >> faults.log
}

# (a database fault is aimed with KIND@STEP, counted from the step in the armed run itself: the number of WAL writes
# before it varies from run to run with page splits and the background checkpoint)
# The scene: a source repository, and snapshots before each operation: clone (empty), add (cloned), remove (added).
scene() {
  make_source_repo src
  export AGOR_FAULT_TRACE=$PWD/trace
  start_daemon
  stop_daemon
  snapshot clone
  start_daemon
  op_clone > op.out 2>&1 || { cat op.out; fail "clone"; }
  repo=$(json_get op.out repo.id)
  stop_daemon
  snapshot add
  start_daemon
  op_add > op.out 2>&1 || { cat op.out; fail "worktree add"; }
  wt=$(json_get op.out worktree.id)
  stop_daemon
  snapshot remove
}

# --- the cases ----------------------------------------------------------------------------------------------------

test_case "the product build ignores AGOR_FAULT: a daemon armed to fail its first commit serves and clones" '
  is_musl || skip_case "the product (musl) build only: the ASan build has the seam on purpose"
  make_source_repo src
  AGOR_FAULT=daemon:sqlite:1:EIO AGOR_FAULT_TRACE=$PWD/trace start_daemon
  expect_exit 0 "$AGOR" repo clone "$PWD/src" --json
  [ ! -e trace ] || fail "the product wrote a fault trace"
  expect_exit 0 "$AGOR" audit verify
  stop_daemon
'

test_case --needs python3-sqlite3 "attack: a retry takes only what an interrupted run made: a recorded repo or worktree name is refused first, a planted repository of another origin or a non-repository is not taken" '
  make_source_repo src
  make_source_repo other
  start_daemon
  op_clone > op.out 2>&1 || { cat op.out; fail "clone"; }
  repo=$(json_get op.out repo.id)
  base=$(dirname "$(json_get op.out repo.path)")
  expect_exit 1 "$AGOR" repo clone "$PWD/src"
  expect_contains err "is cloned already, as repo $repo"
  op_add > op.out 2>&1 || { cat op.out; fail "worktree add"; }
  expect_exit 1 "$AGOR" worktree add "$repo" feat --branch feat2 --create-branch
  expect_contains err "a worktree named '"'"'feat'"'"' already exists in this repository"
  # a bare repository whose origin is another URL, at the path the clone of other goes to
  git clone -q --bare "$PWD/src" "$base/other.git"
  expect_exit 1 "$AGOR" repo clone "$PWD/other"
  expect_contains err ALREADY_EXISTS
  [ "$(sql "SELECT count(*) FROM repos")" = 1 ] || fail "a planted repository was recorded"
  [ -f "$base/other.git/HEAD" ] || fail "the planted repository was touched"
  # a directory that is no repository at all
  rm -rf "$base/other.git" && mkdir -p "$base/other.git" && echo x > "$base/other.git/file"
  expect_exit 1 "$AGOR" repo clone "$PWD/other"
  expect_contains err ALREADY_EXISTS
  # a worktree entry naming another path is no interrupted add of this one: the add is refused, the entry kept
  entry=$(json_get op.out worktree.path)
  mkdir -p "$AGOR_HOME/repos/local/$(basename "$PWD")/src.git/worktrees/w2"
  echo "/elsewhere/.git" > "$AGOR_HOME/repos/local/$(basename "$PWD")/src.git/worktrees/w2/gitdir"
  expect_exit 1 "$AGOR" worktree add "$repo" w2
  expect_contains err "a worktree named '"'"'w2'"'"' already exists"
  [ -f "$AGOR_HOME/repos/local/$(basename "$PWD")/src.git/worktrees/w2/gitdir" ] || fail "the entry was removed"
  stop_daemon
'

test_case --needs faults,python3-sqlite3 "kill -9 of the daemon or the executor at every step of a clone: recovered, retried" '
  scene
  kill_everywhere clone
  cat kills.log
'

test_case --needs faults,python3-sqlite3 "kill -9 of the daemon or the executor at every step of a worktree add: recovered, retried" '
  scene
  kill_everywhere add
  cat kills.log
'

test_case --needs faults,python3-sqlite3 "kill -9 of the daemon or the executor at every step of a worktree remove: recovered, retried" '
  scene
  kill_everywhere remove
  cat kills.log
'

test_case --needs faults,python3-sqlite3 "ENOSPC and EIO at an executor's write, fsync or rename: the operation fails naming the cause, nothing is left, the retry succeeds" '
  scene
  fault_at clone executor:rename:1:EIO "Input/output error"
  fault_at add executor:write:1:ENOSPC "No space left on device"
  fault_at add executor:fsync:3:EIO "Input/output error"
  fault_at add executor:rename:7:ENOSPC "No space left on device"
  fault_at add executor:rename:8:EIO "Input/output error"
  cat faults.log
'

test_case --needs faults,python3-sqlite3 "ENOSPC and EIO at the database commits of a clone and a worktree add and remove: logged with the cause, nothing corrupted, the retry succeeds" '
  scene
  fault_at clone daemon:sqlite@task.recorded:1:ENOSPC "database or disk is full"
  fault_at clone daemon:sqlite@task.recorded-result:1:EIO "disk I/O error"
  fault_at add daemon:sqlite@task.recorded-result:1:ENOSPC "database or disk is full"
  fault_at remove daemon:sqlite@task.running:1:EIO "disk I/O error"
  cat faults.log
'

test_done
