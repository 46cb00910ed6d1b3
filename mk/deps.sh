#!/usr/bin/env bash
# Builds agor's static dependencies from pinned Debian source packages into build/deps/<toolchain>.
# Never touches the system beyond installing missing host build tools with apt (as root).
#
# usage: mk/deps.sh musl|glibc
#   musl  — the product: static musl libraries for ./agor
#   glibc — the same libraries built with gcc for the ASan/UBSan test build
set -euo pipefail

toolchain=${1:?usage: mk/deps.sh musl|glibc}
top=$(cd "$(dirname "$0")/.." && pwd)
lock="$top/mk/deps.lock"
deps="$top/build/deps"
src="$deps/src"
work="$deps/work-$toolchain"
prefix="$deps/$toolchain"
jobs=$(nproc 2>/dev/null || echo 2)

say() { printf 'deps: %s\n' "$*" >&2; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }

case "$toolchain" in
  musl) cc=musl-gcc ;;
  glibc) cc=gcc ;;
  *) die "unknown toolchain '$toolchain' (expected musl or glibc)" ;;
esac

# --- host tools -------------------------------------------------------------------------
ensure_host_tools() {
  local missing=() pair
  for pair in musl-gcc:musl-tools cmake:cmake pkg-config:pkg-config dpkg-source:dpkg-dev \
              tclsh:tcl make:make gcc:gcc xz:xz-utils bzip2:bzip2 sha256sum:coreutils; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
  done
  [ -f /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing host packages: ${missing[*]} (run: sudo apt-get install ${missing[*]})"
  say "installing host packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# --- sources ----------------------------------------------------------------------------
# lock_lines PKG → "version file sha" lines for PKG, in lock order
lock_lines() { awk -v p="$1" '$1==p {print $2, $3, $4}' "$lock"; }
lock_versions() { lock_lines "$1" | awk '!seen[$1]++ {print $1}'; }

# verify_version PKG VERSION → 0 when every pinned file of that version is present and matches
verify_version() {
  local pkg=$1 ver=$2 v f sum
  while read -r v f sum; do
    [ "$v" = "$ver" ] || continue
    [ -f "$src/$f" ] || return 1
    if [ "$sum" = apt ]; then continue; fi
    echo "$sum  $src/$f" | sha256sum -c --status - || die "sha256 mismatch for $f (expected $sum): delete $src/$f and retry"
  done < <(lock_lines "$pkg")
}

deb_src_file=/etc/apt/sources.list.d/agor-deps-src.sources
enable_deb_src() {
  [ -f "$deb_src_file" ] && return 0
  [ "$(id -u)" = 0 ] || die "sources missing in $src and not root: run 'make deps' once as root"
  local base=/etc/apt/sources.list.d/debian.sources
  if [ -f "$base" ]; then
    sed 's/^Types: .*/Types: deb-src/' "$base" > "$deb_src_file"
  else
    grep -h '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' > "${deb_src_file%.sources}.list"
    deb_src_file="${deb_src_file%.sources}.list"
  fi
  trap 'rm -f "$deb_src_file"' EXIT
  apt-get update -qq
}

# fetch PKG → sets fetched_ver to the version now present and verified in $src
fetch() {
  local pkg=$1 ver
  for ver in $(lock_versions "$pkg"); do
    if verify_version "$pkg" "$ver"; then fetched_ver=$ver; return 0; fi
  done
  enable_deb_src
  for ver in $(lock_versions "$pkg"); do
    say "fetching $pkg=$ver"
    (cd "$src" && apt-get source --download-only -qq "$pkg=$ver" >/dev/null 2>&1) || { say "$pkg=$ver not downloadable, trying the next pin"; continue; }
    verify_version "$pkg" "$ver" || die "$pkg=$ver downloaded but files are missing"
    fetched_ver=$ver; return 0
  done
  die "no pinned version of $pkg could be downloaded"
}

# unpack PKG VERSION → prints the extracted directory (Debian patches applied)
unpack() {
  local pkg=$1 ver=$2 dsc dir
  dsc="$src/${pkg}_${ver#*:}.dsc"
  dir="$work/$pkg"
  rm -rf "$dir"
  dpkg-source -x "$dsc" "$dir" >&2
  echo "$dir"
}

# --- builds -----------------------------------------------------------------------------
cflags="-O2 -fPIC -ffunction-sections -fdata-sections"

write_toolchain_file() {
  cat > "$work/toolchain.cmake" <<EOF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER $cc)
set(CMAKE_C_FLAGS "$cflags" CACHE STRING "" FORCE)
set(CMAKE_FIND_ROOT_PATH $prefix)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_FIND_LIBRARY_SUFFIXES .a)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
EOF
}

cmake_build() { # DIR ARGS...
  local dir=$1; shift
  cmake -S "$dir" -B "$dir/_build" -DCMAKE_TOOLCHAIN_FILE="$work/toolchain.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
    -DBUILD_SHARED_LIBS=OFF "$@" >&2
  cmake --build "$dir/_build" -j "$jobs" >&2
  cmake --install "$dir/_build" >&2
}

# MY_ZCALLOC: zlib allocates through lib/zalloc.c (a checkout would otherwise map and unmap a 32 KiB inflate
# window per file under musl); only libz.a is built, since zlib's example programs lack that allocator.
build_zlib() {
  local dir=$1
  (cd "$dir" && CC=$cc CFLAGS="$cflags -DMY_ZCALLOC" ./configure --static --prefix="$prefix" >&2 &&
    make -j "$jobs" libz.a >&2 && make install >&2)
}

build_http_parser() {
  local dir=$1
  (cd "$dir" && $cc $cflags -c http_parser.c -o http_parser.o && ar rcs libhttp_parser.a http_parser.o)
  install -m 644 "$dir/libhttp_parser.a" "$prefix/lib/"
  install -m 644 "$dir/http_parser.h" "$prefix/include/"
}

build_mbedtls() {
  local dir=$1 cfg="$1/include/mbedtls/config.h"
  sed -i 's|^//#define MBEDTLS_THREADING_C$|#define MBEDTLS_THREADING_C|; s|^//#define MBEDTLS_THREADING_PTHREAD$|#define MBEDTLS_THREADING_PTHREAD|' "$cfg"
  grep -q '^#define MBEDTLS_THREADING_PTHREAD$' "$cfg" || die "mbedtls: could not enable threading in config.h"
  # getrandom() is used only under glibc upstream; musl has it too (and an empty root has no /dev/urandom)
  sed -i 's|#if ((defined(__linux__) \&\& defined(__GLIBC__)) \|\| defined(__midipix__))|#if (defined(__linux__) \|\| defined(__midipix__))|' "$dir/library/entropy_poll.c"
  grep -q '^#if (defined(__linux__) || defined(__midipix__))' "$dir/library/entropy_poll.c" || die "mbedtls: getrandom patch did not apply"
  cmake_build "$dir" -DENABLE_PROGRAMS=OFF -DENABLE_TESTING=OFF -DUSE_SHARED_MBEDTLS_LIBRARY=OFF \
    -DUSE_STATIC_MBEDTLS_LIBRARY=ON -DMBEDTLS_FATAL_WARNINGS=OFF -DLINK_WITH_PTHREAD=ON
}

# libssh2 for git over ssh, on the same mbedTLS; no zlib compression (git packs are compressed already).
build_libssh2() {
  cmake_build "$1" -DCRYPTO_BACKEND=mbedTLS -DBUILD_EXAMPLES=OFF -DBUILD_TESTING=OFF \
    -DENABLE_ZLIB_COMPRESSION=OFF -DCLEAR_MEMORY=ON
}

build_libgit2() {
  # No CA bundle parsed at git_libgit2_init (4 ms of base64 for every executor, even one that never connects):
  # agor sets the CA locations itself before a network operation (gitops.c configure_ca_locations).
  local tls="$1/src/libgit2/streams/mbedtls.c"
  sed -i 's|^\tchar \*crtpath = GIT_DEFAULT_CERT_LOCATION;$|\tchar *crtpath = NULL; /* agor: set before a network operation */|' "$tls"
  grep -q 'char \*crtpath = NULL; /\* agor' "$tls" || die "libgit2: the no-default-CA patch did not apply"
  # ssh: agor checks host keys itself against execution.git.known_hosts (gitops.c), so libgit2 reads no
  # $HOME/.ssh/known_hosts (a run may write it); and the known-hosts list is freed after every connection
  # (this libgit2 freed it only on failure).
  local ssh="$1/src/libgit2/transports/ssh.c"
  perl -0pi -e 's|\tif \(\(error = git__getenv\(&home, "HOME"\)\) < 0\)\n\t\treturn error;\n\n\tif \(\(error = git_str_joinpath\(&path, git_str_cstr\(&home\), KNOWN_HOSTS_FILE\)\) < 0\)\n\t\tgoto out;\n|\t/* agor: no \$HOME known_hosts */\n|;
    s|error = libssh2_knownhost_readfile\(known_hosts, git_str_cstr\(&path\), LIBSSH2_KNOWNHOST_FILE_OPENSSH\);|error = 0; /* agor: host keys are checked by agor */|;
    s|(done:\n)(\tif \(error < 0\) \{\n\t\tssh_stream_free\(\*stream\);\n\n)\t\tif \(known_hosts\)\n\t\t\tlibssh2_knownhost_free\(known_hosts\);\n|$1\tif (known_hosts) /* agor: freed on success too, before its session */\n\t\tlibssh2_knownhost_free(known_hosts);\n\n$2|' "$ssh"
  [ "$(grep -c 'agor: no \$HOME known_hosts\|agor: host keys are checked by agor\|agor: freed on success too' "$ssh")" = 3 ] ||
    die "libgit2: the ssh known_hosts patches did not apply"
  # libssh2 is found through pkg-config: only ours, never the host's
  PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" PKG_CONFIG_PATH='' \
  cmake_build "$1" -DBUILD_TESTS=OFF -DBUILD_CLI=OFF -DBUILD_EXAMPLES=OFF -DBUILD_FUZZERS=OFF \
    -DUSE_HTTPS=mbedTLS -DUSE_SHA1=CollisionDetection -DUSE_SHA256=HTTPS -DUSE_SSH=ON \
    -DUSE_GSSAPI=OFF -DUSE_NTLMCLIENT=OFF -DUSE_HTTP_PARSER=system -DREGEX_BACKEND=regcomp \
    -DUSE_BUNDLED_ZLIB=OFF -DCERT_LOCATION=/etc/ssl/certs/ca-certificates.crt
}

build_sqlite3() {
  local dir=$1 amalgamation="$deps/sqlite3-${2//[:+]/_}.c"
  if [ ! -f "$amalgamation" ]; then
    (cd "$dir" && mkdir -p _gen && cd _gen && CC=gcc ../configure --disable-tcl >&2 && make sqlite3.c >&2)
    cp "$dir/_gen/sqlite3.c" "$amalgamation.tmp" && cp "$dir/_gen/sqlite3.h" "${amalgamation%.c}.h"
    mv "$amalgamation.tmp" "$amalgamation"
  fi
  # HAVE_PREAD/HAVE_PWRITE: the amalgamation assumes them only on Apple; without them every page write of a commit
  # is an lseek and a write (about 60 system calls per commit of the daemon's trickle of messages).
  $cc $cflags -DSQLITE_THREADSAFE=1 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_DEFAULT_WAL_SYNCHRONOUS=1 \
    -DSQLITE_DQS=0 -DSQLITE_DEFAULT_FOREIGN_KEYS=1 -DSQLITE_OMIT_DEPRECATED -DSQLITE_OMIT_SHARED_CACHE \
    -DHAVE_PREAD -DHAVE_PWRITE \
    -c "$amalgamation" -o "$work/sqlite3.o"
  ar rcs "$prefix/lib/libsqlite3.a" "$work/sqlite3.o"
  install -m 644 "${amalgamation%.c}.h" "$prefix/include/sqlite3.h"
}

build_jansson() {
  cmake_build "$1" -DJANSSON_BUILD_DOCS=OFF -DJANSSON_EXAMPLES=OFF -DJANSSON_WITHOUT_TESTS=ON \
    -DJANSSON_BUILD_SHARED_LIBS=OFF
}

build_libyaml() {
  cmake_build "$1" -DBUILD_TESTING=OFF -DINSTALL_CMAKE_DIR=lib/cmake/yaml
}

# --- main -------------------------------------------------------------------------------
# one deps build at a time (make -j runs the musl and glibc builds side by side; apt has one lock)
mkdir -p "$deps"
exec 9> "$deps/.lock"
flock 9
ensure_host_tools
mkdir -p "$src" "$work"
rm -rf "$prefix" && mkdir -p "$prefix/lib" "$prefix/include"
write_toolchain_file

versions="$prefix/VERSIONS"
: > "$versions.tmp"
# order matters: libgit2 needs zlib, http-parser, mbedTLS and libssh2 (on mbedTLS) in the prefix
packages="zlib http-parser mbedtls libssh2 libgit2 sqlite3 jansson libyaml"
declare -A version_of
for pkg in $packages; do fetch "$pkg"; version_of[$pkg]=$fetched_ver; done
for pkg in $packages; do
  ver=${version_of[$pkg]}
  dir=$(unpack "$pkg" "$ver")
  say "building $pkg $ver ($toolchain)"
  log="$work/$pkg.log"
  "build_${pkg//-/_}" "$dir" "$ver" > "$log" 2>&1 || { tail -n 40 "$log" >&2; die "building $pkg failed (log above)"; }
  pinned=sha256; lock_lines "$pkg" | awk -v v="$ver" '$1==v && $3=="apt"' | grep -q . && pinned="apt-index"
  printf '%s %s %s\n' "$pkg" "$ver" "$pinned" >> "$versions.tmp"
done

# the Debian revisions, for `agor --version`
{
  echo "/* generated by mk/deps.sh — Debian source versions built into this prefix */"
  while read -r pkg ver _; do
    name=$(echo "$pkg" | tr 'a-z-' 'A-Z_')
    printf '#define AGOR_DEB_%s "%s"\n' "$name" "$ver"
  done < "$versions.tmp"
} > "$prefix/include/agor_deps_versions.h"
mv "$versions.tmp" "$versions"
rm -rf "$work"
say "done: $prefix ($(wc -l < "$versions") packages)"
