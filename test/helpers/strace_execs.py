# strace_execs.py — what an `strace -f -e trace=execve,execveat` log says was executed: the paths of the calls that
# succeeded, in order. Shared by the approvals differentials (approvals-differential.py, shell-differential.py).
import re


def successful_execs(trace_path):
    paths = []
    for line in open(trace_path, errors="replace"):
        m = re.search(r'\b(execve|execveat)\((?:\d+, )?"((?:[^"\\]|\\.)*)"', line)
        if m and re.search(r"\) = 0$", line.strip()):
            paths.append(m.group(2))
    return paths
