#!/usr/bin/env bash
# Compiles the cilium mode's components from the Go module proxy into
#   $CNB_CLUSTER_CACHE/cilium-<version>-<hash of the build inputs>/
#     bin/   cilium-agent, cilium-cni, cilium-health-responder, cilium-dbg
#     bpf/   the datapath's C sources (the agent compiles them with clang
#            at start; no precompiled objects ship)
#     crds/  the CustomResourceDefinitions the agent needs (no operator)
# and prints that directory. Reused when complete (~8-15 min cold on 2
# cores, ~3 GB peak memory; seconds warm). Module: scripts/cluster/cilium.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
mod=$CLUSTER_DIR/cilium
# As Cilium's Makefile sets it: "<version> <revision> <date>".
ldflags="-s -w -X 'github.com/cilium/cilium/pkg/version.ciliumVersion=${CILIUM_VERSION#v} goproxy 1970-01-01T00:00:00Z'"
tags=osusergo
key=$( (cat "$mod"/go.{mod,sum}; echo "$ldflags $tags") | sha256sum | cut -c1-12)
out=$CACHE_ROOT/cilium-$CILIUM_VERSION-$key
cached_build "$out" build-cilium.lock
t0=$SECONDS
log "cilium $CILIUM_VERSION: module download"
src=$(cd "$mod" && go mod download -json "github.com/cilium/cilium@$CILIUM_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
[ -d "$src/bpf" ] || die "no bpf/ in the module ($src)"

# bin NAME PACKAGE: one binary, named as Cilium's images name it.
bin() {
  local name=$1 pkg=$2 logf=$out/build-$1.log start=$SECONDS
  log "build $name ($pkg) ..."
  if ! (cd "$mod" && nice go build -v -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out/bin/$name" "$pkg") >"$logf" 2>&1; then
    tail -40 "$logf" >&2
    die "build $name failed (log: $logf)"
  fi
  log "build $name done in $((SECONDS - start)) s"
}
bin cilium-agent github.com/cilium/cilium/daemon
bin cilium-cni github.com/cilium/cilium/plugins/cilium-cni
bin cilium-health-responder github.com/cilium/cilium/cilium-health/responder
bin cilium-dbg github.com/cilium/cilium/cilium-dbg

rm -rf "$out/bpf" "$out/crds"
cp -r "$src/bpf" "$out/bpf"
mkdir -p "$out/crds"
cp "$src"/pkg/k8s/apis/cilium.io/client/crds/v2/*.yaml "$src"/pkg/k8s/apis/cilium.io/client/crds/v2alpha1/*.yaml "$out/crds/"
chmod -R u+w "$out/bpf" "$out/crds" # the module cache is read-only
log "cilium built in $((SECONDS - t0)) s ($(du -sh "$out" | cut -f1))"
touch "$out/complete"
echo "$out"
