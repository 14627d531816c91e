#!/usr/bin/env bash
# Soak: one lab brought up once, a profile run on it ITER times back to
# back, and after every run what could leak: processes left in the lab's
# namespaces, the agents' open files, memory and goroutines, the CLI's own
# files and memory, conntrack entries and sockets in the lab's namespaces.
# Prints a table and a verdict: "no growth", or "grows: <metric> from A to B".
#
#   sudo bench/soak.sh                                  # standard profile × 10 (about an hour per run on 2 cores)
#   ITER=4 PROFILE=quick DURATION=1s WARMUP=200ms sudo bench/soak.sh   # the short check (~5 min)
#
# Env: ITER (10), PROFILE (standard), DURATION and WARMUP (the profile's),
# RUN_ARGS (more `run` flags, e.g. "--tests TCP_CRR"), UP_ARGS (`lab up`
# flags, e.g. "--service-datapath iptables" for the Service placements), TOL (10: percent),
# SETTLE (65: seconds to wait after a run before reading the tables),
# LAB (soak<pid>), OUT (a temp dir: results of every run, soak.tsv).
#
# Growth rule: a metric grows when its value after the last run exceeds its
# value after the second run by more than TOL percent and by more than its
# slack (processes 0, fds 8, MiB 8, goroutines 8, conntrack 100, sockets 20).
# The second run, not the first, is the baseline: the first warms up
# caches, ARP and conntrack tables. Conntrack entries and sockets are read
# SETTLE seconds after a run: TIME_WAIT lasts 60 s (the lab's conntrack
# keeps it 30 s), so what is left then did not expire; read at once they
# would count the last minute's connections, two short runs' worth. Agents live for one run (each run starts
# its own), so their numbers are peaks sampled every second during the run
# and the goroutine count each agent logs as each of its tests ends (the
# last one, with "first→last" over the run beside it).
#
# Needs: ./bin/cnibench (scripts/build.sh), jq, nsenter.
set -euo pipefail
trap 'echo "soak: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
ITER=${ITER:-10}
PROFILE=${PROFILE:-standard}
DURATION=${DURATION:-}
WARMUP=${WARMUP:-}
RUN_ARGS=${RUN_ARGS:-}
UP_ARGS=${UP_ARGS:-}
TOL=${TOL:-10}
SETTLE=${SETTLE:-65}
LAB=${LAB:-soak$$}
OUT=${OUT:-$(mktemp -d /tmp/cnibench-soak.XXXXXX)}
STATE=/run/cnibench
cnb="./bin/cnibench --lab $LAB"
for t in jq nsenter; do
  command -v $t >/dev/null || { echo "soak: $t missing (apt-get install jq util-linux)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "soak: run as root (the lab creates network namespaces): sudo $0" >&2; exit 1; }
[ -x bin/cnibench ] || ./scripts/build.sh
mkdir -p "$OUT"

sampler=
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  $cnb lab down >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

# The lab's namespaces by inode: a process is in the lab when its
# /proc/PID/ns/net names one of them.
ns_inodes() { for f in /run/netns/cnb-"$LAB"-*; do [ ! -e "$f" ] || stat -L -c %i "$f"; done; }
lab_pids() {
  local inodes=" $(ns_inodes | tr '\n' ' ') " p ino
  for p in /proc/[0-9]*; do
    ino=$(readlink "$p/ns/net" 2>/dev/null) || continue
    ino=${ino#net:[}; ino=${ino%]}
    [[ $inodes != *" $ino "* ]] || echo "${p#/proc/}"
  done
}
# A process may end between listing and reading it: that counts as 0.
fds() { { ls "/proc/$1/fd" 2>/dev/null || true; } | wc -l; }
rss_kib() { local v; v=$(awk '/^VmRSS:/{print $2}' "/proc/$1/status" 2>/dev/null) || true; echo "${v:-0}"; }

# sample PEAKFILE CLIPID LOGDIR: every second, the processes in the lab
# (count, fds, RSS summed) and the CLI's fds and RSS; keeps the peaks in
# PEAKFILE and a copy of the agents' logs in LOGDIR (the run removes them).
sample() {
  local peak=$1 cli=$2 logs=$3 n f r cf cr p
  local pn=0 pf=0 pr=0 pcf=0 pcr=0
  while kill -0 "$cli" 2>/dev/null; do
    n=0 f=0 r=0
    for p in $(lab_pids); do n=$((n + 1)); f=$((f + $(fds "$p"))); r=$((r + $(rss_kib "$p"))); done
    cf=$(fds "$cli"); cr=$(rss_kib "$cli")
    ((n > pn)) && pn=$n; ((f > pf)) && pf=$f; ((r > pr)) && pr=$r
    ((cf > pcf)) && pcf=$cf; ((cr > pcr)) && pcr=$cr
    echo "$pn $pf $((pr / 1024)) $pcf $((pcr / 1024))" >"$peak"
    cp "$STATE/$LAB"/agents/*.log "$logs"/ 2>/dev/null || true
    sleep 1
  done
}

# goroutines LOGDIR: over the agents of a run, the largest count logged
# after an agent's last test, and the range first→last of that agent.
goroutines() {
  awk '/^agent: run .* goroutines$/{g=$(NF-1); if(!(FILENAME in first))first[FILENAME]=g; last[FILENAME]=g}
       END{m=0; for(f in last) if(last[f]+0>m){m=last[f]+0; a=first[f]}; if(m==0)print "- -"; else print m, a"→"m}' \
    "$1"/*.log 2>/dev/null || echo "- -"
}

# conntrack and TCP sockets (in use, TIME_WAIT) summed over the lab's
# namespaces ("-" where conntrack is not loaded in a namespace).
ns_tables() {
  local ct=0 seen=0 inuse=0 tw=0 f c s
  for f in /run/netns/cnb-"$LAB"-*; do
    if c=$(nsenter --net="$f" cat /proc/sys/net/netfilter/nf_conntrack_count 2>/dev/null); then ct=$((ct + c)); seen=1; fi
    s=$(nsenter --net="$f" awk '/^TCP:/{print $3, $7}' /proc/net/sockstat 2>/dev/null) || s="0 0"
    inuse=$((inuse + ${s% *})); tw=$((tw + ${s#* }))
  done
  ((seen)) || ct=-
  echo "$ct $inuse $tw"
}

echo "soak: lab $LAB, profile $PROFILE × $ITER${DURATION:+, --duration $DURATION}${WARMUP:+, --warmup $WARMUP}${RUN_ARGS:+, $RUN_ARGS}; results in $OUT" >&2
$cnb lab up $UP_ARGS >/dev/null 2>"$OUT/lab-up.log" || { cat "$OUT/lab-up.log" >&2; exit 1; }
tsv=$OUT/soak.tsv
printf 'iter\tsecs\tsamples\tfailed\tprocs_after\tagents_peak\tagent_fds_peak\tagent_mib_peak\tgoroutines\tgoroutines_run\tcli_fds_peak\tcli_mib_peak\tconntrack\ttcp_inuse\ttcp_tw\n' >"$tsv"
for i in $(seq 1 "$ITER"); do
  args=(run --profile "$PROFILE" --out "$OUT/run$i")
  [ -n "$DURATION" ] && args+=(--duration "$DURATION")
  [ -n "$WARMUP" ] && args+=(--warmup "$WARMUP")
  # shellcheck disable=SC2206 # RUN_ARGS is a list of flags
  args+=($RUN_ARGS)
  start=$SECONDS
  $cnb "${args[@]}" >"$OUT/run$i.log" 2>&1 &
  cli=$!
  echo "0 0 0 0 0" >"$OUT/peak$i"
  mkdir -p "$OUT/agents$i"
  sample "$OUT/peak$i" "$cli" "$OUT/agents$i" &
  sampler=$!
  rc=0; wait "$cli" || rc=$?
  wait "$sampler" 2>/dev/null || true; sampler=
  secs=$((SECONDS - start))
  [ "$rc" = 0 ] || echo "soak: run $i exited $rc (see $OUT/run$i.log); measuring anyway" >&2
  read -r samples failed < <(jq -r '[.results[].samples[]?] | "\(length) \(map(select(.error)) | length)"' "$OUT/run$i/results.json" 2>/dev/null || echo "0 0")
  procs=$(lab_pids | wc -l)
  read -r agents afds amib cfds cmib <"$OUT/peak$i"
  read -r gor gorrun < <(goroutines "$OUT/agents$i")
  sleep "$SETTLE"
  read -r ct inuse tw < <(ns_tables)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$secs" "$samples" "$failed" "$procs" "$agents" "$afds" "$amib" "$gor" "$gorrun" "$cfds" "$cmib" "$ct" "$inuse" "$tw" >>"$tsv"
  echo "soak: run $i/$ITER done in ${secs}s: $samples samples, $failed failed, $procs processes left in the lab" >&2
done

echo
column -t -s $'\t' "$tsv"
echo
# The verdict: each judged metric, second run against the last (see the
# header for the rule and the slacks).
awk -F'\t' -v tol="$TOL" '
  NR == 1 { for (c = 1; c <= NF; c++) col[$c] = c; next }
  { last = $0; if (NR == 3) second = $0 }
  END {
    split("procs_after:0 agent_fds_peak:8 agent_mib_peak:8 goroutines:8 cli_fds_peak:8 cli_mib_peak:8 conntrack:100 tcp_inuse:20 tcp_tw:20", m, " ")
    if (second == "") { print "verdict: too few runs to judge (need 2; the second is the baseline)"; exit }
    split(second, s, "\t"); split(last, l, "\t"); out = ""
    for (k in m) {
      split(m[k], kv, ":"); c = col[kv[1]]; a = s[c]; b = l[c]
      if (a == "-" || b == "-") continue
      if (b - a > kv[2] && b - a > a * tol / 100) out = out (out ? "; " : "") kv[1] " from " a " to " b
    }
    print (out ? "verdict: grows: " out : "verdict: no growth (last run vs the second: within " tol "% or the slack of every metric)")
  }' "$tsv"
$cnb lab down >/dev/null
left=$(ls /run/netns 2>/dev/null | grep -c "^cnb-$LAB-" || true)
echo "lab $LAB down: $left namespaces left"
