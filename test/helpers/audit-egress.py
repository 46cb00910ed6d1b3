#!/usr/bin/env python3
# audit-egress.py — asserts that an audit.list answer holds exactly one egress.refused row for TARGET (a task or a
# worktree id) and that its details are DETAILS (JSON), no more and no less.
# Usage: audit-egress.py AUDIT_JSON TARGET DETAILS
import json, sys

rows = json.load(open(sys.argv[1]))
while isinstance(rows, dict):
    rows = rows.get("result", rows.get("entries", rows.get("rows", [])))
mine = [r for r in rows if r.get("action") == "egress.refused" and r.get("target") == sys.argv[2]]
assert len(mine) == 1, rows[-5:]
details = json.loads(mine[0]["details"])
want = json.loads(sys.argv[3])
assert details == want, (details, want)
