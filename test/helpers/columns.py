#!/usr/bin/env python3
# columns.py — reads a table as `agor … list` prints it for people (a header line, then rows; the journey test,
# t0086) and fails unless it is aligned: every cell starts where its column's title starts, after two spaces.
# Dates (columns created, at, last_seen, *_at) must be local "YYYY-MM-DD HH:MM:SS", never epoch numbers.
# Usage: columns.py FILE FIRST_TITLE  — the table is the first line starting with FIRST_TITLE and the non-empty
# lines after it. Prints the table as tab-separated cells (the titles first).
import re, sys

path, first = sys.argv[1], sys.argv[2]
lines = open(path, encoding="utf-8", errors="replace").read().replace("\r", "").split("\n")
start = next((i for i, line in enumerate(lines) if line.startswith(first + " ")), None)
if start is None:
    sys.exit(f"{path}: no table whose first column is {first!r}:\n" + "\n".join(lines))
header = lines[start]
starts = [0] + [m.end() for m in re.finditer(r"  +(?=\S)", header)]
titles = [header[s:e].strip() for s, e in zip(starts, starts[1:] + [None])]
rows = []
for line in lines[start + 1:]:
    if not line.strip():
        break
    for title, s in zip(titles[1:], starts[1:]):
        if len(line) <= s or line[s] == " " or line[s - 2:s] != "  ":
            sys.exit(f"{path}: column {title!r} (at {s}) is not aligned in:\n{header}\n{line}")
    rows.append([line[s:e].strip() for s, e in zip(starts, starts[1:] + [None])])
if not rows:
    sys.exit(f"{path}: the table has no rows:\n{header}")
date = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
for row in rows:
    for title, cell in zip(titles, row):
        if (title in ("created", "at", "last_seen") or title.endswith("_at")) and cell != "-" and not date.match(cell):
            sys.exit(f"{path}: {title} shows {cell!r}, not a local date")
for row in [titles] + rows:
    print("\t".join(row))
