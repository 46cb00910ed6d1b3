#!/usr/bin/env python3
# approvals-differential.py — the analyser's verdict against what really runs, over a generated corpus of shell text.
#   approvals-differential.py AGOR WORKDIR [--strace] [--random N] [--probe]
# Builds WORKDIR/shims: a logging shim per program (it appends its name to WORKDIR/exec.log, then execs the real
# one) and the system shells and wrappers as symlinks; allowlists the shims of ALLOWED; runs every snippet as
# `agor approvals exec -- sh|bash -c SNIPPET` with PATH=WORKDIR/shims, and checks that a denied snippet ran
# nothing and an allowed one ran only allowlisted programs — by the shim log and, with --strace, by every
# successful execve/execveat of the whole process tree. Prints one summary line; exits 1 on any violation
# (each printed), 2 when the set-up cannot give a meaningful result (printed as the reason to skip).
import os, random, shutil, subprocess, sys
from strace_execs import successful_execs  # this directory is on sys.path (the script's own)

ALLOWED = ["ls", "cat", "echo", "true", "printf", "git"]
FORBIDDEN = ["id", "whoami", "touch", "uname", "date"]
SYSTEM = ["sh", "bash", "dash", "nice", "time", "timeout", "env", "nohup", "stdbuf", "xargs", "find"]

TEMPLATES = [
    "{A}", "{A} -l", "{A}; {B}", "{A} && {B}", "{A} || {B}", "{A} | {B}", "{B}", "time {B}", "time {A}",
    "nice time {B}", "nice -n 1 {A}", "nice {B}", "env {B}", "env {A}", "timeout 5 {B}", "nohup {B}",
    "stdbuf -oL {A}", "printf -v PATH %s /x; {A}", "export PATH=/x; {A}", "{A} $({B})", "{A} `{B}`",
    "{A} \"$({B})\"", "'{B}'", "\"{B}\"", "\\{B}", "{A} '{B}'", "exec {B}", "command {B}", "eval {B}",
    "builtin {B}", ". /dev/null; {B}", "{B} >/dev/null", "{B} 2>&1", "sh -c '{B}'", "bash -c '{A} && {B}'",
    "sh -c '{A}' && {B}", "{A} *", "{A} {{x,y}}", "{B} &", "({B})", "{{ {B}; }}", "if true; then {B}; fi",
    "! {B}", "{A} # ; {B}", "{A}\n{B}", "IFS=/ {B}", "PATH=/x {A}", "alias {A}={B}; {A}",
    "hash -p /usr/bin/{B} {A}; {A}", "f() {{ {B}; }}; f", "coproc {B}", "{A} |& {B}", "x=1; {B}",
    "git -c alias.x='!{B}' x", "git ls-remote --upload-pa='{B}' .", "git --version",
    "find . -maxdepth 0 -exec {B} \\;", "xargs {B}", "env PATH=/x {A}", "/usr/bin/{B}", "./{B}",
    "{A} -- {B}", "time -p {A}", "{A} <<<x", "cat /dev/null | {B}", "sh -c 'sh -c \"{B}\"'",
    "{A} ${{IFS}}{B}", "bash -c ls\\ *", "sh -c ls\\ \\;*", "{A};{B}", "{A}&&{B}", "{A}|{B}", "{A} ; ; {B}",
    "time", "nice", "{A} \\; {B}", "{A} \\&\\& {B}", "'{A};{B}'", "{A} \"a;{B}\"", "t\\ime {B}", "ti''me {B}",
    "\\time {B}", "printf '%s' x; {A}", "read x; {B}", "set -- {B}; $1", "{A} && exec {B}", "{A} || eval {B}",
    "env -S '{B}'", "nice -n1 {B}", "{A} | nice {B}", "true && {A} && {A} | {A}", "bash -c \"time {B}\"",
    "nice sh -c '{A}; {B}'", "timeout 5 bash -c '{A}'", "sh -c \"{A} | {B}\"", "{A} && sh -c '{A}'",
]
PIECES = ["{A}", "{B}", "time {A}", "time {B}", "nice {A}", "nice {B}", "env {A}", "'{A}'", "\"{B}\"",
          "sh -c '{A}'", "bash -c '{B}'", "{A} x*", "{A} \"$x\"", "printf -v PATH x", "timeout 1 {A}"]
OPERATORS = [";", " && ", " || ", " | ", " ; ", "\n", " & ", "|"]


def corpus(n_random):
    rnd = random.Random(19)
    out = []
    for t in TEMPLATES:
        out.append(t.format(A=rnd.choice(ALLOWED[:-1]), B=rnd.choice(FORBIDDEN)))
    for _ in range(n_random):
        parts = [rnd.choice(PIECES) for _ in range(rnd.randint(1, 3))]
        text = parts[0]
        for p in parts[1:]:
            text += rnd.choice(OPERATORS) + p
        out.append(text.format(A=rnd.choice(ALLOWED[:-1]), B=rnd.choice(FORBIDDEN)))
    return out


def setup(work):
    shims = os.path.join(work, "shims")
    os.makedirs(shims, mode=0o755)
    log = os.path.join(work, "exec.log")
    for name in ALLOWED + FORBIDDEN:
        real = shutil.which(name, path="/usr/bin:/bin")
        with open(os.path.join(shims, name), "w") as f:
            f.write(f"#!/bin/sh\necho {name} >> {log}\nexec {real} \"$@\"\n")
        os.chmod(os.path.join(shims, name), 0o755)
    for name in SYSTEM:
        os.symlink(os.path.realpath(shutil.which(name, path="/usr/bin:/bin")), os.path.join(shims, name))
    cwd = os.path.join(work, "cwd")
    os.makedirs(cwd, mode=0o755)
    for name in ["ls ;id", "a.txt", "-x"]:  # a glob in a shell payload could expand to "ls ;id"
        open(os.path.join(cwd, name), "w").close()
    return shims, log, cwd


def agor(agor_bin, *args, env=None, cwd=None):
    return subprocess.run([agor_bin, *args], env=env, cwd=cwd, capture_output=True, text=True)


def main():
    agor_bin, work = sys.argv[1], sys.argv[2]
    use_strace = "--strace" in sys.argv
    n_random = int(sys.argv[sys.argv.index("--random") + 1]) if "--random" in sys.argv else 60
    shims, log, cwd = setup(work)
    env = dict(os.environ, PATH=shims)
    if use_strace:  # LeakSanitizer cannot run under ptrace: the ASan build runs its leak check elsewhere
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    for args in (["set", "--security", "allowlist", "--ask", "off"],
                 ["allowlist", "add", *[os.path.join(shims, a) for a in ALLOWED]]):
        r = agor(agor_bin, "approvals", *args)
        if r.returncode:
            sys.exit(f"approvals {args[0]}: {r.stderr}")
    # the baseline: an allowlisted shim inside shell text must be allowed, else the shims are not pinned here
    r = agor(agor_bin, "approvals", "check", "--", "sh", "-c", "ls", env=env, cwd=cwd)
    if r.returncode != 0:
        print(f"the shims directory is not usable here (sh -c ls: {r.stdout.strip()})")
        sys.exit(2)
    if "--probe" in sys.argv:
        sys.exit(0)
    expected_execs = {"", os.path.realpath(agor_bin)}
    expected_execs |= {os.path.join(shims, a) for a in ALLOWED}
    expected_execs |= {shutil.which(a, path="/usr/bin:/bin") for a in ALLOWED}
    expected_execs |= {os.path.realpath(shutil.which(s, path="/usr/bin:/bin")) for s in SYSTEM}
    violations, allowed, denied = [], 0, 0
    for i, text in enumerate(corpus(n_random)):
        shell = "sh" if i % 2 == 0 else "bash"
        open(log, "w").close()
        cmd = [agor_bin, "approvals", "exec", "--timeout", "10", "--", shell, "-c", text]
        trace = os.path.join(work, "trace")
        if use_strace:
            cmd = ["/usr/bin/strace", "-f", "-qq", "-e", "trace=execve,execveat", "-e", "signal=none", "-o", trace, *cmd]
        r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, errors="replace")
        ran = [l.strip() for l in open(log) if l.strip()]
        was_denied = '"exec.started"' not in r.stderr  # the event is written just before the run
        if was_denied and r.returncode not in (126, 127):
            violations.append(f"{shell} -c {text!r}: neither run nor denied (exit {r.returncode}): {r.stderr[-300:]}")
        label = f"{shell} -c {text!r}"
        if was_denied:
            denied += 1
            if ran:
                violations.append(f"{label}: denied, yet ran {ran}")
        else:
            allowed += 1
            bad = [p for p in ran if p not in ALLOWED]
            if bad:
                violations.append(f"{label}: allowed, and ran unlisted {bad}")
        if use_strace:
            execs = successful_execs(trace)
            if was_denied:
                extra = [p for p in execs if p != os.path.realpath(agor_bin)]
            else:
                extra = [p for p in execs if p not in expected_execs]
            if extra:
                violations.append(f"{label}: {'denied' if was_denied else 'allowed'}, execve of {extra}")
    for v in violations:
        print("VIOLATION " + v)
    print(f"{allowed + denied} snippets: {allowed} allowed, {denied} denied, {len(violations)} violations"
          f"{' (strace)' if use_strace else ''}")
    if allowed < 10 or denied < 10:
        print("the corpus did not exercise both verdicts")
        sys.exit(1)
    sys.exit(1 if violations else 0)


main()
