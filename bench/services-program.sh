#!/bin/sh
# Programming time of the iptables and nftables Service datapaths: one full
# sync of N ClusterIP Services × 4 endpoints into an empty scratch network
# namespace (cnb-c1-*bench-*, removed afterwards), per datapath and size,
# split into our own generation time and the kernel/tool's apply time,
# with the verify (read-back) and close times. As root.
#
#   sudo bench/services-program.sh                 # 1000,5000,10000
#   sudo bench/services-program.sh 1000,2000
#   sudo CNB_PROGRAM_ONLY=nftables-flat bench/services-program.sh 10000,30000
set -eu
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
sizes="${1:-1000,5000,10000}"
CNB_PROGRAM_BENCH="$sizes" go test -p 1 -count=1 -timeout 4h -v -run '^TestProgramTimes$' \
	./datapath/iptables ./datapath/nftables 2>&1 | grep -E 'PROGRAM|FAIL|SKIP|^ok' | sed 's/^ *[a-z_]*\.go:[0-9]*: //'
