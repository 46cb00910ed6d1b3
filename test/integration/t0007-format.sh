#!/usr/bin/env bash
# t0007-format — every tracked C file is in the house style (.clang-format, `make format` applies it), and the check
# fails on a file that is not, so a pass means something.
. "$(dirname "$0")/../lib.sh"

test_case --needs clang-format "every tracked C file is formatted as .clang-format says" '
  git -C "$TEST_TOP" ls-files "*.c" "*.h" | sed "s|^|$TEST_TOP/|" > files || fail "not a git checkout"
  [ "$(wc -l < files)" -gt 100 ] || fail "too few C files listed: $(wc -l < files)"
  expect_exit 0 sh -c "xargs clang-format --dry-run -Werror < files"
'

test_case --needs clang-format "a misformatted file is found and named" '
  cp "$TEST_TOP/.clang-format" .
  printf "int  main( void ){return 0;}\n" > bad.c
  expect_exit 1 clang-format --dry-run -Werror bad.c
  expect_contains err "bad.c"
'

test_done
