#!/usr/bin/env bash
# mk/hot-symbols.sh — prints the functions and data an executor dry run touches, in the order it first touches
# them, one symbol a line: ld.lld's --symbol-ordering-file for ./agor (Makefile), which packs them into a few
# pages so a run starts with fewer page faults. Regenerate with `make hot-symbols` when the dry run's code changes;
# a stale list only costs speed (names no longer there are ignored), never correctness.
#   mk/hot-symbols.sh UNSTRIPPED_AGOR   (needs valgrind and python3)
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: mk/hot-symbols.sh UNSTRIPPED_AGOR" >&2; exit 2; }
agor=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
command -v valgrind >/dev/null || { echo "mk/hot-symbols.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/agor-hot-symbols.XXXXXX")
trap 'rm -rf "$work"' EXIT

# the executor's name comes from argv[0]: run it as .../agor
mkdir -p "$work/bin" "$work/home/.agor/repos/bench/src.git"
ln -s "$agor" "$work/bin/agor"
export HOME="$work/home" AGOR_HOME="$work/home/.agor"
payloads=(
  '{"command":"git.worktree.add","params":{"repoPath":"bench/src.git","worktreeName":"w","worktreePath":"bench/w","branch":"main"}}'
  '{"command":"git.clone","params":{"url":"https://example.com/r.git","outputPath":"bench/r.git"}}'
)
for i in "${!payloads[@]}"; do
  printf '%s' "${payloads[$i]}" |
    valgrind -q --tool=lackey --trace-mem=yes --log-file="$work/trace.$i" "$work/bin/agor" executor --stdin \
      --dry-run >/dev/null
done

nm -S -n "$agor" > "$work/symbols"
# Reached only where openat2 works, which valgrind (3.19) does not implement: its runs take lib/confine.c's
# fallback instead of resolving with RESOLVE_NO_SYMLINKS. Listed after what the traces show, each name once.
not_traced=(fs_open_linkless resolve_beneath fs_lexical_join strbuf_addch)
{
python3 - "$work/symbols" "$work"/trace.* <<'PY'
import bisect, sys
symbols = []  # (start, size, name); an assembly symbol has no size: it extends to the next symbol (memcpy, …)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 4:
        symbols.append([int(f[0], 16), int(f[1], 16), f[3]])
    elif len(f) == 3 and f[1] in "tTwW":
        symbols.append([int(f[0], 16), 0, f[2]])
symbols.sort()
for this, following in zip(symbols, symbols[1:] + [[1 << 64, 0, ""]]):
    if not this[1]:
        this[1] = max(following[0] - this[0], 1)
starts = [s[0] for s in symbols]
seen = set()
for trace in sys.argv[2:]:
    for line in open(trace):
        f = line.split()
        if len(f) != 2 or f[0] not in ("I", "L", "S", "M"):
            continue
        addr = int(f[1].split(",")[0], 16)
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and addr < symbols[i][0] + symbols[i][1] and symbols[i][2] not in seen:
            seen.add(symbols[i][2])
            print(symbols[i][2])
PY
printf '%s\n' "${not_traced[@]}"
} | awk '!seen[$0]++'
