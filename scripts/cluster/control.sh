# The control plane of the test cluster, in node0's namespace as on a
# kubeadm control-plane node: etcd on 127.0.0.1, the API server on the node
# IP, controller-manager and scheduler talking to it. Sourced (control_up).

control_up() {
  local ns=${NODES[0]} pki=$VAR_DIR/pki
  mkdir -p "$VAR_DIR/etcd"
  start etcd "$ns" "$BIN/etcd" --name cnbk --data-dir "$VAR_DIR/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster cnbk=http://127.0.0.1:2380 \
    --unsafe-no-fsync --log-level warn
  WAIT_DAEMON=etcd wait_for "etcd health" 30 in_ns "$ns" curl -sf http://127.0.0.1:2379/health

  start apiserver "$ns" "$BIN/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
    --advertise-address "$API_IP" --bind-address 0.0.0.0 --secure-port "$API_PORT" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=true --anonymous-auth=false --profiling=false --v=1
  WAIT_DAEMON=apiserver wait_for "the API server's /readyz" 90 in_ns "$ns" curl -sf \
    --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://$API_IP:$API_PORT/readyz"

  start controller-manager "$ns" "$BIN/kube-controller-manager" \
    --kubeconfig "$pki/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$pki/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$pki/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --allocate-node-cidrs=false --profiling=false --v=1
  start scheduler "$ns" "$BIN/kube-scheduler" --kubeconfig "$pki/scheduler.kubeconfig" \
    --authentication-kubeconfig "$pki/scheduler.kubeconfig" \
    --authorization-kubeconfig "$pki/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --profiling=false --v=1
  WAIT_DAEMON=controller-manager wait_for "controller-manager healthz" 60 \
    in_ns "$ns" curl -sfk https://127.0.0.1:10257/healthz
  WAIT_DAEMON=scheduler wait_for "scheduler healthz" 60 in_ns "$ns" curl -sfk https://127.0.0.1:10259/healthz
  # Pods need their namespace's default ServiceAccount (the controller
  # manager makes it).
  wait_for "the default ServiceAccount" 60 kctl -n default get serviceaccount default
}
