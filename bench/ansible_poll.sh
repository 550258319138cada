#!/usr/bin/env bash
# CPU seconds (user+sys) of ansible-playbook itself while one task runs SECONDS on localhost,
# at Ansible's default internal_poll_interval (0.001 s) and at the fleet's (fleet/ansible.py
# POLL_INTERVAL_S), alternating, REPEATS times each: what the controller's wait for a host
# costs (docs/method.md section 10, round 7).
#   bash bench/ansible_poll.sh [SECONDS] [REPEATS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-10}
reps=${2:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ours=$("$repo/.venv/bin/python" -c "from abibench.fleet.ansible import POLL_INTERVAL_S as p; print(p)")
printf -- "- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.command: sleep %s\n      changed_when: false\n" "$secs" >"$tmp/pb.yml"
echo "localhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3" >"$tmp/inv.ini"
echo "one task of ${secs}s; load $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$reps"); do
  for interval in 0.001 "$ours"; do
    printf "[defaults]\nhome = %s/h\nlocal_tmp = %s/l\ninternal_poll_interval = %s\n" \
      "$tmp" "$tmp" "$interval" >"$tmp/ansible.cfg"
    ANSIBLE_CONFIG=$tmp/ansible.cfg LC_ALL=C.UTF-8 /usr/bin/time -o "$tmp/t" -f "%U %S %e" \
      "$repo/.venv/bin/ansible-playbook" -i "$tmp/inv.ini" "$tmp/pb.yml" >/dev/null
    awk -v i="$interval" '{printf "internal_poll_interval %-6s %.2f CPU s (%.1f s wall)\n", i, $1 + $2, $3}' "$tmp/t"
  done
done
