#!/usr/bin/env bash
# The native ARM path without a board: an arm64 Debian 12 root run through qemu-user-static,
# abibench installed inside it by its own setup.sh, then `abibench probe` and a tiny run of
# ptrtree and nbody on armhf and aarch64 inside it.
#
#   bash bench/arm-host.sh [--aarch32] [--keep]
#
# --aarch32  register armhf programs from the start (a CPU with AArch32, like a Pi 3 or 4).
#            Without it the first probe sees a CPU without AArch32 (like some newer cores) and
#            must say so; the entry is then added, the probe repeated, and the run made.
# --keep     keep the root (printed) instead of deleting it.
#
# Slow (tens of minutes on 2 cores: every arm64 instruction of dpkg, pip and the compilers is
# emulated), so never part of CI. Run as root on Linux >= 6.7. The binfmt entries and mounts
# exist only in a private namespace (src/abibench/obtain/nsbinfmt.py) and end with it; the packages this
# script installs (qemu-user-static, debootstrap) are purged again, and the root is deleted.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
say() { printf 'arm-host: %s\n' "$*" >&2; }
die() { printf 'arm-host: error: %s\n' "$*" >&2; exit 3; }

SUITE=bookworm
SKIP="chromium fonts-dejavu-core npm"   # the browser workloads are not what this proves

# The Debian archive this host's apt uses (deb822 or one-line sources), for the root's apt.
host_mirror() {
  local uri
  uri=$(awk '/^URIs:/ && !/security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '$1 == "deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  printf '%s\n' "$uri"
}

# --------------------------------------------------------------------- inside the namespace
if [ "${1:-}" = "--inside" ]; then
  root=$2 mirror=$3
  export LC_ALL=C DEBIAN_FRONTEND=noninteractive
  say "second stage of debootstrap, emulated"
  # container=lxc: debootstrap sets /dev up without mknod, which a user namespace may not do.
  env container=lxc chroot "$root" /debootstrap/debootstrap --second-stage >"$root.log" 2>&1 \
    || { tail -5 "$root.log" >&2; die "debootstrap --second-stage failed (log above)"; }
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  printf 'deb %s %s main\n' "$mirror" "$SUITE" >"$root/etc/apt/sources.list"
  inside() {
    chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LC_ALL=C \
      CI=true ABIBENCH_SETUP_SKIP="$SKIP" /bin/bash -c "$1"
  }
  say "uname inside: $(inside 'uname -m')"
  # The host's own trust: CA certificates it added (a proxy's) and pip's settings, so that
  # apt and pip inside reach what the host reaches.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    inside 'update-ca-certificates >/dev/null'
  fi
  if [ -f /etc/pip.conf ]; then cp /etc/pip.conf "$root/etc/pip.conf"; fi
  say "bash setup.sh inside (apt-get and pip, emulated)"
  inside 'cd /root/abibench && bash setup.sh'
  echo "===== abibench probe (inside the emulated arm64 host; this CPU has no AArch32 mode)"
  inside 'cd /root/abibench && .venv/bin/abibench probe'
  # As a CPU that does run AArch32 (a Pi 3 or 4): armhf programs now execute directly.
  [ -e /proc/sys/fs/binfmt_misc/abibench-arm ] || python3 "$here/src/abibench/obtain/nsbinfmt.py" --register arm
  echo "===== abibench probe (the same host with AArch32: armhf programs execute)"
  inside 'cd /root/abibench && .venv/bin/abibench probe'
  echo "===== abibench run ptrtree nbody --abi armhf,aarch64 --rounds 2"
  rc=0
  inside 'cd /root/abibench && .venv/bin/abibench run ptrtree nbody --abi armhf,aarch64 \
    --rounds 2 --warmup 0 --set nodes=20000 --set steps=100000 --no-html' || rc=$?
  echo "===== abibench run: exit code $rc"
  exit "$rc"
fi

# --------------------------------------------------------------------- on the host
arches=(--arch aarch64) keep=0
for arg in "$@"; do
  case "$arg" in
    --aarch32) arches+=(--arch arm) ;;
    --keep) keep=1 ;;
    *) die "unknown argument '$arg': use --aarch32 or --keep" ;;
  esac
done
[ "$(id -u)" -eq 0 ] || die "run as root (chroot, namespaces, apt)"
mirror=$(host_mirror)
[ -n "$mirror" ] || die "no Debian archive in /etc/apt/sources.list(.d): add one"

added=()
for p in qemu-user-static debootstrap; do
  # read whole, then searched: under pipefail `cmd | grep -q` can fail on a match (SIGPIPE)
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || status=""
  if [[ $status != *"install ok installed"* ]]; then
    added+=("$p")
  fi
done
work=$(mktemp -d /var/tmp/abibench-arm-host.XXXXXX)
root=$work/root
cleanup() {
  # The namespace took its mounts with it; never delete through a mount that is still there.
  if [ "$keep" = 1 ]; then
    say "kept the root: $root"
  elif grep -q "^$work" <<< "$(findmnt -rn -o TARGET)"; then
    say "something is still mounted under $work: not deleting it"
  else
    rm -rf --one-file-system "$work"
  fi
  if [ "${#added[@]}" -gt 0 ]; then
    say "purging what this script installed: ${added[*]}"
    apt-get purge -y -q "${added[@]}" >/dev/null 2>&1 || say "apt-get purge ${added[*]} failed"
  fi
}
trap cleanup EXIT
if [ "${#added[@]}" -gt 0 ]; then
  say "installing ${added[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${added[@]}" \
    >/dev/null
fi

say "debootstrap --foreign --arch=arm64 --variant=minbase $SUITE (first stage, on the host)"
t0=$(date +%s)
debootstrap --foreign --arch=arm64 --variant=minbase --include=ca-certificates \
  "$SUITE" "$root" "$mirror" >"$work/first-stage.log" 2>&1 \
  || { tail -5 "$work/first-stage.log" >&2; die "debootstrap failed (log above)"; }
mkdir -p "$root/root/abibench"
# The checkout as committed (HEAD): never a tree caught in the middle of an edit or a merge.
git -C "$here" archive HEAD | tar -C "$root/root/abibench" -xf -
python3 "$here/src/abibench/obtain/nsbinfmt.py" "${arches[@]}" -- bash "$here/bench/arm-host.sh" --inside \
  "$root" "$mirror"
say "done in $(( $(date +%s) - t0 )) s"
