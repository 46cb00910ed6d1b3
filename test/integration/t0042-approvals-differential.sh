#!/usr/bin/env bash
# t0042-approvals-differential — issue 19: the analyser's verdict against what really runs. A generated corpus of
# shell text (the seven attacks' forms, wrappers, builtins, expansions, nesting, random joins) runs through
# `agor approvals exec` with a PATH of logging shims; no command may run that was not allowed (shim log and, where
# strace works, every execve of the process tree).
. "$(dirname "$0")/../lib.sh"

DIFF="$TEST_TOP/test/helpers/approvals-differential.py"

STRACE=; strace_reason=$(unmet_needs strace) || STRACE=--strace

# The shims must live where the caller cannot write (else shell text refuses them all): probe once.
probe_dir="$TEST_TMP_ROOT/probe"; mkdir -p -m 700 "$probe_dir/home"
probe=$(HOME="$probe_dir/home" AGOR_HOME="$probe_dir/home/.agor" python3 "$DIFF" "$AGOR" "$probe_dir/w" --probe 2>&1) \
  && probe_rc=0 || probe_rc=$?

if [ $probe_rc -eq 0 ]; then
test_case "differential: no snippet runs a program the analyser did not allow${STRACE:+ (strace)}" '
  rc=0; python3 "$DIFF" "$AGOR" "$T/w" $STRACE --random 60 > diff.out 2>&1 || rc=$?
  cat diff.out
  [ $rc -eq 0 ] || fail "violations (see above)"
  grep -q " 0 violations" diff.out
'
else
test_skip "differential: no snippet runs a program the analyser did not allow" "$probe"
fi
[ -n "$STRACE" ] || test_skip "differential: execve tracing" "$strace_reason (the shim log still counts)"

test_done
