#!/usr/bin/env bash
# A node's own view of the machine's mounts, as a kind node has: started as
# `unshare --mount --propagation slave -- node-mnt.sh ...` in the node's
# network namespace (mounts made on the host reach it, none of its own
# leave it), then exec'd into a pause process that holds the namespace.
# The node's containerd and kubelet, hence its pods and their hostPath
# volumes, live in it and see:
#   /sys/fs/bpf            a BPF filesystem of this node alone (Cilium's pins
#                          and links; a node probe reads its maps here)
#   /etc/cni/net.d         the node's CNI config dir ($VAR_DIR/<node>/cni)
#   /run/cilium            the node's $RUN_DIR/<node>/cilium (cilium mode):
#                          the agent's state, sockets and the paths Cilium
#                          fixes in code, with in it
#     netns                containerd's pod netns directory (a shared mount,
#                          so new pods' netns appear here as they come: the
#                          agent's endpoint MTU updater walks it)
#     cgroupv2             the node's own cgroup2 subtree (a mount point, so
#                          the agent mounts nothing: its socket-LB programs
#                          apply to the node's pods only)
#   /run/flannel           the node's $RUN_DIR/<node>/flannel (flannel mode):
#                          flanneld's lease, subnet.env
# Usage: node-mnt.sh MODE NODE_VAR_DIR NODE_RUN_DIR NODE_CGROUP2_DIR PAUSE
set -euo pipefail
mode=$1 var=$2 run=$3 cg=$4 pause=$5
mount -t bpf cnbk-bpffs /sys/fs/bpf
mount --bind "$var/cni" /etc/cni/net.d
if [ "$mode" = cilium ]; then
  mount --bind "$run/cilium" /run/cilium
  netns=$run/containerd/io.containerd.grpc.v1.cri/netns
  mkdir -p "$netns" /run/cilium/netns /run/cilium/cgroupv2
  mount --bind "$netns" "$netns"
  mount --make-shared "$netns"
  mount --bind "$netns" /run/cilium/netns
  mount --bind "$cg" /run/cilium/cgroupv2
  # Shared (a peer group of this namespace alone): containerd mounts it into
  # the agent with HostToContainer propagation, which needs that.
  mount --make-rshared /run/cilium
elif [ "$mode" = flannel ]; then
  mount --bind "$run/flannel" /run/flannel
fi
# The argument names the node's directory, so `running` knows it is ours.
exec "$pause" "$run"
