#!/usr/bin/env python3
"""layers.py — fails (exit 1) on any cycle between lib modules, naming it and the edges that make it.

A module is a base name: lib/foo.c and lib/foo.h are module foo. Two graphs are checked:
  --includes DIR   foo → bar when foo.c or foo.h includes "bar.h" (a header of DIR);
  --calls DIR      foo → bar when foo.o uses a symbol bar.o defines (`nm`), for the objects in DIR.
The include graph shows what a file may reach; the call graph shows what it really calls, also through
declarations that live in another module's header. Both must be acyclic (docs/architecture.md)."""
import collections, os, re, subprocess, sys


def include_graph(d):
    headers = {f[:-2] for f in os.listdir(d) if f.endswith('.h')}
    g = collections.defaultdict(dict)
    for f in sorted(os.listdir(d)):
        mod, ext = os.path.splitext(f)
        if ext not in ('.c', '.h'):
            continue
        g[mod]
        with open(os.path.join(d, f), errors='replace') as fh:
            for line in fh:
                m = re.match(r'\s*#\s*include\s+"([\w/]+)\.h"', line)
                if m and m.group(1) in headers and m.group(1) != mod:
                    g[mod].setdefault(m.group(1), []).append(f)
    return g


def call_graph(d):
    defined, used = {}, collections.defaultdict(set)
    for f in sorted(os.listdir(d)):
        if not f.endswith('.o'):
            continue
        mod = f[:-2]
        out = subprocess.run(['nm', os.path.join(d, f)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 2 and p[0] == 'U':
                used[mod].add(p[1])
            elif len(p) == 3 and p[1] in 'TDBRCV':
                defined[p[2]] = mod
    g = collections.defaultdict(dict)
    for mod in set(defined.values()) | set(used):
        g[mod]
        for sym in sorted(used[mod]):
            to = defined.get(sym)
            if to and to != mod:
                g[mod].setdefault(to, []).append(sym)
    return g


def cycles(g):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], 0
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = n; n += 1; stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n; n += 1; stack.append(w); on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main(argv):
    if len(argv) != 3 or argv[1] not in ('--includes', '--calls'):
        sys.exit('usage: layers.py --includes LIBDIR | --calls OBJDIR')
    g = include_graph(argv[2]) if argv[1] == '--includes' else call_graph(argv[2])
    found = cycles(g)
    for comp in found:
        print('cycle: ' + ' '.join(comp))
        for a in comp:
            for b, why in sorted(g[a].items()):
                if b in comp:
                    print('  %s -> %s (%s)' % (a, b, ', '.join(why[:4])))
    print('%d modules, %d cycle(s) in the %s graph' % (len(g), len(found), argv[1][2:]))
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
