#!/usr/bin/env bash
# t0020-net — lib/net against real clients: the npm `ws` package (plain and TLS), curl (POST /rpc, /healthz), floods of
# oversized and malformed messages that must leave the server serving, and a graceful SIGTERM. Uses build/*/net-echo.
. "$(dirname "$0")/../lib.sh"

NET_ECHO="$TEST_TOP/build/$AGOR_FLAVOR/net-echo"
WS_CLIENT="$TEST_TOP/test/helpers/ws-client.mjs"
export WS_MODULE_DIR="$TEST_TOP/build/test-tmp/node-ws" # node-ws: shared by both flavors, npm runs once

# start_echo ARGS… — runs net-echo on ./s.sock and a free TCP port: sets $port and $echo_pid; stopped when the body ends.
START='
  start_echo() {
    "$NET_ECHO" --unix "$PWD/s.sock" "$@" > echo.out 2> echo.err &
    echo_pid=$!
    trap "kill $echo_pid 2>/dev/null || true; wait $echo_pid 2>/dev/null || true" EXIT
    for i in $(seq 1 200); do grep -q "^ready" echo.out 2>/dev/null && break; sleep 0.05; done
    port=$(awk "/^port/ {print \$2}" echo.out)
    [ -n "$port" ] || { cat echo.err; fail "net-echo did not start"; }
  }
  stat_of() { curl -sS "http://127.0.0.1:$port/stats" > .stats && json_get .stats "$1"; }
  count_of() { grep -o -- "$1" "$2" | wc -l; }
  stop_echo() { # SIGTERM, exit 0, and nothing from the sanitizers (leaks included) in its log
    kill -TERM "$echo_pid"
    local rc=0; wait "$echo_pid" || rc=$?
    [ "$rc" -eq 0 ] || { cat echo.err; fail "net-echo exited $rc"; }
    ! grep -E "ERROR: (Address|Leak)Sanitizer|runtime error" echo.err || fail "sanitizer report in echo.err"
  }
'

test_case "net-echo is built for this flavor" '
  [ -x "$NET_ECHO" ] || fail "missing $NET_ECHO (make build/$AGOR_FLAVOR/net-echo)"
'

test_case --needs curl "curl: POST /rpc, 204, /healthz, 404, 405, keep-alive" "$START"'
  start_echo
  curl -sS -H "Content-Type: application/json" -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}" \
    "http://127.0.0.1:$port/rpc" > out
  expect_json out method x
  expect_eq "$(curl -s -o /dev/null -w "%{http_code}" -X POST --data-binary "" "http://127.0.0.1:$port/rpc")" 204
  expect_eq "$(curl -sS "http://127.0.0.1:$port/healthz")" ok
  expect_eq "$(curl -s -o /dev/null -w "%{http_code}" "http://127.0.0.1:$port/nope")" 404
  expect_eq "$(curl -s -o /dev/null -w "%{http_code}" "http://127.0.0.1:$port/rpc")" 405
  expect_eq "$(curl -s -o /dev/null -w "%{http_code}" "http://127.0.0.1:$port/ws")" 426
  before=$(stat_of connections_total)
  curl -sS -d "{\"k\":1}" "http://127.0.0.1:$port/rpc?[1-50]" > many
  expect_eq "$(count_of "{\"k\":1}" many)" 50
  expect_eq "$(( $(stat_of connections_total) - before ))" 2 # the 50 POSTs shared one connection
'

test_case --needs curl "curl: oversized bodies are answered and the connection kept" "$START"'
  start_echo --max-message 1000
  head -c 5000 /dev/zero | tr "\0" "x" > big
  curl -sS --data-binary @big "http://127.0.0.1:$port/rpc" > out
  expect_eq "$(cat out)" "{\"error\":\"oversize\"}"
  before=$(stat_of connections_total)
  curl -sS --data-binary @big "http://127.0.0.1:$port/rpc?[1-200]" > many
  expect_eq "$(count_of oversize many)" 200
  expect_eq "$(( $(stat_of connections_total) - before ))" 2
  expect_eq "$(stat_of oversize_refusals)" 201
'

test_case --needs node-ws "node ws: echo, unicode, 7/16/64-bit lengths, fragmentation, binary, ping, close code" "$START"'
  start_echo
  node "$WS_CLIENT" echo "ws://127.0.0.1:$port/ws" > out
  expect_contains out "echo ok"
  node "$WS_CLIENT" echo "ws://localhost:$port/ws" > out
  expect_contains out "echo ok"
'

test_case --needs node-ws,openssl "node ws over TLS with the test CA; an unknown CA is refused" "$START"'
  "$TEST_TOP/test/helpers/make-test-ca.sh" ca
  start_echo --tls-cert ca/server.crt --tls-key ca/server.key
  node "$WS_CLIENT" echo "wss://localhost:$port/ws" --ca ca/ca.crt > out
  expect_contains out "echo ok"
  node "$WS_CLIENT" refused "wss://localhost:$port/ws" > out
  expect_contains out "refused"
  if command -v curl >/dev/null; then
    expect_eq "$(curl -sS --cacert ca/ca.crt "https://localhost:$port/healthz")" ok
    curl -sS --cacert ca/ca.crt -d "{\"tls\":true}" "https://localhost:$port/rpc" > out
    expect_json out tls true
  fi
'

test_case --needs node-ws "a flood of oversized and malformed messages leaves the server serving" "$START"'
  start_echo --max-message 4096
  node "$WS_CLIENT" oversize "ws://127.0.0.1:$port/ws" 10000 5000 > out
  expect_contains out "oversize 10000"
  node "$WS_CLIENT" ndjson "$PWD/s.sock" 10000 5000 > out
  expect_contains out "ndjson 10000"
  node "$WS_CLIENT" garbage 127.0.0.1 "$port" 1000 > out
  expect_contains out "garbage 1000"
  if command -v curl >/dev/null; then
    head -c 5000 /dev/zero | tr "\0" "y" > big
    curl -sS --data-binary @big "http://127.0.0.1:$port/rpc?[1-1000]" > many
    expect_eq "$(count_of oversize many)" 1000
  fi
  node "$WS_CLIENT" echo "ws://127.0.0.1:$port/ws" --max 4096 > out
  expect_contains out "echo ok"
  expect_eq "$(curl -sS "http://127.0.0.1:$port/healthz")" ok
  curl -sS "http://127.0.0.1:$port/stats" > stats
  cat stats
  expect_json stats protocol_errors 1000
  [ "$(json_get stats oversize_refusals)" -ge 20000 ] || fail "oversize refusals not counted"
  expect_json stats connections_open 1
  stop_echo
'

test_case --needs node-ws "SIGTERM: WebSocket clients get 1001, the server exits 0 and removes its socket" "$START"'
  start_echo
  node "$WS_CLIENT" hold "ws://127.0.0.1:$port/ws" > hold.out &
  holder=$!
  for i in $(seq 1 100); do grep -q open hold.out 2>/dev/null && break; sleep 0.05; done
  [ -S s.sock ] || fail "no socket"
  stop_echo
  wait "$holder"
  expect_contains hold.out "closed 1001"
  [ ! -e s.sock ] || fail "socket left behind"
'

test_done
