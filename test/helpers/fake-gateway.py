#!/usr/bin/env python3
# fake-gateway.py — a forged gateway for tests: a WebSocket server (RFC 6455 by hand) on 127.0.0.1 that approves
# any node.hello, sends the node each system.run request given (params exactly as written, whatever a real
# gateway would refuse), writes each answer as one JSON line, then closes. Serves one connection; never anything else.
#   fake-gateway.py PORT_FILE REQUESTS_JSON ANSWERS_FILE    (REQUESTS_JSON: a list of system.run params)
import base64, hashlib, json, os, socket, struct, sys

port_file, requests, answers = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
srv.settimeout(60)
conn, _ = srv.accept()
conn.settimeout(120)
buf = b""


def need(k):
    global buf
    while len(buf) < k:
        chunk = conn.recv(65536)
        if not chunk:
            sys.exit("the node closed the connection")
        buf += chunk


while b"\r\n\r\n" not in buf:
    need(len(buf) + 1)
head, buf = buf.split(b"\r\n\r\n", 1)
key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key:")][0]
accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()).decode()
conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())


def send(obj):
    data = json.dumps(obj).encode()
    n = len(data)
    hdr = bytes([0x81]) + (bytes([n]) if n < 126 else bytes([126]) + struct.pack(">H", n) if n < 65536
                           else bytes([127]) + struct.pack(">Q", n))
    conn.sendall(hdr + data)


def recv():
    global buf
    need(2)
    n, off = buf[1] & 127, 2
    if n == 126:
        need(4)
        n, off = struct.unpack(">H", buf[2:4])[0], 4
    elif n == 127:
        need(10)
        n, off = struct.unpack(">Q", buf[2:10])[0], 10
    need(off + 4 + n)
    mask, payload = buf[off:off + 4], buf[off + 4:off + 4 + n]
    buf = buf[off + 4 + n:]
    return json.loads(bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


hello = recv()
assert hello.get("method") == "node.hello", hello
send({"jsonrpc": "2.0", "id": hello["id"], "result": {"status": "approved"}})
with open(answers, "w") as out:
    for i, params in enumerate(requests):
        send({"jsonrpc": "2.0", "id": 1000 + i, "method": "system.run", "params": params})
        while True:
            m = recv()
            if m.get("id") == 1000 + i:
                out.write(json.dumps(m) + "\n")
                out.flush()
                break
conn.close()
