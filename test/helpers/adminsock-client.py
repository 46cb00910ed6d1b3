#!/usr/bin/env python3
# adminsock-client.py — a hostile (or plain) client of agor's privileged socket for t0009: sends one request shaped
# as the options say (descriptors, no newline, trailing bytes, late descriptors, oversized) and prints the answer.
# Usage: adminsock-client.py SOCKET REQUEST [--nfds N] [--late-fds N] [--no-newline] [--trailing TEXT]
#        [--oversize N] [--stdin TEXT]
# Exit: 0 an answer was read (printed on stdout), 3 no connection (errno name printed).
import argparse, errno, os, socket, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("socket")
ap.add_argument("request")
ap.add_argument("--nfds", type=int, default=0)
ap.add_argument("--late-fds", type=int, default=0)
ap.add_argument("--no-newline", action="store_true")
ap.add_argument("--trailing", default="")
ap.add_argument("--oversize", type=int, default=0)
ap.add_argument("--stdin", default=None, help="executor: this text on its stdin; its stdout printed after the answer")
a = ap.parse_args()

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(a.socket)
except OSError as e:
    print("connect: " + errno.errorcode.get(e.errno, str(e.errno)))
    sys.exit(3)
s.settimeout(60)

req = a.request
if a.oversize:
    req = '{"op":"admin","argv":["' + "a" * a.oversize + '"]}'
data = req.encode() + (b"" if a.no_newline else b"\n") + a.trailing.encode()

fds, keep = [], []
stdin_r = stdout_w = None
if a.stdin is not None:
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    os.write(stdin_w, a.stdin.encode())
    os.close(stdin_w)
    fds = [stdin_r, stdout_w, 2][: max(a.nfds, 3)]
else:
    null = os.open("/dev/null", os.O_RDWR)
    fds = [null] * (a.nfds or a.late_fds)

try:
    if a.late_fds:
        s.send(data[:1])
        time.sleep(0.3)  # the server reads this byte alone, then the descriptors arrive on a later one
        socket.send_fds(s, [data[1:]], fds)
    elif fds and a.nfds:
        socket.send_fds(s, [data], fds)
    else:
        s.sendall(data)
    if a.no_newline:
        s.shutdown(socket.SHUT_WR)
except (BrokenPipeError, ConnectionResetError):
    pass  # refused before it read everything: its answer is still there to read
for fd in (stdin_r, stdout_w):
    if fd is not None:
        os.close(fd)

answer = b""
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        answer += chunk
except (socket.timeout, ConnectionResetError):
    pass
sys.stdout.write(answer.decode(errors="replace"))
if a.stdin is not None:
    sys.stdout.write("--- stdout\n" + os.read(stdout_r, 1 << 20).decode(errors="replace"))
sys.exit(0)
