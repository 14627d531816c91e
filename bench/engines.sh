#!/usr/bin/env bash
# Compares cnibench's engines with the C tools on the same lab path and
# pinning, in interleaved pairs (ours and theirs back to back, which goes
# first alternating by round), and prints medians and the paired ratios
# (median of the per-round ratios, with a 95% interval). Path: pod-to-pod other-node (node0-pod0 -> node1-pod0); clients on
# CPU 0, servers on CPU 1. CPU per transaction is read from the client pod's
# cgroup (process and kernel work charged to it) over the whole client run,
# so our RR runs use no warmup (qperf and sockperf have none either):
# otherwise our warmup's CPU would be divided by the measured transactions.
#
#   sudo bench/engines.sh            # ROUNDS=5 DUR=5 by default
#   ROUNDS=3 DUR=3 sudo bench/engines.sh
#   ONLY=udp sudo bench/engines.sh   # only the comparisons named (space-separated):
#                                    # tcp1 tcp4 udp udpgso tcprr udprr tcprr14 udprr14
#
# udpgso runs our UDP_STREAM with --udp-gso against the same iperf3 -u runs:
# iperf3 3.12 has no GSO, so that row is not like for like (the udp row is).
#
# TCP streams are also counted on the wire (the server pod's eth0 received
# bytes over each whole run), a check that neither tool's count flatters it.
#
# Needs: ./bin/cnibench (scripts/build.sh), iperf3, qperf, sockperf, jq, iproute2.
set -euo pipefail
trap 'echo "bench: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-5}
ONLY=${ONLY:-tcp1 tcp4 udp udpgso tcprr udprr tcprr14 udprr14}
LAB=${LAB:-bench$$}
cnb="./bin/cnibench --lab $LAB"
SRV=198.19.1.10
for t in iperf3 qperf sockperf jq taskset; do
  command -v $t >/dev/null || { echo "bench: $t missing (apt-get install iperf3 qperf sockperf jq util-linux)" >&2; exit 1; }
done
[ -x bin/cnibench ] || ./scripts/build.sh

cleanup() { $cnb lab down >/dev/null 2>&1 || true; }
trap cleanup EXIT INT TERM
$cnb lab up --nodes 2 --pods-per-node 1 >/dev/null
cg=$(jq -r '.cgroup_root' /run/cnibench/$LAB/state.json)
cpu_us() { awk '/^usage_usec/{print $2}' "$cg/node0-pod0/cpu.stat"; }
cli() { $cnb lab exec node0-pod0 -- taskset -c 0 "$@"; }

# Servers, pinned to CPU 1, inside node1-pod0 (lab down kills them).
$cnb lab exec node1-pod0 -- taskset -c 1 ./bin/cnibench server >/dev/null 2>&1 &
$cnb lab exec node1-pod0 -- taskset -c 1 iperf3 -s -p 5301 -D >/dev/null
$cnb lab exec node1-pod0 -- taskset -c 1 qperf >/dev/null 2>&1 &
$cnb lab exec node1-pod0 -- taskset -c 1 sockperf server -i $SRV -p 11111 >/dev/null 2>&1 &
$cnb lab exec node1-pod0 -- taskset -c 1 sockperf server --tcp -i $SRV -p 11112 >/dev/null 2>&1 &
sleep 1
cli ./bin/cnibench client TCP_RR $SRV --duration 200ms --warmup 0s >/dev/null || { echo "bench: cnibench server is not answering" >&2; exit 1; }

declare -A vals cpu wire
add() { vals[$1]+="$2 "; cpu[$1]+="${3:-0} "; }
# rx_bytes: what the server pod's eth0 received (netlink, so the pod's own
# counters): the wire's count, independent of what either tool reports.
rx_bytes() { $cnb lab exec node1-pod0 -- ip -j -s link show dev eth0 | jq '.[0].stats64.rx.bytes'; }
now() { date +%s.%N; }
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{a[NR]=$1} END{if(NR==0){print 0}else if(NR%2){print a[(NR+1)/2]}else{print (a[NR/2]+a[NR/2+1])/2}}'; }

# measure NAME UNIT-EXTRACTOR CMD...: runs CMD, records its value and the
# client cgroup's CPU µs per unit of work (if the extractor prints "value ops").
measure() {
  local name=$1 extract=$2; shift 2
  local c0 c1 b0 b1 t0 t1 out v ops extra
  b0=$(rx_bytes); t0=$(now); c0=$(cpu_us)
  out=$(cli "$@" 2>&1) || { echo "bench: $name failed: $out" >&2; return 0; }
  c1=$(cpu_us); t1=$(now); b1=$(rx_bytes)
  # Gbit/s on the wire over the whole run (warmup and start-up included,
  # the same for both tools): a check that neither tool's count flatters it.
  wire[$name]+="$(echo "($b1-$b0)*8/($t1-$t0)/1000000000" | bc -l) "
  read -r v ops extra < <(echo "$out" | $extract)
  [ -n "${extra:-}" ] && vals[${name}_extra]+="$extra "
  local per=0
  [ -n "${ops:-}" ] && [ "${ops%.*}" -gt 0 ] 2>/dev/null && per=$(echo "($c1-$c0)/$ops" | bc -l)
  add "$name" "$v" "$per"
}

# Extractors print: value [units of work for CPU accounting [extra]].
# Streams: Gbit/s and MB delivered (the receiver's count).
ours_tput()   { jq -r '"\(.throughput_bits_per_sec/1e9) \(.bytes_received/1e6|floor)"'; }
# UDP extractors print: delivered Gbit/s, packets, loss % (the receiver's view).
ours_udp()    { jq -r '"\(.throughput_bits_per_sec/1e9) \(.packets_sent) \(.loss_percent // 0)"'; }
ours_rr()     { jq -r '"\(.rate_per_sec) \(.transactions)"'; }
iperf_tput()  { jq -r '"\(.end.sum_received.bits_per_second/1e9) \(.end.sum_received.bytes/1e6|floor)"'; }
iperf_udp()   { jq -r '"\(.end.sum.bits_per_second/1e9) \(.end.sum.packets) \(.end.sum.lost_percent)"'; }
# qperf prints one-way latency (half the round trip): rate = 1 / (2 × latency).
qperf_rr()    { awk -v d=$DUR '/latency/{v=$3; if($4=="ms")v*=1000; if($4=="ns")v/=1000; r=1e6/(2*v); printf "%f %d\n", r, r*d}'; }
# sockperf ping-pong: ReceivedMessages over RunTime.
sockperf_rr() { awk -F'[=; ]+' '/\[Valid Duration\]/{for(i=1;i<=NF;i++){if($i=="RunTime")t=$(i+1); if($i=="ReceivedMessages")n=$(i+1)}; sub("sec","",t); printf "%f %d\n", n/t, n}'; }

command -v bc >/dev/null || { echo "bench: bc missing (apt-get install bc)" >&2; exit 1; }
# pair A B: runs the two measure commands of one comparison, ours first in
# odd rounds and the C tool first in even ones, so that neither always runs
# on a machine just warmed (or disturbed) by the other.
pair() { if (( r % 2 )); then eval "$1"; eval "$2"; else eval "$2"; eval "$1"; fi; }
# want NAME: is comparison NAME in ONLY?
want() { [[ " $ONLY " == *" $1 "* ]]; }
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS ..." >&2
  if want tcp1; then
    pair "measure ours_tcp1   ours_tput  ./bin/cnibench client TCP_STREAM $SRV --duration ${DUR}s --warmup 1s --json" \
         "measure iperf_tcp1  iperf_tput iperf3 -c $SRV -p 5301 -t $DUR -O 1 -J"
  fi
  if want tcp4; then
    pair "measure ours_tcp4   ours_tput  ./bin/cnibench client TCP_STREAM $SRV --streams 4 --duration ${DUR}s --warmup 1s --json" \
         "measure iperf_tcp4  iperf_tput iperf3 -c $SRV -p 5301 -P 4 -t $DUR -O 1 -J"
  fi
  if want udp || want udpgso; then
    if (( r % 2 == 0 )); then measure iperf_udp iperf_udp iperf3 -c $SRV -p 5301 -u -b 0 -l 1400 -t $DUR -O 1 -J; fi
    want udp && measure ours_udp    ours_udp   ./bin/cnibench client UDP_STREAM $SRV --message-size 1400 --duration ${DUR}s --warmup 1s --json
    want udpgso && measure ours_udpgso ours_udp ./bin/cnibench client UDP_STREAM $SRV --message-size 1400 --udp-gso --duration ${DUR}s --warmup 1s --json
    if (( r % 2 )); then measure iperf_udp iperf_udp iperf3 -c $SRV -p 5301 -u -b 0 -l 1400 -t $DUR -O 1 -J; fi
  fi
  if want tcprr; then
    pair "measure ours_tcprr  ours_rr    ./bin/cnibench client TCP_RR $SRV --duration ${DUR}s --warmup 0s --json" \
         "measure qperf_tcprr qperf_rr   qperf -t $DUR $SRV tcp_lat"
  fi
  if want udprr; then
    pair "measure ours_udprr  ours_rr    ./bin/cnibench client UDP_RR $SRV --duration ${DUR}s --warmup 0s --json" \
         "measure qperf_udprr qperf_rr   qperf -t $DUR $SRV udp_lat"
  fi
  if want tcprr14; then
    pair "measure ours_tcprr14 ours_rr   ./bin/cnibench client TCP_RR $SRV --message-size 14 --duration ${DUR}s --warmup 0s --json" \
         "measure sockperf_tcprr sockperf_rr sockperf ping-pong --tcp -i $SRV -p 11112 -m 14 -t $DUR"
  fi
  if want udprr14; then
    pair "measure ours_udprr14 ours_rr   ./bin/cnibench client UDP_RR $SRV --message-size 14 --duration ${DUR}s --warmup 0s --json" \
         "measure sockperf_udprr sockperf_rr sockperf ping-pong -i $SRV -p 11111 -m 14 -t $DUR"
  fi
done

# paired OURS THEIRS: the rounds are pairs (the two runs back to back),
# so the ratio is taken per round: prints the median of the per-round
# ratios and a distribution-free 95% interval for that median (order
# statistics, binomial ranks), or "n/a" when no round has theirs > 0.
paired() {
  awk -v a="$1" -v b="$2" 'BEGIN{
    n=split(a,x," "); split(b,y," "); m=0
    for(i=1;i<=n;i++) if(y[i]+0>0) r[++m]=x[i]/y[i]
    if(m==0){print "n/a"; exit}
    for(i=2;i<=m;i++){v=r[i]; for(j=i-1;j>=1&&r[j]>v;j--) r[j+1]=r[j]; r[j+1]=v}
    med=(m%2)?r[(m+1)/2]:(r[m/2]+r[m/2+1])/2
    # largest k with P(Bin(m,1/2) <= k-1) <= 0.025
    k=0; c=0; p=0.5^m
    for(i=0;i<m;i++){c+=p; if(c>0.025) break; k=i+1; p=p*(m-i)/(i+1)}
    if(k==0){printf "%.3f [no bound, %d rounds]\n", med, m}
    else printf "%.3f [%.3f, %.3f]\n", med, r[k], r[m+1-k]
  }'
}

printf '\n%-38s %10s %10s %24s %16s %24s\n' "comparison (median of $ROUNDS)" "cnibench" "C tool" "ratio, paired [95%]" "CPU µs/op ours/C" "CPU/op ratio, paired"
echo "(op: MB delivered for TCP streams, packet sent for UDP streams, transaction for RR;"
echo " ratios are medians of the per-round ratios, rounds being interleaved pairs)"
row() { # label ours theirs unit
  local a b ca cb cpucol="-"
  a=$(echo "${vals[$2]:-}" | median); b=$(echo "${vals[$3]:-}" | median)
  ca=$(echo "${cpu[$2]:-}" | median); cb=$(echo "${cpu[$3]:-}" | median)
  [ "$(echo "$cb > 0" | bc -l)" = 1 ] && cpucol=$(printf '%.0f/%.0f' "$ca" "$cb")
  printf '%-38s %10.2f %10.2f %24s %16s %24s\n' "$1 ($4)" "$a" "$b" "$(paired "${vals[$2]:-}" "${vals[$3]:-}")" \
    "$cpucol" "$(paired "${cpu[$2]:-}" "${cpu[$3]:-}")"
}
want tcp1 && row "TCP_STREAM 1 vs iperf3"          ours_tcp1   iperf_tcp1  Gbit/s
want tcp4 && row "TCP_STREAM 4 vs iperf3 -P 4"     ours_tcp4   iperf_tcp4  Gbit/s
want udp && row "UDP_STREAM 1400 B vs iperf3 -u"  ours_udp    iperf_udp   Gbit/s
want udp && row "UDP_STREAM loss vs iperf3 -u"    ours_udp_extra iperf_udp_extra %
want udpgso && row "UDP_STREAM GSO vs iperf3 -u (no GSO)" ours_udpgso iperf_udp Gbit/s
want udpgso && row "UDP_STREAM GSO loss vs iperf3 -u" ours_udpgso_extra iperf_udp_extra %
want tcprr && row "TCP_RR 1 B vs qperf tcp_lat"     ours_tcprr  qperf_tcprr tps
want udprr && row "UDP_RR 1 B vs qperf udp_lat"     ours_udprr  qperf_udprr tps
want tcprr14 && row "TCP_RR 14 B vs sockperf --tcp"   ours_tcprr14 sockperf_tcprr tps
want udprr14 && row "UDP_RR 14 B vs sockperf"         ours_udprr14 sockperf_udprr tps
# The TCP streams again, counted on the wire: bytes the server pod's eth0
# received over each run's wall time. UDP is left out (the interface
# counts datagrams the socket may drop), RR too (its bytes are headers).
wirerow() { # label ours theirs
  printf '%-38s %10.2f %10.2f %24s\n' "$1 (Gbit/s)" "$(echo "${wire[$2]:-}" | median)" \
    "$(echo "${wire[$3]:-}" | median)" "$(paired "${wire[$2]:-}" "${wire[$3]:-}")"
}
if want tcp1 || want tcp4; then
  echo; echo "on the wire (server pod's eth0, received bytes over each whole run):"
  want tcp1 && wirerow "TCP_STREAM 1 vs iperf3" ours_tcp1 iperf_tcp1
  want tcp4 && wirerow "TCP_STREAM 4 vs iperf3 -P 4" ours_tcp4 iperf_tcp4
fi
echo
echo "per round:"; for k in $(printf '%s\n' "${!vals[@]}" | sort); do echo "  $k: ${vals[$k]}"; done
echo "client CPU µs per op, per round:"; for k in $(printf '%s\n' "${!cpu[@]}" | sort); do echo "  $k: ${cpu[$k]}"; done
echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo), kernel $(uname -r), $(date -u +%Y-%m-%d)"
