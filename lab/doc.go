// Package lab builds and tears down a "local lab": a multi-node
// Kubernetes-like network made of Linux network namespaces on one machine.
//
// Topology (routed veth model of Cilium/Calico, addresses from the RFC 2544
// benchmarking range 198.18.0.0/15):
//
//   - namespace cnb-<name>-underlay holds bridge cnbbr0 (the "VPC");
//   - node i (cnb-<name>-node<i>) has eth0 = 198.18.0.(10+i)/24 on a veth
//     whose other end, cnbn<i>, is a port of the bridge;
//   - pod j of node i (cnb-<name>-node<i>-pod<j>) has eth0 = 198.19.i.(10+j)/32
//     with routes "169.254.1.1 dev eth0 scope link" and
//     "198.18.0.0/15 via 169.254.1.1"; the node end of its veth, cnbp<j>, has
//     proxy_arp=1 and the node has a /32 route to the pod;
//   - routing "native" (default): node i routes 198.19.j.0/24 via
//     198.18.0.(10+j) on eth0; every MTU is 1500;
//   - routing "vxlan" (overlay, like Flannel's vxlan backend and Cilium's
//     tunnel mode): see below.
//
// VXLAN overlay. Each node has a VXLAN device cnb_vxlan: VNI 1 (Flannel's
// default; Cilium puts the source security identity in the VNI, which a lab
// has no use for), UDP destination port 8472 (the Linux default, used by
// Flannel and Cilium; IANA's 4789 would behave the same), local address =
// the node IP, lower device eth0, no multicast group, learning off. Its MAC
// is fixed, 02:cb:00:00:00:<i>, and its address, the VTEP IP, is
// 198.19.i.0/32, the first address of the node's pod CIDR (as Flannel gives
// flannel.1 the .0 of the node's subnet; Cilium gives cilium_host an address
// of the pod CIDR too). For every peer j, node i has
//
//	198.19.j.0/24 via 198.19.j.0 dev cnb_vxlan onlink src 198.19.i.0
//	neigh 198.19.j.0 lladdr 02:cb:00:00:00:<j> dev cnb_vxlan PERMANENT
//	fdb 02:cb:00:00:00:<j> dev cnb_vxlan dst 198.18.0.(10+j) self permanent
//
// exactly Flannel's scheme: routes need no ARP across the overlay, and each
// frame goes to exactly one peer. There are no all-zeros (BUM) FDB entries:
// nothing needs broadcast or multicast, and without them a frame for an
// unknown MAC is dropped instead of being replicated to every peer (the
// tests check that a third node's cnb_vxlan sees none of a pair's traffic).
//
// What is tunnelled: traffic to another node's pod CIDR, i.e. pod to remote
// pod (source IP preserved) and node to remote pod (source = the node's VTEP
// IP, as with Flannel and Cilium, so the replies come back through the
// tunnel too). Traffic to a node IP is not: node to node stays on the
// underlay (as with Cilium, host traffic is not tunnelled), and so does pod
// to remote node, whose replies come back through the tunnel.
//
// MTU in vxlan mode: eth0 and the underlay stay at 1500; cnb_vxlan and both
// ends of every pod veth are 1450 (1500 minus 50 bytes of outer IPv4, UDP,
// VXLAN and Ethernet headers), so pods never send packets that would need
// fragmenting; Lab.MTU records the pod MTU.
//
// Nothing has a default route, and nothing is ever created in, or moved
// through, the host's root network namespace.
//
// Names: every namespace is mounted at /run/netns/cnb-<name>-<ns> (netnsx
// makes /run/netns a shared mount first, as iproute2 does) and its lo has
// the alias cnb-<name>-<ns>, so Down still finds processes in a namespace
// whose mount a neighbour removed. A process's temporary directory
// (Lab.TempDir, an agent's TMPDIR) is <temp root>/cnb-<name>-<ns>-<random>,
// <ns> a node or pod. Down and Leftovers find every object by its prefix
// alone, with or without the state file.
package lab
