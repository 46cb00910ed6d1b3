# test/asserts.sh — assertions and helpers for integration test bodies (sourced by test/lib.sh and by
# bodies running inside private namespaces). Never changes anything outside the current test directory.
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

# audit_actions FILE — one "ACTION OUTCOME" line per entry of an `agor audit list --json` file.
audit_actions() {
  python3 - "$1" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
rows = rows if isinstance(rows, list) else rows.get("entries", rows.get("rows", []))
for r in rows:
    print(r.get("action"), r.get("outcome"))
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
