#!/usr/bin/env bash
# t0013-ssh-clone — git.clone over ssh (libssh2 on mbedTLS in the static binary) from a real sshd on loopback: a
# stored Ed25519 or ECDSA key (git-ssh:HOST:PORT, sealed by the daemon) is handed just in time and used from memory
# (agor signs the login itself: lib/ed25519.c, mbedTLS's ECDSA); RSA keys are refused naming the fix; the
# server's host key must be one execution.git.known_hosts lists (unknown and changed keys fail naming the SHA256
# fingerprint); a refused user key fails clearly; the key is never on disk, in argv or in the database in clear.
. "$(dirname "$0")/../sandbox.sh"
sandbox_enter "$@"
. "$(dirname "$0")/../lib.sh"
if ! sandbox_active; then test_skip "ssh clone" "needs root, unshare and setpriv (a scratch user for sshd)"; test_done; exit; fi
if [ ! -x /usr/sbin/sshd ] || ! command -v ssh-keygen >/dev/null; then
  test_skip "ssh clone" "needs openssh-server (/usr/sbin/sshd) and ssh-keygen"; test_done; exit
fi
sandbox_setup
sandbox_forget_accounts gitsrv
# the scratch account the server logs in (shell sh, password "*": not locked, no password login)
useradd -m -s /bin/sh -p '*' gitsrv
mkdir -p /run/sshd && chmod 755 /run/sshd

# A daemon whose executor template records its payload and keeps the task running (the test runs the executor
# itself with the task's token), a session with a task, a bare repository in gitsrv's home, an sshd on a free
# loopback port with its own host key and authorized_keys, and a user key in authorized_keys.
SCENE='
  rpc() { python3 "$TEST_TOP/test/helpers/rpc.py" "$AGOR_HOME/run/agor.sock" "$@"; }
  free_port() { python3 -c "import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])"; }
  mkdir -p sshd && ssh-keygen -q -t ecdsa -N "" -f sshd/host_key && ssh-keygen -q -t ecdsa -N "" -f user_key
  ssh-keygen -q -t ed25519 -N "" -f ed_key
  cat user_key.pub ed_key.pub > sshd/authorized_keys
  rm -rf /home/gitsrv/acme && mkdir -p /home/gitsrv/acme && make_source_repo src &&
    git clone -q --bare src /home/gitsrv/acme/widget.git && chown -R gitsrv: /home/gitsrv/acme
  sshd_port=$(free_port)
  start_sshd() { # start_sshd PORT [HOST_KEY [OPTION]] — a non-daemonized sshd of the test: its config, host key and authorized_keys
    printf "%s\n" "Port $1" "ListenAddress 127.0.0.1" "HostKey ${2:-$PWD/sshd/host_key}" "PidFile none" \
      "AuthorizedKeysFile $PWD/sshd/authorized_keys" "StrictModes no" "UsePAM no" "PasswordAuthentication no" \
      "KbdInteractiveAuthentication no" "AllowUsers gitsrv" "LogLevel VERBOSE" ${3:+"$3"} > sshd/config.$1
    /usr/sbin/sshd -D -e -f "$PWD/sshd/config.$1" 2>> sshd.log &
    SERVERS="$SERVERS $!"
    for i in $(seq 1 100); do grep -q "Server listening on 127.0.0.1 port $1" sshd.log && return 0; sleep 0.05; done
    cat sshd.log; fail "sshd did not start on port $1"
  }
  SERVERS=""
  printf "execution:\n  executor_command_template: \"cat > %s/payload.json; sleep 60\"\n  git:\n    known_hosts: %s/known_hosts\n" "$PWD" "$PWD" > config.yaml
  chmod 600 config.yaml
  mkdir -p "$AGOR_HOME" && chmod 700 "$AGOR_HOME"
  "$AGOR" daemon --foreground --port 0 --config "$PWD/config.yaml" 2>> daemon.log &
  daemon_pid=$!
  trap "kill \$SERVERS $daemon_pid 2>/dev/null; wait $daemon_pid 2>/dev/null" EXIT
  for i in $(seq 1 200); do [ -S "$AGOR_HOME/run/agor.sock" ] && rpc ping >/dev/null 2>&1 && break; sleep 0.05; done
  start_sshd "$sshd_port"
  owner=$(rpc users.list | python3 -c "import json,sys; print(json.load(sys.stdin)[\"result\"][0][\"id\"])")
  python3 - "$AGOR_HOME/agor.db" "$owner" <<PY
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); o = sys.argv[2]
db.execute("INSERT INTO repos (id, url, path, created_by, created_at) VALUES (\"r1\", \"/src\", \"/d/repos/o/r.git\", ?, 0)", (o,))
db.execute("INSERT INTO worktrees (id, repo_id, name, path, created_by, created_at) VALUES (\"w1\", \"r1\", \"w\", \"/d/worktrees/o/r/w\", ?, 0)", (o,))
db.commit()
PY
  session=$(rpc sessions.create "{\"worktree_id\":\"w1\",\"tool\":\"claude-code\"}" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"result\"][\"id\"])")
  rpc sessions.prompt "{\"session_id\":\"$session\",\"prompt\":\"hello\"}" > /dev/null
  for i in $(seq 1 100); do [ -s payload.json ] && break; sleep 0.05; done
  token=$(json_get payload.json sessionToken)
  known() { echo "[127.0.0.1]:$sshd_port $(cut -d" " -f1,2 "$1")" > known_hosts; }
  store_key() { "$AGOR" api-key set "git-ssh:127.0.0.1:$sshd_port" "$@" --json > set; }
  clone() { # clone URL OUT — git.clone through an executor with the task token
    python3 -c "import json,sys; print(json.dumps({\"command\":\"git.clone\",\"params\":{\"url\":sys.argv[1],\"outputPath\":sys.argv[2]},\"daemonUrl\":\"unix:\"+sys.argv[3],\"sessionToken\":sys.argv[4]}))" \
      "$1" "$2" "$AGOR_HOME/run/agor.sock" "$token" > clone.json
    rc=0; "$AGOR" executor --stdin < clone.json > out 2> err || rc=$?
  }
  url="ssh://gitsrv@127.0.0.1:$sshd_port/home/gitsrv/acme/widget.git"
'

test_case "clone over ssh:// with a stored key; the host key is the one execution.git.known_hosts lists" "$SCENE"'
  known sshd/host_key.pub
  store_key < user_key
  expect_json set service "git-ssh:127.0.0.1:$sshd_port"
  clone "$url" ok.git
  expect_success
  [ "$(git -C "$AGOR_HOME/repos/ok.git" rev-parse main)" = "$(git -C src rev-parse main)" ]
  grep -q "Accepted publickey for gitsrv" sshd.log || { cat sshd.log; fail "sshd did not log the key login"; }
  # no user in the URL: the user name stored with the key
  "$AGOR" api-key set "git-ssh:127.0.0.1:$sshd_port" --username gitsrv < user_key > /dev/null
  clone "ssh://127.0.0.1:$sshd_port/home/gitsrv/acme/widget.git" stored-user.git
  expect_success
  rpc audit.list > audit
  grep -q "git-ssh:127.0.0.1:$sshd_port" audit || fail "the key use is not audited"
'

test_case "clone with a stored Ed25519 key (ssh-keygen's default): agor's own signature is one sshd accepts" "$SCENE"'
  known sshd/host_key.pub
  store_key < ed_key
  clone "$url" ed.git
  expect_success
  [ "$(git -C "$AGOR_HOME/repos/ed.git" rev-parse main)" = "$(git -C src rev-parse main)" ]
  fp=$(ssh-keygen -l -E sha256 -f ed_key.pub | cut -d" " -f2)
  grep -q "Accepted publickey for gitsrv from 127.0.0.1 port [0-9]* ssh2: ED25519 $fp" sshd.log ||
    { cat sshd.log; fail "sshd did not log the Ed25519 key login"; }
'

test_case "agor repo clone over ssh: the daemon gives the executor a token for the key and the host keys" "$SCENE"'
  known sshd/host_key.pub
  store_key < user_key
  kill $daemon_pid; wait $daemon_pid 2>/dev/null || true
  printf "execution:\n  git:\n    known_hosts: %s/known_hosts\n" "$PWD" > config.yaml   # the real executor
  "$AGOR" daemon --foreground --port 0 --config "$PWD/config.yaml" 2>> daemon.log &
  daemon_pid=$!
  trap "kill \$SERVERS $daemon_pid 2>/dev/null; wait $daemon_pid 2>/dev/null" EXIT
  for i in $(seq 1 200); do rpc ping >/dev/null 2>&1 && break; sleep 0.05; done
  expect_exit 0 "$AGOR" repo clone "$url" --json
  grep -q "Accepted publickey for gitsrv" sshd.log || { cat sshd.log daemon.log; fail "no key login"; }
  [ -d "$AGOR_HOME/repos/127.0.0.1/acme/widget.git" ] || { ls -R "$AGOR_HOME/repos"; fail "not cloned to its default path"; }
'

test_case "clone with an scp-like URL (gitsrv@127.0.0.1:acme/widget.git, port 22)" "$SCENE"'
  python3 -c "import socket; s=socket.socket(); s.bind((\"127.0.0.1\",22))" 2>/dev/null || skip_case "127.0.0.1:22 is taken"
  start_sshd 22
  echo "127.0.0.1 $(cut -d" " -f1,2 sshd/host_key.pub)" > known_hosts
  "$AGOR" api-key set git-ssh:127.0.0.1 < user_key > /dev/null
  clone "gitsrv@127.0.0.1:acme/widget.git" scp.git
  expect_success
  [ "$(git -C "$AGOR_HOME/repos/scp.git" rev-parse main)" = "$(git -C src rev-parse main)" ]
'

test_case "attack: an unknown host key is refused naming its SHA256 fingerprint (no trust on first use)" "$SCENE"'
  store_key < user_key
  echo "[127.0.0.1]:1 $(cut -d" " -f1,2 sshd/host_key.pub)" > known_hosts   # another port: not this server
  fp=$(ssh-keygen -l -E sha256 -f sshd/host_key.pub | cut -d" " -f2)
  clone "$url" unknown.git
  expect_error AUTH_FAILED 1
  expect_contains out "unknown host key $fp"
  expect_json out error.details.fingerprint "$fp"
  ! grep -q "Accepted publickey" sshd.log || fail "the key went to an unchecked server"
  [ ! -e "$AGOR_HOME/repos/unknown.git" ] || fail "left a clone behind"
  known sshd/host_key.pub; chmod g+w known_hosts   # a file others may write is not trusted
  clone "$url" writable.git
  expect_error AUTH_FAILED 1
  expect_contains out "chmod go-w"
  rm known_hosts   # execution.git.known_hosts unreadable: refused too
  clone "$url" unread.git
  expect_error AUTH_FAILED 1
  expect_contains out "execution.git.known_hosts"
'

test_case "attack: a changed host key (another key listed for this server) is refused naming both the fingerprint" "$SCENE"'
  store_key < user_key
  ssh-keygen -q -t ecdsa -N "" -f other_host_key
  known other_host_key.pub
  # what the run could write for itself is never trusted: the real key in $HOME/.ssh/known_hosts changes nothing
  mkdir -p "$HOME/.ssh" && echo "[127.0.0.1]:$sshd_port $(cut -d" " -f1,2 sshd/host_key.pub)" > "$HOME/.ssh/known_hosts"
  fp=$(ssh-keygen -l -E sha256 -f sshd/host_key.pub | cut -d" " -f2)
  clone "$url" changed.git
  expect_error AUTH_FAILED 1
  expect_contains out "the host key $fp"
  expect_contains out "is not the one execution.git.known_hosts lists"
  ! grep -q "Accepted publickey" sshd.log || fail "the key went to a server with a changed host key"
  # a @revoked line wins over a listed key
  { echo "[127.0.0.1]:$sshd_port $(cut -d" " -f1,2 sshd/host_key.pub)"; echo "@revoked * $(cut -d" " -f1,2 sshd/host_key.pub)"; } > known_hosts
  clone "$url" revoked.git
  expect_error AUTH_FAILED 1
'

test_case "a server with only an Ed25519 or only an RSA host key fails naming the host key type agor checks" "$SCENE"'
  store_key < ed_key
  for type in ed25519 rsa; do
    ssh-keygen -q -t $type -N "" -f host_$type
    port=$(free_port)
    start_sshd $port "$PWD/host_$type"
    echo "[127.0.0.1]:$port $(cut -d" " -f1,2 host_$type.pub)" > known_hosts
    "$AGOR" api-key set "git-ssh:127.0.0.1:$port" < ed_key > /dev/null
    clone "ssh://gitsrv@127.0.0.1:$port/home/gitsrv/acme/widget.git" only-$type.git
    expect_error GIT_ERROR 1
    expect_contains out "the ssh key exchange failed"
    expect_contains out "agor checks ECDSA host keys only"
  done
  [ "$(grep -c "no matching host key type found" sshd.log)" = 2 ] || { cat sshd.log; fail "sshd did not end the key exchanges"; }
  ! grep -q "Accepted publickey" sshd.log || fail "a key login without a checked host key"
  # an RSA host key a server still offers as ssh-rsa (SHA-1) is checked against its known_hosts line like any key
  port=$(free_port)
  start_sshd $port "$PWD/host_rsa" "HostKeyAlgorithms +ssh-rsa"
  "$AGOR" api-key set "git-ssh:127.0.0.1:$port" < ed_key > /dev/null
  echo "[127.0.0.1]:$port $(cut -d" " -f1,2 host_ed25519.pub)" > known_hosts
  clone "ssh://gitsrv@127.0.0.1:$port/home/gitsrv/acme/widget.git" rsa-unknown.git
  expect_error AUTH_FAILED 1
  expect_contains out "the host key $(ssh-keygen -l -E sha256 -f host_rsa.pub | cut -d" " -f2) (ssh-rsa) is not the one"
  echo "[127.0.0.1]:$port $(cut -d" " -f1,2 host_rsa.pub)" > known_hosts
  clone "ssh://gitsrv@127.0.0.1:$port/home/gitsrv/acme/widget.git" rsa-host.git
  expect_success
'

test_case "a hashed known_hosts entry (ssh-keygen -H) matches" "$SCENE"'
  store_key < user_key
  known sshd/host_key.pub
  ssh-keygen -q -H -f known_hosts 2>/dev/null && rm -f known_hosts.old
  grep -q "^|1|" known_hosts || fail "not hashed"
  clone "$url" hashed.git
  expect_success
'

test_case "a user key the server does not know fails clearly; RSA and encrypted keys are refused naming the fix" "$SCENE"'
  known sshd/host_key.pub
  for type in ecdsa ed25519; do
    ssh-keygen -q -t $type -N "" -f stranger_$type
    store_key < stranger_$type
    clone "$url" stranger-$type.git
    expect_error AUTH_FAILED 1
    expect_contains out "refused the stored ssh key for user gitsrv"
  done
  ! grep -q "Accepted publickey" sshd.log || fail "a key the server does not list logged in"
  ssh-keygen -q -t rsa -b 2048 -N "" -f rsa_key
  store_key < rsa_key
  clone "$url" rsa.git
  expect_error AUTH_FAILED 1
  expect_contains out "RSA key (ssh-rsa)"
  expect_contains out "ssh-keygen -t ed25519"
  for type in ecdsa ed25519; do
    ssh-keygen -q -t $type -N "a passphrase" -f locked_$type
    store_key < locked_$type
    clone "$url" locked-$type.git
    expect_error AUTH_FAILED 1
    expect_contains out "encrypted with a passphrase"
    expect_contains out "ssh-keygen -p -N"
  done
  # an Ed25519 key whose public half is not its private half'"'"'s (the copy inside the private section changed)
  python3 - ed_key > mixed_key <<PY
import base64, sys
text = open(sys.argv[1]).read().split("\n")
body = base64.b64decode("".join(text[1:-2]))
pub = body.index(b"ssh-ed25519", body.index(b"ssh-ed25519") + 1) + 11 + 4   # the private section'"'"'s copy of A
seed_pub = pub + 32 + 4 + 32                                                  # A again, after the seed
body = body[:seed_pub] + bytes([body[seed_pub] ^ 1]) + body[seed_pub + 1:]
b64 = base64.b64encode(body).decode()
print(text[0]); print("\n".join(b64[i:i + 70] for i in range(0, len(b64), 70))); print(text[-2])
PY
  store_key < mixed_key
  clone "$url" mixed.git
  expect_error AUTH_FAILED 1
  expect_contains out "do not belong together"
  "$AGOR" api-key remove "git-ssh:127.0.0.1:$sshd_port" > /dev/null
  clone "$url" none.git
  expect_error NOT_FOUND 1
'

test_case "the key (Ed25519 or ECDSA) is never on disk under the data home, in argv, in the database in clear or in output" "$SCENE"'
  known sshd/host_key.pub
  for key in ed_key user_key; do
    store_key < $key
    # every long line of the key body past its fixed header: the private part is in them
    sed "1,2d;\$d" $key | awk "length >= 40" > $key.lines
    [ $(wc -l < $key.lines) -ge 2 ] || fail "no key lines to look for"
    # watch every process argv and environment while the clone runs
    rm -f watch.stop
    ( while [ ! -e watch.stop ]; do cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr "\0" "\n"; done > watched.$key ) &
    watcher=$!
    clone "$url" watched-$key.git
    touch watch.stop; wait $watcher
    expect_success
    [ -s watched.$key ] || fail "nothing watched"
    ! grep -qF -f $key.lines watched.$key || fail "the $key was in a process argv or environment"
    ! grep -rqF -f $key.lines "$AGOR_HOME" "$HOME" out err daemon.log || fail "the $key is on disk under the data home or in output"
    ! grep -aqF -f $key.lines "$AGOR_HOME/agor.db" || fail "the $key is in the database in clear"
    python3 - "$AGOR_HOME/agor.db" "$sshd_port" <<PY
import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute("SELECT sealed FROM api_keys WHERE service = ?", ("git-ssh:127.0.0.1:" + sys.argv[2],)).fetchone()
assert row and b"OPENSSH" not in bytes(row[0]), row
PY
    find "$AGOR_HOME" /tmp -newer clone.json -type f 2>/dev/null | while read -r f; do
      ! grep -qF -f $key.lines "$f" || fail "the $key was written to $f"
    done
  done
'

test_done
