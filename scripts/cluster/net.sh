# The test cluster's network: one namespace per node, joined by one veth
# pair; nothing is created in the root namespace. Sourced (net_up).
#
#   cnbk-node0  eth0 192.0.2.10/24 <--veth--> eth0 192.0.2.11/24  cnbk-node1
#     pods 198.19.0.0/24 on bridge cnbk-cni0    pods 198.19.1.0/24
#     198.19.1.0/24 via 192.0.2.11              198.19.0.0/24 via 192.0.2.10
#     198.18.0.0/16 (Services) dev cnbk-svc     198.18.0.0/16 dev cnbk-svc
#
# No default route: nothing in the cluster can reach beyond these ranges.
# cnbk-svc is a bridge without ports (this kernel has no dummy link type):
# ClusterIP traffic kube-proxy did not rewrite ends there instead of
# leaving through eth0.

net_up() {
  local i ns peer
  for ns in "${NODES[@]}"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
  done
  # Created inside node0's namespace, the peer end moved straight to node1's.
  ip -n "${NODES[0]}" link add eth0 type veth peer name eth0 netns "${NODES[1]}"
  for i in "${!NODES[@]}"; do
    ns=${NODES[$i]} peer=$((1 - i))
    ip -n "$ns" addr add "${NODE_IPS[$i]}/$NODE_PREFIX" dev eth0
    ip -n "$ns" link set eth0 up
    # (flannel mode: its VXLAN routes instead)
    [ "$CNI_MODE" = flannel ] || ip -n "$ns" route add "${POD_CIDRS[$peer]}" via "${NODE_IPS[$peer]}"
    ip -n "$ns" link add "$SINK" type bridge
    ip -n "$ns" link set "$SINK" up
    ip -n "$ns" route add "$SERVICE_CIDR" dev "$SINK"
    in_ns "$ns" sysctl -qw net.ipv4.ip_forward=1
  done
}

# cni_conf NODE INDEX: the bridge CNI config of one node (host-local IPAM on
# its pod CIDR, state under the node's dir; pods route only to the cluster's
# ranges).
cni_conf() {
  local ns=$1 i=$2
  cat <<EOF
{
  "cniVersion": "1.0.0",
  "name": "cnbk-pods",
  "plugins": [{
    "type": "bridge",
    "bridge": "cnbk-cni0",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": "${POD_CIDRS[$i]}"}]],
      "routes": [{"dst": "$CLUSTER_CIDR"}, {"dst": "$SERVICE_CIDR"}],
      "dataDir": "$VAR_DIR/$ns/cni-ipam"
    }
  }]
}
EOF
}
