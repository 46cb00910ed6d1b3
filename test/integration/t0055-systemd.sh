#!/usr/bin/env bash
# t0055-systemd — the units of dist/systemd under a real systemd: a Debian 12 root made by debootstrap (cached in
# build/test-tmp, see test/vm.sh) boots Debian's cloud kernel under qemu with systemd as PID 1 on cgroup v2;
# test/helpers/systemd-guest.sh then follows docs/modes.md#systemd as an operator would and the host reads its
# results back from the guest's disk: the daemon starts with no privilege, admin and executors work through
# agor-admin.socket, executors run inside their user's delegated cgroup with limits on cgroup v2, the node unit pairs
# and runs, and systemd-analyze security rates the daemon unit "OK" (≤ 4.5).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../vm.sh"

VM="$TEST_TMP_ROOT/vm"
GUEST_PACKAGES=systemd,systemd-sysv,sudo,acl,dbus

# Why this machine cannot boot the guest, or nothing.
why_no_guest() {
  if unmet_needs root,qemu,mkfs.ext4,debootstrap,debugfs,git; then return
  elif ! is_musl; then echo "the guest runs the static ./agor: run with the musl flavor"
  elif [ "$(uname -m)" != x86_64 ]; then echo "the guest kernel is x86_64"
  elif ! vm_kernel > /dev/null; then echo "Debian's linux-image-cloud-amd64 could not be fetched"
  elif ! vm_debian_root "$GUEST_PACKAGES" > /dev/null; then echo "debootstrap of Debian 12 failed (no mirror?)"
  fi
}

# The unit that runs the test program once systemd reached multi-user.
guest_unit() {
  printf '%s\n' "[Unit]" "Description=t0055: an operator's steps" "After=multi-user.target" \
    "[Service]" "Type=oneshot" "ExecStart=/root/systemd-guest.sh" "StandardOutput=journal+console"
}

# The guest's disk: the cached root, ./agor and the units installed as the docs say, a source repository, and
# agor-guest.service enabled. Every path here is under $g, which must be set.
build_guest() {
  local g="$VM/root"
  [ -n "$VM" ] && [ -d "$VM" ] || fail "no VM directory"
  mkdir "$g"   # the cache's contents, never the cache itself (it may be a symlink to a shared one)
  cp -a "$(vm_debian_root "$GUEST_PACKAGES")/." "$g/"
  install -m 0755 "$AGOR" "$g/usr/local/bin/agor"
  install -m 0644 "$TEST_TOP/dist/systemd/agor-daemon.service" "$TEST_TOP/dist/systemd/agor-node.service" \
    "$TEST_TOP/dist/systemd/agor-admin.socket" "$TEST_TOP/dist/systemd/agor-admin.service" "$g/etc/systemd/system/"
  install -m 0755 "$TEST_TOP/test/helpers/systemd-guest.sh" "$g/root/systemd-guest.sh"
  guest_unit > "$g/etc/systemd/system/agor-guest.service"
  mkdir -p "$g/etc/systemd/system/default.target.wants"
  ln -s ../agor-guest.service "$g/etc/systemd/system/default.target.wants/agor-guest.service"
  echo agor-guest > "$g/etc/hostname"
  git init -q -b main "$g/srv/src"
  echo hi > "$g/srv/src/hello.txt"
  git -C "$g/srv/src" add -A
  git -C "$g/srv/src" -c user.name=o -c user.email=o@o commit -q -m start
  chmod -R a+rX "$g/srv/src"
  mkfs.ext4 -q -F -d "$g" "$VM/disk.img" 2G > /dev/null
  rm -rf "$g"
}

# Boots the guest once (root on NVMe, built into the cloud kernel: no initramfs); console → $VM/serial, the
# guest's /results → $VM/results.
boot_guest() {
  mkdir -p "$VM"
  build_guest
  timeout 900 qemu-system-x86_64 $(vm_accel) -m 1024 -smp 2 -nographic -no-reboot -kernel "$(vm_kernel)" \
    -drive "file=$VM/disk.img,if=none,id=root,format=raw" -device nvme,drive=root,serial=agorroot \
    -append "console=ttyS0 root=/dev/nvme0n1 rw panic=-1 systemd.unified_cgroup_hierarchy=1" \
    < /dev/null > "$VM/console" 2>&1 || true
  tr -d '\r' < "$VM/console" > "$VM/serial"
  debugfs -R "rdump /results $VM" "$VM/disk.img" > /dev/null 2>&1
  rm -f "$VM/disk.img"
}

reason=$(why_no_guest)
if [ -n "$reason" ]; then
  test_skip "the systemd units in a Debian guest" "$reason"
  test_done
  exit
fi
boot_guest
R="$VM/results"
export VM R

# ran NAME — the guest's step NAME exited 0 (else its output is shown)
ran() { [ "$(cat "$R/$1.rc" 2> /dev/null)" = 0 ] || { cat "$R/$1.out" "$R/$1.err" 2> /dev/null; fail "guest step $1 failed"; }; }

test_case "the guest booted systemd on cgroup v2 and ran every step" '
  grep -q "^@@@ booted cgroup2fs" "$VM/serial" || { tail -50 "$VM/serial"; fail "no systemd guest on cgroup v2"; }
  grep -q "^@@@ done" "$VM/serial" || { tail -50 "$VM/serial"; fail "the guest did not finish"; }
'

test_case "agor-daemon.service starts the daemon as agor, with no privilege at all" '
  ran setup; ran validate; ran rbac; ran socket-config; ran cpu-limit; ran enable; ran status
  cat "$R/daemon-cgroup" "$R/daemon-privs"
  grep -q "^NoNewPrivs:[[:space:]]*1$" "$R/daemon-privs" || fail "the daemon may gain privileges"
  grep -q "^CapBnd:[[:space:]]*0000000000000000$" "$R/daemon-privs" || fail "the daemon keeps capabilities"
'

test_case "admin through agor-admin.socket from the hardened unit: a user, a clone, a worktree in the group admin made" '
  ran user; ran token; ran clone; ran worktree
  grep -q " agor_wt_" "$R/worktree-stat" || { cat "$R/worktree-stat"; fail "the worktree has no group made by agor admin"; }
  grep -q "agor admin serve: create-worktree-group" "$R/journal" || { grep agor-admin "$R/journal"; fail "the group was not made through the socket"; }
'

# The daemon runs as agor, its executors as agor_executor: agor-admin.service starts each executor in
# /agor/agor_executor/executors, a leaf of the subtree delegated to that user, so the executor may make its run cgroups
# below it and move its runs there (cgroup v2 moves a process only within a subtree its mover lives in).
test_case "cgroup v2, insulated: the executor lives in its delegated subtree and its run gets the limits" '
  ran exec
  grep -qx agor_executor "$R/exec.out" || { cat "$R/exec.out"; fail "the run was not agor_executor"; }
  [ -e "$R/made" ] || fail "the program did not run"
  expect_eq "$(cat "$R/executor-cgroup")" "0::/agor/agor_executor/executors"
  cat "$R/run-cgroup"
  grep -qx "memory.max 4294967296 " "$R/run-cgroup" || fail "the run has not the 4096 MiB memory limit"
  grep -qx "pids.max 1024 " "$R/run-cgroup" || fail "the run has not the 1024 pids limit"
  grep -qx "cpu.max 50000 100000 " "$R/run-cgroup" || fail "the run has not the 50% cpu limit"
  grep -Eq "^cgroup.procs [0-9]+" "$R/run-cgroup" || fail "nothing ran in the run cgroup"
  expect_eq "$(cat "$R/executor-cgroup-owner")" agor_executor
'

test_case "agor-node.service: the documented pairing writes where the unit reads; approved, it connects" '
  ran pair; ran approve; ran node-enable; ran nodes; ran node-active
  expect_eq "$(tr "\n" " " < "$R/node-state")" "agor-node 700 agor-node 600 "
  grep -Eq "\"connected\": *true" "$R/nodes.out" || { cat "$R/nodes.out"; fail "the node is not connected"; }
'

test_case "systemd-analyze security rates agor-daemon.service OK (at most 4.5)" '
  ran security; ran admin-security
  score=$(sed -n "s/.*Overall exposure level for agor-daemon.service: \([0-9.]*\).*/\1/p" "$R/security.out")
  admin=$(sed -n "s/.*Overall exposure level for agor-admin.service: \([0-9.]*\).*/\1/p" "$R/admin-security.out")
  echo "exposure: agor-daemon.service $score, agor-admin.service $admin"
  [ -n "$score" ] || { cat "$R/security.out"; fail "no score"; }
  awk -v s="$score" "BEGIN { exit !(s <= 4.5) }" || { cat "$R/security.out"; fail "agor-daemon.service is rated $score, above 4.5"; }
'

test_done
