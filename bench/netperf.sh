#!/usr/bin/env bash
# Compares cnibench's TCP_RR, TCP_CRR, UDP_RR and TCP_STREAM with netperf 2.7
# (netserver) on the same lab path and pinning, interleaved (ours, netperf,
# ours, netperf ...), and prints medians and ratios: rate, p50/p99 latency,
# CPU µs per transaction on the client and on the server (each pod's cgroup,
# so kernel work charged to it counts), and context switches per
# transaction of the server process (perf stat on its pid, children
# included: netserver forks one per test).
# Path: pod-to-pod other-node (node0-pod0 -> node1-pod0); clients on CPU 0,
# servers on CPU 1. Our RR runs use no warmup, as netperf has none, so both
# sides' whole-run CPU is divided by the transactions of the same interval.
# The netperf commands are exactly those docs/engines.md says ours equal.
#
#   sudo bench/netperf.sh                       # ROUNDS=5 DUR=5
#   ROUNDS=3 DUR=3 sudo bench/netperf.sh
#   KERNEL_SYSCTLS=1 sudo bench/netperf.sh      # lab with the kernel's
#       ip_local_port_range (32768 60999) and tcp_tw_reuse (2), as in pods
#
# Needs: ./bin/cnibench (scripts/build.sh), netperf, jq, bc, perf, taskset.
# netperf is in Debian's non-free component: if it is missing the script
# enables non-free for the mirror already configured and installs it.
set -euo pipefail
trap 'echo "bench: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
: "${ROUNDS:=5}" "${DUR:=5}"
LAB=np$$
cnb="./bin/cnibench --lab $LAB"
SRV=198.19.1.10
NPPORT=12865

# install_netperf adds bookworm non-free for the Debian mirror the apt
# sources already use (deb822 or one-line format) and installs netperf.
install_netperf() {
  local uri
  uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '$1=="deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$uri" ] || { echo "bench: no Debian mirror found in /etc/apt/sources.list*" >&2; exit 1; }
  local f=/etc/apt/sources.list.d/cnibench-non-free.sources
  printf 'Types: deb\nURIs: %s\nSuites: bookworm\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" >"$f"
  apt-get -o DPkg::Lock::Timeout=900 update >/dev/null
  apt-get -o DPkg::Lock::Timeout=900 install -y netperf >/dev/null
}
command -v netperf >/dev/null || install_netperf
for t in netperf netserver jq bc perf taskset; do
  command -v $t >/dev/null || { echo "bench: $t missing (apt-get install netperf jq bc linux-perf util-linux)" >&2; exit 1; }
done
[ -x bin/cnibench ] || ./scripts/build.sh

cleanup() {
  for p in ${bgpids:-}; do kill "$p" 2>/dev/null || true; done
  $cnb lab down >/dev/null 2>&1 || true
  rm -f "$tmp".*
}
tmp=/tmp/cnb-netperf.$$
trap cleanup EXIT INT TERM
sysctls=()
if [ "${KERNEL_SYSCTLS:-0}" = 1 ]; then
  sysctls=(--sysctl "net.ipv4.ip_local_port_range=32768 60999" --sysctl net.ipv4.tcp_tw_reuse=2)
fi
$cnb lab up --nodes 2 --pods-per-node 1 "${sysctls[@]}" >/dev/null
cg=$(jq -r '.cgroup_root' /run/cnibench/$LAB/state.json)
[ -n "$cg" ] && [ "$cg" != null ] || { echo "bench: the lab has no cgroup v2 root: no CPU accounting" >&2; exit 1; }
cpu_us() { awk '/^usage_usec/{print $2}' "$cg/$1/cpu.stat"; }
cli() { $cnb lab exec node0-pod0 -- taskset -c 0 "$@"; }

# Servers pinned to CPU 1 in node1-pod0; each shell writes its pid and execs
# the server, so perf can attach to it (lab down kills them too).
$cnb lab exec node1-pod0 -- sh -c "echo \$\$ >$tmp.ours; exec taskset -c 1 ./bin/cnibench server" >/dev/null 2>&1 &
bgpids="$!"
$cnb lab exec node1-pod0 -- sh -c "echo \$\$ >$tmp.np; exec taskset -c 1 netserver -D -p $NPPORT" >/dev/null 2>&1 &
bgpids="$bgpids $!"
sleep 1
cli ./bin/cnibench client TCP_RR $SRV --duration 200ms --warmup 0s >/dev/null || { echo "bench: cnibench server is not answering" >&2; exit 1; }
cli netperf -H $SRV -p $NPPORT -l 1 -t TCP_RR -P 0 >/dev/null || { echo "bench: netserver is not answering" >&2; exit 1; }
ourpid=$(cat $tmp.ours); nppid=$(cat $tmp.np)

declare -A vals
add() { vals[$1]+="$2 "; }
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{a[NR]=$1} END{if(NR==0){print 0}else if(NR%2){print a[(NR+1)/2]}else{print (a[NR/2]+a[NR/2+1])/2}}'; }

# measure NAME SERVERPID EXTRACTOR CMD...: runs CMD in the client pod; the
# extractor prints "rate ops p50 p99 [errors]". Records the rate, latency,
# client and server cgroup CPU µs per op and server context switches per op.
measure() {
  local name=$1 spid=$2 extract=$3; shift 3
  local c0 s0 c1 s1 out rate ops p50 p99 errs cs
  perf stat -x, -e context-switches -p "$spid" -o $tmp.perf 2>/dev/null &
  local perfpid=$!
  sleep 0.2
  c0=$(cpu_us node0-pod0); s0=$(cpu_us node1-pod0)
  out=$(cli "$@" 2>&1) || { kill -INT $perfpid; wait $perfpid || true; echo "bench: $name failed: $out" >&2; return 0; }
  c1=$(cpu_us node0-pod0); s1=$(cpu_us node1-pod0)
  kill -INT $perfpid; wait $perfpid || true
  cs=$(awk -F, '/context-switches/{print $1}' $tmp.perf)
  read -r rate ops p50 p99 errs < <(echo "$out" | $extract)
  add "${name}_rate" "$rate"; add "${name}_p50" "$p50"; add "${name}_p99" "$p99"
  add "${name}_err" "${errs:-0}"
  if [ "${ops%.*}" -gt 0 ] 2>/dev/null; then
    add "${name}_ccpu" "$(echo "($c1-$c0)/$ops" | bc -l)"
    add "${name}_scpu" "$(echo "($s1-$s0)/$ops" | bc -l)"
    add "${name}_cs" "$(echo "${cs:-0}/$ops" | bc -l)"
  fi
}

# Extractors print: rate ops p50 p99 errors. For streams rate is Gbit/s and
# ops is MB delivered (CPU per MB).
ours_rr() { jq -r '"\(.rate_per_sec) \(.transactions) \(.latency.p50_us) \(.latency.p99_us) \(.errors)\(if .port_exhaustion then "+ports" else "" end)\(if .stalled then "+stall" else "" end)"'; }
ours_tput() { jq -r '"\(.throughput_bits_per_sec/1e9) \(.bytes_received/1e6|floor) 0 0 \(.errors)"'; }
# netperf -P 0 -- -o prints one CSV line of the selected outputs.
np_rr() { awk -F, -v d=$DUR 'NF>=3{printf "%s %d %s %s 0\n", $1, $1*d, $2, $3}'; }
np_tput() { awk -F, -v d=$DUR 'NF>=1{printf "%f %d 0 0 0\n", $1/1000, $1*d/8}'; }
npo="-o THROUGHPUT,P50_LATENCY,P99_LATENCY"
np="netperf -H $SRV -p $NPPORT -l $DUR -P 0"          # word-split on purpose
ours="./bin/cnibench client --duration ${DUR}s --json"

echo "load before: $(cat /proc/loadavg)" >&2
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS (load $(cut -d' ' -f1-3 /proc/loadavg)) ..." >&2
  measure ours_crr    "$ourpid" ours_rr   $ours TCP_CRR $SRV --warmup 0s
  measure np_crr      "$nppid"  np_rr     $np -t TCP_CRR -- -r 1,1 $npo
  measure ours_rr     "$ourpid" ours_rr   $ours TCP_RR $SRV --warmup 0s
  measure np_rr       "$nppid"  np_rr     $np -t TCP_RR -- -r 1,1 -D $npo
  measure np_rrnagle  "$nppid"  np_rr     $np -t TCP_RR -- -r 1,1 $npo
  measure ours_udprr  "$ourpid" ours_rr   $ours UDP_RR $SRV --warmup 0s
  measure np_udprr    "$nppid"  np_rr     $np -t UDP_RR -- -r 1,1 $npo
  measure ours_stream "$ourpid" ours_tput $ours TCP_STREAM $SRV --warmup 0s
  measure np_stream   "$nppid"  np_tput   $np -t TCP_STREAM -- -m 131072 -o THROUGHPUT
done
echo "load after: $(cat /proc/loadavg)" >&2

printf '\n%-46s %10s %10s %7s %9s %9s %11s %11s %9s\n' "comparison (median of $ROUNDS x ${DUR}s)" cnibench netperf ratio "p50 µs" "p99 µs" "cli CPU µs" "srv CPU µs" "srv cs"
echo "(per transaction; for TCP_STREAM rate is Gbit/s and CPU µs per MB; cells are ours/netperf)"
m() { echo "${vals[$1]:-}" | median; }
f() { printf '%.*f/%.*f' "$3" "$(m "$1")" "$3" "$(m "$2")"; }
row() { # label ours-prefix np-prefix
  local a b ratio="n/a"
  a=$(m "${2}_rate"); b=$(m "${3}_rate")
  [ "$(echo "$b > 0" | bc -l)" = 1 ] && ratio=$(printf '%.3f' "$(echo "$a/$b" | bc -l)")
  printf '%-46s %10.2f %10.2f %7s %9s %9s %11s %11s %9s\n' "$1" "$a" "$b" "$ratio" \
    "$(f "${2}_p50" "${3}_p50" 0)" "$(f "${2}_p99" "${3}_p99" 0)" \
    "$(f "${2}_ccpu" "${3}_ccpu" 1)" "$(f "${2}_scpu" "${3}_scpu" 1)" "$(f "${2}_cs" "${3}_cs" 2)"
}
row "TCP_CRR 1 B vs netperf -t TCP_CRR -- -r 1,1" ours_crr np_crr
row "TCP_RR 1 B vs netperf -t TCP_RR -- -r 1,1 -D" ours_rr np_rr
row "TCP_RR 1 B vs netperf ... without -D" ours_rr np_rrnagle
row "UDP_RR 1 B vs netperf -t UDP_RR -- -r 1,1" ours_udprr np_udprr
row "TCP_STREAM vs netperf -t TCP_STREAM -m 128K" ours_stream np_stream
echo
echo "our errors per sample: TCP_CRR ${vals[ours_crr_err]:-} TCP_RR ${vals[ours_rr_err]:-} UDP_RR ${vals[ours_udprr_err]:-}"
echo "our TCP_CRR rates: ${vals[ours_crr_rate]:-}"
echo "netperf TCP_CRR rates: ${vals[np_crr_rate]:-}"
echo "sysctls: $($cnb lab exec node0-pod0 -- sh -c 'echo ports $(cat /proc/sys/net/ipv4/ip_local_port_range) tw_reuse $(cat /proc/sys/net/ipv4/tcp_tw_reuse)')"
echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo), kernel $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ)"
