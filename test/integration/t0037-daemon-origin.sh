#!/usr/bin/env bash
# t0037-daemon-origin — what a hostile web page can do to a daemon it can reach: nothing. A foreign Origin gets 403 on
# the WebSocket upgrades (/ws, /terminal) and on POST /rpc; the daemon's own origins, daemon.allowed_origins and
# clients sending no Origin are served; a browser without a user token files no node.pair; node.pair floods are capped.
. "$(dirname "$0")/../lib.sh"

file_needs curl "Origin checks"

SCENE='
  PING="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"
  ws() { python3 "$TEST_TOP/test/helpers/ws-rpc.py" "$@"; }
  # upgrade ORIGIN PATH — "101" when the WebSocket opened (and answered a ping), else the refusal
  upgrade() {
    local o=(); [ -n "$1" ] && o=(--origin "$1")
    if ws "${o[@]}" --path "$2" 127.0.0.1 "$port" "$PING" > up.out 2> up.err; then
      grep -q pong up.out && echo 101 || echo "no pong: $(cat up.out)"
    else sed -n "s/^no upgrade: HTTP\/1.1 \([0-9]*\).*/\1/p" up.err; fi
  }
  # post ORIGIN — the HTTP status of POST /rpc (ping) with that Origin (none when empty), as a page would send it
  post() {
    local o=(); [ -n "$1" ] && o=(-H "Origin: $1")
    curl -sS -o post.out -w "%{http_code}" "${o[@]}" -H "Content-Type: text/plain" -d "$PING" "http://127.0.0.1:$port/rpc"
  }
  pair_msg() { echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"node.pair\",\"params\":{\"displayName\":\"$1\",\"tokenSha256\":\"$(printf %064d 0)\"}}"; }
  pending() { rpc nodes.list | python3 -c "import json,sys; print(sum(n[\"status\"] == \"pending\" for n in json.load(sys.stdin)[\"result\"]))"; }
'

test_case "a foreign Origin gets 403 on /ws, /terminal and POST /rpc; the daemon's own origins and no Origin are served" "$SCENE"'
  start_daemon
  for evil in http://evil.example "http://evil.example:$port" null "http://127.0.0.1:$((port == 65535 ? 1 : port + 1))" \
              "https://127.0.0.1:$port" "http://127.0.0.1.evil.example:$port" "http://user@127.0.0.1:$port" \
              "http://127.0.0.1:$port/path" "http://LOCALHOST:$port x"; do
    expect_eq "$(upgrade "$evil" /ws)" 403
    expect_eq "$(upgrade "$evil" /terminal)" 403
    expect_eq "$(post "$evil")" 403
    ! grep -q pong post.out || fail "POST /rpc with Origin $evil was answered"
  done
  for own in "http://127.0.0.1:$port" "http://localhost:$port" "http://LocalHost:$port" "http://[::1]:$port" ""; do
    expect_eq "$(upgrade "$own" /ws)" 101
    expect_eq "$(post "$own")" 200
    expect_contains post.out "\"pong\":true"
  done
  expect_eq "$(upgrade "http://127.0.0.1:$port" /terminal)" 101
  curl -sS "http://127.0.0.1:$port/metrics" > m
  awk "/^agor_origin_refusals_total / { exit !(\$2 >= 27) }" m || { cat m; fail "origin refusals are not counted"; }
  stop_daemon
'

test_case "daemon.allowed_origins adds origins (canonical, any case); a malformed entry is refused at start naming the key" "$SCENE"'
  start_daemon --set "daemon.allowed_origins=https://Agor.Example.com, http://10.0.0.5:8080"
  expect_eq "$(upgrade https://agor.example.com /ws)" 101
  expect_eq "$(upgrade https://agor.example.com:443 /terminal)" 101
  expect_eq "$(post http://10.0.0.5:8080)" 200
  expect_eq "$(post http://10.0.0.5:8081)" 403
  expect_eq "$(upgrade "http://127.0.0.1:$port" /ws)" 101
  stop_daemon
  expect_exit 2 "$AGOR" daemon --foreground --port 0 --set "daemon.allowed_origins=https://a.example/path"
  expect_contains err "daemon.allowed_origins"
'

test_case "a browser without a user token cannot file node.pair; a client sending no Origin can, and so can a browser with a token" "$SCENE"'
  start_daemon
  ws --origin "http://127.0.0.1:$port" 127.0.0.1 "$port" "$(pair_msg from-a-page)" > r
  expect_json r error.data.code PERMISSION_DENIED
  expect_contains r "user token"
  expect_eq "$(pending)" 0
  ws 127.0.0.1 "$port" "$(pair_msg real-node)" > r
  expect_json r result.status pending
  token=$("$AGOR" user token 2> /dev/null)
  ws --origin "http://127.0.0.1:$port" 127.0.0.1 "$port" "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"auth.token\",\"params\":{\"token\":\"$token\"}}" "$(pair_msg by-an-admin)" > r
  sed -n 2p r > r2; expect_json r2 result.status pending
  expect_eq "$(pending)" 2
  stop_daemon
'

test_case "node.pair floods are capped: pending requests per address, calls per minute per address; another address still pairs" "$SCENE"'
  start_daemon
  for i in $(seq 1 30); do ws 127.0.0.1 "$port" "$(pair_msg flood-$i)"; done > flood
  ok=$(grep -c "\"pending\"" flood || true)
  echo "MEASURED $ok of 30 node.pair calls from one address accepted"
  [ "$ok" -le 4 ] || fail "$ok pairing requests from one address are pending"
  grep -q "pending pairing requests from 127.0.0.1" flood || { head -n 8 flood; fail "no refusal for the pending cap"; }
  grep -q "per minute" flood || { tail -n 5 flood; fail "no refusal for the rate"; }
  [ "$(pending)" -le 4 ] || fail "$(pending) pending"
  ws --source 127.0.0.2 127.0.0.1 "$port" "$(pair_msg other-address)" > r
  expect_json r result.status pending
  stop_daemon
'

test_done
