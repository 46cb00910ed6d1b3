#!/usr/bin/env bash
# t0003-docs — what the repository carries besides code agrees with the binary: man pages, zellij/config.kdl,
# README's set-up commands and every docs/ file cited. Changes nothing outside the test's scratch directory.
. "$(dirname "$0")/../lib.sh"

test_case "dist/man equals mk/man.sh run on this binary (every --help it reads exits 0)" '
  "$TEST_TOP/mk/man.sh" "$AGOR" man
  diff -r man "$TEST_TOP/dist/man" || fail "dist/man drifted from the usage texts: run make man"
  for a in $("$AGOR" --list); do [ -f "man/agor-$a.1" ] || fail "no page for $a"; done
  grep -q "^\.SS worktree$" man/agor-nodes.1 && fail "a subcommand of another group"
  grep -q "^\.SS set-access$" man/agor-worktree.1 || fail "agor-worktree.1 lacks its subcommands"
'

test_case "dist/completion equals agor completion bash|zsh (the shell completion of the command tables)" '
  for shell in bash zsh; do
    expect_exit 0 "$AGOR" completion $shell
    file=$([ $shell = bash ] && echo agor.bash || echo _agor)
    cmp out "$TEST_TOP/dist/completion/$file" || fail "dist/completion/$file drifted from the tables: run make man"
  done
'

test_case "every man page renders with man -l without a warning" '
  command -v man > /dev/null && command -v groff > /dev/null || skip_case "man-db and groff-base are not installed"
  for f in "$TEST_TOP"/dist/man/*.1; do
    MANWIDTH=80 man --warnings -l "$f" > page 2> warnings || fail "man -l $f failed"
    expect_empty warnings
    grep -q "^NAME" page || fail "$f: no NAME section"
  done
'

test_case "zellij/config.kdl equals agor setup zellij --print for the data home /srv/agor" '
  AGOR_DATA_HOME=/srv/agor expect_exit 0 "$AGOR" setup zellij --print
  cmp out "$TEST_TOP/zellij/config.kdl" || fail "zellij/config.kdl differs from the generator"
'

test_case "README names make run and make test, and CI runs that test command" '
  grep -qx "make run .*" "$TEST_TOP/README.md" || fail "README lost make run"
  grep -qx "make test .*" "$TEST_TOP/README.md" || fail "README lost make test"
  grep -qx "make -j2 test" "$TEST_TOP/.ci/run" || fail ".ci/run no longer runs make test"
'

test_case "every docs/ file that code, tests, dist or the docs cite exists" '
  cited="$T/cited" # the list is the case'"'"'s own: nothing is written into the checkout
  cd "$TEST_TOP"
  grep -rhoE "docs/[a-z0-9-]+\.md" README.md docs lib applets main.c test dist mk | sort -u > "$cited"
  [ -s "$cited" ] || fail "nothing cites docs/"
  while read -r f; do [ -f "$f" ] || fail "$f is cited but missing"; done < "$cited"
  grep -rhoE "\]\([a-z0-9-]+\.md" docs | sed "s/^](/docs\//" | sort -u | while read -r f; do
    [ -f "$f" ] || fail "$f is linked from docs/ but missing"
  done
'

test_done
