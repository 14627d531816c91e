#!/usr/bin/env bash
# Runs a command beside CPU hogs, as on a busy host (a CI runner, a node
# with its pods): the tests must hold there, or say why their assertion
# holds under load (README, "Tests on a busy host").
#   scripts/stress.sh go test ./engine/...
# It starts STRESS_HOGS busy loops (default 3 × nproc: a load average near
# three times the cores, as issue 30 asks) at normal priority, samples the
# load average every 5 s, and on exit (also on SIGINT/SIGTERM) kills the
# hogs and the sampler by pid and prints the highest 1-minute load average
# seen. It exits with the command's code.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
hogs=${STRESS_HOGS:-$(( 3 * $(nproc) ))}
peak=$(mktemp)
pids=()
stop() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  pids=()
  echo "stress: stopped $hogs CPU hogs; highest 1-minute load average seen: $(cat "$peak") on $(nproc) cores" >&2
  rm -f "$peak"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq "$hogs"); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done
# The sampler keeps the highest 1-minute load average in $peak.
(
  max=0
  while :; do
    read -r now _ </proc/loadavg
    max=$(awk -v a="$max" -v b="$now" 'BEGIN { print (b > a ? b : a) }')
    echo "$max" >"$peak"
    sleep 5
  done
) &
pids+=($!)
echo "stress: running beside $hogs CPU hogs on $(nproc) cores (STRESS_HOGS to change): $*" >&2
rc=0
"$@" || rc=$?
exit "$rc"
