#!/usr/bin/env bash
# t0034-worktree-access — worktree Unix groups for real (strict mode, users in a scratch /etc): the daemon (agord) runs
# `sudo -n agor admin` with the generated sudoers; worktrees.set_access by owners only; other users' file access as attacks.
. "$(dirname "$0")/../lib.sh"

file_needs root,sudo,unshare,acl "worktree Unix groups through agor admin"

# The scene (root, in the scratch /etc): daemon user agord, agor users alice (the creator) and bob (not an owner),
# carol (a Unix user outside agor_users); /etc/agor/admin.yaml confines admin to the data home; the sudoers file is
# exactly `agor setup sudoers --mode strict`. Clients: as_USER agor … on the daemon's socket /run/agor/agor.sock.
SCENE='
  groupadd -f agor_users
  useradd -m -s /bin/bash -G agor_users agord
  mkdir -p bin && cp "$AGOR" bin/agor && chmod 755 bin bin/agor
  BIN="$T/bin/agor"
  chmod 755 "$T" && d="$T"; while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  "$BIN" admin setup-unix-user alice > /dev/null && "$BIN" admin setup-unix-user bob > /dev/null
  useradd -m -s /bin/bash carol
  mkdir -p /etc/agor data/repos data/worktrees /run/agor
  printf "worktrees_dir: %s\nrepos_dir: %s\n" "$T/data/worktrees" "$T/data/repos" > /etc/agor/admin.yaml
  chmod 644 /etc/agor/admin.yaml
  "$BIN" setup sudoers --mode strict --daemon-user agord --bin "$BIN" > /etc/sudoers.d/agor
  chmod 440 /etc/sudoers.d/agor && visudo -cf /etc/sudoers.d/agor > /dev/null
  chown -R agord:agor_users data && chmod -R 2770 data
  chown agord:agor_users /run/agor && chmod 750 /run/agor
  make_source_repo src && chmod -R a+rX src
  as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --init-groups env -i HOME="/home/$u" PATH=/usr/bin:/bin "$@"; }
  as_agord() { as agord AGOR_HOME=/home/agord/.agor "$@"; }
  as_agord mkdir -m 700 /home/agord/.agor
  printf "daemon:\n  socket_path: /run/agor/agor.sock\npaths:\n  data_home: %s\nexecution:\n  unix_user_mode: strict\n" "$T/data" > config.yaml
  chmod 644 config.yaml && as_agord cp config.yaml /home/agord/.agor/config.yaml
  DAEMON_AS="setpriv --reuid=agord --regid=agord --init-groups env -i HOME=/home/agord PATH=/usr/bin:/bin"
  DAEMON_AS="$DAEMON_AS AGOR_HOME=/home/agord/.agor" DAEMON_BIN=$BIN
  start_daemon
  as_agord "$BIN" user create alice --unix-user alice > /dev/null
  as_agord "$BIN" user create bob --unix-user bob > /dev/null
  agor_as() { local u=$1; shift; as "$u" AGOR_HOME="/home/$u/.agor" "$BIN" "$@" --url unix:/run/agor/agor.sock; }
  wt_group() { printf "agor_wt_%s" "$(printf %s "$1" | sha256sum | cut -c1-16)"; }
  can() { as "$@" > /dev/null 2>&1 || fail "$1 cannot: ${*:2}"; }
  cannot() { ! as "$@" > /dev/null 2>&1 || fail "$1 can: ${*:2}"; }
  agor_as alice repo clone "$T/src" --json > clone.json 2> clone.err || { cat clone.err daemon.log; false; }
  repo=$(json_get clone.json repo.id)
'

test_case "strict: worktrees.add makes the group (admin via sudo), modes and ACLs per others_fs_access; owner in, others out" '
  in_scratch_system "$SCENE"'"'"'
  agor_as alice worktree add "$repo" feat --others-fs-access none --json > wt.json 2> wt.err || { cat wt.err daemon.log; false; }
  id=$(json_get wt.json worktree.id); w=$(json_get wt.json worktree.path); g=$(wt_group "$id")
  expect_json wt.json worktree.others_fs_access none
  getent group "$g" > /dev/null || fail "no group $g"
  id -nG alice | tr " " "\n" | grep -qx "$g" || fail "alice is not in $g"
  expect_mode "$w" 2770
  [ "$(stat -c %G "$w/hello.txt")" = "$g" ] || fail "hello.txt is not in $g"
  getfacl -cp "$w" | grep -qx "group:$g:rwx" || { getfacl -cp "$w"; fail "no ACL entry for $g"; }
  getfacl -cp "$w" | grep -qx "default:group:$g:rwx" || fail "no default ACL for $g"
  [ -L /home/alice/agor/worktrees/feat-${id:0:8} ] || fail "no owner link for alice"
  can alice cat "$w/hello.txt"
  can alice sh -c "echo more >> $w/hello.txt"
  cannot bob cat "$w/hello.txt"
  cannot bob ls "$w"
  cannot carol cat "$w/hello.txt"
  as_agord "$BIN" audit list --json > audit.json
  grep -q "admin.create-worktree-group" audit.json || fail "the admin call is not audited"
  grep -q "admin.add-worktree-owner" audit.json || fail "the owner call is not audited"
  as_agord "$BIN" audit verify > /dev/null
'"'"'
'

test_case "set_access: only owners (and admins) may change it; read then write really opens the files to bob; audited" '
  in_scratch_system "$SCENE"'"'"'
  agor_as alice worktree add "$repo" shared --json > wt.json 2> wt.err || { cat wt.err daemon.log; false; }
  id=$(json_get wt.json worktree.id); w=$(json_get wt.json worktree.path)
  cannot bob cat "$w/hello.txt"
  ! agor_as bob worktree set-access "$id" --others-fs-access write > bob.out 2> bob.err || fail "bob (not an owner) changed access"
  grep -q "no worktree with id" bob.err || { cat bob.err; fail "no refusal as for an unknown id (others_can none)"; }
  cannot bob cat "$w/hello.txt"
  agor_as alice worktree set-access "$id" --others-fs-access read --others-can view --json > acc.json 2> acc.err || { cat acc.err daemon.log; false; }
  expect_json acc.json worktree.others_fs_access read
  expect_json acc.json worktree.others_can view
  expect_mode "$w" 2775
  can bob cat "$w/hello.txt"
  can bob ls "$w"
  cannot bob touch "$w/by-bob"
  cannot bob sh -c "echo x >> $w/hello.txt"
  getfacl -cp "$w" | grep -qx "default:other::r-x" || { getfacl -cp "$w"; fail "no default ACL for others"; }
  cannot carol cat "$w/hello.txt"   # carol cannot even traverse the data home (agor_users only)
  agor_as alice worktree set-access "$id" --others-fs-access write --json > acc.json
  can bob sh -c "echo bob >> $w/hello.txt && echo new > $w/by-bob"
  as alice cat "$w/by-bob" > /dev/null || fail "alice cannot read the file bob made"
  agor_as alice worktree set-access "$id" --others-fs-access none --json > acc.json
  cannot bob cat "$w/hello.txt"
  agor_as bob worktree get "$id" --json > get.json
  expect_json get.json others_fs_access none
  expect_json get.json others_can view
  ! agor_as alice worktree set-access "$id" --others-fs-access everything 2> bad.err || fail "a bad level was accepted"
  grep -q "expected one of none|read|write" bad.err || { cat bad.err; fail "no clear message"; }
  as_agord "$BIN" audit list --json > audit.json
  audit_actions audit.json > acts
  grep -qx "worktrees.set_access refused" acts || { cat acts; fail "the refused set_access is not audited"; }
  [ "$(grep -cx "worktrees.set_access ok" acts)" -ge 3 ] || { cat acts; fail "set_access not audited 3 times"; }
'"'"'
'

test_case "simple mode: others_fs_access is refused clearly (no groups); others_can alone is stored" '
  make_source_repo src
  start_daemon
  "$AGOR" repo clone "$PWD/src" --json > clone.json
  expect_exit 1 "$AGOR" worktree add "$(json_get clone.json repo.id)" x --others-fs-access read
  expect_contains err "worktree Unix groups are off (execution.unix_user_mode: simple"
  "$AGOR" worktree add "$(json_get clone.json repo.id)" x --json > wt.json
  id=$(json_get wt.json worktree.id)
  expect_exit 1 "$AGOR" worktree set-access "$id" --others-fs-access read
  expect_contains err "ISOLATION_UNAVAILABLE"
  expect_exit 0 "$AGOR" worktree set-access "$id" --others-can prompt --json
  expect_json out worktree.others_can prompt
  expect_json out worktree.others_fs_access none
  stop_daemon
'

test_case "strict: owners.add|remove run admin add-/remove-worktree-owner first; a failing admin leaves the owners unchanged" '
  in_scratch_system "$SCENE"'"'"'
  agor_as alice worktree add "$repo" team --json > wt.json 2> wt.err || { cat wt.err daemon.log; false; }
  id=$(json_get wt.json worktree.id); w=$(json_get wt.json worktree.path); g=$(wt_group "$id")
  as_agord "$BIN" user create carol --unix-user carol > /dev/null   # carol: a Unix user outside agor_users
  ! agor_as alice worktree add-owner "$id" carol > carol.out 2> carol.err || fail "carol became an owner although admin refuses her"
  grep -q "agor_users" carol.err || { cat carol.err daemon.log; fail "the refusal of admin is not passed on"; }
  agor_as alice worktree owners "$id" --json > owners.json
  python3 -c "import json,sys; n=[o[\"name\"] for o in json.load(open(sys.argv[1]))]; assert n == [\"alice\"], n" owners.json \
    || fail "a failed admin call changed the owners"
  cannot bob cat "$w/hello.txt"
  agor_as alice worktree add-owner "$id" bob --json > add.json 2> add.err || { cat add.err daemon.log; false; }
  python3 -c "import json,sys; n=[o[\"name\"] for o in json.load(open(sys.argv[1]))[\"owners\"]]; assert n == [\"alice\", \"bob\"], n" add.json \
    || { cat add.json; fail "bob is not listed as an owner"; }
  id -nG bob | tr " " "\n" | grep -qx "$g" || fail "bob is not in $g"
  [ -L /home/bob/agor/worktrees/team-${id:0:8} ] || fail "no owner link for bob"
  can bob cat "$w/hello.txt"
  agor_as bob worktree set-access "$id" --others-can view --json > /dev/null || fail "bob, now an owner, cannot set access"
  agor_as alice worktree remove-owner "$id" bob --json > rm.json 2> rm.err || { cat rm.err daemon.log; false; }
  ! id -nG bob | tr " " "\n" | grep -qx "$g" || fail "bob is still in $g"
  cannot bob cat "$w/hello.txt"
  ! agor_as bob worktree add-owner "$id" bob 2> bob.err || fail "bob (no longer an owner) made himself one"
  grep -q "PERMISSION_DENIED\|only an owner" bob.err || { cat bob.err; fail "no clear refusal"; }
  as_agord "$BIN" audit list --json > audit.json
  audit_actions audit.json > acts
  for want in "worktrees.owners.add failed" "worktrees.owners.add ok" "worktrees.owners.remove ok"; do
    grep -qx "$want" acts || { cat acts; fail "not audited: $want"; }
  done
  grep -q "^admin.add-worktree-owner " acts && grep -q "^admin.remove-worktree-owner " acts || { cat acts; fail "the admin steps are not audited"; }
'"'"'
'

test_case "strict: the agor_rp_ group follows the worktree owners: bob, made an owner, commits into the shared repository; removed, he cannot" '
  in_scratch_system "$SCENE"'"'"'
  agor_as alice worktree add "$repo" pair --json > wt.json 2> wt.err || { cat wt.err daemon.log; false; }
  id=$(json_get wt.json worktree.id); w=$(json_get wt.json worktree.path)
  rp=$(json_get clone.json repo.path)
  rp_group() { getent group | cut -d: -f1 | grep "^agor_rp_" || true; }
  rp_members() { getent group "$(rp_group)" | cut -d: -f4 | tr , "\n"; }
  g=$(rp_group)
  [ -n "$g" ] || fail "no agor_rp_ group after worktrees.add"
  rp_members | grep -qx alice || { getent group "$g"; fail "alice (the creator) is not in $g"; }
  ! rp_members | grep -qx bob || fail "bob is in $g before he is an owner"
  git_as() { local u=$1; shift; as "$u" git -c "safe.directory=*" -c user.name="$u" -c user.email="$u@example.com" -C "$w" "$@"; }
  agor_as alice worktree add-owner "$id" bob --json > add.json 2> add.err || { cat add.err daemon.log; false; }
  rp_members | grep -qx bob || { getent group "$g"; fail "bob (an owner) is not in $g"; }
  as bob sh -c "echo by-bob >> $w/hello.txt" || fail "bob cannot write in the worktree"
  git_as bob commit -qam "by bob" 2> commit.err || { cat commit.err; ls -la "$rp" "$rp/objects"; fail "bob (an owner) cannot commit in the worktree"; }
  head=$(git_as bob rev-parse HEAD)
  [ -f "$rp/objects/${head:0:2}/${head:2}" ] || fail "the commit of bob is not in the shared repository objects"
  git -c "safe.directory=*" --git-dir="$rp" cat-file -e "$head^{commit}" || fail "the repository does not know the commit of bob"
  grep -qx "$head" "$rp"/worktrees/*/HEAD || fail "the HEAD of the worktree (in the repository) is not the commit of bob"
  as alice sh -c "echo by-alice >> $w/hello.txt" && git_as alice commit -qam "by alice" 2> commit.err \
    || { cat commit.err; fail "alice cannot commit after bob (objects of bob not group-writable)"; }
  as_agord "$BIN" audit list --json > audit.json
  grep -q "admin.update-repo-permissions" audit.json || fail "the repository group update is not audited"
  agor_as alice worktree remove-owner "$id" bob --json > rm.json 2> rm.err || { cat rm.err daemon.log; false; }
  ! rp_members | grep -qx bob || { getent group "$g"; fail "bob (no longer an owner) is still in $g"; }
  rp_members | grep -qx alice || fail "alice left $g with bob"
  ! git_as bob commit -q --allow-empty -m "bob again" 2> /dev/null || fail "bob (no longer an owner) committed"
  agor_as alice worktree remove "$id" > /dev/null 2> rm.err || { cat rm.err daemon.log; false; }
  for i in $(seq 1 100); do rp_members | grep -qx alice || break; sleep 0.1; done
  ! rp_members | grep -qx alice || { getent group "$g"; fail "alice (owner of no worktree now) is still in $g"; }
'"'"'
'

test_case "strict: a command and a terminal outside a session run as the caller: bob, an owner of the worktree of alice, gets bob" '
  cp "$TEST_TOP/test/helpers/term-client.py" "$T/term-client.py"
  in_scratch_system "$SCENE"'"'"'
  agor_as alice worktree add "$repo" shared --json > wt.json 2> wt.err || { cat wt.err daemon.log; false; }
  id=$(json_get wt.json worktree.id); w=$(json_get wt.json worktree.path)
  agor_as alice worktree add-owner "$id" bob --json > /dev/null 2> add.err || { cat add.err daemon.log; false; }
  for u in alice bob; do "$BIN" admin cgroup-delegate $u > /dev/null; done
  scene_cleanup() { # the tmux servers of alice and bob: the case fails when one does not stop (tmux_stop_as says why)
    local rc=0 u
    for u in alice bob; do tmux_stop_as $u "agor-$u-$(printf %s "$T/data" | sha256sum | cut -c1-8)" || rc=1; done
    [ $rc = 0 ] || exit 1
  }
  exec_as() { local u=$1; shift; as "$u" AGOR_HOME="/home/$u/.agor" "$BIN" exec --url unix:/run/agor/agor.sock "$@"; }
  exec_as bob "$id" -- sh -c "id -un > by-exec.txt; id -un" > bob.out 2> bob.err || { cat bob.out bob.err daemon.log; false; }
  grep -qx bob bob.out || { cat bob.out; fail "the command of bob ran as someone else"; }
  [ "$(stat -c %U "$w/by-exec.txt")" = bob ] || fail "the file bob made belongs to $(stat -c %U "$w/by-exec.txt")"
  exec_as alice "$id" -- id -un > alice.out 2> alice.err || { cat alice.err; false; }
  grep -qx alice alice.out || { cat alice.out; fail "the command of alice ran as someone else"; }
  chmod 644 term-client.py
  as bob python3 "$T/term-client.py" /run/agor/agor.sock "$id" "expect:@agor-sandbox:" "type:id -un\n" "expect:\rbob\r\n" > term.out \
    || { cat term.out daemon.log; fail "the terminal of bob is not his"; }
  head -1 term.out > open.json
  expect_json open.json open.result.tmux.server "agor-bob-$(printf %s "$T/data" | sha256sum | cut -c1-8)"   # per user and data home
'"'"'
'

test_case "others_can as attacks: none hides the worktree and its sessions; view reads but prompt is refused; prompt prompts; all creates sessions" '
  in_scratch_system "RPC_PY='"'"'$TEST_TOP/test/helpers/rpc.py'"'"'
$SCENE"'"'"'
  cp "$RPC_PY" bin/rpc.py && chmod 644 bin/rpc.py
  rpc_as() { local u=$1; shift; as "$u" python3 "$T/bin/rpc.py" /run/agor/agor.sock "$@"; }
  agor_as alice worktree add "$repo" secret --json > wt.json 2> wt.err || { cat wt.err daemon.log; false; }
  id=$(json_get wt.json worktree.id)
  agor_as alice session create "$id" --tool claude-code --json > s.json 2> s.err || { cat s.err daemon.log; false; }
  sid=$(json_get s.json id)
  # none: bob gets the answers of an unknown id, and lists leave them out
  rpc_as bob worktrees.get "{\"id\":\"$id\"}" > r; expect_contains r NOT_FOUND
  rpc_as bob worktrees.get "{\"id\":\"nosuchid\"}" > r0
  [ "$(sed "s/$id/X/g" r)" = "$(sed "s/nosuchid/X/g" r0)" ] || { cat r r0; fail "none answers differently from an unknown id"; }
  rpc_as bob worktrees.list > r; expect_not_contains r "$id"
  rpc_as bob sessions.list > r; expect_not_contains r "$sid"
  rpc_as bob sessions.get "{\"id\":\"$sid\"}" > r; expect_contains r NOT_FOUND
  rpc_as bob messages.list "{\"session_id\":\"$sid\"}" > r; expect_contains r NOT_FOUND
  rpc_as bob sessions.prompt "{\"session_id\":\"$sid\",\"prompt\":\"rm -rf\"}" > r; expect_contains r NOT_FOUND
  rpc_as bob sessions.create "{\"worktree_id\":\"$id\",\"tool\":\"claude-code\"}" > r; expect_contains r NOT_FOUND
  rpc_as bob worktrees.owners.list "{\"worktree_id\":\"$id\"}" > r; expect_contains r NOT_FOUND
  rpc_as bob worktrees.owners.add "{\"worktree_id\":\"$id\",\"user_id\":\"bob\"}" > r; expect_contains r NOT_FOUND
  rpc_as bob exec.run "{\"worktree_id\":\"$id\",\"argv\":[\"id\"]}" > r; expect_contains r NOT_FOUND
  # view: readable, prompting and new sessions refused
  agor_as alice worktree set-access "$id" --others-can view --json > /dev/null
  rpc_as bob worktrees.get "{\"id\":\"$id\"}" > r; expect_contains r "\"others_can\":\"view\""
  rpc_as bob worktrees.list > r; expect_contains r "$id"
  rpc_as bob sessions.list > r; expect_contains r "$sid"
  rpc_as bob sessions.get "{\"id\":\"$sid\"}" > r; expect_contains r "\"result\""
  rpc_as bob messages.list "{\"session_id\":\"$sid\"}" > r; expect_contains r "\"result\""
  rpc_as bob sessions.prompt "{\"session_id\":\"$sid\",\"prompt\":\"hi\"}" > r; expect_contains r PERMISSION_DENIED
  expect_contains r "needs others_can prompt"
  rpc_as bob sessions.create "{\"worktree_id\":\"$id\",\"tool\":\"claude-code\"}" > r; expect_contains r PERMISSION_DENIED
  # prompt: bob prompts the session of alice; the task runs as the execution user of alice, bob is audited
  agor_as alice worktree set-access "$id" --others-can prompt --json > /dev/null
  rpc_as bob sessions.prompt "{\"session_id\":\"$sid\",\"prompt\":\"hi\"}" > r; expect_contains r "\"task_id\""
  task=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"result\"][\"task_id\"])" r)
  rpc_as bob tasks.get "{\"id\":\"$task\"}" > r; expect_contains r "\"execution_user\":\"alice\""
  # bob follows his own prompt: the task is the creator, its events reach the prompter too (it ends: no agent CLI here)
  rc=0; timeout 120 setpriv --reuid=bob --regid=bob --init-groups env -i HOME=/home/bob PATH=/usr/bin:/bin AGOR_HOME=/home/bob/.agor \
    "$BIN" prompt "$sid" again --json --url unix:/run/agor/agor.sock > p.out 2> p.err || rc=$?
  [ "$rc" -ne 124 ] || { cat p.out p.err; fail "the prompt of bob never ended for him (no events)"; }
  grep -q "task.updated" p.out || { cat p.out p.err; fail "bob got no task events"; }
  rpc_as bob sessions.create "{\"worktree_id\":\"$id\",\"tool\":\"claude-code\"}" > r; expect_contains r PERMISSION_DENIED
  rpc_as bob exec.run "{\"worktree_id\":\"$id\",\"argv\":[\"id\"]}" > r; expect_contains r PERMISSION_DENIED
  # all: bob may start his own sessions there, still not run commands, open terminals or manage it
  agor_as alice worktree set-access "$id" --others-can all --json > /dev/null
  rpc_as bob sessions.create "{\"worktree_id\":\"$id\",\"tool\":\"claude-code\"}" > r; expect_contains r "\"result\""
  rpc_as bob exec.run "{\"worktree_id\":\"$id\",\"argv\":[\"id\"]}" > r; expect_contains r PERMISSION_DENIED
  rpc_as bob worktrees.set_access "{\"worktree_id\":\"$id\",\"others_can\":\"none\"}" > r; expect_contains r PERMISSION_DENIED
  # back to none: bob loses even the session he made there
  agor_as alice worktree set-access "$id" --others-can none --json > /dev/null
  rpc_as bob sessions.list > r; expect_not_contains r "$id"
  as_agord "$BIN" audit list --json > audit.json
  bob_id=$(as_agord "$BIN" user get bob --json | python3 -c "import json,sys; print(json.load(sys.stdin)[\"id\"])")
  python3 - audit.json "$sid" "$bob_id" <<"PY" || fail "the prompt of bob is not audited as his"
import json, sys
rows = json.load(open(sys.argv[1]))
rows = rows if isinstance(rows, list) else rows.get("entries", rows.get("rows", []))
assert any(r.get("action") == "sessions.prompt" and r.get("actor") == sys.argv[3] and sys.argv[2] in (r.get("details") or "")
           for r in rows), rows
PY
'"'"'
'

test_case "attack: worktree events obey others_can: bob hears nothing of a none worktree (created, updated, removed) until it is view" '
  in_scratch_system "$SCENE"'"'"'
  listen() { # USER FILE — subscribes as USER, one event per line in FILE
    as "$1" python3 -u -c "
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b\"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":1,\\\"method\\\":\\\"events.subscribe\\\",\\\"params\\\":{}}\\n\")
for line in s.makefile():
    print(line, end=\"\")
" /run/agor/agor.sock > "$2" 2>&1 &
  }
  listen bob bob-events; bob_pid=$!
  listen alice alice-events; alice_pid=$!
  scene_cleanup() { kill $bob_pid $alice_pid 2> /dev/null || true; }
  for i in $(seq 1 200); do grep -q subscribed bob-events && grep -q subscribed alice-events && break; sleep 0.1; done
  grep -q subscribed bob-events && grep -q subscribed alice-events || { cat bob-events alice-events; fail "no subscription"; }
  agor_as alice worktree add "$repo" gone --json > gone.json 2> gone.err || { cat gone.err daemon.log; false; }
  gone=$(json_get gone.json worktree.id); gone_path=$(json_get gone.json worktree.path)
  agor_as alice worktree remove "$gone" > /dev/null 2> rm.err || { cat rm.err daemon.log; false; }
  agor_as alice worktree add "$repo" hidden --json > wt.json 2> wt.err || { cat wt.err daemon.log; false; }
  id=$(json_get wt.json worktree.id); path=$(json_get wt.json worktree.path)
  # positive control: the owner hears of both (created, updated once the group is made, removed)
  for i in $(seq 1 100); do grep -q "worktree.updated.*$id" alice-events && break; sleep 0.1; done
  grep -q "worktree.created.*$gone" alice-events && grep -q "worktree.removed.*$gone" alice-events || { cat alice-events; fail "the owner heard nothing of gone"; }
  grep -q "worktree.created.*$id" alice-events && grep -q "worktree.updated.*$id" alice-events || { cat alice-events; fail "the owner heard nothing of hidden"; }
  grep "worktree.created.*$id" alice-events | grep -q "\"others_can\": *\"none\"" || { cat alice-events; fail "worktree.created does not carry others_can"; }
  # view: now bob hears of it, and that event is the first to name it (so he heard nothing before)
  agor_as alice worktree set-access "$id" --others-can view --json > /dev/null
  for i in $(seq 1 100); do grep -q "$id" bob-events && break; sleep 0.1; done
  first=$(grep -m1 -e "$id" -e hidden -e "$path" bob-events || true)
  case "$first" in *worktree.updated*"\"others_can\":\"view\""*) ;; *) cat bob-events; fail "bob heard of the none worktree before view (or not after)";; esac
  ! grep -q -e "$gone" -e "$gone_path" -e "\"name\":\"gone\"" bob-events || { cat bob-events; fail "bob heard of a none worktree that came and went"; }
  # made with view from the start: bob hears of it at once, and the event (and the reply) say view
  agor_as alice worktree add "$repo" open --others-can view --json > open.json 2> open.err || { cat open.err daemon.log; false; }
  expect_json open.json worktree.others_can view
  open=$(json_get open.json worktree.id)
  for i in $(seq 1 100); do grep -q "worktree.created.*$open" bob-events && break; sleep 0.1; done
  grep "worktree.created.*$open" bob-events | grep -q "\"others_can\":\"view\"" || { cat bob-events; fail "bob did not hear of a view worktree as view"; }
'"'"'
'

test_done
