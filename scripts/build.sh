#!/usr/bin/env bash
# Builds ./bin/cnibench with its version and commit stamped in.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
ver=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
pkg=github.com/cnibench/cnibench/internal/version
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $pkg.Version=$ver -X $pkg.Commit=$commit" -o bin/cnibench ./cmd/cnibench
