#!/usr/bin/env bash
# make-test-ca.sh — creates a throwaway CA and a server certificate for `localhost` (and NAME) in DIR (tests only).
# Never touches the system trust store.   usage: make-test-ca.sh DIR [NAME]
set -euo pipefail
dir=$1
san=DNS:localhost${2:+,DNS:$2}
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=agor test CA" -keyout ca.key -out ca.crt \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$san" > ext.cnf
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out server.crt -extfile ext.cnf 2>/dev/null
