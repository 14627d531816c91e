#!/usr/bin/env bash
# One command for a fresh machine: install what is needed, build cnibench, run
# the quick suite on the local lab and write the results and the report.
#   sudo ./scripts/quickstart.sh [extra `cnibench run` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "quickstart: run as root (the lab creates network namespaces): sudo $0" >&2; exit 1; }
source scripts/setup.sh
./scripts/build.sh
out=${CNIBENCH_OUT:-cnibench-results/quick-$(date -u +%Y%m%d-%H%M%S)}
./bin/cnibench run --profile quick --out "$out" "$@"
echo "quickstart: open $out/report.html (or report.md)" >&2
