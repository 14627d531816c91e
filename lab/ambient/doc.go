// Package ambient puts Istio's ambient-mode data plane on a lab's pod
// traffic, with a real proxy: one HAProxy (Debian's) per node in the
// role of ztunnel, carrying every pod's TCP to other pods and Services to
// the destination node's proxy in mutual TLS, which delivers it to the
// destination pod.
//
// The path of a connection from pod A on node0 to pod B on node1:
//
//	A ──plain──▶ node0 nat PREROUTING DNAT ─▶ node0 proxy :15001 (outbound)
//	   node0 proxy ──mTLS to B's address:port──▶ node1 nat PREROUTING DNAT
//	   ─▶ node1 proxy :15008 (inbound, verifies node0's certificate)
//	   node1 proxy ──plain, from node1──▶ B
//
// Each proxy reads the original destination with SO_ORIGINAL_DST (its
// "server 0.0.0.0:0"), so the outbound proxy dials the address A dialled
// (a ClusterIP is then translated by the node's own Service datapath in
// nat OUTPUT) and the inbound one dials B's. Between the nodes the
// payload is TLS 1.3 with certificates of a CA made for the run; pod
// addresses and the destination port stay in the IP and TCP headers, as
// they do in clear under HBONE's outer header for the addresses (not the
// port, which HBONE carries inside its HTTP CONNECT). A pod's traffic to
// a pod of its own node passes the node's proxy once, without TLS.
//
// A waypoint (StartWaypoint), the L7 proxy Istio adds to a namespace when
// L7 policy is asked, is one more HAProxy, in HTTP mode with an
// l7proxy allow-list: the node proxies send it the pods' connections to
// the addresses it serves in mTLS, the original destination in a PROXY v2
// header (sent before the TLS handshake), and it answers 403 or forwards.
//
// Everything lives in the lab's node namespaces, never the root one: the
// processes, the nat rules (tagged with a comment carrying the lab's
// prefix), a route of the Service CIDR to lo (tagged proto 204) and the
// files under the state dir, named <prefix>amb-*; the proxies' cgroups
// are amb-<name> under the lab's.
package ambient
