#!/usr/bin/env bash
# t0002-config — `agor config show` (docs/config.md): defaults, config.yaml with lines, precedence flag > env > file > default, every error form.
. "$(dirname "$0")/../lib.sh"

# write_config TEXT — $AGOR_HOME/config.yaml, mode 0600.
write_config() {
  mkdir -p "$AGOR_HOME"
  printf '%s' "$1" > "$AGOR_HOME/config.yaml"
  chmod 600 "$AGOR_HOME/config.yaml"
}
# setting_line KEY — the human line of KEY from ./out.
setting_line() { grep -E "^$1 " out || fail "no line for $1"; }
# expect_setting KEY VALUE SOURCE — ./out shows "KEY  VALUE  (SOURCE)" (alignment spaces squeezed).
expect_setting() {
  local got; got=$(setting_line "$1" | tr -s " ")
  [ "$got" = "$1 $2 ($3)" ] || fail "got '$got', expected '$1 $2 ($3)'"
}

test_case "no config file: every setting is a default" '
  unset AGOR_HOME
  expect_exit 0 "$AGOR" config show
  expect_empty err
  expect_contains out "# config file: $HOME/.agor/config.yaml (not found"
  [ "$(grep -vc "^#" out)" -eq 70 ] || fail "expected 70 settings"
  ! grep -v "^#" out | grep -v "(default)$" || fail "a setting that is not a default"
  expect_setting daemon.port 3030 default
  expect_setting daemon.host 127.0.0.1 default
  expect_setting paths.agor_home "$HOME/.agor" default
  expect_setting paths.data_home "$HOME/.agor" default
  expect_setting paths.repos_dir "$HOME/.agor/repos" default
  expect_setting execution.exec_env_allow "LANG:LC_*:TZ:TERM:NO_COLOR:COLUMNS:LINES" default
  expect_setting daemon.socket_path "$HOME/.agor/run/agor.sock" default
  expect_setting execution.unix_user_mode simple default
  expect_setting execution.executor_command_template null default
  expect_setting execution.executor_daemon_url null default
  expect_setting execution.executor_heartbeat_ms 10000 default
  expect_setting execution.worktree_rbac false default
  expect_setting execution.executor_pool.max_executors 10 default
  [ ! -e "$HOME/.agor" ] || fail "config show created AGOR_HOME"
'

test_case "values from config.yaml show source file and their line" '
  write_config "# comment
daemon:
  host: 0.0.0.0

  port: 4000
execution:
  executor_pool:
    max_executors: 3
"
  expect_exit 0 "$AGOR" config show
  expect_empty err
  expect_setting daemon.port 4000 "file, $AGOR_HOME/config.yaml:5"
  expect_setting daemon.host 0.0.0.0 "file, $AGOR_HOME/config.yaml:3"
  expect_setting execution.executor_pool.max_executors 3 "file, $AGOR_HOME/config.yaml:8"
  expect_setting daemon.unix_user agor default
'

test_case "environment beats the file" '
  write_config "daemon:
  port: 4000
  host: 10.0.0.1
"
  AGOR_DAEMON_PORT=5000 expect_exit 0 "$AGOR" config show
  expect_setting daemon.port 5000 "env, AGOR_DAEMON_PORT"
  expect_setting daemon.host 10.0.0.1 "file, $AGOR_HOME/config.yaml:3"
'

test_case "a flag beats the environment" '
  write_config "daemon: {port: 4000}
"
  AGOR_DAEMON_PORT=5000 AGOR_DAEMON_HOST=::1 expect_exit 0 "$AGOR" config show --port 6000 --set daemon.host=127.0.0.2
  expect_setting daemon.port 6000 flag
  expect_setting daemon.host 127.0.0.2 flag
  AGOR_DAEMON_PORT=5000 expect_exit 0 "$AGOR" config show --port=6001
  expect_setting daemon.port 6001 flag
'

test_case "AGOR_DATA_HOME moves the derived directories; explicit ones stay" '
  write_config "paths:
  worktrees_dir: ~/wt
"
  AGOR_DATA_HOME=/srv/data expect_exit 0 "$AGOR" config show
  expect_setting paths.data_home /srv/data "env, AGOR_DATA_HOME"
  expect_setting paths.repos_dir /srv/data/repos default
  expect_setting paths.zellij_dir /srv/data/zellij default
  expect_setting paths.worktrees_dir "$HOME/wt" "file, $AGOR_HOME/config.yaml:2"
'

test_case "--home moves the config file and everything under AGOR_HOME" '
  mkdir other && printf "daemon: {port: 4100}\n" > other/config.yaml && chmod 600 other/config.yaml
  expect_exit 0 "$AGOR" config show --home "$T/other"
  expect_contains out "# config file: $T/other/config.yaml"
  expect_setting daemon.port 4100 "file, $T/other/config.yaml:1"
  expect_setting paths.agor_home "$T/other" flag
  expect_setting daemon.socket_path "$T/other/run/agor.sock" default
'

test_case "--config names the file (relative to the working directory)" '
  printf "daemon:\n  port: 4200\n" > my.yaml && chmod 600 my.yaml
  expect_exit 0 "$AGOR" config show --config my.yaml
  expect_setting daemon.port 4200 "file, $T/my.yaml:2"
  expect_contains out "# config file: $T/my.yaml"
  AGOR_CONFIG_PATH="$T/my.yaml" expect_exit 0 "$AGOR" config show
  expect_setting daemon.port 4200 "file, $T/my.yaml:2"
'

# expect_config_error YAML STDERR-TEXT — config show exits 1, says STDERR-TEXT, prints nothing on stdout.
expect_config_error() {
  write_config "$1"
  expect_exit 1 "$AGOR" config show
  expect_empty out
  expect_contains err "$2"
}

test_case "an unknown key is an error naming the line and the known keys" '
  expect_config_error "daemon:
  port: 1
  prot: 2
" "config.yaml:3: daemon.prot: unknown key (known: host, port, unix_user, socket_path, tls_cert, tls_key, allowed_origins, max_connections, max_connections_per_ip, max_unauthenticated, auth_timeout_ms, fd_reserve, audit_refusals_window_ms, audit_refusals_max, wal_max_mb, db_size_alarm_mb, node_pair_per_minute, node_pair_pending_per_ip)"
  expect_config_error "demon: {}
" "config.yaml:1: demon: unknown key (known: paths, daemon, execution, agents)"
'

test_case "a value of the wrong type is an error naming the line and the key" '
  expect_config_error "daemon:
  port: abc
" "config.yaml:2: daemon.port: expected an integer 0..65535"
  expect_config_error "daemon:
  port: 70000
" "config.yaml:2: daemon.port: expected an integer 0..65535"
  expect_config_error "execution:
  worktree_rbac: yes
" "config.yaml:2: execution.worktree_rbac: expected true or false"
  expect_config_error "daemon:
  port: [1, 2]
" "config.yaml:2: daemon.port: expected an integer 0..65535, got a list"
  expect_config_error "daemon: 3030
" "config.yaml:1: daemon: expected a mapping"
  expect_config_error "paths:
  data_home: relative/dir
" "config.yaml:2: paths.data_home: expected an absolute path"
  expect_config_error "daemon:
  port: 1
  port: 2
" "config.yaml:3: daemon.port: duplicate key (first on line 2)"
  expect_config_error "- a
" "config.yaml:1: expected a mapping of settings"
'

test_case "a bad enum value names the allowed words" '
  expect_config_error "
execution:
  unix_user_mode: paranoid
" "config.yaml:3: execution.unix_user_mode: expected one of simple|insulated|strict|sandbox"
'

test_case "a YAML syntax error names the parser line" '
  expect_config_error "daemon:
  port: 1
   host: x
" "config.yaml:3: invalid YAML: "
  expect_config_error "daemon: {port: 1
" "config.yaml:2: invalid YAML: "
'

test_case "an unknown executor_command_template placeholder is named with its line" '
  expect_config_error "execution:
  executor_command_template: |
    kubectl run agor-{task_id} \\
      --image {image}
" "config.yaml:4: execution.executor_command_template: unknown placeholder {image}"
'

test_case "a bad environment value names the variable and the key" '
  AGOR_DAEMON_PORT=abc expect_exit 1 "$AGOR" config show
  expect_empty out
  expect_contains err "AGOR_DAEMON_PORT: daemon.port: expected an integer 0..65535"
  AGOR_HOME=relative expect_exit 1 "$AGOR" config show
  expect_contains err "AGOR_HOME: paths.agor_home: expected an absolute path"
'

test_case "--json prints one parseable object with typed values" '
  write_config "daemon: {port: 4000}
"
  AGOR_DAEMON_HOST=::1 expect_exit 0 "$AGOR" config show --json --set execution.fallback_to_unified=true
  expect_empty err
  [ "$(wc -l < out)" -eq 1 ] || fail "not one line"
  python3 -c "import json,sys; json.load(sys.stdin)" < out
  cat > check.py <<"EOF"
import json, sys
doc = json.load(sys.stdin)
assert doc["configFile"] == sys.argv[1], doc["configFile"]
assert doc["configFileFound"] is True
s = {x["key"]: x for x in doc["settings"]}
assert len(s) == 70, len(s)
assert s["execution.exec_env_allow"]["value"] == "LANG:LC_*:TZ:TERM:NO_COLOR:COLUMNS:LINES", s["execution.exec_env_allow"]
assert s["daemon.port"]["value"] == 4000 and s["daemon.port"]["source"] == "file"
assert s["daemon.port"]["file"] == sys.argv[1] and s["daemon.port"]["line"] == 1
assert s["daemon.host"]["value"] == "::1" and s["daemon.host"]["source"] == "env"
assert s["execution.fallback_to_unified"]["value"] is True and s["execution.fallback_to_unified"]["source"] == "flag"
assert s["execution.worktree_rbac"]["value"] is False
assert s["execution.executor_command_template"]["value"] is None
assert s["execution.timeout_ms"]["value"] == 300000 and s["execution.timeout_ms"]["source"] == "default"
assert "line" not in s["daemon.host"] and "file" not in s["execution.timeout_ms"]
EOF
  python3 check.py "$AGOR_HOME/config.yaml" < out
'

test_case "a config file named explicitly must exist" '
  expect_exit 1 "$AGOR" config show --config "$T/nope.yaml"
  expect_empty out
  expect_contains err "$T/nope.yaml: cannot open the config file named by --config"
  AGOR_CONFIG_PATH="$T/nope.yaml" expect_exit 1 "$AGOR" config show
  expect_contains err "named by AGOR_CONFIG_PATH"
'

test_case "a group- or world-writable config.yaml is refused with the fix" '
  write_config "daemon: {port: 4000}
"
  chmod 666 "$AGOR_HOME/config.yaml"
  expect_exit 1 "$AGOR" config show
  expect_empty out
  expect_contains err "writable by group or others (mode 0666); fix: chmod 600 $AGOR_HOME/config.yaml"
  chmod 620 "$AGOR_HOME/config.yaml"
  expect_exit 1 "$AGOR" config show
  chmod 644 "$AGOR_HOME/config.yaml"
  expect_exit 0 "$AGOR" config show
'

test_case --needs root "a config.yaml owned by another user is refused" '
  write_config "daemon: {port: 4000}
"
  chown 4242 "$AGOR_HOME/config.yaml"
  expect_exit 1 "$AGOR" config show
  expect_contains err "refusing a config file owned by uid 4242"
  expect_contains err "fix: chown"
'

# ---- agor config get / set -----------------------------------------------------------------------------

test_case "config set then get: round trip, comments, order and other lines kept byte for byte, mode 0600" '
  write_config "# my settings
daemon:
  # the port we use
  port: 4000    # inline comment
  host: 127.0.0.1

execution:
  executor_pool:
    max_executors: 3   # keep
"
  cp "$AGOR_HOME/config.yaml" before.yaml
  expect_exit 0 "$AGOR" config set daemon.port 5000
  expect_exit 0 "$AGOR" config get daemon.port
  expect_eq "$(cat out)" 5000
  sed "s/port: 4000 /port: 5000 /" before.yaml | cmp - "$AGOR_HOME/config.yaml" || fail "more than the value changed"
  expect_mode "$AGOR_HOME/config.yaml" 600
  expect_exit 0 "$AGOR" config set execution.executor_pool.idle_timeout_ms 1234
  expect_exit 0 "$AGOR" config set agents.codex.model "gpt #5: \"quoted\""
  expect_exit 0 "$AGOR" config get --json agents.codex.model
  expect_json out value "gpt #5: \"quoted\""
  expect_json out source file
  expect_json out file "$AGOR_HOME/config.yaml"
  expect_exit 0 "$AGOR" config get execution.executor_pool.idle_timeout_ms
  expect_eq "$(cat out)" 1234
  expect_exit 0 "$AGOR" config get execution.executor_pool.max_executors
  expect_eq "$(cat out)" 3
  grep -q "^    max_executors: 3   # keep$" "$AGOR_HOME/config.yaml" || fail "a sibling line changed"
  grep -q "^  # the port we use$" "$AGOR_HOME/config.yaml" || fail "a comment was lost"
  expect_exit 0 "$AGOR" config show
  expect_setting execution.executor_pool.idle_timeout_ms 1234 "file, $AGOR_HOME/config.yaml:9"
'

test_case "config get: the effective value and its source (env overrides what set wrote)" '
  write_config "daemon:
  port: 4000
"
  AGOR_DAEMON_PORT=4100 "$AGOR" config get --json daemon.port > out || fail "get failed"
  expect_json out value 4100
  expect_json out source env
  expect_json out env AGOR_DAEMON_PORT
  expect_exit 0 "$AGOR" config get execution.worktree_rbac
  expect_eq "$(cat out)" false
  expect_exit 0 "$AGOR" config get execution.executor_command_template
  expect_eq "$(cat out)" null
  expect_exit 1 "$AGOR" config get daemon.nope
  expect_contains err "unknown setting"
  expect_empty out
'

test_case "config set: missing file and sections are created (0600); an empty value of a nullable key is null" '
  rm -rf "$AGOR_HOME"; mkdir -m 700 "$AGOR_HOME"
  expect_exit 0 "$AGOR" config set execution.sandbox.memory_max_mb 256
  expect_mode "$AGOR_HOME/config.yaml" 600
  expect_exit 0 "$AGOR" config set execution.executor_command_template "kubectl run -i {unix_user}"
  expect_exit 0 "$AGOR" config get execution.sandbox.memory_max_mb
  expect_eq "$(cat out)" 256
  expect_exit 0 "$AGOR" config set execution.executor_command_template ""
  expect_exit 0 "$AGOR" config get --json execution.executor_command_template
  expect_json out value null
  expect_exit 0 "$AGOR" config show
'

test_case "config set: a bad key, value, type or file is refused naming file and key, and nothing is written" '
  write_config "# keep me
daemon: {port: 4000}
execution:
  unix_user_mode: strict
"
  cp "$AGOR_HOME/config.yaml" before.yaml
  ls -i "$AGOR_HOME/config.yaml" > inode.before
  expect_exit 1 "$AGOR" config set daemon.port abc
  expect_contains err "$AGOR_HOME/config.yaml: daemon.port: expected an integer"
  expect_exit 1 "$AGOR" config set daemon.nosuch 1
  expect_contains err "unknown setting \"daemon.nosuch\""
  expect_exit 1 "$AGOR" config set execution.unix_user_mode bogus
  expect_contains err "execution.unix_user_mode: expected one of simple|insulated|strict"
  expect_exit 1 "$AGOR" config set daemon.host example.org
  expect_contains err "config.yaml:2: daemon.host: its section is written in flow style"
  expect_exit 1 "$AGOR" config set execution.worktree_rbac false
  expect_contains err "the edited file would not load"
  cmp before.yaml "$AGOR_HOME/config.yaml" || fail "a refused set changed the file"
  ls -i "$AGOR_HOME/config.yaml" | cmp - inode.before || fail "a refused set replaced the file"
  [ -z "$(ls "$AGOR_HOME" | grep -v "^config.yaml$")" ] || fail "a temporary file was left: $(ls "$AGOR_HOME")"
  expect_exit 2 "$AGOR" config set daemon.port
  expect_contains err "usage: agor config set KEY VALUE"
  ln -s before.yaml "$AGOR_HOME/link.yaml"
  expect_exit 1 "$AGOR" config set --config "$AGOR_HOME/link.yaml" daemon.port 1
  expect_contains err "symlink"
  chmod 620 "$AGOR_HOME/config.yaml"
  expect_exit 1 "$AGOR" config set daemon.port 1
  chmod 600 "$AGOR_HOME/config.yaml"
  cmp before.yaml "$AGOR_HOME/config.yaml" || fail "a refused set changed the file"
'

test_case "config set: concurrent writers of different keys all land" '
  write_config "daemon:
  port: 4000
"
  for i in 1 2 3 4 5 6; do "$AGOR" config set agents.codex.model "m$i" > /dev/null & done
  "$AGOR" config set execution.timeout_ms 61000 & "$AGOR" config set daemon.host 10.0.0.1 & "$AGOR" config set agents.gemini.model g1 &
  wait
  expect_exit 0 "$AGOR" config show --json
  for kv in execution.timeout_ms=61000 daemon.host=10.0.0.1 agents.gemini.model=g1 daemon.port=4000; do
    "$AGOR" config get "${kv%%=*}" > got; expect_eq "$(cat got)" "${kv#*=}"
  done
  [ "$(grep -c "model:" "$AGOR_HOME/config.yaml")" = 2 ] || { cat "$AGOR_HOME/config.yaml"; fail "duplicate keys"; }
'

test_case "usage errors exit 2; --help exits 0" '
  expect_exit 2 "$AGOR" config
  expect_contains err "missing subcommand"
  expect_empty out
  expect_exit 2 "$AGOR" config show --frobnicate
  expect_contains err "unknown option"
  expect_empty out
  expect_exit 2 "$AGOR" config show --port
  expect_contains err "--port needs an argument"
  expect_exit 2 "$AGOR" config show --port 70000
  expect_contains err "--port: daemon.port: expected an integer 0..65535"
  expect_exit 2 "$AGOR" config show --set nosuch.key=1
  expect_contains err "--set: unknown setting \"nosuch.key\""
  expect_exit 2 "$AGOR" config show --set daemon.port
  expect_exit 2 "$AGOR" config frob
  expect_exit 0 "$AGOR" config --help
  expect_contains out "Usage: agor config show"
  expect_exit 0 "$AGOR" config show --help
  expect_contains out "--set KEY=VALUE"
'

test_case "config set before the first daemon start makes AGOR_HOME as the daemon would; never another directory" '
  export HOME="$PWD/fresh" AGOR_HOME="$PWD/fresh/.agor"
  mkdir -p "$HOME"
  expect_exit 0 "$AGOR" config set daemon.port 4000
  expect_mode "$AGOR_HOME" 700
  expect_mode "$AGOR_HOME/config.yaml" 600
  for d in logs cache run; do expect_mode "$AGOR_HOME/$d" 700; done
  expect_exit 0 "$AGOR" config get daemon.port
  expect_contains out 4000
  expect_exit 1 "$AGOR" config set daemon.port 4001 --config "$PWD/nowhere/sub/config.yaml"
  expect_contains err "nowhere/sub"
  [ ! -e nowhere ] || fail "config set made a directory for an explicit --config"
'

test_done
