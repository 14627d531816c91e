#!/usr/bin/env bash
# Builds ./bin/cnibench with its version and commit stamped in.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
ver=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
pkg=github.com/cnibench/cnibench/internal/version
# The first build downloads and compiles every dependency (3-4 min on 2
# cores with an empty Go cache): say so, rather than print nothing.
echo "build: bin/cnibench ($ver; the first build on a machine takes a few minutes) ..." >&2
start=$SECONDS
# -w drops DWARF; the symbol table stays, so perf names our functions in
# the user half of a flame graph (run --flame-graph).
CGO_ENABLED=0 go build -trimpath -ldflags "-w -X $pkg.Version=$ver -X $pkg.Commit=$commit" -o bin/cnibench ./cmd/cnibench
echo "build: bin/cnibench done in $((SECONDS - start)) s" >&2
