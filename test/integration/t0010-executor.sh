#!/usr/bin/env bash
# t0010-executor — the executor boundary (docs/payloads.md): validation, result line, exit codes, dry-run,
# path confinement, git clone / worktree add / remove through libgit2, commands not built yet.
. "$(dirname "$0")/../lib.sh"

# --- input validation -------------------------------------------------------------------------

test_case "bad JSON is INVALID_JSON, exit 2, one line on stdout" '
  executor "{not json"
  expect_error INVALID_JSON 2
  json_get out error.details.line
'

test_case "a payload that is not an object is INVALID_PAYLOAD at \$" '
  executor "[1,2]"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path "\$"
'

test_case "unknown command lists the supported ones (exit 2)" '
  executor "{\"command\":\"git.push\",\"params\":{}}"
  expect_error UNKNOWN_COMMAND 2
  expect_json out error.details.supportedCommands "[\"exec.run\", \"git.clone\", \"git.worktree.add\", \"git.worktree.remove\", \"prompt\", \"tmux.attach\", \"tmux.close\", \"zellij.attach\"]"
'

test_case "missing command and missing params name the field" '
  executor "{\"params\":{}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path command
  executor "{\"command\":\"git.clone\"}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params
'

test_case "unknown fields anywhere are refused with their path (typo safety)" '
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"/x\"},\"asuser\":\"bob\"}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path asuser
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"/x\",\"outputpath\":\"a\"}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params.outputpath
  expect_contains out "allowed: url, outputPath, branch, bare"
'

test_case "wrong types are refused with the expected type" '
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":42}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params.url
  expect_json out error.details.reason "expected a string, got number"
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"/x\",\"bare\":\"yes\"}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params.bare
  executor "{\"command\":\"git.clone\",\"params\":[]}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params
'

test_case "missing required params and empty strings are refused" '
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"r\",\"worktreeName\":\"w\"}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params.worktreePath
  expect_json out error.details.reason required
  executor "{\"command\":\"git.worktree.remove\",\"params\":{\"worktreePath\":\"\"}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.reason "must not be empty"
'

test_case "every command validates its own params (one bad field each)" '
  for c in "prompt:tool" "git.clone:url" "git.worktree.add:repoPath" "git.worktree.remove:worktreePath" \
           "zellij.attach:sessionName" "tmux.attach:sessionName"; do
    executor "{\"command\":\"${c%%:*}\",\"params\":{},\"sessionToken\":\"t\"}"
    expect_error INVALID_PAYLOAD 2
    json_get out error.details.path | grep -q "^params\." || fail "${c%%:*}: no params path"
  done
  executor "{\"command\":\"prompt\",\"params\":{\"sessionId\":\"s\",\"taskId\":\"t\",\"prompt\":\"p\",\"tool\":\"vim\",\"cwd\":\"w\"},\"sessionToken\":\"x\"}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.reason "expected one of claude-code|codex|gemini|opencode"
'

test_case "prompt needs a sessionToken" '
  executor "{\"command\":\"prompt\",\"params\":{\"sessionId\":\"s\",\"taskId\":\"t\",\"prompt\":\"p\",\"tool\":\"codex\",\"cwd\":\"w\"}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path sessionToken
'

test_case "env refuses variables that steer a child (LD_PRELOAD, PATH, GIT_CONFIG*, …)" '
  for v in LD_PRELOAD DYLD_INSERT_LIBRARIES BASH_ENV ENV PATH HOME SHELL IFS NODE_OPTIONS PYTHONPATH PERL5LIB RUBYOPT GIT_CONFIG_GLOBAL; do
    executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"/x\"},\"env\":{\"$v\":\"x\"}}"
    expect_error INVALID_PAYLOAD 2
    expect_json out error.details.path "env.$v"
  done
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"/x\"},\"env\":{\"OK\":1}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.reason "expected a string value"
'

test_case "asUser must be a valid user name (no option injection)" '
  for u in "-oX" "--help" "Root" "a b" "x;id" "$(printf "a\\\\nb")"; do
    executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"/x\"},\"asUser\":\"$u\"}"
    expect_error INVALID_PAYLOAD 2
    expect_json out error.details.path asUser
  done
'

test_case "a payload over 4 MiB is PAYLOAD_TOO_LARGE (exit 2)" '
  head -c $((4 * 1024 * 1024 + 1)) /dev/zero | tr "\\0" a > big
  rc=0; "$AGOR" executor --stdin < big > out 2> err || rc=$?
  expect_error PAYLOAD_TOO_LARGE 2
'

test_case "a payload just under 4 MiB is read whole" '
  python3 -c "import json; print(json.dumps({\"command\":\"git.clone\",\"params\":{\"url\":\"https://h/o/r\",\"branch\":\"b\"*(4*1024*1024-200)}}))" > big
  [ "$(stat -c %s big)" -le 4194304 ]
  rc=0; "$AGOR" executor --stdin --dry-run < big > out 2> err || rc=$?
  expect_success
'

test_case "usage errors exit 2: no mode, unknown flag, --stdin with legacy flags" '
  expect_exit 2 "$AGOR" executor
  expect_exit 2 "$AGOR" executor --stdin --bogus
  expect_exit 2 "$AGOR" executor --stdin --prompt x
'

# --- dry run ------------------------------------------------------------------------------------

test_case "--dry-run plans a clone with resolved paths and changes nothing" '
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"https://example.com/acme/widget.git\"}}" --dry-run
  expect_success
  expect_json out data.dryRun true
  expect_json out data.command git.clone
  expect_json out data.user "$(id -un)"
  expect_json out data.plan.2.path "$AGOR_HOME/repos/example.com/acme/widget.git"
  [ ! -e "$AGOR_HOME" ] || fail "dry run created $AGOR_HOME"
'

test_case "--dry-run shows impersonation through sudo when asUser differs" '
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"/src/a/b\"},\"asUser\":\"nobody\"}" --dry-run
  expect_success
  expect_json out data.impersonate true
  expect_json out data.plan.0.step impersonate
  json_get out data.plan.0.argv | grep -q "\"-n\", \"-u\", \"nobody\", \"--\"" || fail "argv"
  json_get out data.plan.0.argv | grep -q "\"executor\", \"--stdin\"\]" || fail "argv tail"
'

test_case "--dry-run of worktree add resolves repo and worktree paths" '
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"acme/src.git\"}}"
  expect_success
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/src.git\",\"worktreeName\":\"w\",\"worktreePath\":\"acme/src/w\"}}" --dry-run
  expect_success
  expect_json out data.plan.0.path "$AGOR_HOME/repos/acme/src.git"
  expect_json out data.plan.1.path "$AGOR_HOME/worktrees/acme/src/w"
  [ ! -e "$AGOR_HOME/worktrees/acme" ] || fail "dry run created the worktree"
'

test_case --needs strace "a dry run reads no path back through /proc and gives the user without stdio (its cost)" '
  mkdir -p "$AGOR_HOME/repos/acme/src.git"
  payload="{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/src.git\",\"worktreeName\":\"w\",\"worktreePath\":\"acme/w\"}}"
  rc=0
  # LeakSanitizer cannot run under ptrace; the sanitizer build checks for leaks everywhere else
  printf "%s" "$payload" | ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 strace -f -o trace -e trace=readlink,readlinkat,lseek "$AGOR" executor --stdin --dry-run > out 2> err || rc=$?
  expect_success
  expect_json out data.user "$(id -un)"
  expect_json out data.plan.0.path "$AGOR_HOME/repos/acme/src.git"
  ! grep -E "readlink(at)?\\(.*/proc/self/fd" trace || fail "a path was read back through /proc/self/fd"
  ! grep -E "^[0-9]+ +lseek\\(" trace || fail "the user was read through stdio (its lseek back), not the lean reader"
'

test_case "--dry-run without the data home: mkdir planned, a missing repo and .. refused, nothing made" '
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/src.git\",\"worktreeName\":\"w\",\"worktreePath\":\"acme/w\"}}" --dry-run
  expect_error NOT_FOUND 1
  expect_json out error.details.field params.repoPath
  mkdir -p "$AGOR_HOME/repos/acme/src.git"
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/src.git\",\"worktreeName\":\"w\",\"worktreePath\":\"acme/w\"}}" --dry-run
  expect_success
  expect_json out data.plan.1.step mkdir
  expect_json out data.plan.1.path "$AGOR_HOME/worktrees"
  expect_json out data.plan.2.path "$AGOR_HOME/worktrees/acme/w"
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/src.git\",\"worktreeName\":\"w\",\"worktreePath\":\"../../evil\"}}" --dry-run
  expect_error PATH_OUTSIDE_DATA_HOME 1
  expect_json out error.details.field params.worktreePath
  [ ! -e "$AGOR_HOME/worktrees" ] || fail "dry run created worktrees/"
'

test_case "--dry-run follows no symlink out of an existing root" '
  mkdir -p "$AGOR_HOME/repos/acme/src.git" "$AGOR_HOME/worktrees" outside
  ln -s "$PWD/outside" "$AGOR_HOME/worktrees/out"
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/src.git\",\"worktreeName\":\"w\",\"worktreePath\":\"out/w\"}}" --dry-run
  expect_error PATH_OUTSIDE_DATA_HOME 1
  expect_json out error.details.field params.worktreePath
'

# --- clone ---------------------------------------------------------------------------------------

test_case "git.clone of an absolute path makes a bare repo at the default location" '
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\"}}"
  expect_success
  dest=$(json_get out data.path)
  expect_eq "$dest" "$AGOR_HOME/repos/local/$(basename "$PWD")/src.git"
  expect_json out data.bare true
  expect_json out data.defaultBranch main
  [ "$(git -C "$dest" rev-parse --is-bare-repository)" = true ]
  [ "$(git -C "$dest" rev-parse origin/topic)" = "$(git -C src rev-parse topic)" ]
  expect_mode "$AGOR_HOME" 700
'

test_case "git.clone of a file:// URL into outputPath, non-bare, on a branch" '
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"file://$PWD/src\",\"outputPath\":\"x/y.git\",\"bare\":false,\"branch\":\"topic\"}}"
  expect_success
  expect_json out data.defaultBranch topic
  [ -d "$AGOR_HOME/repos/x/y.git/.git" ]
  [ ! -e "$AGOR_HOME/repos/x/y.git/hello.txt" ]
'

test_case "git.clone progress goes to stderr, never stdout" '
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"file://$PWD/src\"}}"
  expect_success
  expect_contains err "Cloning"
'

test_case "git.clone into an existing non-empty directory is ALREADY_EXISTS" '
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"a.git\"}}"
  expect_success
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"a.git\"}}"
  expect_error ALREADY_EXISTS 1
'

test_case "git.clone of a missing repository is GIT_ERROR and leaves nothing behind" '
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/nope\",\"outputPath\":\"n.git\"}}"
  expect_error GIT_ERROR 1
  json_get out error.details.class
  [ ! -e "$AGOR_HOME/repos/n.git" ] || fail "left a partial clone"
'

test_case "ssh URLs go through the SSH transport: an ssh server that does not answer is GIT_ERROR (t0013 clones)" '
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"ssh://git@127.0.0.1:1/o/r.git\"}}"
  expect_error GIT_ERROR 1
  [ ! -e "$AGOR_HOME/repos/127.0.0.1/o/r.git" ] || fail "left a partial clone"
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"git@[::1]:o/r.git\",\"outputPath\":\"v6.git\"}}"
  expect_error INVALID_PAYLOAD 2
  expect_contains out "cannot tell the ssh server"
'

test_case "unsupported URLs and plain http are INVALID_PAYLOAD at params.url" '
  for u in "ftp://x/y/z" "relative/path" "http://example.com/o/r"; do
    executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$u\"}}"
    expect_error INVALID_PAYLOAD 2
    expect_json out error.details.path params.url
  done
'

# --- confinement ---------------------------------------------------------------------------------

test_case "outputPath outside repos/ is PATH_OUTSIDE_DATA_HOME (absolute and ..)" '
  make_source_repo src
  for p in /tmp/evil.git ../evil.git a/../../evil.git "$AGOR_HOME/worktrees/x.git"; do
    executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"$p\"}}"
    expect_error PATH_OUTSIDE_DATA_HOME 1
  done
  [ ! -e /tmp/evil.git ]
'

test_case "a symlink planted in the data home that points out is refused" '
  make_source_repo src
  mkdir -p "$AGOR_HOME/repos" outside
  ln -s "$PWD/outside" "$AGOR_HOME/repos/link"
  ln -s ../../../outside "$AGOR_HOME/repos/rel"
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"link/r.git\"}}"
  expect_error PATH_OUTSIDE_DATA_HOME 1
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"rel/r.git\"}}"
  expect_error PATH_OUTSIDE_DATA_HOME 1
  [ -z "$(ls outside)" ] || fail "wrote outside the data home"
'

test_case "a symlink to /etc inside worktrees/ cannot be removed through" '
  mkdir -p "$AGOR_HOME/worktrees"
  ln -s /etc "$AGOR_HOME/worktrees/etc"
  executor "{\"command\":\"git.worktree.remove\",\"params\":{\"worktreePath\":\"etc/ssl\",\"force\":true}}"
  expect_error PATH_OUTSIDE_DATA_HOME 1
  [ -d /etc/ssl ]
'

test_case "dataHome in the payload moves the roots; a relative dataHome is refused" '
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\"},\"dataHome\":\"$PWD/dh\"}"
  expect_success
  case "$(json_get out data.path)" in "$PWD/dh/repos/"*) ;; *) fail "not under dataHome";; esac
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\"},\"dataHome\":\"rel\"}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path dataHome
'

# --- worktrees -----------------------------------------------------------------------------------

clone_src() { # → repo at repos/acme/src.git
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"acme/src.git\"}}"
  expect_success
  R="$AGOR_HOME/repos/acme/src.git"
}

test_case "worktree add on an existing branch checks it out" '
  clone_src
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/src.git\",\"worktreeName\":\"w1\",\"worktreePath\":\"acme/src/w1\",\"branch\":\"main\"}}"
  expect_success
  expect_json out data.branch main
  expect_json out data.createdBranch false
  [ "$(cat "$AGOR_HOME/worktrees/acme/src/w1/hello.txt")" = hello ]
  [ "$(git -C "$AGOR_HOME/worktrees/acme/src/w1" symbolic-ref --short HEAD)" = main ]
'

test_case "worktree add with createBranch makes a new branch from sourceBranch" '
  clone_src
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"w2\",\"worktreePath\":\"acme/src/w2\",\"branch\":\"feat\",\"createBranch\":true,\"sourceBranch\":\"topic\"}}"
  expect_success
  expect_json out data.createdBranch true
  [ "$(git -C "$R" rev-parse feat)" = "$(git -C "$R" rev-parse origin/topic)" ]
  [ ! -e "$AGOR_HOME/worktrees/acme/src/w2/hello.txt" ]
'

test_case "worktree add without a branch is detached at sourceBranch (no branch left behind)" '
  clone_src
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"w3\",\"worktreePath\":\"acme/src/w3\",\"sourceBranch\":\"topic\"}}"
  expect_success
  expect_json out data.detached true
  ! git -C "$AGOR_HOME/worktrees/acme/src/w3" symbolic-ref -q HEAD
  [ "$(git -C "$AGOR_HOME/worktrees/acme/src/w3" rev-parse HEAD)" = "$(git -C "$R" rev-parse origin/topic)" ]
  [ -z "$(git -C "$R" branch --list "agor-*")" ] || fail "temporary branch left"
'

test_case "worktree add errors: existing name, existing branch, missing branch, missing repo, bad name" '
  clone_src
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"w\",\"worktreePath\":\"acme/src/w\",\"branch\":\"main\"}}"
  expect_success
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"w\",\"worktreePath\":\"acme/src/other\"}}"
  expect_error ALREADY_EXISTS 1
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"x\",\"worktreePath\":\"acme/src/x\",\"branch\":\"main\",\"createBranch\":true}}"
  expect_error ALREADY_EXISTS 1
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"y\",\"worktreePath\":\"acme/src/y\",\"branch\":\"nope\"}}"
  expect_error NOT_FOUND 1
  expect_contains out createBranch
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/none.git\",\"worktreeName\":\"z\",\"worktreePath\":\"acme/src/z\"}}"
  expect_error NOT_FOUND 1
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"../up\",\"worktreePath\":\"acme/src/u\"}}"
  expect_error INVALID_PAYLOAD 2
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"v\",\"worktreePath\":\"acme/src/v\",\"createBranch\":true}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params.branch
  [ ! -e "$AGOR_HOME/worktrees/acme/src/y" ] && [ ! -e "$AGOR_HOME/worktrees/acme/src/other" ] || fail "left a directory"
'

test_case "worktree add writes a new branch by descriptor: a symlink planted in refs/heads is refused, not followed" '
  clone_src
  mkdir outside
  ln -s "$PWD/outside" "$R/refs/heads/feature"
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"f\",\"worktreePath\":\"acme/src/f\",\"branch\":\"feature/x\",\"createBranch\":true}}"
  expect_error GIT_ERROR 1
  expect_contains out "symlink"
  [ -z "$(ls -A outside)" ] || fail "a ref was written through the link: $(ls -A outside)"
  [ ! -e "$AGOR_HOME/worktrees/acme/src/f" ] || fail "left the worktree"
  [ ! -e "$R/worktrees/f" ] || fail "left the admin entry"
  rm "$R/refs/heads/feature"
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"f\",\"worktreePath\":\"acme/src/f\",\"branch\":\"feature/x\",\"createBranch\":true}}"
  expect_success
  [ "$(git -C "$AGOR_HOME/worktrees/acme/src/f" symbolic-ref --short HEAD)" = feature/x ]
  [ "$(git -C "$R" rev-parse feature/x)" = "$(git -C "$R" rev-parse main)" ]
  git -C "$AGOR_HOME/worktrees/acme/src/f" status --porcelain > st && [ ! -s st ] || { cat st; fail "not clean"; }
'

test_case "worktree add from a non-bare clone puts the entry in its .git; remove takes both away" '
  make_source_repo src
  executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"acme/nb\",\"bare\":false}}"
  expect_success
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"acme/nb\",\"worktreeName\":\"n\",\"worktreePath\":\"acme/nb/n\"}}"
  expect_success
  [ -d "$AGOR_HOME/repos/acme/nb/.git/worktrees/n" ] || fail "no entry in .git/worktrees"
  [ "$(cat "$AGOR_HOME/worktrees/acme/nb/n/hello.txt")" = hello ]
  executor "{\"command\":\"git.worktree.remove\",\"params\":{\"worktreePath\":\"acme/nb/n\"}}"
  expect_success
  [ ! -e "$AGOR_HOME/worktrees/acme/nb/n" ] && [ ! -e "$AGOR_HOME/repos/acme/nb/.git/worktrees/n" ] || fail "left something"
'

test_case "worktree add never runs hooks or external filters from the repository" '
  clone_src
  printf "#!/bin/sh\ntouch %s/hook-ran\n" "$PWD" > "$R/hooks/post-checkout"
  chmod +x "$R/hooks/post-checkout"
  git -C "$R" config filter.evil.smudge "touch $PWD/filter-ran; cat"
  git -C "$R" config core.fsmonitor "touch $PWD/fsmonitor-ran"
  git -C src -c user.name=t -c user.email=t@t commit -q --allow-empty -m x
  echo "* filter=evil" > src/.gitattributes && git -C src add .gitattributes
  git -C src -c user.name=t -c user.email=t@t commit -q -m attrs
  git -C "$R" fetch -q "$PWD/src" main:main
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"h\",\"worktreePath\":\"acme/src/h\",\"branch\":\"main\"}}"
  expect_success
  [ ! -e hook-ran ] || fail "hook ran"
  [ ! -e filter-ran ] || fail "filter ran"
  [ ! -e fsmonitor-ran ] || fail "fsmonitor ran"
'

test_case "worktree remove refuses a dirty worktree listing the changed paths, then force removes and prunes" '
  clone_src
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"d\",\"worktreePath\":\"acme/src/d\",\"branch\":\"main\"}}"
  expect_success
  W="$AGOR_HOME/worktrees/acme/src/d"
  echo changed > "$W/hello.txt"; echo new > "$W/untracked.txt"
  executor "{\"command\":\"git.worktree.remove\",\"params\":{\"worktreePath\":\"acme/src/d\"}}"
  expect_error WORKTREE_DIRTY 1
  expect_json out error.details.count 2
  json_get out error.details.paths | grep -q hello.txt
  json_get out error.details.paths | grep -q untracked.txt
  [ -e "$W/untracked.txt" ] || fail "dirty worktree was touched"
  executor "{\"command\":\"git.worktree.remove\",\"params\":{\"worktreePath\":\"acme/src/d\",\"force\":true}}"
  expect_success
  expect_json out data.discardedChanges null  # forced: nothing is read in the worktree
  [ ! -e "$W" ]
  [ ! -e "$R/worktrees/d" ] || fail "metadata not pruned"
  [ "$(git -C "$R" worktree list | wc -l)" -eq 1 ]
'

test_case "worktree remove of a clean worktree needs no force; a symlink inside is unlinked, not followed" '
  clone_src
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"c\",\"worktreePath\":\"acme/src/c\",\"branch\":\"main\"}}"
  expect_success
  mkdir keep && echo precious > keep/file
  echo link >> "$AGOR_HOME/worktrees/acme/src/c/.git/info/exclude" 2>/dev/null || true
  git -C "$AGOR_HOME/worktrees/acme/src/c" config core.excludesFile /dev/null 2>/dev/null || true
  executor "{\"command\":\"git.worktree.remove\",\"params\":{\"worktreePath\":\"acme/src/c\"}}"
  expect_success
  executor "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"$R\",\"worktreeName\":\"c2\",\"worktreePath\":\"acme/src/c2\",\"branch\":\"topic\"}}"
  expect_success
  ln -s "$PWD/keep" "$AGOR_HOME/worktrees/acme/src/c2/link"
  executor "{\"command\":\"git.worktree.remove\",\"params\":{\"worktreePath\":\"acme/src/c2\",\"force\":true}}"
  expect_success
  [ "$(cat keep/file)" = precious ] || fail "followed the symlink"
'

test_case "worktree remove of a main repository or a plain directory is refused" '
  clone_src
  mkdir -p "$AGOR_HOME/worktrees/plain"
  executor "{\"command\":\"git.worktree.remove\",\"params\":{\"worktreePath\":\"plain\"}}"
  expect_error NOT_FOUND 1
  [ -d "$AGOR_HOME/worktrees/plain" ]
'

test_case "a data home the executor may not write is PERMISSION_DENIED (a stable code), nothing else" '
  ! is_root || case_needs setpriv   # as root it writes as another user
  make_source_repo src
  mkdir -p dh/repos && chmod 555 dh/repos
  if is_root; then
    chmod -R a+rX . && chmod 755 "$T"
    rc=0; printf "%s" "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"a/b.git\"},\"dataHome\":\"$PWD/dh\"}" |
      setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$AGOR" executor --stdin > out 2> err || rc=$?
  else
    executor "{\"command\":\"git.clone\",\"params\":{\"url\":\"$PWD/src\",\"outputPath\":\"a/b.git\"},\"dataHome\":\"$PWD/dh\"}"
  fi
  expect_error PERMISSION_DENIED 1
'

# --- commands that land later ---------------------------------------------------------------------

test_case "prompt needs its daemon URL; tmux.attach and zellij.attach need the daemon" '
  mkdir -p "$AGOR_HOME/worktrees/w"
  executor "{\"command\":\"prompt\",\"params\":{\"sessionId\":\"s\",\"taskId\":\"t\",\"prompt\":\"hi\",\"tool\":\"claude-code\",\"cwd\":\"w\"},\"sessionToken\":\"tok\"}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path daemonUrl
  for cmd in tmux.attach zellij.attach; do
    executor "{\"command\":\"$cmd\",\"params\":{\"sessionName\":\"s\",\"cwd\":\"w\"}}"
    expect_error INVALID_PAYLOAD 2
    expect_contains out sessionToken
  done
  executor "{\"command\":\"zellij.attach\",\"params\":{\"sessionName\":\"s\",\"cwd\":\"/etc\"}}"
  expect_error PATH_OUTSIDE_DATA_HOME 1
'

test_case "legacy prompt flags build the same payload (validated, then run against --daemon-url)" '
  mkdir -p "$AGOR_HOME/worktrees/w" && cd "$AGOR_HOME/worktrees/w"
  rc=0; "$AGOR" executor --session-token T --session-id S --task-id K --prompt hi --tool codex --daemon-url unix:/nonexistent > "$T/out" 2>"$T/err" || rc=$?
  cd "$T"
  expect_error INTERNAL 1
  expect_contains out "connecting to the daemon at unix:/nonexistent"
  rc=0; "$AGOR" executor --session-token T --session-id S --task-id K --prompt hi --tool vim > out 2>err || rc=$?
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path params.tool
'

test_case --needs kubectl,jq "dist/k8s: render.sh and the documented kubectl template make one pod spec (kubectl dry run, loopback discovery)" '
  python3 "$TEST_TOP/test/helpers/kube-discovery.py" kport & stub=$!
  trap "kill $stub 2> /dev/null || true" EXIT
  for i in $(seq 1 100); do [ -s kport ] && break; sleep 0.05; done
  k() { kubectl --server "http://127.0.0.1:$(cat kport)" "$@"; }
  export KUBECTL="kubectl --server http://127.0.0.1:$(cat kport)"
  # the image is changed in the template only: it must reach the pod (never a second place that wins)
  sed "s|image: registry.example.com/agor:0.1.0|image: example.test/agor:9.9|" "$TEST_TOP/dist/k8s/executor-template.yaml" > template.yaml
  mkdir etc && "$TEST_TOP/dist/k8s/render.sh" template.yaml etc
  expect_eq "$(cat etc/executor-image)" example.test/agor:9.9
  ! jq -e .metadata.name etc/executor-pod.json > /dev/null || fail "the rendered pod keeps a name (concurrent tasks would collide)"
  # the template of the README, as pasted into config.yaml: it loads (placeholders and URLs known)
  mkdir -p "$AGOR_HOME"
  sed -n "/^execution:/,/^\`\`\`/p" "$TEST_TOP/dist/k8s/README.md" | grep -v "^\`\`\`" > "$AGOR_HOME/config.yaml"
  "$AGOR" config get execution.executor_command_template > template || { cat template; fail "the template does not load"; }
  expect_contains template "kubectl run agor-exec-{task_id}"
  "$AGOR" config get execution.executor_daemon_url > url && expect_contains url "wss://"
  # rendered as the daemon would (task id substituted, the files read), without -i/--rm (no dry run with them)
  args=$(sed "s/{task_id}/0123abcd/; s| --rm -i --quiet||; s|/etc/agor/|etc/|g; s|^kubectl ||" template)
  eval "k $args --dry-run=client -o json" > rendered.json || { cat rendered.json; fail "kubectl run did not render"; }
  python3 - rendered.json <<PY
import json, sys
p = json.load(open(sys.argv[1]))
s = p["spec"]; c = s["containers"][0]; sc = c["securityContext"]
assert p["metadata"]["name"] == "agor-exec-0123abcd", p["metadata"]
assert p["metadata"]["namespace"] == "agor", p["metadata"]
assert len(s["containers"]) == 1 and c["image"] == "example.test/agor:9.9", c
assert c["args"] == ["executor", "--stdin"] and c["stdin"] is True and c["stdinOnce"] is True, c
assert s["securityContext"]["runAsNonRoot"] is True and s["automountServiceAccountToken"] is False, s
assert s["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", s
assert sc["runAsNonRoot"] and sc["readOnlyRootFilesystem"] and sc["allowPrivilegeEscalation"] is False, sc
assert sc["privileged"] is False and sc["capabilities"]["drop"] == ["ALL"], sc
assert sc["seccompProfile"]["type"] == "RuntimeDefault", sc
assert c["resources"]["limits"]["memory"] == "2Gi" and c["resources"]["requests"]["cpu"] == "250m", c
assert {"name": "data", "mountPath": "/data"} in c["volumeMounts"], c
assert any(v["name"] == "data" and v["persistentVolumeClaim"]["claimName"] == "agor-data" for v in s["volumes"]), s
PY
'

test_done
