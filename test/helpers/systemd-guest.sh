#!/bin/bash
# systemd-guest.sh — the program of t0055's Debian guest, run by agor-guest.service once systemd (PID 1) reached
# multi-user: an operator's steps of docs/modes.md#systemd with the units of dist/systemd, each result written to
# /results (the host reads the disk back) and a progress line on the serial console; then the guest powers off.
R=/results
mkdir -p $R
say() { echo "@@@ $*" > /dev/ttyS0; }
# step NAME CMD… — runs CMD, its stdout in R/NAME.out, stderr in R/NAME.err, status in R/NAME.rc
step() {
  local name=$1; shift
  "$@" > "$R/$name.out" 2> "$R/$name.err"
  echo $? > "$R/$name.rc"
  say "step $name $(cat "$R/$name.rc")"
}
as_agor() { setpriv --reuid=agor --regid=agor --init-groups -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/agor "$@"; }
as_alice() { # CMD… — an agor client command of alice's over TCP with her token
  setpriv --reuid=alice --regid=alice --init-groups -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/alice \
    AGOR_TOKEN="$(cat $R/token.out)" "$@"
}
URL=ws://127.0.0.1:3030/ws
wait_for() { local n=0; until "$@" > /dev/null 2>&1 || [ $n -ge 300 ]; do sleep 0.1; n=$((n + 1)); done; }
# pid_of USER TEXT — the first process of USER whose command line contains TEXT (no procps in the guest)
pid_of() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(stat -c %U "$p" 2> /dev/null)" = "$1" ] || continue
    tr '\0' ' ' < "$p/cmdline" 2> /dev/null | grep -qF -- "$2" && { echo "${p#/proc/}"; return 0; }
  done
  return 1
}

cat /proc/self/cgroup > $R/self-cgroup
stat -fc %T /sys/fs/cgroup > $R/cgroup-fs
say "booted $(cat $R/cgroup-fs)"

# the operator (docs/modes.md: insulated host, then the unit)
useradd --system --create-home --home-dir /home/agor --shell /bin/bash agor
useradd --create-home --shell /bin/bash alice
step setup agor setup isolation --mode insulated
step validate agor setup validate
# worktree groups (worktree_rbac, the strict mode's default) are what agor admin makes, here through the socket
step rbac as_agor agor config set execution.worktree_rbac true
step socket-config as_agor agor config set execution.privileged_socket /run/agor-admin.sock
step cpu-limit as_agor agor config set execution.sandbox.cpu_max_percent 50   # memory and pids have limits by default
step enable systemctl enable --now agor-admin.socket agor-daemon
wait_for as_agor agor daemon status
step status as_agor agor daemon status
systemctl show -p MainPID --value agor-daemon > $R/mainpid
cat /proc/"$(cat $R/mainpid)"/cgroup > $R/daemon-cgroup
grep -E '^(NoNewPrivs|CapBnd|CapEff):' /proc/"$(cat $R/mainpid)"/status > $R/daemon-privs
systemctl show -p ControlGroup --value agor-daemon > $R/unit-cgroup
step security systemd-analyze security --no-pager agor-daemon.service
step admin-security systemd-analyze security --no-pager agor-admin.service

# admin through the privileged socket, from the daemon in its unit: a user, a clone, a worktree (its group made by
# agor admin serve)
step user as_agor agor user create alice --unix-user alice
step token as_agor agor user token --for alice
step clone as_alice agor repo clone /srv/src --json --url $URL
repo=$(tr -d ' \n' < $R/clone.out | sed -n 's/.*"repo":{"id":"\([^"]*\)".*/\1/p')  # --json is pretty-printed
step worktree as_alice agor worktree add "$repo" feature --json --url $URL
wt=$(tr -d ' \n' < $R/worktree.out | sed -n 's/.*"worktree":{"id":"\([^"]*\)".*/\1/p')
path=$(tr -d ' \n' < $R/worktree.out | sed -n 's/.*"path":"\(\/srv\/agor\/worktrees\/[^"]*\)".*/\1/p')
stat -c "%U %G %a" "$path" > $R/worktree-stat 2>&1
# an executor with limits (memory, pids by default, cpu set above): on cgroup v2 it must start inside its delegated
# subtree, which agor-admin.service gives it; while it runs, its run cgroup's limits and the executor's cgroup are read
as_alice agor exec --url $URL "$wt" -- sh -c 'id -un; cat /proc/self/cgroup; echo made > made.txt; sleep 30' \
  > $R/exec.out 2> $R/exec.err &
execpid=$!
wait_for sh -c 'ls -d /sys/fs/cgroup/agor/agor_executor/run-*'
run=$(ls -d /sys/fs/cgroup/agor/agor_executor/run-* 2> /dev/null | head -1)
for f in memory.max pids.max cpu.max cgroup.procs; do echo "$f $(cat "$run/$f" 2> /dev/null | tr '\n' ' ')"; done > $R/run-cgroup
inner=$(pid_of agor_executor "agor executor --stdin")   # slow under TCG (forks per process): the run sleeps 30 s
cat /proc/"$inner"/cgroup > $R/executor-cgroup 2>&1
wait $execpid
echo $? > $R/exec.rc
say "step exec $(cat $R/exec.rc)"
ls /sys/fs/cgroup/agor/agor_executor > $R/executor-cgroups 2>&1
ls "$path/made.txt" > $R/made 2> /dev/null || rm -f $R/made
stat -c %U /sys/fs/cgroup/agor/agor_executor > $R/executor-cgroup-owner 2>&1

# the node unit: pair with the documented command (it writes where the unit reads), approve, run
useradd --system --home-dir /var/lib/agor-node --shell /usr/sbin/nologin agor-node
N="systemd-run --quiet --wait --pipe --uid=agor-node -p StateDirectory=agor-node -p StateDirectoryMode=0700 -E AGOR_HOME=/var/lib/agor-node /usr/local/bin/agor"
step pair $N node pair --gateway ws://127.0.0.1:3030/ws --name guest-node
stat -c "%U %a" /var/lib/agor-node /var/lib/agor-node/node.json > $R/node-state 2>&1
step approve as_agor agor nodes approve guest-node
step node-enable systemctl enable --now agor-node
wait_for sh -c 'setpriv --reuid=agor --regid=agor --init-groups -- env -i HOME=/home/agor agor nodes list --json | grep -q "\"connected\":true"'
step nodes as_agor agor nodes list --json
step node-active systemctl is-active agor-node
journalctl -b --no-pager -u agor-daemon -u agor-node -u agor-admin > $R/journal 2>&1
step daemon-stop systemctl stop agor-daemon
say "done"
sync
systemctl poweroff --no-block
