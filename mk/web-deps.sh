#!/usr/bin/env bash
# Fetches the pinned npm tarballs of the web terminal (mk/web.lock) into build/web/src, verifies their sha256
# and extracts the few files ./agor embeds into build/web/files. Never runs npm scripts, never trusts a tarball
# whose sha256 differs from the lock.
#
# usage: mk/web-deps.sh
#   Air-gapped: put the tarballs (names as in mk/web.lock) into build/web/src first; nothing is downloaded then.
#   AGOR_NPM_REGISTRY overrides the registry (default https://registry.npmjs.org).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
lock="$top/mk/web.lock"
web="$top/build/web"
src="$web/src"
files="$web/files"
registry=${AGOR_NPM_REGISTRY:-https://registry.npmjs.org}

say() { printf 'web-deps: %s\n' "$*" >&2; }
die() { printf 'web-deps: error: %s\n' "$*" >&2; exit 1; }

verified() { # FILE SHA256 → 0 when FILE exists and matches
  [ -f "$1" ] && echo "$2  $1" | sha256sum -c --status -
}

download() { # URL OUT
  if command -v curl > /dev/null; then
    curl -fsSL --retry 3 --connect-timeout 20 -o "$2" "$1"
  elif command -v wget > /dev/null; then
    wget -q -O "$2" "$1"
  elif [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
    say "installing curl"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl >&2
    curl -fsSL --retry 3 --connect-timeout 20 -o "$2" "$1"
  else
    die "neither curl nor wget is installed (Debian: curl); or put the tarball at $2 by hand"
  fi
}

# fetch PACKAGE VERSION TARBALL SHA256 — the verified tarball in $src
fetch() {
  local pkg=$1 ver=$2 tgz=$3 sum=$4 out="$src/$3"
  verified "$out" "$sum" && return 0
  [ -f "$out" ] && die "sha256 mismatch for $out (expected $sum): delete it and retry"
  say "fetching $pkg@$ver"
  download "$registry/$pkg/-/$tgz" "$out.part" || die "cannot download $registry/$pkg/-/$tgz (air-gapped: copy $tgz into $src)"
  verified "$out.part" "$sum" || { rm -f "$out.part"; die "sha256 mismatch for the downloaded $tgz (expected $sum)"; }
  mv "$out.part" "$out"
}

# take TARBALL MEMBER DEST — one file out of a package tarball (members live under package/)
take() {
  tar -xzO -f "$src/$1" "package/$2" > "$files/$3.tmp" || die "$1 has no package/$2"
  mv "$files/$3.tmp" "$files/$3"
}

mkdir -p "$src" "$files"
: > "$web/VERSIONS.tmp"
while read -r pkg ver tgz sum; do
  case "$pkg" in ''|'#'*) continue ;; esac
  fetch "$pkg" "$ver" "$tgz" "$sum"
  printf '%s %s sha256:%s\n' "$pkg" "$ver" "$sum" >> "$web/VERSIONS.tmp"
done < "$lock"

take "$(awk '$1=="@xterm/xterm" {print $3}' "$lock")" lib/xterm.mjs xterm.mjs
take "$(awk '$1=="@xterm/xterm" {print $3}' "$lock")" css/xterm.css xterm.css
take "$(awk '$1=="@xterm/xterm" {print $3}' "$lock")" LICENSE xterm.LICENSE
take "$(awk '$1=="@xterm/addon-fit" {print $3}' "$lock")" lib/addon-fit.mjs addon-fit.mjs
take "$(awk '$1=="@xterm/addon-fit" {print $3}' "$lock")" LICENSE addon-fit.LICENSE
mv "$web/VERSIONS.tmp" "$web/VERSIONS"
say "done: $web/files ($(wc -l < "$web/VERSIONS") packages)"
