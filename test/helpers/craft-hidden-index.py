#!/usr/bin/env python3
# craft-hidden-index.py OUT BLOBSHA HIDDENPATH — test helper for t0050: a v2 index that libgit2 reads as
# ["!", "zz"] while git with index.threads >= 2 reads ["!", HIDDENPATH] (the hidden entry lies in the name
# field of "!", whose flags length covers it; an IEOT table starts a second block there).
import hashlib, struct, sys
out, sha, hidden = sys.argv[1], bytes.fromhex(sys.argv[2]), sys.argv[3].encode()
def entry(name_area, mode, flags_len):
    head = struct.pack(">10I", 0, 0, 0, 0, 0, 0, mode, 0, 0, 0) + sha + struct.pack(">H", flags_len)
    size = (62 + len(name_area) + 8) & ~7
    return head + name_area + b"\0" * (size - 62 - len(name_area))
hid = entry(hidden, 0o100755, len(hidden))
area = b"!\0" + hid
area += b"A" * 8  # filler
X = entry(area, 0o100644, len(area))
Y = entry(b"zz", 0o100644, 2)
hdr = b"DIRC" + struct.pack(">II", 2, 2)
x_off = len(hdr); hid_off = x_off + 62 + 2
body = hdr + X + Y
ieot = struct.pack(">I", 1) + struct.pack(">II", x_off, 1) + struct.pack(">II", hid_off, 1)
ext1 = b"IEOT" + struct.pack(">I", len(ieot)) + ieot
first_ext = len(body)
eoie_hash = hashlib.sha1(ext1[:8]).digest()
eoie = b"EOIE" + struct.pack(">I", 24) + struct.pack(">I", first_ext) + eoie_hash
data = body + ext1 + eoie
data += hashlib.sha1(data).digest()
open(out, "wb").write(data)
