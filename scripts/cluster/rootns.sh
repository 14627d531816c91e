# What the test cluster could change in the root namespace and on the host,
# snapshotted before bring-up and compared after teardown. Only lines that
# name our objects, paths or address ranges (or the values of sysctls we
# could write) are kept, so other tools changing the host meanwhile do not
# count. Sourced (rootns_snapshot DIR, rootns_compare BEFORE AFTER).

OURS='cnbk|192\.0\.2\.|198\.1[89]\.|KUBE-|kube-proxy'
# Host paths a kubelet, containerd or CNI plugin writes to by default.
# (/run/xtables.lock is not among them: every iptables user on the host
# creates it, a lab's or Docker's as much as kube-proxy's, and it holds
# nothing.)
HOST_PATHS=(/var/lib/kubelet /var/log/pods /var/log/containers /var/lib/cni /run/containerd
  /etc/cni /opt/cni /opt/containerd /etc/kubernetes /usr/libexec/kubernetes
  /run/cilium /var/lib/cilium /run/flannel)

rootns_snapshot() {
  local d=$1 s h p
  mkdir -p "$d"
  { ip -o link show; ip -o addr show; ip route show table all; ip -6 route show table all; ip rule show; } 2>&1 \
    | grep -E "$OURS" >"$d/net" || true
  { iptables-save 2>/dev/null; ip6tables-save 2>/dev/null; nft list ruleset 2>/dev/null; } \
    | grep -E "$OURS" >"$d/firewall" || true
  awk '{print $5}' /proc/self/mountinfo | grep -E "cnbk|/run/containerd|/var/lib/kubelet" >"$d/mounts" || true
  ip netns list 2>/dev/null | grep cnbk >"$d/netns" || true
  for s in "${GLOBAL_SYSCTLS[@]}" net.netfilter.nf_conntrack_max net.ipv4.ip_forward \
    net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables; do
    echo "$s = $(sysctl -n "$s" 2>/dev/null || echo absent)"
  done >"$d/sysctls"
  find /sys/fs/cgroup -maxdepth 2 -name 'cnbk*' >"$d/cgroups" 2>/dev/null || true
  # BPF (cilium mode): nothing of Cilium's on the root cgroup2 or the root
  # namespace's devices, and no Cilium program left loaded anywhere.
  : >"$d/bpf"
  if command -v bpftool >/dev/null; then
    { bpftool cgroup tree "$(cgroup2_root)"; bpftool net show; } 2>/dev/null | grep -E 'cil_|cnbk' >"$d/bpf" || true
    echo "Cilium programs loaded: $(bpftool prog show 2>/dev/null | grep -c 'name cil_')" >>"$d/bpf"
  fi
  for p in $(our_procs); do ps -o args= -p "$p" || true; done >"$d/processes"
  # Shim sockets of other containerds come and go in /run/containerd/s;
  # teardown removes ours by name.
  for h in "${HOST_PATHS[@]}"; do
    [ -e "$h" ] && find "$h" -maxdepth 3 2>/dev/null
  done | grep -v '^/run/containerd/s/' >"$d/paths" || true
}

# rootns_compare BEFORE AFTER: prints what differs; fails if anything does.
rootns_compare() {
  local before=$1 after=$2 f rc=0
  for f in net firewall mounts netns sysctls cgroups bpf processes paths; do
    if ! diff -u "$before/$f" "$after/$f" >"$after/$f.diff" 2>&1; then
      log "root namespace / host changed: $f"
      cat "$after/$f.diff" >&2
      rc=1
    fi
  done
  return $rc
}
