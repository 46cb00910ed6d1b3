#!/bin/sh
# dist/image-root.sh OUT AGOR CA-BUNDLE — assembles the executor image's whole root filesystem in the directory OUT:
# the static binary as /agor, the CA bundle, an /etc/passwd and /etc/group naming root and nobody (65534, home
# /data), and the empty mount points a container runtime fills (/proc, /dev, /tmp, /data). dist/Dockerfile copies
# OUT onto `scratch`; test/integration/t0054-image-root.sh builds the same root with it and runs payloads in it.
set -eu
out=${1:?usage: image-root.sh OUT AGOR CA-BUNDLE}
agor=${2:?usage: image-root.sh OUT AGOR CA-BUNDLE}
ca=${3:?usage: image-root.sh OUT AGOR CA-BUNDLE}
[ ! -e "$out" ] || { echo "image-root.sh: $out exists; give a new directory" >&2; exit 1; }
mkdir -p "$out/etc/ssl/certs" "$out/proc" "$out/dev" "$out/tmp" "$out/data"
install -m 0755 "$agor" "$out/agor"
install -m 0644 "$ca" "$out/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/nonexistent\nnobody:x:65534:65534:nobody:/data:/nonexistent\n' > "$out/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$out/etc/group"
chmod 0644 "$out/etc/passwd" "$out/etc/group"
chmod 1777 "$out/tmp"
chown 65534:65534 "$out/data" # the data home when no volume is mounted there; a volume brings its own owner
chmod 0700 "$out/data"
