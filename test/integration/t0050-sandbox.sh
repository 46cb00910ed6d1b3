#!/usr/bin/env bash
# t0050-sandbox — exec.run inside the kernel sandbox (issue 10): each attack from inside must fail, resource
# abuse is contained, missing controls fail closed (or fall back loudly when the operator said so), receipts.
. "$(dirname "$0")/../lib.sh"

file_needs root "sandbox tests (cgroups)"

DENY="$TEST_TOP/build/deny-syscall"
SETUP='
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"r.git\"}}"
  expect_success
  R="$AGOR_HOME/repos/r.git"
  add_worktree() {
    executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"$1\",\"worktreePath\":\"$1\",\"branch\":\"$1\",\"createBranch\":true,\"sourceBranch\":\"main\"}}"
    expect_success
  }
  add_worktree w1
  W="$AGOR_HOME/worktrees/w1"
  # sandbox SCRIPT [PREFIX…] — runs SCRIPT with /bin/sh -c in worktree w1 (PREFIX: a command wrapping the executor).
  # With $POLICY set (a JSON object), the payload carries it as its policy.
  payload() {
    python3 -c "import json,os,sys; p={\"command\":\"exec.run\",\"params\":{\"cwd\":sys.argv[1],\"argv\":[\"/bin/sh\",\"-c\",sys.argv[2]],\"timeoutMs\":30000},\"env\":{\"GIT_AUTHOR_NAME\":\"t\",\"GIT_AUTHOR_EMAIL\":\"t@t\",\"GIT_COMMITTER_NAME\":\"t\",\"GIT_COMMITTER_EMAIL\":\"t@t\"}}
if os.environ.get(\"POLICY\"): p[\"policy\"]=json.loads(os.environ[\"POLICY\"])
print(json.dumps(p))" "$W" "$1" > payload.json
  }
  sandbox() {
    payload "$1"; shift
    rc=0
    "$@" "$AGOR" executor --stdin < payload.json > out 2> err || rc=$?
  }
  ran() { expect_success; json_get out data.stdout > stdout; json_get out data.stderr > stderr; }
  # refused SCRIPT — SCRIPT ran and exited non-zero (it prints what it tried).
  refused() { sandbox "$1"; ran; [ "$(json_get out data.exitCode)" != 0 ] || { cat stdout stderr; fail "not refused: $1"; }; }
  config() { mkdir -p "$AGOR_HOME"; printf "%s\n" "execution:" "  sandbox:" "$@" > "$AGOR_HOME/config.yaml"; }
'

test_case "a program runs in the worktree: writes there, sees its own PID namespace and no capabilities" "$SETUP"'
  sandbox "pwd; echo made > made.txt; echo \$\$; hostname; grep -E \"^(CapEff|CapBnd|NoNewPrivs|Seccomp):\" /proc/self/status"
  ran
  expect_json out data.exitCode 0
  expect_json out data.outcome ok
  [ "$(cat "$W/made.txt")" = made ] || fail "the file written in the sandbox is not in the worktree"
  expect_contains stdout "$W"
  expect_contains stdout "agor-sandbox"
  expect_contains stdout "CapEff:	0000000000000000"
  expect_contains stdout "CapBnd:	0000000000000000"
  expect_contains stdout "NoNewPrivs:	1"
  expect_contains stdout "Seccomp:	2"
  [ "$(sed -n 2p stdout)" -lt 10 ] || fail "the shell is not in a fresh PID namespace (pid $(sed -n 2p stdout))"
'

# v1: the child joins by writing "0" to the tasks file of each group (one thread: the whole process), v2 to
# cgroup.procs; the program and what it starts must be inside the run group of every limited controller.
test_case "the program and its children run inside the run's cgroup of every controller" "$SETUP"'
  sandbox "sleep 5 & cat /proc/\$!/cgroup; cat /proc/self/cgroup"
  ran
  run=$(json_get out data.sandbox.cgroup.paths.0 | sed "s,.*/agor/,,")
  case "$run" in run-*) ;; *) cat out; fail "no run cgroup in the receipt" ;; esac
  if [ "$(json_get out data.sandbox.cgroup.version)" = 1 ]; then
    for c in memory pids; do
      [ "$(grep -cE "^[0-9]+:([^:]*,)?$c(,[^:]*)?:/agor/$run\$" stdout)" = 2 ] || { cat stdout; fail "not in the $c group $run"; }
    done
  else
    [ "$(grep -cx "0::/agor/$run" stdout)" = 2 ] || { cat stdout; fail "not in the group $run"; }
  fi
  expect_json out data.events.cgroupRemoved true
'

test_case "the receipt names every control in force; --dry-run shows it without creating anything" "$SETUP"'
  sandbox "true"
  ran
  expect_json out data.sandbox.enabled true
  expect_json out data.sandbox.namespaces "[\"mount\", \"pid\", \"ipc\", \"uts\", \"net\"]"  # root: no user namespace
  expect_json out data.sandbox.runAs.uid 65534
  expect_json out data.sandbox.network none
  [ "$(json_get out data.sandbox.landlock.abi)" -ge 1 ] || fail "no Landlock ABI in the receipt"
  expect_json out data.sandbox.seccomp.denied.0 ptrace
  expect_json out data.sandbox.capabilities none
  expect_json out data.sandbox.noNewPrivs true
  expect_json out data.sandbox.cgroup.pidsMax 1024
  expect_json out data.events.cgroupRemoved true
  payload "touch should-not-exist"
  "$AGOR" executor --stdin --dry-run < payload.json > out
  expect_json out data.plan.1.sandbox.cgroup.planned true
  expect_json out data.plan.1.sandbox.enabled true
  [ ! -e "$W/should-not-exist" ] || fail "the dry run ran the program"
'

test_case "attack: read the daemon database, config and secrets; list AGOR_HOME" "$SETUP"'
  echo "secret-db" > "$AGOR_HOME/agor.db"; echo "jwt" > "$AGOR_HOME/jwt.secret"; echo "k" > "$AGOR_HOME/master.key"
  printf "daemon:\n  port: 3030\n" > "$AGOR_HOME/config.yaml"
  for f in agor.db jwt.secret master.key config.yaml; do
    refused "cat \"$AGOR_HOME/$f\""
    expect_not_contains stdout "secret-db"
  done
  refused "ls \"$AGOR_HOME\""
  refused "ls \"$HOME\""
'

test_case "attack: with the data home in the passwd home (the default ~/.agor), HOME moves aside, the skeleton is neither listable nor writable, and refs/logs/objects and the admin entry take no symlink or fifo" '
  root_home=$(getent passwd "$(id -un)" | cut -d: -f6)
  tmp_home=$(mktemp -d "$root_home/agor-t0050.XXXXXX")
  trap "rm -rf $tmp_home" EXIT
  export AGOR_HOME="$tmp_home/.agor"
  '"$SETUP"'
  sandbox "echo \$HOME; echo x > \$HOME/note && cat \$HOME/note"
  ran
  expect_contains stdout "/home/agor-sandbox"
  refused "ls \"$AGOR_HOME\""
  refused "ls \"$tmp_home\""
  refused "touch \"$AGOR_HOME/agor-x\""
  refused "chmod 755 \"$AGOR_HOME\" && ls \"$AGOR_HOME\""
  refused "ls \"$AGOR_HOME/worktrees\""
  refused "ln -s /etc \"$R/logs/evil\""
  refused "mkfifo \"$R/refs/heads/fifo\""
  refused "mkdir -p \"$R/objects/a/b/c/d/e/f/g/h/i\" && ln -s /etc \"$R/objects/a/b/c/d/e/f/g/h/i/deep\""
  refused "ln -sf /etc/passwd \"$R/worktrees/w1/logs/HEAD\""
  refused "rm -f \"$R/worktrees/w1/index\" && mkfifo \"$R/worktrees/w1/index\""
  [ -z "$(find "$R" -type l -o -type p)" ] || { find "$R" -type l -o -type p; fail "a symlink or fifo was planted"; }
  sandbox "echo ok > inside.txt && git add inside.txt && git commit -q -m inside && cat inside.txt"
  ran
  expect_json out data.exitCode 0
'

test_case "a data home under /tmp (replaced by a private tmpfs inside) is refused, naming the fix" '
  tmp_home=$(mktemp -d /tmp/agor-t0050.XXXXXX)
  trap "rm -rf $tmp_home" EXIT
  export AGOR_HOME="$tmp_home/.agor"
  '"$SETUP"'
  sandbox "echo ran"
  expect_error ISOLATION_UNAVAILABLE 1
  expect_contains out "move the data home out of /tmp (paths.data_home)"
'

test_case "attack: list or read another worktree and other homes" "$SETUP"'
  add_worktree w2
  echo "other-secret" > "$AGOR_HOME/worktrees/w2/secret.txt"
  refused "cat \"$AGOR_HOME/worktrees/w2/secret.txt\""
  refused "ls \"$AGOR_HOME/worktrees/w2\""
  refused "ls \"$AGOR_HOME/worktrees\""
  refused "ls /home/*"
  refused "cat /root/.bash_history /root/.profile"
  refused "ls \"$R/worktrees/w2\""
'

test_case "attack: write outside the worktree (system, data home, repository config, root)" "$SETUP"'
  refused "touch /usr/agor-x"
  refused "touch /etc/agor-x"
  refused "touch \"$AGOR_HOME/agor-x\""
  refused "touch /agor-x"
  refused "echo \"[core]\" >> \"$R/config\""
  [ ! -e /usr/agor-x ] && [ ! -e /etc/agor-x ] && [ ! -e "$AGOR_HOME/agor-x" ]
'

test_case "attack: plant .git/hooks/post-commit (and core.hooksPath) — refused; git itself still works" "$SETUP"'
  refused "printf \"#!/bin/sh\ntouch /tmp/pwned\n\" > \"$R/hooks/post-commit\""
  [ ! -e "$R/hooks/post-commit" ] || fail "a hook was planted in the repository"
  refused "git config core.hooksPath /tmp"
  sandbox "echo change > change.txt && git add change.txt && git commit -q -m from-sandbox && git log --oneline -1"
  ran
  expect_json out data.exitCode 0
  [ "$(git -C "$R" log --format=%s -1 w1)" = from-sandbox ] || fail "the commit made in the sandbox is not in the repository"
'

test_case "attack: a symlink planted in the worktree to /etc/shadow or AGOR_HOME leads nowhere" "$SETUP"'
  ln -s /etc/shadow "$W/shadow-link"
  ln -s "$AGOR_HOME" "$W/home-link"
  echo "db" > "$AGOR_HOME/agor.db"
  refused "cat shadow-link"
  refused "cat home-link/agor.db"
'

test_case "attack: connect to the daemon Unix socket and TCP port" "$SETUP"'
  start_daemon
  curl -fsS "http://127.0.0.1:$port/healthz" > /dev/null || fail "the daemon is not reachable from the host"
  refused "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect(\\\"$AGOR_HOME/run/agor.sock\\\")\""
  expect_contains stderr "No such file"
  refused "python3 -c \"import socket; socket.create_connection((\\\"127.0.0.1\\\", $port), timeout=3)\""
'

test_case "attack: ptrace, signal a process outside, BPF, TIOCSTI, mount, a new user namespace" "$SETUP"'
  sleep 300 & victim=$!
  trap "kill $victim 2>/dev/null" EXIT
  refused "kill -0 $victim"
  cat > "$W/attacks.py" <<PY
import ctypes, fcntl, os, sys, termios
libc = ctypes.CDLL(None, use_errno=True)
def attempt(name, rc):
    print(name, rc, os.strerror(ctypes.get_errno()) if rc == -1 else "")
attempt("ptrace-attach", libc.ptrace(16, $victim, 0, 0))
attempt("ptrace-traceme", libc.ptrace(0, 0, 0, 0))
attempt("bpf", libc.syscall(321, 5, 0, 0))
attempt("userfaultfd", libc.syscall(323, 0))
attempt("io_uring_setup", libc.syscall(425, 8, 0))
attempt("netlink", libc.socket(16, 3, 0))
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"x"); print("tiocsti ok")
except OSError as e:
    print("tiocsti", e.strerror)
PY
  sandbox "python3 attacks.py"
  ran
  cat stdout
  for call in ptrace-attach ptrace-traceme bpf userfaultfd io_uring_setup; do
    grep -q "^$call -1 Operation not permitted" stdout || fail "$call was not refused with EPERM"
  done
  grep -q "^netlink -1 Address family not supported" stdout || fail "netlink socket not refused"
  grep -q "^tiocsti Operation not permitted" stdout || fail "TIOCSTI not refused"
  refused "unshare -U true"
  refused "unshare -r true"
  refused "mkdir -p /tmp/m && mount -t tmpfs none /tmp/m"
  kill -0 $victim || fail "the process outside was killed"
'

# The post-run checks (git metadata, cgroup events) must see a finished run: nothing the run started may still
# write. Writers that leave the program behind (a new session, a double fork), ignore SIGHUP/SIGTERM and wait
# for the run to end before writing into the worktree and the repository refs must be dead by then.
test_case "attack: a daemon that detaches and outwaits the run never writes after it" "$SETUP"'
  printf "%s\n" "trap \"\" HUP TERM INT" "echo \$\$ >> \"\$1/started\"" "sleep 0.5" \
    "while :; do echo late >> \"\$1/late.txt\"; echo 0000000000000000000000000000000000000000 > \"\$2/refs/heads/late\"; sleep 0.05; done" \
    > late.sh
  mkdir -p ctl/refs/heads # control: outside any sandbox the same writer does write
  sh late.sh "$PWD/ctl" "$PWD/ctl" < /dev/null > /dev/null 2>&1 &
  ctl=$!
  cp late.sh "$W/late.sh"
  sandbox "setsid sh late.sh \"$W\" \"$R\" < /dev/null > /dev/null 2>&1 & (setsid sh late.sh \"$W\" \"$R\" < /dev/null > /dev/null 2>&1 &)
    until [ \"\$(cat started 2> /dev/null | wc -l)\" -ge 2 ]; do sleep 0.05; done; exit 0"
  ran
  expect_json out data.exitCode 0
  [ "$(wc -l < "$W/started")" = 2 ] || fail "the writers in the run did not both start"
  sleep 1.5
  kill -9 $ctl
  [ -s ctl/late.txt ] && [ -s ctl/refs/heads/late ] || fail "the control writer wrote nothing: this test cannot tell"
  [ ! -e "$W/late.txt" ] || fail "a process of the run wrote into the worktree after the run"
  [ ! -e "$R/refs/heads/late" ] || fail "a process of the run wrote a ref after the run"
  ! ps -eo args | grep -v grep | grep -q "late.sh $W" || { ps -eo pid,args | grep late.sh; fail "a process of the run survived it"; }
'

test_case "abuse: a fork bomb hits pids.max, the run fails and the host stays responsive" "$SETUP"'
  config "    pids_max: 64"
  sandbox "bomb() { bomb | bomb & }; bomb; sleep 3; exit 0"
  ran
  [ "$(json_get out data.events.pidsLimitHits)" -gt 0 ] || { cat out; fail "pids.max was never hit"; }
  expect_json out data.outcome pids-limit
  true  # the host still forks
  ! ls /sys/fs/cgroup/pids/agor 2>/dev/null | grep -q run- || fail "a run cgroup was left behind"
'

test_case "abuse: a memory hog is OOM-killed inside its cgroup only" "$SETUP"'
  config "    memory_max_mb: 48"
  sandbox "python3 -c \"x = bytearray(512 << 20); print(len(x))\""
  ran
  [ "$(json_get out data.events.oomKills)" -gt 0 ] || { cat out; fail "no OOM kill recorded"; }
  expect_json out data.outcome oom
  [ "$(json_get out data.exitCode)" -ne 0 ]
'

test_case "abuse: an output flood is capped (head of stdout kept, the rest counted)" "$SETUP"'
  sandbox "head -c 5000000 /dev/zero | tr \"\\\\0\" a"
  ran
  [ "$(wc -c < stdout)" -le 1048577 ] || fail "stdout not capped: $(wc -c < stdout)"
  [ "$(json_get out data.stdoutDroppedBytes)" -gt 3000000 ] || fail "dropped bytes not counted"
'

test_case "fail closed: without Landlock nothing runs and the missing control is named" "$SETUP"'
  sandbox "touch ran-anyway" "$DENY" 444 38 --
  expect_error ISOLATION_UNAVAILABLE 1
  expect_json out error.details.missing landlock
  [ ! -e "$W/ran-anyway" ] || fail "the program ran without Landlock"
'

test_case "fail closed: without user namespaces nothing runs and the missing control is named" "$SETUP"'
  sandbox "touch ran-anyway" "$DENY" 272,56 1 0x10000000 --
  expect_error ISOLATION_UNAVAILABLE 1
  expect_json out error.details.missing "user namespace"
  [ ! -e "$W/ran-anyway" ] || fail "the program ran without namespaces"
'

test_case "fail closed: a configured limit without a cgroup hierarchy refuses the run" "$SETUP"'
  config "    cgroup_root: /nonexistent-cgroup-root"
  sandbox "touch ran-anyway"
  expect_error ISOLATION_UNAVAILABLE 1
  expect_json out error.details.missing cgroup
  [ ! -e "$W/ran-anyway" ]
'

test_case "fallback_to_unified: the run happens unsandboxed, loudly (warning and receipt)" "$SETUP"'
  mkdir -p "$AGOR_HOME"; printf "execution:\n  fallback_to_unified: true\n" > "$AGOR_HOME/config.yaml"
  sandbox "touch ran" "$DENY" 272,56 1 0x10000000 --
  ran
  [ -e "$W/ran" ] || fail "the fallback did not run the program"
  expect_json out data.sandbox.enabled false
  expect_json out data.sandbox.fallback true
  expect_json out data.sandbox.missing "user namespace"
  expect_contains err "WITHOUT a sandbox"
'

test_case "fail_closed false: a missing Landlock is left out with a warning in the receipt" "$SETUP"'
  config "    fail_closed: false"
  sandbox "true" "$DENY" 444 38 --
  ran
  expect_json out data.sandbox.enabled true
  expect_json out data.sandbox.landlock null
  expect_contains out "landlock unavailable"
'

test_case "policy: the payload's policy beats the config the executor reads (sandbox off, fail open, host network, no limit)" "$SETUP"'
  config "    enabled: false" "    fail_closed: false" "    network: host" "    memory_max_mb: 0"
  export POLICY="{\"execution.sandbox.enabled\":\"true\",\"execution.sandbox.fail_closed\":\"true\",\"execution.sandbox.network\":\"none\",\"execution.sandbox.memory_max_mb\":\"300\"}"
  sandbox "hostname"
  ran
  expect_json out data.sandbox.enabled true
  expect_json out data.sandbox.network none
  expect_json out data.sandbox.cgroup.memoryMaxBytes $((300 << 20))
  expect_contains stdout agor-sandbox
  sandbox "touch ran-anyway" "$DENY" 444 38 --   # fail_closed comes from the policy too
  expect_error ISOLATION_UNAVAILABLE 1
  [ ! -e "$W/ran-anyway" ] || fail "the program ran without Landlock"
  export POLICY="{\"execution.sandbox.enabled\":\"true\"}"   # a key left out is its built-in default
  sandbox "true"
  ran
  expect_json out data.sandbox.network none
  expect_json out data.sandbox.cgroup.memoryMaxBytes $((4096 << 20))
'

test_case "policy: the executing user's config may only tighten it (smaller limits, no network, sandbox on)" "$SETUP"'
  config "    memory_max_mb: 256" "    pids_max: 0" "    nofile: 128"
  export POLICY="{\"execution.sandbox.enabled\":\"true\",\"execution.sandbox.memory_max_mb\":\"512\",\"execution.sandbox.pids_max\":\"100\",\"execution.sandbox.nofile\":\"0\",\"execution.sandbox.network\":\"host\"}"
  sandbox "ulimit -n"
  ran
  expect_json out data.sandbox.cgroup.memoryMaxBytes $((256 << 20))   # the user'"'"'s smaller limit
  expect_json out data.sandbox.cgroup.pidsMax 100                    # 0 (no limit) is the loosest
  expect_json out data.sandbox.rlimits.nofile 128
  expect_json out data.sandbox.network host
  config "    network: none"
  sandbox "true"
  ran
  expect_json out data.sandbox.network none
'

test_case "a worktree whose .git file was changed to point outside repos/ is refused" "$SETUP"'
  printf "gitdir: %s\n" "$AGOR_HOME" > "$W/.git"
  sandbox "touch ran-anyway"
  expect_error PATH_OUTSIDE_DATA_HOME 1
  [ ! -e "$W/ran-anyway" ]
'

# --- issue 18: nothing a run writes steers a later run, host git or the daemon ------------------------------
test_case "containment: a run cannot swap .git for a repository whose hooks lead to /; planted from outside, the next run is refused and reads no secret" "$SETUP"'
  echo "k-secret" > "$AGOR_HOME/master.key"; echo "jwt-secret" > "$AGOR_HOME/jwt.secret"
  refused "rm .git"
  refused "rm -f .git; mkdir .git && echo [core] > .git/config && ln -s ../../../../.. .git/hooks"
  expect_contains stderr "busy"
  [ -f "$W/.git" ] || fail "the .git file was replaced from inside"
  # the same planted as an unsandboxed program (or a person) would: the run is refused before anything is bound
  rm "$W/.git" && mkdir "$W/.git" && echo "[core]" > "$W/.git/config" && ln -s ../../../../.. "$W/.git/hooks"
  sandbox "cat \"$AGOR_HOME/master.key\" \"$AGOR_HOME/jwt.secret\"; ls \"$AGOR_HOME/run\""
  expect_error GIT_ERROR 1
  expect_contains out "$W/.git is a directory"
  expect_json out error.details.file "$W/.git"
  expect_not_contains out k-secret
  expect_not_contains out jwt-secret
'

test_case "containment: a symlink planted where the sandbox binds (logs/, objects/, the admin entry, .git) fails the run, naming it" "$SETUP"'
  mkdir -p "$R/logs" && mv "$R/logs" "$R/logs.real"; ln -s "$AGOR_HOME" "$R/logs"
  sandbox "ls \"$R/logs\""
  expect_error PATH_OUTSIDE_DATA_HOME 1
  expect_contains out "$R/logs"
  rm "$R/logs"; mv "$R/logs.real" "$R/logs"
  mv "$R/objects" "$R/objects.real"; ln -s objects.real "$R/objects"
  sandbox "true"
  expect_error GIT_ERROR 1
  expect_contains out "$R/objects"
  rm "$R/objects"; mv "$R/objects.real" "$R/objects"
  mv "$R/worktrees/w1" "$R/wt-real"; ln -s ../wt-real "$R/worktrees/w1"
  sandbox "true"
  expect_error GIT_ERROR 1
  expect_contains out "$R/worktrees/w1 is a symlink"
  rm "$R/worktrees/w1"; mv "$R/wt-real" "$R/worktrees/w1"
  cp "$W/.git" "$T/gitfile"; rm "$W/.git"; ln -s "$T/gitfile" "$W/.git"
  sandbox "true"
  expect_error GIT_ERROR 1
  rm "$W/.git"; cp "$T/gitfile" "$W/.git"
  sandbox "git status --short | wc -l"
  ran
  expect_json out data.exitCode 0
  # an operator path inside the data home is no more trusted than the rest of it
  ln -s "$AGOR_HOME" "$W/tools"
  config "    read_only_paths: $W/tools"
  sandbox "ls $W/tools/"
  expect_error PATH_OUTSIDE_DATA_HOME 1
  expect_contains out "would be shown to the run, and it holds $AGOR_HOME"
'

test_case "containment: inside, the gitfile, gitdir, commondir, config, hooks and the repository top are read-only and refs/objects take no symlink; host git runs nothing planted" "$SETUP"'
  P="$T/pwned"
  refused "rm -f .git; git init -q . ; git config core.fsmonitor \"touch $P.fsmonitor\""
  refused "mkdir -p /tmp/evil && echo /tmp/evil > \"$R/worktrees/w1/commondir\""
  refused "echo /tmp/evil > \"$R/worktrees/w1/gitdir\""
  refused "echo /tmp/evil > \"$R/commondir\""
  refused "printf \"[core]\\n\\thooksPath = /tmp\\n\" >> \"$R/config\""
  refused "echo \"[core]\" > \"$R/worktrees/w1/config.worktree\" && test -e \"$R/worktrees/w1/config.worktree\" && git config --worktree core.fsmonitor x"
  refused "ln -s /tmp \"$R/refs/heads/evil\""
  refused "ln -s /tmp \"$R/objects/evil\""
  refused "echo /tmp/other/objects > \"$R/objects/info/alternates\""
  refused "mkdir \"$R/info/x\""
  sandbox "echo change > c.txt && git add c.txt && git commit -q -m inside && git log --format=%s -1"
  ran
  expect_json out data.exitCode 0
  expect_json out data.gitMetadata.repaired "[]"
  git -C "$W" status > /dev/null
  git -C "$R" branch host-branch
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"w3\",\"worktreePath\":\"w3\",\"branch\":\"w3\",\"createBranch\":true,\"sourceBranch\":\"main\"}}"
  expect_success
  [ -d "$R/worktrees/w3" ] || fail "the new worktree'"'"'s admin dir is not in the repository"
  ls "$T" | grep -q pwned && fail "host git ran something planted" || true
  [ ! -e "$R/commondir" ] && [ ! -e "$R/objects/info/alternates" ] && [ ! -L "$R/refs/heads/evil" ]
'

test_case "containment: metadata changed from outside (another repository's commondir, a planted commondir, a wrong repoPath) refuses the run; a run outside the sandbox is repaired after, quarantined and reported" "$SETUP"'
  make_source_repo other
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/other\",\"outputPath\":\"other.git\"}}"
  expect_success
  O="$AGOR_HOME/repos/other.git"
  cp "$R/worktrees/w1/commondir" "$T/commondir"
  echo "$O" > "$R/worktrees/w1/commondir"
  sandbox "ls \"$O\""
  expect_error GIT_ERROR 1
  expect_contains out "$R/worktrees/w1/commondir"
  cp "$T/commondir" "$R/worktrees/w1/commondir"
  echo "$O" > "$R/commondir"
  sandbox "true"
  expect_error GIT_ERROR 1
  expect_contains out "$R/commondir exists"
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"w9\",\"worktreePath\":\"w9\",\"branch\":\"w9\",\"createBranch\":true,\"sourceBranch\":\"main\"}}"
  expect_error GIT_ERROR 1
  [ ! -e "$O/worktrees/w9" ] || fail "a worktree was added in the repository the commondir named"
  rm "$R/commondir"
  python3 -c "import json,sys; print(json.dumps({\"command\":\"exec.run\",\"params\":{\"cwd\":sys.argv[1],\"repoPath\":sys.argv[2],\"argv\":[\"true\"]}}))" "$W" "$O" > p.json
  rc=0; "$AGOR" executor --stdin < p.json > out 2> err || rc=$?
  expect_error GIT_ERROR 1
  expect_contains out "but the worktree belongs to $O"
  # an unsandboxed run plants everything; afterwards it is all put back and reported
  config "    enabled: false"
  sandbox "rm .git && mkdir .git && echo x > \"$R/commondir\" && printf \"[core]\\n\\tfsmonitor = touch $T/pwned\\n\" >> \"$R/config\" && ln -s \"$O/refs/heads/main\" \"$R/refs/heads/evil\" && echo \"$O/objects\" > \"$R/objects/info/alternates\" && printf \"#!/bin/sh\\ntouch $T/pwned\\n\" > \"$R/hooks/post-checkout\" && echo x > \"$R/worktrees/w1/config.worktree\""
  ran
  expect_json out data.exitCode 0
  json_get out data.gitMetadata.repaired > repaired
  for f in "$W/.git" "$R/commondir" "$R/config" "$R/refs/heads/evil" "$R/objects/info/alternates" "$R/hooks/post-checkout" "$R/worktrees/w1/config.worktree"; do
    expect_contains repaired "\"$f\""
  done
  [ -f "$W/.git" ] && [ ! -e "$R/commondir" ] && [ ! -e "$R/refs/heads/evil" ] && [ ! -e "$R/hooks/post-checkout" ]
  expect_not_contains "$R/config" fsmonitor
  ls "$AGOR_HOME"/quarantine/*/ | grep -q "worktrees%w1%.git" || fail "the planted .git directory is not in the quarantine"
  git -C "$W" status > /dev/null
  git -C "$W" checkout -q -b host-made
  [ ! -e "$T/pwned" ] || fail "host git ran something planted"
  rm "$AGOR_HOME/config.yaml"
  sandbox "git status --short | wc -l"
  ran
  expect_json out data.exitCode 0
'

test_case "containment: what a run outside the sandbox leaves (admin-entry links and fifos, a hostile index, a gitlink into a nested repository, deep symlinks) is put back; host git hangs on nothing and writes nowhere else" "$SETUP"'
  echo victim > "$T/victim"
  cat > "$W/plant.py" <<PY
import hashlib, os, subprocess
A = open(".git").read().split(" ", 1)[1].strip().rstrip("/")
C = "$R"
os.makedirs(A + "/logs", exist_ok=True)
if os.path.exists(A + "/logs/HEAD"): os.remove(A + "/logs/HEAD")
os.symlink("$T/victim", A + "/logs/HEAD")
os.mkfifo(A + "/FETCH_HEAD")
d = C + "/logs/refs/heads/" + "/".join("abcdefghijk")
os.makedirs(d, exist_ok=True)
os.symlink("$T/victim", d + "/deep")
os.makedirs(C + "/refs/heads/a", exist_ok=True)
os.symlink("/etc", C + "/refs/heads/a/b")
os.symlink("/etc", C + "/refs/heads/a%b")
os.makedirs("zz/zz", exist_ok=True)
open("zz/zz/config.yaml", "w").write("execution:\\n  sandbox:\\n    enabled: false\\n")
subprocess.run(["git", "add", "zz/zz/config.yaml"], check=True)
idx = A + "/index"
b = open(idx, "rb").read()[:-20].replace(b"zz/zz/config.yaml", b"../../config.yaml")
open(idx, "wb").write(b + hashlib.sha1(b).digest())
print("planted")
PY
  config "    enabled: false"
  sandbox "python3 plant.py"
  ran
  expect_contains stdout planted
  json_get out data.gitMetadata.repaired > repaired
  cat repaired
  for what in "a symlink" "a fifo" "\"$R/worktrees/w1/index\""; do
    expect_contains repaired "$what"
  done
  expect_contains repaired "rebuilt from HEAD"
  [ -z "$(find "$R" -type l -o -type p)" ] || { find "$R" -type l -o -type p; fail "a symlink or fifo was left"; }
  [ -f "$R/refs/heads/main" ] || fail "a real ref was moved away"
  ls "$AGOR_HOME"/quarantine/*/ > q
  [ "$(grep -c "refs%heads%a%b" q)" -ge 2 ] || { cat q; fail "two quarantined items with the same flat name did not both survive"; }
  rm -f "$AGOR_HOME/config.yaml"
  (cd "$W" && rm -rf zz && timeout 20 git status --short > /dev/null && timeout 20 git checkout -- . && timeout 20 git -c user.name=h -c user.email=h@h commit -q --allow-empty -m host)
  [ "$(cat "$T/victim")" = victim ] || fail "host git wrote through a planted link"
  [ ! -e "$T/pwned-fsmonitor" ] || fail "host git status ran a nested repository'"'"'s fsmonitor"
  [ ! -e "$AGOR_HOME/config.yaml" ] || fail "host git checkout wrote outside the worktree"
  sandbox "hostname"
  ran
  expect_contains stdout agor-sandbox
  # a gitlink into a nested repository whose config runs a program: the nested .git goes
  config "    enabled: false"
  sandbox "git init -q sub && git -C sub -c user.name=t -c user.email=t@t commit -q --allow-empty -m x && git -C sub config core.fsmonitor \"touch $T/pwned-fsmonitor; false\" && git add sub && echo planted"
  ran
  expect_contains stdout planted
  expect_contains out "a nested repository a gitlink leads host git into"
  rm -f "$AGOR_HOME/config.yaml"
  (cd "$W" && timeout 20 git status --short > /dev/null)
  [ ! -e "$T/pwned-fsmonitor" ] || fail "host git status ran a nested repository'"'"'s fsmonitor"
'

test_case "containment: a fifo planted as the HEAD or index of the admin entry refuses the next run and worktree remove instead of hanging them" "$SETUP"'
  mv "$R/worktrees/w1/index" "$T/index"; mkfifo "$R/worktrees/w1/index"
  timeout 20 "$AGOR" executor --stdin < /dev/null > /dev/null 2>&1 || true
  sandbox "true"
  expect_error GIT_ERROR 1
  expect_contains out "index is not a regular file"
  executor "{\"command\":\"git.worktree.remove\",\"params\":{\"worktreePath\":\"$W\",\"force\":true}}"
  expect_error GIT_ERROR 1
  rm "$R/worktrees/w1/index"; mv "$T/index" "$R/worktrees/w1/index"
'

test_case "containment: fallocate and PR_SET_DUMPABLE are refused inside (the write budget would not see them); a killed run reports what it wrote" "$SETUP"'
  config "    disk_max_mb: 20"
  cat > "$W/probe.py" <<PY
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("big", os.O_CREAT | os.O_WRONLY, 0o644)
rc = libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(200 << 20))
print("fallocate", rc, os.strerror(ctypes.get_errno()) if rc else "FALLOCATED")
print("dumpable", libc.prctl(4, 0, 0, 0, 0), os.strerror(ctypes.get_errno()))
PY
  sandbox "python3 probe.py; du -sm big"
  ran
  expect_not_contains stdout FALLOCATED
  expect_contains stdout "fallocate -1 Operation not supported"
  expect_contains stdout "dumpable -1 Operation not permitted"
  sandbox "for i in \$(seq 1 60); do head -c 1048576 /dev/urandom > f\$i; sleep 0.05; done"
  ran
  expect_json out data.outcome disk-limit
  [ "$(json_get out data.events.diskWrittenBytes)" -gt 20000000 ] || { cat out; fail "a killed run reported no writes"; }
'

test_case "containment: a local clone copies its objects (no hard link to the source a run could rewrite)" "$SETUP"'
  [ -z "$(find "$R/objects" -type f -links +1)" ] || fail "the clone shares object files with its source"
  sandbox "C=\$(git rev-parse --git-common-dir); F=\$(find \$C/objects -type f -name \"[0-9a-f]*\" | head -1); chmod u+w \$F && echo tampered > \$F && echo rewrote"
  ran
  git -C "$PWD/src" fsck --no-dangling > /dev/null 2>&1 || fail "the source repository outside the data home changed"
'

test_case "containment: state a later git command acts on (modules/, rebase-merge/) and a gitlink behind a rebuilt index are removed; host git runs nothing" "$SETUP"'
  cat > "$W/plant.sh" <<SH
set -e
G=\$(git rev-parse --git-dir)
git init -q /tmp/s && git -C /tmp/s commit -q --allow-empty -m sub
S=\$(git -C /tmp/s rev-parse HEAD)
mkdir -p \$G/modules && cp -r /tmp/s/.git \$G/modules/sub
printf "#!/bin/sh\ntouch $T/pwned-hook\n" > \$G/modules/sub/hooks/post-checkout; chmod 755 \$G/modules/sub/hooks/post-checkout
git -C \$G/modules/sub config core.fsmonitor "touch $T/pwned-fsmonitor; false"
printf "[submodule \"sub\"]\n\tpath = sub\n\turl = https://example.invalid/sub.git\n" > .gitmodules
git add .gitmodules && git update-index --add --cacheinfo 160000,\$S,sub && git commit -q -m submodule
mkdir \$G/rebase-merge && echo "exec touch $T/pwned-rebase" > \$G/rebase-merge/git-rebase-todo
git init -q nested && git -C nested commit -q --allow-empty -m n
git -C nested config core.fsmonitor "touch $T/pwned-nested; false"
git add nested && git commit -q -m gitlink
echo garbage > \$G/index
echo planted
SH
  sandbox "sh plant.sh"
  ran
  expect_contains stdout planted
  json_get out data.gitMetadata.repaired > repaired
  expect_contains repaired "$R/worktrees/w1/modules"
  expect_contains repaired "$R/worktrees/w1/rebase-merge"
  expect_contains repaired "rebuilt from HEAD"
  expect_contains repaired "$W/nested/.git"
  (cd "$W" && timeout 20 git status --short > /dev/null; timeout 20 git submodule update --init > /dev/null 2>&1 || true)
  ls "$T" | grep -q pwned && fail "host git ran something planted: $(ls $T | grep pwned)" || true
'

test_case "containment: an index entry only threaded git would read is gone after the run (the index is written back as libgit2 read it)" "$SETUP"'
  cp "$TEST_TOP/test/helpers/craft-hidden-index.py" "$W/.craft.py"
  sandbox "B=\$(printf \"#!/bin/sh\\ntouch $T/pwned\\n\" | git hash-object -w --stdin); python3 .craft.py \$(git rev-parse --git-dir)/index \$B ../../repos/r.git/hooks/post-checkout && rm .craft.py && git -c index.threads=3 ls-files"
  ran
  expect_contains stdout "../../repos/r.git/hooks/post-checkout"
  (cd "$W" && git -c index.threads=3 ls-files > "$T/listed"; git -c index.threads=3 checkout -- . 2> /dev/null || true)
  expect_not_contains "$T/listed" post-checkout
  [ ! -e "$R/hooks/post-checkout" ] || fail "threaded git wrote a hook from a hidden index entry"
'

test_case "containment: an index left as agor checked it is not written again; one changed in any way (times put back) is checked again; a nested repository at a remembered gitlink is still removed; the record is out of reach" "$SETUP"'
  I="$R/worktrees/w1/index"
  sandbox "true"; ran  # the first check writes the index back and remembers it
  ino=$(stat -c %i "$I")
  sandbox "true"; ran
  [ "$(stat -c %i "$I")" = "$ino" ] || fail "an index left as checked was written again"
  refused "ls \"$AGOR_HOME/index-checked\" || ls \"$AGOR_HOME\"/index-checked*"
  cp "$TEST_TOP/test/helpers/craft-hidden-index.py" "$W/.craft.py"
  sandbox "G=\$(git rev-parse --git-dir); cp -p \$G/index /tmp/was; B=\$(printf \"#!/bin/sh\\ntouch $T/pwned\\n\" | git hash-object -w --stdin); python3 .craft.py \$G/index \$B ../../repos/r.git/hooks/post-checkout && touch -r /tmp/was \$G/index && rm .craft.py && git -c index.threads=3 ls-files"
  ran
  expect_contains stdout "../../repos/r.git/hooks/post-checkout"
  (cd "$W" && git -c index.threads=3 ls-files > "$T/listed")
  expect_not_contains "$T/listed" post-checkout
  cat > "$W/link.sh" <<SH
set -e
git read-tree HEAD  # the crafted entries out
git init -q sub && git -C sub commit -q --allow-empty -m s
git update-index --add --cacheinfo 160000,\$(git -C sub rev-parse HEAD),sub
rm link.sh; echo linked
SH
  sandbox "sh link.sh"
  ran
  expect_contains stdout linked
  ino=$(stat -c %i "$I")
  sandbox "git init -q sub && git -C sub config core.fsmonitor \"touch $T/pwned-nested; false\" && echo nested"
  ran
  expect_contains stdout nested
  [ "$(stat -c %i "$I")" = "$ino" ] || fail "the index was written again: the remembered gitlinks were not what removed the nested repository"
  json_get out data.gitMetadata.repaired > repaired
  expect_contains repaired "$W/sub/.git"
  (cd "$W" && timeout 20 git status --short > /dev/null)
  [ ! -e "$T/pwned-nested" ] || fail "host git status ran the nested repository'"'"'s fsmonitor"
'

test_case "containment: no fifo in the worktree; a forced remove reads nothing there; the repair never reads a fifo ref; a sparse HEAD is put back" "$SETUP"'
  refused "mkfifo .gitignore"
  sandbox "truncate -s 2G \$(git rev-parse --git-dir)/HEAD && echo sparse"
  ran
  expect_contains stdout sparse
  expect_contains out "\"$R/worktrees/w1/HEAD\""
  [ "$(stat -c %s "$R/worktrees/w1/HEAD")" -lt 100 ] || fail "the sparse HEAD stayed"
  config "    enabled: false"
  timeout 30 "$AGOR" executor --stdin > out 2> err <<JSON || fail "the run (or its repair) hung on a fifo ref"
{"command":"exec.run","params":{"cwd":"$W","argv":["/bin/sh","-c","rm \$(git rev-parse --git-common-dir)/refs/heads/w1 && mkfifo \$(git rev-parse --git-common-dir)/refs/heads/w1 && echo junk > \$(git rev-parse --git-dir)/index && mkfifo sub.gitignore && mkfifo .gitattributes"],"timeoutMs":20000}}
JSON
  expect_contains out "a fifo"
  rm -f "$AGOR_HOME/config.yaml"
  timeout 30 "$AGOR" executor --stdin > out 2> err <<JSON || fail "a forced remove hung on a fifo in the worktree"
{"command":"git.worktree.remove","params":{"worktreePath":"$W","force":true}}
JSON
  expect_json out success true
'

test_case "containment: read_only_paths holding the data home are refused however they are spelled (slash, //, a symlink)" "$SETUP"'
  ln -s "$AGOR_HOME" "$T/home-link"
  for p in "$AGOR_HOME/" "/$AGOR_HOME" "$T/home-link" "$(dirname "$AGOR_HOME")"; do
    config "    read_only_paths: $p"
    sandbox "ls $AGOR_HOME"
    expect_error PATH_OUTSIDE_DATA_HOME 1
    expect_contains out "holds"
  done
'

test_case "containment: a quarantined name that is not UTF-8 is still reported" "$SETUP"'
  config "    enabled: false"
  sandbox "ln -s /etc \"\$(git rev-parse --git-common-dir)/refs/heads/\$(printf \"\\377\")\" && echo planted"
  ran
  expect_contains stdout planted
  [ "$(json_get out data.gitMetadata.repaired | python3 -c "import json,sys; print(len(json.load(sys.stdin)))")" -ge 1 ] || fail "the quarantine of a non-UTF-8 name was not reported"
'

test_case "containment: a root executor's run is uid 65534, /proc/sys is read-only even without Landlock, no setuid bit can be set, and its files are root's on disk" "$SETUP"'
  config "    fail_closed: false"
  before=$(cat /proc/sys/kernel/core_pattern)
  cat > "$W/probe.sh" <<PROBE
id -u; id -g
echo x > made
echo "|/tmp/x %p" > /proc/sys/kernel/core_pattern && echo CORE-WRITTEN
echo h > /proc/sysrq-trigger && echo SYSRQ-WRITTEN
cp /bin/true su-copy; chmod 4755 su-copy && echo CHMOD-SETUID
chmod 2755 su-copy && echo CHMOD-SETGID
python3 -c "import os; os.close(os.open(\"su-open\", os.O_CREAT | os.O_WRONLY, 0o4755))" && echo OPEN-SETUID
python3 -c "import os; os.mknod(\"su-node\", 0o104755)" && echo MKNOD-SETUID
kill -0 1 && echo done
PROBE
  sandbox "sh probe.sh" "$DENY" 444 38 --
  ran
  cat stdout stderr
  [ "$(sed -n 1p stdout)" = 65534 ] && [ "$(sed -n 2p stdout)" = 65534 ] || fail "the run is not uid/gid 65534"
  for bad in CORE-WRITTEN SYSRQ-WRITTEN CHMOD-SETUID CHMOD-SETGID OPEN-SETUID MKNOD-SETUID; do
    expect_not_contains stdout $bad
  done
  expect_json out data.sandbox.landlock null
  [ "$(cat /proc/sys/kernel/core_pattern)" = "$before" ] || fail "core_pattern changed"
  [ "$(stat -c %u:%g "$W/made")" = 0:0 ] || fail "the file written inside is not root'"'"'s on disk"
  for f in su-copy su-open su-node; do [ ! -e "$W/$f" ] || [ ! -u "$W/$f" ] && [ ! -g "$W/$f" ] || fail "$f is setuid/setgid"; done
'

test_case "containment: a run writing more than disk_max_mb is killed and reported; /tmp inside is sized by it" "$SETUP"'
  config "    disk_max_mb: 20"
  sandbox "for i in \$(seq 1 60); do head -c 1048576 /dev/urandom > f\$i; sleep 0.05; done; echo all-written"
  ran
  expect_json out data.outcome disk-limit
  expect_json out data.events.diskLimitHits 1
  expect_json out data.events.diskMaxBytes 20971520
  expect_not_contains stdout all-written
  n=$(ls "$W" | grep -c "^f") || true
  [ "$n" -lt 40 ] || fail "$n files were written past a 20 MB budget"
  refused "head -c 30000000 /dev/zero > /tmp/big"
  expect_contains stderr "No space left"
  sandbox "head -c 1000000 /dev/zero > small && echo fine"
  ran
  expect_json out data.outcome ok
  expect_json out data.events.diskLimitHits 0
'

test_case "the environment is rebuilt: no executor variable reaches the program" "$SETUP"'
  AGOR_TEST_SECRET=leak sandbox "env; cat /proc/1/environ | tr \"\\\\0\" \"\\\\n\""
  ran
  expect_not_contains stdout leak
  expect_not_contains stdout AGOR_HOME
  expect_contains stdout "PATH=/usr/local/bin:/usr/bin:/bin"
  expect_contains stdout "GIT_AUTHOR_NAME=t"
'

test_case "daemon exec.run: the task stores the receipt; a fork bomb makes a failed task" '
  make_source_repo src
  mkdir -p "$AGOR_HOME"; printf "execution:\n  sandbox:\n    pids_max: 64\n" > "$AGOR_HOME/config.yaml"
  start_daemon
  rpc repos.clone "{\"url\":\"$PWD/src\"}" > reply && expect_json reply result.repo.default_branch main
  repo=$(json_get reply result.repo.id)
  rpc worktrees.add "{\"repo_id\":\"$repo\",\"name\":\"w1\",\"branch\":\"w1\",\"create_branch\":true}" > reply
  wt=$(json_get reply result.worktree.id)
  rpc exec.run "{\"worktree_id\":\"$wt\",\"argv\":[\"/bin/sh\",\"-c\",\"echo inside; hostname\"]}" > reply
  expect_contains reply "\"stdout\":\"inside\\nagor-sandbox\\n\""
  task=$(json_get reply result.task_id)
  rpc tasks.get "{\"id\":\"$task\"}" > task
  expect_json task result.status completed
  json_get task result.result > result.json
  expect_json result.json sandbox.enabled true
  expect_json result.json sandbox.cgroup.pidsMax 64
  rpc exec.run "{\"worktree_id\":\"$wt\",\"argv\":[\"/bin/sh\",\"-c\",\"b() { b | b & }; b; sleep 2\"]}" > reply
  task=$(json_get reply result.task_id)
  rpc tasks.get "{\"id\":\"$task\"}" > task
  expect_json task result.status failed
  expect_contains task "pids-limit"
  rpc exec.run "{\"worktree_id\":\"$wt\",\"argv\":[\"true\"],\"host\":\"gateway\"}" > reply
  expect_json reply error.data.code PERMISSION_DENIED   # the gateway'"'"'s own policy: deny unless its operator allows
  expect_contains reply "security=deny"
  rpc exec.run "{\"worktree_id\":\"$wt\",\"argv\":[\"true\"],\"host\":\"node\"}" > reply
  expect_contains reply "no node is paired"
  rpc exec.run "{\"worktree_id\":\"$wt\",\"argv\":[]}" > reply
  expect_contains reply "params.argv"
'

test_case "daemon exec.run: every payload carries the daemon's policy, which beats the config its executor reads" '
  make_source_repo src
  printf "execution:\n  sandbox:\n    enabled: false\n    memory_max_mb: 0\n" > user.yaml   # what the executor reads
  mkdir -p "$AGOR_HOME"
  printf "execution:\n  executor_command_template: '"'"'tee %s/last-payload.json | AGOR_CONFIG_PATH=%s/user.yaml %s executor --stdin'"'"'\n  sandbox:\n    memory_max_mb: 300\n" \
    "$PWD" "$PWD" "$AGOR" > "$AGOR_HOME/config.yaml"
  start_daemon
  rpc repos.clone "{\"url\":\"$PWD/src\"}" > reply && expect_json reply result.repo.default_branch main
  rpc worktrees.add "{\"repo_id\":\"$(json_get reply result.repo.id)\",\"name\":\"w1\",\"branch\":\"w1\",\"create_branch\":true}" > reply
  rpc exec.run "{\"worktree_id\":\"$(json_get reply result.worktree.id)\",\"argv\":[\"hostname\"]}" > reply
  expect_contains reply "\"stdout\":\"agor-sandbox\\n\""
  rpc tasks.get "{\"id\":\"$(json_get reply result.task_id)\"}" > task
  json_get task result.result > result.json
  expect_json result.json sandbox.enabled true
  expect_json result.json sandbox.cgroup.memoryMaxBytes $((300 << 20))
  python3 - last-payload.json <<PY   # the exec.run payload as the daemon wrote it
import json, sys
p = json.load(open(sys.argv[1]))["policy"]
assert p["execution.sandbox.enabled"] == "true" and p["execution.sandbox.memory_max_mb"] == "300", p
assert p["execution.timeout_ms"] == "300000" and p["execution.sandbox.read_only_paths"] is None, p
assert "execution.sandbox.cgroup_root" in p and "daemon.port" not in p and "execution.unix_user_mode" not in p, p
PY
'

test_case "unix_user_mode sandbox: no sudo, a kept per-user home, the sandbox required" '
  make_source_repo src
  mkdir -p "$AGOR_HOME"; printf "execution:\n  unix_user_mode: sandbox\n  sandbox:\n    enabled: false\n" > "$AGOR_HOME/config.yaml"
  expect_exit 1 "$AGOR" config show
  expect_contains err "must be true when execution.unix_user_mode is sandbox"
  printf "execution:\n  unix_user_mode: sandbox\n" > "$AGOR_HOME/config.yaml"
  start_daemon
  rpc repos.clone "{\"url\":\"$PWD/src\"}" > reply
  rpc worktrees.add "{\"repo_id\":\"$(json_get reply result.repo.id)\",\"name\":\"w1\",\"branch\":\"w1\",\"create_branch\":true}" > reply
  wt=$(json_get reply result.worktree.id)
  rpc exec.run "{\"worktree_id\":\"$wt\",\"argv\":[\"/bin/sh\",\"-c\",\"echo kept > \$HOME/note; echo \$HOME\"]}" > reply
  expect_json reply result.exitCode 0
  home=$(json_get reply result.stdout)
  case "$home" in "$AGOR_HOME/homes/"*) ;; *) fail "HOME is $home, not under the data home'"'"'s homes/";; esac
  rpc exec.run "{\"worktree_id\":\"$wt\",\"argv\":[\"/bin/sh\",\"-c\",\"cat \$HOME/note; ls $AGOR_HOME/homes\"]}" > reply
  expect_contains reply "\"stdout\":\"kept\\n\""
  expect_json reply result.outcome exit-nonzero
  expect_mode "$home" 700
  in_scratch_system "
    useradd --system --home-dir /home/agor agor
    mkdir -p /home/agor/.agor && printf \"execution:\\n  unix_user_mode: sandbox\\n\" > /home/agor/.agor/config.yaml
    expect_exit 0 \"\$AGOR\" setup validate --mode sandbox
    expect_contains out \"ok user namespaces\"
    expect_contains out \"ok Landlock ABI\"
    expect_contains out \"ok seccomp filter\"
    expect_contains out \"ok the new mount API\"
  "
'

test_case "containment: through the daemon, metadata a run outside the sandbox changed is put back, audited and reported on the task" '
  make_source_repo src
  mkdir -p "$AGOR_HOME"; printf "execution:\n  sandbox:\n    enabled: false\n" > "$AGOR_HOME/config.yaml"
  start_daemon
  rpc repos.clone "{\"url\":\"$PWD/src\"}" > reply
  rpc worktrees.add "{\"repo_id\":\"$(json_get reply result.repo.id)\",\"name\":\"w1\",\"branch\":\"w1\",\"create_branch\":true}" > reply
  wt=$(json_get reply result.worktree.id)
  wt_path=$(json_get reply result.worktree.path)
  rpc exec.run "{\"worktree_id\":\"$wt\",\"argv\":[\"/bin/sh\",\"-c\",\"rm .git && mkdir .git && echo [core] > .git/config\"]}" > reply
  expect_json reply result.exitCode 0
  rpc tasks.get "{\"id\":\"$(json_get reply result.task_id)\"}" > task
  json_get task result.result > result.json
  expect_json result.json gitMetadata.repaired.0.path "$wt_path/.git"
  expect_json result.json gitMetadata.repaired.0.found "a directory"
  rpc audit.list "{}" > audit
  expect_contains audit "git.metadata.repaired"
  [ -f "$wt_path/.git" ] || fail "the .git file was not put back"
'

# A non-root executor (as in insulated and strict modes): its runs make their cgroups under agor/<user>.
NONROOT_CGROUP='
  groupadd agor_users
  useradd --create-home --groups agor_users cgexec
  useradd --create-home stranger
  trap "rmdir /sys/fs/cgroup/*/agor/cgexec /sys/fs/cgroup/agor/cgexec 2> /dev/null || true" EXIT
  D=/home/cgexec/data
  mkdir -p $D/worktrees/w && chown -R cgexec $D
  printf "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"w\",\"argv\":[\"/bin/sh\",\"-c\",\"cat /proc/self/cgroup\"]},\"dataHome\":\"%s\"}" $D > p.json
  as_cgexec() { setpriv --reuid=cgexec --regid=cgexec --init-groups env -i HOME=/home/cgexec PATH=/usr/bin:/bin "$AGOR" executor --stdin < p.json > out || true; }
  as_cgexec
  expect_json out error.code ISOLATION_UNAVAILABLE
  expect_json out error.details.missing cgroup
  expect_contains out "agor admin cgroup-delegate USER"
  expect_exit 1 "$AGOR" admin cgroup-delegate root
  expect_exit 1 "$AGOR" admin cgroup-delegate stranger
  expect_exit 2 "$AGOR" admin cgroup-delegate cgexec --pid abc --json
  expect_json out error.details.field --pid
  expect_exit 1 "$AGOR" admin cgroup-delegate cgexec --pid $$
  expect_contains err "runs as uid 0, not as cgexec"
  expect_exit 2 "$AGOR" admin setup-unix-user cgexec --pid $$
  expect_contains err "setup-unix-user does not take --pid"
  setpriv --reuid=cgexec --regid=cgexec --init-groups sleep 30 &
  sleeper=$!
  until [ "$(stat -c %U /proc/$sleeper)" = cgexec ]; do sleep 0.05; done # setpriv has dropped to cgexec
  expect_exit 0 "$AGOR" admin cgroup-delegate cgexec --pid $sleeper --json
  kill $sleeper
  expect_json out success true
  expect_contains out "(v1 needs no move)"
  dir=$(ls -d /sys/fs/cgroup/pids/agor/cgexec /sys/fs/cgroup/agor/cgexec 2> /dev/null | head -1)
  [ "$(stat -c %U "$dir")" = cgexec ] && [ "$(stat -c %U "$dir/cgroup.procs")" = cgexec ] || fail "$dir was not handed over"
  as_cgexec
  expect_json out success true
  json_get out data.stdout > cg
  grep -q "/agor/cgexec/run-" cg || { cat out; fail "the run is not in the delegated subtree"; }
  expect_json out data.events.cgroupRemoved true
'

test_case "a non-root executor: cgroups fail closed naming the fix; agor admin cgroup-delegate hands it a subtree" '
  in_scratch_system "$NONROOT_CGROUP"
'

# execution.sandbox.home_expose: a non-root executor (insulated/strict) whose user chose to see their own git and ssh
# credentials in exec.run and terminals. The data home lies outside the user's home, as setup makes it.
HOME_EXPOSE='
  groupadd agor_users
  useradd --create-home --groups agor_users hx
  trap "rmdir /sys/fs/cgroup/*/agor/hx /sys/fs/cgroup/agor/hx 2> /dev/null || true" EXIT
  D=/home/hxdata
  mkdir -p $D/worktrees/w && chown -R hx $D
  as_hx() { setpriv --reuid=hx --regid=hx --init-groups env -i HOME=/home/hx PATH=/usr/bin:/bin "$@"; }
  as_hx sh -c "mkdir -p ~/.ssh ~/.config/gh ~/.agor && echo KEY-hx > ~/.ssh/id_ed25519 && chmod 600 ~/.ssh/id_ed25519 &&
    printf \"[user]\\n\\tname = hx\\n\" > ~/.gitconfig && echo gh-token > ~/.config/gh/hosts.yml && echo private > ~/notes.txt &&
    ln -s /etc/shadow ~/.netrc && mkdir ~/real && echo via-link > ~/real/f && ln -s real ~/linked"
  setpriv --reuid=hx --regid=hx --init-groups sleep 30 &
  sleeper=$!
  until [ "$(stat -c %U /proc/$sleeper)" = hx ]; do sleep 0.05; done
  "$AGOR" admin cgroup-delegate hx --pid $sleeper > /dev/null
  kill $sleeper
  # run POLICY SCRIPT — exec.run of SCRIPT as hx with that policy
  run() {
    python3 -c "import json,sys; print(json.dumps({\"command\":\"exec.run\",\"params\":{\"cwd\":\"w\",\"argv\":[\"/bin/sh\",\"-c\",sys.argv[2]]},\"dataHome\":sys.argv[3],\"policy\":json.loads(sys.argv[1])}))" "$1" "$2" $D > p.json
    as_hx "$AGOR" executor --stdin < p.json > out || true
  }
  SCRIPT="cat ~/.ssh/id_ed25519 ~/.gitconfig ~/.config/gh/hosts.yml; ls -A ~; cat ~/notes.txt 2>&1; (echo x > ~/.ssh/planted) 2>&1;
    (echo x >> ~/.gitconfig) 2>&1; cat ~/.netrc 2>&1; cat ~/linked/f 2>&1; ls ~/.agor 2>&1"
  run "{\"execution.sandbox.home_expose\":\".ssh:.gitconfig:.config/gh:.netrc:linked:.missing:.agor\"}" "$SCRIPT"
  expect_json out success true
  json_get out data.stdout > stdout
  cat stdout
  for want in KEY-hx "name = hx" gh-token; do grep -q "$want" stdout || fail "$want is not shown inside"; done
  ! grep -q private stdout || fail "an entry not listed (notes.txt) is visible"
  ! grep -q "root:" stdout || fail "a symlinked entry led to /etc/shadow"
  ! grep -q via-link stdout || fail "a symlinked entry was followed"
  [ "$(grep -c "Read-only file system" stdout)" -ge 2 ] || fail "an exposed entry is writable"
  [ ! -e /home/hx/.ssh/planted ] || fail "the run wrote into the real ~/.ssh"
  expect_json out data.sandbox.homeExposed.bound.0 .ssh
  expect_json out data.sandbox.homeExposed.bound.1 .gitconfig
  expect_json out data.sandbox.homeExposed.bound.2 .config/gh
  python3 - out <<PY
import json, sys
skipped = {s["entry"]: s["reason"] for s in json.load(open(sys.argv[1]))["data"]["sandbox"]["homeExposed"]["skipped"]}
assert skipped == {".netrc": "a symlink on the way", "linked": "a symlink on the way", ".missing": "missing",
                   ".agor": "holds agor\u0027s own files"}, skipped
PY
  # without the setting nothing of the home is there; a bad setting is refused naming it
  run "{}" "$SCRIPT"
  json_get out data.stdout > stdout
  ! grep -q "KEY-hx\|gh-token" stdout || fail "credentials are shown without home_expose"
  run "{\"execution.sandbox.home_expose\":\"../hxdata\"}" "true"
  expect_json out success false
  expect_contains out "home_expose"
'

test_case "home_expose: the user's chosen credentials are read-only in the private home; symlinks, other files and agor's own are not" '
  in_scratch_system "$HOME_EXPOSE"
'

test_case "exec.run validates argv and timeoutMs with the field named" '
  executor "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"w\",\"argv\":[]}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params.argv
  executor "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"w\",\"argv\":[\"ls\",3]}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path "params.argv[1]"
  executor "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"w\",\"argv\":[\"ls\"],\"timeoutMs\":0}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params.timeoutMs
  executor "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"/etc\",\"argv\":[\"ls\"]}}"
  expect_error PATH_OUTSIDE_DATA_HOME 1
'

test_case "a payload policy holds only execution policy keys with their canonical text, the field named" '
  bad_policy() { # POLICY_JSON PATH REASON_PART
    executor "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"w\",\"argv\":[\"ls\"]},\"policy\":$1}"
    expect_error INVALID_PAYLOAD 2
    expect_json out error.details.path "$2"
    expect_contains out "$3"
  }
  bad_policy "{\"daemon.port\":\"1\"}" policy.daemon.port "not an execution policy setting"
  bad_policy "{\"execution.sandbox.bogus\":\"1\"}" policy.execution.sandbox.bogus "unknown setting"
  bad_policy "{\"execution.unix_user_mode\":\"simple\"}" policy.execution.unix_user_mode "not an execution policy setting"
  bad_policy "{\"execution.sandbox.enabled\":\"yes\"}" policy.execution.sandbox.enabled "expected true or false"
  bad_policy "{\"execution.sandbox.enabled\":true}" policy.execution.sandbox.enabled "as a JSON string"
  bad_policy "{\"execution.sandbox.memory_max_mb\":\"-1\"}" policy.execution.sandbox.memory_max_mb "0..1048576"
  bad_policy "{\"execution.sandbox.enabled\":null}" policy.execution.sandbox.enabled "null only for a nullable"
  bad_policy "{\"execution.sandbox.cgroup_root\":\"/sys/fs/cgroup/\"}" policy.execution.sandbox.cgroup_root "canonical"
  bad_policy "[]" policy "expected an object"
  mkdir -p "$AGOR_HOME/worktrees/w"
  executor "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"w\",\"argv\":[\"ls\"]},\"policy\":{\"execution.sandbox.read_only_paths\":null,\"execution.timeout_ms\":\"5000\"}}" --dry-run
  expect_success
'

test_done
