#!/usr/bin/env bash
# t0008-completion — the bash and zsh completion `agor completion` prints, loaded into a real shell and driven as
# the shell drives it (COMP_WORDS/COMP_CWORD, compgen): applets, subcommands, two-word subcommands, options, and
# nothing offered after an option that takes a value. No daemon, nothing outside the scratch directory.
. "$(dirname "$0")/../lib.sh"

# complete WORD… — what bash completes the last WORD to (one line, space-separated), with agor's completion loaded.
complete_line() {
  bash -c '
    source ./agor.bash
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
    _agor
    echo "${COMPREPLY[*]}"' completion "$@"
}

test_case "bash: agor wor<TAB> is worktree; agor worktree <TAB> its subcommands; agor worktree add --b<TAB>" '
  "$AGOR" completion bash > agor.bash
  bash -n agor.bash || fail "the bash completion does not parse"
  expect_eq "$(complete_line agor wor)" "worktree"
  expect_eq "$(complete_line agor worktree "")" "add list get remove owners add-owner remove-owner set-access --help"
  expect_eq "$(complete_line agor worktree add --b)" "--branch"
  expect_eq "$(complete_line agor repo clone --p)" "--path"
  expect_eq "$(complete_line agor s)" "session setup"
  bash -c "source ./agor.bash; complete -p agor" > spec
  expect_contains spec "-F _agor agor"
'

test_case "bash: two-word subcommands, an applet without a subcommand, and no word after a valued option" '
  "$AGOR" completion bash > agor.bash
  expect_eq "$(complete_line agor approvals allowlist "")" "add rm list"
  expect_eq "$(complete_line agor approvals allowlist add --e)" "--expect-hash"
  expect_eq "$(complete_line agor daemon st)" "status stop"
  expect_eq "$(complete_line agor daemon --fore)" "--foreground"
  expect_eq "$(complete_line agor terminal --d)" "--detach-key"
  expect_eq "$(complete_line agor repo clone --branch "")" ""
  expect_eq "$(complete_line agor config set --home "")" ""
'

test_case "every option of every table completes in bash (walks agor completion list and each --help)" '
  "$AGOR" completion bash > agor.bash
  "$AGOR" completion list > commands
  n=0
  while read -r cmd; do
    "$AGOR" $cmd --help < /dev/null > help
    for flag in $(sed -n "s/^  \(--[a-z-]*\).*/\1/p" help); do
      # shellcheck disable=SC2086 # the command is one to three words
      got=$(complete_line agor $cmd "$flag")
      case " $got " in *" $flag "*) ;; *) fail "agor $cmd $flag<TAB> gave [$got]" ;; esac
      n=$((n + 1))
    done
  done < commands
  [ $n -ge 150 ] || fail "only $n options completed"
'

test_case --needs zsh "zsh: the completion parses and offers the same words" '
  "$AGOR" completion zsh > _agor
  zsh -n _agor || fail "the zsh completion does not parse"
  zsh -c "
    compadd() { shift; print -r -- \${(P)1}; }   # -a NAME: the words it would offer
    _files() { print -r -- FILES; }
    source ./_agor 2> /dev/null || true
    words=(agor worktree \"\"); CURRENT=3; _agor
    words=(agor repo clone --branch \"\"); CURRENT=5; _agor
  " > offered
  expect_contains offered "add list get remove owners add-owner remove-owner set-access --help"
  expect_contains offered FILES
'

test_done
