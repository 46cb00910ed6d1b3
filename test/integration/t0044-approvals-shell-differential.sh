#!/usr/bin/env bash
# t0044-approvals-shell-differential — issue 26: the approvals analyser's list of the programs a command line
# starts against what sh and bash really execute. Over test/fuzz/shell-corpus.txt (the approvals tests' attack
# forms and more), each line is analysed by `agor approvals check --json` and then run directly under recording
# stubs (and strace -f where it works): a program that ran without being listed, on a line the analyser calls
# allowlistable and not code-running, is a finding. A stand-in analyser that lists too little must be caught.
. "$(dirname "$0")/../lib.sh"

DIFF="$TEST_TOP/test/helpers/shell-differential.py"
CORPUS="$TEST_TOP/test/fuzz/shell-corpus.txt"
STRACE=; strace_reason=$(unmet_needs strace) || STRACE=--strace

# The stubs must live where the caller cannot write (else the analyser refuses every PATH): probe once.
probe_dir="$TEST_TMP_ROOT/probe"; mkdir -p -m 755 "$probe_dir"
probe=$(python3 "$DIFF" "$AGOR" "$probe_dir/w" "$CORPUS" --probe 2>&1) && probe_rc=0 || probe_rc=$?

if [ $probe_rc -eq 0 ]; then
test_case "no line runs a program the analyser did not list${STRACE:+ (strace)}" '
  rc=0; python3 "$DIFF" "$AGOR" "$T/w" "$CORPUS" $STRACE > diff.out 2>&1 || rc=$?
  cat diff.out
  [ $rc -eq 0 ] || fail "findings (see above)"
  grep -q " 0 findings" diff.out
'

test_case "an analyser that lists only ls is caught" '
  cat > fake-agor <<FAKE
#!/bin/sh
echo "{\"allowlistable\":true,\"executables\":[{\"path\":\"$T/w/stubs/ls\"}],\"codeRunning\":[]}"
FAKE
  chmod 755 fake-agor
  rc=0; python3 "$DIFF" "$T/fake-agor" "$T/w" "$CORPUS" > diff.out 2>&1 || rc=$?
  [ $rc -eq 1 ] || { cat diff.out; fail "exit $rc, not 1"; }
  grep -q "FINDING sh -c .ls; id.: ran \[.id.\]" diff.out || { cat diff.out; fail "ls; id not caught"; }
'
else
test_skip "no line runs a program the analyser did not list" "$probe"
test_skip "an analyser that lists only ls is caught" "$probe"
fi
[ -n "$STRACE" ] || test_skip "execve tracing" "$strace_reason (the stubs' log still counts)"

test_done
