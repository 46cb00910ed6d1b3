#!/usr/bin/env python3
# conn-flood.py — opens many idle TCP connections to a local daemon (as a port scan or a slowloris would) and holds
# them; never connects anywhere but 127.0.0.0/8. Prints one JSON line of what happened, then holds until killed.
#   usage: conn-flood.py PORT COUNT [--ws] [--sources N] [--timeout S]
#   --ws          each connection asks for a WebSocket at /ws (and idles once upgraded)
#   --sources N   spread the connections over the source addresses 127.0.0.1 … 127.0.0.N
# The line: {"count", "connected", "upgraded", "refused", "closed", "pending", "seconds"}; "closed" counts the
# connections the server closed (or refused with an HTTP status) once connected, "pending" those still waiting for
# an answer when the timeout struck.
import base64, json, os, resource, selectors, socket, sys, time

args = sys.argv[1:]
port, count = int(args[0]), int(args[1])
ws = "--ws" in args
sources = int(args[args.index("--sources") + 1]) if "--sources" in args else 1
timeout = float(args[args.index("--timeout") + 1]) if "--timeout" in args else 30.0

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

sel = selectors.DefaultSelector()
state = {}  # socket -> "connecting" | "handshake" | "open" | "closed"
answer = {}
counts = {"count": count, "connected": 0, "upgraded": 0, "refused": 0, "closed": 0, "pending": 0}
start = time.monotonic()

for i in range(count):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    s.bind(("127.0.0.%d" % (1 + i % sources), 0))
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    except OSError:
        counts["refused"] += 1
        s.close()
        continue
    state[s] = "connecting"
    answer[s] = b""
    sel.register(s, selectors.EVENT_WRITE)


def settle(s, how):
    state[s] = how
    if how == "closed":
        counts["closed"] += 1
        sel.unregister(s)
    elif how == "open":
        sel.modify(s, selectors.EVENT_READ)


def on_event(s, mask):
    st = state[s]
    if st == "connecting":
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            counts["refused"] += 1
            state[s] = "refused"
            sel.unregister(s)
            return
        counts["connected"] += 1
        if not ws:
            settle(s, "open")
            return
        key = base64.b64encode(os.urandom(16)).decode()
        s.send(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (port, key)).encode())
        state[s] = "handshake"
        sel.modify(s, selectors.EVENT_READ)
        return
    try:
        data = s.recv(4096)
    except OSError:
        data = b""
    if not data:
        settle(s, "closed")
        return
    if st == "handshake":
        answer[s] += data
        if b"\r\n\r\n" in answer[s]:
            if answer[s].startswith(b"HTTP/1.1 101 "):
                counts["upgraded"] += 1
                settle(s, "open")
            else:
                settle(s, "closed")


def waiting():
    return any(v in ("connecting", "handshake") for v in state.values())


while waiting() and time.monotonic() - start < timeout:
    for key, mask in sel.select(timeout=0.5):
        on_event(key.fileobj, mask)
counts["pending"] = sum(v in ("connecting", "handshake") for v in state.values())
counts["seconds"] = round(time.monotonic() - start, 2)
print(json.dumps(counts), flush=True)
# hold: note the server closing held connections, until killed
while True:
    events = sel.select(timeout=1.0)
    for key, mask in events:
        on_event(key.fileobj, mask)
