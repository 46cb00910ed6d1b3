# test/needs.sh — the one table of what a test may need from this machine (root, tmux, namespaces, programs), and
# unmet_needs to check a list of them; sourced by test/lib.sh and test/sandbox.sh.

# Prerequisites a case or a file declares, one row each: NAME, the check, and the skip reason when it fails (what the
# check printed, when it printed something). A name without a row is a program on PATH ("NAME is not installed").
PREREQUISITES=(
  'root|[ "$(id -u)" = 0 ]|needs root'
  "mountns|unshare --mount true|needs root for a private mount namespace (unshare --mount)"
  "netns|unshare --net true|needs network namespaces (unshare --net)"
  "node|command -v node && command -v npm|node and npm are not installed (Debian: nodejs npm)"
  'node-ws|npm_package "$TEST_TOP/build/test-tmp/node-ws" ws@8|the npm package ws@8 is not installed'
  "faults|grep -qa 'ROLE:WHAT:N:ACTION' \"\$AGOR\"|the binary under test has no fault seam (lib/fault.h: the ASan build only; the product never reads AGOR_FAULT)"
  "python3-sqlite3|python3 -c 'import sqlite3'|needs python3 with sqlite3 to read the database"
  "tmux|command -v tmux|tmux is not installed (Debian: tmux)"
  "zellij|command -v zellij|zellij is not on PATH (not packaged for Debian 12; t0070 also tests it with a fake)"
  "strace|/usr/bin/strace -f -qq -e trace=execve -o /dev/null /bin/true|strace is missing or ptrace is not allowed here"
  "acl|command -v getfacl|getfacl is not installed (Debian: acl)"
  "clang|command -v clang|clang (with libFuzzer) is not installed: apt-get install clang"
  "qemu|command -v qemu-system-x86_64|qemu is not installed (Debian: qemu-system-x86)"
  "mkfs.ext4|command -v mkfs.ext4|no mkfs.ext4 (Debian: e2fsprogs)"
  "debugfs|command -v debugfs|no debugfs (Debian: e2fsprogs)"
  "debootstrap|command -v debootstrap|debootstrap is not installed (Debian: debootstrap)"
)

# unmet_needs LIST — prints why this machine lacks something in LIST (comma-separated prerequisite names) and
# succeeds; fails, printing nothing, when every one is met.
unmet_needs() {
  local name row check reason out names missing=()
  IFS=, read -ra names <<< "$1"
  for name in "${names[@]}"; do
    check="command -v '$name'" reason="$name is not installed"
    for row in "${PREREQUISITES[@]}"; do
      [ "${row%%|*}" = "$name" ] || continue
      row=${row#*|}; check=${row%%|*} reason=${row#*|}
    done
    out=$(eval "$check" 2> /dev/null) || missing+=("${out:-$reason}")
  done
  [ ${#missing[@]} -gt 0 ] || return 1
  out=$(printf '%s; ' "${missing[@]}")
  echo "${out%; }"
}
