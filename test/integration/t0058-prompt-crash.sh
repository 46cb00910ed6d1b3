#!/usr/bin/env bash
# t0058-prompt-crash — kill -9 of the daemon and, separately, of the executor at every named step of a prompt with
# the real Claude Code against the scripted endpoint (docs/recovery.md): the task recorded and running, the agent
# started, its first message sent and stored, a permission asked on both sides, the outcome concluded and recorded,
# the ending's commit. After each (the daemon restarted when it was the one killed): PRAGMA integrity_check is ok,
# `agor audit verify` passes, no task is left queued or running, the killed prompt's task ended with its reason, no
# agent process is left, and the session still prompts. The steps come from lib/fault.h's seam (the ASan build only).
. "$(dirname "$0")/../lib.sh"

. "$TEST_TOP/test/agent-cli.sh"    # $CLAUDE and $CODEX, pinned, installed once
. "$TEST_TOP/test/prompt-scene.sh" # PROMPT_SCENE, prompt_scratch: the endpoints, the config, the helpers

CRASHES='
  write_config; prepare_session
  stop_daemon
  touch trace && chmod 666 trace # the executor runs as agor_executor
  export AGOR_FAULT_TRACE=$PWD/trace
  sql() { python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10); r = c.execute(sys.argv[2]).fetchall(); print(\"\" if not r or r[0][0] is None else r[0][0])" "$AGOR_HOME/agor.db" "$1"; }
  # stopped_pid — the pid the armed step stopped (SIGSTOP), once it is stopped; empty after 30 s.
  stopped_pid() {
    local pid=""
    for _ in $(seq 1 600); do
      pid=$(awk "\$NF == \"stop\" { print \$2; exit }" trace)
      [ -n "$pid" ] && [ "$(awk "{ print \$3 }" "/proc/$pid/stat" 2> /dev/null)" = T ] && { echo "$pid"; return 0; }
      sleep 0.05
    done
  }
  # settled WHAT — no task is queued or running (within 20 s).
  settled() {
    for _ in $(seq 1 400); do
      [ "$(sql "SELECT count(*) FROM tasks WHERE status IN ('"'"'queued'"'"','"'"'running'"'"')")" = 0 ] && return 0
      sleep 0.05
    done
    sql "SELECT group_concat(id || '"'"' '"'"' || status) FROM tasks WHERE status IN ('"'"'queued'"'"','"'"'running'"'"')"
    fail "$1: a task stayed queued or running"
  }
  # consistent WHAT — the database whole, the audit chain verified, no task left, every ended-badly task with its reason.
  consistent() {
    [ "$(sql "PRAGMA integrity_check")" = ok ] || fail "$1: integrity_check: $(sql "PRAGMA integrity_check")"
    a audit verify > verify.out 2>&1 || { cat verify.out; fail "$1: audit verify failed"; }
    settled "$1"
    [ "$(sql "SELECT count(*) FROM tasks WHERE status IN ('"'"'failed'"'"','"'"'cancelled'"'"') AND coalesce(error, '"'"''"'"') = '"'"''"'"'")" = 0 ] ||
      fail "$1: a task ended badly without its reason"
  }
  prompt() { a prompt "$session" "$1" --yes; }

  # start_idle — the daemon, once the tasks of its start (a tmux.close) are done: the prompt comes after them.
  start_idle() { start_scene_daemon; settled "the start"; }
  # the prompt once, traced: its steps. The daemon counts a step'"'"'s passes from its start, so the prompt'"'"'s first pass
  # of each is the one after those of the start (before the mark); an executor counts its own, and only the
  # prompt'"'"'s executor passes the prompt.* steps.
  : > trace
  start_idle
  echo mark >> trace
  prompt "please RUN: echo traced > traced.txt" > out 2> err || { cat out err daemon.log; fail "the traced prompt failed"; }
  stop_daemon
  cp trace trace.prompt
  daemon_steps=$(awk "/^mark/ { m = 1; next } \$1 == \"daemon\" && \$3 == \"step\" { if (!m) { b[\$5]++; next } if (!seen[\$5]++) print \"daemon:\" \$5 \":\" b[\$5] + 1 \":stop\" }" trace.prompt)
  executor_steps=$(awk "\$1 == \"executor\" && \$5 ~ /^prompt\\./ && !seen[\$5]++ { print \"executor:\" \$5 \":1:stop\" }" trace.prompt)
  for step in task.recorded task.running message.stored permission.asked task.ended batch.commit; do
    echo "$daemon_steps" | grep -q ":$step:" || { cat trace.prompt; fail "the daemon never passed $step"; }
  done
  for step in prompt.started prompt.agent-started prompt.first-message prompt.permission-asked prompt.concluded prompt.done; do
    echo "$executor_steps" | grep -q ":$step:" || { cat trace.prompt; fail "the executor never passed $step"; }
  done
  echo "$daemon_steps $executor_steps"

  n=0
  for spec in $daemon_steps $executor_steps; do
    n=$((n + 1))
    role=${spec%%:*}
    : > trace
    AGOR_FAULT=$spec start_idle
    before=$(sql "SELECT count(*) FROM tasks WHERE command = '"'"'prompt'"'"'")
    prompt "please RUN: echo $n > killed-$n.txt" > kill.out 2> kill.err &
    prompt_pid=$!
    pid=$(stopped_pid)
    [ -n "$pid" ] || { cat kill.out kill.err; tail -20 daemon.log; fail "$spec: nothing stopped"; }
    parent=$(awk "{ print \$4 }" "/proc/$pid/stat")
    kill -9 "$pid"
    # sudo, between the root executor and the one it runs as agor_executor, stopped itself with its child (job
    # control); a real crash stops nothing: it goes on, and sees its child gone
    [ "$role" = executor ] && kill -CONT "$parent" 2> /dev/null || true
    if [ "$role" = daemon ]; then
      wait "$daemon_pid" 2> /dev/null || true
      daemon_pid=""
    fi
    wait "$prompt_pid" 2> /dev/null || true
    no_agent_left
    if [ "$role" = executor ]; then
      settled "$spec (the daemon lived)" # the daemon ends the task itself
      stop_daemon
    fi
    start_idle
    consistent "$spec"
    killed=$(sql "SELECT id FROM tasks WHERE command = '"'"'prompt'"'"' ORDER BY rowid DESC LIMIT 1")
    [ "$(sql "SELECT count(*) FROM tasks WHERE command = '"'"'prompt'"'"'")" -gt "$before" ] || fail "$spec: the killed prompt has no task"
    status=$(sql "SELECT status FROM tasks WHERE id = '"'"'$killed'"'"'")
    echo "$spec: killed $role, task $status: $(sql "SELECT json_extract(error, '"'"'$.message'"'"') FROM tasks WHERE id = '"'"'$killed'"'"'")" >> kills.log
    prompt "say hello" > retry.out 2> retry.err || { cat retry.out retry.err; tail -20 daemon.log; fail "$spec: the retried prompt failed"; }
    expect_contains retry.out "Hello from the scripted model."
    expect_contains retry.out "[completed]"
    consistent "$spec after the retry"
    stop_daemon
  done
  cat kills.log
  [ "$(wc -l < kills.log)" -ge 11 ] || fail "only $(wc -l < kills.log) kill points"
'

if ! is_root; then
  test_skip "kill -9 at every step of a prompt" "needs root (users are made in a private mount namespace)"
elif [ ! -x "$CLAUDE" ]; then
  test_skip "kill -9 at every step of a prompt" "the npm registry is unreachable: the agent CLIs are not installed"
else
  test_case --needs faults,python3-sqlite3 "kill -9 of the daemon or the executor at every step of a prompt: recovered, the session prompts again" 'prompt_scratch "$CRASHES"'
fi

test_done
