#!/usr/bin/env bash
# t0041-approvals-attacks — issue 19's seven attacks on `agor approvals exec`, each asserting that the trojan or the
# unlisted program did NOT run: time as a command, an empty PATH entry, printf -v PATH, a trojan dropped during the
# prompt, git's code-running options, an honest prompt and allow-always, the rate limit and escaping.
# Never leaves a server or tmux session running.
. "$(dirname "$0")/../lib.sh"

CLIENT="$TEST_TOP/test/helpers/approvals-client.py"
F="\$AGOR_HOME/exec-approvals.json"

COMMON='
  # trojan DIR NAME — an executable NAME in DIR that leaves $T/PWNED-NAME when it runs
  trojan() { mkdir -p "$1"; printf "#!/bin/sh\ntouch %s/PWNED-%s\n" "$T" "$2" > "$1/$2"; chmod 755 "$1/$2"; }
  no_pwned() { if ls "$T" | grep -q PWNED; then ls "$T"; fail "a trojan ran"; fi; }
  # aexec PATHVALUE ARGS… — approvals exec with exactly that PATH; status in $rc, output in out and err
  aexec() { rc=0; /usr/bin/env PATH="$1" "$AGOR" approvals exec "${@:2}" > out 2> err || rc=$?; }
  policy() { "$AGOR" approvals set "$@" > /dev/null; }
  allow() { "$AGOR" approvals allowlist add "$@" > /dev/null; }
  denied() { [ "$rc" = 126 ] || { cat out err; fail "exit $rc, expected 126 (denied)"; }; expect_contains err "$1"; }
  SYS=/usr/local/bin:/usr/bin:/bin
'

test_case "attack 1: time is a command, never a keyword: a trojan time in a writable PATH entry never runs" "$COMMON"'
  policy --security allowlist --ask off; allow /usr/bin/ls
  mkdir -m 777 evil; chmod 777 evil; trojan evil time
  aexec "$T/evil:$SYS" -- sh -c "time ls /"
  denied "could replace before it runs"
  aexec "$T/evil:$SYS" -- bash -c "nice time ls"
  denied "could replace before it runs"
  aexec "$T/evil:$SYS" -- dash -c "time -p ls"
  denied "exec.denied"
  no_pwned
  # the system time (dash has no keyword) is unwrapped, and pinned in the text that runs
  aexec "$SYS" -- sh -c "time ls -d /"
  [ "$rc" = 0 ] || { cat out err; fail "exit $rc"; }
  grep -qx / out || { cat out; fail "ls did not run"; }
  head -n1 err > started
  expect_json started execArgv.2 "/usr/bin/time /usr/bin/ls -d /"
'

test_case "attack 1b: a trojan named nice or sh is never unwrapped, even run directly (by descriptor)" "$COMMON"'
  policy --security allowlist --ask off; allow /usr/bin/ls
  mkdir -m 755 tools; trojan tools nice; trojan tools sh
  aexec "$T/tools:$SYS" -- nice ls
  denied "is not the system"
  aexec "$T/tools:$SYS" -- sh -c ls
  denied "is not the system"
  no_pwned
'

test_case "attack 2: an empty or relative PATH entry refuses the run (whatever the policy), never skipped" "$COMMON"'
  policy --security allowlist --ask off; allow /usr/bin/ls
  mkdir work; trojan work ls; cd work
  for p in ":/usr/bin:/bin" "/usr/bin:/bin:" "/usr/bin::/bin" ".:/usr/bin:/bin" "bin:/usr/bin"; do
    aexec "$p" -- sh -c ls;  denied "path-refused"; expect_contains err "PATH entry"
    aexec "$p" -- ls;        denied "path-refused"
  done
  policy --security full
  aexec ":/usr/bin:/bin" -- sh -c ls; denied "path-refused"
  aexec "$SYS" -- ./ls   # the caller naming ./ls itself: that file, by descriptor (security full)
  [ "$rc" = 0 ] || { cat err; fail "exit $rc"; }
  rm "$T/PWNED-ls"
  no_pwned
'

test_case "attack 3: printf -v PATH (and export/read/hash/alias/enable/declare) never redirect a command" "$COMMON"'
  policy --security allowlist --ask off; allow /usr/bin/ls /usr/bin/printf
  trojan e ls
  aexec "$SYS" -- bash -c "printf -v PATH %s $T/e; ls";   denied "printf -v"
  aexec "$SYS" -- bash -c "export PATH=$T/e; ls";         denied "shell builtin"
  aexec "$SYS" -- bash -c "hash -p $T/e/ls ls; ls";       denied "shell builtin"
  aexec "$SYS" -- bash -c "alias ls=$T/e/ls; ls";         denied "shell builtin"
  aexec "$SYS" -- bash -c "enable -n printf; printf x";   denied "shell builtin"
  aexec "$SYS" -- bash -c "declare PATH=$T/e; ls";        denied "shell builtin"
  aexec "$SYS" -- bash -c "read PATH; ls";                denied "shell builtin"
  aexec "$SYS" -- bash -c ". $T/e/ls; ls";                denied "shell builtin"
  aexec "$SYS" -- bash -c "PATH=$T/e ls";                 denied "assignment"
  no_pwned
  aexec "$SYS" -- bash -c "printf %s x; ls -d /"          # plain printf: the external one, pinned
  [ "$rc" = 0 ] || { cat err; fail "exit $rc"; }
  expect_contains out "x/"
'

test_case "attack 5: an allowlisted git runs no other program (-c alias, --upload-pa=, --exec-path, env, planted config and hooks)" "$COMMON"'
  policy --security allowlist --ask off; allow /usr/bin/git
  git init -q repo; cd repo
  mkdir -p "$T/xp"; trojan "$T/xp" git-status
  aexec "$SYS" -- git -c "alias.x=!touch $T/PWNED-alias" x;              denied "allowlist-miss"
  expect_contains err "git -c"
  aexec "$SYS" -- git ls-remote "--upload-pa=touch $T/PWNED-up" .;       denied "--upload-pack"
  aexec "$SYS" -- git ls-remote -u "touch $T/PWNED-u" .;                  denied "allowlist-miss"
  aexec "$SYS" -- git -c "core.sshCommand=touch $T/PWNED-ssh" ls-remote ssh://h/x; denied "allowlist-miss"
  aexec "$SYS" -- git "--exec-path=$T/xp" status;                         denied "allowlist-miss"
  aexec "$SYS" -- git --config-env=core.pager=HOME log;                   denied "allowlist-miss"
  aexec "$SYS" -- sh -c "git -c alias.x='"'"'!touch $T/PWNED-sh'"'"' x";  denied "allowlist-miss"
  aexec "$SYS" -- git x;                                                  denied "not a git command known"
  aexec "$SYS" -- sh -c "git status *";                                   denied "expands"
  # environment that names programs is scrubbed, not trusted
  rc=0; GIT_SSH_COMMAND="touch $T/PWNED-env" GIT_CONFIG_PARAMETERS="'"'"'core.sshcommand=touch $T/PWNED-cp'"'"'" \
    "$AGOR" approvals exec -- git ls-remote ssh://127.0.0.1:9/x > out 2> err || rc=$?
  [ "$rc" != 126 ] || { cat err; fail "plain ls-remote was denied"; }
  no_pwned
  aexec "$SYS" -- git status; [ "$rc" = 0 ] || { cat err; fail "git status: exit $rc"; }
  # configuration and hooks the caller can write are code: git is not allowed while they name any
  git config core.fsmonitor "touch $T/PWNED-fsmonitor"
  aexec "$SYS" -- git status;                                             denied "core.fsmonitor"
  git config --unset core.fsmonitor
  printf "#!/bin/sh\ntouch %s/PWNED-hook\n" "$T" > .git/hooks/pre-commit; chmod 755 .git/hooks/pre-commit
  aexec "$SYS" -- git commit --allow-empty -m x;                          denied "has a hook"
  rm .git/hooks/pre-commit
  printf "[diff]\n\texternal = touch %s/PWNED-global\n" "$T" > "$HOME/.gitconfig"
  aexec "$SYS" -- git diff;                                               denied "diff.external"
  rm "$HOME/.gitconfig"
  # …also in a submodule: plain git status enters it and runs its fsmonitor
  git init -q "$T/subsrc"; git -C "$T/subsrc" -c user.name=a -c user.email=a@example.invalid commit -q --allow-empty -m s
  git -c protocol.file.allow=always submodule add -q "$T/subsrc" sub > /dev/null 2>&1
  git -C sub config core.fsmonitor "touch $T/PWNED-submodule"
  aexec "$SYS" -- git status;                                             denied "modules/sub/config sets core.fsmonitor"
  git -C sub config --unset core.fsmonitor
  mkdir -p -m 700 "$HOME/.ssh"; printf "Host *\n  ProxyCommand touch %s/PWNED-sshconfig\n" "$T" > "$HOME/.ssh/config"
  aexec "$SYS" -- git ls-remote ssh://h/x;                                denied "proxycommand"
  rm "$HOME/.ssh/config"
  # an editor or askpass the configuration names never starts (git gets its no-op editor)
  git config user.name t; git config user.email t@example.invalid
  git config core.editor "touch $T/PWNED-editor"; git config core.askPass "touch $T/PWNED-askpass"
  aexec "$SYS" -- git commit --allow-empty
  no_pwned
  git config --unset core.editor; git config --unset core.askPass
  # an argv pattern names exactly what is allowed
  "$AGOR" approvals allowlist rm /usr/bin/git > /dev/null
  allow "/usr/bin/git status *"
  aexec "$SYS" -- git status --short; [ "$rc" = 0 ] || { cat err; fail "pattern: exit $rc"; }
  aexec "$SYS" -- git log; denied "allowlist-miss"
'

test_case "attack 7: the socket rate limit holds per uid across forked children" "$COMMON"'
  "$AGOR" approvals serve < /dev/null > server.log 2>&1 & echo $! > server.pid
  for _ in $(seq 1 200); do [ -S "$AGOR_HOME/approvals.sock" ] && break; sleep 0.05; done
  tok=$(json_get "$AGOR_HOME/exec-approvals.json" socket.token)
  python3 "$CLIENT" "$AGOR_HOME/approvals.sock" "$tok" forked-flood 25 > r
  kill "$(cat server.pid)"; wait "$(cat server.pid)" 2>/dev/null || true
  n=$(grep -c RATE_LIMITED r || true)
  [ "$n" -ge 5 ] || { cat r; fail "only $n of 25 forked requests limited"; }
'

test_case --needs root,setpriv "as an unprivileged agent: its own writable bin first in PATH is never used inside shell text or wrappers" "$COMMON"'
  mkdir -p nb/home/bin; chown -R 65534:65534 nb; chmod 755 nb
  trojan nb/home/bin ls; trojan nb/home/bin time; chown 65534 nb/home/bin/*
  chmod 777 "$T"   # the trojans leave their PWNED file here
  nobody() { rc=0; setpriv --reuid=65534 --regid=65534 --clear-groups env -i HOME="$T/nb/home" \
    AGOR_HOME="$T/nb/home/.agor" PATH="$1" "$AGOR" approvals "${@:2}" > out 2> err || rc=$?; }
  nobody "$SYS" set --security allowlist --ask off; nobody "$SYS" allowlist add /usr/bin/ls
  nobody "$T/nb/home/bin:$SYS" exec -- sh -c "ls -d /";  denied "writable by the caller"
  nobody "$T/nb/home/bin:$SYS" exec -- sh -c "time ls";  denied "writable by the caller"
  nobody "$T/nb/home/bin:$SYS" exec -- nice ls;          denied "writable by the caller"
  nobody "$T/nb/home/bin:$SYS" exec -- ls;               denied "allowlist-miss"
  nobody "$SYS" exec -- sh -c "ls -d /"; [ "$rc" = 0 ] || { cat err; fail "exit $rc"; }
  grep -qx / out
  no_pwned
'

TMUX_UI='
  TM_NAME="agor-t0041-$$-$RANDOM" && TM="tmux -L $TM_NAME"
  $TM new-session -d -s ui -x 250 -y 80 "env AGOR_HOME=$AGOR_HOME HOME=$HOME PATH=$SYS $AGOR approvals serve; sleep 60"
  # the server stopped by its pid and its socket file removed (tmux leaves it): a server that stays fails the case
  trap "rc=\$?; tmux_stop \"\$(tmux_socket_of $TM_NAME)\" || rc=1; exit \$rc" EXIT
  pane() { $TM capture-pane -p -J -S -300 -t ui; }
  wait_pane() { for _ in $(seq 1 200); do pane | grep -qF -- "$1" && return 0; sleep 0.05; done; pane; fail "pane never showed: $1"; }
  # ask_in_bg PATHVALUE ARGS… — approvals exec waiting for the UI
  ask_in_bg() { ( rc=0; /usr/bin/env PATH="$1" "$AGOR" approvals exec --ask-timeout 20 -- "${@:2}" > bg.out 2> bg.err || rc=$?; echo $rc > bg.rc ) & bg=$!; }
  answered() { $TM send-keys -t ui "$1" Enter; wait $bg; }
  wait_pane "serving on"
'
test_case --needs tmux "attack 4: a trojan dropped into PATH (or the checked file changed) while the prompt waits never runs" "$COMMON$TMUX_UI"'
  policy --security full --ask always --ask-fallback deny
  mkdir -m 755 tools
  ask_in_bg "$T/tools:$SYS" sh -c "ls -d /"
  wait_pane "command: sh -c '"'"'ls -d /'"'"'"
  trojan tools ls           # ls is looked up now: the check found /usr/bin/ls, and that is what runs
  answered o
  expect_eq "$(cat bg.rc)" 0
  grep -qx / bg.out || { cat bg.out bg.err; fail "ls did not run"; }
  no_pwned
  # argv[0] runs by descriptor: replaced at its path during the prompt, the checked file still runs
  printf "#!/bin/sh\necho checked\n" > tools/mytool; chmod 755 tools/mytool
  ask_in_bg "$T/tools:$SYS" mytool
  wait_pane "command: mytool"
  mv tools/mytool tools/old; trojan tools mytool
  answered o
  expect_eq "$(cat bg.rc)" 0
  grep -qx checked bg.out || { cat bg.out bg.err; fail "the checked file did not run"; }
  no_pwned
  # changed in place during the prompt: refused before anything runs
  ask_in_bg "$T/tools:$SYS" "$T/tools/old"
  wait_pane "command: $T/tools/old"
  printf "touch %s/PWNED-inplace\n" "$T" >> tools/old
  answered o
  expect_eq "$(cat bg.rc)" 126
  grep -q "changed-since-check" bg.err || { cat bg.err; fail "no changed-since-check"; }
  no_pwned
'

test_case --needs tmux "attack 6: the prompt shows each executable; allow-always records what was checked; never an interpreter's code" "$COMMON$TMUX_UI"'
  policy --security allowlist --ask on-miss --ask-fallback deny
  mkdir -m 755 tools; cp /usr/bin/ls tools/ls
  sum=$(sha256sum tools/ls | cut -c1-16)
  ask_in_bg "$T/tools:$SYS" ls -d /
  wait_pane "command: ls -d /"
  wait_pane "runs:    $T/tools/ls (owner root, mode 0755, sha256 $sum)"
  wait_pane "always:  would record $T/tools/ls"
  answered a
  expect_eq "$(cat bg.rc)" 0
  wait_pane "recorded $T/tools/ls for agent default"
  expect_json '"$F"' agents.default.allowlist.0.pattern "$T/tools/ls"
  expect_not_contains '"$F"' "/usr/bin/ls"   # the UI (PATH=/usr/bin…) never re-resolved it
  ask_in_bg "$SYS" python3 -c "print(6*7)"
  wait_pane "always:  not offered"
  answered a
  expect_eq "$(cat bg.rc)" 0
  wait_pane "-> allow-once (allow-always not recorded"
  expect_not_contains '"$F"' python
  # bidi and C1 characters reach the prompt escaped
  ask_in_bg "$SYS" echo "$(printf "a\342\200\256b\302\233c\342\201\246d")"
  wait_pane "\\u{202e}"
  pane | grep -qF "\\u{009b}" || { pane; fail "C1 not escaped"; }
  pane | grep -qF "\\u{2066}" || { pane; fail "isolate not escaped"; }
  if pane | grep -q "$(printf "\342\200\256")"; then fail "raw U+202E on the prompt"; fi
  answered d
  expect_eq "$(cat bg.rc)" 126
  # what a peer sends before it is authenticated (an unknown field name) is shown escaped too
  python3 -c "import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall((json.dumps({\"type\": \"request\", \"x\u001b]0;PWN\u0007\u202ey\": 1}) + \"\n\").encode()); s.recv(4096)" \
    "$AGOR_HOME/approvals.sock"
  wait_pane "unknown field x\\x1b]0;PWN\\x07\\u{202e}y"
'

test_done
