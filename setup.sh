#!/usr/bin/env bash
# abibench set-up: system packages, the i386 architecture, deb-src entries and a
# Python virtual environment. Idempotent: a second call only checks.
#
#   bash setup.sh run   set up, then run the default suite and write a report
#   bash setup.sh test  set up, then run the test suite
#   bash setup.sh       set up only
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

# Debian packages abibench needs at run time or in its tests. Keep this list the
# single source of truth: abibench probe names the same packages in its fixes.
PKGS=(
  build-essential gcc-multilib g++-multilib libc6-dev-x32 libc6-dev-i386
  dpkg-dev valgrind hyperfine bubblewrap python3-venv python3-dev
  sysbench
  autoconf automake tcl   # seed workloads: POV-Ray's prebuild.sh, SQLite's amalgamation (tclsh)
  chromium fonts-dejavu-core
  npm     # node-octane and chromium-octane fetch Octane (benchmark-octane) with npm pack
  util-linux   # unshare: a browser sample's own PID and mount namespaces (chroot mode)
  postgresql openssh-server openssh-client   # the shared results store and fleet hosts (tests)
)

# A package whose only use to us is one command is not needed when that command
# is already there from elsewhere: a machine with Node.js installed from another
# packaging has npm bundled, and Debian's npm package conflicts with that nodejs.
declare -A SATISFIED_BY_COMMAND=(
  [npm]=npm
)

say() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 3; }

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: run as root or install sudo"
  SUDO=(sudo)
fi

missing_pkgs() {
  local p
  for p in "${PKGS[@]}"; do
    if [ -n "${SATISFIED_BY_COMMAND[$p]:-}" ] && command -v "${SATISFIED_BY_COMMAND[$p]}" >/dev/null; then
      continue
    fi
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s\n' "$p"
  done
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
  if ! dpkg --print-foreign-architectures | grep -qx i386; then
    say "adding the i386 architecture"
    "${SUDO[@]}" dpkg --add-architecture i386
    changed=1
  fi
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
  if [ -n "$miss" ]; then
    # shellcheck disable=SC2086
    say "installing:" $miss
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
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q --no-install-recommends $miss \
        >/tmp/abibench-apt-install.log 2>&1 || ok=0
    if [ "$ours" = 1 ]; then "${SUDO[@]}" rm -f "$policy"; fi
    if [ "$ok" = 0 ]; then
      tail -5 /tmp/abibench-apt-install.log >&2
      die "could not install: $(echo $miss) (log: /tmp/abibench-apt-install.log); fix the apt sources and re-run bash setup.sh"
    fi
  fi
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

system_setup
python_setup

case "${1:-}" in
  run)  shift; exec .venv/bin/abibench run --report abibench-report.md --html abibench-report.html "$@" ;;
  test) shift; exec bash scripts/test.sh "$@" ;;
  "")   say "ready: .venv/bin/abibench" ;;
  *)    die "unknown argument '$1': use 'bash setup.sh run' or 'bash setup.sh test'" ;;
esac
