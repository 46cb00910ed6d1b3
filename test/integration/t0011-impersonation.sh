#!/usr/bin/env bash
# t0011-impersonation — docs/payloads.md#impersonation for real: users made in a scratch /etc, sudo rules, an executor that
# re-executes itself as asUser; ownership, confinement of the other user's AGOR_HOME, no secrets in argv.
. "$(dirname "$0")/../lib.sh"

file_needs root,sudo,unshare "impersonation through sudo"

# The common scene, run inside the private namespace: a daemon user `agord` whose AGOR_HOME is 0700,
# an execution user `alice` it may run `BIN executor --stdin` as, a user `bob` it may not, a shared data home.
SCENE='
  groupadd -f agor_users
  useradd -m -s /bin/sh agord
  useradd -m -s /bin/sh -G agor_users alice
  useradd -m -s /bin/sh bob
  mkdir -p bin && cp "$AGOR" bin/agor && chmod 755 bin bin/agor
  BIN="$T/bin/agor"
  chmod 755 "$T" && d="$T"; while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  printf "agord ALL=(alice) NOPASSWD: %s executor --stdin\nDefaults!%s env_keep += \"AGOR_IMPERSONATED\"\n" "$BIN" "$BIN" > /etc/sudoers.d/agor-test
  chmod 440 /etc/sudoers.d/agor-test && visudo -cf /etc/sudoers.d/agor-test >/dev/null
  mkdir -p data && chown alice:agor_users data && chmod 2770 data
  make_source_repo src && chmod -R a+rX src
  as_agord() { setpriv --reuid=agord --regid=agord --init-groups env -i HOME=/home/agord AGOR_HOME=/home/agord/.agor PATH=/usr/bin:/bin "$@"; }
  run_as_agord() { rc=0; printf "%s" "$1" | as_agord "$BIN" executor --stdin > out 2> err || rc=$?; }
  as_agord mkdir -m 700 /home/agord/.agor
'

test_case "asUser runs the command as that user: files owned by alice" '
  in_scratch_system "$SCENE"'"'"'
  run_as_agord "{\"command\":\"git.clone\",\"params\":{\"url\":\"$T/src\",\"outputPath\":\"acme/src.git\"},\"asUser\":\"alice\",\"dataHome\":\"$T/data\"}"
  expect_success
  [ "$(stat -c %U data/repos/acme/src.git/HEAD)" = alice ] || fail "owned by $(stat -c %U data/repos/acme/src.git/HEAD)"
  run_as_agord "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/src.git\",\"worktreeName\":\"w\",\"worktreePath\":\"acme/src/w\",\"branch\":\"main\"},\"asUser\":\"alice\",\"dataHome\":\"$T/data\"}"
  expect_success
  [ "$(stat -c %U data/worktrees/acme/src/w/hello.txt)" = alice ]
'"'"'
'

test_case "the impersonated executor cannot read the invoking user's 0700 AGOR_HOME" '
  in_scratch_system "$SCENE"'"'"'
  as_agord git init -q --bare /home/agord/.agor/secret.git
  as_agord sh -c "echo jwt-secret > /home/agord/.agor/jwt.secret && chmod 600 /home/agord/.agor/jwt.secret"
  run_as_agord "{\"command\":\"git.clone\",\"params\":{\"url\":\"/home/agord/.agor/secret.git\",\"outputPath\":\"stolen.git\"},\"asUser\":\"alice\",\"dataHome\":\"$T/data\"}"
  expect_error GIT_ERROR 1
  [ ! -e data/repos/stolen.git ]
  ! setpriv --reuid=alice --regid=alice --init-groups cat /home/agord/.agor/jwt.secret 2>/dev/null
'"'"'
'

test_case "othersFsAccess: alice's new worktree gets admin's modes and ACLs with her own group; bob reads it or not; initUnixGroup refused" '
  in_scratch_system "$SCENE"'"'"'
  mkdir -p open && chown alice:alice open && chmod 755 open
  wt() { run_as_agord "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/src.git\",\"worktreeName\":\"$1\",\"worktreePath\":\"acme/src/$1\",\"branch\":\"b-$1\",\"createBranch\":true$2},\"asUser\":\"alice\",\"dataHome\":\"$T/open\"}"; }
  run_as_agord "{\"command\":\"git.clone\",\"params\":{\"url\":\"$T/src\",\"outputPath\":\"acme/src.git\"},\"asUser\":\"alice\",\"dataHome\":\"$T/open\"}"
  expect_success
  wt r ",\"othersFsAccess\":\"read\""
  expect_success
  expect_json out data.othersFsAccess.level read
  w=open/worktrees/acme/src/r
  expect_mode "$w" 2775
  [ "$(stat -c %G "$w/hello.txt")" = alice ] || fail "not in the group of alice"
  getfacl -cp "$w" | grep -qx "default:other::r-x" || { getfacl -cp "$w"; fail "no default ACL"; }
  setpriv --reuid=bob --regid=bob --init-groups cat "$w/hello.txt" > /dev/null || fail "bob cannot read (read)"
  ! setpriv --reuid=bob --regid=bob --init-groups touch "$w/bob" 2> /dev/null || fail "bob can write (read)"
  wt n ",\"othersFsAccess\":\"none\""
  expect_success
  expect_mode open/worktrees/acme/src/n 2770
  ! setpriv --reuid=bob --regid=bob --init-groups cat open/worktrees/acme/src/n/hello.txt 2> /dev/null || fail "bob can read (none)"
  wt g ",\"initUnixGroup\":true"
  expect_error PERMISSION_DENIED 1
  expect_contains out "sudo -n agor admin create-worktree-group"
  [ ! -e open/worktrees/acme/src/g ] || fail "a refused payload made the worktree"
'"'"'
'

test_case "a user the sudo rules do not allow is IMPERSONATION_FAILED with the message of sudo" '
  in_scratch_system "$SCENE"'"'"'
  run_as_agord "{\"command\":\"git.clone\",\"params\":{\"url\":\"$T/src\"},\"asUser\":\"bob\",\"dataHome\":\"$T/data\"}"
  expect_error IMPERSONATION_FAILED 1
  expect_contains out "password is required"
  run_as_agord "{\"command\":\"git.clone\",\"params\":{\"url\":\"$T/src\"},\"asUser\":\"nosuchuser\",\"dataHome\":\"$T/data\"}"
  expect_error IMPERSONATION_FAILED 1
  expect_contains out "no such user"
'"'"'
'

test_case "no secret in any argv: the session token travels on stdin only" '
  in_scratch_system "$SCENE"'"'"'
  python3 -c "
import socket, time, sys
s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(4)
open(\"port\", \"w\").write(str(s.getsockname()[1]))
c, _ = s.accept(); time.sleep(4)
" & stall=$!
  while [ ! -s port ]; do sleep 0.05; done
  payload="{\"command\":\"git.clone\",\"params\":{\"url\":\"https://localhost:$(cat port)/o/r.git\"},\"sessionToken\":\"TOKEN-SHOULD-STAY-SECRET\",\"asUser\":\"alice\",\"dataHome\":\"$T/data\"}"
  run_as_agord "$payload" & runner=$!
  for i in $(seq 1 100); do
    for p in $(pgrep -f "executor --stdin" || true); do
      tr "\0" " " < /proc/$p/cmdline >> cmdlines 2>/dev/null || true; echo >> cmdlines
      tr "\0" "\n" < /proc/$p/environ >> environs 2>/dev/null || true
    done
    grep -q "^/usr/bin/sudo -n -u alice" cmdlines 2>/dev/null && grep -c "executor --stdin" cmdlines | grep -qv "^[01]$" && break
    sleep 0.03
  done
  kill $stall 2>/dev/null || true; wait $runner || true; wait $stall 2>/dev/null || true
  [ -s cmdlines ] || fail "never saw an executor process"
  grep -q "sudo -n -u alice -- $T/bin/agor executor --stdin" cmdlines || { cat cmdlines; fail "no sudo re-exec seen"; }
  ! grep -q TOKEN-SHOULD-STAY-SECRET cmdlines environs || fail "token leaked into argv or environment"
'"'"'
'

test_case "running as the requested user already needs no sudo (and never loops)" '
  in_scratch_system "$SCENE"'"'"'
  rc=0; printf "%s" "{\"command\":\"git.clone\",\"params\":{\"url\":\"$T/src\",\"outputPath\":\"self.git\"},\"asUser\":\"alice\",\"dataHome\":\"$T/data\"}" \
    | setpriv --reuid=alice --regid=alice --init-groups env -i HOME=/home/alice PATH=/usr/bin:/bin "$BIN" executor --stdin > out 2> err || rc=$?
  expect_success
  rc=0; printf "%s" "{\"command\":\"git.clone\",\"params\":{\"url\":\"$T/src\"},\"asUser\":\"bob\",\"dataHome\":\"$T/data\"}" \
    | setpriv --reuid=alice --regid=alice --init-groups env -i HOME=/home/alice PATH=/usr/bin:/bin AGOR_IMPERSONATED=1 "$BIN" executor --stdin > out 2> err || rc=$?
  expect_error IMPERSONATION_FAILED 1
  expect_contains out "refusing to re-enter sudo"
'"'"'
'

test_case "the execution user's own config cannot turn the sandbox off: the policy of agord's executor wins" '
  in_scratch_system "$SCENE"'"'"'
  trap "rmdir /sys/fs/cgroup/*/agor/alice /sys/fs/cgroup/agor/alice 2> /dev/null || true" EXIT
  "$BIN" admin cgroup-delegate alice > /dev/null   # the runs of alice make their cgroups there
  run_as_agord "{\"command\":\"git.clone\",\"params\":{\"url\":\"$T/src\",\"outputPath\":\"acme/src.git\"},\"asUser\":\"alice\",\"dataHome\":\"$T/data\"}"
  expect_success
  run_as_agord "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/src.git\",\"worktreeName\":\"w\",\"worktreePath\":\"acme/src/w\",\"branch\":\"main\"},\"asUser\":\"alice\",\"dataHome\":\"$T/data\"}"
  expect_success
  as_agord sh -c "umask 077; printf \"execution:\\n  sandbox:\\n    memory_max_mb: 300\\n\" > /home/agord/.agor/config.yaml"
  # what anything that once ran unsandboxed as alice could have written
  setpriv --reuid=alice --regid=alice --init-groups sh -c "umask 077; mkdir -p /home/alice/.agor && printf \"execution:\\n  fallback_to_unified: true\\n  sandbox:\\n    enabled: false\\n    fail_closed: false\\n    network: host\\n    memory_max_mb: 0\\n\" > /home/alice/.agor/config.yaml"
  run_as_agord "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"acme/src/w\",\"argv\":[\"/bin/sh\",\"-c\",\"id -un; hostname\"]},\"asUser\":\"alice\",\"dataHome\":\"$T/data\"}"
  expect_success
  expect_json out data.stdout "alice
agor-sandbox"
  expect_json out data.sandbox.enabled true
  expect_json out data.sandbox.network none
  expect_json out data.sandbox.cgroup.memoryMaxBytes $((300 << 20))
'"'"'
'

test_case "nothing leaked to the host: no agord/alice/bob users, no sudoers file" '
  ! getent passwd agord alice bob
  [ ! -e /etc/sudoers.d/agor-test ]
'

test_done
