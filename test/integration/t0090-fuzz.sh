#!/usr/bin/env bash
# t0090-fuzz — a short pass of every libFuzzer target (test/fuzz/*.c, ASan + UBSan) over its seeds and a corpus
# that grows across runs: each parser of untrusted input, and report_scan against jansson. FUZZ_SECONDS per
# target (default 12: 20 targets keep CI's fuzzing near 4 minutes). The targets are clang builds of their own, so
# they run once, in the asan flavor.
. "$(dirname "$0")/../lib.sh"
export FUZZ_SECONDS=${FUZZ_SECONDS:-12}

if [ "$AGOR_FLAVOR" != asan ]; then
  test_skip "fuzz targets" "they are clang ASan builds of lib/, run once, in the asan flavor"
  test_done; exit
fi
file_needs clang "fuzz targets"

test_case "the fuzz targets build" '
  make -s -C "$TEST_TOP" fuzz > build.log 2>&1 || { tail -30 build.log; fail "make fuzz failed"; }
'

for source in "$TEST_TOP"/test/fuzz/*_fuzz.c; do   # every target make fuzz builds
  target=$(basename "$source" .c)
  test_case "$target: $FUZZ_SECONDS s without a crash, a leak or a broken invariant" '
    "$TEST_TOP/test/fuzz/run" '"$target"' > run.out || { cat run.out; fail "the fuzzer found a failing input"; }
    cat run.out
    grep -q "0 crashes" run.out
  '
done

test_done
