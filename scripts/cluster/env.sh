# Names, addresses and directories of the test cluster, sourced by
# scripts/test-cluster.sh and scripts/cluster/*.sh. Everything the cluster
# creates carries the prefix cnbk- (lab objects use cnb-<lab>-, so the two
# never collide).

K8S_VERSION=v1.34.4     # kubelet 1.35+ refuses cgroup v1, which this kind of machine has
ETCD_VERSION=v3.6.4     # the etcd Kubernetes 1.34.4 is tested with
CILIUM_VERSION=v1.20.2  # the cilium mode's (Kubernetes 1.33-1.36); scripts/cluster/cilium
FLANNEL_VERSION=v0.28.10 # the flannel mode's (client-go 0.34); scripts/cluster/flannel

# The pod network: bridge (Debian's bridge CNI + kube-proxy, the default),
# cilium (Cilium's CNI, kube-proxy replacement, no kube-proxy) or flannel
# (flanneld's VXLAN overlay + kube-proxy).
CNI_MODE=${CNB_CLUSTER_CNI:-bridge}

CLUSTER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) # scripts/cluster
REPO_DIR=$(cd "$CLUSTER_DIR/../.." && pwd)

# Compiled components, reused across runs (outside the repo: ~700 MB).
CACHE_ROOT=${CNB_CLUSTER_CACHE:-/var/cache/cnibench-cluster}
# Everything of one running cluster: certs, configs, logs, pid files, node
# state. Removed by `down`.
VAR_DIR=/var/lib/cnbk
RUN_DIR=/run/cnbk

NODES=(cnbk-node0 cnbk-node1)
NODE_IPS=(192.0.2.10 192.0.2.11)  # documentation range (RFC 5737), only on our veth
NODE_PREFIX=24
POD_CIDRS=(198.19.0.0/24 198.19.1.0/24) # benchmarking range (RFC 2544)
CLUSTER_CIDR=198.19.0.0/16
SERVICE_CIDR=198.18.0.0/16
API_SERVICE_IP=198.18.0.1
API_IP=${NODE_IPS[0]}
API_PORT=6443
SINK=cnbk-svc  # the port-less bridge in each node namespace the Service range is routed into

PAUSE_IMAGE=localhost/cnbk/pause:1
PROXY_IMAGE=localhost/cnbk/kube-proxy:$K8S_VERSION
AGENT_IMAGE=localhost/cnbk/cnibench:test
CILIUM_IMAGE=localhost/cnbk/cilium:$CILIUM_VERSION
FLANNEL_IMAGE=localhost/cnbk/flannel:$FLANNEL_VERSION

# The cgroup v1 hierarchies the kubelet and runc write (one root per node).
cgroup_roots() { local n; for n in "${NODES[@]}"; do echo "/$n"; done; }

# The cgroup2 hierarchy (beside the v1 ones here, or the only one).
cgroup2_root() { if [ -e /sys/fs/cgroup/unified/cgroup.procs ]; then echo /sys/fs/cgroup/unified; else echo /sys/fs/cgroup; fi; }

# Kernel-wide sysctls a kubelet writes (protectKernelDefaults=false): saved
# before bring-up and restored after teardown.
# The last three the Cilium agent writes (kernel.unprivileged_bpf_disabled
# it cannot: read-only in its mount namespace, as 1 could not be undone).
GLOBAL_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes
  kernel.unprivileged_bpf_disabled kernel.timer_migration net.core.bpf_jit_enable)

# cached_build DIR LOCK [PRINT]: one build at a time (flock on
# $CACHE_ROOT/LOCK, held until the calling script exits: a second caller
# then finds the first one's build complete); when DIR holds a complete
# build, prints PRINT (default DIR) and ends the calling script.
cached_build() {
  local dir=$1 lock=$2 print=${3:-$1}
  mkdir -p "$CACHE_ROOT"
  exec 9>"$CACHE_ROOT/$lock"
  flock 9
  if [ -e "$dir/complete" ]; then
    echo "$print"
    exit 0
  fi
  mkdir -p "$dir/bin"
}

log() { printf '%s cluster: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
# FAIL_NOTES: the reasons of a failure, said again after the logs' tails
# (CI keeps only the end of the output); a file, as die may run in $(...).
FAIL_NOTES=/run/cnbk-fail-notes
fail() { log "$*"; printf '%s\n' "$*" >>"$FAIL_NOTES" 2>/dev/null || true; }
die() { fail "ERROR: $*"; exit 1; }
