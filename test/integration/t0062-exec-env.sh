#!/usr/bin/env bash
# t0062-exec-env — exec.run env overrides on hosts node and gateway pass only names on execution.exec_env_allow
# (issue 20). One attack per variable class that makes an allowlisted git (or shell) run a program: each is first
# shown to work when the variable reaches the command, then sent through the daemon (refused, naming the variable
# and the setting) and through a forged gateway straight to a node (ignored and logged). Nodes share loopback.
# Kills only the pids it started.
. "$(dirname "$0")/../lib.sh"

RPC="$TEST_TOP/test/helpers/rpc.py"

SCENE='
  # nodes run with TERM=dumb: git without an EDITOR then fails at once instead of starting vi
  GW_HOME="$AGOR_HOME"; PIDS=""; DAEMON_HOST=127.0.0.1 DAEMON_SOCKET="$GW_HOME/run/agor.sock"
  scene_cleanup() { # the nodes, when the body ends (after the daemon: daemon_cleanup runs it)
    for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done
    for p in $PIDS; do wait "$p" 2>/dev/null || true; done
  }
  trap daemon_cleanup EXIT
  mkdir -p -m 700 "$GW_HOME"
  # a node whose own policy is an allowlist of git, the two shells, true and printenv, and nothing else
  node_policy() { # node_policy HOME
    AGOR_HOME="$1" "$AGOR" approvals set --security allowlist --ask off > /dev/null
    for p in git bash sh true printenv; do
      AGOR_HOME="$1" "$AGOR" approvals allowlist add "$(readlink -f "$(type -P $p)")" > /dev/null
    done
  }
  node_up() { # node_up N — paired with the daemon, approved, running
    mkdir -p -m 700 "$T/n$1"
    AGOR_HOME="$T/n$1" "$AGOR" node pair --gateway "ws://127.0.0.1:$port/ws" --name "node$1" > "id$1"
    "$AGOR" nodes approve "$(cat id$1)" > /dev/null
    node_policy "$T/n$1"
    AGOR_HOME="$T/n$1" TERM=dumb "$AGOR" node run 2>> "node$1.log" & PIDS="$PIDS $!"
    for _ in $(seq 1 200); do rpc nodes.list | grep -q "\"id\":\"$(cat id$1)\"[^}]*\"connected\":true" && return 0; sleep 0.05; done
    cat "node$1.log"; fail "node $1 did not connect"
  }

  # what the attacks need: programs and rc files that leave a PWN-* file, a repository with an identity, a server
  # that asks for a password (so git runs an askpass), a "proxy" that records a connection, a preloadable library
  mkdir -m 755 evil
  printf "#!/bin/sh\ntouch %s/PWN-exec\n" "$T" > evil/git-pwn
  printf "#!/bin/sh\ntouch %s/PWN-askpass\necho x\n" "$T" > evil/askpass
  chmod 755 evil/git-pwn evil/askpass
  echo "touch $T/PWN-bash-env" > evil/rc-bash
  echo "touch $T/PWN-env" > evil/rc-sh
  make_source_repo repo && git -C repo config user.name t && git -C repo config user.email t@t
  cat > servers.py <<PY
import http.server, socket, sys, threading
class Ask(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(401); self.send_header("WWW-Authenticate", "Basic realm=x")
        self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
ask = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ask)
proxy = socket.socket(); proxy.bind(("127.0.0.1", 0)); proxy.listen(16)
def record():
    while True:
        c, _ = proxy.accept(); open(sys.argv[1] + "/PWN-proxy", "w").close(); c.close()
threading.Thread(target=record, daemon=True).start()
open("ports.tmp", "w").write("%d %d\n" % (ask.server_address[1], proxy.getsockname()[1]))
__import__("os").rename("ports.tmp", "ports")
ask.serve_forever()
PY
  python3 servers.py "$T" & PIDS="$PIDS $!"
  for _ in $(seq 1 100); do [ -s ports ] && break; sleep 0.05; done
  read ask_port proxy_port < ports
  LD_PROBE=""
  if command -v cc > /dev/null; then
    printf "#include <fcntl.h>\n__attribute__((constructor)) static void pwn(void) { open(\"%s/PWN-ld\", O_CREAT | O_WRONLY, 0600); }\n" "$T" > evil/pwn.c
    cc -shared -fPIC -o evil/pwn.so evil/pwn.c && LD_PROBE=1
  fi
  # probes.json: [{class, argv, env, cwd?, proof: a PWN file, or text the output would show}]
  python3 - "$T" "$ask_port" "$proxy_port" "$LD_PROBE" > probes.json <<PY
import json, sys
T, ask, proxy, ld = sys.argv[1:5]
p = [
  ("GIT_SSH_COMMAND", ["git", "ls-remote", "ssh://h/x"], {"GIT_SSH_COMMAND": "touch %s/PWN-ssh #" % T}, "PWN-ssh"),
  ("GIT_EXEC_PATH", ["git", "pwn"], {"GIT_EXEC_PATH": T + "/evil"}, "PWN-exec"),
  ("GIT_ALLOW_PROTOCOL", ["git", "ls-remote", "ext::sh -c touch%% %s/PWN-ext" % T], {"GIT_ALLOW_PROTOCOL": "ext"}, "PWN-ext"),
  ("GIT_CONFIG_*", ["git", "pwn"], {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "alias.pwn",
                                    "GIT_CONFIG_VALUE_0": "!touch %s/PWN-config" % T}, "PWN-config"),
  ("GIT_CONFIG_PARAMETERS", ["git", "pwn2"], {"GIT_CONFIG_PARAMETERS": "\x27alias.pwn2=!touch %s/PWN-params\x27" % T}, "PWN-params"),
  ("SSH_ASKPASS", ["git", "ls-remote", "http://127.0.0.1:%s/x" % ask], {"SSH_ASKPASS": T + "/evil/askpass"}, "PWN-askpass"),
  ("HTTPS_PROXY", ["git", "ls-remote", "https://example.invalid/x"], {"HTTPS_PROXY": "http://127.0.0.1:" + proxy}, "PWN-proxy"),
  ("PAGER", ["git", "var", "GIT_PAGER"], {"PAGER": "touch %s/PWN-pager #" % T}, "output:PWN-pager"),
  ("EDITOR", ["git", "commit", "--allow-empty"], {"EDITOR": "touch %s/PWN-editor" % T}, "PWN-editor"),
  ("BASH_ENV", ["bash", "-c", "true"], {"BASH_ENV": T + "/evil/rc-bash"}, "PWN-bash-env"),
  ("ENV", ["sh", "-i", "-c", "true"], {"ENV": T + "/evil/rc-sh"}, "PWN-env"),
]
if ld:
  p.append(("LD_PRELOAD", ["git", "--version"], {"LD_PRELOAD": T + "/evil/pwn.so"}, "PWN-ld"))
print(json.dumps([{"class": c, "argv": a, "env": e, "cwd": T + "/repo", "proof": pr} for c, a, e, pr in p]))
PY
  # proven: each probe does its harm when its variable reaches the command (run here, directly)
  python3 - "$T" <<PY
import json, os, subprocess, sys
for p in json.load(open("probes.json")):
    r = subprocess.run(p["argv"], cwd=p["cwd"], env=dict(os.environ, **p["env"]), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=30)
    proof = p["proof"]
    ok = proof[7:] in r.stdout if proof.startswith("output:") else os.path.exists(sys.argv[1] + "/" + proof)
    assert ok, ("the probe does nothing even with its variable", p, r.stdout, r.stderr)
print("every probe works when its variable reaches the command")
PY
  rm -f PWN-*
  no_pwn() { ! ls PWN-* 2> /dev/null || fail "a command ran: $(ls PWN-*)"; }
'

test_case "attack: exec.run env through the daemon (host node): every variable class is refused naming it and the setting" "$SCENE"'
  start_daemon; node_up 1
  python3 - "$GW_HOME/run/agor.sock" "$RPC" "$(cat id1)" <<PY
import json, subprocess, sys
sock, rpc, node = sys.argv[1:4]
bad = 0
for p in json.load(open("probes.json")):
    params = {"host": "node", "node": node, "argv": p["argv"], "env": p["env"], "cwd": p["cwd"], "security": "allowlist"}
    r = json.loads(subprocess.run([sys.executable, rpc, sock, "exec.run", json.dumps(params)], capture_output=True,
                                  text=True).stdout)
    err = r.get("error", {})
    ok = err.get("data", {}).get("code") == "INVALID_PAYLOAD" and "params.env." in err.get("message", "") \
        and "execution.exec_env_allow" in err.get("message", "")
    bad += not ok
    print(("ok   " if ok else "BAD  ") + p["class"] + ": " + json.dumps(r)[:300])
sys.exit(1 if bad else 0)
PY
  no_pwn
  # a name on the list passes
  rpc exec.run "{\"host\":\"node\",\"argv\":[\"printenv\",\"TZ\"],\"env\":{\"TZ\":\"UTC0\"},\"security\":\"allowlist\"}" > reply
  expect_json reply result.output "UTC0"
  stop_daemon
'

# The node runs whatever it is sent here (security full): its env filter alone stands between the forged
# variables and the commands.
test_case "attack: a forged gateway sends every variable class straight to a node: ignored and logged, nothing runs" "$SCENE"'
  mkdir -p -m 700 "$T/n1"; AGOR_HOME="$T/n1" "$AGOR" approvals set --security full --ask off > /dev/null
  python3 - <<PY
import json
probes = json.load(open("probes.json"))
reqs = [{"runId": "run-%d" % i, "argv": p["argv"], "env": p["env"], "cwd": p["cwd"], "security": "full",
         "timeoutMs": 30000} for i, p in enumerate(probes)]
reqs.append({"runId": "run-tz", "argv": ["printenv", "TZ"], "env": {"TZ": "UTC0"}, "security": "full", "timeoutMs": 30000})
json.dump(reqs, open("forged.json", "w"))
PY
  python3 "$TEST_TOP/test/helpers/fake-gateway.py" gw.port forged.json answers 2> gw.err & PIDS="$PIDS $!"
  for _ in $(seq 1 100); do [ -s gw.port ] && break; sleep 0.05; done
  printf "{\"version\":1,\"nodeId\":\"n1\",\"displayName\":\"n1\",\"gateway\":{\"url\":\"ws://127.0.0.1:%s/ws\"},\"token\":\"%s\"}" \
    "$(cat gw.port)" "$(printf %064d 0)" > "$T/n1/node.json"
  chmod 600 "$T/n1/node.json"
  AGOR_HOME="$T/n1" TERM=dumb timeout 300 "$AGOR" node run --once 2> node.log || true
  [ "$(wc -l < answers)" -eq "$(($(python3 -c "import json; print(len(json.load(open(\"forged.json\"))))")))" ] ||
    { cat gw.err node.log answers; fail "the node did not answer every request"; }
  no_pwn
  python3 - <<PY
import json
probes = json.load(open("probes.json"))
answers = [json.loads(l) for l in open("answers")]
for p, a in zip(probes, answers):
    res = a.get("result", {})
    assert "exitCode" in res and not res.get("denied"), ("the node did not run it", p["class"], a)
    if p["proof"].startswith("output:"):
        assert p["proof"][7:] not in res.get("output", ""), (p["class"], res)
assert answers[-1]["result"]["output"].strip() == "UTC0", answers[-1]
PY
  for name in GIT_SSH_COMMAND GIT_EXEC_PATH GIT_ALLOW_PROTOCOL GIT_CONFIG_COUNT GIT_CONFIG_PARAMETERS SSH_ASKPASS HTTPS_PROXY \
              PAGER EDITOR BASH_ENV ENV; do
    grep -q "environment override $name ignored" node.log || { cat node.log; fail "$name: not logged"; }
  done
'

test_case "host gateway: names on the list pass to the command, any other is refused naming it and the setting" "$SCENE"'
  start_daemon
  rpc repos.clone "{\"url\":\"$T/repo\"}" > r; repo=$(json_get r result.repo.id)
  rpc worktrees.add "{\"repo_id\":\"$repo\",\"name\":\"w1\",\"branch\":\"w1\",\"create_branch\":true}" > r
  wt=$(json_get r result.worktree.id)
  "$AGOR" approvals set --security full --ask off > /dev/null
  gw() { rpc exec.run "{\"host\":\"gateway\",\"worktree_id\":\"$wt\",\"security\":\"full\",\"argv\":$1,\"env\":$2}" > reply; }
  gw "[\"printenv\",\"TZ\",\"LC_ALL\"]" "{\"TZ\":\"UTC0\",\"LC_ALL\":\"C\"}"
  expect_json reply result.stdout "UTC0
C"
  gw "[\"git\",\"ls-remote\",\"ssh://h/x\"]" "{\"GIT_SSH_COMMAND\":\"touch $T/PWN-ssh #\"}"
  expect_json reply error.data.code INVALID_PAYLOAD
  expect_contains reply "params.env.GIT_SSH_COMMAND"
  expect_contains reply "execution.exec_env_allow"
  gw "[\"true\"]" "{\"PATH\":\"/tmp\"}"
  expect_json reply error.data.code INVALID_PAYLOAD
  no_pwn
  stop_daemon
  # the operator widens or narrows the list; the default is gone once the setting is given
  printf "execution:\n  exec_env_allow: LANG:MY_*\n" > "$GW_HOME/config.yaml"
  start_daemon
  "$AGOR" config get execution.exec_env_allow > value; expect_contains value "LANG:MY_*"
  gw "[\"printenv\",\"MY_GREETING\"]" "{\"MY_GREETING\":\"hello\"}"
  expect_json reply result.stdout "hello"
  gw "[\"printenv\",\"TZ\"]" "{\"TZ\":\"UTC0\"}"
  expect_contains reply "params.env.TZ: not allowed"
  stop_daemon
'

test_done
