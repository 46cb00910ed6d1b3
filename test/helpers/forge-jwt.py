#!/usr/bin/env python3
# forge-jwt.py — builds HS256 JWTs for attack tests (expired, foreign task, unknown jti, alg none).
# Never used outside tests.   usage: forge-jwt.py SECRET_FILE CLAIMS_JSON [ALG]
import base64, hashlib, hmac, json, sys

def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

secret = open(sys.argv[1], "rb").read()
alg = sys.argv[3] if len(sys.argv) > 3 else "HS256"
head = b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
body = b64(json.dumps(json.loads(sys.argv[2])).encode())
signing = (head + "." + body).encode()
sig = "" if alg == "none" else b64(hmac.new(secret, signing, hashlib.sha256).digest())
print(head + "." + body + "." + sig)
