#!/usr/bin/env bash
# Compares cnibench's HTTP engine (engine/httpload) with wrk and nginx on
# 127.0.0.1, clients pinned to CPU 0 and servers to CPU 1, rounds interleaved
# (ours, wrk, ours, wrk ...) so machine drift hits both alike. Prints
# medians and ratios:
#
#   client: ours vs wrk -t1 -c64, keep-alive and "Connection: close", both
#           against our server (higher client RPS = the faster client, as
#           long as the client, not the server, is the limit: see the
#           client CPU column)
#   fortio: fortio's client (the fortio kind, `cnibench client FORTIO_RPS_C64`
#           and FORTIO_RPS_SHORT_C64, always 64 connections) vs wrk, keep-alive
#           and a connection per request, against our server: what a report
#           measured with fortio paid per connection
#   server: our server vs nginx (1 worker, access log off, 512-byte file),
#           both driven by wrk -t1 -c64, keep-alive and close: RPS, and the
#           server's CPU per request (from /proc), which still compares the
#           servers when wrk, not the server, is the limit
#
#   bench/http.sh                 # ROUNDS=3 DUR=5 by default
#   ROUNDS=5 DUR=10 bench/http.sh
#
# Needs: go, wrk, nginx (nginx-light), jq, taskset. Only 127.0.0.1 is used.
set -euo pipefail
trap 'echo "bench: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
CONNS=${CONNS:-64}
PORT=${PORT:-18080}       # our server
NGX_PORT=${NGX_PORT:-18081}
CLI_CPU=${CLI_CPU:-0}
SRV_CPU=${SRV_CPU:-1}
for t in go wrk nginx jq taskset; do
  command -v $t >/dev/null || { echo "bench: $t missing (apt-get install wrk nginx-light jq util-linux)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/cnibench-http.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# The runner (until the cnibench CLI has http-server / http-client).
go build -o "$tmp/httpbench" ./engine/httpload/internal/benchcmd
bin=$tmp/httpbench

# The fortio kind runs through the cnibench CLI.
go build -o "$tmp/cnibench" ./cmd/cnibench
cnb=$tmp/cnibench

# Our server.
taskset -c "$SRV_CPU" "$bin" server -bind 127.0.0.1 -port "$PORT" -size 512 2>"$tmp/server.log" &
ours_pid=$!
pids+=($ours_pid)

# nginx serving the same 512 bytes: one worker, no access log, no sendfile
# (a 512-byte body goes out in the same write as the headers either way).
mkdir -p "$tmp/ngx/html" "$tmp/ngx/logs"
head -c 512 /dev/zero | tr '\0' x >"$tmp/ngx/html/index.html"
cat >"$tmp/ngx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
master_process off;
pid $tmp/ngx/nginx.pid;
error_log $tmp/ngx/logs/error.log warn;
events { worker_connections 4096; use epoll; multi_accept on; }
http {
  access_log off;
  sendfile off;
  tcp_nodelay on;
  keepalive_requests 1000000000;
  keepalive_timeout 65;
  open_file_cache max=16;
  server {
    listen 127.0.0.1:$NGX_PORT backlog=4096;
    root $tmp/ngx/html;
    location / { try_files /index.html =404; }
  }
}
EOF
taskset -c "$SRV_CPU" nginx -p "$tmp/ngx" -c "$tmp/ngx/nginx.conf" -e "$tmp/ngx/logs/error.log" 2>"$tmp/nginx.log" &
ngx_pid=$!
pids+=($ngx_pid)

for p in "$PORT" "$NGX_PORT"; do
  ok=
  for _ in $(seq 50); do
    if "$bin" client -url "http://127.0.0.1:$p/" -c 1 -d 50ms -warmup 0s >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.1
  done
  [ -n "$ok" ] || { echo "bench: server on 127.0.0.1:$p is not answering" >&2; cat "$tmp"/*.log "$tmp/ngx/logs/error.log" >&2 2>/dev/null; exit 1; }
done

declare -A vals
add() { vals[$1]+="$2 "; }
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{a[NR]=$1} END{if(NR==0){print 0}else if(NR%2){print a[(NR+1)/2]}else{print (a[NR/2]+a[NR/2+1])/2}}'; }
med() { echo "${vals[$1]:-}" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }

# ours NAME ARGS...: our client; records RPS and client CPU utilisation.
ours() {
  local name=$1 out; shift
  out=$(taskset -c "$CLI_CPU" "$bin" client -c "$CONNS" -d "${DUR}s" -warmup 1s "$@") || { echo "bench: $name failed" >&2; return 0; }
  add "$name" "$(jq -r .rps <<<"$out")"
  add "${name}_cpu" "$(jq -r '.client_cpu_util*100' <<<"$out")"
  local errs; errs=$(jq -r .errors.total <<<"$out")
  [ "$errs" = 0 ] || echo "  $name: $errs errors ($(jq -c .errors <<<"$out"))" >&2
}
# fortiorun NAME TEST: the fortio kind's client; records RPS and client CPU
# utilisation, as ours.
fortiorun() {
  local name=$1 test=$2 out
  out=$(taskset -c "$CLI_CPU" "$cnb" client "$test" 127.0.0.1 --port "$PORT" --duration "${DUR}s" --warmup 1s --json) || { echo "bench: $name failed" >&2; return 0; }
  add "$name" "$(jq -r .rps <<<"$out")"
  add "${name}_cpu" "$(jq -r '.client_cpu_util*100' <<<"$out")"
  local errs; errs=$(jq -r .errors.total <<<"$out")
  [ "$errs" = 0 ] || echo "  $name: $errs errors ($(jq -c .errors <<<"$out"))" >&2
}
# Server CPU (user+sys clock ticks) from /proc, for CPU per request.
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)
# wrkrun NAME URL SERVER-PID [wrk args...]: wrk -t1; records RPS and the
# server's CPU µs per request.
wrkrun() {
  local name=$1 url=$2 spid=$3 out t0 t1 rps; shift 3
  t0=$(ticks "$spid")
  out=$(taskset -c "$CLI_CPU" wrk -t1 -c "$CONNS" -d "${DUR}s" "$@" "$url") || { echo "bench: $name failed" >&2; return 0; }
  t1=$(ticks "$spid")
  rps=$(awk '/^Requests\/sec:/{print $2}' <<<"$out")
  add "$name" "$rps"
  add "${name}_srvus" "$(awk -v d=$((t1 - t0)) -v r="$rps" -v t="$DUR" -v hz="$TCK" 'BEGIN{ if (r > 0) printf "%.2f", d / hz * 1e6 / (r * t); else print 0 }')"
  local e; e=$(grep -E 'Socket errors|Non-2xx' <<<"$out" || true)
  [ -z "$e" ] || echo "  $name: $e" | tr '\n' ' ' >&2
}

ours_url=http://127.0.0.1:$PORT/
ngx_url=http://127.0.0.1:$NGX_PORT/
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS ..." >&2
  ours   ours_ka    -url "$ours_url" -keepalive
  wrkrun wrk_ka     "$ours_url" "$ours_pid"
  ours   ours_close -url "$ours_url"
  wrkrun wrk_close  "$ours_url" "$ours_pid" -H 'Connection: close'
  fortiorun fortio_ka    FORTIO_RPS_C64
  fortiorun fortio_close FORTIO_RPS_SHORT_C64
  wrkrun ngx_ka     "$ngx_url"  "$ngx_pid"
  wrkrun ngx_close  "$ngx_url"  "$ngx_pid" -H 'Connection: close'
done

echo
echo "HTTP on 127.0.0.1, $CONNS connections, client CPU $CLI_CPU, server CPU $SRV_CPU, $ROUNDS rounds of ${DUR}s, medians (req/s)"
printf '%-34s %12s %12s %8s\n' "" ours reference ratio
printf '%-34s %12.0f %12.0f %8s   (our client CPU %.0f%%)\n' "client keep-alive (vs wrk)" "$(med ours_ka)" "$(med wrk_ka)" "$(ratio "$(med ours_ka)" "$(med wrk_ka)")" "$(med ours_ka_cpu)"
printf '%-34s %12.0f %12.0f %8s   (our client CPU %.0f%%)\n' "client Connection: close (vs wrk)" "$(med ours_close)" "$(med wrk_close)" "$(ratio "$(med ours_close)" "$(med wrk_close)")" "$(med ours_close_cpu)"
printf '%-34s %12.0f %12.0f %8s   (fortio client CPU %.0f%%; c64)\n' "fortio keep-alive (vs wrk)" "$(med fortio_ka)" "$(med wrk_ka)" "$(ratio "$(med fortio_ka)" "$(med wrk_ka)")" "$(med fortio_ka_cpu)"
printf '%-34s %12.0f %12.0f %8s   (fortio client CPU %.0f%%; c64)\n' "fortio Connection: close (vs wrk)" "$(med fortio_close)" "$(med wrk_close)" "$(ratio "$(med fortio_close)" "$(med wrk_close)")" "$(med fortio_close_cpu)"
printf '%-34s %12.0f %12.0f %8s   (server CPU/request: ours %.1f us, nginx %.1f us)\n' "server keep-alive (vs nginx, wrk)" "$(med wrk_ka)" "$(med ngx_ka)" "$(ratio "$(med wrk_ka)" "$(med ngx_ka)")" "$(med wrk_ka_srvus)" "$(med ngx_ka_srvus)"
printf '%-34s %12.0f %12.0f %8s   (server CPU/request: ours %.1f us, nginx %.1f us)\n' "server close (vs nginx, wrk)" "$(med wrk_close)" "$(med ngx_close)" "$(ratio "$(med wrk_close)" "$(med ngx_close)")" "$(med wrk_close_srvus)" "$(med ngx_close_srvus)"
echo
echo "all samples:"
for k in ours_ka wrk_ka ours_close wrk_close fortio_ka fortio_close ngx_ka ngx_close ours_ka_cpu ours_close_cpu fortio_ka_cpu fortio_close_cpu wrk_ka_srvus ngx_ka_srvus wrk_close_srvus ngx_close_srvus; do
  printf '  %-15s %s\n' "$k" "${vals[$k]:-}"
done
