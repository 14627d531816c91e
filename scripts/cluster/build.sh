#!/usr/bin/env bash
# Compiles the test cluster's components from the Go module proxy into
#   $CNB_CLUSTER_CACHE/<k8s version>-<hash of the build inputs>/bin
# and prints that bin directory. Reused when complete (12-20 min cold on 2
# cores, seconds warm): kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kube-proxy, kubectl (scripts/cluster/kube), etcd
# (scripts/cluster/etcd) and the pause program. All static (CGO_ENABLED=0),
# so kube-proxy and pause go into images as they are.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
major=${K8S_VERSION#v}; major=${major%%.*}
minor=${K8S_VERSION#v*.}; minor=${minor%%.*}
ver_pkgs=(k8s.io/component-base/version k8s.io/client-go/pkg/version)
ldflags="-s -w"
for p in "${ver_pkgs[@]}"; do
  ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

# The cache key: every build input (sources, module graphs, flags).
key=$( (cat "$CLUSTER_DIR"/kube/go.{mod,sum} "$CLUSTER_DIR"/etcd/go.{mod,sum} "$CLUSTER_DIR"/etcd/main.go \
  "$CLUSTER_DIR"/pause/main.go; echo "$ldflags") | sha256sum | cut -c1-12)
out=$CACHE_ROOT/$K8S_VERSION-$key
bin=$out/bin
cached_build "$out" build.lock "$bin"

# progress NAME LOG PID: one line a minute with the packages compiled so
# far (go build -v names each), so a CI log shows where the time goes.
progress() {
  local name=$1 logf=$2 pid=$3 start=$SECONDS next=$((SECONDS + 60))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    if ((SECONDS >= next)); then
      log "build $name: $(((SECONDS - start) / 60)) min, $(grep -vc '^go: ' "$logf" || true) packages compiled"
      next=$((next + 60))
    fi
  done
  wait "$pid"
}

# build NAME DIR PACKAGES...: one go build -o (the binaries share packages).
build() {
  local name=$1 dir=$2; shift 2
  local logf=$out/build-$name.log start=$SECONDS
  log "build $name ($*) ..."
  (cd "$dir" && exec nice go build -v -trimpath -ldflags "$ldflags" -o "$bin/" "$@") >"$logf" 2>&1 &
  if ! progress "$name" "$logf" $!; then
    tail -40 "$logf" >&2
    die "build $name failed (log: $logf)"
  fi
  log "build $name done in $((SECONDS - start)) s"
}

build kubernetes "$CLUSTER_DIR/kube" \
  k8s.io/kubernetes/cmd/{kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,kube-proxy,kubectl}
build etcd "$CLUSTER_DIR/etcd" .
build pause "$REPO_DIR" ./scripts/cluster/pause
touch "$out/complete"
echo "$bin"
