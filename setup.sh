#!/usr/bin/env bash
# abibench set-up: system packages, the i386 architecture, deb-src entries and a
# Python virtual environment. Idempotent: a second call only checks.
#
#   bash setup.sh run   set up, then run the default suite and write a report
#   bash setup.sh test  set up, then run the test suite
#   bash setup.sh       set up only
#   bash setup.sh missing [PKG...]   print the packages set-up would install (or those of
#                           PKG... not present), one a line, nothing when it has run; changes
#                           nothing, needs no root. The tests skip on exactly this answer
#                           (tests/conftest.py, needs_setup).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

# Debian packages abibench needs at run time or in its tests. Keep these lists the
# single source of truth: abibench probe names the same packages in its fixes.
PKGS=(
  build-essential
  dpkg-dev valgrind hyperfine bubblewrap python3-venv python3-dev
  linux-perf   # bench/harness_trace.py: the scheduler's events around a short program's sample
  libc6-dbg   # the C library's symbols: counted runs name its internal functions (_int_malloc)
  sysbench
  autoconf automake tcl   # seed workloads: POV-Ray's prebuild.sh, SQLite's amalgamation (tclsh)
  cmake   # examples/cmake and examples/jq (Oniguruma is a CMake project)
  meson ninja-build   # examples/meson: a Meson project cross-built with a cross file
  golang-go rustc cargo   # examples/go (GOARCH=386/amd64) and examples/rust (cargo --target)
  chromium fonts-dejavu-core
  qemu-user   # the dynamic build: it has the TCG plugin API that --counters uses under emulation
  qemu-system-x86   # abibench vm: a booted x86_64 kernel (TCG) runs x32 where this kernel cannot
  mmdebstrap arch-test e2fsprogs   # abibench system: Debian roots per arch, ext4 disks by mke2fs -d
  qemu-system-arm   # abibench system: the ARM kernels on QEMU's virt board (qemu-system-arm, -aarch64)
  qemu-user-static   # abibench system: an ARM root's maintainer scripts, through a private binfmt entry
  npm     # node-octane and chromium-octane fetch Octane (benchmark-octane) with npm pack
  util-linux   # unshare: a browser sample's own PID and mount namespaces (chroot mode)
  xvfb   # the virtual X server of the GL and game workloads (run/xserver.py)
  postgresql openssh-server openssh-client   # the shared results store and fleet hosts (tests)
)

# Per host architecture: the other ABIs' compilers and C libraries.
# gcc-multilib / g++-multilib are NOT used: Debian's gcc-multilib Conflicts with every cross
# gcc (gcc-12-aarch64-linux-gnu, gcc-12-arm-linux-gnueabihf, ...), and the only file it ships
# is the link /usr/include/asm -> x86_64-linux-gnu/asm. The versioned gcc-N-multilib packages
# carry the i386/x32 support and conflict with nothing; the link is made by ensure_asm_link.
ARM_HF=(gcc-arm-linux-gnueabihf g++-arm-linux-gnueabihf libc6-dev-armhf-cross)
ARM_64=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross)
# The ILP32/LP64 pairs of other machines, cross-built and run under qemu-user: each 64-bit
# cross gcc with the C libraries of its 32-bit half (Debian's multilib cross packages).
PAIRS=(
  gcc-sparc64-linux-gnu libc6-dev-sparc64-cross libc6-dev-sparc-sparc64-cross
  lib32gcc-12-dev-sparc64-cross
  gcc-mips64el-linux-gnuabi64 libc6-dev-mips64el-cross libc6-dev-mipsn32-mips64el-cross
  libn32gcc-12-dev-mips64el-cross libc6-dev-mips32-mips64el-cross lib32gcc-12-dev-mips64el-cross
  gcc-powerpc-linux-gnu libc6-dev-powerpc-cross gcc-powerpc64-linux-gnu libc6-dev-ppc64-cross
  gcc-s390x-linux-gnu libc6-dev-s390x-cross libc6-dev-s390-s390x-cross
  lib32gcc-12-dev-s390x-cross
)
case "$(uname -m)" in
  x86_64)  ARCH_PKGS=(libc6-dev-x32 libc6-dev-i386 "${ARM_HF[@]}" "${ARM_64[@]}" "${PAIRS[@]}"); FOREIGN_ARCH=i386
           # abibench system's ARM kernels (linux-image-armmp-lpae, -arm64): apt's index of each
           SYSTEM_ARCHES="armhf arm64" ;;
  # An arm64 board that runs AArch32 executes armhf programs itself: they need Debian's armhf
  # loader and C library where the programs look for them (/lib/ld-linux-armhf.so.3), as a
  # Raspberry Pi OS user installs them; the cross package's copy is only for linking.
  aarch64) ARCH_PKGS=("${ARM_HF[@]}" libc6:armhf libstdc++6:armhf); FOREIGN_ARCH=armhf ;;
  armv7l|armv8l) ARCH_PKGS=("${ARM_64[@]}"); FOREIGN_ARCH="" ;;
  *) ARCH_PKGS=(); FOREIGN_ARCH="" ;;
esac
PKGS+=("${ARCH_PKGS[@]}")
# Wanted, not required: a failure to install them is said and setup goes on. Rust's i686
# standard library (examples/rust's i386 build) is Debian's multiarch libstd-rust-dev:i386,
# which needs every shared i386 library at the amd64 version: a mirror whose i386 index lags
# (a security update not yet there) cannot install it until it catches up.
OPTIONAL_PKGS=()
[ "$(uname -m)" = x86_64 ] && OPTIONAL_PKGS=(libstd-rust-dev:i386)
# ABIBENCH_SETUP_OPTIONAL="pkg ...": try these instead (tests/test_setup_optional.py).
if [ -n "${ABIBENCH_SETUP_OPTIONAL:-}" ]; then read -ra OPTIONAL_PKGS <<< "$ABIBENCH_SETUP_OPTIONAL"; fi
# The default gcc's major version (gcc -> gcc-12 on Debian 12): its multilib packages.
gcc_major() {
  local deps; deps=$(apt-cache depends gcc 2>/dev/null) || return 1
  sed -n 's/^ *Depends: gcc-\([0-9][0-9]*\)$/\1/p' <<< "$deps" | sed -n 1p
}
# (Not for `setup.sh missing PKG...`, which asks about those alone: apt-cache takes seconds.)
if [ "$(uname -m)" = x86_64 ] && { [ "${1:-}" != missing ] || [ "$#" -le 1 ]; }; then
  major=$(gcc_major || true)
  PKGS+=("gcc-${major:-12}-multilib" "g++-${major:-12}-multilib")
fi
# ABIBENCH_SETUP_SKIP="pkg ..." leaves packages out (bench/arm-host.sh: no browser in an
# emulated arm64 root, where installing it would take most of an hour), optional ones too (the
# fleet tests' hosts are the machine whose own setup.sh has just tried them: tests/servers.py).
if [ -n "${ABIBENCH_SETUP_SKIP:-}" ]; then
  kept=()
  for p in "${PKGS[@]}"; do
    case " $ABIBENCH_SETUP_SKIP " in *" $p "*) ;; *) kept+=("$p") ;; esac
  done
  PKGS=("${kept[@]}")
  kept=()
  for p in "${OPTIONAL_PKGS[@]}"; do
    case " $ABIBENCH_SETUP_SKIP " in *" $p "*) ;; *) kept+=("$p") ;; esac
  done
  OPTIONAL_PKGS=("${kept[@]}")
fi
# Removed if present: it blocks the cross compilers (and installed later, removes them).
CONFLICTING=(gcc-multilib g++-multilib)

say() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 3; }

# A command's answer is read whole before it is searched, never `cmd | grep -q`: under pipefail
# a reader that stops at its first match can end cmd by SIGPIPE, failing the pipeline with the
# answer found (dpkg writes a line at a time: `dpkg --print-foreign-architectures | grep -qx
# i386` failed 34 times in 200, so set-up added i386 again and ran apt-get update). Invariant in
# docs/reliability.md; tests/test_shell_pipes.py.
installed() {
  local status; status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [[ $status == *"install ok installed"* ]]
}

# One listing of what is installed, under its name, name:arch and every name it provides (a
# vendor's nodejs provides npm and conflicts with Debian's npm package): a package of PKGS found
# there counts as present. One dpkg-query for all, so `bash setup.sh missing` answers at once.
missing_pkgs() {
  { dpkg-query -W -f='${db:Status-Status} ${Package} ${Package}:${Architecture} ${Provides}\n' \
      2>/dev/null || true; } \
    | awk -v want="${PKGS[*]}" '
        $1 == "installed" { for (i = 2; i <= NF; i++) { n = $i; sub(/[(),].*/, "", n); have[n] = 1 } }
        END { k = split(want, w, " "); for (i = 1; i <= k; i++) if (!(w[i] in have)) print w[i] }'
}

# What gcc-multilib would have provided: without it `gcc -m32` of anything that includes
# <errno.h> fails with "asm/errno.h: No such file or directory". The cross compilers search
# /usr/<triplet>/include first, which has its own asm/, so the link does not disturb them.
ensure_asm_link() {
  local link=/usr/include/asm
  [ -e "$link" ] && return 0
  [ -d /usr/include/x86_64-linux-gnu/asm ] || return 0   # not an x86_64 host
  say "linking $link -> x86_64-linux-gnu/asm (what gcc-multilib ships)"
  "${SUDO[@]}" ln -sfn x86_64-linux-gnu/asm "$link"
}

# deb-src entries mirror every enabled deb822 "deb" entry of Debian's archive,
# written to a file of our own so the system's own files are never edited.
ensure_deb_src() {
  local out=/etc/apt/sources.list.d/abibench-deb-src.sources
  [ -f "$out" ] && return 1
  local tmp; tmp=$(mktemp)
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    [ "$f" = "$out" ] && continue
    # keep only stanzas that are Debian's own archive (signed by the Debian keyring)
    awk 'BEGIN{RS=""; ORS="\n\n"}
         /Types:[^\n]*deb/ && /debian-archive-keyring/ && !/deb-src/ {
           gsub(/Types:[^\n]*/, "Types: deb-src"); print }' "$f" >> "$tmp"
  done
  if [ -f /etc/apt/sources.list ]; then
    grep -E '^deb\s' /etc/apt/sources.list | grep -v 'deb-src' | sed 's/^deb /deb-src /' \
      > /tmp/abibench-src.list || true
    if [ -s /tmp/abibench-src.list ]; then
      "${SUDO[@]}" cp /tmp/abibench-src.list /etc/apt/sources.list.d/abibench-deb-src.list
    fi
  fi
  if [ -s "$tmp" ]; then "${SUDO[@]}" cp "$tmp" "$out"; else "${SUDO[@]}" touch "$out"; fi
  rm -f "$tmp"
  return 0
}

system_setup() {
  local changed=0
  local a foreign
  foreign=$(dpkg --print-foreign-architectures)
  for a in $FOREIGN_ARCH ${SYSTEM_ARCHES:-}; do
    if ! grep -qx -- "$a" <<< "$foreign"; then
      say "adding the $a architecture"
      "${SUDO[@]}" dpkg --add-architecture "$a"
      changed=1
    fi
  done
  if ensure_deb_src; then say "added deb-src entries"; changed=1; fi
  local miss; miss=$(missing_pkgs)
  if [ -n "$miss" ] || [ "$changed" = 1 ]; then
    say "apt-get update"
    # A partial failure (seen: the i386 security index not refreshing) is not
    # fatal: what matters is whether the packages we need are installable.
    "${SUDO[@]}" apt-get update -q >/tmp/abibench-apt-update.log 2>&1 \
      || say "apt-get update reported errors (see /tmp/abibench-apt-update.log); going on"
  fi
  miss=$(missing_pkgs)
  local remove=() p
  for p in "${CONFLICTING[@]}"; do installed "$p" && remove+=("$p-"); done
  if [ -n "$miss" ] || [ "${#remove[@]}" -gt 0 ]; then
    # shellcheck disable=SC2086
    [ -z "$miss" ] || say "installing:" $miss
    [ "${#remove[@]}" -eq 0 ] || say "removing ${remove[*]%-} (it conflicts with the cross compilers; the /usr/include/asm link replaces it)"
    # postgresql and openssh-server would start system services (a cluster on 5432, sshd on
    # 22) where an init system runs; abibench only ever starts its own, on loopback, in its
    # tests. A policy-rc.d of our own (only when there is none) tells the packages not to.
    local policy=/usr/sbin/policy-rc.d ours=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\n# abibench setup.sh: no services started while it installs\nexit 101\n' \
        | "${SUDO[@]}" tee "$policy" >/dev/null && "${SUDO[@]}" chmod 755 "$policy" && ours=1
    fi
    local ok=1
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q --no-install-recommends $miss "${remove[@]}" \
        >/tmp/abibench-apt-install.log 2>&1 || ok=0
    if [ "$ours" = 1 ]; then "${SUDO[@]}" rm -f "$policy"; fi
    if [ "$ok" = 0 ]; then
      tail -5 /tmp/abibench-apt-install.log >&2
      die "could not install: $(echo $miss) (log: /tmp/abibench-apt-install.log); fix the apt sources and re-run bash setup.sh"
    fi
  fi
  ensure_asm_link
  optional_setup
}

# An optional package that could not be installed is not tried again until apt's package lists
# change (an apt-get update that brought anything new): the same lists give the same answer, and
# each try is an apt-get install holding dpkg's lock (about 4 CPU s, 35 s under load). The stamp
# holds the lists' signature; a failure to get dpkg's lock is not remembered (it says nothing
# about the package).
apt_lists_signature() {
  local lists=/var/lib/apt/lists/
  eval "$(apt-config shell lists Dir::State::lists/d 2>/dev/null || true)"
  find "$lists" -maxdepth 1 -type f -printf '%f %s %T@\n' 2>/dev/null | LC_ALL=C sort | sha256sum | cut -d' ' -f1
}

optional_setup() {
  local p stamp sig=""
  local stamps="${ABIBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/abibench}/setup-optional"
  for p in "${OPTIONAL_PKGS[@]}"; do
    installed "$p" && continue
    [ -n "$sig" ] || sig=$(apt_lists_signature)
    stamp="$stamps/${p//[^A-Za-z0-9.+-]/_}.failed"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sig" ]; then
      say "not trying $p again (optional): it could not be installed, and apt's package lists are unchanged since (rm $stamp to try)"
      continue
    fi
    say "installing (optional): $p"
    if DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q \
        --no-install-recommends "$p" >/tmp/abibench-apt-optional.log 2>&1; then
      rm -f "$stamp"
    else
      say "could not install $p (optional; log: /tmp/abibench-apt-optional.log): $(grep -m1 -E '^ |^E:' /tmp/abibench-apt-optional.log | sed 's/^ *//')"
      say "  its tests skip, naming the fix; a rustup user runs: rustup target add i686-unknown-linux-gnu"
      if ! grep -q 'Could not get lock' /tmp/abibench-apt-optional.log; then
        mkdir -p "$stamps" && printf '%s\n' "$sig" > "$stamp"
      fi
    fi
  done
}

python_setup() {
  local py=${PYTHON:-}
  if [ -z "$py" ]; then
    for c in python3.11 python3; do
      if command -v "$c" >/dev/null && "$c" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))'; then py=$c; break; fi
    done
  fi
  [ -n "$py" ] || die "no Python 3.11 or newer found: apt-get install python3"
  # ABIBENCH_VENV: the environment's place (default .venv here); `abibench fleet` keeps one per
  # host outside the unpacked sources, so a new version of them does not install everything again.
  local venv=${ABIBENCH_VENV:-.venv}
  local stamp=$venv/.abibench-installed
  if [ ! -x "$venv/bin/python" ]; then
    say "creating $venv with $py"
    "$py" -m venv "$venv"
  fi
  # Re-install only when the dependency declaration or the sources' place changed.
  local want; want="$(sha256sum pyproject.toml | cut -d' ' -f1) $here"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "installing abibench and its Python dependencies into $venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$venv/bin/python" -m pip install -q -e '.[dev]'
    echo "$want" > "$stamp"
  fi
}

# The one answer to "has setup.sh run here?": the tests ask it too (tests/conftest.py).
# With names, the same answer for those names (a test that needs only some of them).
if [ "${1:-}" = missing ]; then
  shift
  if [ "$#" -gt 0 ]; then PKGS=("$@"); fi
  missing_pkgs
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: run as root or install sudo"
  SUDO=(sudo)
fi

system_setup
python_setup

case "${1:-}" in
  run)  shift; exec .venv/bin/abibench run --report abibench-report.md --html abibench-report.html "$@" ;;
  test) shift; exec bash scripts/test.sh "$@" ;;
  "")   say "ready: .venv/bin/abibench" ;;
  *)    die "unknown argument '$1': use 'bash setup.sh run', 'bash setup.sh test' or 'bash setup.sh missing'" ;;
esac
