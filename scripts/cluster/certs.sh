#!/usr/bin/env bash
# Writes the test cluster's PKI and kubeconfigs into $VAR_DIR/pki with
# openssl (P-256 keys: quick to make): a CA, the API server's serving cert,
# client certs (admin, kubelets as system:node:<name> in system:nodes,
# controller-manager, scheduler, kube-proxy, the API server's kubelet
# client) and the service account key pair. `certs.sh user NAME` adds a client cert and kubeconfig
# for a user with no groups (the least-privilege tests).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
PKI=$VAR_DIR/pki

# client NAME CN [O]: a client cert signed by the CA.
client() {
  local name=$1 cn=$2 org=${3:-} subj
  subj="/CN=$cn"; [ -z "$org" ] || subj="/O=$org/CN=$cn"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n' >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 2 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

# kubeconfig NAME: $PKI/NAME.kubeconfig for the client cert NAME.
kubeconfig() {
  local name=$1
  cat >"$PKI/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: cnbk
  cluster:
    server: https://$API_IP:$API_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $name
  user:
    client-certificate: $PKI/$name.crt
    client-key: $PKI/$name.key
contexts:
- name: cnbk-$name
  context: {cluster: cnbk, user: $name}
current-context: cnbk-$name
EOF
}

if [ "${1:-}" = user ]; then
  client "$2" "$2"
  kubeconfig "$2"
  echo "$PKI/$2.kubeconfig"
  exit 0
fi

mkdir -p "$PKI"
chmod 700 "$PKI"
openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$PKI/ca.key" -subj "/CN=cnbk-ca" \
  -days 2 -out "$PKI/ca.crt" 2>/dev/null

san="DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
san+=",DNS:${NODES[0]},DNS:localhost,IP:$API_IP,IP:127.0.0.1,IP:$API_SERVICE_IP"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$PKI/apiserver.key" -subj "/CN=kube-apiserver" \
  -out "$PKI/apiserver.csr" 2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n' "$san" >"$PKI/apiserver.ext"
openssl x509 -req -in "$PKI/apiserver.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
  -days 2 -extfile "$PKI/apiserver.ext" -out "$PKI/apiserver.crt" 2>/dev/null
rm -f "$PKI/apiserver.csr" "$PKI/apiserver.ext"

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/sa.key" 2>/dev/null
openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null

client admin cnbk-admin system:masters
client apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
client controller-manager system:kube-controller-manager
client scheduler system:kube-scheduler
client kube-proxy system:kube-proxy
for n in "${NODES[@]}"; do client "$n" "system:node:$n" system:nodes; done
for k in admin controller-manager scheduler kube-proxy "${NODES[@]}"; do kubeconfig "$k"; done
# kube-proxy's pods read its key through a hostPath as root only.
chmod 600 "$PKI"/*.key
