# One node of the test cluster: its own containerd and kubelet, started in
# the node's network namespace, every directory of theirs under
# $VAR_DIR/<node> and $RUN_DIR/<node>, cgroups under /<node>. Sourced
# (containerd_up, kubelet_up).

node_var() { echo "$VAR_DIR/$1"; }
node_run() { echo "$RUN_DIR/$1"; }
ctr_sock() { echo "$RUN_DIR/$1/containerd.sock"; }
nctr() { local ns=$1; shift; ctr --address "$(ctr_sock "$ns")" -n k8s.io "$@"; }

# node_mnt_up NODE: the node's mount namespace (scripts/cluster/node-mnt.sh),
# held by a pause process; the node's daemons start in it (lib.sh start).
node_mnt_up() {
  local ns=$1 var run
  var=$(node_var "$ns") run=$(node_run "$ns")
  mkdir -p "$var/cni" "$run"
  if [ "$CNI_MODE" = cilium ]; then mkdir -p "$run/cilium" "$(cilium_cgroup "$ns")"; fi
  if [ "$CNI_MODE" = flannel ]; then mkdir -p "$run/flannel"; fi
  start "mnt-$ns" "$ns" unshare --mount --propagation slave -- \
    "$CLUSTER_DIR/node-mnt.sh" "$CNI_MODE" "$var" "$run" "$(cilium_cgroup "$ns")" "$BIN/pause"
  # Ready once the script has made its mounts and exec'd the holder.
  WAIT_DAEMON=mnt-$ns wait_for "the mount namespace of $ns" 10 mnt_held "$ns"
}

mnt_held() { [ "$(readlink "/proc/$(cat "$PID_DIR/mnt-$1.pid")/exe")" = "$BIN/pause" ]; }

# containerd_up NODE INDEX: a private containerd (Debian's 1.6) in the
# node's network and mount namespaces, whose shims and containers inherit
# them (hostNetwork pods land there); pod network namespaces are mounted
# under its state dir, the CNI config read from /etc/cni/net.d (the node's).
containerd_up() {
  local ns=$1 i=$2 var run
  var=$(node_var "$ns") run=$(node_run "$ns")
  # cilium mode: the agent writes the CNI config once it is ready; its
  # plugin finds the agent at the default socket, the node's /run/cilium.
  # flannel mode: flannel_up writes it from flanneld's lease.
  local cni_bin=/usr/lib/cni
  case $CNI_MODE in
    cilium) cni_bin=$(cilium_cni_bin "$ns") ;;
    bridge) cni_conf "$ns" "$i" >"$var/cni/10-cnbk.conflist" ;;
  esac
  cat >"$var/containerd.toml" <<EOF
version = 2
root = "$var/containerd"
state = "$run/containerd"
# opt would create /opt/containerd; the snapshotters we do not use stay off.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$run/containerd.sock"
[ttrpc]
  address = "$run/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # No CAP_SYS_RESOURCE on this kind of machine: without this every pod
  # fails with "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  tolerate_missing_hugetlb_controller = true
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$run/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$cni_bin"
    conf_dir = "/etc/cni/net.d"
    max_conf_num = 1
EOF
  start "containerd-$ns" "$ns" containerd --config "$var/containerd.toml"
  WAIT_DAEMON=containerd-$ns wait_for "containerd of $ns" 30 ctr --address "$(ctr_sock "$ns")" version
}

# import_images NODE TARBALL...: images go straight into the node's
# containerd (no registry anywhere).
import_images() {
  local ns=$1 tar; shift
  for tar in "$@"; do
    nctr "$ns" images import "$tar" >/dev/null
  done
}

# cgroup_mkdirs NODE: the kubelet's cgroupRoot /<node> in every hierarchy
# (it refuses a root that does not exist); cpuset needs its CPUs and memory
# nodes copied from the parent before anything can join.
cgroup_mkdirs() {
  local ns=$1 h
  for h in /sys/fs/cgroup/*/; do
    [ -e "$h/cgroup.procs" ] || continue
    mkdir -p "$h$ns"
  done
  if [ -e /sys/fs/cgroup/cpuset/cpuset.cpus ]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$ns/cpuset.cpus"
    cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$ns/cpuset.mems"
  fi
}

# kubelet_up NODE INDEX: the node's kubelet, registered as NODE with the
# node IP, its state (root dir, pod logs, plugins) under the node's dir.
kubelet_up() {
  local ns=$1 i=$2 var run
  var=$(node_var "$ns") run=$(node_run "$ns")
  cgroup_mkdirs "$ns"
  mkdir -p "$var/kubelet" "$var/pod-logs" "$var/volume-plugins"
  cat >"$var/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IPS[$i]}
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $VAR_DIR/pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: /$ns
cgroupsPerQOS: true
failCgroupV1: false
containerRuntimeEndpoint: unix://$run/containerd.sock
podLogsDir: $var/pod-logs
volumePluginDir: $var/volume-plugins
resolvConf: ""
failSwapOn: false
serializeImagePulls: false
# Images are imported, never pulled: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
# The agents' TCP_CRR and HTTP_RPS_SHORT tests set these where allowed.
allowedUnsafeSysctls: ["net.ipv4.tcp_tw_reuse"]
EOF
  start "kubelet-$ns" "$ns" "$BIN/kubelet" --config "$var/kubelet.yaml" \
    --kubeconfig "$VAR_DIR/pki/$ns.kubeconfig" --root-dir "$var/kubelet" \
    --cert-dir "$var/kubelet/pki" --hostname-override "$ns" --node-ip "${NODE_IPS[$i]}" \
    --node-labels "cnibench.io/test-cluster=true" --v=1
  WAIT_DAEMON=kubelet-$ns wait_for "kubelet of $ns healthz" 60 in_ns "$ns" curl -sf http://127.0.0.1:10248/healthz
}
