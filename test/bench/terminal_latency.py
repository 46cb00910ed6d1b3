#!/usr/bin/env python3
# terminal_latency.py — keystroke-to-echo latency for test/bench/terminal: one "x" typed into an interactive
# bash, timed until its echo comes back, then erased (backspace); N rounds; prints "median p90 p99" in µs.
#   daemon SOCKET WORKTREE N   through the agor daemon (terminal.input → executor's tmux → terminal.output)
#   tmux N                     a tmux control client driven directly (send-keys -H), no daemon: baseline 1
#   pty N                      bash on a bare pseudo-terminal, no tmux: baseline 2
# The same Python client code measures all three, so its own overhead is in every number.
import base64, json, os, pty, select, socket, subprocess, sys, time

mode, args = sys.argv[1], sys.argv[2:]


def percentiles(samples):
    samples.sort()
    n = len(samples)
    return f"{samples[n // 2]:.1f} {samples[n * 9 // 10]:.1f} {samples[n * 99 // 100]:.1f}"


def rounds(n, send, wait_for):
    for _ in range(5):  # warm-up: readline, caches
        send(b"x"); wait_for(b"x"); send(b"\x7f"); wait_for(b"\x08")
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        send(b"x")
        wait_for(b"x")
        out.append((time.perf_counter() - t0) * 1e6)
        send(b"\x7f")
        wait_for(b"\x08")
    return out


class Reader:
    def __init__(self, fd, decode):
        self.fd, self.decode, self.buf = fd, decode, b""

    def wait_for(self, needle):
        deadline = time.time() + 10
        while needle not in self.buf:
            r, _, _ = select.select([self.fd], [], [], max(0, deadline - time.time()))
            if not r:
                sys.exit(f"no echo of {needle!r}")
            self.buf += self.decode(os.read(self.fd, 65536))
        self.buf = self.buf[self.buf.index(needle) + len(needle):]


def daemon(sock_path, worktree, n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    lines = b""

    def call(method, params):
        nonlocal lines
        s.sendall((json.dumps({"jsonrpc": "2.0", "id": method, "method": method, "params": params}) + "\n").encode())
        while True:
            while b"\n" not in lines:
                lines += s.recv(65536)
            line, lines = lines.split(b"\n", 1)
            m = json.loads(line)
            if m.get("id") == method:
                if "error" in m:
                    sys.exit(json.dumps(m))
                return m["result"]

    r = call("terminal.open", {"worktree_id": worktree})
    call("terminal.attach", {"terminal_id": r["terminal_id"], "token": r["token"]})
    pending = [lines]

    def decode(chunk):
        pending[0] += chunk
        out = b""
        while b"\n" in pending[0]:
            line, pending[0] = pending[0].split(b"\n", 1)
            m = json.loads(line)
            if m.get("params", {}).get("type") == "terminal.output":
                out += base64.b64decode(m["params"]["data"]["data"])
        return out

    reader = Reader(s.fileno(), decode)
    reader.buf = decode(b"")
    send = lambda b: s.sendall((json.dumps({"jsonrpc": "2.0", "method": "terminal.input",
                                            "params": {"data": base64.b64encode(b).decode()}}) + "\n").encode())
    time.sleep(0.5)
    return rounds(n, send, reader.wait_for)


def detach(sock):
    """Lets a tmux control client go as the daemon does: an empty line, then its socket read until tmux closes it.
    Closed with output still queued, the client would stay in its server, and the server never exit."""
    sock.sendall(b"\n")
    sock.settimeout(5)
    try:
        while sock.recv(65536):
            pass
    except socket.timeout:
        pass
    sock.close()


def tmux_direct(n):
    name = f"agor-bench-{os.getpid()}"
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "TERM": "xterm-256color"}
    subprocess.run(["tmux", "-L", name, "new-session", "-d", "-s", "b", "bash --norc -i"], check=True, env=env)
    try:
        pane = subprocess.run(["tmux", "-L", name, "display-message", "-p", "-t", "b", "#{pane_id}"],
                              capture_output=True, text=True, env=env).stdout.strip()
        a, b = socket.socketpair()
        proc = subprocess.Popen(["tmux", "-L", name, "-C", "attach-session", "-t", "b"], stdin=b, stdout=b,
                                stderr=subprocess.DEVNULL, env=env)
        b.close()

        def decode(chunk):  # %output lines → their bytes (enough for "x" and "\b")
            out = b""
            for line in chunk.split(b"\n"):
                if line.startswith(b"%output "):
                    out += line.split(b" ", 2)[2].replace(b"\\010", b"\x08").replace(b"\\033", b"\x1b")
            return out

        reader = Reader(a.fileno(), decode)
        send = lambda data: a.sendall(f"send-keys -t {pane} -H {' '.join('%02x' % c for c in data)}\n".encode())
        time.sleep(0.5)
        out = rounds(n, send, reader.wait_for)
        detach(a)
        proc.wait(timeout=10)
        return out
    finally:
        subprocess.run(["tmux", "-L", name, "kill-server"], env=env, stderr=subprocess.DEVNULL)


def bare_pty(n):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe("bash", ["bash", "--norc", "-i"], {"PATH": os.environ["PATH"], "TERM": "xterm-256color", "PS1": "$ "})
    reader = Reader(fd, lambda c: c)
    time.sleep(0.5)
    try:
        return rounds(n, lambda b: os.write(fd, b), reader.wait_for)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


if mode == "daemon":
    print(percentiles(daemon(args[0], args[1], int(args[2]))))
elif mode == "tmux":
    print(percentiles(tmux_direct(int(args[0]))))
elif mode == "pty":
    print(percentiles(bare_pty(int(args[0]))))
else:
    sys.exit(f"unknown mode {mode}")
