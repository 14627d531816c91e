// Package l7proxy puts a real HTTP proxy (HAProxy from Debian) on the path
// of a lab's HTTP traffic, transparently, to measure what L7 policy costs.
// Three models, as the meshes do it:
//
//   - PerNode (Cilium's, for an ingress L7 policy): one proxy in each
//     server node's namespace; a nat PREROUTING rule there sends TCP
//     towards the selected server pods' HTTP port to it. One proxy on the
//     path.
//   - PerNodeEgress (Cilium's, for an egress L7 policy): one proxy in the
//     client's node; nat PREROUTING rules there send the client pod's TCP
//     towards the Services and server pods to it. One proxy on the path,
//     on the client's node.
//   - Sidecar (Istio's): one proxy in the client pod (nat OUTPUT REDIRECT
//     of outgoing HTTP; the proxy's own traffic is excluded by its uid,
//     1337 as Istio's) and one in each server pod (nat PREROUTING REDIRECT
//     of incoming HTTP). Two proxies on the path.
//
// Either way the proxy forwards to the original destination (HAProxy's
// "server 0.0.0.0:0" reads it with SO_ORIGINAL_DST from conntrack), keeps
// connections alive on both sides and pools upstream connections across
// downstream ones ("http-reuse always"), as Envoy does. The policy is an
// allow-list of method + path rules enforced by the per-node proxy, or by
// the server sidecar (like Istio's AuthorizationPolicy); anything else
// gets 403 from the proxy. Every proxy adds a response header naming
// itself (HeaderProxy), so a client can tell a response went through it.
//
// Everything lives in the lab's namespaces, never the root one: the
// processes, the nat rules (each tagged with a comment carrying the lab
// prefix) and the files under the state dir, named <prefix>l7-*.
package l7proxy
