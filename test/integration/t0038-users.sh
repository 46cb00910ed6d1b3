#!/usr/bin/env bash
# t0038-users — users.update / users.remove through `agor user update|link|remove` with real Unix users (a scratch
# /etc): links and roles take effect on connections already open, bad input names its field, the daemon's own user
# cannot be demoted or removed, and a user who still created or owns something is removed only with --reassign-to
# (everything moves in one step; the Unix user is never touched; the user's tokens die with it).
. "$(dirname "$0")/../lib.sh"

file_needs root,unshare,setpriv "agor users linked, changed and removed with real Unix users"

# The scene (root, in the scratch /etc): the daemon runs as root in simple mode on /run/agor/agor.sock (opened to
# everyone here so that alice and bob, Unix users, can connect); agor users al (not linked yet) and bob (linked).
SCENE='
  useradd -m -s /bin/bash alice && useradd -m -s /bin/bash bob
  mkdir -p /run/agor && chmod 755 /run/agor
  export HOME="$T/root" AGOR_HOME="$T/root/.agor"
  mkdir -p "$AGOR_HOME" && chmod 755 "$T" && d="$T"; while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  printf "daemon:\n  socket_path: /run/agor/agor.sock\n" > "$AGOR_HOME/config.yaml"
  start_daemon
  chmod 666 /run/agor/agor.sock
  as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --init-groups env -i HOME="/home/$u" PATH=/usr/bin:/bin "$@"; }
  agor_as() { local u=$1; shift; as "$u" "$AGOR" "$@" --url unix:/run/agor/agor.sock; }
  "$AGOR" user create al --json > al.json && al=$(json_get al.json id)
  "$AGOR" user create bob --unix-user bob --json > bob.json && bob=$(json_get bob.json id)
  mkdir -m 777 held
  held_step() { touch "held/go.$1"; for i in $(seq 1 300); do [ -s "held/reply.$1" ] && return 0; sleep 0.02; done; fail "no reply $1"; }
'

test_case "link, role and removal take effect on a connection already open; the CLI prints the user" '
  cp "$TEST_TOP/test/helpers/held-rpc.py" "$T/held-rpc.py" && chmod 755 "$T/held-rpc.py"
  in_scratch_system "$SCENE"'"'"'
  as alice python3 "$T/held-rpc.py" /run/agor/agor.sock "$T/held" \
    users.list "{}" users.list "{}" users.create "{\"name\":\"x1\"}" users.create "{\"name\":\"x2\"}" users.list "{}" &
  held_pid=$!
  for i in $(seq 1 300); do [ -s held/reply.0 ] && break; sleep 0.02; done
  expect_json held/reply.0 error.data.code AUTH_FAILED
  expect_exit 0 "$AGOR" user link al alice
  expect_contains out "unix  alice"
  held_step 1
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert any(u[\"name\"]==\"al\" for u in r[\"result\"]), r" held/reply.1
  expect_exit 0 "$AGOR" user update al --role admin --email al@example.org
  expect_contains out "role  admin"
  expect_contains out "email al@example.org"
  held_step 2
  expect_json held/reply.2 result.name x1
  expect_exit 0 "$AGOR" user update al --role member
  held_step 3
  expect_json held/reply.3 error.data.code PERMISSION_DENIED
  expect_exit 0 "$AGOR" user remove al
  expect_contains out "removed"
  held_step 4
  expect_json held/reply.4 error.data.code AUTH_FAILED
  wait $held_pid || fail "the held connection failed"
  id alice > /dev/null || fail "the Unix user alice went with the agor user"
  "$AGOR" audit list --json > audit.json
  for a in users.update users.remove; do grep -q "\"$a\"" audit.json || fail "$a is not audited"; done
  python3 - audit.json <<"PY" || fail "the audit row does not say what changed from what"
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["action"] == "users.update"]
details = [r["details"] if isinstance(r["details"], dict) else json.loads(r["details"]) for r in rows]
assert any(d.get("role") == {"from": "member", "to": "admin"} for d in details), details
assert any(d.get("unix_username") == {"from": None, "to": "alice"} for d in details), details
PY
  "$AGOR" audit verify > /dev/null
'"'"'
'

test_case "bad input names its field; the daemon user stays an admin and stays; a taken Unix user is refused; members cannot change users" '
  in_scratch_system "$SCENE"'"'"'
  expect_exit 1 "$AGOR" user update al --unix-user "Bad User"
  expect_contains err "params.unix_username"
  expect_exit 1 "$AGOR" user update al --role root
  expect_contains err "params.role"
  expect_exit 1 "$AGOR" user update al --email "not an address"
  expect_contains err "params.email"
  expect_exit 1 "$AGOR" user update al
  expect_contains err "nothing to change"
  expect_exit 1 "$AGOR" user update al --unix-user bob
  expect_contains err "already linked to Unix user bob"
  "$AGOR" user get al --json > al.now
  expect_json al.now unix_username null
  owner=$("$AGOR" user list --json | python3 -c "import json,sys; print([u[\"name\"] for u in json.load(sys.stdin) if u[\"role\"]==\"admin\"][0])")
  expect_exit 1 "$AGOR" user update "$owner" --role member
  expect_contains err "daemon"
  expect_exit 1 "$AGOR" user remove "$owner"
  expect_contains err "daemon"
  expect_exit 1 agor_as bob user update al --role admin
  expect_contains err "only an admin"
  expect_exit 1 agor_as bob user remove al
  expect_exit 1 "$AGOR" user remove nobody-such
  expect_contains err "no user"
  expect_exit 1 "$AGOR" user remove al --reassign-to al
  expect_contains err "params.reassign_to"
'"'"'
'

test_case "a user who created a worktree and a session is removed only with --reassign-to: all moves in one step, tokens die" '
  in_scratch_system "$SCENE"'"'"'
  make_source_repo src && chmod -R a+rX src
  expect_exit 0 "$AGOR" user link al alice
  agor_as alice repo clone "$T/src" --json > clone.json 2> clone.err || { cat clone.err daemon.log; false; }
  agor_as alice worktree add "$(json_get clone.json repo.id)" feat --json > wt.json 2> wt.err || { cat wt.err daemon.log; false; }
  wt=$(json_get wt.json worktree.id)
  agor_as alice session create feat --tool codex --json > s.json 2> s.err || { cat s.err; false; }
  session=$(json_get s.json id)
  token=$(agor_as alice user token 2> /dev/null)
  [ -n "$token" ] || fail "no token for al"
  expect_exit 1 "$AGOR" user remove al
  expect_contains err "--reassign-to"
  "$AGOR" user get al > /dev/null || fail "al went although the removal was refused"
  expect_exit 0 "$AGOR" user remove al --reassign-to bob --json
  expect_json out reassigned_to "$bob"
  expect_json out references.worktrees 1
  expect_json out references.sessions 1
  expect_exit 1 "$AGOR" user get al
  "$AGOR" worktree get "$wt" --json > wt.now
  expect_json wt.now created_by "$bob"
  "$AGOR" worktree owners "$wt" --json > owners.json
  python3 -c "import json,sys; o=json.load(open(sys.argv[1])); assert [u[\"name\"] for u in o]==[\"bob\"], o" owners.json
  agor_as bob session get "$session" --json > s.now 2> s.err || { cat s.err; fail "bob cannot see the session he took over"; }
  expect_json s.now created_by "$bob"
  port=$(sed -n "s/.*:\([0-9][0-9]*\) (pid.*/\1/p" daemon.log | head -1)
  expect_exit 1 env AGOR_TOKEN="$token" "$AGOR" user list --url "ws://127.0.0.1:$port/ws"
  id alice > /dev/null || fail "the Unix user alice went with the agor user"
  "$AGOR" audit verify > /dev/null
'"'"'
'

test_done
