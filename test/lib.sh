# test/lib.sh — the integration harness sourced by test/integration/t*.sh (git t/ style).
# Each test_case body runs in a subshell with `set -e` inside a fresh $T directory; nothing leaks between cases.
set -u
: "${AGOR:?AGOR must point at the agor binary under test}"
: "${AGOR_FLAVOR:=musl}"
TEST_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TEST_NAME=$(basename "$0" .sh)
TEST_TMP_ROOT="$TEST_TOP/build/test-tmp/$TEST_NAME-$AGOR_FLAVOR.$$"   # per run: concurrent runs never collide
mkdir -p "$TEST_TMP_ROOT"
_passed=0 _failed=0 _skipped=0 _n=0

# test_case [--needs LIST] NAME BODY — BODY is shell code; the case passes when it exits 0. It is a counted skip,
# with the reason, when this machine lacks a prerequisite in LIST (comma-separated names, see PREREQUISITES) or
# when BODY calls skip_case REASON — never a silent pass.
test_case() {
  local needs="" reason
  if [ "$1" = --needs ]; then needs=$2; shift 2; fi
  if reason=$(unmet_needs "$needs"); then test_skip "$1" "$reason"; return; fi
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
  if [ $rc -eq "$SKIP_CASE_STATUS" ] && [ -s "$T.skip" ]; then
    _skipped=$((_skipped + 1)); echo "skip $_n - $name ($(cat "$T.skip"))"
  elif [ $rc -eq 0 ]; then
    _passed=$((_passed + 1)); echo "ok $_n - $name"
  else
    _failed=$((_failed + 1)); echo "FAIL $_n - $name (exit $rc)"
    tail -n 30 "$log" | sed 's/^/    | /'
  fi
}

# skip_case REASON — inside a test_case body: this machine cannot run the case; it ends here as a counted skip.
SKIP_CASE_STATUS=77
skip_case() {
  printf '%s' "$1" > "$T.skip"
  exit "$SKIP_CASE_STATUS"
}

# case_needs LIST — inside a test_case body: the case ends as a counted skip unless this machine has LIST.
case_needs() {
  local reason
  if reason=$(unmet_needs "$1"); then skip_case "$reason"; fi
}

# file_needs LIST NAME — at the top of a test file: unless this machine has LIST, NAME is a counted skip with the
# reason and the file ends here.
file_needs() {
  local reason
  reason=$(unmet_needs "$1") || return 0
  test_skip "$2" "$reason"
  test_done
  exit
}

# test_skip NAME REASON — a case this machine cannot run, with the reason printed.
test_skip() {
  _n=$((_n + 1)); _skipped=$((_skipped + 1))
  echo "skip $_n - $1 ($2)"
}

# test_done — records the counts for test/run; call last.
test_done() {
  echo "$_passed $_failed $_skipped" > "${TEST_RESULTS:-/dev/null}"
  [ "$_failed" -eq 0 ] && rm -rf "$TEST_TMP_ROOT"   # kept for inspection when something failed
  [ "$_failed" -eq 0 ]
}

# npm_package DIR NAME@VERSION — installs an npm package into DIR once (shared by both flavors and by the test
# files that name the same DIR); returns 1 after printing why it cannot (for test_skip).
npm_package() {
  local dir=$1 spec=$2
  if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
    echo "node and npm are not installed (Debian: nodejs npm)"
    return 1
  fi
  grep -qsxF "$spec" "$dir/.installed" && return 0
  if mkdir -p "$dir" && npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$spec" > "$dir.log" 2>&1; then
    echo "$spec" >> "$dir/.installed"
    return 0
  fi
  echo "npm install $spec failed (see $dir.log)"
  return 1
}

# assertions and helpers usable inside bodies (also sourced inside private namespaces)
. "$TEST_TOP/test/asserts.sh"
# the prerequisite table: test_case --needs, case_needs, file_needs
. "$TEST_TOP/test/needs.sh"
# the daemon scene: start_daemon, rpc, stop_daemon
. "$TEST_TOP/test/daemon.sh"
# tmux_stop: a case's tmux server stopped by the pid on its socket, none left
. "$TEST_TOP/test/tmux.sh"

# in_scratch_system BODY — runs BODY (with `set -e`, test/daemon.sh and test/tmux.sh) as root in a private mount
# namespace where /etc is a scratch copy and /home, /run are empty tmpfs (test/sandbox.sh's scratch_system): users,
# groups and sudoers made there never reach the host, and BODY runs only once /etc is proven to be the scratch copy.
in_scratch_system() {
  local script="$T/.scratch-body.sh"
  { echo "set -e"; echo "TEST_TOP='$TEST_TOP'"; echo ". '$TEST_TOP/test/asserts.sh'; . '$TEST_TOP/test/daemon.sh'"
    echo ". '$TEST_TOP/test/tmux.sh'"; echo "cd '$T'"; printf '%s\n' "$1"; } > "$script"
  T="$T" AGOR="$AGOR" unshare --mount --propagation private -- bash -c '
    . "$2/test/sandbox.sh"
    scratch_system "$T/.scratch" /home /run
    exec bash "$1"' _ "$script" "$TEST_TOP"
}
