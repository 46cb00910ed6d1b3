# test/prompt-scene.sh — the prompt tests' scene (t0080-prompt, t0058-prompt-crash, t0086-journey), sourced
# after test/lib.sh and test/agent-cli.sh: the scripted Anthropic and OpenAI endpoints, a config that points the real
# Claude Code and Codex at them, and the helpers that make a session, follow a task and find the agent's processes.
# The daemon runs as root in insulated mode: every executor (and so the agent) runs as agor_executor.
PROMPT_SCENE='
  [ -n "${TRACE:-}" ] && set -x
  KEY=sk-ant-SECRET-KEY-4242 OPENAI_KEY=sk-openai-SECRET-7777
  python3 "$TEST_TOP/test/helpers/anthropic-server.py" port server.log > /dev/null 2>&1 &
  server_pid=$!
  python3 "$TEST_TOP/test/helpers/openai-server.py" openai-port openai.log > /dev/null 2>&1 &
  openai_pid=$!
  for i in $(seq 1 400); do [ -s port ] && [ -s openai-port ] && break; sleep 0.05; done
  [ -s port ] && [ -s openai-port ] || fail "the scripted endpoints did not start"
  mkdir -p data && chmod 755 "$T" data
  write_config() { # EXTRA_EXECUTION_YAML
    printf "paths:\n  data_home: %s/data\ndaemon:\n  socket_path: /run/agor/agor.sock\nexecution:\n  unix_user_mode: insulated\n  permission_timeout_ms: 20000\n%s\nagents:\n  claude_code:\n    command: %s\n    base_url: http://127.0.0.1:%s\n  codex:\n    command: %s\n    base_url: http://127.0.0.1:%s/v1\n    model: gpt-5.5\n" \
      "$T" "${1:-}" "${AGENT_COMMAND:-$CLAUDE}" "$(cat port)" "${CODEX_COMMAND:-$CODEX}" "$(cat openai-port)" > config.yaml
    chmod 600 config.yaml
  }
  DAEMON_SOCKET=/run/agor/agor.sock
  scene_cleanup() {
    kill $server_pid $openai_pid 2> /dev/null || true
    rmdir /sys/fs/cgroup/*/agor/agor_executor /sys/fs/cgroup/agor/agor_executor 2> /dev/null || true
  }
  start_scene_daemon() { start_daemon --config "$PWD/config.yaml"; }
  a() { "$AGOR" "$@" --config "$PWD/config.yaml"; }
  prepare_session() { # [PERMISSION_MODE [TOOL]]
    insulated_agent_host
    start_scene_daemon
    a repo clone "$PWD/src" --json > clone.json || { cat clone.json daemon.log; fail "clone failed"; }
    repo=$(json_get clone.json repo.id)
    a worktree add "$repo" wt1 --branch feat --create-branch --json > wt.json || { cat wt.json; fail "worktree add failed"; }
    wt=$(json_get wt.json worktree.id)
    a worktree get "$wt" --json > wt.json && wt_path=$(json_get wt.json path)
    a session create "$wt" --tool "${2:-claude-code}" --permission-mode "${1:-default}" --json > session.json
    session=$(json_get session.json id)
    echo "$KEY" | a api-key set anthropic > /dev/null
    echo "$OPENAI_KEY" | a api-key set openai > /dev/null
    a api-key list > keys.out && ! grep -q "SECRET" keys.out || fail "api-key list shows a value"
  }
  task_of() { sed -n "s/^task \([0-9a-f]*\)$/\1/p" "$1" | head -1; }
  wait_status() { # TASK STATUS
    for i in $(seq 1 200); do
      a task get "$1" --json > task.json 2>/dev/null && [ "$(json_get task.json status)" = "$2" ] && return 0; sleep 0.1
    done
    cat task.json; fail "task $1 did not become $2"
  }
  wait_message() { # TASK TYPE
    for i in $(seq 1 300); do rpc messages.list "{\"task_id\":\"$1\"}" | grep -q "\"message_type\": *\"$2\"" && return 0; sleep 0.1; done
    fail "no $2 message for task $1"
  }
  # start_streaming_prompt SECONDS OUT ERR — a slow prompt in the background, streaming once this returns:
  # $task is its task, $prompt_pid the agor process itself (not a subshell), so signals reach it.
  start_streaming_prompt() {
    "$AGOR" prompt "$session" "SLOW $1" --no --config "$PWD/config.yaml" > "$2" 2> "$3" &
    prompt_pid=$!
    for i in $(seq 1 100); do task=$(task_of "$3"); [ -n "$task" ] && break; sleep 0.1; done
    wait_message "$task" text_delta
  }
  mine() { for p in $(pgrep -u agor_executor); do case $(readlink /proc/$p/cwd 2>/dev/null) in "$T"*) echo $p;; esac; done; }
  no_agent_left() { # processes of this case (they all work under $T) are gone
    for i in $(seq 1 50); do [ -z "$(mine)" ] && return 0; sleep 0.1; done
    ps -fp "$(mine | tr "\n" ,)0"; fail "processes of agor_executor survived"
  }
'

# prompt_scratch BODY — BODY after PROMPT_SCENE, as root in a private mount namespace (users made there never leak).
prompt_scratch() { in_scratch_system "TEST_TOP='$TEST_TOP' CLAUDE='$CLAUDE' CODEX='$CODEX' TRACE='${TRACE:-}'
$PROMPT_SCENE
$1"; }
