#!/usr/bin/env bash
# t0036-daemon-limits — a daemon that a port scan cannot stall: the open-file limit raised at start (or the TCP
# cap lowered and said), descriptors kept for the Unix socket and executors, per-address and unauthenticated caps,
# unauthenticated connections that complete nothing closed, refused calls audited in counted rows, the WAL and the
# database bounded. Every flood comes from a local helper to 127.0.0.0/8 only.
. "$(dirname "$0")/../lib.sh"

SCENE='
  flood_pid=
  # measured TEXT — a number worth reading: in the case log and in build/test-tmp/t0036-daemon-limits-FLAVOR.measured
  measured() { echo "MEASURED $*" | tee -a "$TEST_TOP/build/test-tmp/$TEST_NAME-$AGOR_FLAVOR.measured"; }
  scene_cleanup() { stop_flood; }   # a failed case leaves no flood behind
  stop_flood() { if [ -n "$flood_pid" ]; then kill $flood_pid 2>/dev/null || true; wait $flood_pid 2>/dev/null || true; flood_pid=; fi; }
  # flood COUNT [conn-flood.py flags…] — holds COUNT idle connections in the background; their summary in flood.json
  flood() {
    python3 "$TEST_TOP/test/helpers/conn-flood.py" "$port" "$@" > flood.json &
    flood_pid=$!
    for i in $(seq 1 900); do [ -s flood.json ] && break; sleep 0.1; done
    [ -s flood.json ] || fail "the flood helper reported nothing"
    cat flood.json
  }
  # unix_ping_fast LABEL — a Unix-socket ping answers; the time is printed, and must be under 1 s (the aim is 50 ms)
  unix_ping_fast() {
    ms=$(python3 "$TEST_TOP/test/helpers/ping-time.py" "$AGOR_HOME/run/agor.sock" 10) || { tail daemon.log; fail "no Unix ping: $ms"; }
    measured "$1: Unix-socket ping answered in $ms ms"
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 1000 else 1)" "$ms" || fail "the Unix ping took $ms ms"
  }
  clone_works() {
    rc=0; timeout 60 "$AGOR" repo clone "$PWD/src" --json > clone.out 2> clone.err || rc=$?
    [ $rc -eq 0 ] || { cat clone.out clone.err; tail -n 20 daemon.log; fail "the clone failed (exit $rc)"; }
    json_get clone.out repo.id > /dev/null
  }
  soft_nofile() { awk "/Max open files/ {print \$4}" /proc/$daemon_pid/limits; }
'

test_case "2,000 idle connections from 20 addresses under a soft open-file limit of 1024: the limit is raised, a Unix ping is fast, a clone runs" "$SCENE"'
  make_source_repo src
  DAEMON_ULIMIT="-Sn 1024" start_daemon
  [ "$(soft_nofile)" -ge 5120 ] || { cat daemon.log; fail "the soft open-file limit is $(soft_nofile)"; }
  grep -q "open-file limit" daemon.log || { cat daemon.log; fail "the raised limit is not logged"; }
  flood 2000 --ws --sources 20
  unix_ping_fast "2,000 idle connections, default caps"
  clone_works
  unix_ping_fast "after the clone"
  stop_flood; stop_daemon
'

test_case "2,000 idle WebSocket connections held open (caps lifted): all upgraded, a Unix ping is fast, a clone runs" "$SCENE"'
  make_source_repo src
  DAEMON_ULIMIT="-Sn 1024" start_daemon --set daemon.max_connections_per_ip=0 --set daemon.max_unauthenticated=0
  flood 2000 --ws
  expect_json flood.json upgraded 2000
  unix_ping_fast "2,000 upgraded idle WebSockets"
  clone_works
  curl -sS "http://127.0.0.1:$port/metrics" > m
  awk "/^agor_connections_open / { exit !(\$2 >= 2000) }" m || { cat m; fail "/metrics does not count the connections"; }
  stop_flood; stop_daemon
'

test_case "a hard open-file limit of 1024: TCP connections capped below it and the log says so; the Unix socket and executors keep working" "$SCENE"'
  make_source_repo src
  DAEMON_ULIMIT="-n 1024" start_daemon --set daemon.max_connections_per_ip=0 --set daemon.max_unauthenticated=0
  grep -q "serving at most [0-9]* TCP connections" daemon.log || { cat daemon.log; fail "the lowered cap is not logged"; }
  flood 2000 --ws
  up=$(json_get flood.json upgraded)
  [ "$up" -ge 100 ] && [ "$up" -le 900 ] || fail "$up connections upgraded under a limit of 1024"
  unix_ping_fast "hard limit 1024, $up TCP connections held"
  clone_works
  python3 "$TEST_TOP/test/helpers/ping-time.py" "$AGOR_HOME/run/agor.sock" 10 > /dev/null
  grep -q "No file descriptors\|Too many open files" daemon.log && { grep -m3 "descriptors\|open files" daemon.log; fail "the daemon ran out of descriptors"; }
  stop_flood; stop_daemon
'

test_case "per-address cap; an unauthenticated WebSocket that completes nothing is closed (slowloris), an authenticated one stays" "$SCENE"'
  start_daemon
  flood 300 --ws
  up=$(json_get flood.json upgraded)
  [ "$up" -eq 256 ] || fail "$up connections from one address upgraded (daemon.max_connections_per_ip is 256)"
  stop_flood
  token=$("$AGOR" user token 2> /dev/null)
  python3 - "$port" "$token" > slowloris.out <<"PY"
import base64, json, os, select, socket, struct, sys, time
port, token = int(sys.argv[1]), sys.argv[2]
def ws():
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (port, base64.b64encode(os.urandom(16)).decode())).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert b" 101 " in head, head
    return s
def frame(text):
    data, mask = text.encode(), os.urandom(4)
    return bytes([0x81, 0x80 | len(data)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))
def closed_within(s, seconds):  # the server closed s (EOF or reset) within seconds
    end = time.monotonic() + seconds
    while True:
        if not select.select([s], [], [], max(0.0, end - time.monotonic()))[0]:
            return False
        try:
            if not s.recv(4096):
                return True
        except OSError:
            return True
idle, drip, authed = ws(), ws(), ws()
msg = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "auth.token", "params": {"token": token}})
authed.sendall(bytes([0x81, 0xfe]) + struct.pack(">H", len(msg)) + b"\0\0\0\0" + msg.encode())
reply = authed.recv(65536)
assert b"user_id" in reply, reply
half = frame("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}")[:-1]  # never completes
t0 = time.monotonic()
idle_closed = drip_closed = None
for b in half:  # one byte every half second to the dripping one, until both are closed
    now = time.monotonic() - t0
    if drip_closed is None:
        try:
            drip.send(bytes([b]))
        except OSError:
            drip_closed = now
    if drip_closed is None and closed_within(drip, 0):
        drip_closed = now
    if idle_closed is None and closed_within(idle, 0):
        idle_closed = now
    if (idle_closed is not None and drip_closed is not None) or now > 16:
        break
    time.sleep(0.5)
assert idle_closed is not None, "an idle unauthenticated WebSocket was not closed"
assert drip_closed is not None, "a WebSocket dripping an unfinished frame was not closed"
assert not closed_within(authed, 1), "the authenticated WebSocket was closed"
authed.sendall(frame("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}"))
authed.settimeout(5)
assert b"pong" in authed.recv(65536)
print("unauthenticated WebSockets closed after %.1f s (idle) and %.1f s (dripping a frame); daemon.auth_timeout_ms is 10000"
      % (idle_closed, drip_closed))
PY
  measured "$(cat slowloris.out)"
  stop_flood; stop_daemon
'

test_case "a flood of 20,000 refused heartbeats and 2,000 distinct refusals: the database grows < 1 MB, the audit counts them, the WAL stays small" "$SCENE"'
  start_daemon
  rpc ping > /dev/null
  sleep 0.5; before=$(stat -c %s "$AGOR_HOME/agor.db")
  python3 "$TEST_TOP/test/helpers/rpc-flood.py" "$port" 20000 "{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"heartbeat\",\"params\":{\"session_token\":\"x.y.z\"}}" > flood1
  cat flood1; expect_json flood1 errors.AUTH_FAILED 20000
  python3 "$TEST_TOP/test/helpers/rpc-flood.py" "$port" 2000 "{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"node.hello\",\"params\":{\"nodeId\":\"n{i}\",\"token\":\"t\"}}" > flood2
  cat flood2; expect_json flood2 errors.AUTH_FAILED 2000
  sleep 1 # checkpoints run every 200 ms: the rows are in agor.db now
  after=$(stat -c %s "$AGOR_HOME/agor.db"); wal=$(stat -c %s "$AGOR_HOME/agor.db-wal" 2>/dev/null || echo 0)
  measured "agor.db grew by $((after - before)) bytes for 22,000 refused calls; the WAL is $wal bytes"
  [ $((after - before)) -lt 1048576 ] || fail "the database grew by $((after - before)) bytes"
  [ "$wal" -lt 4194304 ] || fail "the WAL is $wal bytes"
  rpc audit.list > audit
  python3 - audit > rows.out <<"PY"
import json, sys
rows = json.load(open(sys.argv[1]))["result"]
rows = rows if isinstance(rows, list) else rows.get("entries", rows.get("items", []))
beats = [r for r in rows if r["action"] == "heartbeat" and r["outcome"] == "refused"]
assert 1 <= len(beats) <= 3, beats
counted = sum(json.loads(r["details"]).get("repeated", 0) for r in beats)
assert counted + 1 == 20000, (counted, beats)
hellos = [r for r in rows if r["action"] == "node.hello" and r["outcome"] == "refused"]
suppressed = [r for r in rows if r["action"] == "audit.refusals_suppressed"]
assert len(hellos) <= 200, len(hellos)
assert suppressed and sum(json.loads(r["details"])["count"] for r in suppressed) + len(hellos) >= 2000, (len(hellos), suppressed)
print("%d audit rows for 22,000 refusals" % (len(beats) + len(hellos) + len(suppressed)))
PY
  measured "$(cat rows.out)"
  expect_exit 0 "$AGOR" audit verify
  stop_flood; stop_daemon
'

test_case "past daemon.db_size_alarm_mb the log says so and /metrics shows the alarm and the sizes" "$SCENE"'
  start_daemon
  stop_flood; stop_daemon
  python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute(\"CREATE TABLE pad (x BLOB)\"); db.execute(\"INSERT INTO pad VALUES (zeroblob(3000000))\"); db.commit()" "$AGOR_HOME/agor.db"
  start_daemon --set daemon.db_size_alarm_mb=1
  for i in $(seq 1 100); do grep -q "db_size_alarm_mb" daemon.log && break; sleep 0.1; done
  grep "db_size_alarm_mb" daemon.log || { cat daemon.log; fail "no size alarm in the log"; }
  curl -sS "http://127.0.0.1:$port/metrics" > m
  grep -q "^agor_db_size_alarm 1$" m || { cat m; fail "no alarm on /metrics"; }
  awk "/^agor_db_bytes / { exit !(\$2 >= 3000000) }" m || { cat m; fail "agor_db_bytes"; }
  grep -q "^agor_db_wal_bytes [0-9]" m || { cat m; fail "agor_db_wal_bytes"; }
  stop_flood; stop_daemon
'

test_case "the systemd unit gives the daemon the open-file limit its defaults need" '
  lim=$(sed -n "s/^LimitNOFILE=//p" "$TEST_TOP/dist/systemd/agor-daemon.service")
  [ -n "$lim" ] && [ "$lim" -ge 5120 ] || fail "LimitNOFILE is \"$lim\" (daemon.max_connections 4096 + daemon.fd_reserve 1024)"
'

test_done
