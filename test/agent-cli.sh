# test/agent-cli.sh — the pinned agent CLIs the prompt and egress tests drive (sourced after lib.sh): installs
# Claude Code, Codex, Gemini CLI and OpenCode from npm once into build/test-tmp/agent-cli (shared by both flavors
# and by every script that sources this) and names them $CLAUDE, $CODEX, $GEMINI and $OPENCODE. One place for the
# versions, so the tests never drift apart. (opencode-ai's postinstall links its linux-x64 binary into its bin/.)
CLAUDE_VERSION=2.1.197
CODEX_VERSION=0.169.0
GEMINI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33
CLI_DIR="$TEST_TOP/build/test-tmp/agent-cli"
CLAUDE="$CLI_DIR/node_modules/.bin/claude" CODEX="$CLI_DIR/node_modules/.bin/codex"
GEMINI="$CLI_DIR/node_modules/.bin/gemini" OPENCODE="$CLI_DIR/node_modules/.bin/opencode"
if ! "$CLAUDE" --version 2>/dev/null | grep -q "^$CLAUDE_VERSION" || ! "$CODEX" --version 2>/dev/null | grep -q " $CODEX_VERSION$" ||
   ! "$GEMINI" --version 2>/dev/null | grep -qx "$GEMINI_VERSION" || ! "$OPENCODE" --version 2>/dev/null | grep -qx "$OPENCODE_VERSION"; then
  mkdir -p "$CLI_DIR"
  (cd "$CLI_DIR" && npm install --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$CLAUDE_VERSION" \
    "@openai/codex@$CODEX_VERSION" "@google/gemini-cli@$GEMINI_VERSION" "opencode-ai@$OPENCODE_VERSION") > /dev/null 2>&1 || true
fi
chmod -R a+rX "$CLI_DIR" 2>/dev/null || true
