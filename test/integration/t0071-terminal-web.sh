#!/usr/bin/env bash
# t0071-terminal-web — terminals over the daemon's TCP listener: the web page (xterm.js embedded at build time) and
# its assets, the page in headless Chromium (playwright-core) on a real tmux terminal, `agor terminal --url ws/http`.
. "$(dirname "$0")/../lib.sh"

PLAYWRIGHT_VERSION=1.65.1 # pinned; shared by both flavors: npm runs once
PW_DIR="$TEST_TOP/build/test-tmp/node-playwright"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium} # Debian's package; playwright-core downloads no browser
export PLAYWRIGHT_MODULE_DIR="$PW_DIR" CHROMIUM TEST_TOP
. "$TEST_TOP/test/terminal.sh"

test_case "GET /terminal and /assets/*: embedded files, Content-Type, security headers, no token; traversal and unknown names 404" '
  eval "$SCENE"
  start_daemon
  url=http://127.0.0.1:$port
  curl -sS -D page.h -o page.html "$url/terminal"
  expect_contains page.h "HTTP/1.1 200 OK"
  expect_contains page.h "Content-Type: text/html; charset=utf-8"
  expect_contains page.h "Content-Security-Policy: default-src '"'none'"'; script-src '"'self'"'"
  expect_contains page.h "frame-ancestors '"'none'"'"
  expect_contains page.h "X-Content-Type-Options: nosniff"
  expect_contains page.h "Referrer-Policy: no-referrer"
  expect_contains page.html "<script type=\"module\" src=\"/assets/terminal.js\"></script>"
  ! grep -Eq "[0-9a-f]{64}" page.html || fail "the page carries something like a token"
  for a in xterm.mjs:text/javascript addon-fit.mjs:text/javascript terminal.js:text/javascript xterm.css:text/css \
           terminal.css:text/css xterm.LICENSE.txt:text/plain addon-fit.LICENSE.txt:text/plain; do
    expect_eq "$(curl -sS -o "${a%%:*}" -w "%{http_code} %{content_type}" "$url/assets/${a%%:*}")" "200 ${a#*:}; charset=utf-8"
  done
  cmp xterm.mjs "$TEST_TOP/build/web/files/xterm.mjs"   # byte for byte the file of the pinned tarball
  cmp terminal.js "$TEST_TOP/web/terminal.js"
  expect_contains xterm.LICENSE.txt "The xterm.js authors"
  curl -sSI "$url/assets/xterm.css" > head.h
  expect_contains head.h "Content-Length: $(stat -c %s "$TEST_TOP/build/web/files/xterm.css")"
  for p in /assets/ /assets /assets/../home/.agor/agor.db /assets/%2e%2e/jwt.secret /assets/..%2fjwt.secret \
           /assets//xterm.mjs /assets/xterm.mjs/ /assets/XTERM.MJS /assets/nope.js /assets/xterm.mjs.map /terminal/ \
           /terminal.html /web/terminal.html /assets/xterm.mjs%00.css; do
    expect_eq "$(curl -s --path-as-is -o /dev/null -w "%{http_code}" "$url$p")" 404
  done
  expect_eq "$(curl -s -o /dev/null -w "%{http_code}" -X POST "$url/terminal")" 405
  expect_eq "$(curl -s -o /dev/null -w "%{http_code}" "$url/terminal?x=1")" 200
  expect_eq "$(curl -s -o /dev/null -w "%{http_code}" "$url/ws")" 426
  stop_daemon
'

need_real_tmux "terminals over TCP with real tmux (agor terminal --url, the page in Chromium)"

test_case "agor terminal --url ws://…/ws and http://… with a user token (AGOR_TOKEN, --token): echo, resize, detach, exit" '
  in_private_tmp <<"BODY"
    start_daemon
    worktree
    drive() { python3 "$TEST_TOP/test/helpers/pty-drive.py" "$@"; }
    expect_exit 1 "$AGOR" terminal feature --url "ws://127.0.0.1:$port/ws" < /dev/null
    expect_contains err AUTH_FAILED
    expect_contains err "agor user token"
    expect_exit 1 "$AGOR" terminal feature --url "http://127.0.0.1:$port" --token not-a-token < /dev/null
    expect_contains err AUTH_FAILED
    expect_exit 2 "$AGOR" terminal feature --url ftp://127.0.0.1/
    expect_exit 2 "$AGOR" terminal feature --token
    token=$("$AGOR" user token 2> /dev/null)
    AGOR_TOKEN=$token drive 100x30 "type:echo tcp\$((3+4))ws\n" "expect:tcp7ws\r\n" "type:tput cols\n" "expect:100\r\n" \
      "type:KEPT=over-tcp\n" "type:\x1d" wait-exit -- "$AGOR" terminal feature --url "ws://127.0.0.1:$port/ws" > ws.out || { cat ws.out daemon.log; false; }
    expect_contains ws.out "exit 0"
    expect_contains ws.out "[agor terminal: detached]"
    drive 90x20 "type:echo \"<\$KEPT>\" http\$((1+1))\n" "expect:<over-tcp> http2\r\n" winsize:120x40 "expect:.*" \
      "type:sleep 0.3; tput cols\n" "expect:120\r\n" "type:exit\n" wait-exit \
      -- "$AGOR" terminal feature --url "http://127.0.0.1:$port/rpc" --token "$token" > http.out || { cat http.out daemon.log; false; }
    expect_contains http.out "exit 0"
    expect_contains http.out "[agor terminal: exited]"
    stop_daemon
BODY
'

pw_reason=""
if [ ! -x "$CHROMIUM" ]; then
  pw_reason="$CHROMIUM is not installed (Debian: chromium; .ci/run installs it)"
elif command -v node > /dev/null && [ "$(node -p "process.versions.node.split('.')[0]")" -lt 20 ]; then
  pw_reason="playwright-core $PLAYWRIGHT_VERSION needs Node.js 20 or later (this is $(node --version))"
else
  pw_reason=$(npm_package "$PW_DIR" "playwright-core@$PLAYWRIGHT_VERSION") || true
fi
if [ -n "$pw_reason" ]; then
  test_skip "the web terminal in headless Chromium" "$pw_reason"
  test_done; exit
fi

test_case "Chromium: two pages on one tmux terminal (link with #terminal&token), typed output rendered in both, resize" '
  in_private_tmp <<"BODY"
    start_daemon
    worktree
    open_terminal $wt
    tid=$(json_get open.json open.result.terminal_id)
    token=$(json_get open.json open.result.token)
    node "$TEST_TOP/test/helpers/web-terminal.mjs" share $port "$tid" "$token" > web.out 2> web.err || { cat web.out web.err daemon.log; false; }
    cat web.out
    expect_json web.out a_attached true
    expect_json web.out a_url_after "http://127.0.0.1:$port/terminal"
    expect_json web.out a_title "agor terminal"
    expect_json web.out a_saw_own_output true
    expect_json web.out b_saw_a_output true
    expect_json web.out a_saw_b_output true
    expect_json web.out b_saw_own_output true
    expect_json web.out resized true
    expect_json web.out tput_cols_matches true
    expect_json web.out errors "[]"
    expect_not_contains daemon.log "$token"   # the fragment never reached the server
    tmux -L $(tmux_server $(id -un)) capture-pane -p -t "=agor:" > pane.txt
    expect_contains pane.txt "from-b-42"
    stop_daemon
BODY
'

test_case "Chromium: without a terminal link the page asks for a user token, opens the worktree terminal; a bad token is refused" '
  in_private_tmp <<"BODY"
    start_daemon
    worktree
    token=$("$AGOR" user token 2> /dev/null)
    node "$TEST_TOP/test/helpers/web-terminal.mjs" login $port feature "$token" > web.out 2> web.err || { cat web.out web.err daemon.log; false; }
    cat web.out
    expect_json web.out form_shown true
    expect_json web.out login_saw_output true
    expect_json web.out user_token_field_cleared true
    expect_contains web.out AUTH_FAILED
    expect_json web.out errors "[]"
    stop_daemon
BODY
'

test_done
