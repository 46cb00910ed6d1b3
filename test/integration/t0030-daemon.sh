#!/usr/bin/env bash
# t0030-daemon — the control plane (docs/rpc.md): first start makes AGOR_HOME and its secrets 0600, JSON-RPC on
# the Unix socket, clone and worktree tasks run through executors, audit chain, SIGTERM, restart recovery.
. "$(dirname "$0")/../lib.sh"

test_case "first start creates AGOR_HOME 0700, agor.db and secrets 0600, and serves" '
  start_daemon
  expect_mode "$AGOR_HOME" 700
  expect_mode "$AGOR_HOME/agor.db" 600
  expect_mode "$AGOR_HOME/jwt.secret" 600
  expect_mode "$AGOR_HOME/master.key" 600
  [ "$(stat -c %s "$AGOR_HOME/jwt.secret")" -eq 32 ]
  rpc ping > reply && expect_json reply result.pong true
  stop_daemon
'

test_case "a second daemon on the same AGOR_HOME is refused" '
  start_daemon
  expect_exit 1 "$AGOR" daemon --foreground --port 0
  expect_contains err "another agor daemon is running"
  stop_daemon
'

test_case "clone a repo and add/remove a worktree through the CLI; rows, tasks and audit recorded" '
  make_source_repo src
  start_daemon
  expect_exit 0 "$AGOR" repo clone "$PWD/src" --json
  repo=$(json_get out repo.id)
  expect_json out repo.default_branch main
  [ -d "$AGOR_HOME/repos/local/$(basename "$PWD")/src.git" ]
  expect_exit 0 "$AGOR" worktree add "$repo" feature --branch feat --create-branch --json
  wt=$(json_get out worktree.id)
  [ -f "$AGOR_HOME/worktrees/local/$(basename "$PWD")/src/feature/hello.txt" ]
  expect_exit 0 "$AGOR" worktree list
  expect_contains out feature
  expect_exit 0 "$AGOR" task list --json
  [ "$(json_get out 0.status)" = completed ]
  # newest first, also when both tasks started within the same second (created_at ties)
  [ "$(json_get out 0.command)" = git.worktree.add ] || fail "task list: newest first expected: $(cat out)"
  [ "$(json_get out 1.command)" = git.clone ] || fail "task list: the clone second expected"
  expect_exit 0 "$AGOR" worktree remove "$wt"
  [ ! -e "$AGOR_HOME/worktrees/local/$(basename "$PWD")/src/feature" ]
  expect_exit 0 "$AGOR" audit verify
  expect_contains out "the hash chain verifies"
  stop_daemon
'

test_case "sessions and worktree owners through the CLI: create/list/get, add/remove owners, never the last one" '
  make_source_repo src
  start_daemon
  expect_exit 0 "$AGOR" repo clone "$PWD/src" --json
  expect_exit 0 "$AGOR" worktree add "$(json_get out repo.id)" feature --json
  wt=$(json_get out worktree.id)
  expect_exit 0 "$AGOR" session create feature --tool codex --permission-mode acceptEdits --json
  session=$(json_get out id)
  expect_json out tool codex
  expect_exit 0 "$AGOR" session list
  expect_contains out "$session"
  expect_exit 0 "$AGOR" session get "$session"
  expect_contains out acceptEdits
  expect_exit 1 "$AGOR" session create feature --tool vim
  expect_contains err "params.tool"
  expect_exit 2 "$AGOR" session create feature --tool
  expect_exit 0 "$AGOR" user create bob
  expect_exit 0 "$AGOR" worktree add-owner "$wt" bob
  expect_contains out bob
  expect_exit 0 "$AGOR" worktree owners feature --json
  [ "$(python3 -c "import json; print(len(json.load(open(\"out\"))))")" = 2 ] || { cat out; fail "not two owners"; }
  expect_exit 0 "$AGOR" worktree remove-owner "$wt" bob --json
  expect_not_contains out bob
  owner=$(json_get out 0.name)
  expect_exit 1 "$AGOR" worktree remove-owner "$wt" "$owner"
  expect_contains err "at least one owner"
  expect_exit 1 "$AGOR" worktree add-owner "$wt" nobody
  expect_exit 0 "$AGOR" audit list --json
  expect_contains out worktrees.owners.add
  stop_daemon
'

test_case "a worktree with sessions is refused before anything is removed, naming them; --force removes it with its sessions, tasks and messages" '
  make_source_repo src
  start_daemon
  expect_exit 0 "$AGOR" repo clone "$PWD/src" --json
  expect_exit 0 "$AGOR" worktree add "$(json_get out repo.id)" feature --json
  wt=$(json_get out worktree.id) path=$(json_get out worktree.path)
  expect_exit 0 "$AGOR" session create feature --tool codex --json
  session=$(json_get out id)
  sql() { python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10); r = c.execute(sys.argv[2]).fetchall(); c.commit(); print(r[0][0] if r else \"\")" "$AGOR_HOME/agor.db" "$1"; }
  # a finished task of the session, with a message and a token: what the cascade must take along
  sql "INSERT INTO tasks (id, session_id, command, status, created_at) VALUES (\"t-done\", \"$session\", \"prompt\", \"completed\", 1)"
  sql "INSERT INTO messages (task_id, session_id, message_type, data, created_at) VALUES (\"t-done\", \"$session\", \"assistant\", \"{}\", 1)"
  sql "INSERT INTO tokens (jti, task_id, session_id, issued_at, expires_at) VALUES (\"j1\", \"t-done\", \"$session\", 1, 2)"
  expect_exit 1 "$AGOR" worktree remove "$wt"
  expect_contains err "$session"
  expect_contains err "--force"
  [ -d "$path" ] || fail "the worktree directory went although the removal was refused"
  [ "$(sql "SELECT count(*) FROM sessions WHERE id = \"$session\"")" = 1 ] || fail "the session went"
  rpc worktrees.remove "{\"id\":\"$wt\"}" > reply
  expect_json reply error.data.code IN_USE
  expect_json reply error.data.details.sessions.0.id "$session"
  # a task still queued or running refuses even --force: nothing half-done under a live run
  sql "INSERT INTO tasks (id, session_id, command, status, created_at) VALUES (\"t-live\", \"$session\", \"prompt\", \"queued\", 2)"
  expect_exit 1 "$AGOR" worktree remove "$wt" --force
  expect_contains err t-live
  expect_contains err "agor task cancel"
  [ -d "$path" ] || fail "the worktree directory went under a queued task"
  sql "UPDATE tasks SET status = \"cancelled\" WHERE id = \"t-live\""
  # a command running in the worktree outside any session (no session row) refuses it too
  "$AGOR" exec "$wt" -- sleep 4 > exec.out 2>&1 &
  exec_pid=$!
  for i in $(seq 1 100); do "$AGOR" task list --json | grep -q "\"running\"" && break; sleep 0.05; done
  expect_exit 1 "$AGOR" worktree remove "$wt" --force
  expect_contains err IN_USE
  [ -d "$path" ] || fail "the worktree directory went under a running command"
  wait $exec_pid || { cat exec.out; fail "the command was disturbed"; }
  expect_exit 0 "$AGOR" worktree remove "$wt" --force
  [ ! -e "$path" ] || fail "the worktree directory stayed"
  for q in "sessions WHERE worktree_id = \"$wt\"" "tasks WHERE session_id = \"$session\"" "messages WHERE session_id = \"$session\"" \
           "tokens WHERE task_id = \"t-done\"" "worktrees WHERE id = \"$wt\""; do
    [ "$(sql "SELECT count(*) FROM $q")" = 0 ] || fail "rows left: $q"
  done
  expect_exit 1 "$AGOR" session get "$session"
  expect_exit 0 "$AGOR" audit verify
  stop_daemon
'

test_case "repo clone on a terminal shows git progress as one updating line; --json and a pipe stay clean" '
  git init -q -b main big
  for i in $(seq 1 3000); do echo "file $i" > big/f$i; done
  git -C big add . && git -C big -c user.name=t -c user.email=t@t commit -qm many
  cp -a big big2 && cp -a big big3
  start_daemon
  script -qec "$AGOR repo clone file://$PWD/big" /dev/null > tty.out 2>&1 < /dev/null || { cat tty.out daemon.log; fail "clone on a terminal failed"; }
  grep -q "Receiving objects: 100% (3002/3002)" tty.out || { cat -v tty.out; fail "no progress on the terminal"; }
  grep -q "^repo " tty.out || fail "no result after the progress"
  [ "$(tr -cd "\r" < tty.out | wc -c)" -ge 5 ] || { cat -v tty.out; fail "progress is not one updating line"; }
  grep -q "$(printf "\033\\[K")" tty.out || fail "the line is not cleared between updates"
  expect_exit 0 "$AGOR" repo clone "file://$PWD/big2" --json
  expect_empty err
  json_get out repo.id > /dev/null
  expect_not_contains out Receiving
  "$AGOR" repo clone "file://$PWD/big3" > pipe.out 2> pipe.err || fail "clone into a pipe failed"
  expect_empty pipe.err
  ! grep -q Receiving pipe.out || fail "progress in a pipe"
  rpc config.get "{\"key\":\"daemon.port\"}" > reply
  expect_json reply result.key daemon.port
  expect_json reply result.value 0
  expect_json reply result.source flag
  rpc config.get "{\"key\":\"no.such\"}" > reply
  expect_json reply error.data.code INVALID_PAYLOAD
  stop_daemon
'

test_case "a failing executor task reports its code; the CLI exits 1" '
  start_daemon
  expect_exit 1 "$AGOR" repo clone "$PWD/missing-repo"
  expect_contains err GIT_ERROR
  expect_exit 0 "$AGOR" task list --json
  [ "$(json_get out 0.status)" = failed ]
  stop_daemon
'

test_case "malformed, oversized and unknown messages get JSON-RPC errors and the daemon keeps serving" '
  start_daemon
  python3 - "$AGOR_HOME/run/agor.sock" <<PY
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rb")
def ask(raw):
    s.sendall(raw + b"\n"); return json.loads(f.readline())
assert ask(b"{not json")["error"]["code"] == -32700
assert ask(b"[]")["error"]["code"] == -32600
assert ask(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"nope\"}")["error"]["code"] == -32601
assert ask(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"repos.get\",\"params\":{}}")["error"]["code"] == -32602
big = b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":{\"x\":\"" + b"a" * (1 << 20) + b"\"}}"
assert ask(big)["error"]["code"] == -32600
for i in range(10000):
    s.sendall(b"\x00garbage" + str(i).encode() + b"\n")
for i in range(10000):
    assert json.loads(f.readline())["error"]["code"] == -32700
batch = ask(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\"}]")
assert len(batch) == 2 and batch[0]["result"]["pong"] is True and batch[1]["error"]["code"] == -32601
assert ask(b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}")["result"]["pong"] is True
PY
  stop_daemon
'

test_case --needs root,setpriv "another Unix user can read neither the database nor the secrets" '
  start_daemon
  chmod 755 "$HOME"
  for f in agor.db jwt.secret master.key; do
    ! setpriv --reuid=65534 --regid=65534 --clear-groups cat "$AGOR_HOME/$f" > /dev/null 2>&1 || fail "$f readable"
  done
  ! setpriv --reuid=65534 --regid=65534 --clear-groups python3 -c "import socket; socket.socket(socket.AF_UNIX).connect(\"$AGOR_HOME/run/agor.sock\")" 2>/dev/null || fail "socket reachable"
  stop_daemon
'

test_case --needs python3-sqlite3 "tasks running when the daemon dies are failed: interrupted after a restart; the audit chain still verifies" '
  start_daemon
  kill_daemon
  python3 - "$AGOR_HOME/agor.db" <<PY
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO tasks (id, command, status, created_at) VALUES (\"t-stuck\", \"git.clone\", \"running\", 0)")
db.commit()
PY
  start_daemon
  expect_exit 0 "$AGOR" task get t-stuck --json
  expect_json out status failed
  expect_contains out interrupted
  expect_exit 0 "$AGOR" audit verify
  python3 - "$AGOR_HOME/agor.db" <<PY
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); print(db.execute("PRAGMA integrity_check").fetchone()[0])
db.execute("UPDATE audit_log SET actor = \"mallory\" WHERE id = 1"); db.commit()
PY
  expect_exit 1 "$AGOR" audit verify
  expect_contains out "row 1 was modified"
  stop_daemon
'

test_case "worktree remove survives kill -9 at each step: recorded first, rerun or the next start finishes it" '
  make_source_repo src
  # git.worktree.remove goes through hook.sh, which does what hook-mode says: die at once (an executor killed
  # before it did anything), or remove the worktree and then hang (the daemon killed before it saw the result)
  cat > hook.sh <<HOOK
case \$(cat "$PWD/hook-mode") in
  die) cat > /dev/null; kill -9 \$\$ ;;
  hang) "$AGOR" executor --stdin > "$PWD/hook.out"; touch "$PWD/hook.ran"; sleep 60; cat "$PWD/hook.out" ;;
  *) exec "$AGOR" executor --stdin ;;
esac
HOOK
  echo run > hook-mode
  mkdir -p "$AGOR_HOME" && chmod 700 "$AGOR_HOME"
  printf "execution:\n  executor_command_template: \"case {command} in git.worktree.remove) exec sh %s/hook.sh;; *) exec %s executor --stdin;; esac\"\n" "$PWD" "$AGOR" > "$AGOR_HOME/config.yaml"
  start_daemon
  expect_exit 0 "$AGOR" repo clone "$PWD/src" --json
  repo=$(json_get out repo.id)
  add() { expect_exit 0 "$AGOR" worktree add "$repo" "$1" --branch "$1" --create-branch --json; wt=$(json_get out worktree.id); path=$(json_get out worktree.path); }
  sql() { python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10); r = c.execute(sys.argv[2]).fetchall(); c.commit(); print(r[0][0] if r else \"\")" "$AGOR_HOME/agor.db" "$1"; }
  admin_entry() { ls -d "$AGOR_HOME"/repos/*/*/src.git/worktrees/"$1" 2> /dev/null; }
  gone() { # WT PATH NAME — no row, no directory, no admin entry
    [ "$(sql "SELECT count(*) FROM worktrees WHERE id = \"$1\"")" = 0 ] || fail "the row of $1 stayed"
    [ ! -e "$2" ] || fail "$2 stayed"
    [ -z "$(admin_entry "$3")" ] || fail "the admin entry of $3 stayed"
  }
  # 1. a dirty worktree without --force is refused before anything: not even marked
  add dirty
  echo change >> "$path/hello.txt"
  expect_exit 1 "$AGOR" worktree remove "$wt"
  expect_contains err WORKTREE_DIRTY
  [ "$(sql "SELECT removing_since IS NULL FROM worktrees WHERE id = \"$wt\"")" = 1 ] || fail "a refused removal was recorded"
  [ -f "$path/hello.txt" ] || fail "the refused removal deleted files"
  # 2. the executor killed before it did anything: the removal stays recorded; a rerun finishes it
  add killed
  echo die > hook-mode
  expect_exit 1 "$AGOR" worktree remove "$wt"
  expect_contains err "agor worktree remove $wt"
  [ "$(sql "SELECT removing_since IS NOT NULL FROM worktrees WHERE id = \"$wt\"")" = 1 ] || fail "the interrupted removal is not recorded"
  rm -f "$path/.git"   # as if the executor had died half-way through deleting it: no .git file any more
  echo run > hook-mode
  expect_exit 0 "$AGOR" worktree remove "$wt"
  gone "$wt" "$path" killed
  # 3. the daemon killed after the executor removed the directory, before it saw the result: its next start
  # reports the unfinished removal and finishes it (rows, admin entry)
  add crashed
  echo hang > hook-mode
  "$AGOR" worktree remove "$wt" > rm.out 2>&1 &
  for i in $(seq 1 200); do [ -e hook.ran ] && break; sleep 0.05; done
  [ -e hook.ran ] || fail "the executor never ran"
  kill_daemon
  [ ! -e "$path" ] || fail "the executor did not remove the directory"
  [ "$(sql "SELECT count(*) FROM worktrees WHERE id = \"$wt\"")" = 1 ] || fail "the row went before the daemon saw the result"
  echo run > hook-mode
  start_daemon
  for i in $(seq 1 200); do [ "$(sql "SELECT count(*) FROM worktrees WHERE id = \"$wt\"")" = 0 ] && break; sleep 0.05; done
  gone "$wt" "$path" crashed
  grep -q "worktree $wt: its removal was interrupted; finishing it" daemon.log || fail "the start did not report it"
  rpc audit.list > audit
  expect_contains audit "worktrees.remove.resume"
  stop_daemon
'

test_done
