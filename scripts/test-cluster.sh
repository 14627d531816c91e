#!/usr/bin/env bash
# A real two-node Kubernetes (v1.34) on this one machine, for cnibench's
# cluster end-to-end tests (e2e/cluster). Every node is its own network
# namespace (cnbk-node0, cnbk-node1, joined by a veth) with its own
# containerd and kubelet; the control plane runs in cnbk-node0. Nothing is
# added to the root namespace; `down` removes everything and checks that.
#
#   sudo ./scripts/test-cluster.sh [test]          for each CNI mode: up, the tests, down (bridge:
#                                                  kube-proxy iptables then nftables mode; cilium; flannel)
#   sudo ./scripts/test-cluster.sh up              bring it up and leave it running
#   sudo ./scripts/test-cluster.sh tests [ARGS]    the tests on the cluster that is up
#   sudo ./scripts/test-cluster.sh proxy-mode iptables|nftables
#   sudo ./scripts/test-cluster.sh env             how to use it by hand
#   sudo ./scripts/test-cluster.sh cilium-check    cilium mode: pod to pod, ClusterIP, BPF only on the nodes' cgroups
#   sudo ./scripts/test-cluster.sh down            tear down; fails if anything of ours is left
#
# CNB_CLUSTER_CNI=bridge|cilium|flannel (at up, or to test one mode only):
# the bridge CNI + kube-proxy (up's default); Cilium as the CNI and
# kube-proxy replacement, a DaemonSet configured by cilium-config
# (scripts/cluster/cilium.sh; CNB_CLUSTER_CILIUM_ROUTING=native|vxlan), whose
# first run compiles Cilium (~10 min on 2 cores) into the same cache; or
# Flannel's VXLAN + kube-proxy (scripts/cluster/flannel.sh; ~3 min to build).
#
# Extra arguments of `test` go to the test binary (e.g. -test.run Quick).
# The first run compiles Kubernetes and etcd (12-20 min on 2 cores) into
# $CNB_CLUSTER_CACHE (default /var/cache/cnibench-cluster); later runs reuse them.
set -euo pipefail
SELF=$(realpath "$0")
cd "$(dirname "$SELF")/.."
source scripts/cluster/env.sh
source scripts/cluster/lib.sh
source scripts/cluster/net.sh
source scripts/cluster/node.sh
source scripts/cluster/control.sh
source scripts/cluster/rootns.sh
source scripts/cluster/down.sh
source scripts/cluster/cilium.sh
source scripts/cluster/flannel.sh

usage() { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit "${1:-2}"; }

# Debian packages only the cluster needs (scripts/setup.sh installs the
# rest: containerd, runc, iptables, nftables, conntrack): the bridge,
# host-local and loopback CNI plugins; socat, openssl and curl.
cluster_packages=(containernetworking-plugins socat openssl curl)

preflight() {
  [ "$(id -u)" = 0 ] || die "run as root (network namespaces, containerd, kubelet): sudo $0 $*"
  case $CNI_MODE in bridge | cilium | flannel) ;; *) die "CNB_CLUSTER_CNI: bridge, cilium or flannel, not '$CNI_MODE'" ;; esac
  source scripts/setup.sh # Debian packages and the Go release go.mod names
  local p need=()
  # cilium mode: the agent compiles its datapath with clang at start (≥ 18.1;
  # 19 is the LLVM of Cilium's own image); bpftool for the checks.
  if [ "$CNI_MODE" = cilium ]; then
    cluster_packages+=(clang-19 bpftool)
    case $CILIUM_ROUTING in native | vxlan) ;; *) die "CNB_CLUSTER_CILIUM_ROUTING: native or vxlan, not '$CILIUM_ROUTING'" ;; esac
  fi
  for p in "${cluster_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
  fi
}

# images: the pause, kube-proxy and (cilium mode) cilium-agent images
# (static binaries, packed by cnibench itself) and the agent image, as
# tarballs for ctr import.
build_images() {
  local d=$VAR_DIR/images
  mkdir -p "$d"
  make -s image IMAGE="$AGENT_IMAGE" >/dev/null
  cp bin/cnibench-image.tar "$d/cnibench.tar"
  ./bin/cnibench k8s image --binary "$BIN/pause" --tag "$PAUSE_IMAGE" --out "$d/pause.tar" >/dev/null
  ./bin/cnibench k8s image --binary "$BIN/kube-proxy" --tag "$PROXY_IMAGE" --out "$d/kube-proxy.tar" >/dev/null
  case $CNI_MODE in
    cilium) ./bin/cnibench k8s image --binary "$CIL/bin/cilium-agent" --tag "$CILIUM_IMAGE" --out "$d/cilium.tar" >/dev/null ;;
    flannel) ./bin/cnibench k8s image --binary "$FL/bin/flanneld" --tag "$FLANNEL_IMAGE" --out "$d/flannel.tar" >/dev/null ;;
  esac
}

# proxy_apply MODE: kube-proxy's DaemonSet in MODE, rolled out on both nodes.
proxy_apply() {
  local mode=$1
  sed -e "s|@MODE@|$mode|; s|@IMAGE@|$PROXY_IMAGE|; s|@CLUSTER_CIDR@|$CLUSTER_CIDR|" \
    -e "s|@PKI@|$VAR_DIR/pki|g" scripts/cluster/kube-proxy.yaml | kctl apply -f - >/dev/null
  wait_for "kube-proxy ($mode mode) Ready on every node" 120 ds_ready kube-system kube-proxy
  echo "$mode" >"$VAR_DIR/proxy-mode"
}

no_proxy_pods() { [ -z "$(kctl -n kube-system get pods -l k8s-app=kube-proxy -o name)" ]; }

# proxy_mode MODE: switch kube-proxy between iptables and nftables as an
# admin would: delete it, let it clean up each node's rules, recreate.
proxy_mode() {
  local mode=$1 ns
  BIN=$(bin_dir)
  kctl -n kube-system delete ds/kube-proxy --wait=true >/dev/null
  wait_for "kube-proxy pods to go" 60 no_proxy_pods
  for ns in "${NODES[@]}"; do
    in_ns "$ns" "$BIN/kube-proxy" --cleanup >>"$LOG_DIR/kube-proxy-cleanup.log" 2>&1 ||
      die "kube-proxy --cleanup in $ns failed: $(tail -5 "$LOG_DIR/kube-proxy-cleanup.log")"
  done
  proxy_apply "$mode"
  log "kube-proxy now in $mode mode"
}

cluster_up() {
  local t0=$SECONDS i ns
  if [ -e "$VAR_DIR" ] || ip netns list 2>/dev/null | grep -q '^cnbk-'; then
    die "a test cluster is up or left over ($VAR_DIR, netns cnbk-*): run $0 down"
  fi
  BIN=$(bin_dir)
  case $CNI_MODE in
    cilium) CIL=$(cilium_dir) ;;
    flannel) FL=$(flannel_dir) ;;
  esac
  mkdir -p "$VAR_DIR" "$RUN_DIR"
  rootns_snapshot "$VAR_DIR/rootns-before"
  for i in "${HOST_PATHS[@]}"; do [ -e "$i" ] && echo "$i"; done >"$VAR_DIR/host-paths.before" || true
  for i in "${GLOBAL_SYSCTLS[@]}"; do echo "$i $(sysctl -n "$i")"; done >"$VAR_DIR/sysctls.saved"
  local t1=$SECONDS
  log "up: images and certificates"
  build_images
  scripts/cluster/certs.sh
  "$CLUSTER_DIR/certs.sh" user cnb-alice >/dev/null
  log "up: node namespaces ${NODES[*]}"
  net_up
  # Bind targets of the nodes' mount namespaces (created empty if missing,
  # removed by down as HOST_PATHS it did not find).
  mkdir -p /etc/cni/net.d
  if [ "$CNI_MODE" = cilium ]; then mkdir -p "$CILIUM_HOST_DIR"; fi
  if [ "$CNI_MODE" = flannel ]; then mkdir -p "$FLANNEL_HOST_DIR"; fi
  for i in "${!NODES[@]}"; do
    node_mnt_up "${NODES[$i]}"
    containerd_up "${NODES[$i]}" "$i"
    import_images "${NODES[$i]}" "$VAR_DIR"/images/*.tar
  done
  log "up: control plane in ${NODES[0]}"
  control_up
  log "up: kubelets"
  for i in "${!NODES[@]}"; do kubelet_up "${NODES[$i]}" "$i"; done
  for ns in "${NODES[@]}"; do
    wait_for "node $ns to register" 60 kctl get node "$ns"
  done
  if [ "$CNI_MODE" = cilium ]; then
    log "up: Cilium $CILIUM_VERSION agents ($CILIUM_ROUTING routing, kube-proxy replacement, no kube-proxy)"
    cilium_up
    echo cilium >"$VAR_DIR/cni-mode"
  fi
  if [ "$CNI_MODE" = flannel ]; then
    log "up: flannel $FLANNEL_VERSION (VXLAN), kube-proxy"
    flannel_up
    echo flannel >"$VAR_DIR/cni-mode"
  fi
  kctl wait --for=condition=Ready node --all --timeout 90s >/dev/null || die "nodes not Ready in 90 s"
  if [ "$CNI_MODE" = cilium ]; then
    echo none >"$VAR_DIR/proxy-mode"
  else
    log "up: kube-proxy (iptables mode)"
    proxy_apply iptables
  fi
  log "up: cluster ready in $((SECONDS - t1)) s (+$((t1 - t0)) s build check)"
}

print_env() {
  local bin
  bin=$(bin_dir)
  cat <<EOF
# The test cluster's API server listens in ${NODES[0]}'s network namespace
# only: run clients there.
export KUBECONFIG=$VAR_DIR/pki/admin.kubeconfig
alias kubectl='nsenter --net=/run/netns/${NODES[0]} $bin/kubectl'
# e.g.:
#   nsenter --net=/run/netns/${NODES[0]} ./bin/cnibench run --target k8s --image $AGENT_IMAGE
#   nsenter --net=/run/netns/${NODES[0]} $bin/kubectl get pods -A -o wide
# least-privilege user cnb-alice: $VAR_DIR/pki/cnb-alice.kubeconfig
# logs: $LOG_DIR; down: $0 down
EOF
}

cluster_down_checked() {
  local before after rc=0
  before=$(mktemp -d)
  [ -d "$VAR_DIR/rootns-before" ] && cp -r "$VAR_DIR/rootns-before/." "$before/"
  local t=$SECONDS
  cluster_down
  after=$(mktemp -d)
  if [ -e "$before/net" ]; then
    rootns_snapshot "$after"
    rootns_compare "$before" "$after" || rc=1
  else
    log "down: no snapshot from before bring-up; checking only that nothing of ours is left"
    rootns_snapshot "$after"
    cat "$after"/{netns,mounts,cgroups,processes} | grep . >&2 && rc=1
  fi
  rm -rf "$before" "$after"
  if [ $rc -eq 0 ]; then log "down in $((SECONDS - t)) s: nothing of the cluster is left"; fi
  return $rc
}

# run_tests ARGS...: the e2e/cluster tests, compiled outside (no network is
# needed in the node namespace), run from node0's namespace.
run_tests() {
  local tbin=$VAR_DIR/cluster.test mode
  (cd e2e/cluster && go test -c -o "$tbin" .)
  mode=$(cat "$VAR_DIR/proxy-mode")
  log "tests: kube-proxy $mode mode"
  in_ns "${NODES[0]}" env CNB_CLUSTER_KUBECONFIG="$VAR_DIR/pki/admin.kubeconfig" \
    CNB_CLUSTER_USER_KUBECONFIG="$VAR_DIR/pki/cnb-alice.kubeconfig" CNB_CLUSTER_USER=cnb-alice \
    CNB_CLUSTER_BIN="$PWD/bin/cnibench" CNB_CLUSTER_IMAGE="$AGENT_IMAGE" \
    CNB_CLUSTER_KUBECTL="$BIN/kubectl" CNB_CLUSTER_PROXY_MODE="$mode" CNB_CLUSTER_CNI="$(cat "$VAR_DIR/cni-mode" 2>/dev/null || echo bridge)" \
    CNB_CLUSTER_RULE_NETNS="${NODES[1]}" CNB_CLUSTER_CIDR="$CLUSTER_CIDR" CNB_CLUSTER_SERVICE_CIDR="$SERVICE_CIDR" \
    "$tbin" -test.v -test.timeout 40m "$@" 2>&1 | tee "$TESTS_OUT"
}
TESTS_OUT=$RUN_DIR-tests.out

# on_exit: on failure the tail of every component's log (where bring-up or
# a test failed), and for `test` always the teardown and its check.
# (Steps run under set -e, never left of || — that would disable -e in them.)
PHASE= DOWN_ON_EXIT=
on_exit() {
  local rc=$?
  trap - EXIT
  if [ $rc -ne 0 ] && [ -n "$PHASE" ]; then
    dump_logs
    if [ -s "$FAIL_NOTES" ]; then sed 's/^/  why: /' "$FAIL_NOTES" >&2; fi
    if [ -s "$TESTS_OUT" ]; then
      grep -E -e '--- FAIL|^panic:|^FAIL' -e '_test\.go:[0-9]+: .*([Ff]ail|want|got|[Ee]rror|expect)' "$TESTS_OUT" |
        tail -40 | sed 's/^/  test: /' >&2 || true
    fi
    log "FAILED: $PHASE"
  fi
  if [ -n "$DOWN_ON_EXIT" ]; then cluster_down_checked || rc=1; fi
  # A bring-up that failed and was torn down clean may be tried again.
  if [ $rc -eq 1 ] && [ -n "$DOWN_ON_EXIT" ] && [[ $PHASE == bring-up* ]]; then rc=$RETRY_BRINGUP; fi
  exit $rc
}
RETRY_BRINGUP=75
trap on_exit EXIT
rm -f "$FAIL_NOTES" "$TESTS_OUT"

# test_mode ARGS...: up, the tests of the mode CNI_MODE, down (checked).
test_mode() {
  local t
  DOWN_ON_EXIT=1
  PHASE="bring-up ($CNI_MODE)"
  cluster_up
  if [ "$CNI_MODE" = cilium ]; then
    t=$SECONDS PHASE="cluster tests (Cilium, no kube-proxy)"
    run_tests "$@"
    log "tests (Cilium) in $((SECONDS - t)) s"
  elif [ "$CNI_MODE" = flannel ]; then
    # The datapath differs from the bridge's in the overlay only: the quick
    # profile on every placement (and its provenance) is what it must pass.
    t=$SECONDS PHASE="cluster tests (Flannel VXLAN, kube-proxy iptables mode)"
    run_tests -test.run 'Quick' "$@"
    log "tests (Flannel) in $((SECONDS - t)) s"
  else
    # An agent pod's death is the same to the target on any CNI: it is
    # tested on Cilium's (3 min), whose endpoints follow the pods.
    t=$SECONDS PHASE="cluster tests (kube-proxy iptables mode)"
    run_tests -test.skip 'AgentPodKilledMidRun' "$@"
    log "tests (iptables mode) in $((SECONDS - t)) s"
    t=$SECONDS PHASE="kube-proxy switch to nftables mode"
    proxy_mode nftables
    # What depends on kube-proxy's mode: its rules read back (sweep, churn,
    # fidelity), TKE's column (none is nftables: the run is refused); the
    # placements were run on this cluster in iptables mode.
    PHASE="cluster tests (kube-proxy nftables mode)"
    run_tests -test.run 'ServiceScale|Fidelity|Churn|TKE' "$@"
    log "tests (nftables mode, with the switch) in $((SECONDS - t)) s"
  fi
  PHASE="teardown ($CNI_MODE)"
  cluster_down_checked
  PHASE= DOWN_ON_EXIT=
}

cmd=${1:-test}
[ $# -gt 0 ] && shift
case $cmd in
  up)
    preflight up
    PHASE="bring-up (the cluster is left for inspection: $0 down removes it)"
    cluster_up
    PHASE=
    print_env
    ;;
  down) preflight down; cluster_down_checked ;;
  proxy-mode)
    [ $# -eq 1 ] || usage
    case $1 in iptables | nftables) ;; *) die "proxy-mode: iptables or nftables, not '$1'" ;; esac
    [ -f "$VAR_DIR/proxy-mode" ] || die "no test cluster is up (run: $0 up)"
    [ "$(cat "$VAR_DIR/cni-mode" 2>/dev/null)" != cilium ] || die "proxy-mode: the cluster runs Cilium (no kube-proxy)"
    preflight proxy-mode
    PHASE="proxy-mode $1"
    proxy_mode "$1"
    PHASE=
    ;;
  env) preflight env; print_env ;;
  cilium-check)
    [ "$(cat "$VAR_DIR/cni-mode" 2>/dev/null)" = cilium ] || die "no cilium-mode test cluster is up (run: CNB_CLUSTER_CNI=cilium $0 up)"
    CNI_MODE=cilium
    preflight cilium-check
    BIN=$(bin_dir) CIL=$(cilium_dir)
    cilium_check
    ;;
  test)
    # Every mode unless CNB_CLUSTER_CNI names one: the bridge (kube-proxy in
    # iptables, then nftables mode), Cilium, Flannel; each brought up,
    # tested and torn down (checked) before the next.
    # A bring-up that fails (its logs and reasons printed) is torn down
    # and tried once more; a failed test is not.
    modes=("$CNI_MODE")
    [ -n "${CNB_CLUSTER_CNI:-}" ] || modes=(bridge cilium flannel)
    for mode in "${modes[@]}"; do
      rc=0
      CNB_CLUSTER_CNI=$mode "$SELF" test-mode "$@" || rc=$?
      if [ $rc -eq $RETRY_BRINGUP ]; then
        log "bring-up ($mode) failed (the reasons are above) and was torn down: trying it once more"
        rc=0
        CNB_CLUSTER_CNI=$mode "$SELF" test-mode "$@" || rc=$?
      fi
      [ $rc -eq 0 ] || exit 1
    done
    ;;
  test-mode) # internal: one mode of `test`
    preflight test
    test_mode "$@"
    ;;
  tests)
    [ -f "$VAR_DIR/proxy-mode" ] || die "no test cluster is up (run: $0 up)"
    preflight tests
    BIN=$(bin_dir)
    # The agent image of the code under test, in place of the one built at up.
    make -s image IMAGE="$AGENT_IMAGE" >/dev/null
    for ns in "${NODES[@]}"; do import_images "$ns" bin/cnibench-image.tar; done
    run_tests "$@"
    ;;
  -h | --help | help) usage 0 ;;
  *) usage ;;
esac
