#!/usr/bin/env bash
# mk/check-sources.sh — enforces source conventions the compiler cannot: a purpose comment atop
# every file, and banned.h as the last include of every .c (so the poisoned calls stay banned).
set -u
cd "$(dirname "$0")/.."
bad=0
for f in main.c lib/*.[ch] applets/*.[ch] test/unit/*.[ch]; do
  head -n 1 "$f" | grep -q '^/\* [a-z0-9_.-]* — ' || { echo "$f: first line must be '/* $(basename "$f") — purpose'"; bad=1; }
  case "$f" in
    *.c)
      last=$(grep '^#include' "$f" | tail -n 1)
      case "$last" in *banned.h\"*) ;; *) echo "$f: last #include must be \"banned.h\""; bad=1 ;; esac ;;
  esac
done
exit $bad
