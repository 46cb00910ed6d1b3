#!/usr/bin/env python3
# shell-differential.py — the approvals analyser's list of the programs a command line starts against what the
# shell really executes, line by line over a corpus (test/fuzz/shell-corpus.txt: the approvals tests' attack
# forms and more). For every line: `agor approvals check --json -- SHELL -c LINE` gives the analysis (allowlistable
# and its executables); then `SHELL -c LINE` runs directly, with PATH a directory of recording stubs (each appends
# its name to a log, then execs the real program) and, with --strace, every successful execve of the process tree
# traced. A program that ran and is not on the analyser's list, for a line the analyser calls allowlistable and
# does not flag as running code beyond its list (codeRunning: git -c, find -exec, …), is a finding: approval
# would have been asked for less than what runs.
#   shell-differential.py AGOR WORKDIR CORPUS [--strace] [--probe]
# Prints each finding and one summary line; exit 1 on a finding, 2 when the set-up cannot give a meaningful
# result (printed as the reason to skip).
import json, os, shutil, subprocess, sys
from strace_execs import successful_execs  # this directory is on sys.path (the script's own)

STUBS = ["ls", "cat", "echo", "true", "printf", "git", "id", "whoami", "touch", "uname", "date"]
SYSTEM = ["sh", "bash", "dash", "nice", "time", "timeout", "env", "nohup", "stdbuf", "xargs", "find"]


def setup(work):
    stubs, log, cwd = os.path.join(work, "stubs"), os.path.join(work, "ran.log"), os.path.join(work, "cwd")
    os.makedirs(stubs, mode=0o755)
    os.makedirs(cwd, mode=0o755)
    real = {}
    for name in STUBS:
        real[name] = os.path.realpath(shutil.which(name, path="/usr/bin:/bin"))
        with open(os.path.join(stubs, name), "w") as f:
            f.write(f"#!/bin/sh\necho {name} >> {log}\nexec {real[name]} \"$@\"\n")
        os.chmod(os.path.join(stubs, name), 0o755)
    for name in SYSTEM:
        os.symlink(os.path.realpath(shutil.which(name, path="/usr/bin:/bin")), os.path.join(stubs, name))
    for name in ["ls ;id", "a.txt", "-x"]:  # a glob could expand to "ls ;id"
        open(os.path.join(cwd, name), "w").close()
    return stubs, log, cwd, real


def corpus(path):
    for line in open(path):
        line = line.rstrip("\n")
        if line and not line.startswith("#"):
            yield line.replace("\\n", "\n")  # a written \n is a newline inside the command line


def analysis(agor_bin, shell, text, env, cwd):
    r = subprocess.run([agor_bin, "approvals", "check", "--json", "--", shell, "-c", text], env=env, cwd=cwd,
                       capture_output=True, text=True, errors="replace")
    try:
        j = json.loads(r.stdout)
    except ValueError:
        sys.exit(f"approvals check gave no JSON for {text!r}: {r.stdout!r} {r.stderr!r}")
    return j.get("allowlistable"), [x["path"] for x in j.get("executables", [])], j.get("codeRunning") or []


def run(shell, text, env, cwd, log, trace):
    open(log, "w").close()
    cmd = [shell, "-c", text]
    if trace:
        cmd = ["/usr/bin/strace", "-f", "-qq", "-e", "trace=execve,execveat", "-e", "signal=none", "-o", trace, *cmd]
    try:
        subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        pass
    return [l.strip() for l in open(log) if l.strip()], successful_execs(trace) if trace else []


def main():
    agor_bin, work, corpus_path = sys.argv[1], sys.argv[2], sys.argv[3]
    use_strace = "--strace" in sys.argv
    stubs, log, cwd, real = setup(work)
    env = dict(os.environ, PATH=stubs, HOME=os.path.join(work, "home"), AGOR_HOME=os.path.join(work, "home/.agor"))
    if use_strace:  # LeakSanitizer cannot run under ptrace
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    ok, exes, _ = analysis(agor_bin, "sh", "ls", env, cwd)
    if not ok or os.path.join(stubs, "ls") not in exes:
        print(f"the stubs directory is not usable here (sh -c ls: allowlistable {ok}, executables {exes})")
        sys.exit(2)
    if "--probe" in sys.argv:
        sys.exit(0)
    trace = os.path.join(work, "trace") if use_strace else None
    findings, compared, refused, code = [], 0, 0, 0
    for i, text in enumerate(corpus(corpus_path)):
        for shell in ("sh", "bash"):
            ok, exes, code_running = analysis(agor_bin, shell, text, env, cwd)
            if not ok:
                refused += 1  # the analyser refuses the line: it never runs on an allowlist
                continue
            if code_running:
                code += 1  # it says a program runs code beyond its list (git -c, find -exec): never allow-always
                continue
            compared += 1
            listed = set(exes) | {os.path.realpath(p) for p in exes}
            listed_names = {os.path.basename(p) for p in exes if os.path.dirname(p) == stubs}
            ran, execs = run(shell, text, env, cwd, log, trace)
            label = f"{shell} -c {text!r}"
            unlisted = sorted(set(ran) - listed_names)
            if unlisted:
                findings.append(f"{label}: ran {unlisted}, the analyser listed {exes}")
            expected = listed | {real[n] for n in listed_names} | {os.path.realpath(os.path.join(stubs, shell))}
            extra = sorted({p for p in execs if p not in expected and os.path.realpath(p) not in expected})
            if extra:
                findings.append(f"{label}: execve of {extra}, the analyser listed {exes}")
    for f in findings:
        print("FINDING " + f)
    print(f"{compared + refused + code} analyses: {compared} allowlistable lines run and compared, {refused} refused, "
          f"{code} flagged as running code, "
          f"{len(findings)} findings{' (strace)' if use_strace else ''}")
    if compared < 20:
        print("too few allowlistable lines to compare")
        sys.exit(1)
    sys.exit(1 if findings else 0)


main()
