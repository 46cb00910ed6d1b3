#!/usr/bin/env bash
# t0004-admin — `agor admin` (docs/admin.md) as root with real users alice, bob, carol in a private mount namespace: groups, modes, ACLs, owner links, repos, users, and every attack refused.
# It must never touch the host's accounts: everything runs in test/sandbox.sh's scratch /etc, and the outer run checks the host afterwards.
. "$(dirname "$0")/../sandbox.sh"
sandbox_enter "$@"
. "$(dirname "$0")/../lib.sh"
sandbox_needs "agor admin with real users"
sandbox_setup
sandbox_forget_accounts agor agor_executor agor_users alice bob carol dave

DATA="$SANDBOX/data"
WT_ROOT="$DATA/worktrees"
REPO_ROOT="$DATA/repos"
ARCHIVE_ROOT="$SANDBOX/archive"

uuid() { cat /proc/sys/kernel/random/uuid; }
wt_group() { printf 'agor_wt_%s' "$(printf %s "$1" | sha256sum | cut -c1-16)"; }
admin() { "$AGOR" admin "$@"; }
can() { as_user "$@" > /dev/null 2>&1 || fail "$1 cannot: ${*:2}"; }
cannot() { ! as_user "$@" > /dev/null 2>&1 || fail "$1 can: ${*:2}"; }
group_exists() { getent group "$1" > /dev/null; }
in_group() { id -nG "$1" | tr ' ' '\n' | grep -qx "$2"; }
# new_wt NAME — a worktree directory with a few files, owned by the daemon user; prints its path.
new_wt() {
  local w="$WT_ROOT/org/repo/$1"
  mkdir -p "$w/src"
  echo readme > "$w/README"
  echo code > "$w/src/main.c"
  printf '#!/bin/sh\necho ran\n' > "$w/run.sh"
  chmod 755 "$w/run.sh"
  chown -R agor:agor "$w"
  echo "$w"
}
# The state of a file an attack must not change: mode, owner, group, size, ACL, content.
file_state() { stat -c '%a %u %g %s' "$1"; getfacl -cp "$1" 2>/dev/null; sha256sum < "$1"; }
# expect_refused STATUS CMD… — the command fails with STATUS and says why on stderr.
expect_refused() {
  local want=$1; shift
  expect_exit "$want" "$@"
  [ -s err ] || fail "no message on stderr for: $*"
}

# expect_jsons FILE PATH=VALUE… — like expect_json for several paths with one python run (startup costs 0.3 s here).
expect_jsons() {
  python3 - "$@" <<'PY' || { cat "$1"; fail "unexpected JSON in $1"; }
import json, sys
doc = json.load(open(sys.argv[1]))
bad = 0
for arg in sys.argv[2:]:
    path, want = arg.split("=", 1)
    v = doc
    try:
        for part in [p for p in path.split(".") if p]:
            v = v[int(part)] if isinstance(v, list) else v[part]
        got = v if isinstance(v, str) else json.dumps(v)
    except (KeyError, IndexError, ValueError, TypeError):
        got = "<missing>"
    if got != want:
        print(f"{path}: got {got!r}, expected {want!r}", file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
}

# expect_changed true|false — the admin --json result in ./out says whether anything changed.
expect_changed() { grep -qE "\"dryRun\":(true|false),\"changed\":$1," out || { cat out; fail "changed is not $1"; }; }

# ---- fixture -------------------------------------------------------------------------------------

fixture() {
  mkdir -p "$WT_ROOT/org/repo" "$REPO_ROOT" "$ARCHIVE_ROOT" /etc/agor
  chmod 700 "$ARCHIVE_ROOT"
  printf 'worktrees_dir: %s\nrepos_dir: %s\narchive_dir: %s\n' "$WT_ROOT" "$REPO_ROOT" "$ARCHIVE_ROOT" \
    > /etc/agor/admin.yaml
  chmod 644 /etc/agor/admin.yaml
  groupadd --system agor_users
  useradd --system --create-home --home-dir /home/agor --shell /bin/bash agor
  chown -R agor:agor "$DATA"
  expect_exit 0 admin setup-unix-user alice
  expect_contains out "useradd --create-home --user-group --shell /bin/bash --groups agor_users alice"
  expect_exit 0 admin setup-unix-user bob
  useradd --create-home --user-group --shell /bin/bash carol
  in_group alice agor_users && in_group bob agor_users && ! in_group carol agor_users
}
test_case "fixture: admin.yaml, agor_users, daemon user agor, alice and bob (setup-unix-user), carol (not an agor user)" fixture

# ---- access by others_fs_access --------------------------------------------------------------------

others_none() {
  local id w g; id=$(uuid); w=$(new_wt none); g=$(wt_group "$id")
  expect_exit 0 admin create-worktree-group "$id" "$w" --others none
  expect_exit 0 admin add-worktree-owner "$id" alice "$w"
  expect_mode "$w" 2770
  [ "$(stat -c %G "$w/README")" = "$g" ] || fail "README not in $g"
  can alice cat "$w/README"
  can alice sh -c "echo alice >> '$w/README' && echo new > '$w/src/alice.txt'"
  can alice "$w/run.sh"
  cannot bob cat "$w/README"
  cannot bob ls "$w"
  cannot bob touch "$w/bob.txt"
  cannot carol cat "$w/README"
}
test_case "--others none: owner alice reads and writes, bob and carol can neither read nor list" others_none

others_read() {
  local id w; id=$(uuid); w=$(new_wt read)
  expect_exit 0 admin create-worktree-group "$id" "$w" --others read
  expect_exit 0 admin add-worktree-owner "$id" alice "$w"
  expect_mode "$w" 2775
  expect_mode "$w/README" 664
  expect_mode "$w/run.sh" 775
  can alice touch "$w/src/by-alice"
  can bob cat "$w/README" "$w/src/main.c"
  can bob ls "$w/src"
  cannot bob touch "$w/bob.txt"
  cannot bob sh -c "echo x >> '$w/README'"
}
test_case "--others read: bob reads and lists but cannot write" others_read

others_write() {
  local id w; id=$(uuid); w=$(new_wt write)
  expect_exit 0 admin create-worktree-group "$id" "$w" --others write
  expect_mode "$w" 2777
  expect_mode "$w/README" 666
  can bob cat "$w/README"
  can bob sh -c "echo bob >> '$w/README' && mkdir '$w/bobdir' && echo x > '$w/bobdir/f'"
}
test_case "--others write: bob reads and writes" others_write

inherit() {
  local id w g; id=$(uuid); w=$(new_wt inherit); g=$(wt_group "$id")
  expect_exit 0 admin create-worktree-group "$id" "$w" --others read
  expect_exit 0 admin add-worktree-owner "$id" alice "$w"
  as_user alice sh -c "umask 077; mkdir '$w/later' && echo secret > '$w/later/f'"
  [ "$(stat -c %G "$w/later")" = "$g" ] || fail "new directory not in $g"
  [ "$(stat -c %G "$w/later/f")" = "$g" ] || fail "new file not in $g"
  expect_mode "$w/later" 2775
  getfacl -cp "$w/later" > acl
  expect_contains acl "group:$g:rwx"
  expect_contains acl "default:group:$g:rwx"
  expect_contains acl "default:other::r-x"
  getfacl -cp "$w/later/f" > acl
  expect_contains acl "group:$g:rwx"$'\t'"#effective:rw-"
  expect_contains acl "mask::rw-"
  expect_contains acl "other::r--"
  can bob cat "$w/later/f"
  cannot bob touch "$w/later/g"
  as_user alice sh -c "echo more > '$w/later/f2'" # the owner group may write what others made
  can alice sh -c "echo edit >> '$w/later/f'"
}
test_case "files created later inherit the group and the ACLs (default ACL beats a 077 umask)" inherit

set_permissions() {
  local id w; id=$(uuid); w=$(new_wt setperm)
  expect_exit 0 admin create-worktree-group "$id" "$w" --others none
  cannot bob cat "$w/README"
  expect_exit 0 admin set-worktree-permissions "$id" "$w" write
  can bob sh -c "echo bob >> '$w/README'"
  expect_exit 0 admin set-worktree-permissions "$id" "$w" read
  can bob cat "$w/README"
  cannot bob sh -c "echo bob >> '$w/README'"
  expect_exit 0 admin set-worktree-permissions "$id" "$w" none
  cannot bob cat "$w/README"
  getfacl -cp "$w/src" > acl
  expect_contains acl "default:other::---"
  expect_exit 2 admin set-worktree-permissions "$id" "$w" everyone
  expect_refused 1 admin set-worktree-permissions "$(uuid)" "$w" read # no such group
  expect_contains err "create-worktree-group"
}
test_case "set-worktree-permissions switches none → write → read → none (and refuses an unknown level or group)" set_permissions

group_names() {
  local w; w=$(new_wt names)
  expect_exit 0 admin create-worktree-group --json wt-A "$w"
  expect_json out data.group "$(wt_group wt-A)"
  [ "$(wt_group wt-A)" != "$(wt_group wt-a)" ]
  expect_exit 0 admin create-worktree-group --json wt-a "$(new_wt names2)" --dry-run
  expect_json out data.group "$(wt_group wt-a)"
  group_exists "$(wt_group wt-A)"
  grep -E '^agor_wt_[0-9a-f]{16}$' <<< "$(wt_group wt-A)"
  expect_exit 0 admin delete-worktree-group wt-A
}
test_case "group name is agor_wt_ + 16 hex of SHA-256(id); ids differing in case get different groups" group_names

dry_run() {
  local id w g before; id=$(uuid); w=$(new_wt dry); g=$(wt_group "$id")
  before=$(cd "$w" && find . -printf '%p %m %g\n' | sort; getfacl -R -cp . 2>/dev/null)
  expect_exit 0 admin create-worktree-group "$id" "$w" --others write --dry-run
  expect_contains out "groupadd $g"
  expect_contains out "chgrp -R $g $w"
  expect_contains out "chmod -R 2777 $w"
  expect_contains out "setfacl-equivalent -R --set u::rwx,g::rwx,g:$g:rwx,m::rwx,o::rwx"
  ! group_exists "$g" || fail "dry run created the group"
  [ "$before" = "$(cd "$w" && find . -printf '%p %m %g\n' | sort; getfacl -R -cp . 2>/dev/null)" ] || fail "dry run changed the tree"
  expect_exit 0 admin create-worktree-group "$id" "$w"
  expect_exit 0 admin add-worktree-owner "$id" alice "$w" --dry-run
  expect_contains out "gpasswd -a alice $g"
  expect_contains out "ln -sfn $w /home/alice/agor/worktrees/dry-${id:0:8}"
  ! in_group alice "$g" || fail "dry run added alice"
  [ ! -e "/home/alice/agor/worktrees/dry-${id:0:8}" ] || fail "dry run made the link"
  expect_exit 0 admin delete-worktree-group "$id" --dry-run
  expect_contains out "groupdel $g"
  group_exists "$g"
}
test_case "--dry-run prints the exact actions and changes nothing" dry_run

idempotent() {
  local id w; id=$(uuid); w=$(new_wt twice)
  expect_exit 0 admin create-worktree-group --json "$id" "$w" --others read
  expect_changed true
  expect_exit 0 admin create-worktree-group --json "$id" "$w" --others read
  expect_jsons out data.changed=false data.tree.changed=0
  expect_exit 0 admin add-worktree-owner "$id" bob "$w"
  expect_exit 0 admin add-worktree-owner --json "$id" bob "$w"
  expect_changed false
  expect_exit 0 admin remove-worktree-owner "$id" bob
  expect_exit 0 admin remove-worktree-owner --json "$id" bob
  expect_changed false
  expect_exit 0 admin delete-worktree-group "$id"
  expect_exit 0 admin delete-worktree-group --json "$id"
  expect_changed false
  expect_exit 0 admin setup-unix-user alice
  expect_contains out "nothing to change"
}
test_case "running every subcommand twice is not an error and the second run changes nothing" idempotent

json_result() {
  local id w; id=$(uuid); w=$(new_wt json)
  expect_exit 0 admin create-worktree-group --json "$id" "$w"
  [ "$(wc -l < out)" -eq 1 ] || fail "not one line"
  expect_jsons out success=true data.command=create-worktree-group data.others=read data.dryRun=false data.tree.dirs=2 data.tree.files=3
  expect_exit 2 admin add-worktree-owner --json "$id" 'bad;name' "$w"
  [ "$(wc -l < out)" -eq 1 ] || fail "not one line"
  expect_jsons out success=false error.code=INVALID_PAYLOAD
}
test_case "--json prints exactly one result object, for success and for refusal" json_result

# ---- owners and links -------------------------------------------------------------------------------

owners() {
  local id w g link; id=$(uuid); w=$(new_wt owned); g=$(wt_group "$id")
  link="/home/alice/agor/worktrees/owned-${id:0:8}"
  expect_exit 0 admin create-worktree-group "$id" "$w" --others none
  expect_exit 0 admin add-worktree-owner "$id" alice "$w"
  in_group alice "$g" || fail "alice not in $g"
  [ "$(readlink "$link")" = "$w" ] || fail "link $link wrong: $(readlink "$link")"
  [ "$(stat -c %U "$link")" = alice ] || fail "link not owned by alice"
  [ "$(stat -c %U /home/alice/agor/worktrees)" = alice ] || fail "links dir not alice's"
  can alice cat "$link/README"
  expect_exit 0 admin remove-worktree-owner "$id" alice
  ! in_group alice "$g" || fail "alice still in $g"
  [ ! -L "$link" ] || fail "link still there"
  cannot alice cat "$w/README"
}
test_case "add-worktree-owner adds the group and ~/agor/worktrees/<name>-<id8>; remove-worktree-owner takes both away" owners

link_name() {
  local id w; id=$(uuid); w=$(new_wt linkname)
  expect_exit 0 admin create-worktree-group "$id" "$w"
  expect_exit 0 admin add-worktree-owner "$id" bob "$w" --link-name my-app
  [ "$(readlink "/home/bob/agor/worktrees/my-app-${id:0:8}")" = "$w" ]
  expect_exit 2 admin add-worktree-owner "$id" bob "$w" --link-name ../../.bashrc
  expect_exit 2 admin add-worktree-owner "$id" bob "$w" --link-name .profile
  [ ! -e /home/bob/.bashrc.link ] && [ ! -e "/home/bob/.profile-${id:0:8}" ]
}
test_case "--link-name names the link; a link name with / or a leading dot is refused" link_name

delete_group() {
  local id w g; id=$(uuid); w=$(new_wt deleted); g=$(wt_group "$id")
  expect_exit 0 admin create-worktree-group "$id" "$w"
  expect_exit 0 admin add-worktree-owner "$id" alice "$w"
  expect_exit 0 admin add-worktree-owner "$id" bob "$w"
  ln -s /nonexistent "/home/bob/agor/worktrees/unrelated-${id:0:8}x"
  expect_exit 0 admin delete-worktree-group "$id"
  expect_contains out "rm /home/alice/agor/worktrees/deleted-${id:0:8}"
  ! group_exists "$g" || fail "group still there"
  [ ! -L "/home/alice/agor/worktrees/deleted-${id:0:8}" ] && [ ! -L "/home/bob/agor/worktrees/deleted-${id:0:8}" ] ||
    fail "links left"
  [ -L "/home/bob/agor/worktrees/unrelated-${id:0:8}x" ] || fail "an unrelated link was removed"
  [ -d "$w" ] || fail "the worktree itself was removed"
}
test_case "delete-worktree-group removes the group and every owner's link, nothing else" delete_group

not_this_worktree() {
  local a b w1 w2; a=$(uuid); b=$(uuid); w1=$(new_wt mine); w2=$(new_wt theirs)
  expect_exit 0 admin create-worktree-group "$a" "$w1"
  expect_exit 0 admin create-worktree-group "$b" "$w2"
  expect_refused 1 admin add-worktree-owner "$a" alice "$w2"
  ! in_group alice "$(wt_group "$a")" || fail "alice added"
  expect_refused 1 admin set-worktree-permissions "$a" "$w2" write
  expect_refused 1 admin create-worktree-group "$(uuid)" "$w2"
  expect_contains err "belongs to group $(wt_group "$b")"
}
test_case "a worktree directory of another worktree's group is refused (owner, permissions, new group)" not_this_worktree

# ---- attacks ------------------------------------------------------------------------------------------

dotdot_escape() {
  local id before; id=$(uuid)
  mkdir -p "$SANDBOX/outside" && echo canary > "$SANDBOX/outside/canary"
  before=$(file_state "$SANDBOX/outside/canary"; stat -c '%a %g' "$SANDBOX/outside" "$REPO_ROOT")
  expect_refused 1 admin create-worktree-group "$id" "$WT_ROOT/../repos" --others write
  expect_contains err "refused"
  expect_refused 1 admin create-worktree-group "$id" "$WT_ROOT/org/../../../outside" --others write
  expect_refused 1 admin create-worktree-group "$id" "$WT_ROOT/org/repo/../../.." --others write
  expect_refused 1 admin update-repo-permissions "$REPO_ROOT/../worktrees" --world
  expect_refused 1 admin add-worktree-owner "$id" alice "$WT_ROOT/../../outside"
  ! group_exists "$(wt_group "$id")" || fail "a group was created"
  [ "$before" = "$(file_state "$SANDBOX/outside/canary"; stat -c '%a %g' "$SANDBOX/outside" "$REPO_ROOT")" ] || fail "changed"
}
test_case "attack: ../ escapes out of the roots are refused, nothing changes" dotdot_escape

symlink_escape() {
  local id before; id=$(uuid)
  ln -sfn /etc "$WT_ROOT/org/etc-link"
  ln -sfn "$SANDBOX/outside" "$WT_ROOT/org/out-link"
  ln -sfn "$REPO_ROOT" "$WT_ROOT/org/repos-link"
  mkdir -p "$SANDBOX/outside"
  before=$(file_state /etc/shadow; stat -c '%a %g' /etc /etc/ssh "$SANDBOX/outside" "$REPO_ROOT")
  expect_refused 1 admin create-worktree-group "$id" "$WT_ROOT/org/etc-link" --others write
  expect_refused 1 admin create-worktree-group "$id" "$WT_ROOT/org/etc-link/ssh" --others write
  expect_refused 1 admin create-worktree-group "$id" "$WT_ROOT/org/out-link" --others write
  expect_refused 1 admin create-worktree-group "$id" "$WT_ROOT/org/repos-link" --others write
  expect_refused 1 admin create-worktree-group "$id" /etc --others write
  expect_refused 1 admin create-worktree-group "$id" "$SANDBOX/outside" --others write
  expect_refused 1 admin create-worktree-group "$id" org/repo --others write
  ! group_exists "$(wt_group "$id")" || fail "a group was created"
  [ "$before" = "$(file_state /etc/shadow; stat -c '%a %g' /etc /etc/ssh "$SANDBOX/outside" "$REPO_ROOT")" ] || fail "changed"
  rm -f "$WT_ROOT/org/etc-link" "$WT_ROOT/org/out-link" "$WT_ROOT/org/repos-link"
}
test_case "attack: symlinks leaving the root (as the path, inside it, or to another root) are refused" symlink_escape

shadow_link_in_tree() {
  local id w before; id=$(uuid); w=$(new_wt shadowlink)
  ln -s /etc/shadow "$w/evil"
  ln -s /etc "$w/src/etc"
  ln -s ../../../../../../../../etc/shadow "$w/src/relative-evil"
  before=$(file_state /etc/shadow; stat -c '%a %u %g' /etc; getfacl -cp /etc)
  expect_exit 0 admin create-worktree-group --json "$id" "$w" --others write
  expect_json out data.tree.skippedSymlinks 3
  expect_exit 0 admin set-worktree-permissions "$id" "$w" none
  [ "$before" = "$(file_state /etc/shadow; stat -c '%a %u %g' /etc; getfacl -cp /etc)" ] || fail "/etc/shadow or /etc changed"
  [ "$(readlink "$w/evil")" = /etc/shadow ] # the link itself is left as it was
}
test_case "attack: a symlink to /etc/shadow inside a worktree is not followed by the recursive change" shadow_link_in_tree

shadow_race() {
  local id w before pid i k; id=$(uuid); w=$(new_wt race)
  mkdir "$w/r"
  for i in $(seq 1 150); do echo x > "$w/r/f$i"; mkdir "$w/r/d$i"; done
  chown -R agor:agor "$w"
  before=$(file_state /etc/shadow; stat -c '%a %u %g' /etc /etc/ssh; getfacl -cp /etc /etc/ssh)
  setpriv --reuid=agor --regid=agor --init-groups -- bash -c '
    cd "$1" || exit 1
    while :; do
      for i in $(seq 1 150); do ln -sfn /etc/shadow "f$i.l" && mv -fT "f$i.l" "f$i"; mv -T "d$i" "d$i.o" && ln -sfn /etc/ssh "d$i"; done
      for i in $(seq 1 150); do echo x > "f$i.n" && mv -fT "f$i.n" "f$i"; rm -f "d$i" && mv -T "d$i.o" "d$i"; done
    done' race "$w/r" > /dev/null 2>&1 &
  pid=$!
  trap "kill -9 $pid 2> /dev/null || true" EXIT # never leave the racer behind, even on failure
  for k in 1 2 3 4 5 6 7 8; do
    admin set-worktree-permissions "$id" "$w" write > /dev/null 2>&1 ||
      admin create-worktree-group "$id" "$w" --others write > /dev/null 2>&1 || true
  done
  kill -9 "$pid"; wait "$pid" 2> /dev/null || true
  [ "$before" = "$(file_state /etc/shadow; stat -c '%a %u %g' /etc /etc/ssh; getfacl -cp /etc /etc/ssh)" ] ||
    fail "a target outside the worktree changed"
  group_exists "$(wt_group "$id")"
}
test_case "attack: files and directories swapped for symlinks to /etc/shadow and /etc/ssh during the walk (race) change nothing outside" shadow_race

hardlink() {
  local id w before; id=$(uuid); w=$(new_wt hardlink)
  ln "$SANDBOX/etc/shadow" "$w/shadow-hardlink" # the scratch /etc lives on this filesystem
  before=$(file_state /etc/shadow)
  expect_exit 0 admin create-worktree-group --json "$id" "$w" --others write
  expect_json out data.tree.skippedHardlinked 1
  [ "$before" = "$(file_state /etc/shadow)" ] || fail "/etc/shadow changed through a hard link"
}
test_case "attack: a hard link to /etc/shadow inside a worktree is left alone" hardlink

outside_users() {
  local id w g; id=$(uuid); w=$(new_wt users); g=$(wt_group "$id")
  expect_exit 0 admin create-worktree-group "$id" "$w"
  expect_refused 1 admin add-worktree-owner "$id" root "$w"
  expect_contains err "uid 0"
  expect_refused 1 admin add-worktree-owner "$id" carol "$w"
  expect_contains err "not a member of agor_users"
  expect_refused 1 admin add-worktree-owner "$id" nosuchuser "$w"
  expect_refused 1 admin remove-worktree-owner "$id" carol
  expect_refused 1 admin setup-unix-user carol
  expect_refused 1 admin setup-unix-user root
  expect_refused 1 admin delete-unix-user carol
  expect_refused 1 admin delete-unix-user root
  expect_refused 1 admin delete-unix-user agor
  ! in_group root "$g" && ! in_group carol "$g" && ! in_group carol agor_users || fail "membership changed"
  id carol && id root && id agor
  [ ! -e /home/root ] && [ ! -e /home/carol/agor ]
}
test_case "attack: users outside agor_users (root, carol, the daemon user) are refused everywhere" outside_users

option_injection() {
  local id w before; id=$(uuid); w=$(new_wt inject)
  expect_exit 0 admin create-worktree-group "$id" "$w"
  before=$(getent group; getent passwd)
  expect_refused 2 admin add-worktree-owner "$id" -oX "$w"
  expect_exit 0 admin add-worktree-owner "$id" --help "$w"   # help, and nothing else done
  expect_contains out "Usage: agor admin add-worktree-owner WORKTREE-ID UNIX-USER WORKTREE-PATH"
  expect_refused 2 admin add-worktree-owner -- "$id" -oX "$w"
  expect_contains err "must match"
  expect_refused 2 admin add-worktree-owner -- "$id" --help "$w"
  expect_refused 2 admin setup-unix-user -- --help
  expect_refused 2 admin setup-unix-user -- -oX
  expect_refused 2 admin delete-unix-user -- -r
  expect_refused 2 admin remove-worktree-owner -- "$id" -aroot
  expect_refused 2 admin create-worktree-group -- --others "$w"
  expect_refused 2 admin create-worktree-group "$id" "$w" --others=-R
  [ "$before" = "$(getent group; getent passwd)" ] || fail "accounts changed"
}
test_case "attack: option injection (-oX, -r as user names or values) is refused, --help only answers; accounts unchanged" option_injection

metacharacters() {
  local w before bad; w=$(new_wt meta)
  before=$(getent group; getent passwd)
  for bad in 'a;touch /tmp/pwned' '$(touch /tmp/pwned)' '`touch /tmp/pwned`' 'a b' 'a|b' 'a&b' "a'b" 'a"b' \
    $'a\nb' $'a\rb' 'a*' '../x' 'a/b' ''; do
    expect_refused 2 admin create-worktree-group "$bad" "$w"
    expect_refused 2 admin delete-worktree-group "$bad"
    expect_refused 2 admin add-worktree-owner "$(uuid)" "$bad" "$w"
    expect_refused 2 admin setup-unix-user "$bad"
  done
  expect_refused 2 admin setup-unix-user $'alice\nroot'
  expect_contains err 'alice\nroot'
  expect_refused 1 admin create-worktree-group "$(uuid)" "$w"$'\n'/etc
  [ ! -e /tmp/pwned ] || fail "a shell ran"
  [ "$before" = "$(getent group; getent passwd)" ] || fail "accounts changed"
}
test_case "attack: shell metacharacters and newlines in ids, names and paths are refused before any action" metacharacters

group_prefix() {
  local before; before=$(getent group)
  for id in root agor_users sudo shadow alice; do
    expect_exit 0 admin delete-worktree-group "$id"
    expect_contains out "nothing to change"
  done
  expect_exit 0 admin delete-worktree-group --json agor_users
  expect_json out data.group "$(wt_group agor_users)"
  expect_refused 2 admin delete-worktree-group agor_wt_0123456789abcdef:x
  [ "$before" = "$(getent group)" ] || fail "groups changed"
  getent group root && getent group agor_users && getent group alice
}
test_case "attack: a group outside the agor_wt_/agor_rp_ prefix is never touched (ids only ever name hashed groups)" group_prefix

admin_yaml_trust() {
  local id w cfg; id=$(uuid); w=$(new_wt trust); cfg=/srv/agor-trust-test   # /srv is a root-owned tmpfs in the sandbox: its parents are trusted wherever the clone lives
  mkdir -p "$cfg" && chmod 755 "$cfg"
  cp /etc/agor/admin.yaml "$cfg/admin.yaml"
  expect_exit 0 admin create-worktree-group "$id" "$w" --root-config "$cfg/admin.yaml" --dry-run # control
  chown alice "$cfg/admin.yaml"
  expect_refused 1 admin create-worktree-group "$id" "$w" --root-config "$cfg/admin.yaml"
  expect_contains err "not root"
  chown root "$cfg/admin.yaml" && chmod 664 "$cfg/admin.yaml"
  expect_refused 1 admin create-worktree-group "$id" "$w" --root-config "$cfg/admin.yaml"
  expect_contains err "writable by group or others"
  chmod 646 "$cfg/admin.yaml"
  expect_refused 1 admin create-worktree-group "$id" "$w" --root-config "$cfg/admin.yaml"
  chmod 644 "$cfg/admin.yaml" && chmod 777 "$cfg"
  expect_refused 1 admin create-worktree-group "$id" "$w" --root-config "$cfg/admin.yaml"
  chmod 755 "$cfg" && chown alice "$cfg"
  expect_refused 1 admin create-worktree-group "$id" "$w" --root-config "$cfg/admin.yaml"
  chown root "$cfg" && ln -s "$cfg/admin.yaml" "$cfg/link.yaml"
  expect_refused 1 admin create-worktree-group "$id" "$w" --root-config "$cfg/link.yaml"
  trap 'chmod 644 /etc/agor/admin.yaml; chown root:root /etc/agor/admin.yaml' EXIT
  chmod 666 /etc/agor/admin.yaml
  expect_refused 1 admin create-worktree-group "$id" "$w"
  chmod 644 /etc/agor/admin.yaml && chown alice /etc/agor/admin.yaml
  expect_refused 1 admin create-worktree-group "$id" "$w"
  chown root /etc/agor/admin.yaml
  ! group_exists "$(wt_group "$id")" || fail "a group was created"
}
test_case "attack: an admin.yaml (or a directory above it) writable or owned by a non-root user, or a symlink, is refused" admin_yaml_trust

root_config_via_sudo() {
  local id w; id=$(uuid); w=$(new_wt viasudo)
  expect_refused 1 env SUDO_UID=1000 SUDO_USER=agor "$AGOR" admin create-worktree-group "$id" "$w" \
    --root-config /etc/agor/admin.yaml
  expect_contains err "refused through sudo"
  expect_refused 1 env SUDO_COMMAND=x "$AGOR" admin setup-unix-user dave --root-config /etc/agor/admin.yaml
  ! id dave 2> /dev/null || fail "dave was created"
}
test_case "--root-config is refused when invoked through sudo (SUDO_* set), for every subcommand" root_config_via_sudo

bad_usage() {
  expect_refused 2 admin
  expect_refused 2 admin frobnicate
  expect_refused 2 admin create-worktree-group onlyone
  expect_refused 2 admin create-worktree-group a /b c
  expect_refused 2 admin delete-worktree-group x --others read
  expect_refused 2 admin update-repo-permissions "$REPO_ROOT/x" --group --world
  expect_refused 2 admin create-worktree-group "$(uuid)" "$WT_ROOT/x" --others sometimes
  expect_exit 0 admin --help
  expect_contains out "Usage: agor admin"
}
test_case "usage errors exit 2 with a message; --help prints usage" bad_usage

# ---- repositories --------------------------------------------------------------------------------------

repos() {
  local r w id rp; r="$REPO_ROOT/github/org/proj"; id=$(uuid); w="$WT_ROOT/org/proj/feature"
  rp="agor_rp_$(printf %s github/org/proj | sha256sum | cut -c1-16)"
  mkdir -p "$r" "$WT_ROOT/org/proj"
  git -C "$r" init -q
  git -C "$r" -c user.email=a@b -c user.name=a commit -q --allow-empty -m init
  git -C "$r" worktree add -q -b feature "$w"
  chown -R agor:agor "$r" "$WT_ROOT/org/proj"
  expect_exit 0 admin create-worktree-group "$id" "$w" --others none
  expect_exit 0 admin add-worktree-owner "$id" alice "$w"
  expect_exit 0 admin update-repo-permissions --json "$r" --group
  expect_jsons out "data.group=$rp" 'data.members=["alice"]'
  in_group alice "$rp" && ! in_group bob "$rp" || fail "membership wrong"
  can alice cat "$r/.git/HEAD"
  can alice touch "$r/.git/objects/alice-was-here"
  cannot bob cat "$r/.git/HEAD"
  expect_exit 0 admin update-repo-permissions --json "$r" --group
  expect_changed false # what alice created inherited the right group and ACL
  expect_exit 0 admin update-repo-permissions "$r" --world
  can bob cat "$r/.git/HEAD"
  can bob touch "$r/.git/objects/bob-was-here"
  expect_refused 1 admin update-repo-permissions "$WT_ROOT/org/proj/feature" --world
  expect_refused 1 admin update-repo-permissions /etc --world
}
test_case "update-repo-permissions --group: the owners of the repo's worktrees (only) get access; --world opens it" repos

# ---- users -----------------------------------------------------------------------------------------------

users() {
  expect_exit 0 admin setup-unix-user dave --dry-run
  ! id dave 2> /dev/null || fail "dry run created dave"
  expect_exit 0 admin setup-unix-user dave
  in_group dave agor_users || fail "dave not in agor_users"
  [ "$(getent passwd dave | cut -d: -f7)" = /bin/bash ] && [ -d /home/dave ]
  expect_exit 0 admin setup-unix-user dave
  expect_refused 1 admin setup-unix-user agor_wt_0123456789abcdef
  as_user dave sh -c 'echo private > /home/dave/notes'
  expect_refused 1 admin delete-unix-user dave --archive /tmp
  expect_refused 1 admin delete-unix-user dave --archive "$SANDBOX"
  id dave > /dev/null || fail "dave deleted by a refused call"
  expect_exit 0 admin delete-unix-user --json dave --archive "$ARCHIVE_ROOT"
  local archive; archive=$(json_get out data.archive)
  ! id dave 2> /dev/null || fail "dave still exists"
  [ ! -e /home/dave ] || fail "home left"
  [ "$(stat -c '%a %U' "$ARCHIVE_ROOT/$archive")" = "600 root" ] || fail "archive not root-only"
  tar -tzf "$ARCHIVE_ROOT/$archive" | grep -qx 'dave/notes' || fail "archive lacks dave/notes"
  expect_exit 0 admin delete-unix-user dave
  expect_contains out "nothing to change"
}
test_case "setup-unix-user / delete-unix-user --archive: login user in agor_users; root-only archive inside archive_dir" users

test_done
