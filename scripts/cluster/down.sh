# Teardown of the test cluster: processes, mounts, cgroups, namespaces, our
# files on the host, sysctls. Idempotent: works on a half-built or already
# removed cluster. Sourced (cluster_down).

# stop NAME...: SIGTERM, up to 10 s, then SIGKILL, for daemons we started.
stop() {
  local name pid pids=() i
  for name in "$@"; do
    running "$name" || continue
    pid=$(cat "$PID_DIR/$name.pid")
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  for ((i = 0; i < 20; i++)); do
    local alive=()
    for pid in "${pids[@]}"; do [ -d "/proc/$pid" ] && alive+=("$pid"); done
    [ ${#alive[@]} -eq 0 ] && return 0
    sleep 0.5
  done
  kill -KILL "${alive[@]}" 2>/dev/null || true
}

# cgroup_procs: every process in a cgroup of ours (the containers).
cgroup_procs() {
  local ns
  for ns in "${NODES[@]}"; do
    find "/sys/fs/cgroup/pids/$ns" "/sys/fs/cgroup/memory/$ns" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -u
}

# our_procs: every process whose command line names our directories
# (daemons, shims: -address $RUN_DIR/...) or that runs one of the compiled
# components (never a compiler merely writing into the cache).
our_procs() {
  local p exe
  pgrep -f "$VAR_DIR/|$RUN_DIR/" || true
  for p in /proc/[0-9]*; do
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    case $exe in "$CACHE_ROOT"/*/bin/*) echo "${p#/proc/}" ;; esac
  done
}

cluster_down() {
  local ns i p m
  # The kubelets first, so nothing restarts the containers we kill.
  stop kubelet-"${NODES[0]}" kubelet-"${NODES[1]}"
  # containerd 1.6 puts shim sockets in /run/containerd/s whatever its
  # state dir; a killed shim leaves its socket. Ours are the ones listening
  # in our node namespaces (other containerds may use that directory too).
  local socks
  socks=$(for ns in "${NODES[@]}"; do
    [ -e "/run/netns/$ns" ] && in_ns "$ns" ss -xlnH 2>/dev/null
  done | grep -o '/run/containerd/s/[0-9a-f]*' | sort -u) || true
  for ((i = 0; i < 20; i++)); do
    p=$(cgroup_procs; pgrep -f "containerd-shim-runc-v2 .*-address $RUN_DIR/" || true)
    [ -z "$p" ] && break
    kill -KILL $p 2>/dev/null || true
    sleep 0.25
  done
  stop containerd-"${NODES[0]}" containerd-"${NODES[1]}" scheduler controller-manager apiserver etcd
  # The nodes' mount namespaces go with their holders, the last processes in
  # them: with them the bpffs (Cilium's pins and links) and every mount the
  # node made; the node's cgroup programs go with its cgroups below.
  stop mnt-"${NODES[0]}" mnt-"${NODES[1]}"
  p=$(our_procs)
  if [ -n "$p" ]; then
    log "killing leftover processes: $(ps -o pid=,comm= -p ${p//$'\n'/,} | tr '\n' ' ')"
    kill -KILL $p 2>/dev/null || true
  fi

  # Mounts under our directories (containers' rootfs and shm, pod network
  # namespaces, the kubelet's volumes), deepest first.
  for ((i = 0; i < 5; i++)); do
    m=$(awk '{print $5}' /proc/self/mountinfo | grep -E "^($VAR_DIR|$RUN_DIR)(/|$)" | sort -r) || true
    [ -z "$m" ] && break
    for p in $m; do umount "$p" 2>/dev/null || umount -l "$p" 2>/dev/null || true; done
  done

  # cgroups of the nodes, in every hierarchy, deepest first.
  for ns in "${NODES[@]}"; do
    find /sys/fs/cgroup/*/"$ns" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done

  for ns in "${NODES[@]}"; do
    ip netns list 2>/dev/null | grep -qw "$ns" && ip netns del "$ns"
  done

  # What shims, kubelets and CNI write outside our directories.
  [ -z "$socks" ] || rm -f $socks
  find /var/log/containers -maxdepth 1 -type l -lname "$VAR_DIR/*" -delete 2>/dev/null || true
  # libcni's result cache of pods killed without a CNI DEL (ours name their
  # netns under $RUN_DIR).
  grep -lZ "$RUN_DIR/" /var/lib/cni/results/* 2>/dev/null | xargs -0r rm -f || true
  if [ -f "$VAR_DIR/host-paths.before" ]; then
    for p in "${HOST_PATHS[@]}"; do
      # Created by us: remove its empty directories (and kubelet sockets).
      if [ -e "$p" ] && ! grep -qx "$p" "$VAR_DIR/host-paths.before"; then
        find "$p" -depth \( -type s -o -type d -empty \) -delete 2>/dev/null || true
      fi
    done
  fi

  if [ -f "$VAR_DIR/sysctls.saved" ]; then
    while read -r k v; do sysctl -qw "$k=$v" || log "could not restore $k=$v"; done <"$VAR_DIR/sysctls.saved"
  fi
  # Cilium's programs (cilium mode) go with the namespaces and cgroups
  # removed above, which the kernel frees asynchronously.
  if command -v bpftool >/dev/null; then
    for ((i = 0; i < 60; i++)); do
      [ "$(bpftool prog show 2>/dev/null | grep -c 'name cil_')" = 0 ] && break
      sleep 0.5
    done
  fi
  rm -rf "$RUN_DIR" "$VAR_DIR"
}
