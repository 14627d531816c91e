#!/usr/bin/env bash
# Compiles the flannel mode's flanneld from the Go module proxy into
#   $CNB_CLUSTER_CACHE/flannel-<version>-<hash of the build inputs>/bin/flanneld
# and prints that directory. Reused when complete (~2-4 min cold on 2 cores;
# seconds warm). Module: scripts/cluster/flannel. Static with cgo on, as
# flannel's own Makefile builds it (its UDP backend is C; the VXLAN backend
# used here is Go).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

export CGO_ENABLED=1 GOFLAGS=-buildvcs=false
mod=$CLUSTER_DIR/flannel
ldflags="-s -w -linkmode external -extldflags -static -X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION"
tags=netgo,osusergo
key=$( (cat "$mod"/go.{mod,sum}; echo "$ldflags $tags") | sha256sum | cut -c1-12)
out=$CACHE_ROOT/flannel-$FLANNEL_VERSION-$key
cached_build "$out" build-flannel.lock
t0=$SECONDS
log "build flanneld $FLANNEL_VERSION ..."
if ! (cd "$mod" && nice go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out/bin/flanneld" github.com/flannel-io/flannel) >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log" >&2
  die "build flanneld failed (log: $out/build.log)"
fi
log "flanneld built in $((SECONDS - t0)) s"
touch "$out/complete"
echo "$out"
