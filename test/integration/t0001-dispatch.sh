#!/usr/bin/env bash
# t0001-dispatch — the multi-call binary (docs/architecture.md#applets): applet selection, global flags, exit codes, static build.
. "$(dirname "$0")/../lib.sh"

test_case "--help prints usage to stdout and exits 0" '
  expect_exit 0 "$AGOR" --help
  expect_contains out "Usage: agor APPLET"
  expect_empty err
'

test_case "no arguments is a usage error (exit 2, stderr)" '
  expect_exit 2 "$AGOR"
  expect_empty out
  expect_contains err "Usage:"
'

test_case "--list prints one applet per line" '
  expect_exit 0 "$AGOR" --list
  for a in admin approvals config daemon executor node; do grep -qx "$a" out || fail "missing $a"; done
  [ "$(wc -l < out)" -eq "$(sort -u out | wc -l)" ] || fail "duplicate lines"
  sort -c out
'

test_case "--list --verbose marks built applets and root-only ones" '
  expect_exit 0 "$AGOR" --list --verbose
  grep -E "^node +built" out
  grep -E "^admin +(built|not-built) +root-only" out
  grep -E "^config +built" out
'

test_case "--version names agor and every linked library with its Debian revision" '
  expect_exit 0 "$AGOR" --version
  grep -E "^agor [0-9]+\.[0-9]+\.[0-9]+" out
  grep -E "^libgit2 1\.5\.[0-9]+ \(Debian 1\.5\.[0-9]+\+ds-[0-9]" out
  for lib in mbedtls zlib http-parser sqlite jansson libyaml; do grep -E "^$lib [0-9.]+ \(Debian " out || fail "$lib missing"; done
'

test_case "unknown applet exits 127 with a message on stderr" '
  expect_exit 127 "$AGOR" nosuch
  expect_contains err "unknown applet"
  expect_empty out
'

test_case "unknown global option is a usage error (exit 2)" '
  expect_exit 2 "$AGOR" --frobnicate
  expect_contains err "unknown option"
'

test_case "APPLET --help prints its usage for every applet, built or not" '
  for a in $("$AGOR" --list); do
    expect_exit 0 "$AGOR" "$a" --help
    grep -q "Usage: agor $a" out || fail "$a --help: no usage"
  done
'

# Commands that print no answer of their own to make --json of: each with its reason.
NO_JSON=$(cat << 'EOF'
daemon|runs the daemon
executor|its one result line is JSON already
executor mcp-permission|an MCP server speaking JSON-RPC on stdio
executor sandbox-shell|the shell of a terminal pane
terminal|an interactive TTY
completion bash|prints a script
completion zsh|prints a script
completion list|prints the command table
approvals exec|prints the output of the command it runs
approvals serve|an interactive prompt
node run|a long-running runner
setup sudoers|prints the sudoers file
setup zellij|prints or writes config.kdl
EOF
)
export NO_JSON

test_case "every command of every table answers --help (exit 0) with usage, options and an example; all print --json" '
  expect_exit 0 "$AGOR" completion list
  cp out commands
  [ "$(wc -l < commands)" -ge 60 ] || fail "only $(wc -l < commands) commands in the tables"
  for a in $("$AGOR" --list); do grep -q "^$a\( \|$\)" commands || fail "applet $a has no command table"; done
  while read -r cmd; do
    expect_exit 0 "$AGOR" $cmd --help < /dev/null
    expect_empty err
    expect_contains out "Usage: agor $cmd"
    expect_contains out "Options"
    grep -A1 "^Example:" out | tail -1 | grep -q "agor ${cmd%% *}" || { cat out; fail "agor $cmd --help: no example"; }
    if ! grep -q -- "--json" out && ! printf "%s
" "$NO_JSON" | grep -q "^$cmd|"; then
      fail "agor $cmd has no --json (nor a reason in NO_JSON)"
    fi
    # every option line: "  --name [WHAT]  help", the help never empty, a value named for what it is
    sed -n "/^Options/,/^\$/p" out | grep -- "^  -" > options || fail "agor $cmd --help lists no option"
    ! grep -Ev -- "^  -[-a-z]+( [A-Z][A-Z0-9=_]*)?  +[^ ]" options || { cat out; fail "agor $cmd --help: an option without a help line (or past the help column)"; }
    ! grep -E -- "^  -[-a-z]+ VALUE " options || { cat out; fail "agor $cmd --help: an option whose value is only VALUE"; }
  done < commands
'

test_case "the walk above fails on an option without help: task list --status says what a status is" '
  expect_exit 0 "$AGOR" task list --help
  grep -E -- "^  --status STATUS +only tasks in this status: queued, running, completed, failed or cancelled$" out || { cat out; fail "--status has no help line"; }
  printf "  --status STATUS            \n  --x VALUE   help\n" > options
  grep -Ev -- "^  -[-a-z]+( [A-Z][A-Z0-9=_]*)?  +[^ ]" options | grep -q -- "--status" || fail "the empty-help check would pass an empty line"
  grep -E -- "^  -[-a-z]+ VALUE " options | grep -q -- "--x" || fail "the VALUE check would pass a bare VALUE"
'

test_case "every client subcommand answers --help (exit 0, stdout) with its usage, options and an example" '
  n=0
  for group in repo worktree session task audit user nodes; do
    expect_exit 2 "$AGOR" $group   # no subcommand: every one listed on stderr
    for sub in $(sed -n "s/^  agor $group \([a-z-]*\).*/\1/p" err); do
      expect_exit 0 "$AGOR" $group $sub --help
      expect_empty err
      expect_contains out "Usage: agor $group $sub"
      expect_contains out "Options:"
      grep -A1 "^Example:" out | tail -1 | grep -q "agor $group $sub" || { cat out; fail "agor $group $sub --help shows no example of itself"; }
      n=$((n + 1))
    done
  done
  [ $n -ge 30 ] || fail "only $n subcommands found"
  expect_exit 2 "$AGOR" repo clone --no-such-flag
  expect_contains err "unknown option"
  for cmd in "setup isolation" "config set" "approvals set" "node pair" "exec feature" "prompt s1" "terminal feature"; do
    expect_exit 0 "$AGOR" $cmd --help
    expect_contains out "Usage: agor ${cmd%% *}"
  done
  expect_exit 1 "$AGOR" exec feature -- grep --help   # after "--" it is the command of the run: no daemon here
  expect_not_contains out "Usage:"
  expect_contains err "cannot reach the agor daemon"
'

test_case "a symlink named agor-executor selects the executor applet" '
  ln -s "$AGOR" agor-executor
  expect_exit 0 ./agor-executor --help
  expect_contains out "Usage: agor executor"
'

test_case "a link named after the applet (no prefix) selects it" '
  ln -s "$AGOR" executor
  expect_exit 0 ./executor --help
  expect_contains out "Usage: agor executor"
'

test_case "an agor-NAME link with an unknown NAME exits 127" '
  ln -s "$AGOR" agor-bogus
  expect_exit 127 ./agor-bogus --help
  expect_contains err "unknown applet"
'

test_case "--install -s DIR twice leaves one working symlink per applet" '
  mkdir bin
  expect_exit 0 "$AGOR" --install -s bin
  expect_exit 0 "$AGOR" --install -s bin
  [ "$(ls -A bin | wc -l)" -eq "$("$AGOR" --list | wc -l)" ] || { ls -la bin; fail "wrong entry count"; }
  for a in $("$AGOR" --list); do
    [ -L "bin/agor-$a" ] || fail "bin/agor-$a is not a symlink"
    expect_exit 0 "bin/agor-$a" --help
    expect_contains out "Usage: agor $a"
  done
'

test_case "--install DIR makes hard links, idempotent, replacing stale entries" '
  mkdir bin
  cp "$AGOR" ./agorbin
  echo stale > bin/agor-node
  expect_exit 0 ./agorbin --install bin
  expect_exit 0 ./agorbin --install bin
  [ "$(stat -c %i bin/agor-node)" = "$(stat -c %i agorbin)" ] || fail "not a hard link"
  [ "$(ls -A bin | wc -l)" -eq "$("$AGOR" --list | wc -l)" ]
  expect_exit 0 bin/agor-config --help
'

test_case "--install refuses a missing directory and bad usage" '
  expect_exit 1 "$AGOR" --install ./nope
  expect_exit 2 "$AGOR" --install
  expect_exit 2 "$AGOR" --install -x dir extra
'

test_case --needs root,setpriv "a root-only applet refuses a non-root caller (checked centrally)" '
  cp "$AGOR" ./agorbin && chmod 755 . ./agorbin
  expect_exit 1 setpriv --reuid=65534 --regid=65534 --clear-groups ./agorbin admin setup-unix-user alice
  expect_contains err "must run as root"
'

if is_musl; then
test_case "the product binary is static, stripped, and at most 4 MB" '
  file "$AGOR" | grep -q "statically linked" || fail "$(file "$AGOR")"
  file "$AGOR" | grep -q ", stripped" || fail "not stripped"
  ! readelf -l "$AGOR" | grep -q INTERP || fail "has PT_INTERP"
  size=$(stat -c %s "$AGOR"); [ "$size" -le 4194304 ] || fail "size $size > 4 MB"
'
test_case --needs root,chroot "agor --version runs alone in an empty root (chroot)" '
  mkdir root && cp "$AGOR" root/agor
  expect_exit 0 chroot root /agor --version
  expect_contains out "libgit2"
  [ "$(ls root)" = agor ] || fail "chroot gained files: $(ls root)"
'
fi

test_done
