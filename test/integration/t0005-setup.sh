#!/usr/bin/env bash
# t0005-setup — `agor setup sudoers|isolation|validate` (docs/modes.md#set-up-commands) and the installed sudo rules, exercised with real sudo as the daemon user in a private mount namespace.
# It must never touch the host's sudoers or accounts: everything runs in test/sandbox.sh's scratch /etc, and the outer run checks the host afterwards.
. "$(dirname "$0")/../sandbox.sh"
sandbox_enter "$@"
. "$(dirname "$0")/../lib.sh"

# ---- no root needed ------------------------------------------------------------------------------------

committed_snippets() {
  local mode
  for mode in simple insulated strict sandbox; do
    expect_exit 0 "$AGOR" setup sudoers --mode "$mode"
    cmp out "$TEST_TOP/sudoers/$mode.sudoers" || fail "sudoers/$mode.sudoers differs from the generator"
    if command -v visudo > /dev/null; then
      visudo -c -q -f "$TEST_TOP/sudoers/$mode.sudoers" || fail "visudo refuses sudoers/$mode.sudoers"
    fi
  done
  [ "$(grep -cv '^#' "$TEST_TOP/sudoers/insulated.sudoers")" -eq 2 ] || fail "insulated grants more than two rules"
  grep -qx 'agor ALL = (agor_executor) NOPASSWD: /usr/local/bin/agor executor --stdin' "$TEST_TOP/sudoers/insulated.sudoers"
  grep -qx 'agor ALL = (%agor_users, !root) NOPASSWD: /usr/local/bin/agor executor --stdin' "$TEST_TOP/sudoers/strict.sudoers"
  grep -qx 'agor ALL = (root) NOPASSWD: /usr/local/bin/agor admin \*' "$TEST_TOP/sudoers/simple.sudoers"
  [ "$(grep -cv '^#' "$TEST_TOP/sudoers/simple.sudoers")" -eq 1 ] || fail "simple grants more than admin"
}
test_case "sudoers/*.sudoers equal 'agor setup sudoers --mode M' for the default names and pass visudo -cf" committed_snippets

custom_names() {
  expect_exit 0 "$AGOR" setup sudoers --mode insulated --daemon-user svc --executor-user svc_exec --bin /opt/agor/bin/agor
  expect_contains out "svc ALL = (svc_exec) NOPASSWD: /opt/agor/bin/agor executor --stdin"
  expect_contains out "svc ALL = (root) NOPASSWD: /opt/agor/bin/agor admin *"
  ! command -v visudo > /dev/null || visudo -c -q -f out
}
test_case "setup sudoers uses --daemon-user, --executor-user and --bin" custom_names

printed_bin_checked() {
  mkdir -p open && chmod 1777 open && cp "$AGOR" open/agor
  expect_exit 1 "$AGOR" setup sudoers --mode insulated --bin "$PWD/open/agor"
  expect_empty out
  expect_contains err "sudo runs it as root"
  expect_contains err "fix:"
  expect_exit 1 "$AGOR" setup sudoers --mode strict --bin "$PWD/open/later/agor"
  expect_empty out
  expect_contains err "is not installed and"
  expect_exit 0 "$AGOR" setup sudoers --mode simple --bin /opt/agor-not-yet/bin/agor
  expect_contains err "not installed yet"
  expect_contains out "/opt/agor-not-yet/bin/agor admin"
}
test_case "setup sudoers refuses a --bin others could replace or plant, and notes one not installed yet" printed_bin_checked

bad_inputs() {
  local bad
  expect_exit 2 "$AGOR" setup sudoers
  expect_exit 2 "$AGOR" setup sudoers --mode lax
  for bad in root -oX 'a b' 'agor ALL=(ALL) ALL' $'agor\nroot ALL=(ALL) ALL' 'Agor'; do
    expect_exit 2 "$AGOR" setup sudoers --mode insulated --daemon-user "$bad"
    expect_empty out
  done
  for bad in root agor 'x;y' '%sudo' 'ALL'; do
    expect_exit 2 "$AGOR" setup sudoers --mode insulated --executor-user "$bad"
    expect_empty out
  done
  for bad in agor relative/agor '/usr/bin/agor, /bin/sh' '/usr/bin/agor ALL' '/a/../bin/sh' '/bin/*' '/a\,b' '/a:b' '/a=b'; do
    expect_exit 2 "$AGOR" setup sudoers --mode strict --bin "$bad"
    expect_empty out
  done
  expect_exit 2 "$AGOR" setup frobnicate
  expect_exit 2 "$AGOR" setup sudoers --mode strict --dry-run
}
test_case "setup sudoers refuses names and paths that could widen the rules (exit 2, nothing printed)" bad_inputs

sandbox_needs "setup isolation, validate and the installed sudo rules"
sandbox_setup
sandbox_forget_accounts agor agor_executor agor_users alice bob carol

BIN=/usr/local/bin/agor
# Runs a command as the daemon user with a clean environment, as a service manager would.
as_daemon() { setpriv --reuid=agor --regid=agor --init-groups -- env -i PATH=/usr/bin:/bin HOME=/home/agor "$@"; }

fixture() {
  install -m 0755 "$AGOR" "$BIN"
  useradd --system --create-home --home-dir /home/agor --shell /bin/bash agor
  install -d -o agor -g agor -m 0755 /srv/agor /srv/agor/worktrees /srv/agor/repos
  install -d -o agor -g agor -m 0700 /home/agor/.agor
  printf '# the daemon config\npaths:\n  data_home: /srv/agor\ndaemon:\n  port: 4000\n' > /home/agor/.agor/config.yaml
  chown agor:agor /home/agor/.agor/config.yaml && chmod 600 /home/agor/.agor/config.yaml
  useradd --create-home --user-group --shell /bin/bash carol
}
test_case "fixture: $BIN (root-owned copy), daemon user agor with data_home /srv/agor, carol" fixture

dry_run() {
  local before; before=$(getent group; getent passwd; ls -A /etc/sudoers.d /run; cat /home/agor/.agor/config.yaml)
  expect_exit 0 "$AGOR" setup isolation --dry-run
  expect_contains out "groupadd --system agor_users"
  expect_contains out "gpasswd -a agor agor_users"
  expect_contains out "useradd --system --create-home --home-dir /home/agor_executor --shell /usr/sbin/nologin --user-group agor_executor"
  expect_contains out "install /etc/sudoers.d/agor (mode 0440, checked with visudo -cf first)"
  expect_contains out "install -d -m 0750 -o agor -g agor_users /run/agor"
  expect_contains out "install /etc/agor/admin.yaml (worktrees_dir: /srv/agor/worktrees, repos_dir: /srv/agor/repos"
  expect_contains out "set execution.unix_user_mode: insulated and daemon.socket_path: /run/agor/agor.sock"
  [ "$before" = "$(getent group; getent passwd; ls -A /etc/sudoers.d /run; cat /home/agor/.agor/config.yaml)" ] ||
    fail "the dry run changed something"
  [ ! -e /etc/agor/admin.yaml ] || fail "admin.yaml written"
}
test_case "setup isolation --dry-run prints every step and changes nothing" dry_run

isolation() {
  expect_exit 0 "$AGOR" setup isolation
  getent group agor_users
  [ "$(getent passwd agor_executor | cut -d: -f7)" = /usr/sbin/nologin ] || fail "executor has a login shell"
  id -nG agor_executor | grep -qw agor_users || fail "executor not in agor_users"
  id -nG agor | grep -qw agor_users || fail "the daemon user is not in agor_users: its socket cannot be given to the group"
  for d in /srv/agor /srv/agor/repos /srv/agor/worktrees; do   # executors write there through the group
    [ "$(stat -c '%a %U %G' $d)" = "2770 agor agor_users" ] || fail "$d: $(stat -c '%a %U %G' $d)"
  done
  [ "$(stat -c '%a %U %G' /etc/sudoers.d/agor)" = "440 root root" ] || fail "sudoers mode/owner"
  "$AGOR" setup sudoers --mode insulated | cmp - /etc/sudoers.d/agor
  [ "$(stat -c '%a %U %G' /run/agor)" = "750 agor agor_users" ] || fail "/run/agor"
  grep -qx 'd /run/agor 0750 agor agor_users -' /etc/tmpfiles.d/agor.conf
  [ "$(stat -c '%a %U' /etc/agor/admin.yaml)" = "644 root" ] || fail "admin.yaml mode"
  grep -qx 'worktrees_dir: /srv/agor/worktrees' /etc/agor/admin.yaml
  grep -qx 'repos_dir: /srv/agor/repos' /etc/agor/admin.yaml
  expect_contains /home/agor/.agor/config.yaml "unix_user_mode: insulated"
  expect_contains /home/agor/.agor/config.yaml "socket_path: /run/agor/agor.sock"
  expect_contains /home/agor/.agor/config.yaml "port: 4000"
  head -1 /home/agor/.agor/config.yaml | grep -qx "# the daemon config" || fail "the operator's comment was lost"
  [ "$(stat -c '%a %U' /home/agor/.agor/config.yaml)" = "600 agor" ] || fail "config.yaml mode/owner"
  ! ls -A /etc/sudoers.d /etc/agor /home/agor/.agor | grep -q '^\.\|tmp' || fail "temporary files left"
  expect_exit 0 "$AGOR" setup isolation
  expect_contains out "nothing to change"
}
test_case "setup isolation installs group, executor user, sudoers (0440), /run/agor, admin.yaml, config; twice is a no-op" isolation

validate_ok() {
  expect_exit 0 "$AGOR" setup validate
  expect_not_contains out "FAIL"
  expect_contains out "ok sudo -l for agor lists exactly the executor and admin rules"
  expect_contains out "ok /run/agor is a directory owned by agor, group agor_users, mode 0750"
  [ "$(grep -c '^ok ' out)" -ge 15 ] || fail "too few checks"
  expect_exit 0 as_daemon "$BIN" setup validate
  expect_not_contains out "FAIL"
  expect_contains out "ok daemon user agor is in agor_users"
  # what the checks promise: the daemon starts as its user on the host setup made and gives its socket to the group
  setpriv --reuid=agor --regid=agor --init-groups -- env -i PATH=/usr/bin:/bin HOME=/home/agor \
    "$BIN" daemon --foreground --port 0 2> daemon.log &   # $! is the daemon itself
  local pid=$!
  for i in $(seq 1 200); do grep -q serving daemon.log && break; sleep 0.05; done
  grep -q serving daemon.log || { kill $pid 2> /dev/null; cat daemon.log; fail "the daemon did not start on the host setup made"; }
  [ "$(stat -c '%G %a' /run/agor/agor.sock)" = "agor_users 660" ] || { kill $pid; fail "socket: $(stat -c '%G %a' /run/agor/agor.sock)"; }
  kill -TERM $pid && wait $pid || fail "the daemon did not stop cleanly"
}
test_case "setup validate: one ok line per check, as root and as the daemon user" validate_ok

sudo_list() {
  expect_exit 0 as_daemon sudo -n -l
  sed -n '/may run the following commands/,$p' out | tail -n +2 | sed 's/^ *//' > rules
  printf '%s\n' "(agor_executor) NOPASSWD: $BIN executor --stdin" "(root) NOPASSWD: $BIN admin *" | cmp - rules ||
    { cat out; fail "sudo -l lists other rules"; }
}
test_case "the daemon user's 'sudo -n -l' lists exactly the executor and admin rules" sudo_list

sudo_nothing_else() {
  expect_exit 1 as_daemon sudo -n /bin/sh -c id
  expect_exit 1 as_daemon sudo -n -u agor_executor /bin/sh -c id
  expect_exit 1 as_daemon sudo -n /usr/bin/id
  expect_exit 1 as_daemon sudo -n -u agor_executor "$BIN" executor --stdin --dry-run
  expect_exit 1 as_daemon sudo -n -u root "$BIN" executor --stdin
  expect_exit 1 as_daemon sudo -n -u carol "$BIN" executor --stdin
  expect_exit 1 as_daemon sudo -n "$BIN" daemon
  expect_exit 1 as_daemon sudo -n "$BIN" setup isolation
  cp "$BIN" /srv/agor/agor && chown agor /srv/agor/agor
  expect_exit 1 as_daemon sudo -n /srv/agor/agor admin setup-unix-user alice
  expect_exit 1 as_daemon sudo -n -s
  expect_exit 1 as_daemon sudo -n -i
  expect_exit 1 as_daemon sudo -n -e /etc/shadow
  ! id alice 2> /dev/null || fail "alice exists"
}
test_case "sudo -n /bin/sh, other users, other arguments, other binaries, -s/-i/-e: all refused" sudo_nothing_else

sudo_allowed() {
  expect_exit 2 as_daemon sudo -n -u agor_executor "$BIN" executor --stdin < /dev/null
  expect_contains out '"success":false' # the executor itself answered (invalid empty payload)
  expect_exit 0 as_daemon sudo -n "$BIN" admin setup-unix-user alice
  id -nG alice | grep -qw agor_users || fail "alice not set up"
  expect_exit 1 as_daemon sudo -n "$BIN" admin --root-config /srv/agor/admin.yaml setup-unix-user bob
  expect_contains err "refused through sudo"
  ! id bob 2> /dev/null || fail "bob exists"
  mkdir -p /srv/agor/worktrees/o/r/w && chown -R agor:agor /srv/agor/worktrees/o
  expect_exit 0 as_daemon sudo -n "$BIN" admin create-worktree-group --json abc /srv/agor/worktrees/o/r/w --others none
  expect_exit 0 as_daemon sudo -n "$BIN" admin add-worktree-owner abc alice /srv/agor/worktrees/o/r/w
  [ -L /home/alice/agor/worktrees/w-abc ] || fail "no link"
  expect_exit 1 as_daemon sudo -n "$BIN" admin create-worktree-group abd /etc --others write
}
test_case "sudo -n <bin> executor --stdin as agor_executor and <bin> admin … as root work; admin stays confined" sudo_allowed

strict_mode() {
  expect_exit 0 "$AGOR" setup isolation --mode strict
  "$AGOR" setup sudoers --mode strict | cmp - /etc/sudoers.d/agor
  expect_contains /home/agor/.agor/config.yaml "unix_user_mode: strict"
  expect_exit 0 as_daemon sudo -n -l
  expect_contains out "(%agor_users, !root) NOPASSWD: $BIN executor --stdin"
  expect_exit 2 as_daemon sudo -n -u alice "$BIN" executor --stdin < /dev/null
  expect_exit 1 as_daemon sudo -n -u carol "$BIN" executor --stdin < /dev/null
  expect_exit 1 as_daemon sudo -n -u root "$BIN" executor --stdin < /dev/null
  expect_exit 1 as_daemon sudo -n -u '#0' "$BIN" executor --stdin < /dev/null
  expect_exit 1 as_daemon sudo -n -u alice /bin/sh -c id
  expect_exit 0 "$AGOR" setup validate
  expect_not_contains out FAIL
}
test_case "strict: the daemon user runs the executor as members of agor_users (alice), never carol or root" strict_mode

validate_fails() {
  chmod 0777 /run/agor
  expect_exit 1 "$AGOR" setup validate
  expect_contains out "FAIL /run/agor is a directory owned by agor, group agor_users, mode 0750 — fix: sudo agor setup isolation"
  echo 'agor ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/zz-extra && chmod 440 /etc/sudoers.d/zz-extra
  expect_exit 1 "$AGOR" setup validate
  expect_contains out "FAIL sudo -l for agor lists exactly the executor and admin rules"
  rm /etc/sudoers.d/zz-extra
  expect_exit 0 "$AGOR" setup isolation --mode strict
  expect_contains out "install -d -m 0750 -o agor -g agor_users /run/agor"
  expect_exit 0 "$AGOR" setup validate
}
test_case "setup validate prints FAIL with a fix and exits 1 (bad /run/agor mode, extra sudo rights); isolation repairs" validate_fails

replaced_atomically() {
  echo 'garbage that is not sudoers' > /etc/sudoers.d/agor && chmod 644 /etc/sudoers.d/agor
  expect_exit 0 "$AGOR" setup isolation --mode strict
  "$AGOR" setup sudoers --mode strict | cmp - /etc/sudoers.d/agor
  [ "$(stat -c %a /etc/sudoers.d/agor)" = 440 ]
  ! ls -A /etc/sudoers.d | grep -q '^\.' || fail "temporary files left in /etc/sudoers.d"
  visudo -c -q
}
test_case "a stale or broken /etc/sudoers.d/agor is replaced atomically by a checked one" replaced_atomically

untrusted_bin() {
  mkdir -p /srv/bin && cp "$BIN" /srv/bin/agor && chmod 0777 /srv/bin/agor
  expect_exit 1 "$AGOR" setup isolation --bin /srv/bin/agor --dry-run
  expect_contains err "writable by group or others"
  chmod 0755 /srv/bin/agor && chown agor /srv/bin/agor
  expect_exit 1 "$AGOR" setup isolation --bin /srv/bin/agor --dry-run
  expect_contains err "is owned by uid"
  cp "$BIN" /srv/agor/agor-copy && chmod 0755 /srv/agor/agor-copy
  expect_exit 1 "$AGOR" setup isolation --bin /srv/agor/agor-copy --dry-run
  expect_contains err "/srv/agor is owned by uid"
  expect_exit 1 "$AGOR" setup isolation --daemon-user root --dry-run
  expect_exit 1 "$AGOR" setup isolation --daemon-user nosuch --dry-run
  expect_exit 2 "$AGOR" setup isolation --mode simple
  expect_exit 1 "$AGOR" setup isolation --executor-user carol --dry-run
  expect_contains err "not a system account"
  expect_exit 1 as_daemon "$BIN" setup isolation
  expect_contains err "must run as root"
}
test_case "setup isolation refuses a --bin others could replace, a root or missing daemon user, a non-system executor" untrusted_bin

fresh_config() {
  useradd --system --create-home --home-dir /home/svc --shell /bin/bash svc
  expect_exit 0 "$AGOR" setup isolation --mode insulated --daemon-user svc
  [ "$(stat -c '%a %U' /home/svc/.agor)" = "700 svc" ] || fail "AGOR_HOME mode/owner"
  [ "$(stat -c '%a %U' /home/svc/.agor/config.yaml)" = "600 svc" ] || fail "config.yaml mode/owner"
  expect_contains /home/svc/.agor/config.yaml "unix_user_mode: insulated"
  expect_contains /home/svc/.agor/config.yaml "socket_path: /run/agor/agor.sock"
  # the default data home was AGOR_HOME (0700): moved where executors reach it through agor_users
  expect_contains /home/svc/.agor/config.yaml "data_home: /srv/agor"
  for d in /srv/agor /srv/agor/repos /srv/agor/worktrees; do
    [ "$(stat -c '%a %U %G' $d)" = "2770 svc agor_users" ] || fail "$d: $(stat -c '%a %U %G' $d)"
  done
  grep -qx 'svc ALL = (agor_executor) NOPASSWD: /usr/local/bin/agor executor --stdin' /etc/sudoers.d/agor
  [ "$(stat -c '%U' /run/agor)" = svc ] || fail "/run/agor not the daemon user's"
  expect_exit 0 "$AGOR" setup isolation --mode insulated --daemon-user svc
  expect_contains out "nothing to change"
}
test_case "setup isolation for a daemon user without a config.yaml creates ~/.agor (0700) and config.yaml (0600) as that user" fresh_config

data_root_symlink() {
  # attack: the daemon user (who owns /srv/agor) swaps worktrees/ for a link to a root-owned directory, hoping
  # setup isolation (root) hands it to agor_users with mode 2770
  mkdir -p /etc/agor-target && chmod 755 /etc/agor-target
  rm -rf /srv/agor/worktrees && ln -s /etc/agor-target /srv/agor/worktrees
  expect_exit 1 "$AGOR" setup isolation
  expect_contains err "/srv/agor/worktrees"
  [ "$(stat -c '%a %U %G' /etc/agor-target)" = "755 root root" ] || fail "setup changed the link target: $(stat -c '%a %U %G' /etc/agor-target)"
  rm /srv/agor/worktrees && rmdir /etc/agor-target
}
test_case "attack: a data root swapped for a symlink is refused; the target is never chowned or chmodded" data_root_symlink

test_done
