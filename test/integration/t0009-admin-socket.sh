#!/usr/bin/env bash
# t0009-admin-socket — the privileged socket (docs/admin.md#socket) on an insulated host with no sudo rule at all: the
# real `agor admin serve` as root, the real daemon as agor with execution.privileged_socket; clone, worktree and exec
# as agor_executor work through it; and every way to abuse it is refused: another uid, root or an unlisted user,
# malformed, oversized, truncated or trailing requests, descriptors missing, extra or late, operations the table
# does not allow, paths outside admin.yaml, the executor reaching the socket, environment smuggled in a request; the
# daemon giving a run up kills the executor's whole process group.
. "$(dirname "$0")/../sandbox.sh"
sandbox_enter "$@"
. "$(dirname "$0")/../lib.sh"

sandbox_needs "the privileged socket on an insulated host" sudo
sandbox_setup
sandbox_forget_accounts agor agor_executor agor_users alice bob

BIN=/usr/local/bin/agor
STATE="$TEST_TMP_ROOT/t0009-state"
SOCK=/run/agor-admin.sock   # where agor-admin.socket puts it
CLIENT=/srv/adminsock-client.py
. "$TEST_TOP/test/host.sh"

# as USER: the client as that user (root: directly)
client_as() {
  local u=$1; shift
  if [ "$u" = root ]; then python3 "$CLIENT" "$@"; return; fi
  setpriv --reuid="$u" --regid="$u" --init-groups -- env -i PATH=/usr/bin:/bin python3 "$CLIENT" "$@"
}
# refused_as USER TEXT REQUEST [OPTIONS] — the answer is a refusal naming TEXT
refused_as() {
  local u=$1 text=$2; shift 2
  client_as "$u" "$SOCK" "$@" > answer 2>&1 || { cat answer; fail "no answer to $*"; }
  expect_contains answer '"success":false'
  expect_contains answer "$text"
}
refused() { refused_as agor "$@"; }

operator_steps() {
  mkdir -p "$STATE"
  install -m 0755 "$AGOR" "$BIN"
  cp "$TEST_TOP/test/helpers/adminsock-client.py" "$CLIENT" && chmod 755 "$CLIENT"
  useradd --system --create-home --home-dir /home/agor --shell /bin/bash agor
  useradd --create-home --shell /bin/bash alice
  useradd --create-home --shell /bin/bash bob
  expect_exit 0 "$BIN" setup isolation --mode insulated
  rm -f /etc/sudoers.d/agor   # nothing may go through sudo: the socket is the daemon's only way to root
  expect_exit 0 "$BIN" admin cgroup-delegate agor_executor
  "$BIN" admin serve --socket "$SOCK" --daemon-user agor --run-as agor_executor 2> "$STATE/serve.log" &
  echo $! > "$STATE/serve.pid"
  for i in $(seq 1 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
  [ -S "$SOCK" ] || { cat "$STATE/serve.log"; fail "agor admin serve made no socket"; }
  [ "$(stat -c '%a %U %G' "$SOCK")" = "660 root agor" ] || { stat "$SOCK"; fail "the socket is not root:agor 0660"; }
  expect_exit 0 as_agor "$BIN" config set execution.privileged_socket "$SOCK"
  expect_exit 0 as_agor "$BIN" config set execution.worktree_rbac true   # worktrees get groups: admin through the socket
  host_daemon_start
  host_people alice bob
}
test_case "operator: insulated host without sudo rules, agor admin serve on $SOCK, the daemon configured for it" operator_steps

user_steps() {
  as_tcp alice repo clone /srv/src --json > clone.json 2> err || { cat err "$STATE/daemon.log" "$STATE/serve.log"; fail "alice cannot clone"; }
  as_tcp alice worktree add "$(json_get clone.json repo.id)" feature --json > wt.json 2> err || { cat err "$STATE/serve.log"; fail "no worktree"; }
  json_get wt.json worktree.id > "$STATE/wt"
  path=$(json_get wt.json worktree.path)
  exec_tcp alice "$(cat "$STATE/wt")" sh -c "id -un; echo from-alice > by-alice.txt" > run.out 2> err || { cat run.out err "$STATE/serve.log"; fail "exec failed"; }
  grep -qx agor_executor run.out || { cat run.out; fail "the command did not run as agor_executor"; }
  [ "$(stat -c %U "$path/by-alice.txt")" = agor_executor ] || fail "the file of the run is not agor_executor's"
  expect_contains "$STATE/serve.log" "executor as agor_executor: pid"
  expect_contains "$STATE/serve.log" "agor admin serve: create-worktree-group"
  [ "$(stat -c %G "$path")" = "agor_wt_$(printf %s "$(cat "$STATE/wt")" | sha256sum | cut -c1-16)" ] || { ls -ld "$path"; fail "the worktree did not get its group"; }
  as_tcp alice worktree add-owner "$(cat "$STATE/wt")" bob --json > /dev/null 2> err || { cat err "$STATE/serve.log"; fail "no sharing"; }
  exec_tcp bob "$(cat "$STATE/wt")" cat by-alice.txt > bob.out 2> err || { cat bob.out err; fail "bob cannot run there"; }
  grep -qx from-alice bob.out || fail "bob does not see the file of alice"
}
test_case "clone, worktree, exec as agor_executor and sharing, all through the socket (no sudo rule exists)" user_steps

admin_steps() {
  client_as agor "$SOCK" '{"op":"admin","argv":["setup-unix-user","nosuchuser","--dry-run"]}' > answer
  expect_contains answer '"success":'
  expect_contains "$STATE/serve.log" "agor admin serve: setup-unix-user"
  refused "unknown subcommand 'serve'" '{"op":"admin","argv":["serve","--socket","/tmp/x"]}'
  refused "unknown subcommand 'executor'" '{"op":"admin","argv":["executor","--stdin"]}'
  refused "--root-config is refused" '{"op":"admin","argv":["setup-unix-user","alice","--root-config","/srv/evil.yaml"]}'
  refused "does not take --pid" '{"op":"admin","argv":["setup-unix-user","alice","--pid","1"]}'
  refused "PATH_OUTSIDE_DATA_HOME" '{"op":"admin","argv":["create-worktree-group","0123456789abcdef","/srv/../etc"]}'
  refused "/etc" '{"op":"admin","argv":["create-worktree-group","0123456789abcdef","/etc"]}'
  ! getent group agor_wt_"$(printf %s 0123456789abcdef | sha256sum | cut -c1-16)" > /dev/null || fail "a refused call made a group"
  refused "refusing to delete root" '{"op":"admin","argv":["delete-unix-user","root"]}'
  refused "argv" '{"op":"admin","argv":[]}'
  refused "argv[1]" '{"op":"admin","argv":["setup-unix-user",""]}'
}
test_case "admin operations: the table's, validated as admin does; anything else refused" admin_steps

peer_steps() {
  for u in alice agor_executor; do
    client_as "$u" "$SOCK" '{"op":"admin","argv":["setup-unix-user","alice"]}' > answer 2>&1 && { cat answer; fail "$u reached the socket"; }
    expect_contains answer "connect: EACCES"
  done
  refused_as root "only agor (uid" '{"op":"admin","argv":["setup-unix-user","alice","--dry-run"]}'   # root passes the mode bits: SO_PEERCRED stops it
  exec_tcp alice "$(cat "$STATE/wt")" python3 -c "
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect('$SOCK'); print('connected')
except OSError as e:
    print('connect:', e.strerror)" > run.out 2> err || true
  grep -q '^connect: ' run.out || { cat run.out err; fail "a run reached the privileged socket"; }
}
test_case "peers: another uid cannot connect, root is refused by SO_PEERCRED, a run cannot reach the socket" peer_steps

user_rule_steps() {
  refused "uid 0" '{"op":"executor","user":"root"}' --nfds 3
  refused "not an execution user here" '{"op":"executor","user":"alice"}' --nfds 3
  refused "is the daemon user" '{"op":"executor","user":"agor"}' --nfds 3
  refused "no such user" '{"op":"executor","user":"nosuchuser"}' --nfds 3
  refused "is not a user name" '{"op":"executor","user":"../etc"}' --nfds 3
}
test_case "executors: never root, never an unlisted user or the daemon user" user_rule_steps

group_rule_steps() {   # strict mode's rule: %agor_users, never root nor the daemon user even as members
  "$BIN" admin serve --socket /run/agor-admin2.sock --daemon-user agor --run-as %agor_users 2> serve2.log &
  for i in $(seq 1 100); do [ -S /run/agor-admin2.sock ] && break; sleep 0.05; done
  id -nG agor_executor | grep -qw agor_users || fail "agor_executor is not in agor_users here"
  client_as agor /run/agor-admin2.sock '{"op":"executor","user":"agor_executor"}' --nfds 3 > answer
  expect_contains answer '"exitStatus":'   # started (an empty payload: the executor refuses it, but it ran)
  client_as agor /run/agor-admin2.sock '{"op":"executor","user":"alice"}' --nfds 3 > answer
  expect_contains answer "not an execution user here (--run-as %agor_users)"
  usermod -aG agor_users agor
  client_as agor /run/agor-admin2.sock '{"op":"executor","user":"agor"}' --nfds 3 > answer
  expect_contains answer "is the daemon user"
  gpasswd -d agor agor_users > /dev/null
  kill %1
  SUDO_UID=999 "$BIN" admin serve --socket /run/agor-admin3.sock --daemon-user agor --run-as agor_executor 2> err && fail "serve ran through sudo"
  expect_contains err "refused through sudo"
  expect_exit 2 "$BIN" admin serve --socket /run/agor-admin3.sock --daemon-user agor --run-as root
  expect_contains err "other than root"
  expect_exit 2 "$BIN" admin serve --socket /run/agor-admin3.sock --daemon-user root --run-as agor_executor
  expect_contains err "uid 0"
  [ ! -e /run/agor-admin3.sock ] || fail "a refused server made its socket"
}
test_case "--run-as %GROUP (strict): members only, never the daemon user; serve refuses sudo, root as either user" group_rule_steps

malformed_steps() {
  refused "not JSON" 'not json'
  refused "object with a string 'op'" '["admin"]'
  refused "op: expected admin or executor" '{"op":"shell","argv":["id"]}'
  refused "unknown field 'env'" '{"op":"executor","user":"agor_executor","env":{"LD_PRELOAD":"/srv/evil.so"}}' --nfds 3
  refused "unknown field 'env'" '{"op":"admin","argv":["setup-unix-user","alice"],"env":{"LD_PRELOAD":"/srv/evil.so"}}'
  refused "longer than 65536 bytes" x --oversize 70000
  refused "truncated request" '{"op":"admin","argv":["setup-unix-user","alice"]}' --no-newline
  refused "one request per connection" '{"op":"admin","argv":["setup-unix-user","alice"]}' --trailing '{"op":"admin"}'
  refused "only with the request's first byte" '{"op":"executor","user":"agor_executor"}' --late-fds 3
  refused "exactly 3 descriptors" '{"op":"executor","user":"agor_executor"}'
  refused "exactly 3 descriptors (stdin, stdout, stderr), got 2" '{"op":"executor","user":"agor_executor"}' --nfds 2
  refused "got more than 3" '{"op":"executor","user":"agor_executor"}' --nfds 4
  refused "carries no descriptor" '{"op":"admin","argv":["setup-unix-user","alice"]}' --nfds 1
  ! pgrep -u agor_executor -f "executor --stdin" > /dev/null || fail "a refused request started an executor"
}
test_case "requests: malformed, oversized, truncated, trailing, smuggled env, descriptors missing, extra or late" malformed_steps

terminal_steps() {
  command -v tmux > /dev/null || skip_case "needs tmux"
  cp "$TEST_TOP/test/helpers/term-client.py" /srv/term-client.py && chmod 644 /srv/term-client.py
  as_agor python3 /srv/term-client.py /run/agor/agor.sock "$(cat "$STATE/wt")" "expect:@agor-sandbox:" "type:id -un\n" \
    "expect:\ragor_executor\r\n" > term.out || { cat term.out "$STATE/daemon.log" "$STATE/serve.log"; fail "no working terminal through the socket"; }
}
test_case "a terminal (a long-lived executor) through the socket: a shell as agor_executor" terminal_steps

cancel_steps() {
  exec_tcp alice "$(cat "$STATE/wt")" sleep 4242 > run.out 2> err &
  for i in $(seq 1 200); do pgrep -u agor_executor -x sleep > /dev/null && break; sleep 0.05; done
  pgrep -u agor_executor -x sleep > /dev/null || { cat run.out err "$STATE/serve.log"; fail "the run did not start"; }
  inner=$(pgrep -u agor_executor -f "agor executor --stdin" | head -1)
  tr '\0' '\n' < "/proc/$inner/environ" | cut -d= -f1 | sort | tr '\n' ' ' > env.txt
  expect_eq "$(cat env.txt)" "AGOR_IMPERSONATED HOME LANG LOGNAME PATH USER "
  outer=$(pgrep -u agor -f "agor executor --stdin" | head -1)
  [ -n "$outer" ] || fail "no executor of the daemon's"
  kill -KILL "$outer"   # the daemon's side of the connection dies mid-run
  for i in $(seq 1 100); do pgrep -u agor_executor -x sleep > /dev/null || break; sleep 0.1; done
  ! pgrep -u agor_executor -x sleep > /dev/null || { ps -eo pid,pgid,user,args; fail "the run outlived the connection"; }
  ! pgrep -u agor_executor -f "agor executor --stdin" > /dev/null || fail "the executor outlived the connection"
  expect_contains "$STATE/serve.log" "the daemon gave it up"
  wait || true
}
test_case "the daemon's end closing mid-run kills the executor's process group; its environment is the clean one" cancel_steps

stop_steps() {
  kill -TERM "$(cat "$STATE/pid")" "$(cat "$STATE/serve.pid")"
  tmux_stop_as agor_executor "agor-agor_executor-$(printf %s /srv/agor | sha256sum | cut -c1-8)" ||
    fail "the tmux server of agor_executor's terminals did not stop on kill-server, or came back"
}
test_case "the daemon and the server stop" stop_steps

test_done
