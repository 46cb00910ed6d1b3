#!/usr/bin/env bash
# t0080-prompt — `agor prompt` end to end with the real Claude Code and Codex CLIs (npm) against scripted
# Anthropic Messages / OpenAI Responses endpoints: tool use through the daemon's permission requests (approved / denied), messages and usage in the
# DB, conversation resume, key secrecy (/proc environ and cmdline), cancel, Ctrl-C, timeout, executor kill,
# agent crash and garbage output.
. "$(dirname "$0")/../lib.sh"

. "$TEST_TOP/test/agent-cli.sh"   # $CLAUDE and $CODEX, pinned, installed once

. "$TEST_TOP/test/prompt-scene.sh" # SCENE and scratch

APPROVED='
    write_config; prepare_session
    a prompt "$session" "please RUN: echo hi > made.txt" --yes > out 2> err || { cat out err daemon.log; fail "prompt failed"; }
    expect_contains out "[tool] Bash"
    expect_contains out "[permission] Bash allowed"
    expect_contains out "All done."
    expect_contains out "[completed]"
    [ "$(stat -c %U "$wt_path/made.txt")" = agor_executor ] || fail "made.txt is not owned by agor_executor"
    task=$(task_of err)
    rpc messages.list "{\"task_id\":\"$task\"}" > msgs
    python3 - msgs <<PY
import json, sys
rows = json.load(open(sys.argv[1]))["result"]
types = [r["message_type"] for r in rows]
ids = [r["id"] for r in rows]
assert ids == sorted(ids), ids
order = [t for t in types if t in ("tool_use", "tool_result", "text", "result")]
assert order == ["tool_use", "tool_result", "text", "result"], types
assert "text_delta" in types and types[0] == "system", types
PY
    a task get "$task" --json > task.json
    expect_json task.json status completed
    python3 -c "import json,sys; t=json.load(open(\"task.json\")); u=json.loads(t[\"token_usage\"]); assert u[\"input_tokens\"] > 0 and u[\"output_tokens\"] > 0, u"
    grep -q "\"x-api-key\": \"$KEY\"" server.log || fail "the key never reached the agent"
    a audit list --json 2>/dev/null > audit.json || rpc audit.list > audit.json
    grep -q "request_permission" audit.json || fail "no permission decision in the audit log"
    grep -q "\"approved\"" audit.json || fail "no approved decision in the audit log"
    ! grep -rq "$KEY" daemon.log out err audit.json || fail "the key leaked into a log or the output"
    printf "y\n" > answer
    script -qec "$AGOR prompt $session \"please RUN: echo tty > tty.txt\" --config $PWD/config.yaml" /dev/null < answer > tty.out || { cat tty.out; fail "prompt on a terminal failed"; }
    expect_contains tty.out "Allow? [y/N]"
    [ -e "$wt_path/tty.txt" ] || { cat tty.out; fail "the y typed on the terminal did not approve"; }
    # a gateway run in the session: the agent is told about it in its next prompt, and only then
    "$AGOR" approvals set --security full --ask off > /dev/null
    rpc exec.run "{\"host\":\"gateway\",\"worktree_id\":\"$wt\",\"session_id\":\"$session\",\"security\":\"full\",\"argv\":[\"/bin/echo\",\"from-the-gateway\"]}" > gw.reply
    expect_json gw.reply result.stdout from-the-gateway
    : > server.log
    a prompt "$session" "say hello" --yes > out2 2> err2 || { cat out2 err2; fail "the prompt after the gateway run failed"; }
    grep -q "System events since your last prompt" server.log || { cat server.log; fail "the agent was not told about the run"; }
    grep -q "exec.finished on gateway.*from-the-gateway" server.log || fail "the run'"'"'s outcome is not in the note"
    : > server.log
    a prompt "$session" "say hello again" --yes > out3 2> err3 || { cat out3 err3; fail "the third prompt failed"; }
    python3 - <<PY || fail "the events were shown to the agent twice"
import json
def newest_text(req):  # the newest user text, as the scripted server reads it (older turns are history)
    users = [m for m in req.get("messages", []) if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return texts[-1] if texts else ""
newest = [newest_text(json.loads(line)["body"]) for line in open("server.log") if line.strip()]
assert newest and not any("System events since your last prompt" in t for t in newest), newest
PY
'

DENIED='
    write_config; prepare_session
    a prompt "$session" "please RUN: echo no > denied.txt" --no > out 2> err || { cat out err; fail "prompt failed"; }
    expect_contains out "[permission] Bash denied"
    expect_contains out "[tool error]"
    expect_contains out "[tool error] denied by "   # the decider, by name (the daemon'"'"'s own user), not its id
    ! grep -Eq "denied by [0-9a-f]{32}" out || { cat out; fail "the decider is shown as a user id"; }
    [ ! -e "$wt_path/denied.txt" ] || fail "a denied command ran"
    a session get "$session" --json > session.json && agent_session=$(json_get session.json agent_session_id)
    [ -n "$agent_session" ] && [ "$agent_session" != null ] || fail "the agent session id was not kept"
    a prompt "$session" "say hello" --no > out2 2> err2
    expect_contains out2 "Hello from the scripted model."
    tail -1 server.log | grep -q "echo no > denied.txt" || fail "the second prompt did not resume the conversation"
    rpc audit.list > audit.json
    grep -q "denied" audit.json || fail "no denied decision in the audit log"
'

SECRECY='
    write_config; prepare_session
    start_streaming_prompt 6 out err
    agent=$(pgrep -u agor_executor -f "stream-json" | head -1)
    [ -n "$agent" ] || fail "the agent process was not found"
    tr "\0" "\n" < /proc/$agent/environ | grep -qx "ANTHROPIC_API_KEY=agor-sentinel-[0-9a-f]\{32\}" || fail "the agent has no sentinel"
    ! tr "\0" "\n" < /proc/$agent/environ | grep -q "$KEY" || fail "the agent holds the real key (the egress proxy swaps it)"
    for pid in $(pgrep -f "executor --stdin") $agent $(pgrep -f "mcp-permission"); do
      [ -r /proc/$pid/cmdline ] || continue
      ! tr "\0" "\n" < /proc/$pid/cmdline | grep -q "$KEY" || fail "the key is in the argv of $pid"
      ! tr "\0" "\n" < /proc/$pid/cmdline | grep -q "eyJ" || fail "a token is in the argv of $pid"
    done
    executors=$(pgrep -f "executor --stdin")
    [ -n "$executors" ] || fail "no executor process found"
    for pid in $executors; do
      ! tr "\0" "\n" < /proc/$pid/environ | grep -q "$KEY" || fail "the key is in the environment of executor $pid"
    done
    ! tr "\0" "\n" < /proc/$agent/environ | grep -q "eyJ" || fail "the session token reached the agent"
    for f in /tmp/agor-prompt-*/mcp.json; do [ -e "$f" ] && ! grep -q "eyJ" "$f"; done
    wait $prompt_pid
    ! grep -q "$KEY" daemon.log out err || fail "the key leaked into a log"
'

CANCEL='
    write_config; prepare_session
    start_streaming_prompt 30 out err
    a task cancel "$task"
    wait_status "$task" cancelled
    prompt_exit=0; wait $prompt_pid || prompt_exit=$?; expect_eq "$prompt_exit" 1
    no_agent_left
    start_streaming_prompt 30 out2 err2
    kill -INT $prompt_pid
    prompt_exit=0; wait $prompt_pid || prompt_exit=$?; expect_eq "$prompt_exit" 1
    expect_contains err2 "cancelling task"
    wait_status "$task" cancelled
    no_agent_left
'

TIMEOUT='
    write_config "  timeout_ms: 3000"; prepare_session
    expect_exit 1 a prompt "$session" "SLOW 30" --no
    a task list --json > tasks.json && task=$(json_get tasks.json 0.id)
    a task get "$task" --json > task.json
    expect_json task.json status failed
    grep -q TIMEOUT task.json || { cat task.json; fail "not a timeout"; }
    no_agent_left
    write_config; stop_daemon; start_scene_daemon
    start_streaming_prompt 30 out err
    for p in $(mine); do tr "\0" " " < /proc/$p/cmdline 2> /dev/null | grep -q "executor --stdin" && kill -KILL $p; done   # this case'"'"'s only
    prompt_exit=0; wait $prompt_pid || prompt_exit=$?; expect_eq "$prompt_exit" 1
    a task get "$task" --json > task.json
    expect_json task.json status failed
    no_agent_left
'

ASKING='
    write_config; prepare_session
    rpc sessions.prompt "{\"session_id\":\"$session\",\"prompt\":\"please RUN: echo x > nobody.txt\"}" > reply
    task=$(json_get reply result.task_id)
    wait_status "$task" completed
    [ ! -e "$wt_path/nobody.txt" ] || fail "a command ran although nobody could be asked"
    rpc audit.list > audit.json
    grep -q "nobody who may decide is connected" audit.json || fail "the fail-closed decision is not audited"
    useradd --groups agor_users mallory
    rpc users.create "{\"name\":\"mallory\",\"unix_username\":\"mallory\"}" > /dev/null
    write_config "  permission_timeout_ms: 1500" && sed -i "/permission_timeout_ms: 20000/d" config.yaml
    stop_daemon; start_scene_daemon
    # The answer must reach the daemon within the 1.5 s timeout, under load too: both listeners are running
    # and subscribed before the prompt, the watcher hands the request id over in a file, and mallory, already
    # connected, answers at once (no interpreter start-up, su or parsing in between).
    python3 - /run/agor/agor.sock owner-events > /dev/null 2>&1 <<PY &
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"events.subscribe\",\"params\":{}}\n")
with open(sys.argv[2], "w") as out:
    for line in s.makefile():
        out.write(line); out.flush()
        event = json.loads(line).get("params") or {}
        if event.get("type") == "permission.requested":
            with open("request-id.new", "w") as f:
                f.write(event["data"]["request_id"])
            os.rename("request-id.new", "request-id")
PY
    watcher=$!
    su mallory -s /bin/sh -c "python3 -u - /run/agor/agor.sock $PWD/request-id" > mallory-events 2>&1 <<PY &
import json, os, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"events.subscribe\",\"params\":{}}\n")
lines = s.makefile()
print(lines.readline(), end="")
deadline = time.time() + 60
while not os.path.exists(sys.argv[2]):
    if time.time() > deadline:
        sys.exit("no permission request to answer")
    time.sleep(0.01)
answer = {"jsonrpc": "2.0", "id": 2, "method": "permissions.respond",
          "params": {"request_id": open(sys.argv[2]).read(), "approved": True}}
s.sendall(json.dumps(answer).encode() + b"\n")
for line in lines:
    print(line, end="")
PY
    spy=$!
    for i in $(seq 1 200); do grep -q subscribed owner-events && grep -q subscribed mallory-events && break; sleep 0.1; done
    grep -q subscribed owner-events || fail "the watcher never subscribed"
    grep -q "\"id\": *1" mallory-events || { cat mallory-events; fail "the other user never subscribed"; }
    rpc sessions.prompt "{\"session_id\":\"$session\",\"prompt\":\"please RUN: echo x > unanswered.txt\"}" > reply
    task=$(json_get reply result.task_id)
    for i in $(seq 1 300); do grep -q "\"id\": *2" mallory-events && break; sleep 0.1; done
    grep "\"id\": *2" mallory-events | grep -q NOT_FOUND || { cat mallory-events; fail "another user answered the permission request (it must look like an unknown id)"; }
    wait_status "$task" completed
    kill $watcher $spy 2>/dev/null || true
    [ ! -e "$wt_path/unanswered.txt" ] || fail "an unanswered request ran the command"
    ! grep -q "permission.requested" mallory-events || fail "another user saw the permission request"
    grep -q "\"decider\": *\"timeout\"" owner-events || grep -q "\"decider\":\"timeout\"" owner-events || { cat owner-events; fail "the request did not time out"; }
'

CODEX_E2E='
    write_config; prepare_session default codex
    a prompt "$session" "please RUN: echo hi > made.txt" --yes > out 2> err || { cat out err; fail "prompt failed"; }
    expect_contains out "[tool] command_execution"
    expect_contains out "All done."
    expect_contains out "[completed]"
    [ "$(stat -c %U "$wt_path/made.txt")" = agor_executor ] || { cat out; fail "made.txt is not owned by agor_executor"; }
    task=$(task_of err)
    a task get "$task" --json > task.json
    python3 -c "import json; t=json.load(open(\"task.json\")); u=json.loads(t[\"token_usage\"]); assert u[\"input_tokens\"] >= 42, u"
    grep -q "\"authorization\": \"Bearer $OPENAI_KEY\"" openai.log || grep -qi "Bearer $OPENAI_KEY" openai.log || fail "the key never reached codex"
    a session get "$session" --json > session.json && thread=$(json_get session.json agent_session_id)
    [ -n "$thread" ] && [ "$thread" != null ] || fail "the codex thread id was not kept"
    a prompt "$session" "say hello" --no > out2 2> err2 || { cat out2 err2; fail "the resumed prompt failed"; }
    expect_contains out2 "Hello from the scripted model."
    tail -1 openai.log | grep -q "echo hi > made.txt" || fail "the second prompt did not resume the codex thread"
    ! grep -rq "$OPENAI_KEY" daemon.log out err out2 err2 || fail "the key leaked into a log or the output"
'

# This one uses a stand-in for the CLI (it must crash and babble on purpose): the real CLI is not needed.
CRASH='
    mkdir -p agent  # the directory of the CLI is shown to the run: not the one holding the data home
    printf "#!/bin/sh\necho this is not json\necho \"{\\\"type\\\":\\\"system\\\",\\\"subtype\\\":\\\"init\\\",\\\"session_id\\\":\\\"s1\\\"}\"\necho \"boom: out of cheese\" >&2\nexit 3\n" > agent/crash.sh
    chmod 755 agent/crash.sh
    AGENT_COMMAND="$PWD/agent/crash.sh" write_config; prepare_session
    expect_exit 1 a prompt "$session" "anything" --no > out 2> err
    expect_contains out "[garbage] this is not json"
    expect_contains err "exited with status 3"
    task=$(task_of err)
    a task get "$task" --json > task.json
    expect_json task.json status failed
    grep -q "out of cheese" task.json || { cat task.json; fail "the stderr tail is not on the task"; }
    printf "#!/bin/sh\necho garbage only\n" > agent/babble.sh && chmod 755 agent/babble.sh
    AGENT_COMMAND="$PWD/agent/babble.sh" write_config; stop_daemon; start_scene_daemon
    expect_exit 1 a prompt "$session" "anything" --no > out 2> err
    expect_contains err "without a final result"
    # an error Codex retries by itself is a warning, not an error; one it does not retry stays an error
    printf "#!/bin/sh\nread line\necho '"'"'{\"jsonrpc\":\"2.0\",\"method\":\"error\",\"params\":{\"error\":{\"message\":\"reconnecting 1/5\"},\"willRetry\":true}}'"'"'\necho '"'"'{\"jsonrpc\":\"2.0\",\"method\":\"error\",\"params\":{\"error\":{\"message\":\"gave up\"},\"willRetry\":false}}'"'"'\nexit 3\n" > agent/codex.sh
    chmod 755 agent/codex.sh
    CODEX_COMMAND="$PWD/agent/codex.sh" write_config; stop_daemon; start_scene_daemon
    a session create "$wt" --tool codex --json > codex-session.json
    expect_exit 1 a prompt "$(json_get codex-session.json id)" "anything" --no > out 2> err
    expect_contains out "[warning] reconnecting 1/5"
    expect_contains out "[error] gave up"
    expect_not_contains out "[error] reconnecting"
'

SANDBOXED='
    write_config; prepare_session bypassPermissions
    echo private > /home/agor_executor/private.txt && chown agor_executor /home/agor_executor/private.txt
    probe="cat $AGOR_HOME/config.yaml && echo READ-CONFIG; cat /home/agor_executor/private.txt && echo READ-HOME;"
    probe="$probe ls $T && echo LISTED-TEST; echo x > $T/escape.txt && echo WROTE-OUTSIDE; mkdir \$(git rev-parse --git-common-dir)/hooks/x && echo HOOK;"
    probe="$probe tmux -L agor-agor_executor-$(printf %s "$T/data" | sha256sum | cut -c1-8) ls && echo TMUX; hostname; echo inside > in-worktree.txt;"
    probe="$probe echo hooks > \$HOME/.claude/settings.json && echo WROTE-STATE"
    a prompt "$session" "please RUN: { $probe; } > probe.txt 2>&1" > out 2> err || { cat out err daemon.log; fail "prompt failed"; }
    expect_contains out "[completed]"
    cat "$wt_path/probe.txt"
    for leak in READ-CONFIG READ-HOME LISTED-TEST WROTE-OUTSIDE HOOK TMUX; do
      ! grep -q "^$leak\$" "$wt_path/probe.txt" || fail "the agent could: $leak"
    done
    grep -q "^agor-sandbox\$" "$wt_path/probe.txt" || fail "the agent ran outside the sandbox"
    [ ! -e "$T/escape.txt" ] && [ -e "$wt_path/in-worktree.txt" ] || fail "writes were not kept to the worktree"
    grep -q "^WROTE-STATE\$" "$wt_path/probe.txt" || fail "the agent could not write its own state"
    [ ! -e /home/agor_executor/.claude/settings.json ] || fail "the agent wrote the real ~/.claude (read by the CLI outside)"
    ls "$T"/data/agent-state/agor_executor/*/.claude/settings.json /home/agor_executor/.agor/agent-state/*/.claude/settings.json 2> /dev/null | grep -q . || fail "the agent state is not agor'"'"'s (one per worktree)"
    a task get "$(task_of err)" --json > task.json
    python3 - task.json <<PY
import json, sys
t = json.load(open(sys.argv[1]))
sb = json.loads(t["result"])["sandbox"]
assert sb["enabled"] is True and sb["network"] == "proxy", sb
assert all("/agor/agor_executor/run-" in p for p in sb["cgroup"]["paths"]) and sb["cgroup"]["pidsMax"] == 1024, sb["cgroup"]
assert any(p.endswith("/node_modules") for p in sb["mounts"]["readOnly"]), sb["mounts"]
assert "/home/agor_executor/.claude" in sb["mounts"]["readWrite"], sb["mounts"]
PY
    a prompt "$session" "say hello" > out2 2> err2 || { cat out2 err2; fail "the resumed prompt failed"; }
    tail -1 server.log | grep -q "probe.txt" || fail "the sandboxed agent did not keep its session for resume"
'


if ! is_root; then
  test_skip "Claude Code end to end and agent crashes" "needs root (users are made in a private mount namespace)"
else
  if [ ! -x "$CLAUDE" ] || [ ! -x "$CODEX" ]; then
    test_skip "Claude Code and Codex end to end" "the npm registry is unreachable: the agent CLIs are not installed"
  else
    test_case "a tool use approved through the daemon writes the file as the execution user; messages and usage are kept" 'scratch "$APPROVED"'
    test_case "a denied tool use runs nothing; the next prompt resumes the conversation" 'scratch "$DENIED"'
    test_case "attack: the API key and the session token stay out of the executor environment, every argv and the MCP config" 'scratch "$SECRECY"'
    test_case "agor task cancel and Ctrl-C end the agent; the task is cancelled and nothing is left running" 'scratch "$CANCEL"'
    test_case "a timeout, and a killed executor, end the task failed with the reason; the agent dies too" 'scratch "$TIMEOUT"'
    test_case "attack: nobody to ask, an unanswered request and another user answering all end in deny" 'scratch "$ASKING"'
    test_case "attack: the agent and its tools run in the sandbox (no config, home, test dir, hooks, tmux); resume still works" 'scratch "$SANDBOXED"'
    test_case "codex: a command runs in the worktree as the execution user; usage, thread resume, key kept out of logs" 'scratch "$CODEX_E2E"'
  fi
  test_case "an agent that crashes or emits garbage ends the task failed with the reason and its stderr" 'scratch "$CRASH"'
fi

test_case "prompt payloads: the token and daemon URL are required; --dry-run plans without running" '
  mkdir -p "$AGOR_HOME/worktrees/w"
  executor "{\"command\":\"prompt\",\"params\":{\"sessionId\":\"s\",\"taskId\":\"t\",\"prompt\":\"p\",\"tool\":\"claude-code\",\"cwd\":\"$AGOR_HOME/worktrees/w\"}}"
  expect_error INVALID_PAYLOAD 2
  expect_json out error.details.path sessionToken
  executor "{\"command\":\"prompt\",\"params\":{\"sessionId\":\"s\",\"taskId\":\"t\",\"prompt\":\"p\",\"tool\":\"gpt\",\"cwd\":\"$AGOR_HOME/worktrees/w\"},\"sessionToken\":\"x\",\"daemonUrl\":\"unix:/nonexistent\"}"
  expect_error INVALID_PAYLOAD 2
  "$AGOR" executor --stdin --dry-run > out <<< "{\"command\":\"prompt\",\"params\":{\"sessionId\":\"s\",\"taskId\":\"t\",\"prompt\":\"p\",\"tool\":\"codex\",\"cwd\":\"$AGOR_HOME/worktrees/w\"},\"sessionToken\":\"x\",\"daemonUrl\":\"unix:/nonexistent\"}"
  expect_json out data.plan.1.step prompt
  expect_json out data.plan.1.tool codex
  expect_json out data.plan.1.sandbox.enabled true
  expect_json out data.plan.1.sandbox.network proxy
  executor "{\"command\":\"prompt\",\"params\":{\"sessionId\":\"s\",\"taskId\":\"t\",\"prompt\":\"p\",\"tool\":\"codex\",\"cwd\":\"$AGOR_HOME/worktrees/w\"},\"sessionToken\":\"x\",\"daemonUrl\":\"unix:/nonexistent\"}"
  expect_error SYSTEM_ERROR 1 || expect_error INTERNAL 1
  expect_contains out "connecting to the daemon"
'

test_done
