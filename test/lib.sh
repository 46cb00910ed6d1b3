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
