#!/usr/bin/env bash
# t0031-daemon-tokens — session tokens attacked (docs/rpc.md#executor-methods): a token works only for its own running task;
# forged, alg:none, expired, unknown, foreign-task and replayed-after-completion tokens get AUTH_FAILED,
# revocation survives a restart, API keys are sealed at rest, returned only to a live task and rate limited.
. "$(dirname "$0")/../lib.sh"

# The executor here is a template that records its payload and keeps the task running.
SCENE='
  code_of() { python3 -c "import json,sys; r=json.loads(sys.argv[1]); print(r.get(\"error\",{}).get(\"data\",{}).get(\"code\",\"OK\"))" "$1"; }
  printf "execution:\n  executor_command_template: \"cat > %s/payload.json; sleep 60\"\n  executor_pool:\n    max_executors: ${MAX_EXECUTORS:-10}\n" "$PWD" > config.yaml
  chmod 600 config.yaml
  mkdir -p "$AGOR_HOME" && chmod 700 "$AGOR_HOME"
  start_daemon --config "$T/config.yaml"
  owner=$(rpc users.list | python3 -c "import json,sys; print(json.load(sys.stdin)[\"result\"][0][\"id\"])")
  python3 - "$AGOR_HOME/agor.db" "$owner" <<PY
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); o = sys.argv[2]
db.execute("INSERT INTO repos (id, url, path, created_by, created_at) VALUES (\"r1\", \"/src\", \"/d/repos/o/r.git\", ?, 0)", (o,))
db.execute("INSERT INTO worktrees (id, repo_id, name, path, created_by, created_at) VALUES (\"w1\", \"r1\", \"w\", \"/d/worktrees/o/r/w\", ?, 0)", (o,))
db.commit()
PY
  session=$(rpc sessions.create "{\"worktree_id\":\"w1\",\"tool\":\"claude-code\"}" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"result\"][\"id\"])")
  prompt_task() {
    rm -f payload.json
    task=$(rpc sessions.prompt "{\"session_id\":\"$session\",\"prompt\":\"hello\"}" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"result\"][\"task_id\"])")
    for i in $(seq 1 100); do [ -s payload.json ] && break; sleep 0.05; done
    token=$(json_get payload.json sessionToken)
  }
  ctx() { rpc get_execution_context "{\"session_token\":\"$1\"}"; }
  # burst N PAD: N report_message lines in one write (data {i} plus PAD bytes), then a heartbeat answered {}
  burst() {
    python3 - "$AGOR_HOME/run/agor.sock" "$token" "$task" "$1" "$2" <<PY
import json, socket, sys
path, token, task, n, pad = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
s = socket.socket(socket.AF_UNIX); s.connect(path); f = s.makefile("rb")
data = lambda i: {"i": i, "pad": "x" * pad} if pad else {"i": i}
line = lambda i: json.dumps({"jsonrpc": "2.0", "method": "report_message", "params": {"session_token": token, "task_id": task, "message_type": "assistant", "data": data(i)}})
s.sendall(("\n".join(line(i) for i in range(n)) + "\n" + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "heartbeat", "params": {"session_token": token}}) + "\n").encode())
reply = json.loads(f.readline()); assert reply.get("result") == {}, reply
PY
  }
'

test_case "the token reaches the executor on stdin and works for its own running task only" "$SCENE"'
  prompt_task
  expect_json payload.json params.taskId "$task"
  expect_json payload.json command prompt
  reply=$(ctx "$token"); [ "$(code_of "$reply")" = OK ] || fail "$reply"
  echo "$reply" > r && expect_json r result.task_id "$task" && expect_json r result.prompt hello
  first=$task first_token=$token
  prompt_task
  reply=$(rpc report_message "{\"session_token\":\"$first_token\",\"task_id\":\"$task\",\"message_type\":\"text\",\"data\":{}}")
  echo "$reply" | grep -q "another task" || fail "foreign task accepted: $reply"
  [ "$(code_of "$reply")" = AUTH_FAILED ]
  stop_daemon
'

test_case "forged signature, alg none, expired, unknown jti and garbage tokens are AUTH_FAILED" "$SCENE"'
  prompt_task
  forged="${token%?}$( [ "${token: -1}" = A ] && echo B || echo A )"
  [ "$(code_of "$(ctx "$forged")")" = AUTH_FAILED ]
  now=$(date +%s)
  claims="{\"iss\":\"agor\",\"aud\":\"agor-executor\",\"sub\":\"$owner\",\"sid\":\"$session\",\"tid\":\"$task\",\"jti\":\"$(json_get payload.json sessionToken | cut -d. -f2 | python3 -c "import base64,json,sys; s=sys.stdin.read().strip(); print(json.loads(base64.urlsafe_b64decode(s+\"=\"*(-len(s)%4)))[\"jti\"])")\",\"iat\":$((now-100)),\"exp\":$((now-10))}"
  [ "$(code_of "$(ctx "$(python3 "$TEST_TOP/test/helpers/forge-jwt.py" "$AGOR_HOME/jwt.secret" "$claims")")")" = AUTH_FAILED ]
  [ "$(code_of "$(ctx "$(python3 "$TEST_TOP/test/helpers/forge-jwt.py" "$AGOR_HOME/jwt.secret" "$claims" none)")")" = AUTH_FAILED ]
  unknown="{\"iss\":\"agor\",\"aud\":\"agor-executor\",\"sub\":\"$owner\",\"sid\":\"$session\",\"tid\":\"$task\",\"jti\":\"00112233445566778899aabbccddeeff\",\"iat\":$now,\"exp\":$((now+600))}"
  reply=$(ctx "$(python3 "$TEST_TOP/test/helpers/forge-jwt.py" "$AGOR_HOME/jwt.secret" "$unknown")")
  echo "$reply" | grep -q "unknown token" || fail "$reply"
  [ "$(code_of "$(ctx "not.a.token")")" = AUTH_FAILED ]
  [ "$(code_of "$(ctx "")")" = AUTH_FAILED ]
  [ "$(code_of "$(ctx "$token")")" = OK ] || fail "the genuine token stopped working"
  stop_daemon
'

test_case "a remembered token check never outlives a write: a burst streams, a revocation in the database is seen at once" "$SCENE"'
  prompt_task
  burst 2000 0
  python3 - "$AGOR_HOME/agor.db" "$task" <<PY
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("SELECT count(*) FROM messages WHERE task_id = ?", (sys.argv[2],)).fetchone()[0] == 2000
assert db.execute("SELECT uses FROM tokens WHERE task_id = ?", (sys.argv[2],)).fetchone()[0] >= 2001
db.execute("UPDATE tokens SET revoked_at = 1 WHERE task_id = ?", (sys.argv[2],)); db.commit()
PY
  reply=$(ctx "$token"); echo "$reply" | grep -q revoked || fail "a token revoked in the database still works: $reply"
  stop_daemon
'

test_case "checkpoints run in the background: soon after a burst the database file alone holds every row" "$SCENE"'
  prompt_task
  burst 20000 300
  # Idle now: within a checkpoint interval (0.2 s) every frame of the WAL is copied into agor.db. A checkpoint
  # on commit every 1,000 pages (SQLite on its own) would leave the last frames in the WAL only.
  sleep 1.5
  cp "$AGOR_HOME/agor.db" alone.db
  python3 - alone.db "$task" <<PY
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM messages WHERE task_id = ?", (sys.argv[2],)).fetchone()[0]
assert n == 20000, f"the database file alone holds {n} of 20000 rows"
PY
  stop_daemon
'

test_case "report_message lines read fast and lines read by jansson store the same data; a revoked token streams nothing" "$SCENE"'
  prompt_task
  python3 - "$AGOR_HOME/run/agor.sock" "$token" "$task" "$AGOR_HOME/agor.db" <<PY
import json, socket, sqlite3, sys
path, token, task, db_path = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX); s.connect(path); f = s.makefile("rb")
head = lambda: {"session_token": token, "task_id": task, "message_type": "assistant"}
datas = [{"text": "caf\u00e9 \"q\" \\\\ / \n\t\x01 \U0001f600", "n": -5, "ok": True, "none": None, "list": [[], {}, 0]},
         {"real": 1.5, "neg": -2.0, "quarter": 0.25, "long": 1234567890123456789}, "just a string", 7]
lines = []
for d in datas:
    p = head(); p["data"] = d
    lines.append(json.dumps({"jsonrpc": "2.0", "method": "report_message", "params": p}))                       # ensure_ascii, spaces
    lines.append(json.dumps({"params": p, "method": "report_message", "jsonrpc": "2.0"}, ensure_ascii=False, separators=(",", ":")))
# refused by both readers: a duplicate key inside data, a NUL escape; a foreign task
lines.append("{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"%s\",\"task_id\":\"%s\",\"message_type\":\"x\",\"data\":{\"a\":1,\"a\":2}}}" % (token, task))
lines.append("{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"%s\",\"task_id\":\"%s\",\"message_type\":\"x\",\"data\":\"\\\\u0000\"}}" % (token, task))
lines.append("{\"jsonrpc\":\"2.0\",\"method\":\"report_message\",\"params\":{\"session_token\":\"%s\",\"task_id\":\"other\",\"message_type\":\"x\",\"data\":1}}" % token)
s.sendall(("\n".join(lines) + "\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").encode())
replies = [f.readline() for _ in range(3)]   # two parse errors (jansson answers those, id null), then the pong
assert sum(b"parse error" in r for r in replies) == 2 and b"pong" in replies[2], replies
db = sqlite3.connect(db_path)
rows = [r[0] for r in db.execute("SELECT data FROM messages WHERE task_id = ? ORDER BY id", (task,))]
want = [json.dumps(d, ensure_ascii=False, separators=(",", ":")) for d in datas for _ in (0, 1)]
assert rows == want, (rows, want)
db.execute("UPDATE tokens SET revoked_at = 1 WHERE task_id = ?", (task,)); db.commit()
s.sendall(("\n".join(lines[:2]) + "\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n").encode())
assert b"pong" in f.readline()
n = db.execute("SELECT count(*) FROM messages WHERE task_id = ?", (task,)).fetchone()[0]
assert n == len(want), ("a revoked token still stores messages", n)
PY
  rpc audit.list > audit
  python3 - audit <<PY
import json, sys
rows = json.load(open(sys.argv[1]))["result"]
rows = rows if isinstance(rows, list) else rows.get("entries", rows.get("items", []))
reasons = [json.dumps(r) for r in rows if r.get("action") == "report_message" and r.get("outcome") == "refused"]
assert any("another task" in r for r in reasons), reasons
assert sum("revoked" in r for r in reasons) >= 2, reasons
PY
  stop_daemon
'

test_case "a token replayed after its task ended is refused, also after a daemon restart" "$SCENE"'
  prompt_task
  [ "$(code_of "$(rpc tasks.cancel "{\"id\":\"$task\"}")")" = OK ]
  for i in $(seq 1 100); do rpc tasks.get "{\"id\":\"$task\"}" | grep -q "\"status\":\"cancelled\"" && break; sleep 0.05; done
  reply=$(ctx "$token"); echo "$reply" | grep -q revoked || fail "$reply"
  stop_daemon
  start_daemon --config "$T/config.yaml"
  [ "$(code_of "$(ctx "$token")")" = AUTH_FAILED ]
  stop_daemon
'

test_case "API keys: sealed at rest, never listed, returned only to a live task, rate limited, audited without the value" "$SCENE"'
  [ "$(code_of "$(rpc api_keys.set "{\"service\":\"anthropic\",\"value\":\"sk-SECRET-VALUE-123\"}")")" = OK ]
  rpc api_keys.list > list && ! grep -q SECRET list
  ! grep -a -q "sk-SECRET-VALUE-123" "$AGOR_HOME/agor.db" "$AGOR_HOME"/agor.db-wal 2>/dev/null || fail "plaintext key in the database"
  prompt_task
  reply=$(rpc get_api_key "{\"session_token\":\"$token\",\"service\":\"anthropic\"}")
  echo "$reply" > r && expect_json r result.api_key sk-SECRET-VALUE-123
  for i in $(seq 1 25); do last=$(rpc get_api_key "{\"session_token\":\"$token\",\"service\":\"anthropic\"}"); done
  echo "$last" | grep -q "rate limited" || fail "no rate limit: $last"
  rpc audit.list > audit && ! grep -q SECRET-VALUE audit && grep -q get_api_key audit
  ! grep -q SECRET-VALUE daemon.log
  stop_daemon
'

test_case "max_executors bounds the executors in flight: the next task waits queued, then runs" "MAX_EXECUTORS=1; $SCENE"'
  prompt_task
  first=$task
  rm -f payload.json
  second=$(rpc sessions.prompt "{\"session_id\":\"$session\",\"prompt\":\"two\"}" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"result\"][\"task_id\"])")
  sleep 0.5
  rpc tasks.get "{\"id\":\"$second\"}" | grep -q "\"status\":\"queued\"" || fail "second task not queued"
  [ ! -e payload.json ] || fail "a second executor started"
  rpc tasks.cancel "{\"id\":\"$first\"}" > /dev/null
  for i in $(seq 1 100); do [ -s payload.json ] && break; sleep 0.05; done
  expect_json payload.json params.taskId "$second"
  rpc tasks.get "{\"id\":\"$second\"}" | grep -q "\"status\":\"running\"" || fail "second task did not start"
  stop_daemon
'

test_case "kill -9 of an executor ends its task failed with the reason, even with children left behind" "$SCENE"'
  prompt_task
  leader=$(pgrep -f "cat > $PWD/payload.json; sleep 60" | head -1)
  [ -n "$leader" ] || fail "no executor process"
  kill -9 "$leader"
  for i in $(seq 1 100); do rpc tasks.get "{\"id\":\"$task\"}" > t; grep -q "\"status\":\"failed\"" t && break; sleep 0.05; done
  grep -q "\"status\":\"failed\"" t || { cat t; fail "task not failed within 5 s"; }
  grep -q EXECUTOR_RESULT_MISSING t
  grep -q "exit status 137" t
  [ "$(code_of "$(ctx "$token")")" = AUTH_FAILED ] || fail "token still valid"
  stop_daemon
'

test_case "a subscriber that stops reading is dropped; another one gets every event; the daemon keeps serving" "$SCENE"'
  prompt_task
  python3 - "$AGOR_HOME/run/agor.sock" "$token" "$task" <<PY
import json, socket, sys, time
path, token, task = sys.argv[1:4]
def subscriber():
    s = socket.socket(socket.AF_UNIX); s.connect(path)
    s.sendall(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"events.subscribe\"}\n")
    return s
slow = subscriber()                      # never reads again
slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
import threading
fast = subscriber()
n = 30000
counted = {"got": 0}
def read_fast():                          # reads in big chunks, so it keeps up
    buf = b""
    while counted["got"] < n:
        chunk = fast.recv(1 << 20)
        if not chunk: return
        buf += chunk
        cut = buf.rfind(b"\n") + 1        # count complete lines only
        counted["got"] += buf[:cut].count(b"\"type\":\"message\"")
        buf = buf[cut:]
reader = threading.Thread(target=read_fast); reader.start()
sender = socket.socket(socket.AF_UNIX); sender.connect(path)
line = lambda i: (json.dumps({"jsonrpc": "2.0", "method": "report_message", "params": {"session_token": token, "task_id": task, "message_type": "assistant", "data": {"i": i, "pad": "x" * 200}}}) + "\n").encode()
sender.sendall(b"".join(line(i) for i in range(n)))
reader.join(60)
assert counted["got"] == n, f"the fast subscriber got {counted['got']} of {n}"
slow.setblocking(False)
dropped = False
try:
    while True:
        chunk = slow.recv(1 << 20)
        if not chunk: dropped = True; break
except BlockingIOError:
    pass
except ConnectionResetError:
    dropped = True
assert dropped, "the slow subscriber is still connected"
sender.sendall(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n")
assert b"pong" in sender.makefile("rb").readline()
PY
  grep -qi "slow\|dropp\|queue" daemon.log || { tail -5 daemon.log; fail "the drop is not logged"; }
  stop_daemon
'

test_case "kill -9 of the daemon while an executor streams: restart, integrity ok, audit verifies, task failed" "$SCENE"'
  prompt_task
  python3 - "$AGOR_HOME/run/agor.sock" "$token" "$task" > sent <<PY &
import json, socket, sys
path, token, task = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX); s.connect(path)
open("connected", "w").close()
sent = 0
try:
    for i in range(10 ** 7):
        s.sendall((json.dumps({"jsonrpc": "2.0", "method": "report_message", "params": {"session_token": token, "task_id": task, "message_type": "assistant", "data": {"i": i}}}) + "\n").encode())
        sent += 1
except OSError:
    pass
print(sent)
PY
  streamer=$!
  for i in $(seq 1 200); do [ -e connected ] && break; sleep 0.05; done   # a loaded machine starts python slowly
  sleep 1.5
  kill_daemon
  wait $streamer
  [ "$(cat sent)" -gt 100 ] || fail "the executor hardly streamed: $(cat sent)"
  start_daemon --config "$T/config.yaml"
  python3 - "$AGOR_HOME/agor.db" "$task" "$(cat sent)" <<PY
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
n = db.execute("SELECT count(*) FROM messages WHERE task_id = ?", (sys.argv[2],)).fetchone()[0]
assert 0 < n <= int(sys.argv[3]), (n, sys.argv[3])
print("kept", n, "of", sys.argv[3])
PY
  rpc tasks.get "{\"id\":\"$task\"}" > t
  grep -q "\"status\":\"failed\"" t && grep -q interrupted t || { cat t; fail "the streaming task is not failed: interrupted"; }
  expect_exit 0 "$AGOR" audit verify
  [ "$(code_of "$(ctx "$token")")" = AUTH_FAILED ] || fail "the token of the interrupted task still works"
  stop_daemon
'

test_case "git credentials just in time: the executor asks the daemon (get_credential) only when the server demands them" "$SCENE"'
  case_needs openssl   # for the test CA
  prompt_task
  "$TEST_TOP/test/helpers/make-test-ca.sh" ca
  mkdir -p srv/acme && make_source_repo src && git clone -q --bare src srv/acme/widget.git
  python3 "$TEST_TOP/test/helpers/git-https-server.py" --root "$PWD/srv" --cert ca/server.crt --key ca/server.key \
    --port-file port --user x-access-token --password s3cret-pass 2> server.log &
  server=$!
  scene_cleanup() { kill $server 2> /dev/null || true; }
  for i in $(seq 1 100); do [ -s port ] && break; sleep 0.05; done
  clone() {
    python3 -c "import json,sys; print(json.dumps({\"command\":\"git.clone\",\"params\":{\"url\":sys.argv[1],\"outputPath\":sys.argv[2]},\"daemonUrl\":\"unix:\"+sys.argv[3],\"sessionToken\":sys.argv[4]}))" \
      "https://localhost:$(cat port)/acme/widget.git" "$1" "$AGOR_HOME/run/agor.sock" "$2" > clone.json
    rc=0; SSL_CERT_FILE=$PWD/ca/ca.crt "$AGOR" executor --stdin < clone.json > out 2> err || rc=$?
  }
  clone no-key.git "$token"
  expect_error NOT_FOUND 1
  rpc api_keys.set "{\"service\":\"git:localhost:$(cat port)\",\"value\":\"wrong-pass\"}" > /dev/null
  clone wrong.git "$token"
  expect_error AUTH_FAILED 1
  rpc api_keys.set "{\"service\":\"git:localhost:$(cat port)\",\"value\":\"s3cret-pass\"}" > /dev/null
  clone ok.git "$token"
  expect_success
  [ -d "$AGOR_HOME/repos/ok.git" ]
  ! grep -rq s3cret-pass out err daemon.log || fail "the credential leaked into output or logs"
  rpc audit.list > audit
  grep -q get_credential audit || fail "get_credential not audited"
  clone forged.git "x.y.z"
  expect_error AUTH_FAILED 1
  kill $server; wait $server 2>/dev/null || true
  stop_daemon
'

# A second scene for git credentials: a throwaway CA, a bare repository to serve, bob (a member) with a session of
# his own, and helpers to start HTTPS servers, ask get_credential directly and clone through an executor.
GIT_SCENE="$SCENE"'
  case_needs openssl   # for the test CA
  "$TEST_TOP/test/helpers/make-test-ca.sh" ca
  mkdir -p srv/acme && make_source_repo src && git clone -q --bare src srv/acme/widget.git
  SERVERS=""
  scene_cleanup() { kill $SERVERS 2> /dev/null || true; }
  serve() { # serve NAME ARGS… — an HTTPS git server; its port in NAME.port, its Authorization log in NAME.auth
    python3 "$TEST_TOP/test/helpers/git-https-server.py" --root "$PWD/srv" --cert ca/server.crt --key ca/server.key \
      --port-file "$1.port" --auth-log "$1.auth" "${@:2}" 2>> "$1.log" &
    SERVERS="$SERVERS $!"
    for i in $(seq 1 100); do [ -s "$1.port" ] && break; sleep 0.05; done
    touch "$1.auth"
  }
  stop_servers() { kill $SERVERS 2>/dev/null || true; for p in $SERVERS; do wait $p 2>/dev/null || true; done; SERVERS=""; }
  cred() { rpc get_credential "{\"session_token\":\"$token\",\"url\":\"$1\"}" > cred; }
  clone() { # clone URL OUT — git.clone through an executor with the task token
    python3 -c "import json,sys; print(json.dumps({\"command\":\"git.clone\",\"params\":{\"url\":sys.argv[1],\"outputPath\":sys.argv[2]},\"daemonUrl\":\"unix:\"+sys.argv[3],\"sessionToken\":sys.argv[4]}))" \
      "$1" "$2" "$AGOR_HOME/run/agor.sock" "$token" > clone.json
    rc=0; SSL_CERT_FILE=$PWD/ca/ca.crt "$AGOR" executor --stdin < clone.json > out 2> err || rc=$?
  }
  "$AGOR" user create bob > /dev/null
  bob=$(rpc users.list | python3 -c "import json,sys; print([u[\"id\"] for u in json.load(sys.stdin)[\"result\"] if u[\"name\"] == \"bob\"][0])")
  python3 - "$AGOR_HOME/agor.db" "$bob" <<PY
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO sessions (id, worktree_id, tool, created_by, created_at) VALUES (\"bob-session\", \"w1\", \"claude-code\", ?, 0)", (sys.argv[2],))
db.commit()
PY
'

test_case "attack: a credential goes only to the exact origin it is stored for (scheme, host and port); userinfo is refused" "$GIT_SCENE"'
  prompt_task
  serve s --user x-access-token --password admins-github-token
  port=$(cat s.port)
  rpc api_keys.set "{\"service\":\"git:github.com\",\"value\":\"admins-github-token\"}" > /dev/null
  rpc api_keys.set "{\"service\":\"git:localhost\",\"value\":\"localhost-443-token\"}" > /dev/null
  # the issue: github.com@HOST:PORT named the github.com secret and libgit2 sent it to HOST
  clone "https://github.com@localhost:$port/acme/widget.git" stolen.git
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params.url
  ! grep -q Basic s.auth || { cat s.auth; fail "the credential reached the server"; }
  for url in "https://github.com@localhost:$port/x" "https://x:y@github.com/x" "https://github.com%2e:$port/" \
             "https://localhost:$port.evil/x" "http://github.com/x" "ssh://git@github.com/x" "git://github.com/x"; do
    cred "$url"; expect_json cred error.data.code INVALID_PAYLOAD; expect_contains cred "params.url"
    ! grep -q token cred || { cat cred; fail "$url got a credential"; }
  done
  cred "https://localhost:$port/acme/widget.git"            # git:localhost is https://localhost:443
  expect_json cred error.data.code NOT_FOUND
  expect_contains cred "git:localhost:$port"
  cred "https://LOCALHOST:443/x"; expect_json cred result.password localhost-443-token
  cred "https://github.com/acme/x.git"; expect_json cred result.password admins-github-token
  cred "https://github.com:8443/acme/x.git"; expect_json cred error.data.code NOT_FOUND
  # ssh asks for the ssh key of that server (git-ssh:), never for the https token of the same host
  cred "ssh://github.com/x"; expect_json cred error.data.code NOT_FOUND; expect_contains cred "git-ssh:github.com"
  # a key naming a port, given in any case and with the default port spelled out, is stored canonically
  rpc api_keys.set "{\"service\":\"git:LocalHost:$port\",\"value\":\"admins-github-token\"}" > set
  expect_json set result.service "git:localhost:$port"
  rpc api_keys.set "{\"service\":\"git:github.com:443\",\"value\":\"admins-github-token\"}" > set
  expect_json set result.service "git:github.com"
  rpc api_keys.set "{\"service\":\"git:x@github.com\",\"value\":\"v\"}" > set
  expect_json set error.data.code INVALID_PAYLOAD
  cred "https://localhost:$port/acme/widget.git"; expect_json cred result.password admins-github-token
  clone "https://localhost:$port/acme/widget.git" ok.git
  expect_success
  rpc audit.list > audit
  python3 - "$port" <<PY
import json, sys
rows = [r for r in json.load(open("audit"))["result"] if r["action"] == "get_credential"]
details = [json.loads(r["details"] or "{}") for r in rows]
assert any(d.get("origin") == "https://localhost:%s" % sys.argv[1] and r["outcome"] == "ok" for r, d in zip(rows, details)), rows
assert any(r["outcome"] != "ok" for r in rows), rows
assert not any("admins-github-token" in json.dumps(r) for r in rows)
PY
  stop_servers; stop_daemon
'

test_case "attack: a redirect to another origin gets no credential (the second server logs no Authorization)" "$GIT_SCENE"'
  prompt_task
  serve b --user x-access-token --password s3cret-pass
  serve a --redirect-to "https://localhost:$(cat b.port)"
  for key in git:localhost "git:localhost:$(cat a.port)"; do
    rpc api_keys.set "{\"service\":\"$key\",\"value\":\"s3cret-pass\"}" > /dev/null
  done
  clone "https://localhost:$(cat a.port)/acme/widget.git" redirected.git
  expect_error AUTH_FAILED 1
  expect_contains out "https://localhost:$(cat b.port)"
  grep -q " - *$" b.auth || { cat b.auth a.log b.log; fail "the redirect was not followed"; }
  ! grep -q Basic b.auth || { cat b.auth; fail "the credential followed the redirect"; }
  [ ! -e "$AGOR_HOME/repos/redirected.git" ] || fail "the clone went through"
  # the first server takes the credential, then redirects with a challenge: libgit2 would replay it unasked
  serve c --user x-access-token --password s3cret-pass --redirect-to "https://localhost:$(cat b.port)" --challenge-on-redirect
  rpc api_keys.set "{\"service\":\"git:localhost:$(cat c.port)\",\"value\":\"s3cret-pass\"}" > /dev/null
  : > b.auth
  clone "https://localhost:$(cat c.port)/acme/widget.git" replayed.git
  expect_error AUTH_FAILED 1
  grep -q Basic c.auth || { cat c.auth; fail "the first server never got its credential"; }
  ! grep -q Basic b.auth || { cat b.auth; fail "the credential was replayed to the other origin"; }
  stop_servers; stop_daemon
'

test_case "who may use a stored credential: scope owner | admins | members, stored with it, checked and audited" "$GIT_SCENE"'
  prompt_task; owner_token=$token
  rm -f payload.json
  rpc sessions.prompt "{\"session_id\":\"bob-session\",\"prompt\":\"hello\"}" > /dev/null
  for i in $(seq 1 100); do [ -s payload.json ] && break; sleep 0.05; done
  bob_token=$(json_get payload.json sessionToken)
  url="https://localhost:4443/x.git"
  rpc api_keys.set "{\"service\":\"git:localhost:4443\",\"value\":\"v1\"}" > set
  expect_json set result.scope members
  token=$bob_token; cred "$url"; expect_json cred result.password v1
  echo v1 | "$AGOR" api-key set git:LOCALHOST:4443 --scope admins --json > set
  expect_json set service git:localhost:4443
  expect_json set scope admins
  token=$bob_token; cred "$url"; expect_json cred error.data.code PERMISSION_DENIED; expect_contains cred "admins"
  token=$owner_token; cred "$url"; expect_json cred result.password v1
  rpc api_keys.set "{\"service\":\"git:localhost:4443\",\"value\":\"v1\",\"scope\":\"owner\"}" > /dev/null
  token=$bob_token; cred "$url"; expect_json cred error.data.code PERMISSION_DENIED; expect_contains cred "owner"
  token=$owner_token; cred "$url"; expect_json cred result.password v1
  rpc api_keys.set "{\"service\":\"git:localhost:4443\",\"value\":\"v1\",\"scope\":\"everyone\"}" > set
  expect_json set error.data.code INVALID_PAYLOAD; expect_contains set "params.scope"
  rpc api_keys.list > list
  python3 - "$owner" <<PY
import json, sys
row = [r for r in json.load(open("list"))["result"] if r["service"] == "git:localhost:4443"][0]
assert row["scope"] == "owner" and row["set_by"] == sys.argv[1], row
PY
  rpc audit.list > audit
  python3 - "$bob" <<PY
import json, sys
rows = [r for r in json.load(open("audit"))["result"] if r["action"] == "get_credential" and r["actor"] == sys.argv[1]]
assert [r["outcome"] for r in rows] == ["ok", "refused", "refused"], rows
assert all(json.loads(r["details"])["scope"] for r in rows), rows
PY
  stop_daemon
'

test_case "an https credential stored with a user name logs in as that user (default x-access-token)" "$GIT_SCENE"'
  prompt_task
  serve alice --user alice --password alice-pass
  port=$(cat alice.port)
  echo alice-pass | "$AGOR" api-key set "git:localhost:$port" --json > set
  clone "https://localhost:$port/acme/widget.git" as-default.git
  expect_error AUTH_FAILED 1
  grep -q "Basic $(printf x-access-token:alice-pass | base64)" alice.auth || { cat alice.auth; fail "not x-access-token by default"; }
  echo alice-pass | "$AGOR" api-key set "git:localhost:$port" --username alice --json > set
  expect_json set service "git:localhost:$port"
  clone "https://localhost:$port/acme/widget.git" as-alice.git
  expect_success
  [ -d "$AGOR_HOME/repos/as-alice.git" ]
  cred "https://localhost:$port/acme/widget.git"
  expect_json cred result.username alice
  rpc api_keys.list > list
  python3 - "$port" <<PY
import json, sys
row = [r for r in json.load(open("list"))["result"] if r["service"] == "git:localhost:" + sys.argv[1]][0]
assert row["username"] == "alice", row
PY
  ! grep -q alice-pass list || fail "api_keys.list shows the secret"
  for bad in "anthropic --username alice" "git:localhost:$port --username a@b" "git:localhost:$port --username x:y"; do
    rc=0; echo v | "$AGOR" api-key set $bad > /dev/null 2> set.err || rc=$?
    [ $rc -ne 0 ] && grep -q "username" set.err || { cat set.err; fail "$bad was accepted"; }
  done
  stop_servers; stop_daemon
'

test_done
