#!/usr/bin/env bash
# test/sandbox.sh — runs an integration script as root inside a private mount namespace with a scratch copy of /etc and tmpfs over /home, /run, /srv, /usr/local/bin, /var/log, /var/mail, so it may create users, groups and sudoers; scratch_system, which makes them, is also what lib.sh's in_scratch_system uses.
# It must never let a change reach the host: the outer run compares the host's account files, sudoers and /home before and after, and counts a failure when anything differs.
#
# Use at the very top of a tNNNN script:
#   . "$(dirname "$0")/../sandbox.sh"
#   sandbox_enter "$@"          # outer: runs this script again inside the namespace, checks the host, exits
#   . "$(dirname "$0")/../lib.sh"
#   sandbox_needs "…"           # outside (the sandbox was not possible): a counted skip with the reason; ends the file
#   sandbox_setup               # inside: the mounts (uses $TEST_TMP_ROOT from lib.sh)
. "$(dirname "${BASH_SOURCE[0]}")/needs.sh"
SANDBOX_NEEDS=root,unshare,setpriv,acl

sandbox_active() { [ -n "${AGOR_SANDBOX:-}" ]; }

sandbox_possible() { ! unmet_needs "$SANDBOX_NEEDS" > /dev/null; }

# sandbox_needs NAME [NEEDS] — after lib.sh: outside the sandbox, NAME is a counted skip with the reason the sandbox
# could not start and the file ends; inside, the same for anything else in NEEDS this machine lacks.
sandbox_needs() {
  if sandbox_active; then file_needs "${2:-root}" "$1"; return; fi
  test_skip "$1" "$(unmet_needs "$SANDBOX_NEEDS")"
  test_done
  exit
}

# What must not change on the host.
sandbox_host_state() {
  sha256sum /etc/passwd /etc/group /etc/shadow /etc/gshadow /etc/sudoers /etc/subuid /etc/subgid 2>&1
  stat -c '%n %a %u %g' /etc /etc/shadow /etc/sudoers.d /home /run 2>&1
  getfacl -cp /etc/shadow /etc 2>&1
  ls -A /etc/sudoers.d /home 2>&1
  ls -ld /etc/agor /run/agor /etc/tmpfiles.d/agor.conf 2>&1
}

# Adds one passed (0) or failed (1) case to the counts file test/run reads.
sandbox_count() {
  local p=0 f=0 s=0
  [ -n "${TEST_RESULTS:-}" ] && [ -f "$TEST_RESULTS" ] && read -r p f s < "$TEST_RESULTS"
  if [ "$1" = 0 ]; then p=$((p + 1)); else f=$((f + 1)); fi
  [ -n "${TEST_RESULTS:-}" ] && echo "$p $f ${s:-0}" > "$TEST_RESULTS"
}

sandbox_enter() {
  sandbox_active && return 0
  sandbox_possible || return 0 # the script skips its cases
  local before after rc=0
  before=$(sandbox_host_state)
  AGOR_SANDBOX=1 unshare --mount --propagation private bash "$0" "$@" || rc=$?
  after=$(sandbox_host_state)
  if [ -n "${TEST_RESULTS:-}" ] && [ ! -f "$TEST_RESULTS" ]; then
    echo "FAIL - the script died inside the sandbox (exit $rc)"
    echo "0 1 0" > "$TEST_RESULTS"
  fi
  if [ "$before" = "$after" ]; then
    echo "ok - the host's accounts, sudoers, /home and /run are unchanged"
    sandbox_count 0
  else
    echo "FAIL - the host changed:"
    diff <(echo "$before") <(echo "$after") | sed 's/^/    | /'
    sandbox_count 1
    rc=1
  fi
  exit "$rc"
}

# scratch_system DIR TMPFS_DIR… — the one way a test gets a scratch /etc: as root in a private mount namespace, /etc
# becomes a copy in DIR/etc (on the test's own filesystem, so hard links to it are possible) and each TMPFS_DIR that
# exists an empty tmpfs. Every step is checked, and it exits 99 unless /etc is proven to be the copy: users, groups
# and sudoers made afterwards never reach the host.
scratch_system() {
  local dir=$1 marker="agor-scratch-$$-$RANDOM" d
  shift
  mkdir -p "$dir" && rm -rf "$dir/etc" || { echo "scratch: cannot make $dir" >&2; exit 99; }
  cp -a /etc "$dir/etc" || { echo "scratch: cannot copy /etc" >&2; exit 99; }
  touch "$dir/etc/$marker"
  mount --bind "$dir/etc" /etc || { echo "scratch: cannot bind the scratch /etc" >&2; exit 99; }
  [ -e "/etc/$marker" ] || { echo "scratch: /etc is not the scratch copy: refusing to run" >&2; exit 99; }
  for d in "$@"; do
    if [ -d "$d" ]; then mount -t tmpfs -o mode=755 tmpfs "$d" || { echo "scratch: cannot mount $d" >&2; exit 99; }; fi
  done
}

# The mounts for a whole script: a scratch /etc, and /home, /run, /srv, /usr/local/bin and the logs empty.
sandbox_setup() {
  SANDBOX="$TEST_TMP_ROOT/sandbox"
  mount --make-rprivate / || { echo "sandbox: cannot make / private" >&2; exit 99; }
  scratch_system "$SANDBOX" /home /run /srv /usr/local/bin /var/log /var/mail
  mkdir -p /run/lock /run/sudo
  chmod 1777 /run/lock
}

# sandbox_forget_accounts NAME… — removes these users and groups, every agor_wt_/agor_rp_ group and agor's
# files from the scratch /etc, so a script starts from the same state whatever the host holds.
sandbox_forget_accounts() {
  local n
  for n in "$@"; do
    if getent passwd "$n" > /dev/null; then userdel -f "$n" > /dev/null 2>&1 || true; fi
    if getent group "$n" > /dev/null; then groupdel -f "$n" > /dev/null 2>&1 || true; fi
  done
  for n in $(getent group | cut -d: -f1 | grep -E '^agor_(wt|rp)_[0-9a-f]{16}$'); do groupdel -f "$n"; done
  rm -rf /etc/agor /etc/sudoers.d/agor /etc/tmpfiles.d/agor.conf
}

# as_user USER CMD… — runs CMD as USER with USER's groups from the scratch /etc.
as_user() {
  local u=$1; shift
  setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups -- "$@"
}
