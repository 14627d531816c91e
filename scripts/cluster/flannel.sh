# The flannel mode of the test cluster (CNB_CLUSTER_CNI=flannel): flanneld's
# VXLAN overlay between the nodes, with kube-proxy (iptables mode) for
# Services, as on a kubeadm cluster with kube-flannel.yml
# (scripts/cluster/flannel.yaml). Each node's /run/flannel is its own
# (node-mnt.sh); net_up adds no routes between the pod CIDRs: flannel's
# VXLAN device and routes carry them. Sourced (flannel_up).

FLANNEL_HOST_DIR=/run/flannel # the nodes' bind target; created (empty) if missing, removed by down

# flannel_dir: the compiled flanneld (built on first use).
flannel_dir() { "$CLUSTER_DIR/flannel-build.sh"; }

# ipv4_network A.B.C.D/N: the network of an address (198.19.0.1/24 ->
# 198.19.0.0/24), as the flannel plugin hands host-local its lease.
ipv4_network() {
  local ip=${1%/*} len=${1#*/} a b c d n
  IFS=. read -r a b c d <<<"$ip"
  n=$(( ((a << 24) | (b << 16) | (c << 8) | d) & (0xffffffff << (32 - len)) & 0xffffffff ))
  echo "$((n >> 24 & 255)).$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))/$len"
}

# flannel_cni_conf SUBNET_ENV NODE: what the flannel CNI plugin hands its
# delegate, from the node's /run/flannel/subnet.env: a bridge cni0 with the
# node's lease, flannel's MTU, the pods' default route to it; flanneld
# masquerades (FLANNEL_IPMASQ), so the bridge does not.
flannel_cni_conf() {
  local FLANNEL_NETWORK FLANNEL_SUBNET FLANNEL_MTU FLANNEL_IPMASQ
  # shellcheck disable=SC1090 # flanneld's KEY=VALUE lines
  source "$1"
  [ -n "$FLANNEL_SUBNET" ] && [ -n "$FLANNEL_MTU" ] || die "flannel: no subnet or MTU in $1"
  cat <<JSON
{
  "cniVersion": "1.0.0",
  "name": "cbr0",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "isDefaultGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "mtu": $FLANNEL_MTU,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": "$(ipv4_network "$FLANNEL_SUBNET")"}]],
      "dataDir": "$VAR_DIR/$2/cni-ipam"
    }
  }, {
    "type": "portmap",
    "capabilities": {"portMappings": true}
  }]
}
JSON
}

# flannel_up: podCIDRs, the manifest; done when flanneld is Ready on each
# node and has written its lease, which becomes the node's CNI config.
flannel_up() {
  local ns
  pod_cidrs_patch
  sed -e "s|@IMAGE@|$FLANNEL_IMAGE|; s|@API_IP@|$API_IP|; s|@API_PORT@|$API_PORT|; s|@CLUSTER_CIDR@|$CLUSTER_CIDR|" \
    "$CLUSTER_DIR/flannel.yaml" | kctl apply -f - >/dev/null
  wait_for "flanneld Ready on every node" 120 ds_ready kube-flannel kube-flannel-ds
  for ns in "${NODES[@]}"; do
    wait_for "flanneld's lease on $ns" 60 test -s "$RUN_DIR/$ns/flannel/subnet.env"
    flannel_cni_conf "$RUN_DIR/$ns/flannel/subnet.env" "$ns" >"$VAR_DIR/$ns/cni/10-flannel.conflist"
    log "flannel: $ns: $(tr '\n' ' ' <"$RUN_DIR/$ns/flannel/subnet.env")"
  done
}
