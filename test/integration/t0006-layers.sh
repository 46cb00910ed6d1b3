#!/usr/bin/env bash
# t0006-layers — lib's modules form layers (docs/architecture.md): no include cycle and no call cycle between
# them, checked on the sources and on this flavor's objects by mk/layers.py; and the check itself fails on a
# planted cycle of either kind, so a pass means something.
. "$(dirname "$0")/../lib.sh"

OBJS="$TEST_TOP/build/$AGOR_FLAVOR/lib"

test_case "no include cycle between lib modules" '
  expect_exit 0 python3 "$TEST_TOP/mk/layers.py" --includes "$TEST_TOP/lib"
  expect_contains out " 0 cycle(s) in the includes graph"
'

test_case "no call cycle between lib modules (in this flavor's objects)" '
  ls "$OBJS"/daemon.o > /dev/null || fail "no objects in $OBJS"
  expect_exit 0 python3 "$TEST_TOP/mk/layers.py" --calls "$OBJS"
  expect_contains out " 0 cycle(s) in the calls graph"
'

test_case "a planted include cycle is found and named" '
  mkdir lib && cp "$TEST_TOP"/lib/*.[ch] lib/
  sed -i "0,/#include \"daemon.h\"/s//#include \"daemon.h\"\n#include \"daemon_main.h\"/" lib/daemon.c
  grep -q "daemon_main.h" lib/daemon.c || fail "the plant did not take"
  expect_exit 1 python3 "$TEST_TOP/mk/layers.py" --includes lib
  expect_contains out "cycle: "
  expect_contains out "daemon -> daemon_main (daemon.c)"
'

test_case "a planted call cycle is found and named" '
  printf "int lower(void);\nint upper(void) { return lower(); }\n" > upper.c
  printf "int upper(void);\nint lower(void) { return upper(); }\n" > lower.c
  mkdir objs && cc -c -o objs/upper.o upper.c && cc -c -o objs/lower.o lower.c
  expect_exit 1 python3 "$TEST_TOP/mk/layers.py" --calls objs
  expect_contains out "cycle: lower upper"
  expect_contains out "lower -> upper (upper)"
'

test_done
