#!/usr/bin/env bash
# One command for the tests: install what is needed, then vet and run every
# test, the lab's end-to-end tests included (they need root: real namespaces,
# veths, routes and cgroups).
#   sudo ./scripts/test.sh [go test flags]
# CNIBENCH_NOISY_NEIGHBOUR=1 runs each lab-test package next to a noisy
# neighbour (README, "Tests on a busy host").
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "test: run as root (lab tests create network namespaces): sudo $0" >&2; exit 1; }
source scripts/setup.sh
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
[ -z "$unformatted" ] || { echo "test: gofmt would change: $unformatted" >&2; exit 1; }
go vet ./...
# The committed BPF objects match their sources (byte for byte, where clang
# is installed; exit 2 = no clang, and TestObjectsFresh still checks the
# sources' recorded hashes).
./scripts/check-bpf.sh || [ $? -eq 2 ]
./scripts/build.sh
# -p 1: lab tests share the machine's CPUs and must not measure each other.
go test -p 1 -count=1 -timeout 40m "$@" ./...
