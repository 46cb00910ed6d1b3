# test/agent-cli.sh — the pinned agent CLIs the prompt and egress tests drive (sourced after lib.sh): installs
# Claude Code and Codex from npm once into build/test-tmp/agent-cli (shared by both flavors and by every script
# that sources this) and names them $CLAUDE and $CODEX. One place for the versions, so the tests never drift apart.
CLAUDE_VERSION=2.1.197
CODEX_VERSION=0.169.0
CLI_DIR="$TEST_TOP/build/test-tmp/agent-cli"
CLAUDE="$CLI_DIR/node_modules/.bin/claude" CODEX="$CLI_DIR/node_modules/.bin/codex"
if ! "$CLAUDE" --version 2>/dev/null | grep -q "^$CLAUDE_VERSION" || ! "$CODEX" --version 2>/dev/null | grep -q " $CODEX_VERSION$"; then
  mkdir -p "$CLI_DIR"
  (cd "$CLI_DIR" && npm install --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$CLAUDE_VERSION" \
    "@openai/codex@$CODEX_VERSION") > /dev/null 2>&1 || true
fi
chmod -R a+rX "$CLI_DIR" 2>/dev/null || true
