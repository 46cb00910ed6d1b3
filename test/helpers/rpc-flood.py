#!/usr/bin/env python3
# rpc-flood.py — many JSON-RPC calls over one raw WebSocket to a local daemon, as fast as it answers (a flood of
# refused calls). Never connects anywhere but 127.0.0.1. Prints {"sent", "answered", "errors": {CODE: n}, "seconds"}.
#   usage: rpc-flood.py PORT COUNT TEMPLATE     TEMPLATE is the message text; "{i}" in it becomes the call number
import base64, json, os, socket, struct, sys, threading, time

port, count, template = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
sock = socket.create_connection(("127.0.0.1", port), timeout=60)
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (port, key)).encode())
buf = b""
while b"\r\n\r\n" not in buf:
    chunk = sock.recv(4096)
    if not chunk:
        sys.exit("closed during the handshake")
    buf += chunk
head, buf = buf.split(b"\r\n\r\n", 1)
if b" 101 " not in head.split(b"\r\n")[0]:
    sys.exit("no upgrade: " + head.decode(errors="replace"))


def frame(text):
    data, mask = text.encode(), os.urandom(4)
    n = len(data)
    hdr = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
    return hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


result = {"sent": 0, "answered": 0, "errors": {}}


def next_frame():
    global buf
    while True:
        if len(buf) >= 2:
            n = buf[1] & 127
            off = 4 if n == 126 else 10 if n == 127 else 2
            if len(buf) >= off:
                n = struct.unpack(">H", buf[2:4])[0] if n == 126 else struct.unpack(">Q", buf[2:10])[0] if n == 127 else n
                if len(buf) >= off + n:
                    op, payload, buf = buf[0] & 15, buf[off:off + n], buf[off + n:]
                    return op, payload
        chunk = sock.recv(65536)
        if not chunk:
            return None, None
        buf += chunk


def read_replies():
    while result["answered"] < count:
        op, payload = next_frame()
        if op is None or op == 8:
            return
        if op != 1:
            continue
        r = json.loads(payload)
        for one in r if isinstance(r, list) else [r]:
            result["answered"] += 1
            code = one["error"].get("data", {}).get("code") if one.get("error") else "OK"
            result["errors"][code] = result["errors"].get(code, 0) + 1


t0 = time.monotonic()
reader = threading.Thread(target=read_replies, daemon=True)
reader.start()
batch = []
for i in range(count):
    batch.append(frame(template.replace("{i}", str(i))))
    if len(batch) == 200:
        sock.sendall(b"".join(batch))
        result["sent"] += len(batch)
        batch = []
        while result["sent"] - result["answered"] > 2000 and reader.is_alive():
            time.sleep(0.005)
sock.sendall(b"".join(batch))
result["sent"] += len(batch)
reader.join(120)
result["seconds"] = round(time.monotonic() - t0, 2)
print(json.dumps(result))
