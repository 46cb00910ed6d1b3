# test/vm.sh — what the qemu guest tests share: Debian's cloud kernel (fetched once into build/test-tmp/vm-kernel)
# and a Debian 12 root made by debootstrap (cached under build/test-tmp/vm-debian-KEY, KEY the hash of its package
# list, so later runs and both flavors reuse it). Sourced by test files after test/lib.sh.

VM_KERNEL_DIR="$TEST_TOP/build/test-tmp/vm-kernel"

# vm_kernel — prints the guest kernel's path, fetching Debian's cloud kernel package the first time.
vm_kernel() {
  local k pkg
  k=$(ls "$VM_KERNEL_DIR"/boot/vmlinuz-* 2> /dev/null | head -1)
  if [ -z "$k" ]; then
    pkg=$(apt-cache depends linux-image-cloud-amd64 2> /dev/null | awk '/Depends: linux-image-/ { print $2; exit }')
    [ -n "$pkg" ] || return 1
    mkdir -p "$VM_KERNEL_DIR/deb"
    (cd "$VM_KERNEL_DIR/deb" && apt-get download -qq "$pkg") > /dev/null 2>&1 || return 1
    dpkg-deb --fsys-tarfile "$VM_KERNEL_DIR"/deb/*.deb | tar -x -C "$VM_KERNEL_DIR" --wildcards './boot/vmlinuz-*' || return 1
    rm -rf "$VM_KERNEL_DIR/deb"
    k=$(ls "$VM_KERNEL_DIR"/boot/vmlinuz-* 2> /dev/null | head -1)
  fi
  [ -n "$k" ] && echo "$k"
}

# vm_accel — qemu's accelerator flags: KVM when it boots the guest kernel here (probed once: a /dev/kvm may exist
# yet fail, as under gVisor or some nested hosts), else TCG (slower, same result).
vm_accel() {
  local probe="$VM_KERNEL_DIR/accel"
  if [ ! -s "$probe" ]; then
    echo "-accel tcg" > "$probe"
    if [ -r /dev/kvm ] && [ -w /dev/kvm ] && timeout 20 qemu-system-x86_64 -enable-kvm -m 256 -nographic -no-reboot \
      -kernel "$(vm_kernel)" -append "console=ttyS0 panic=-1" < /dev/null 2> /dev/null | grep -aq "Kernel panic"; then
      echo "-enable-kvm" > "$probe"
    fi
  fi
  cat "$probe"
}

# vm_debian_root PACKAGES — prints the directory of a Debian 12 minbase root holding PACKAGES (comma-separated),
# made by debootstrap the first time (a few minutes; then reused). The directory must not be changed: copy it.
vm_debian_root() {
  local key dir
  key=$(printf 'bookworm minbase %s' "$1" | sha256sum | cut -c1-16)
  dir="$TEST_TOP/build/test-tmp/vm-debian-$key"
  if [ ! -e "$dir/.complete" ]; then
    rm -rf "$dir.partial"
    debootstrap --variant=minbase --include="$1" bookworm "$dir.partial" "${AGOR_DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
      > "$dir.log" 2>&1 || { echo "debootstrap failed (see $dir.log)" >&2; return 1; }
    rm -rf "$dir.partial/var/cache/apt/archives"/*.deb "$dir.partial/var/lib/apt/lists"/*_Packages
    touch "$dir.partial/.complete"
    rm -rf "$dir" && mv "$dir.partial" "$dir"
  fi
  echo "$dir"
}
