#!/usr/bin/env bash
# The Cilium agent's view of the machine, set up in a mount namespace of its
# own (started as `unshare --mount --propagation slave -- cilium-ns.sh ...` in
# the node's network namespace: mounts made on the host reach it, none of its
# own leave it), then exec'd into the agent (same pid):
#   /sys/fs/bpf            a bpffs of this agent alone (its pins and links
#                          go with the namespace: nothing outlives the agent)
#   /run/cilium            the node's $RUN_DIR/<node>/cilium (paths Cilium
#                          fixes in code live there, and its sockets)
#   /run/cilium/netns      the node containerd's pod netns directory (a shared
#                          mount on the host, so new pods' netns appear here):
#                          the agent's endpoint MTU updater walks it
#   /run/cilium/cgroupv2   the node's own cgroup2 subtree (a mount point, so
#                          the agent does not mount the whole cgroup2 there:
#                          its socket-LB programs apply to the node's pods only)
#   kernel sysctls         read-only: kernel.unprivileged_bpf_disabled=1 could
#                          not be undone until reboot (the agent ignores a
#                          failed write)
# Usage: cilium-ns.sh NODE_RUN_CILIUM_DIR NODE_CGROUP2_DIR NODE_NETNS_DIR AGENT ARGS...
set -euo pipefail
run=$1 cg=$2 netns=$3
shift 3
mount -t bpf cnbk-bpffs /sys/fs/bpf
mount --bind "$run" /run/cilium
mkdir -p /run/cilium/netns
mount --bind "$netns" /run/cilium/netns
mkdir -p /run/cilium/cgroupv2
mount --bind "$cg" /run/cilium/cgroupv2
for f in kernel/unprivileged_bpf_disabled kernel/timer_migration net/core/bpf_jit_enable; do
  [ -e "/proc/sys/$f" ] || continue # net.core.bpf_jit_enable exists in the root netns only
  mount --bind "/proc/sys/$f" "/proc/sys/$f"
  mount -o remount,bind,ro "/proc/sys/$f"
done
exec "$@"
