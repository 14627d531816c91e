# Helpers of the test cluster scripts: processes in a node's network
# namespace, waits on real conditions, kubectl. Sourced after env.sh.

LOG_DIR=$VAR_DIR/logs
PID_DIR=$RUN_DIR/pids

# in_ns NODE CMD...: CMD in the node's network namespace only (not with
# `ip netns exec`: that also unshares the mount namespace).
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" -- "$@"; }

# node_mnt NODE: nsenter's option entering the node's mount namespace
# (node_mnt_up), none before it exists.
node_mnt() {
  local pid
  pid=$(cat "$PID_DIR/mnt-$1.pid" 2>/dev/null) || return 0
  if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then echo "--mount=/proc/$pid/ns/mnt"; fi
}

# in_node NODE CMD...: CMD in the node's network and mount namespaces, as
# its daemons see the machine.
in_node() { local ns=$1; shift; nsenter --net="/run/netns/$ns" $(node_mnt "$ns") -- "$@"; }

# start NAME NODE BIN ARGS...: a daemon in NODE's network namespace (and
# mount namespace once it has one: its containerd and kubelet, so their
# pods see the node's mounts), in its own session (so Ctrl-C in the shell
# that ran `up` does not reach it), its output in $LOG_DIR/NAME.log, its
# pid in $PID_DIR/NAME.pid.
start() {
  local name=$1 ns=$2; shift 2
  mkdir -p "$LOG_DIR" "$PID_DIR"
  rm -f "$PID_DIR/$name.pid"
  # shellcheck disable=SC2046 # node_mnt prints one option or nothing
  setsid -f nsenter --net="/run/netns/$ns" $(node_mnt "$ns") -- sh -c 'echo $$ >"$0"; exec "$@"' "$PID_DIR/$name.pid" "$@" \
    </dev/null >>"$LOG_DIR/$name.log" 2>&1
  wait_for "$name to start" 10 test -s "$PID_DIR/$name.pid"
}

# running NAME: the daemon NAME is alive and is still the process we started
# (its command line names our directories: a pid file left by an earlier
# cluster may name another process by now).
running() {
  local pid
  pid=$(cat "$PID_DIR/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && grep -qz "$VAR_DIR\|$RUN_DIR" "/proc/$pid/cmdline" 2>/dev/null
}

# alive NAME: the daemon NAME, started moments ago, has not exited (its
# process exists and is no zombie). Not its command line: while the shell
# that wrote the pid execs a large binary on a loaded machine, the kernel
# shows an empty one (a bring-up failed so, its daemon's log still empty).
alive() {
  local pid state
  pid=$(cat "$PID_DIR/$1.pid" 2>/dev/null) || return 1
  state=$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# wait_for DESC SECONDS CMD...: polls CMD every 0.5 s until it succeeds;
# after SECONDS, fails naming DESC. WAIT_DAEMON (optional) must stay alive.
wait_for() {
  local desc=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [ -n "${WAIT_DAEMON:-}" ] && ! alive "$WAIT_DAEMON"; then
      fail "$WAIT_DAEMON exited while waiting for $desc (its log: $LOG_DIR/$WAIT_DAEMON.log)"
      tail -30 "$LOG_DIR/$WAIT_DAEMON.log" >&2 || true
      return 1
    fi
    if ((SECONDS >= deadline)); then
      fail "timed out after ${timeout}s waiting for $desc"
      return 1
    fi
    sleep 0.5
  done
}

# kctl ARGS...: kubectl as the cluster admin, from node0's namespace.
kctl() { in_ns "${NODES[0]}" "$BIN/kubectl" --kubeconfig "$VAR_DIR/pki/admin.kubeconfig" "$@"; }

# ds_ready NAMESPACE NAME: the DaemonSet's current generation has a Ready
# pod on each node.
ds_ready() {
  local st
  st=$(kctl -n "$1" get ds "$2" \
    -o jsonpath='{.metadata.generation} {.status.observedGeneration} {.status.numberReady} {.status.updatedNumberScheduled}')
  [ "$st" = "$(echo "$st" | cut -d' ' -f1) $(echo "$st" | cut -d' ' -f1) ${#NODES[@]} ${#NODES[@]}" ]
}

# pod_cidrs_patch: each Node's podCIDR (no controller allocates them here;
# flannel's kube subnet manager and Cilium's kubernetes IPAM read them).
pod_cidrs_patch() {
  local i
  for i in "${!NODES[@]}"; do
    kctl patch node "${NODES[$i]}" --type merge -p "{\"spec\":{\"podCIDR\":\"${POD_CIDRS[$i]}\",\"podCIDRs\":[\"${POD_CIDRS[$i]}\"]}}" >/dev/null
  done
}

# bin_dir: the compiled components (built on first use).
bin_dir() { "$CLUSTER_DIR/build.sh"; }

# dump_logs: the tail of every component's log, for a failed bring-up or test.
dump_logs() {
  local f
  for f in "$LOG_DIR"/*.log; do
    [ -e "$f" ] || continue
    printf '\n===== %s (last 40 lines) =====\n' "${f##*/}" >&2
    tail -40 "$f" >&2
  done
  # Pods of kube-system (kube-proxy, Cilium's agents): the kubelets' pod logs.
  for f in "$VAR_DIR"/*/pod-logs/kube-system_*/*/*.log; do
    [ -e "$f" ] || continue
    printf '\n===== %s (last 40 lines) =====\n' "${f#"$VAR_DIR"/}" >&2
    tail -40 "$f" >&2
  done
  if [ -n "${BIN:-}" ] && [ -x "$BIN/kubectl" ] && running apiserver; then
    printf '\n===== kubectl get nodes,pods -A -o wide =====\n' >&2
    kctl get nodes,pods -A -o wide >&2 2>&1 || true
    printf '\n===== recent events =====\n' >&2
    kctl get events -A --sort-by=.lastTimestamp 2>&1 | tail -30 >&2 || true
  fi
}
