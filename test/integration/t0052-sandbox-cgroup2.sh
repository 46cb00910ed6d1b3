#!/usr/bin/env bash
# t0052-sandbox-cgroup2 — lib/sandbox on a pure cgroup v2 host (this one binds every controller to v1): Debian's
# cloud kernel booted under qemu with a busybox initramfs holding ./agor; in the guest exec.run's limits hold.
# Root's data home /data is an ext4 disk (NVMe, built into that kernel): a root executor's runs bind it idmapped,
# which tmpfs cannot do before Linux 6.3.
. "$(dirname "$0")/../lib.sh"

. "$(dirname "$0")/../vm.sh"

VM="$TEST_TMP_ROOT/vm"

# Why this machine cannot boot the guest, or nothing.
why_no_guest() {
  if unmet_needs root,qemu,mkfs.ext4; then return
  elif ! is_musl; then echo "the guest holds static binaries only: run with the musl flavor"
  elif [ "$(uname -m)" != x86_64 ]; then echo "the guest kernel is x86_64"
  elif [ ! -x /bin/busybox ] || readelf -l /bin/busybox | grep -q "program interpreter"; then
    echo "no static busybox (Debian: busybox-static)"
  elif ! vm_kernel > /dev/null; then echo "Debian's linux-image-cloud-amd64 could not be fetched"
  fi
}

# The guest's program: stage 1 moves the initramfs to a tmpfs (pivot_root, which the sandbox needs, refuses
# rootfs), stage 2 mounts cgroup2 alone and runs every /cases/NAME.json, printing its output between markers.
write_guest_init() {
  cat > "$1" << 'EOF'
#!/bin/sh
if [ "$1" != stage2 ]; then
  mount -t tmpfs -o mode=0755 root /newroot
  for d in /*; do [ "$d" = /newroot ] || [ "$d" = /proc ] || cp -a "$d" /newroot/; done
  mkdir -p /newroot/proc
  exec switch_root /newroot /init stage2
fi
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
n=0; while [ ! -b /dev/nvme0n1 ] && [ $n -lt 200 ]; do usleep 50000; n=$((n + 1)); done
mount -t ext4 /dev/nvme0n1 /data || echo "@@@ no data disk"
echo "@@@ controllers $(cat /sys/fs/cgroup/cgroup.controllers)"
export PATH=/usr/bin HOME=/root
for c in /cases/*.json; do
  name=${c##*/}; name=${name%.json}
  if [ -e "/cases/$name.user" ]; then
    user=$(cat "/cases/$name.user")
    run="AGOR_HOME=/home/$user/data HOME=/home/$user agor executor --stdin < $c > /tmp/out.$name 2> /tmp/err.$name"
    pid=
    if [ -e "/cases/$name.inside" ]; then # a stand-in daemon of the user's, moved inside with --pid, starts it
      rm -f /tmp/go
      su -s /bin/sh "$user" -c "echo \$\$ > /tmp/pid.$name; while [ ! -e /tmp/go ]; do usleep 20000; done; $run" &
      while [ ! -s "/tmp/pid.$name" ]; do usleep 20000; done
      pid="--pid $(cat "/tmp/pid.$name")"
    fi
    agor admin cgroup-delegate "$user" $pid --json > /tmp/delegate 2>&1
    echo "@@@ delegate $name $? $(stat -c %U /sys/fs/cgroup/agor/$user /sys/fs/cgroup/agor/$user/cgroup.procs 2>&1 | tr '\n' ' ')"
    echo "@@@ delegate-out $name $(tr '\n' ' ' < /tmp/delegate)"
    if [ -n "$pid" ]; then touch /tmp/go; wait $!; else su -s /bin/sh "$user" -c "$run"; fi
  else
    cp "/cases/$name.yaml" /data/config.yaml
    AGOR_HOME=/data agor executor --stdin < "$c" > /tmp/out.$name 2> /tmp/err.$name
  fi
  echo "@@@ exit $name $?"
  echo "@@@ out $name $(cat /tmp/out.$name)"
  echo "@@@ err $name $(cat /tmp/err.$name | tr '\n' ' ')"
  echo "@@@ left $name $(ls /sys/fs/cgroup/agor /sys/fs/cgroup/agor/cgexec 2> /dev/null | grep -c run-)"
done
echo "@@@ done"
poweroff -f
EOF
  chmod +x "$1"
}

# guest_case NAME USER CONFIG-LINES SCRIPT — a case for the guest: exec.run of /bin/sh -c SCRIPT in the data
# home's worktrees/w. USER root: data home /data with CONFIG-LINES under execution.sandbox; another user: its
# executor gets a delegated subtree first and runs on the defaults in /home/USER/data (NAME.inside: started by
# a process of the user's that agor admin cgroup-delegate --pid moved into that subtree).
guest_case() {
  local name=$1 user=$2 config=$3 script=$4 home=/data
  [ "$user" = root ] || home=/home/$user/data
  python3 -c 'import json,sys; print(json.dumps({"command":"exec.run","params":{"cwd":"w","argv":["/bin/sh","-c",sys.argv[1]],"timeoutMs":60000},"dataHome":sys.argv[2]}))' "$script" "$home" > "$VM/root/cases/$name.json"
  if [ "$user" = root ]; then
    printf "execution:\n  sandbox:\n%s\n" "$config" > "$VM/root/cases/$name.yaml"
  else
    echo "$user" > "$VM/root/cases/$name.user"
  fi
}

build_guest() {
  local g="$VM/root"
  mkdir -p "$g"/{usr/bin,usr/lib,proc,sys,dev,tmp,etc,root,newroot,cases,home/cgexec,data/worktrees/w}
  ln -s usr/bin "$g/bin" && ln -s usr/bin "$g/sbin" && ln -s usr/lib "$g/lib"
  cp /bin/busybox "$g/usr/bin/"
  cp "$AGOR" "$g/usr/bin/agor"
  for a in $(/bin/busybox --list); do [ -e "$g/usr/bin/$a" ] || ln -s busybox "$g/usr/bin/$a"; done
  printf "root:x:0:0:root:/root:/bin/sh\ncgexec:x:1000:1000::/home/cgexec:/bin/sh\n" > "$g/etc/passwd"
  printf "root:x:0:\ncgexec:x:1000:\nagor_users:x:1001:cgexec\n" > "$g/etc/group"
  guest_case 1-pids root "    pids_max: 64" "bomb() { bomb | bomb & }; bomb; sleep 3; exit 0"
  guest_case 2-memory root "    memory_max_mb: 48" "dd if=/dev/zero of=/dev/null bs=256M count=1; echo survived"
  guest_case 3-leftovers root "    pids_max: 64
    cpu_max_percent: 50" "sleep 600 & sleep 600 & cat /proc/self/cgroup; echo uid=\$(id -u); echo x > made"
  mkdir -p "$g/home/cgexec/data/worktrees/w"
  chown -R 1000:1000 "$g/home/cgexec"
  guest_case 4-outside cgexec "" "echo ran"
  guest_case 5-inside cgexec "" "cat /proc/self/cgroup"
  touch "$g/cases/5-inside.inside"
  write_guest_init "$g/init"
  mkfs.ext4 -q -F -d "$g/data" "$VM/data.img" 64M > /dev/null
  rm -rf "$g/data" && mkdir "$g/data"
  (cd "$g" && find . | /bin/busybox cpio -o -H newc 2> /dev/null | gzip -1) > "$VM/initrd.gz"
}

# Boots the guest once; its serial console goes to $VM/console.
boot_guest() {
  mkdir -p "$VM"
  build_guest
  timeout 600 qemu-system-x86_64 $(vm_accel) -m 768 -smp 2 -nographic -no-reboot -kernel "$(vm_kernel)" -initrd "$VM/initrd.gz" \
    -drive "file=$VM/data.img,if=none,id=data,format=raw" -device nvme,drive=data,serial=agordata \
    -append "console=ttyS0 panic=-1 quiet" < /dev/null > "$VM/console" 2>&1 || true
  tr -d '\r' < "$VM/console" > "$VM/serial"
}

# guest_out NAME FILE — the executor's output line of case NAME into FILE.
guest_out() { sed -n "s/^@@@ out $1 //p" "$VM/serial" > "$2"; [ -s "$2" ] || { cat "$VM/serial"; fail "case $1 printed nothing"; }; }

reason=$(why_no_guest)
if [ -n "$reason" ]; then
  test_skip "cgroup v2 in a qemu guest" "$reason"
  test_done; exit
fi
boot_guest
export VM

test_case "the guest kernel offers memory and pids on cgroup2 only, and every case ran" '
  grep "@@@ controllers" "$VM/serial" | grep -q " memory" || { cat "$VM/serial"; fail "no memory controller on cgroup2"; }
  grep -q "^@@@ done" "$VM/serial" || { cat "$VM/serial"; fail "the guest did not finish"; }
'

test_case "cgroup v2: a fork bomb hits pids.max, the run fails, its cgroup is removed" '
  guest_out 1-pids out
  expect_json out data.sandbox.cgroup.version 2
  expect_json out data.sandbox.cgroup.pidsMax 64
  [ "$(json_get out data.events.pidsLimitHits)" -gt 0 ] || { cat out; fail "pids.max was never hit"; }
  expect_json out data.outcome pids-limit
  expect_json out data.events.cgroupRemoved true
  grep -qx "@@@ left 1-pids 0" "$VM/serial" || fail "a run cgroup was left behind"
'

test_case "cgroup v2: a memory hog is OOM-killed inside its cgroup, the guest carries on" '
  guest_out 2-memory out
  expect_json out data.sandbox.cgroup.memoryMaxBytes $((48 << 20))
  [ "$(json_get out data.events.oomKills)" -gt 0 ] || { cat out; fail "no OOM kill recorded"; }
  expect_json out data.outcome oom
  grep -qx "@@@ left 2-memory 0" "$VM/serial" || fail "a run cgroup was left behind"
'

test_case "cgroup v2: background processes die with the run; its cgroup (with cpu.max) is gone" '
  guest_out 3-leftovers out
  expect_json out success true
  expect_json out data.sandbox.cgroup.cpuMaxPercent 50
  json_get out data.stdout > cg
  grep -q "^0::/agor/run-" cg || { cat out; fail "the program was not in a v2 run cgroup"; }
  grep -qx "uid=65534" cg || { cat out; fail "a root executor'"'"'s run is not uid 65534"; }
  expect_json out data.sandbox.runAs.uid 65534
  grep -qx "@@@ left 3-leftovers 0" "$VM/serial" || fail "a run cgroup was left behind"
'

test_case "cgroup v2: a non-root executor outside its delegated subtree fails closed, naming --pid" '
  grep -q "^@@@ delegate 4-outside 0 cgexec cgexec" "$VM/serial" || { cat "$VM/serial"; fail "agor/cgexec was not handed over"; }
  guest_out 4-outside out
  expect_json out error.code ISOLATION_UNAVAILABLE
  expect_json out error.details.missing cgroup
  expect_contains out "agor admin cgroup-delegate USER --pid DAEMON_PID"
'

test_case "cgroup v2: with its daemon moved inside (--pid), a non-root executor runs in its own subtree" '
  grep -q "^@@@ delegate 5-inside 0 cgexec cgexec" "$VM/serial" || { cat "$VM/serial"; fail "agor/cgexec was not handed over"; }
  grep "^@@@ delegate-out 5-inside" "$VM/serial" | grep -q "/sys/fs/cgroup/agor/cgexec/daemon" || fail "no daemon leaf"
  guest_out 5-inside out
  expect_json out success true
  json_get out data.stdout > cg
  grep -q "^0::/agor/cgexec/run-" cg || { cat out; fail "the run is not in the delegated subtree"; }
  expect_json out data.events.cgroupRemoved true
  grep -qx "@@@ left 5-inside 0" "$VM/serial" || fail "a run cgroup was left behind"
'

test_done
