#!/usr/bin/env bash
# The Cilium agent's view of the machine, set up in its own private mount
# namespace (started as `unshare --mount -- cilium-ns.sh ...` in the node's
# network namespace), then exec'd into the agent (same pid):
#   /sys/fs/bpf            a bpffs of this agent alone (its pins and links
#                          go with the namespace: nothing outlives the agent)
#   /run/cilium            the node's $RUN_DIR/<node>/cilium (paths Cilium
#                          fixes in code live there, and its sockets)
#   /run/cilium/cgroupv2   the node's own cgroup2 subtree (a mount point, so
#                          the agent does not mount the whole cgroup2 there:
#                          its socket-LB programs apply to the node's pods only)
#   kernel sysctls         read-only: kernel.unprivileged_bpf_disabled=1 could
#                          not be undone until reboot (the agent ignores a
#                          failed write)
# Usage: cilium-ns.sh NODE_RUN_CILIUM_DIR NODE_CGROUP2_DIR AGENT ARGS...
set -euo pipefail
run=$1 cg=$2
shift 2
[ "$(awk '$5=="/sys/fs/bpf"' /proc/self/mountinfo)" = "" ] || { echo "cilium-ns: /sys/fs/bpf already mounted here" >&2; exit 1; }
mount -t bpf cnbk-bpffs /sys/fs/bpf
mount --bind "$run" /run/cilium
mkdir -p /run/cilium/cgroupv2
mount --bind "$cg" /run/cilium/cgroupv2
for f in kernel/unprivileged_bpf_disabled kernel/timer_migration net/core/bpf_jit_enable; do
  [ -e "/proc/sys/$f" ] || continue # net.core.bpf_jit_enable exists in the root netns only
  mount --bind "/proc/sys/$f" "/proc/sys/$f"
  mount -o remount,bind,ro "/proc/sys/$f"
done
exec "$@"
