#!/usr/bin/env bash
# t0012-https-clone — git.clone over real HTTPS (mbedTLS in the static binary) from a local smart-HTTP git
# server with a throwaway CA: trusted via SSL_CERT_FILE, refused when the CA is unknown, auth required.
. "$(dirname "$0")/../lib.sh"

file_needs openssl,python3 "HTTPS clone"

# serve [--user U --password P] — starts the server on a free port; sets $port; stops it when the body ends.
SERVE='
  serve() {
    "$TEST_TOP/test/helpers/make-test-ca.sh" ca
    mkdir -p srv/acme && make_source_repo src && git clone -q --bare src srv/acme/widget.git
    python3 "$TEST_TOP/test/helpers/git-https-server.py" --root "$PWD/srv" --cert ca/server.crt \
      --key ca/server.key --port-file port "$@" 2> server.log &
    server=$!
    trap "kill $server 2>/dev/null" EXIT
    for i in $(seq 1 100); do [ -s port ] && break; sleep 0.05; done
    port=$(cat port)
  }
'

test_case "clone over HTTPS with the server's CA trusted through SSL_CERT_FILE" "$SERVE"'
  serve
  rc=0; printf "%s" "{\"command\":\"git.clone\",\"params\":{\"url\":\"https://localhost:$port/acme/widget.git\"}}" |
    SSL_CERT_FILE=$PWD/ca/ca.crt "$AGOR" executor --stdin > out 2> err || rc=$?
  expect_success
  expect_json out data.path "$AGOR_HOME/repos/localhost/acme/widget.git"
  [ "$(git -C "$AGOR_HOME/repos/localhost/acme/widget.git" rev-parse main)" = "$(git -C src rev-parse main)" ]
  expect_contains err "Receiving objects: 100%"
'

test_case "a server certificate from an unknown CA is refused (GIT_ERROR, nothing left behind)" "$SERVE"'
  serve
  rc=0; printf "%s" "{\"command\":\"git.clone\",\"params\":{\"url\":\"https://localhost:$port/acme/widget.git\"}}" |
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt "$AGOR" executor --stdin > out 2> err || rc=$?
  expect_error GIT_ERROR 1
  json_get out error.message | grep -qi "certificate" || fail "not a certificate error"
  [ ! -e "$AGOR_HOME/repos/localhost/acme/widget.git" ] || fail "left a partial clone"
'

test_case "a host name that does not match the certificate is refused" "$SERVE"'
  serve
  rc=0; printf "%s" "{\"command\":\"git.clone\",\"params\":{\"url\":\"https://127.0.0.1:$port/acme/widget.git\"}}" |
    SSL_CERT_FILE=$PWD/ca/ca.crt "$AGOR" executor --stdin > out 2> err || rc=$?
  expect_error GIT_ERROR 1
'

test_case "a server that asks for credentials gets none from the payload: AUTH_FAILED" "$SERVE"'
  serve --user git --password s3cret
  rc=0; printf "%s" "{\"command\":\"git.clone\",\"params\":{\"url\":\"https://localhost:$port/acme/widget.git\"},\"env\":{\"GIT_PASSWORD\":\"s3cret\"}}" |
    SSL_CERT_FILE=$PWD/ca/ca.crt "$AGOR" executor --stdin > out 2> err || rc=$?
  expect_error AUTH_FAILED 1
  expect_contains out "just in time from the daemon"
'

test_case "attack: user information in the URL is refused naming params.url, never taken for the host" "$SERVE"'
  serve
  for url in "https://github.com@localhost:$port/acme/widget.git" "https://user:pw@localhost:$port/acme/widget.git" \
             "https://localhost%2e:$port/acme/widget.git" "https://[::1/acme/widget.git"; do
    rc=0; printf "%s" "{\"command\":\"git.clone\",\"params\":{\"url\":\"$url\",\"outputPath\":\"x.git\"}}" |
      SSL_CERT_FILE=$PWD/ca/ca.crt "$AGOR" executor --stdin > out 2> err || rc=$?
    expect_error INVALID_PAYLOAD 2
    expect_json out error.details.path params.url
    expect_contains out "params.url: "
    [ ! -e "$AGOR_HOME/repos/x.git" ] || fail "$url was cloned"
  done
  expect_contains out "IPv6"
  ! grep -q "GET " server.log || { cat server.log; fail "the server was reached"; }
'

test_done
