# test/lib.sh — the integration harness sourced by test/integration/t*.sh (git t/ style).
# Each test_case body runs in a subshell with `set -e` inside a fresh $T directory; nothing leaks between cases.
set -u
: "${AGOR:?AGOR must point at the agor binary under test}"
: "${AGOR_FLAVOR:=musl}"
TEST_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TEST_NAME=$(basename "$0" .sh)
TEST_TMP_ROOT="$TEST_TOP/build/test-tmp/$TEST_NAME-$AGOR_FLAVOR"
rm -rf "$TEST_TMP_ROOT" && mkdir -p "$TEST_TMP_ROOT"
_passed=0 _failed=0 _skipped=0 _n=0

# test_case NAME BODY — BODY is shell code; the case passes when it exits 0.
test_case() {
  local name=$1 body=$2 log
  _n=$((_n + 1))
  T="$TEST_TMP_ROOT/$_n"
  mkdir -p "$T"
  log="$T.log"
  (
    cd "$T" || exit 1
    export HOME="$T/home" AGOR_HOME="$T/home/.agor"
    unset AGOR_DATA_HOME AGOR_CONFIG_PATH AGOR_DAEMON_HOST AGOR_DAEMON_PORT AGOR_LOG_LEVEL
    mkdir -p "$HOME"
    set -e
    eval "$body"
  ) > "$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    _passed=$((_passed + 1)); echo "ok $_n - $name"
  else
    _failed=$((_failed + 1)); echo "FAIL $_n - $name (exit $rc)"
    tail -n 30 "$log" | sed 's/^/    | /'
  fi
}

# test_skip NAME REASON — a case this machine cannot run, with the reason printed.
test_skip() {
  _n=$((_n + 1)); _skipped=$((_skipped + 1))
  echo "skip $_n - $1 ($2)"
}

# test_done — records the counts for test/run; call last.
test_done() {
  echo "$_passed $_failed $_skipped" > "${TEST_RESULTS:-/dev/null}"
  [ "$_failed" -eq 0 ]
}

# --- assertions usable inside bodies (they print what they saw on failure) ---
fail() { echo "assertion failed: $*" >&2; return 1; }

# expect_exit CODE CMD... — runs CMD, stdout to ./out, stderr to ./err; checks the exit status.
expect_exit() {
  local want=$1; shift
  local rc=0
  "$@" > out 2> err || rc=$?
  [ "$rc" -eq "$want" ] || { echo "--- stdout"; cat out; echo "--- stderr"; cat err; fail "'$*' exited $rc, expected $want"; }
}

expect_contains() { # FILE TEXT
  grep -qF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "$1 does not contain '$2'"; }
}
expect_not_contains() { # FILE TEXT
  ! grep -qF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "$1 contains '$2'"; }
}
expect_empty() { [ ! -s "$1" ] || { echo "--- $1:"; cat "$1"; fail "$1 is not empty"; }; }
expect_eq() { [ "$1" = "$2" ] || fail "got '$1', expected '$2'"; }
expect_mode() { # PATH MODE(octal, e.g. 700)
  local m; m=$(stat -c %a "$1"); [ "$m" = "$2" ] || fail "$1 has mode $m, expected $2"
}
is_musl() { [ "$AGOR_FLAVOR" = musl ]; }
is_root() { [ "$(id -u)" = 0 ]; }

# json_get FILE PATH — prints the value at a dotted PATH (a.b.0.c) of the JSON in FILE (strings raw,
# other values as JSON); exits non-zero when the path does not exist.
json_get() {
  python3 - "$1" "$2" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for part in [p for p in sys.argv[2].split(".") if p]:
    v = v[int(part)] if isinstance(v, list) else v[part]
print(v if isinstance(v, str) else json.dumps(v))
PY
}

# expect_json FILE PATH VALUE — the value at PATH equals VALUE (as json_get prints it).
expect_json() {
  local got; got=$(json_get "$1" "$2") || { cat "$1"; fail "$1 has no $2"; }
  [ "$got" = "$3" ] || { cat "$1"; fail "$1: $2 is '$got', expected '$3'"; }
}

# executor JSON [ARGS…] — runs `agor executor --stdin ARGS` with JSON on stdin; stdout → out, stderr → err,
# the exit status → $rc (never fails by itself).
executor() {
  local json=$1; shift
  rc=0
  printf '%s' "$json" | "$AGOR" executor --stdin "$@" > out 2> err || rc=$?
}

# expect_error CODE STATUS — the last executor run failed with CODE and exit STATUS, one line on stdout.
expect_error() {
  [ "$(wc -l < out)" -eq 1 ] || { cat out; fail "stdout is not exactly one line"; }
  expect_json out success false
  expect_json out error.code "$1"
  [ "$rc" -eq "$2" ] || { cat out err; fail "exit status $rc, expected $2"; }
}

# expect_success — the last executor run succeeded: exit 0 and one result line.
expect_success() {
  [ "$(wc -l < out)" -eq 1 ] || { cat out err; fail "stdout is not exactly one line"; }
  expect_json out success true
  [ "$rc" -eq 0 ] || { cat out err; fail "exit status $rc, expected 0"; }
}

# make_source_repo DIR — a small git repository with two commits on main and a branch 'topic'.
make_source_repo() {
  git init -q -b main "$1"
  git -C "$1" -c user.name=t -c user.email=t@t commit -q --allow-empty -m first
  echo hello > "$1/hello.txt"
  git -C "$1" add hello.txt
  git -C "$1" -c user.name=t -c user.email=t@t commit -q -m second
  git -C "$1" branch topic HEAD~1
}
