#!/usr/bin/env python3
# approvals-client.py — speaks (and deliberately mis-speaks) the `agor approvals serve` ask protocol for tests.
# Never retries; prints every reply line as received (or "ERROR <exception>" when the connection fails).
#   approvals-client.py SOCKET TOKEN request [--ts-offset S] [--nonce N] [--bad-hmac] [--times K]
#   approvals-client.py SOCKET TOKEN oversized
#   approvals-client.py SOCKET TOKEN flood COUNT
#   approvals-client.py SOCKET TOKEN forked-flood COUNT   (each connection from its own forked child)
#   approvals-client.py SOCKET TOKEN request --argv-json JSON   (a valid request for that argv)
import hashlib, hmac, json, os, secrets, socket, sys, time


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def signed(token, nonce, ts, request, bad=False):
    msg = f"{nonce}:{ts}:{canonical(request)}".encode()
    mac = hmac.new(token.encode(), msg, hashlib.sha256).hexdigest()
    if bad:
        mac = ("0" if mac[0] != "0" else "1") + mac[1:]
    return {"type": "request", "id": secrets.token_hex(8), "nonce": nonce, "ts": ts, "hmac": mac,
            "request": request}


def exchange(path, data, timeout=5.0):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(path)
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        s.close()
        return buf.decode().strip() or "EOF"
    except Exception as e:  # the caller asserts on the text
        return f"ERROR {type(e).__name__}: {e}"


def main():
    path, token, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    args = sys.argv[4:]
    request = {"argv": ["id"], "cwd": os.getcwd(), "agentId": "default", "resolvedPath": "/usr/bin/id"}
    if mode == "request":
        offset, nonce, bad, times = 0, secrets.token_hex(16), False, 1
        while args:
            a = args.pop(0)
            if a == "--ts-offset":
                offset = int(args.pop(0))
            elif a == "--nonce":
                nonce = args.pop(0)
            elif a == "--bad-hmac":
                bad = True
            elif a == "--times":
                times = int(args.pop(0))
            elif a == "--argv-json":
                request["argv"] = json.loads(args.pop(0))
                request.pop("resolvedPath")
        for _ in range(times):
            msg = signed(token, nonce, int(time.time()) + offset, request, bad)
            print(exchange(path, (json.dumps(msg) + "\n").encode()), flush=True)
    elif mode == "oversized":
        print(exchange(path, b"{" + b" " * (300 * 1024)), flush=True)
    elif mode == "flood":
        for _ in range(int(args[0])):
            print(exchange(path, b"{}\n"), flush=True)
    elif mode == "forked-flood":
        for _ in range(int(args[0])):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                os.write(w, (exchange(path, b"{}\n") + "\n").encode())
                os._exit(0)
            os.close(w)
            out = b""
            while True:
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                out += chunk
            os.close(r)
            os.waitpid(pid, 0)
            print(out.decode().strip(), flush=True)
    else:
        sys.exit("unknown mode " + mode)


main()
