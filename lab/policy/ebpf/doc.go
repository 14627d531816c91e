// Package ebpf is the "ebpf" L3/L4 policy enforcer (package policy), the
// way Cilium enforces NetworkPolicy: a BPF program at each selected pod's
// tc hook maps the peer address to a security identity in an ipcache (an
// LPM trie, prefix -> identity) and looks (endpoint, direction, identity,
// protocol, port) up in a policy map, exact port first, then the
// wildcard-port entry, then the wildcard-protocol entry. It goes with the
// eBPF Service datapaths (ebpf, ebpf-tc).
//
// Identities (state.go): one per distinct prefix the node's policy uses,
// rule peers and the selected pods' /32s, numbered from 1<<24 like
// Cilium's node-local CIDR identities and kept across Programs. A rule is
// written for its peers' identities and those of every more specific
// prefix inside them, so the longest match of the ipcache never hides an
// allowed peer. An address no prefix covers is identity 0 (world).
//
// Maps (bpf/policy.c, mirrored in layout.go): cnb_pol_ipc (ipcache),
// cnb_pol_ep (host-veth ifindex -> which directions are selected),
// cnb_pol_map (policy), cnb_pol_ct (LRU conntrack) and cnb_pol_cnt
// (per-CPU allowed / dropped counters, read by Allowed and Drops). Sizes
// are fixed (IPCacheMax, PolicyMax, ...): 10,000 rules or 10,000 peers on
// each of many pods fit, and Program refuses a larger Spec with a
// CapacityError.
//
// Stateful: an endpoint with policy records every flow it lets through
// (evaluated and allowed, or in a direction without policy) in the LRU
// conntrack, keyed by endpoint and 5-tuple; a packet matching an entry
// either way round passes without a lookup. So replies of allowed flows
// pass, also for UDP, and a denied flow is dropped at its first packet (a
// TCP SYN) and counted. A policy change applies to new flows; established
// ones keep their entry until the LRU recycles it.
//
// Hooks: packets from the pod on tc ingress of the pod's host veth (in
// the node namespace), packets to the pod on its tc egress, with tcx
// (kernel 6.6+; appended after, resp. in front of, ebpf-tc's LB so the
// policy sees pod addresses, see attach.go) or clsact + cls_bpf on older
// kernels. Endpoints without policy in a direction pass. Nothing is
// pinned: the maps and programs belong to the process (Close, or its exit,
// removes the tcx links; Close also removes cls_bpf filters and the
// clsact qdiscs it added). Map names are fixed (cnb_pol_*; BPF object
// names allow neither the lab's "-" nor more than 15 characters).
//
// Use (root: CAP_BPF and CAP_NET_ADMIN):
//
//	v, _ := policy.ForDatapath("ebpf-tc") // import lab/policy/all
//	e, err := v.Open(policy.Site{Netns: "/run/netns/cnb-x-node0", Node: "node0"})
//	st, err := e.Program(ctx, spec)
//	got, err := e.Verify(ctx) // then got.Holds(e.Expected(spec))
//	drops, err := e.Drops(ctx)
//	e.Close()
//
// The C program is built by bpf2go into the committed policy_bpfel.o
// (gen.go; scripts/check-bpf.sh rebuilds and compares it).
package ebpf
