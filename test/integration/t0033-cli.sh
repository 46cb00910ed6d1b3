#!/usr/bin/env bash
# t0033-cli — the CLI's rough edges (issue 25): worktrees of two hosts' org/repo apart, a clone URL without
# org/repo refused up front, id prefixes, `agor daemon status|stop`, human output, errors that name the fix.
. "$(dirname "$0")/../lib.sh"

DAEMON='
  sql() { python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute(sys.argv[2]); db.commit()" "$AGOR_HOME/agor.db" "$1"; }
'

test_case "the same org/repo from two hosts: each worktree under its host, no collision" "$DAEMON"'
  mkdir -p local/org served/org
  make_source_repo local/org/proj
  make_source_repo served/org/proj
  gitport=$(python3 -c "import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])")
  git daemon --export-all --reuseaddr --listen=127.0.0.1 --port=$gitport --base-path="$PWD/served" "$PWD/served" 2> gitd.log &
  gitd=$!
  for i in $(seq 1 100); do git ls-remote "git://127.0.0.1:$gitport/org/proj" > /dev/null 2>&1 && break; sleep 0.05; done
  scene_cleanup() { kill $gitd 2> /dev/null || true; }
  start_daemon
  expect_exit 0 "$AGOR" repo clone "file://$PWD/local/org/proj" --json
  r1=$(json_get out repo.id)
  expect_exit 0 "$AGOR" repo clone "git://127.0.0.1:$gitport/org/proj" --json   # not $port: start_daemon sets it
  r2=$(json_get out repo.id)
  [ -d "$AGOR_HOME/repos/local/org/proj.git" ] && [ -d "$AGOR_HOME/repos/127.0.0.1/org/proj.git" ] || fail "repos: $(find "$AGOR_HOME/repos" -maxdepth 3)"
  expect_exit 0 "$AGOR" worktree add "$r1" feature --json
  expect_json out worktree.path "$AGOR_HOME/worktrees/local/org/proj/feature"
  expect_exit 0 "$AGOR" worktree add "$r2" feature --json
  expect_json out worktree.path "$AGOR_HOME/worktrees/127.0.0.1/org/proj/feature"
  [ -f "$AGOR_HOME/worktrees/127.0.0.1/org/proj/feature/hello.txt" ] || fail "the second worktree was not checked out"
  stop_daemon
'

test_case "a clone URL without org/repo is refused before any task, naming the URL and the form" "$DAEMON"'
  start_daemon
  expect_exit 1 "$AGOR" repo clone "file:///proj"
  expect_contains err "params.url: cannot derive <provider>/<org>/<repo> from URL file:///proj"
  expect_contains err "https://host/org/repo.git"
  expect_not_contains err outputPath
  expect_exit 0 "$AGOR" task list --json
  [ "$(json_get out "")" = "[]" ] || fail "a task was made: $(cat out)"
  stop_daemon
'

test_case "a unique id prefix stands for the id; an ambiguous one is refused naming the candidates" "$DAEMON"'
  make_source_repo src
  start_daemon
  expect_exit 0 "$AGOR" repo clone "$PWD/src" --json
  repo=$(json_get out repo.id)
  expect_exit 0 "$AGOR" worktree add "${repo:0:8}" feature --json
  wt=$(json_get out worktree.id)
  expect_json out worktree.name feature
  expect_exit 0 "$AGOR" worktree get "${wt:0:6}"
  expect_contains out "$wt"
  expect_exit 0 "$AGOR" worktree list --repo "${repo:0:6}"
  expect_contains out feature
  expect_exit 0 "$AGOR" exec "${wt:0:6}" -- /bin/echo via-prefix   # exec, prompt and terminal take prefixes too
  expect_contains out via-prefix
  "$AGOR" task list --json > tasks
  task=$(json_get tasks 0.id)
  expect_exit 0 "$AGOR" task get "${task:0:10}" --json
  expect_json out id "$task"
  # a name that looks like a prefix is still a name
  expect_exit 0 "$AGOR" worktree add "$repo" cafe --json
  expect_exit 0 "$AGOR" worktree get cafe --json
  expect_json out name cafe
  sql "INSERT INTO repos (id, url, path, created_at) VALUES (\"abcdef1000000000000000000000000000\", \"/a\", \"/d/a\", 0)"
  sql "INSERT INTO repos (id, url, path, created_at) VALUES (\"abcdef2000000000000000000000000000\", \"/b\", \"/d/b\", 0)"
  expect_exit 1 "$AGOR" repo get abcdef
  expect_contains err "the id prefix abcdef is ambiguous"
  expect_contains err abcdef1000000000000000000000000000
  expect_contains err abcdef2000000000000000000000000000
  expect_contains err "give more characters"
  expect_exit 0 "$AGOR" repo get abcdef1 --json
  expect_json out url /a
  # fewer than 6 characters is no prefix: the daemon looks it up as given, and the error says what to type
  expect_exit 1 "$AGOR" repo get "${repo:0:5}"
  expect_contains err NOT_FOUND
  expect_contains err "agor repo list"
  expect_contains err "6 or more characters"
  expect_exit 0 "$AGOR" worktree list --repo "${repo:0:5}" --json   # a flag too: no repo has that id
  [ "$(json_get out "")" = "[]" ] || fail "a 5-character prefix was expanded: $(cat out)"
  expect_exit 1 "$AGOR" repo get 9999
  expect_contains err NOT_FOUND
  stop_daemon
'

test_case "id prefixes in flags and in every id argument: --reassign-to, --for, revoke-token, nodes" "$DAEMON"'
  start_daemon
  expect_exit 0 "$AGOR" user create bob --json
  bob=$(json_get out id)
  expect_exit 0 "$AGOR" user token --for "${bob:0:6}" --label t1 --json
  jti=$(json_get out jti)
  expect_exit 0 "$AGOR" user tokens --json
  expect_contains out "$jti"
  expect_exit 0 "$AGOR" user revoke-token "${jti:0:8}"
  expect_contains out revoked
  expect_exit 0 "$AGOR" user create carol --json
  carol=$(json_get out id)
  expect_exit 0 "$AGOR" user remove "${carol:0:6}" --reassign-to "${bob:0:6}" --json
  expect_exit 0 "$AGOR" user list --json
  expect_not_contains out carol
  stop_daemon
'

test_case "repo clone URL --path P: cloned there under repos/; a path outside repos/ is refused, nothing made" "$DAEMON"'
  make_source_repo src
  mkdir outside
  start_daemon
  expect_exit 0 "$AGOR" repo clone "$PWD/src" --path mine/proj.git --json
  expect_json out repo.path "$AGOR_HOME/repos/mine/proj.git"
  [ -f "$AGOR_HOME/repos/mine/proj.git/HEAD" ] || fail "no bare clone at mine/proj.git"
  expect_exit 0 "$AGOR" worktree add "$(json_get out repo.id)" via-path --json
  for bad in ../escape.git /tmp/abs.git "a//b.git" "a/./b.git" "a/../../b.git" ""; do
    expect_exit 1 "$AGOR" repo clone "$PWD/src" --path "$bad"
    expect_contains err "params.path"
    expect_contains err "--path"
  done
  ln -s "$PWD/outside" "$AGOR_HOME/repos/evil"
  expect_exit 1 "$AGOR" repo clone "$PWD/src" --path evil/proj.git
  [ -z "$(ls -A outside)" ] || fail "a clone through a symlink landed outside repos/: $(ls -A outside)"
  [ ! -e "$AGOR_HOME/escape.git" ] && [ ! -e /tmp/abs.git ] || fail "a refused path was made"
  stop_daemon
'

test_case "agor daemon status|stop: not running, running (pid, socket, port, version, uptime), stopped" '
  expect_exit 3 "$AGOR" daemon status
  expect_contains out "agor daemon: not running (AGOR_HOME $AGOR_HOME)"
  expect_exit 0 "$AGOR" daemon stop
  expect_contains out "not running"
  expect_exit 0 "$AGOR" daemon --port 0
  pid=$(sed -n "s/.*(pid \([0-9]*\)).*/\1/p" out)
  trap "kill $pid 2>/dev/null" EXIT
  expect_exit 0 "$AGOR" daemon status
  expect_contains out "agor daemon: running (pid $pid)"
  expect_contains out "socket   $AGOR_HOME/run/agor.sock"
  expect_contains out "version  "
  expect_contains out "uptime   "
  expect_exit 0 "$AGOR" daemon status --json
  expect_json out running true
  expect_json out pid "$pid"
  expect_json out answering true
  [ "$(json_get out port)" -gt 0 ] || fail "no TCP port: $(cat out)"
  expect_exit 2 "$AGOR" daemon stop --timeout soon
  expect_contains err "--timeout: give whole seconds"
  expect_exit 2 "$AGOR" daemon status --foreground
  expect_exit 0 "$AGOR" daemon stop
  expect_contains out "agor daemon stopped (pid $pid)"
  [ ! -e /proc/$pid ] || grep -q "^State:.*Z" /proc/$pid/status || fail "pid $pid still runs"
  expect_exit 3 "$AGOR" daemon status --json
  expect_json out running false
'

test_case "human output: no JSON, nested results as fields, times as dates, users by name, aligned columns" "$DAEMON"'
  make_source_repo src
  start_daemon
  me=$(id -un)
  expect_exit 0 "$AGOR" repo clone "$PWD/src" --json
  "$AGOR" task list --json > tasks
  task=$(json_get tasks 0.id)
  expect_exit 0 "$AGOR" task get "$task"
  expect_not_contains out "{"
  expect_contains out "result.defaultBranch  main"
  grep -Eq "^created_at +[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$" out || fail "created_at is not a date: $(cat out)"
  grep -Eq "^created_by +$me$" out || fail "created_by is not a name: $(cat out)"
  expect_exit 0 "$AGOR" task get "$task" --json
  json_get out result > result.json && expect_json result.json defaultBranch main   # --json keeps the nested string
  echo sk-test | "$AGOR" api-key set anthropic > set.out
  expect_contains set.out "stored the key of anthropic (scope members)"
  expect_exit 0 "$AGOR" api-key list
  expect_not_contains out "{"
  grep -Eq "^anthropic +members +$me +[0-9]{4}-" out || fail "api-key list: $(cat out)"
  expect_exit 0 "$AGOR" api-key remove anthropic
  expect_contains out "removed the key of anthropic"
  expect_exit 0 "$AGOR" audit list
  # every row starts its actor column where the header does
  col=$(head -1 out | awk "{print index(\$0, \"actor\")}")
  tail -n +2 out | while IFS= read -r line; do [ "${line:$((col - 2)):1}" = " " ] && [ "${line:$((col - 1)):1}" != " " ] || fail "misaligned: $line"; done
  expect_contains out "  $me  "
  [ -z "$(grep " $" out)" ] || fail "trailing blanks in the table"
  stop_daemon
'

test_case "approvals get, set and allowlist add: readable by default, machine-readable with --json" '
  expect_exit 0 "$AGOR" approvals set --security allowlist --ask off
  expect_contains out "saved $AGOR_HOME/exec-approvals.json (hash "
  expect_exit 0 "$AGOR" approvals allowlist add /usr/bin/ls
  expect_contains out "added /usr/bin/ls as "
  expect_exit 0 "$AGOR" approvals get
  expect_not_contains out "{"
  expect_contains out "defaults  security allowlist, ask off, askFallback deny (effective)"
  expect_contains out "  /usr/bin/ls"
  expect_exit 0 "$AGOR" approvals set --ask always --json
  json_get out hash > /dev/null
'

test_case "errors name the fix: a TCP call without a token names --token and AGOR_TOKEN" "$DAEMON"'
  start_daemon
  port=$(sed -n "s/.*:\([0-9][0-9]*\) (pid.*/\1/p" daemon.log | head -1)
  expect_exit 1 "$AGOR" user list --url "http://127.0.0.1:$port"
  expect_contains err "the agor CLI takes --token T or \$AGOR_TOKEN"
  AGOR_TOKEN=$("$AGOR" user token 2> /dev/null) expect_exit 0 "$AGOR" user list --url "http://127.0.0.1:$port"
  stop_daemon
'

test_done
