#!/usr/bin/env bash
# Compares cnibench's DNS client (engine/dnsload) with dnsperf against the
# same dnsmasq (engine/dnsload's Server, 1000 names) on 127.0.0.1, client
# pinned to CPU 0 and server to CPU 1, one socket each, rounds interleaved
# (ours, dnsperf, ours ...) so machine drift hits both alike. Prints
# medians and ratios:
#
#   max rate, 100 queries outstanding: q/s and the client's CPU (whichever
#       client is saturated is the limit, unless dnsmasq is: see its CPU)
#   fixed rate (RATE q/s): achieved q/s, client CPU per query, and latency
#       (ours: p50 of the uncorrected histogram; dnsperf: its average)
#
#   bench/dns.sh                    # ROUNDS=3 DUR=5 RATE=20000 by default
#   ROUNDS=5 DUR=10 bench/dns.sh
#
# Needs: go, dnsperf, dnsmasq (dnsmasq-base), jq, taskset. Only 127.0.0.1 is used.
set -euo pipefail
trap 'echo "bench: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
RATE=${RATE:-20000}
PORT=${PORT:-15353}
CLI_CPU=${CLI_CPU:-0}
SRV_CPU=${SRV_CPU:-1}
PATH=$PATH:/usr/sbin
for t in go dnsperf dnsmasq jq taskset; do
  command -v $t >/dev/null || { echo "bench: $t missing (apt-get install dnsperf dnsmasq-base jq util-linux)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/cnb-dnsbench.XXXXXX)
srv=
cleanup() {
  if [ -n "$srv" ]; then kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

go build -o "$tmp/dnsbench" ./engine/dnsload/internal/benchcmd
bin=$tmp/dnsbench

# The server: dnsmasq started (and stopped) by our Server, pinned to SRV_CPU.
taskset -c "$SRV_CPU" "$bin" server -port "$PORT" -names 1000 >"$tmp/server.pid" 2>"$tmp/server.log" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/server.pid" ] && break; sleep 0.1; done
[ -s "$tmp/server.pid" ] || { echo "bench: server did not start" >&2; cat "$tmp/server.log" >&2; exit 1; }
dnsmasq_pid=$(head -1 "$tmp/server.pid")
for i in $(seq 0 999); do echo "svc-$i.default.svc.cluster.local A"; done >"$tmp/names.txt"

declare -A vals
add() { vals[$1]+="$2 "; }
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{a[NR]=$1} END{if(NR==0){print 0}else if(NR%2){print a[(NR+1)/2]}else{print (a[NR/2]+a[NR/2+1])/2}}'; }
med() { echo "${vals[$1]:-}" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)

# ours NAME ARGS...: records q/s, client CPU µs per query, p50 µs, and
# dnsmasq's CPU utilisation.
ours() {
  local name=$1 out t0 t1; shift
  t0=$(ticks "$dnsmasq_pid")
  out=$(taskset -c "$CLI_CPU" "$bin" client -port "$PORT" -d "${DUR}s" -warmup 1s "$@") || { echo "bench: $name failed" >&2; return 0; }
  t1=$(ticks "$dnsmasq_pid")
  add "$name" "$(jq -r .qps <<<"$out")"
  add "${name}_cpu" "$(jq -r '(.client_cpu_user_sec+.client_cpu_sys_sec)/(.responses+1)*1e6' <<<"$out")"
  add "${name}_lat" "$(jq -r .latency_uncorrected.p50_us <<<"$out")"
  add "${name}_srv" "$(awk -v d=$((t1 - t0)) -v t="$((DUR + 1))" -v hz="$TCK" 'BEGIN{printf "%.0f", 100*d/hz/t}')"
  local errs; errs=$(jq -r .errors.total <<<"$out")
  [ "$errs" = 0 ] || echo "  $name: $errs errors ($(jq -c .errors <<<"$out"))" >&2
}
# perf NAME ARGS...: dnsperf, same records (latency: its average).
perf() {
  local name=$1 out t0 t1 qps u s n; shift
  t0=$(ticks "$dnsmasq_pid")
  out=$(taskset -c "$CLI_CPU" "$bin" rusage -- dnsperf -s 127.0.0.1 -p "$PORT" -d "$tmp/names.txt" -l "$DUR" "$@" 2>&1) || { echo "bench: $name failed" >&2; return 0; }
  t1=$(ticks "$dnsmasq_pid")
  qps=$(awk '/Queries per second:/{print $4}' <<<"$out")
  n=$(awk '/Queries completed:/{print $3}' <<<"$out")
  read -r u s < <(awk '/^rusage:/{print $2, $3}' <<<"$out")
  add "$name" "$qps"
  add "${name}_cpu" "$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN{printf "%.2f", (u+s)/(n+1)*1e6}')"
  add "${name}_lat" "$(awk '/Average Latency/{printf "%.1f", $4*1e6}' <<<"$out")"
  add "${name}_srv" "$(awk -v d=$((t1 - t0)) -v t="$DUR" -v hz="$TCK" 'BEGIN{printf "%.0f", 100*d/hz/t}')"
  local lost; lost=$(awk '/Queries lost:/{print $3}' <<<"$out")
  [ "${lost:-0}" = 0 ] || echo "  $name: $lost lost" >&2
}

for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS ..." >&2
  ours ours_max -q 100
  perf perf_max -q 100
  ours ours_rate -qps "$RATE"
  perf perf_rate -Q "$RATE" -q 1000
done

echo
echo "DNS (A, UDP) on 127.0.0.1 against dnsmasq, client CPU $CLI_CPU, server CPU $SRV_CPU, $ROUNDS rounds of ${DUR}s, medians"
printf '%-28s %10s %10s %7s   %s\n' "" ours dnsperf ratio "client CPU us/query ours/dnsperf, dnsmasq CPU %"
printf '%-28s %10.0f %10.0f %7s   %.1f / %.1f us, %s%% / %s%%\n' "max rate, 100 outstanding" "$(med ours_max)" "$(med perf_max)" "$(ratio "$(med ours_max)" "$(med perf_max)")" "$(med ours_max_cpu)" "$(med perf_max_cpu)" "$(med ours_max_srv)" "$(med perf_max_srv)"
printf '%-28s %10.0f %10.0f %7s   %.1f / %.1f us, %s%% / %s%%\n' "fixed $RATE q/s" "$(med ours_rate)" "$(med perf_rate)" "$(ratio "$(med ours_rate)" "$(med perf_rate)")" "$(med ours_rate_cpu)" "$(med perf_rate_cpu)" "$(med ours_rate_srv)" "$(med perf_rate_srv)"
printf '%-28s %10.1f %10.1f   (ours: p50, dnsperf: average, us)\n' "latency at $RATE q/s" "$(med ours_rate_lat)" "$(med perf_rate_lat)"
echo
echo "all samples:"
for k in ours_max perf_max ours_rate perf_rate ours_max_cpu perf_max_cpu ours_rate_cpu perf_rate_cpu ours_rate_lat perf_rate_lat ours_max_srv perf_max_srv; do
  printf '  %-15s %s\n' "$k" "${vals[$k]:-}"
done
