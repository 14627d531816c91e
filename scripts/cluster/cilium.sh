# The cilium mode of the test cluster (CNB_CLUSTER_CNI=cilium): Cilium's
# agent as the CNI and kube-proxy replacement on each node, no kube-proxy,
# no operator, no kvstore. The agent runs as the DaemonSet `cilium` in
# kube-system, configured by the ConfigMap cilium-config, as its Helm chart
# lays it out (scripts/cluster/cilium.yaml). Two agents share one kernel as
# on kind: each node has its own mount namespace (node-mnt.sh: its own
# bpffs, its cgroup2 subtree as the agent's cgroup root, its /run/cilium).
# Routing: CNB_CLUSTER_CILIUM_ROUTING=native (default; the nodes' routes to
# each other's pod CIDR are net_up's) or vxlan. Sourced (cilium_up).

CILIUM_ROUTING=${CNB_CLUSTER_CILIUM_ROUTING:-native}
CILIUM_HOST_DIR=/run/cilium # the nodes' bind target; created (empty) if missing, removed by down

cilium_cgroup() { echo "$(cgroup2_root)/$1"; }

# cilium_dir: the compiled agent, CNI plugin, bpf sources and CRDs (built on first use).
cilium_dir() { "$CLUSTER_DIR/cilium-build.sh"; }

# cilium_cni_bin NODE: the node's CNI bin dir: Debian's plugins (containerd
# runs loopback) beside cilium-cni (the chart's init container copies it to
# the host; here it is linked from the build). Prints it.
cilium_cni_bin() {
  local d=$VAR_DIR/$1/cni-bin p
  mkdir -p "$d"
  for p in /usr/lib/cni/*; do ln -sf "$p" "$d/"; done
  ln -sf "$CIL/bin/cilium-cni" "$d/cilium-cni"
  echo "$d"
}

# cilium_pod NODE: the name of the agent pod on NODE.
cilium_pod() {
  kctl -n kube-system get pod -l k8s-app=cilium --field-selector "spec.nodeName=$1" \
    -o jsonpath='{.items[0].metadata.name}'
}

# cdbg NODE ARGS...: cilium-dbg in the node's agent pod (as cilium-cli's
# `cilium status` does: pinned maps are only in the node's bpffs).
cdbg() {
  local ns=$1 pod; shift
  pod=$(cilium_pod "$ns") || return 1
  [ -n "$pod" ] || return 1
  kctl -n kube-system exec "$pod" -c cilium-agent -- cilium-dbg "$@"
}

# cilium_config: the ConfigMap cilium-config (keys are the agent's flags),
# as a default `helm install` writes it where the chart's value differs
# from the binary's default in what the datapath costs (monitor
# aggregation: the binary's "None" makes every packet a trace event, which
# Hubble then parses; map preallocation), and masquerading as the chart
# leaves it (iptables: Cilium then routes in the host stack, "Host
# Routing: Legacy", as a stock install does). What differs from the chart
# on purpose: no L7 proxy (cilium-envoy is C++), no operator (CRD
# identities, Kubernetes IPAM), the node device named, the cluster's paths.
cilium_config() {
  local routing
  case $CILIUM_ROUTING in
    native) routing="  routing-mode: native
  ipv4-native-routing-cidr: $CLUSTER_CIDR
  auto-direct-node-routes: \"false\"" ;;
    vxlan) routing="  routing-mode: tunnel
  tunnel-protocol: vxlan" ;;
    *) die "CNB_CLUSTER_CILIUM_ROUTING: native or vxlan, not '$CILIUM_ROUTING'" ;;
  esac
  cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: cilium-config
  namespace: kube-system
data:
  cluster-name: cnbk
  identity-allocation-mode: crd
  ipam: kubernetes
  enable-ipv4: "true"
  enable-ipv6: "false"
  k8s-require-ipv4-pod-cidr: "true"
  kube-proxy-replacement: "true"
  devices: eth0
  enable-l7-proxy: "false"
  enable-ipv4-masquerade: "true"
$routing
  bpf-root: /sys/fs/bpf
  cgroup-root: /var/run/cilium/cgroupv2
  lib-dir: /var/lib/cilium
  write-cni-conf-when-ready: /var/run/cilium/cilium-cni.conflist
  cni-log-file: /var/run/cilium/cilium-cni.log
  enable-hubble: "true"
  monitor-aggregation: medium
  monitor-aggregation-interval: "5s"
  monitor-aggregation-flags: all
  preallocate-bpf-maps: "false"
  enable-gops: "false"
EOF
}

# cilium_up: podCIDRs on the Nodes (no controller allocates them here), the
# CRDs, the ConfigMap, RBAC and DaemonSet; done when each agent is Ready
# and its CNI config is in its node's CNI dir.
cilium_up() {
  local ns f
  pod_cidrs_patch
  kctl apply --server-side -f "$CIL/crds/" >/dev/null
  for f in "$CIL"/crds/*.yaml; do
    kctl wait --for condition=established --timeout 60s -f "$f" >/dev/null
  done
  cilium_config | kctl apply -f - >/dev/null
  sed -e "s|@IMAGE@|$CILIUM_IMAGE|; s|@CIL@|$CIL|g; s|@API_IP@|$API_IP|; s|@API_PORT@|$API_PORT|" \
    "$CLUSTER_DIR/cilium.yaml" | kctl apply -f - >/dev/null
  wait_for "the Cilium agents Ready on every node" 300 ds_ready kube-system cilium
  for ns in "${NODES[@]}"; do
    # The agent writes its CNI config when ready, by create + rename, which
    # containerd 1.6 ignores (it reloads on write, rename-from and remove
    # events only): copy it into the node's CNI dir by a write instead.
    wait_for "the CNI config of $ns's agent" 60 test -s "$RUN_DIR/$ns/cilium/cilium-cni.conflist"
    cat "$RUN_DIR/$ns/cilium/cilium-cni.conflist" >"$VAR_DIR/$ns/cni/05-cilium.conflist"
  done
}

# cilium_bpf_check: every Cilium cgroup program sits on a node's own
# cgroup2 subtree (each node has some), none on the root cgroup or another
# path, and nothing of Cilium's is attached to the root namespace's devices.
cilium_bpf_check() {
  local root rc=0 tree ns
  root=$(cgroup2_root)
  tree=$(bpftool cgroup tree "$root") || die "bpftool cgroup tree $root failed"
  # Lines: a cgroup path, then its programs indented.
  echo "$tree" | awk -v root="$root" '
    /^\// { path = $1; next }
    / cil_/ { n = split(path, _, "/"); print path, $NF }' >"$VAR_DIR/cilium-cgroup-progs"
  if grep -v -E "^$root/cnbk-node[01](/| )" "$VAR_DIR/cilium-cgroup-progs" | grep .; then
    log "Cilium cgroup programs outside the nodes' subtrees (above)"
    rc=1
  fi
  for ns in "${NODES[@]}"; do
    if ! grep -q "^$root/$ns " "$VAR_DIR/cilium-cgroup-progs"; then
      log "no Cilium cgroup program on $root/$ns"
      rc=1
    else
      log "$root/$ns: $(grep "^$root/$ns " "$VAR_DIR/cilium-cgroup-progs" | cut -d' ' -f2 | sort | tr '\n' ' ')"
    fi
  done
  if bpftool net show | grep -E 'cil_'; then
    log "Cilium programs on the root namespace's devices (above)"
    rc=1
  fi
  return $rc
}

# cilium_check: the cilium mode works: agents healthy, no kube-proxy rules,
# a pod on node0 reaches a pod on node1 and a ClusterIP Service (Cilium's
# socket LB: the client runs in its pod's cgroup), BPF only where it may be.
cilium_check() {
  local ns srv_ip svc_ip pid
  for ns in "${NODES[@]}"; do
    cdbg "$ns" status --brief || die "agent of $ns not healthy"
    cdbg "$ns" status --verbose | grep -E '^(KubeProxyReplacement|Routing|Cluster health|Hubble|Masquerading|Cilium):|^  (Socket LB|Socket LB Tracing|Mode|Backend Selection):' | sed "s/^/  $ns: /" >&2
    if in_ns "$ns" iptables-save 2>/dev/null | grep -q 'KUBE-SVC'; then die "kube-proxy rules in $ns"; fi
  done
  kctl delete pod,svc -l app=cnbk-check --wait=true >/dev/null 2>&1 || true
  kctl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: cnbk-check-srv, namespace: default, labels: {app: cnbk-check, role: srv}}
spec:
  nodeName: ${NODES[1]}
  containers: [{name: s, image: $AGENT_IMAGE, imagePullPolicy: Never, command: [/cnibench, server]}]
---
apiVersion: v1
kind: Pod
metadata: {name: cnbk-check-cli, namespace: default, labels: {app: cnbk-check, role: cli}}
spec:
  nodeName: ${NODES[0]}
  containers: [{name: c, image: $AGENT_IMAGE, imagePullPolicy: Never, command: [/cnibench, server]}]
---
apiVersion: v1
kind: Service
metadata: {name: cnbk-check, namespace: default, labels: {app: cnbk-check}}
spec:
  selector: {role: srv}
  ports: [{name: rr, port: 5203}, {name: crr, port: 5205}, {name: http, port: 80, targetPort: 8080}]
YAML
  kctl wait --for=condition=Ready pod -l app=cnbk-check --timeout 120s >/dev/null || die "check pods not Ready"
  srv_ip=$(kctl get pod cnbk-check-srv -o jsonpath='{.status.podIP}')
  svc_ip=$(kctl get svc cnbk-check -o jsonpath='{.spec.clusterIP}')
  log "check: pod ${NODES[0]} -> pod ${NODES[1]} ($srv_ip)"
  kctl exec cnbk-check-cli -- /cnibench client TCP_RR "$srv_ip" --duration 2s --warmup 0s >&2 || die "pod to pod failed"
  wait_for "the Service in both agents' LB maps" 60 cilium_svc_programmed "$svc_ip"
  log "check: pod ${NODES[0]} -> ClusterIP $svc_ip:5203 (TCP_RR), :5205 (TCP_CRR), :80 (HTTP)"
  kctl exec cnbk-check-cli -- /cnibench client TCP_RR "$svc_ip" --duration 2s --warmup 0s >&2 || die "pod to ClusterIP failed"
  kctl exec cnbk-check-cli -- /cnibench client TCP_CRR "$svc_ip" --duration 2s --warmup 0s >&2 || die "pod to ClusterIP (TCP_CRR) failed"
  kctl exec cnbk-check-cli -- /cnibench client HTTP_RPS_SHORT_C64 "$svc_ip" --port 80 --duration 2s --warmup 0s >&2 || die "pod to ClusterIP (HTTP) failed"
  # Socket LB translated the ClusterIP at connect(): node0's connection
  # tracking saw the backend's address only, never the Service's (the tc
  # datapath's per-packet LB would have tracked the ClusterIP).
  local ct
  ct=$(cdbg "${NODES[0]}" bpf ct list global)
  if grep -qF " $svc_ip:" <<<"$ct"; then die "node0 tracked the ClusterIP: not translated by socket LB"; fi
  grep -qF " $srv_ip:520" <<<"$ct" || die "node0 tracked no connection to the backend $srv_ip"
  log "check: socket LB: node0 tracked connections to the backend $srv_ip, none to the ClusterIP"
  # Socket LB: the client's cgroup2 path is under its node's subtree.
  for pid in $(pgrep -f '^/cnibench server'); do
    log "pid $pid: $(grep '^0::' /proc/$pid/cgroup)"
  done
  kctl delete pod,svc -l app=cnbk-check --wait=true >/dev/null
  cilium_bpf_check || die "BPF attachments outside the nodes"
  log "cilium check passed"
}

# cilium_svc_programmed IP: both agents have the ClusterIP with a backend.
cilium_svc_programmed() {
  local ns
  for ns in "${NODES[@]}"; do
    grep -A1 -F "$1:5203" <<<"$(cdbg "$ns" service list 2>/dev/null)" | grep -q " 198\.19\." || return 1
  done
}
