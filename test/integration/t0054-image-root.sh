#!/usr/bin/env bash
# t0054-image-root — the executor image of dist/Dockerfile without docker: the same root assembled by
# dist/image-root.sh, entered as a container runtime would (pivot_root, fresh /proc and /dev, the Dockerfile's USER
# and ENV); git payloads run in it as is, exec.run fails closed in a default container and runs with the pod
# settings docs/modes.md#docker documents.
. "$(dirname "$0")/../lib.sh"

DOCKERFILE="$TEST_TOP/dist/Dockerfile"
ROOT="$TEST_TMP_ROOT/root"
POD_POLICY='"policy":{"execution.sandbox.memory_max_mb":"0","execution.sandbox.pids_max":"0"}'

# The Dockerfile's ENV words (NAME=VALUE…) and its USER, so the test enters the root exactly as the image runs.
image_env() { sed -n 's/^ENV //p' "$DOCKERFILE"; }
image_user() { sed -n 's/^USER //p' "$DOCKERFILE"; }

# in_image [--masked-proc] CMD… — runs CMD in the image root as the image's user with the image's environment;
# stdin passes through, stdout → out, stderr → err, status → $rc.
in_image() {
  local mask=()
  [ "$1" != --masked-proc ] || { mask=(--masked-proc); shift; }
  rc=0
  # shellcheck disable=SC2046 # the ENV words are NAME=VALUE without spaces (checked below)
  unshare --mount --pid --fork --propagation private \
    python3 "$TEST_TOP/test/helpers/enter-root.py" "${mask[@]}" "$ROOT" "$(image_user)" $(image_env) -- "$@" \
    > out 2> err || rc=$?
}

# image_payload [--masked-proc] JSON — `agor executor --stdin` in the image with JSON on stdin.
image_payload() {
  local mask=()
  [ "$1" != --masked-proc ] || { mask=(--masked-proc); shift; }
  printf '%s' "$1" > payload
  in_image "${mask[@]}" /agor executor --stdin < payload
}

file_needs root,mountns "the executor image's root"
if ! is_musl; then
  test_skip "the executor image's root" "the image holds the static ./agor only: run with the musl flavor"
  test_done; exit
fi

"$TEST_TOP/dist/image-root.sh" "$ROOT" "$AGOR" /etc/ssl/certs/ca-certificates.crt
make_source_repo "$TEST_TMP_ROOT/src"
git clone -q --bare "$TEST_TMP_ROOT/src" "$ROOT/src.git" # the payloads' clone source, inside the root
export ROOT

test_case "the Dockerfile builds from the repository alone, sets the data home, runs as nobody" '
  grep "^FROM " "$DOCKERFILE" > froms
  expect_eq "$(cat froms)" "FROM debian:bookworm AS build
FROM scratch"
  grep -q "^COPY --from=build /image/ /$" "$DOCKERFILE" || fail "the image is not the root dist/image-root.sh made"
  grep -q "dist/image-root.sh /image ./agor /etc/ssl/certs/ca-certificates.crt" "$DOCKERFILE" \
    || fail "the CA bundle does not come from the build stage"
  image_env | tr " " "\n" > env
  grep -qx "AGOR_DATA_HOME=/data" env || fail "no AGOR_DATA_HOME"
  grep -qx "AGOR_HOME=/data/.agor" env || fail "no AGOR_HOME"
  grep -qx "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" env || fail "no SSL_CERT_FILE"
  ! grep -v "^[A-Z_]*=[^ ]*$" env || fail "an ENV word is not NAME=VALUE"
  expect_eq "$(image_user)" "65534:65534"
  expect_eq "$(stat -c "%U %a" "$ROOT/agor" "$ROOT/data" | tr "\n" " ")" "root 755 nobody 700 "
'

test_case "git payloads run in the image as nobody: clone, then a worktree" '
  image_payload "{\"command\":\"git.clone\",\"params\":{\"url\":\"/src.git\",\"outputPath\":\"/data/repos/r\"}}"
  expect_success
  expect_json out data.defaultBranch main
  image_payload "{\"command\":\"git.worktree.add\",\"params\":{\"repoPath\":\"/data/repos/r\",\"worktreeName\":\"w\",\"worktreePath\":\"/data/worktrees/w\",\"branch\":\"wb\",\"createBranch\":true}}"
  expect_success
  expect_eq "$(stat -c %u "$ROOT/data/worktrees/w/hello.txt")" 65534
'

test_case "a payload path outside the data home is refused in the image" '
  image_payload "{\"command\":\"git.clone\",\"params\":{\"url\":\"/src.git\",\"outputPath\":\"/tmp/r\"}}"
  expect_error PATH_OUTSIDE_DATA_HOME 1
'

# exec.run's program: a static busybox put in the worktree (the image holds no programs but /agor).
have_static_busybox() { [ -x /bin/busybox ] && ! readelf -l /bin/busybox | grep -q "program interpreter"; }

test_case "exec.run in a default container fails closed: no cgroup, nothing runs" '
  have_static_busybox || skip_case "no static busybox (Debian: busybox-static)"
  install -o 65534 -g 65534 -m 0755 /bin/busybox "$ROOT/data/worktrees/w/busybox"
  image_payload "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"/data/worktrees/w\",\"argv\":[\"./busybox\",\"touch\",\"ran\"]}}"
  expect_error ISOLATION_UNAVAILABLE 1
  expect_json out error.details.missing cgroup
  image_payload --masked-proc "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"/data/worktrees/w\",\"argv\":[\"./busybox\",\"touch\",\"ran\"]},$POD_POLICY}"
  expect_error ISOLATION_UNAVAILABLE 1
  expect_json out error.details.missing proc
  [ ! -e "$ROOT/data/worktrees/w/ran" ] || fail "the program ran"
'

test_case "exec.run with the documented pod settings runs sandboxed; the run cannot touch the image" '
  have_static_busybox || skip_case "no static busybox (Debian: busybox-static)"
  image_payload "{\"command\":\"exec.run\",\"params\":{\"cwd\":\"/data/worktrees/w\",\"argv\":[\"./busybox\",\"sh\",\"-c\",\"./busybox id -u; echo x > made; ./busybox ls -a /data; echo y > /agor || echo agor-ro; echo z >> /etc/passwd || echo etc-ro\"]},$POD_POLICY}"
  expect_success
  expect_json out data.exitCode 0
  expect_json out data.sandbox.capabilities none
  json_get out data.stdout > stdout
  grep -qx 65534 stdout || { cat out; fail "the run is not nobody"; }
  grep -qx agor-ro stdout || { cat out; fail "the run could write /agor"; }
  grep -qx etc-ro stdout || { cat out; fail "the run could write /etc/passwd"; }
  ! grep -qx ".agor" stdout || { cat out; fail "the run sees AGOR_HOME"; }
  expect_eq "$(cat "$ROOT/data/worktrees/w/made")" x
  expect_eq "$(cmp "$ROOT/agor" "$AGOR" && echo same)" same
'

test_done
