#!/usr/bin/env python3
# pty-drive.py — runs a command on a fresh pseudo-terminal and drives it like a person at a keyboard, for t0070.
# Usage: pty-drive.py COLSxROWS STEP… -- COMMAND…   steps: type:TEXT (\n → Enter, \x1d → C-]) expect:REGEX
#        winsize:COLSxROWS (resizes the pty: the command gets SIGWINCH)  wait-exit (prints "exit N")
# Exits 1 with what was seen when an expectation fails. With $PTY_TRANSCRIPT, every byte the command wrote to the
# terminal is also kept in that file (what a person saw, from start to end; t0086).
import fcntl, os, pty, re, select, struct, sys, termios, time

i = sys.argv.index("--")
size, steps, cmd = sys.argv[1], sys.argv[2:i], sys.argv[i + 1:]


def set_size(fd, spec):
    cols, rows = (int(x) for x in spec.split("x"))
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


pid, master = pty.fork()
if pid == 0:
    set_size(0, size)
    os.execvp(cmd[0], cmd)
set_size(master, size)
seen = b""
transcript = open(os.environ["PTY_TRANSCRIPT"], "wb", buffering=0) if os.environ.get("PTY_TRANSCRIPT") else None


def pump(seconds):
    global seen
    r, _, _ = select.select([master], [], [], seconds)
    if r:
        try:
            data = os.read(master, 65536)
        except OSError:
            return False
        seen += data
        if transcript:
            transcript.write(data)
    return True


for step in steps:
    kind, _, arg = step.partition(":")
    if kind == "type":
        os.write(master, arg.replace("\\n", "\r").replace("\\x1d", "\x1d").encode())
    elif kind == "expect":
        deadline = time.time() + 20
        while not re.search(arg.encode(), seen) and time.time() < deadline:
            if not pump(0.1):
                break
        m = re.search(arg.encode(), seen)
        if not m:
            print(f"expected /{arg}/; seen:\n{seen.decode(errors='replace')}")
            sys.exit(1)
        print(f"seen /{arg}/", flush=True)
        seen = seen[m.end():]
    elif kind == "winsize":
        set_size(master, arg)
    elif kind == "wait-exit":
        deadline = time.time() + 20
        while time.time() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                while pump(0.05):
                    if not select.select([master], [], [], 0)[0]:
                        break
                print(f"exit {os.waitstatus_to_exitcode(status)}", flush=True)
                print(seen.decode(errors="replace"))
                break
            pump(0.1)
        else:
            sys.exit("the command did not exit")
    else:
        sys.exit(f"unknown step {step}")
