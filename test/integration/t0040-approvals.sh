#!/usr/bin/env bash
# t0040-approvals — issue 7 end to end: the exec-approvals store, check/exec under the policy, the ask socket's
# refusals, the tmux-driven serve UI, concurrent writers. Never leaves a server or tmux session running.
. "$(dirname "$0")/../lib.sh"

CLIENT="$TEST_TOP/test/helpers/approvals-client.py"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
F="\$AGOR_HOME/exec-approvals.json"

# start_server — `approvals serve` with no UI (stdin /dev/null: every valid request is answered UNAVAILABLE),
# its pid in ./server.pid; waits for the socket. stop_server kills exactly that pid.
start_server() {
  "$AGOR" approvals serve < /dev/null > server.log 2>&1 & echo $! > server.pid
  for _ in $(seq 1 200); do [ -S "$AGOR_HOME/approvals.sock" ] && return 0; sleep 0.05; done
  cat server.log; fail "server did not start"
}
stop_server() { kill "$(cat server.pid)" 2>/dev/null || true; wait "$(cat server.pid)" 2>/dev/null || true; }
token() { json_get "$AGOR_HOME/exec-approvals.json" socket.token; }
client() { "$PY" "$CLIENT" "$AGOR_HOME/approvals.sock" "$(token)" "$@"; }
# served — a valid signed request is still processed (authenticated, then UNAVAILABLE: no UI attached)
served() { client request > served.out; grep -q '"UNAVAILABLE"' served.out || { cat served.out server.log; fail "server not serving"; }; }

# ---- store ---------------------------------------------------------------------------------------------------

test_case "the store: built-in defaults, 0700 dir, 0600 file, atomic write, no temp files left" '
  expect_exit 0 "$AGOR" approvals get --json
  expect_json out effectiveDefaults.security deny
  expect_json out effectiveDefaults.ask on-miss
  expect_json out effectiveDefaults.askFallback deny
  expect_json out hash ""
  expect_mode "$AGOR_HOME" 700
  [ ! -e '"$F"' ] || fail "get must not write"
  expect_exit 0 "$AGOR" approvals set --security allowlist --ask off
  expect_mode '"$F"' 600
  [ "$(ls -A "$AGOR_HOME" | sort | tr "\n" " ")" = "exec-approvals.json exec-approvals.json.lock " ] || { ls -la "$AGOR_HOME"; fail "unexpected files"; }
  expect_json '"$F"' version 1
  expect_json '"$F"' defaults.security allowlist
  hash=$(sha256sum '"$F"' | cut -d" " -f1)
  expect_exit 0 "$AGOR" approvals get --json
  expect_json out hash "$hash"
'

test_case "invalid values are refused naming the field, never coerced" '
  expect_exit 2 "$AGOR" approvals set --security maybe
  expect_contains err "\"maybe\" is not one of deny|allowlist|full"
  mkdir -p -m 700 "$AGOR_HOME"
  printf "{\"version\":1,\"agents\":{\"foo\":{\"security\":\"maybe\"}}}" > '"$F"'; chmod 600 '"$F"'
  expect_exit 1 "$AGOR" approvals check -- ls
  expect_contains err "agents.foo.security: \"maybe\" is not one of deny|allowlist|full"
  printf "{\"version\":1,\"defaults\":{\"ask\":true}}" > '"$F"'
  expect_exit 1 "$AGOR" approvals get
  expect_contains err "defaults.ask: true is not one of off|on-miss|always"
'

test_case "pattern without / refused at write time; add, list, rm" '
  expect_exit 1 "$AGOR" approvals allowlist add ls
  expect_contains err "has no '"'"'/'"'"'"
  expect_exit 1 "$AGOR" approvals allowlist add "bin/*"
  expect_exit 0 "$AGOR" approvals allowlist add /usr/bin/ls "~/bin/*"
  [ "$(wc -l < out)" -eq 2 ]
  expect_contains out "added ~/bin/* as "
  expect_exit 0 "$AGOR" approvals allowlist add --json /usr/bin/ls
  id=$(json_get out 0.id)
  expect_json out 0.pattern /usr/bin/ls
  expect_exit 0 "$AGOR" approvals allowlist add --agent ci /usr/bin/id
  expect_exit 0 "$AGOR" approvals allowlist list
  expect_contains out "*	$id	/usr/bin/ls"
  expect_contains out "ci	"
  expect_exit 0 "$AGOR" approvals allowlist rm "$id"
  expect_exit 0 "$AGOR" approvals allowlist list --json
  expect_not_contains out "/usr/bin/ls"
  expect_exit 1 "$AGOR" approvals allowlist rm "$id"
  expect_contains err "no allowlist entry"
'

test_case "symlinked file or parent directory is refused; loose modes are refused" '
  mkdir -p -m 700 "$AGOR_HOME"
  echo "{\"version\":1,\"defaults\":{\"security\":\"full\"}}" > elsewhere.json; chmod 600 elsewhere.json
  ln -s "$PWD/elsewhere.json" '"$F"'
  expect_exit 1 "$AGOR" approvals check -- ls
  expect_contains err "symlink"
  expect_exit 1 "$AGOR" approvals set --security full
  expect_contains err "symlink"
  [ "$(readlink '"$F"')" = "$PWD/elsewhere.json" ] || fail "link replaced"
  grep -q full elsewhere.json
  rm '"$F"'
  mkdir -m 700 realhome; ln -s "$PWD/realhome" linkhome
  AGOR_HOME="$PWD/linkhome/sub" expect_exit 1 "$AGOR" approvals set --security full
  expect_contains err "is a symlink"
  [ ! -e realhome/sub ] || fail "created through the link"
  expect_exit 0 "$AGOR" approvals set --security full
  chmod 644 '"$F"'
  expect_exit 1 "$AGOR" approvals get
  expect_contains err "mode 0644, expected 0600"
'

test_case "a write against a stale hash fails with a retry error (exit 75)" '
  expect_exit 0 "$AGOR" approvals set --security allowlist --json
  old=$(json_get out hash)
  expect_exit 0 "$AGOR" approvals set --expect-hash "$old" --ask always
  expect_contains out "give it to --expect-hash"
  new=$(sed -n "s/.*(hash \([0-9a-f]*\):.*/\1/p" out)
  expect_exit 75 "$AGOR" approvals set --expect-hash "$old" --ask off
  expect_contains err "changed since it was read"
  expect_exit 75 "$AGOR" approvals allowlist add --expect-hash "$old" /usr/bin/ls
  expect_json '"$F"' defaults.ask always
  expect_exit 0 "$AGOR" approvals allowlist add --expect-hash "$new" /usr/bin/ls
'

test_case "concurrent writers: every entry kept (or told to retry), never a torn file" '
  writer() { # PREFIX
    for i in $(seq 1 40); do
      for attempt in 1 2 3 4 5 6 7 8 9 10; do
        rc=0; "$AGOR" approvals allowlist add "/opt/$1/tool$i" > /dev/null 2>> "$1.err" || rc=$?
        [ $rc -eq 0 ] && break
        [ $rc -eq 75 ] || { echo "exit $rc" >> "$1.err"; return 1; }
      done
    done
  }
  writer a & pa=$!; writer b & pb=$!
  while kill -0 $pa 2>/dev/null || kill -0 $pb 2>/dev/null; do
    # a missing file (before the first write) is fine; an unparsable one is a torn write
    "$PY" -c "
import json, sys
try:
    f = open(sys.argv[1])
except FileNotFoundError:
    sys.exit(0)
json.load(f)" "$AGOR_HOME/exec-approvals.json" || fail "torn read"
  done
  wait $pa; wait $pb
  ! grep -q "^exit" a.err b.err
  n=$("$PY" -c "import json,sys; print(len(json.load(open(sys.argv[1]))[\"agents\"][\"*\"][\"allowlist\"]))" '"$F"')
  [ "$n" -eq 80 ] || fail "$n entries, expected 80"
  [ -z "$(ls "$AGOR_HOME" | grep tmp)" ] || fail "temp files left"
'

# ---- check ---------------------------------------------------------------------------------------------------

test_case "check --json: decisions, reasons, resolved paths, exit codes 0/1/3" '
  expect_exit 1 "$AGOR" approvals check --json -- ls
  expect_json out decision deny
  expect_json out reason security=deny
  expect_json out resolvedPaths "[\"/usr/bin/ls\"]"
  expect_exit 0 "$AGOR" approvals set --security allowlist --ask off
  expect_exit 0 "$AGOR" approvals allowlist add "/usr/bin/l?"
  expect_exit 0 "$AGOR" approvals check --json -- ls -la
  expect_json out decision allow
  expect_json out reason allowlisted
  expect_json out matched "[\"/usr/bin/l?\"]"
  expect_exit 1 "$AGOR" approvals check --json -- sh -c "ls && id"
  expect_json out reason allowlist-miss
  expect_json out resolvedPaths "[\"/usr/bin/ls\", \"/usr/bin/id\"]"
  expect_exit 0 "$AGOR" approvals set --ask on-miss
  expect_exit 3 "$AGOR" approvals check --json -- id
  expect_json out decision ask
  expect_exit 0 "$AGOR" approvals check -- ls
  expect_contains out "allow: allowlisted"
  expect_exit 0 "$AGOR" approvals set --agent ci --security full
  expect_exit 0 "$AGOR" approvals check --json --agent ci -- id
  expect_json out reason security=full
  expect_exit 1 "$AGOR" approvals check --json --agent ci --security deny -- id
  expect_json out reason security=deny
  expect_exit 3 "$AGOR" approvals check --json --agent ci --ask always -- id
  expect_exit 3 "$AGOR" approvals check --json --security full -- id
  expect_json out effective.security allowlist
'

test_case "check refuses the known bypasses: wrappers, env -S, abbreviations, symlinks, case" '
  expect_exit 0 "$AGOR" approvals set --security allowlist --ask off
  expect_exit 0 "$AGOR" approvals allowlist add /usr/bin/ls /usr/bin/env /usr/bin/dash /usr/bin/bash /usr/bin/nice
  denied() { expect_exit 1 "$AGOR" approvals check --json -- "$@"; expect_json out decision deny; }
  denied env -S "rm -rf /"
  denied env --split-string=rm
  denied env FOO=1 ls
  denied nice --adj=1 rm
  denied sh -c rm
  denied sh -c "ls > out.txt"
  denied bash -c "ls;rm"
  denied sudo ls
  denied setsid ls
  denied bash script.sh
  ln -s /usr/bin/rm ls
  expect_exit 1 "$AGOR" approvals check --json -- ./ls -rf /
  expect_json out resolvedPaths "[\"/usr/bin/rm\"]"
  expect_exit 0 "$AGOR" approvals allowlist add /USR/BIN/ID
  expect_exit 1 "$AGOR" approvals check --json -- id
  expect_exit 0 "$AGOR" approvals check --json -- nice -n 5 timeout 5 stdbuf -oL ls
'

# ---- exec ----------------------------------------------------------------------------------------------------

test_case "exec: denied with an event and no run; allowed runs the canonical path with events" '
  expect_exit 126 "$AGOR" approvals exec -- touch made
  [ ! -e made ]
  expect_contains err "\"type\":\"exec.denied\""
  expect_contains err "\"reason\":\"security=deny\""
  expect_exit 0 "$AGOR" approvals set --security allowlist --ask off
  expect_exit 0 "$AGOR" approvals allowlist add /usr/bin/touch
  expect_exit 0 "$AGOR" approvals exec -- touch made
  [ -e made ]
  head -n1 err > started; expect_json started type exec.started; expect_json started resolvedPath /usr/bin/touch
  sed -n 2p err > finished; expect_json finished type exec.finished; expect_json finished exitCode 0
  expect_json finished success true; expect_json finished timedOut false
  expect_exit 0 "$AGOR" approvals exec -- nice -n 1 touch made2  # nice is unwrapped: only touch must match
  [ -e made2 ]
  head -n1 err > started; expect_json started execArgv "[\"/usr/bin/nice\", \"-n\", \"1\", \"/usr/bin/touch\", \"made2\"]"
  expect_exit 126 "$AGOR" approvals exec -- rm made
  expect_contains err "\"reason\":\"allowlist-miss\""
  [ -e made ]
  expect_json '"$F"' agents.*.allowlist.0.lastResolvedPath /usr/bin/touch
  expect_json '"$F"' agents.*.allowlist.0.lastUsedCommand "touch made2"
'

test_case "exec: exported bash functions, BASH_ENV and LD_PRELOAD do not reach the approved command" '
  expect_exit 0 "$AGOR" approvals set --security allowlist --ask off
  expect_exit 0 "$AGOR" approvals allowlist add /usr/bin/id
  echo "echo PWNED-BASH-ENV" > evil.sh
  env "BASH_FUNC_id%%=() { echo PWNED-FUNCTION; }" BASH_ENV="$PWD/evil.sh" LD_PRELOAD=/nonexistent.so \
    "$AGOR" approvals exec -- bash -c "id -u" > out 2> err || { cat out err; fail "exit $?"; }
  expect_not_contains out PWNED
  expect_not_contains out LD_PRELOAD
  grep -qx "$(id -u)" out
'

test_case "exec: arguments that are not UTF-8 run as given, events stay valid JSON, an ask falls back" '
  expect_exit 0 "$AGOR" approvals set --security full --ask off
  name=$(printf "f\377")
  touch "$name"
  expect_exit 0 "$AGOR" approvals exec -- ls "$name"
  cmp -s out <(printf "f\377\n") || fail "output altered"
  head -n1 err > started
  expect_json started argv.1 "$(printf "f\357\277\275")"
  sed -n 2p err > finished
  expect_json finished output "$(printf "f\357\277\275")"
  expect_exit 0 "$AGOR" approvals set --ask always --ask-fallback deny
  start_server
  expect_exit 126 "$AGOR" approvals exec -- ls "$name"
  expect_contains err "not valid UTF-8"
  stop_server
'

test_case "exec: output capped at 200000 bytes (head kept), events carry the last 20000 characters" '
  expect_exit 0 "$AGOR" approvals set --security full --ask off
  expect_exit 0 "$AGOR" approvals exec --events 3 -- seq 1 100000 3> events
  [ "$(wc -c < out)" -eq $((200000 + 16)) ] || fail "stdout is $(wc -c < out) bytes"
  head -c 6 out | grep -q "^1$" || fail "head not kept"
  tail -c 16 out | grep -q "^\.\.\. (truncated)$" || { tail -c 40 out; fail "no truncation marker"; }
  expect_empty err
  sed -n 2p events > finished
  "$PY" - finished <<PYEOF
import json, sys
o = json.load(open(sys.argv[1]))["output"]
assert o.startswith("... (truncated) "), o[:40]
assert len(o) == len("... (truncated) ") + 20000, len(o)
assert o.endswith("\n... (truncated)")
PYEOF
'

test_case "exec: --timeout kills the command and reports timedOut" '
  expect_exit 0 "$AGOR" approvals set --security full --ask off
  rc=0; "$AGOR" approvals exec --timeout 1 -- sleep 30 > out 2> err || rc=$?
  [ $rc -ne 0 ] || fail "exit 0"
  sed -n 2p err > finished
  expect_json finished timedOut true
  expect_json finished success false
'

test_case "no UI reachable: askFallback at once, never a hang" '
  expect_exit 0 "$AGOR" approvals set --security allowlist --ask on-miss --ask-fallback deny
  start=$(date +%s)
  expect_exit 126 "$AGOR" approvals exec --ask-timeout 60 -- id
  expect_contains err "\"reason\":\"approval-required\""
  expect_contains err "no approval"
  [ $(( $(date +%s) - start )) -le 3 ] || fail "took too long"
  expect_exit 0 "$AGOR" approvals set --ask-fallback full
  expect_exit 0 "$AGOR" approvals set --security full
  expect_exit 0 "$AGOR" approvals set --ask always
  expect_exit 0 "$AGOR" approvals exec --ask-timeout 60 -- id -u
  expect_contains out "$(id -u)"
  expect_contains err "allowed by askFallback"
  expect_exit 0 "$AGOR" approvals set --ask-fallback allowlist
  expect_exit 126 "$AGOR" approvals exec --ask-timeout 60 -- id -u
  expect_contains err "\"reason\":\"allowlist-miss\""
'

# ---- the socket ----------------------------------------------------------------------------------------------

test_case "socket: 0600 in a 0700 dir; bad HMAC, expired ts, replayed nonce, oversized, junk refused; still serving" '
  start_server
  expect_mode "$AGOR_HOME/approvals.sock" 600
  expect_mode "$AGOR_HOME" 700
  served
  expect_exit 1 "$AGOR" approvals serve < /dev/null
  expect_contains err "another server is already serving"
  served
  client request --bad-hmac > r; expect_contains r "\"BAD_HMAC\""; served
  client request --ts-offset -60 > r; expect_contains r "\"EXPIRED\""; served
  client request --ts-offset 60 > r; expect_contains r "\"EXPIRED\""; served
  client request --nonce nonce-0123456789abcdef --times 2 > r
  sed -n 1p r | grep -q "\"UNAVAILABLE\"" || { cat r; fail "first use refused"; }
  sed -n 2p r | grep -q "\"REPLAY\"" || { cat r; fail "replay accepted"; }
  served
  client oversized > r; expect_contains r "\"TOO_LARGE\""; served
  printf "not json\n" | "$PY" -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b\"nope\\n\"); print(s.recv(4096).decode())" "$AGOR_HOME/approvals.sock" > r
  expect_contains r "\"INVALID_REQUEST\""; served
  stop_server
  [ ! -e "$AGOR_HOME/approvals.sock" ] || fail "socket left behind"
'

test_case "socket: rate limited per uid, not per process: 25 forked children are limited like one peer" '
  start_server
  client flood 40 > r
  grep -q "\"RATE_LIMITED\"" r || { cat r; fail "never rate limited"; }
  [ "$(grep -c INVALID_REQUEST r)" -le 20 ] || fail "more than 20 requests processed"
  stop_server; start_server
  client forked-flood 25 > r   # issue 19 item 7: each connection from another pid
  grep -q "\"RATE_LIMITED\"" r || { cat r; fail "forked children were never rate limited"; }
  [ "$(grep -c INVALID_REQUEST r)" -le 20 ] || { cat r; fail "more than 20 requests processed"; }
  stop_server
'

test_case --needs root,setpriv "socket: a second uid is refused (no access to the socket; SO_PEERCRED when access is forced)" '
  start_server
  d="$T"; while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  chmod 755 "$HOME"
  nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" "$CLIENT" "$AGOR_HOME/approvals.sock" "$(token)" request; }
  nobody > r; expect_contains r "Permission denied"
  chmod 711 "$AGOR_HOME"; chmod 666 "$AGOR_HOME/approvals.sock"
  nobody > r; expect_contains r "\"UID_MISMATCH\""
  served
  stop_server
'

# ---- the UI, through tmux ------------------------------------------------------------------------------------

TMUX_UI='
  TM_NAME="agor-t0040-$$-$RANDOM" && TM="tmux -L $TM_NAME"
  $TM new-session -d -s ui -x 200 -y 60 "env AGOR_HOME=$AGOR_HOME HOME=$HOME PATH=$PATH $AGOR approvals serve; sleep 60"
  # the server stopped by its pid and its socket file removed (tmux leaves it): a server that stays fails the case
  trap "rc=\$?; tmux_stop \"\$(tmux_socket_of $TM_NAME)\" || rc=1; exit \$rc" EXIT
  pane() { $TM capture-pane -p -J -S -200 -t ui; }
  wait_pane() { for _ in $(seq 1 200); do pane | grep -qF -- "$1" && return 0; sleep 0.05; done; pane; fail "pane never showed: $1"; }
  prompts() { pane | grep -c "== approval request" || true; }
  wait_pane "serving on"
  ask_in_bg() { ( rc=0; "$AGOR" approvals exec --ask-timeout 20 -- "$@" > bg.out 2> bg.err || rc=$?; echo $rc > bg.rc ) & bg=$!; }
'
test_case --needs tmux "serve in tmux: allow once, allow always (next run needs no prompt), deny" '
  eval "$TMUX_UI"
  expect_exit 0 "$AGOR" approvals set --security allowlist --ask on-miss --ask-fallback deny
  ask_in_bg id -u; wait_pane "command: id -u"
  pane | grep -q "cwd:     $PWD" || { pane; fail "cwd not shown"; }
  pane | grep -q "agent:   default" || { pane; fail "agent not shown"; }
  $TM send-keys -t ui o Enter; wait $bg
  expect_eq "$(cat bg.rc)" 0; grep -qx "$(id -u)" bg.out
  wait_pane "-> allow-once"
  expect_exit 3 "$AGOR" approvals check -- id
  ask_in_bg sh -c "id -u && whoami"; wait_pane "command: sh -c '"'"'id -u && whoami'"'"'"
  $TM send-keys -t ui a Enter; wait $bg
  expect_eq "$(cat bg.rc)" 0
  wait_pane "recorded /usr/bin/id /usr/bin/whoami for agent default"
  expect_not_contains '"$F"' dash
  expect_json '"$F"' agents.default.allowlist.0.pattern /usr/bin/id
  n=$(prompts)
  expect_exit 0 "$AGOR" approvals exec --ask-timeout 2 -- id -u
  expect_exit 0 "$AGOR" approvals exec --ask-timeout 2 -- whoami
  expect_eq "$(prompts)" "$n"
  ask_in_bg touch denied-file; wait_pane "command: touch denied-file"
  $TM send-keys -t ui d Enter; wait $bg
  expect_eq "$(cat bg.rc)" 126
  grep -q "\"reason\":\"approval-required\"" bg.err
  grep -q "denied by the user" bg.err
  [ ! -e denied-file ]
'

test_case --needs tmux "serve in tmux: no answer in time is approval-timeout; allow-always on shell text refused is allow-once" '
  eval "$TMUX_UI"
  expect_exit 0 "$AGOR" approvals set --security allowlist --ask on-miss --ask-fallback deny
  start=$(date +%s)
  expect_exit 126 "$AGOR" approvals exec --ask-timeout 1 -- id
  expect_contains err "\"reason\":\"approval-timeout\""
  [ $(( $(date +%s) - start )) -le 4 ] || fail "took too long"
  wait_pane "withdrawn"
  echo "id" > script.sh
  ask_in_bg bash script.sh; wait_pane "command: bash script.sh"
  $TM send-keys -t ui a Enter; wait $bg
  expect_eq "$(cat bg.rc)" 0
  wait_pane "-> allow-once (allow-always not recorded"
  expect_not_contains '"$F"' bash
'

test_done
