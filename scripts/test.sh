#!/usr/bin/env bash
# One command for the tests: install what is needed, then vet and run every
# test, the lab's end-to-end tests included (they need root: real namespaces,
# veths, routes and cgroups).
#   sudo ./scripts/test.sh [go test flags]
# CNIBENCH_NOISY_NEIGHBOUR=1 runs each lab-test package next to a noisy
# neighbour, CNIBENCH_STRESS=1 runs the tests beside CPU hogs that keep the
# load average near 3 × the cores (scripts/stress.sh; README, "Tests on a
# busy host").
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
stress=()
case ${CNIBENCH_STRESS:-0} in
  0) ;;
  1) stress=(scripts/stress.sh) ;;
  *) echo "test: CNIBENCH_STRESS=$CNIBENCH_STRESS: want 1 (run beside CPU hogs) or 0" >&2; exit 2 ;;
esac
"${stress[@]}" go test -p 1 -count=1 -timeout 40m "$@" ./...
# Then each fuzz target for a short while, on top of its committed corpus
# (testdata/fuzz/<target>, run by the go test above): go test takes one
# -fuzz target per package and invocation. A finding fails here and leaves
# its input in that directory, to commit with the fix. FUZZTIME=0 skips.
# Go before 1.27 may end a duration-bound fuzz run with a bare "context
# deadline exceeded" and no input (go.dev/issue/75804, a race in its
# coordinator): that is reported and passed over; a written input fails.
FUZZTIME=${FUZZTIME:-10s}
if [ "$FUZZTIME" != 0 ]; then
  for target in agent:FuzzRunRequest results:FuzzLoad report:FuzzRender \
      cmd/cnibench/internal/cli:FuzzPlanFlags cmd/cnibench/internal/cli:FuzzScaleSteps cmd/cnibench/internal/cli:FuzzLabFlags; do
    pkg=${target%%:*} name=${target#*:} corpus=${target%%:*}/testdata/fuzz/${target#*:}
    before=$(ls "$corpus" 2>/dev/null | wc -l)
    rc=0; out=$(go test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" "./$pkg" 2>&1) || rc=$?
    echo "$out" | grep -v '^fuzz: elapsed' || true
    if [ "$rc" != 0 ]; then
      if [ "$(ls "$corpus" 2>/dev/null | wc -l)" = "$before" ] && echo "$out" | grep -q '^    context deadline exceeded$'; then
        echo "test: $name: Go's fuzz coordinator stopped with 'context deadline exceeded' and no input (go.dev/issue/75804): not a finding" >&2
      else
        echo "test: $name found a failing input: see $corpus" >&2; exit 1
      fi
    fi
  done
fi
