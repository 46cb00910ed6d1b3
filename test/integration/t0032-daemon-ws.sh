#!/usr/bin/env bash
# t0032-daemon-ws — the daemon's TCP transports with real clients: JSON-RPC over WebSocket (npm `ws`), over
# POST /rpc (curl), /healthz and /metrics, and the same over TLS with a test CA (daemon.tls_cert/tls_key).
# TCP callers carry no Unix identity: client methods need a user token presented with auth.token first.
. "$(dirname "$0")/../lib.sh"

export WS_MODULE_DIR="$TEST_TOP/build/test-tmp/node-ws"
file_needs curl,openssl,node-ws "daemon over WebSocket and HTTP"

SCENE='
  cat > client.mjs <<JS
import { createRequire } from "node:module";
import fs from "node:fs";
const WebSocket = createRequire(process.env.WS_MODULE_DIR + "/")("ws");
const [url, ca] = process.argv.slice(2);
const ws = new WebSocket(url, ca ? { ca: fs.readFileSync(ca) } : {});
const pending = new Map(); let id = 0;
ws.on("message", (m) => { const r = JSON.parse(m); pending.get(r.id)?.(r); });
const call = (method, params = {}) => new Promise((res) => { pending.set(++id, res); ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params })); });
ws.on("open", async () => {
  const out = {};
  out.ping = (await call("ping")).result;
  out.users = (await call("users.list")).error;
  out.executor = (await call("get_execution_context", { session_token: "x.y.z" })).error;
  console.log(JSON.stringify(out)); ws.close(); process.exit(0);
});
ws.on("error", (e) => { console.log(JSON.stringify({ error: e.code || e.message })); process.exit(0); });
JS
'

test_case "JSON-RPC over WebSocket with the npm ws client; TCP callers get no client methods" "$SCENE"'
  start_daemon
  node client.mjs "ws://127.0.0.1:$port/ws" > r
  expect_json r ping.pong true
  expect_json r users.data.code AUTH_FAILED
  expect_json r executor.data.code AUTH_FAILED
  stop_daemon
'

test_case "user tokens over TCP: made on the Unix socket, presented with auth.token, revocable, kept across restarts" "$SCENE"'
  start_daemon
  "$AGOR" user token --label laptop > token 2> token.err
  TOKEN=$(cat token); jti=$(sed -n "s/^token \([0-9a-f]*\) .*/\1/p" token.err)
  [ -n "$TOKEN" ] && [ -n "$jti" ] || { cat token.err; fail "no token"; }
  expect_exit 1 "$AGOR" user list --url "http://127.0.0.1:$port/rpc"
  expect_contains err "auth.token"
  expect_exit 0 "$AGOR" user list --url "http://127.0.0.1:$port/rpc" --token "$TOKEN"
  expect_contains out admin
  AGOR_TOKEN="$TOKEN" expect_exit 0 "$AGOR" user list --url "ws://127.0.0.1:$port/ws" --json
  expect_contains out admin
  expect_exit 1 "$AGOR" user token --url "ws://127.0.0.1:$port/ws" --token "$TOKEN"
  expect_contains err "never over TCP"
  ! grep -rq "$TOKEN" "$AGOR_HOME/agor.db" "$AGOR_HOME/agor.db-wal" 2>/dev/null || fail "the token value is stored"
  exp=$(( $(date +%s) + 3600 ))
  python3 "$TEST_TOP/test/helpers/forge-jwt.py" /dev/null "{\"iss\":\"agor\",\"aud\":\"agor-client\",\"sub\":\"x\",\"jti\":\"$jti\",\"iat\":1,\"exp\":$exp}" > forged
  python3 "$TEST_TOP/test/helpers/forge-jwt.py" "$AGOR_HOME/jwt.secret" "{\"iss\":\"agor\",\"aud\":\"agor-client\",\"sub\":\"x\",\"jti\":\"$jti\",\"iat\":1,\"exp\":$exp}" none > none
  python3 "$TEST_TOP/test/helpers/forge-jwt.py" "$AGOR_HOME/jwt.secret" "{\"iss\":\"agor\",\"aud\":\"agor-executor\",\"sub\":\"x\",\"sid\":\"s\",\"tid\":\"t\",\"jti\":\"$jti\",\"iat\":1,\"exp\":$exp}" > wrong-aud
  for bad in forged none wrong-aud; do
    expect_exit 1 "$AGOR" user list --url "http://127.0.0.1:$port/rpc" --token "$(cat $bad)"
    expect_contains err AUTH_FAILED
  done
  stop_daemon; start_daemon
  expect_exit 0 "$AGOR" user list --url "http://127.0.0.1:$port/rpc" --token "$TOKEN"
  cat > revoke.mjs <<JS
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
const WebSocket = createRequire(process.env.WS_MODULE_DIR + "/")("ws");
const [url, token, agor, jti] = process.argv.slice(2);
const ws = new WebSocket(url);
const pending = new Map(); let id = 0;
ws.on("message", (m) => { const r = JSON.parse(m); pending.get(r.id)?.(r); });
const call = (method, params = {}) => new Promise((res) => { pending.set(++id, res); ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params })); });
ws.on("open", async () => {
  const out = {};
  out.auth = (await call("auth.token", { token })).result;
  out.before = (await call("users.list")).result?.length;
  execFileSync(agor, ["user", "revoke-token", jti]);
  out.after = (await call("users.list")).error?.data?.code;
  console.log(JSON.stringify(out)); ws.close(); process.exit(0);
});
JS
  node revoke.mjs "ws://127.0.0.1:$port/ws" "$TOKEN" "$AGOR" "$jti" > r
  expect_json r auth.is_admin true
  expect_json r before 1
  expect_json r after AUTH_FAILED
  stop_daemon; start_daemon
  expect_exit 1 "$AGOR" user list --url "http://127.0.0.1:$port/rpc" --token "$TOKEN"
  expect_contains err "revoked, expired or unknown"
  stop_daemon
'

test_case "events reach their owner and admins only: another user sees no task events of the owner" "$SCENE"'
  start_daemon
  expect_exit 0 "$AGOR" user create bob --json
  bob=$(json_get out id)
  expect_exit 1 "$AGOR" user token --for nobody-here
  BOB_TOKEN=$("$AGOR" user token --for bob 2>/dev/null)
  cat > events.mjs <<JS
import { createRequire } from "node:module";
const WebSocket = createRequire(process.env.WS_MODULE_DIR + "/")("ws");
const [url, token] = process.argv.slice(2);
const ws = new WebSocket(url); const seen = [];
ws.on("open", () => { ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "auth.token", params: { token } }));
                      ws.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "events.subscribe" })); });
ws.on("message", (m) => { const r = JSON.parse(m); if (r.id === 2) console.error("subscribed"); if (r.method === "event") seen.push(r.params.type); });
setTimeout(() => { console.log(JSON.stringify(seen)); process.exit(0); }, 4000);
JS
  node events.mjs "ws://127.0.0.1:$port/ws" "$BOB_TOKEN" > bob.events 2> bob.err &
  bob_pid=$!
  python3 "$TEST_TOP/test/helpers/events.py" "$AGOR_HOME/run/agor.sock" owner.subscribed 4.5 > owner.events &
  owner_pid=$!
  for i in $(seq 1 100); do grep -q subscribed bob.err && [ -e owner.subscribed ] && break; sleep 0.05; done
  git init -q -b main src && git -C src -c user.name=t -c user.email=t@t commit -q --allow-empty -m one
  "$AGOR" repo clone "$PWD/does-not-exist" > /dev/null 2>&1 || true
  "$AGOR" repo clone "$PWD/src" > /dev/null
  wait $bob_pid; wait $owner_pid
  grep -q "task.updated" owner.events || { cat owner.events; fail "the owner saw no task events"; }
  expect_contains bob.events "repo.created"
  expect_not_contains bob.events "task.updated"
  stop_daemon
'

test_case "POST /rpc, batches, /healthz and /metrics over HTTP" "$SCENE"'
  start_daemon
  curl -sS -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}" "http://127.0.0.1:$port/rpc" > r
  expect_json r result.pong true
  curl -sS -d "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}]" "http://127.0.0.1:$port/rpc" > r
  expect_json r 1.error.code -32601
  code=$(curl -sS -o /dev/null -w "%{http_code}" -d "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}" "http://127.0.0.1:$port/rpc")
  [ "$code" = 204 ] || fail "a notification got HTTP $code"
  curl -sS "http://127.0.0.1:$port/healthz" > r && expect_json r status ok
  curl -sS "http://127.0.0.1:$port/metrics" > m
  grep -q "^agor_connections_total [0-9]" m && grep -q "^# TYPE agor_tasks_running gauge" m
  stop_daemon
'

test_case "HTTPS and WSS with daemon.tls_cert/tls_key; an unknown CA is refused by the client" "$SCENE"'
  "$TEST_TOP/test/helpers/make-test-ca.sh" ca
  start_daemon --set daemon.tls_cert="$PWD/ca/server.crt" --set daemon.tls_key="$PWD/ca/server.key"
  grep -q "https://" daemon.log
  curl -sS --cacert ca/ca.crt -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}" "https://localhost:$port/rpc" > r
  expect_json r result.pong true
  node client.mjs "wss://localhost:$port/ws" ca/ca.crt > r
  expect_json r ping.pong true
  node client.mjs "wss://localhost:$port/ws" > r
  json_get r error
  ! curl -sS -d "{}" "https://localhost:$port/rpc" 2>/dev/null || fail "curl trusted an unknown CA"
  stop_daemon
'

test_case "a half TLS configuration is refused at start" "$SCENE"'
  expect_exit 1 "$AGOR" daemon --foreground --port 0 --set daemon.tls_cert=/nonexistent.pem
  expect_contains err "go together"
'

test_done
