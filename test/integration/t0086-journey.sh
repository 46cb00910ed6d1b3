#!/usr/bin/env bash
# t0086-journey — the README's journey as a new user walks it (issue 25): README.md → docs/usage.md, terminals.md,
# nodes.md, from an empty AGOR_HOME. Every command runs on a pseudo-terminal (stdin, stdout and stderr a TTY, as a
# person has) and the test reads what that person sees: the daemon started and its status, a clone of a local
# repository, a worktree, the API key typed at a hidden prompt, a session, a prompt answered by the real Claude Code
# (npm) against the scripted endpoint with its permission request answered y on the keyboard, the task list, a
# terminal typed into and detached, a node paired, approved and running a command. Human output only: names where
# ids would be, local dates never epochs, aligned columns, no JSON; and the usual mistakes answer with what to type.
. "$(dirname "$0")/../lib.sh"

. "$TEST_TOP/test/agent-cli.sh"    # $CLAUDE, pinned, installed once
. "$TEST_TOP/test/prompt-scene.sh" # prompt_scratch: the scripted endpoints, write_config, the task helpers
. "$TEST_TOP/test/terminal.sh"     # PRIVATE_TMP (the case's own tmux servers), TMUX_SERVER

file_needs tmux,root,mountns "the README journey on a terminal"
if [ ! -x "$CLAUDE" ]; then
  test_skip "the README journey on a terminal" "the npm registry is unreachable: Claude Code is not installed"
  test_done
  exit
fi

# Run in the prompt scene (root, insulated mode, a scratch /etc), with a private /tmp for the terminal's tmux.
JOURNEY='
  eval "prompt_$(declare -f scene_cleanup)"   # the scene'"'"'s own cleanup, run by ours
  node_pid="" daemon_pid=""
  scene_cleanup() { # the node, the tmux server of agor_executor (the case fails when it does not stop), the scene
    local rc=0
    [ -z "$node_pid" ] || { kill "$node_pid" 2> /dev/null; wait "$node_pid" 2> /dev/null || true; }
    tmux_stop_as agor_executor "$(tmux_server agor_executor "$T/data")" || rc=1
    prompt_scene_cleanup
    [ $rc = 0 ] || exit 1
  }
  # human OUT [STEP…] -- CMD… — CMD as a person runs it: on a pseudo-terminal, typing the pty-drive STEPs; OUT is
  # what they saw (carriage returns dropped), $rc its exit status. Human output is never JSON nor an epoch time.
  human() {
    local out=$1; shift
    PTY_TRANSCRIPT=$out.tty python3 "$TEST_TOP/test/helpers/pty-drive.py" 160x50 "$@" > "$out.raw" || { cat "$out.raw"; fail "on a terminal: $*"; }
    rc=$(sed -n "s/^exit \(-\?[0-9]*\)$/\1/p" "$out.raw" | tail -1)
    tr -d "\r" < "$out.tty" > "$out"
    ! grep -E "^ *(\{ *\$|\{\"|\[ *\$|\[\{|\"[a-zA-Z_]+\": )" "$out" || { cat "$out"; fail "JSON on a terminal without --json: $*"; }
    ! grep -Ew "1[0-9]{9}" "$out" || { cat "$out"; fail "an epoch time in human output: $*"; }
  }
  ok() { [ "$rc" = 0 ] || { cat "$1"; fail "exit $rc, not 0: $(head -1 "$1")"; }; }
  table() { python3 "$TEST_TOP/test/helpers/columns.py" "$@"; }   # FILE FIRST_TITLE → the cells, tab-separated
  cell() { awk -F "\t" -v r="$2" -v c="$3" "NR == 1 { for (i = 1; i <= NF; i++) col[\$i] = i } NR == r + 1 { print \$col[c] }" "$1"; }
  hex32="[0-9a-f]{32}"

  # --- set-up: a config in AGOR_HOME (as `make run` would find it), then the daemon, detached
  trap daemon_cleanup EXIT   # the daemon (once it runs), the node, tmux, the endpoints
  insulated_agent_host
  write_config && mv config.yaml "$AGOR_HOME/config.yaml"
  human cfg.out wait-exit -- "$AGOR" config set daemon.port 0; ok cfg.out
  expect_contains cfg.out "daemon.port = 0"
  # detached, the daemon'"'"'s stderr is /dev/null: the sanitizers (the ASan build) report into files of their own
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:log_path=$T/sanitizer" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$T/sanitizer" \
    human start.out wait-exit -- "$AGOR" daemon
  ok start.out
  grep -Eq "^agor daemon started \(pid [0-9]+\)$" start.out || { cat start.out; fail "agor daemon: no pid"; }
  daemon_pid=$(sed -n "s/^agor daemon started (pid \([0-9]*\))$/\1/p" start.out)
  human status.out wait-exit -- "$AGOR" daemon status; ok status.out
  expect_contains status.out "agor daemon: running (pid $daemon_pid)"
  port=$(sed -n "s/^  port  *\([0-9][0-9]*\)$/\1/p" status.out)
  [ -n "$port" ] || { cat status.out; fail "daemon status shows no port"; }
  grep -Eq "^  socket +/run/agor/agor.sock$" status.out || { cat status.out; fail "daemon status: no socket"; }

  # --- a mistake before anything exists: the error names the list to look at
  human m1.out wait-exit -- "$AGOR" worktree add 0123456789abcdef0123456789abcdef feature
  expect_eq "$rc" 1
  expect_contains m1.out "no repo with id 0123456789abcdef0123456789abcdef"
  expect_contains m1.out "\`agor repo list\` shows them"

  # --- clone (progress on the terminal, then the repository), list
  human clone.out wait-exit -- "$AGOR" repo clone "$T/src"; ok clone.out
  repo=$(sed -En "s/^repo ($hex32)$/\1/p" clone.out)
  [ -n "$repo" ] || { cat clone.out; fail "clone: no repo line"; }
  grep -Eq "^  url +$T/src$" clone.out || { cat clone.out; fail "clone: no url"; }
  grep -Eq "^  path +$T/data/repos/local/.*/src\.git$" clone.out || { cat clone.out; fail "clone: no path under repos/local"; }
  grep -Eq "^  branch +main$" clone.out || { cat clone.out; fail "clone: no branch"; }
  human repos.out wait-exit -- "$AGOR" repo list; ok repos.out
  table repos.out id > repos.tsv
  expect_eq "$(cell repos.tsv 1 id)" "$repo"
  expect_eq "$(cell repos.tsv 1 url)" "$T/src"
  expect_eq "$(cell repos.tsv 1 default_branch)" main

  # --- a worktree, by the repository id'"'"'s first 8 characters as list shows them
  human wt.out wait-exit -- "$AGOR" worktree add "${repo:0:8}" feature --branch feat --create-branch; ok wt.out
  grep -Eq "^worktree $hex32$" wt.out || { cat wt.out; fail "worktree add: no id"; }
  grep -Eq "^  name +feature$" wt.out && grep -Eq "^  branch +feat$" wt.out || { cat wt.out; fail "worktree add: name, branch"; }
  wt_path=$(sed -n "s/^  path  *//p" wt.out)
  human wts.out wait-exit -- "$AGOR" worktree list; ok wts.out
  table wts.out id > wts.tsv
  expect_eq "$(cell wts.tsv 1 name)" feature
  expect_eq "$(cell wts.tsv 1 branch)" feat
  expect_eq "$(cell wts.tsv 1 path)" "$wt_path"

  # --- the API key, typed at a prompt that does not echo it
  human key.out "expect:API key \\(not echoed\\): " "type:$KEY\n" wait-exit -- "$AGOR" api-key set anthropic; ok key.out
  expect_contains key.out "stored the key of anthropic (scope members)"
  ! grep -q "$KEY" key.out || { cat key.out; fail "the key was echoed on the terminal"; }
  human keys.out wait-exit -- "$AGOR" api-key list; ok keys.out
  ! grep -q "$KEY" keys.out || fail "api-key list shows the key"

  # --- a session on the worktree, by its name; the list shows the worktree by name and a local date
  human m2.out wait-exit -- "$AGOR" prompt; expect_eq "$rc" 2
  expect_contains m2.out "agor prompt: expected SESSION and the prompt text"
  expect_contains m2.out "Try '"'"'agor prompt --help'"'"'."
  human sess.out wait-exit -- "$AGOR" session create feature --tool claude-code; ok sess.out
  session=$(sed -En "s/^session ($hex32)$/\1/p" sess.out)
  [ -n "$session" ] || { cat sess.out; fail "session create: no id"; }
  grep -Eq "^  worktree +feature$" sess.out || { cat sess.out; fail "session create shows the worktree by id, not name"; }
  grep -Eq "^  tool +claude-code$" sess.out && grep -Eq "^  mode +default$" sess.out || { cat sess.out; fail "session create: tool, mode"; }
  human sessions.out wait-exit -- "$AGOR" session list; ok sessions.out
  table sessions.out id > sessions.tsv
  expect_eq "$(cell sessions.tsv 1 worktree)" feature
  expect_eq "$(cell sessions.tsv 1 tool)" claude-code

  # --- a prompt: the agent asks to run a command, the person types y, the answer streams
  human m3.out wait-exit -- "$AGOR" prompt 0123456789abcdef0123456789abcdef "say hello"; expect_eq "$rc" 1
  expect_contains m3.out "no session with id 0123456789abcdef0123456789abcdef"
  expect_contains m3.out "\`agor session list\` shows them"
  human prompt.out "expect:Allow\\? \\[y/N\\] " "type:y\n" wait-exit -- \
    "$AGOR" prompt "${session:0:8}" "please RUN: echo journey > made.txt"
  ok prompt.out
  grep -Eq "^task $hex32$" prompt.out || { cat prompt.out; fail "prompt: no task line"; }
  task=$(sed -En "s/^task ($hex32)$/\1/p" prompt.out)
  expect_contains prompt.out "The agent wants to use Bash"
  expect_contains prompt.out "[permission] Bash allowed"
  expect_contains prompt.out "All done."
  expect_contains prompt.out "[completed]"
  [ "$(cat "$wt_path/made.txt")" = journey ] || fail "the approved command did not run in the worktree"
  human prompt2.out wait-exit -- "$AGOR" prompt "${session:0:8}" "say hello"; ok prompt2.out
  expect_contains prompt2.out "Hello from the scripted model."
  human tasks.out wait-exit -- "$AGOR" task list; ok tasks.out
  table tasks.out id > tasks.tsv
  awk -F "\t" -v t="$task" "\$1 == t && \$2 == \"prompt\" && \$3 == \"completed\" && \$5 == \"agor_executor\"" tasks.tsv | grep -q . ||
    { cat tasks.out; fail "task list: the prompt task, completed, as agor_executor"; }

  # --- a terminal in the worktree: typed into, its output read back, detached with C-]
  human m4.out wait-exit -- "$AGOR" terminal no-such-worktree; expect_eq "$rc" 1
  expect_contains m4.out "no worktree with id or name no-such-worktree"
  expect_contains m4.out "\`agor worktree list\` shows them (a name"
  # keys typed before the sandboxed shell has its terminal could be flushed: wait for its prompt first
  human term.out "expect:[\$#]" "type:echo journey-\$((6*7)) in \$(basename \$PWD) as \$(id -un)\n" \
    "expect:journey-42 in feature as agor_executor" "type:\\x1d" wait-exit -- "$AGOR" terminal feature
  ok term.out
  expect_contains term.out "[agor terminal: detached]"

  # --- a node: paired from its own home, approved by name, running a command its own policy allows
  mkdir -m 700 "$T/node"
  AGOR_HOME=$T/node human pair.out wait-exit -- "$AGOR" node pair --gateway "ws://127.0.0.1:$port/ws" --name "Build Box"
  ok pair.out
  node=$(grep -Eo "^$hex32$" pair.out | head -1)
  [ -n "$node" ] || { cat pair.out; fail "node pair: no node id"; }
  expect_contains pair.out "approve it on the gateway with: agor nodes approve $node"
  human nodes.out wait-exit -- "$AGOR" nodes list; ok nodes.out
  table nodes.out id > nodes.tsv
  expect_eq "$(cell nodes.tsv 1 name)" "Build Box"
  expect_eq "$(cell nodes.tsv 1 status)" pending
  human approve.out wait-exit -- "$AGOR" nodes approve "build box"; ok approve.out
  expect_contains approve.out "approved $node (Build Box)"
  AGOR_HOME=$T/node human policy.out wait-exit -- "$AGOR" approvals set --security allowlist --ask off; ok policy.out
  AGOR_HOME=$T/node human allow.out wait-exit -- "$AGOR" approvals allowlist add /usr/bin/printenv; ok allow.out
  AGOR_HOME=$T/node "$AGOR" node run 2>> node.log & node_pid=$!
  for i in $(seq 1 100); do
    human nodes.out wait-exit -- "$AGOR" nodes list
    table nodes.out id > nodes.tsv && [ "$(cell nodes.tsv 1 connected)" = yes ] && break
    sleep 0.1
  done
  [ "$(cell nodes.tsv 1 connected)" = yes ] || { cat nodes.out node.log; fail "the node did not connect"; }
  expect_eq "$(cell nodes.tsv 1 status)" approved
  expect_eq "$(cell nodes.tsv 1 last_ip)" 127.0.0.1
  human m5.out wait-exit -- "$AGOR" exec --host node --node no-such-node --security allowlist -- printenv AGOR_HOME
  expect_eq "$rc" 1
  expect_contains m5.out "unknown node: no-such-node (known: Build Box"
  expect_contains m5.out "\`agor nodes list\` shows them"
  human exec.out wait-exit -- "$AGOR" exec --host node --node "build box" --security allowlist -- printenv AGOR_HOME
  ok exec.out
  expect_eq "$(cat exec.out)" "$T/node"

  # --- the audit shows who did what, by name, at local times; then the daemon stops as documented
  human audit.out wait-exit -- "$AGOR" audit list; ok audit.out
  table audit.out id > audit.tsv
  awk -F "\t" "\$3 == \"root\" && \$4 == \"sessions.create\"" audit.tsv | grep -q . || { cat audit.out; fail "audit list: no sessions.create by root (by name)"; }
  human stop.out wait-exit -- "$AGOR" daemon stop; ok stop.out
  expect_contains stop.out "agor daemon stopped (pid $daemon_pid)"
  daemon_pid=""
  human m6.out wait-exit -- "$AGOR" repo list; expect_eq "$rc" 1
  expect_contains m6.out "start it with \`agor daemon\`"
  ! ls "$T"/sanitizer.* 2> /dev/null || { cat "$T"/sanitizer.*; fail "the sanitizers reported on the daemon"; }
  grep -q "stopped$" "$AGOR_HOME/logs/daemon.log" || { tail "$AGOR_HOME/logs/daemon.log"; fail "the daemon log does not say it stopped"; }
'

test_case "the README journey on a terminal: daemon, clone, worktree, key, session, prompt (Claude Code), terminal, node" \
  'prompt_scratch "$PRIVATE_TMP
$TMUX_SERVER
$JOURNEY"'

test_done
