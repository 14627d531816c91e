#!/usr/bin/env bash
# One command for a fresh machine: install what is needed, build cnibench, and
# answer a question users ask: iptables or eBPF for Services? (--profile
# datapaths: both side by side in the local lab, 5 interleaved rounds, under
# 5 minutes on 2 cores); the results, the report and one answer line per
# question at the end.
#   sudo ./scripts/quickstart.sh [extra `cnibench run` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "quickstart: run as root (the lab creates network namespaces): sudo $0" >&2; exit 1; }
source scripts/setup.sh
./scripts/build.sh
out=${CNIBENCH_OUT:-cnibench-results/datapaths-$(date -u +%Y%m%d-%H%M%S)}
./bin/cnibench run --profile datapaths --out "$out" "$@"
echo "quickstart: open $out/report.html (or report.md)" >&2
