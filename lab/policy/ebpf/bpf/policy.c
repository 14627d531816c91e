// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * L3/L4 NetworkPolicy at a pod's tc hook, as Cilium enforces it: the
 * peer's address is mapped to a security identity by longest-prefix match
 * in an ipcache, then (endpoint, direction, identity, protocol, port) is
 * looked up in a policy map, exact port first, then the wildcard-port
 * entry, then the wildcard-protocol entry.
 *
 * Attached on the node side of a pod's veth (its ifindex is the endpoint):
 *   - tc ingress of the host veth = packets from the pod (egress policy);
 *   - tc egress of the host veth = packets to the pod (ingress policy).
 *
 * Replies: a small LRU conntrack (Cilium has cilium_ct4_global) keyed by
 * endpoint and 5-tuple. Every flow an endpoint with policy sends or accepts
 * gets an entry (evaluated and allowed, or in an unselected direction), and
 * a packet matching an entry either way round passes without evaluation,
 * so the reply direction of an allowed flow passes. A denied flow is
 * dropped at its first packet (a TCP SYN), and counted.
 *
 * Go writes the ipcache, endpoint and policy maps (policy/ebpf/layout.go
 * mirrors the structs); the program reads them, writes only conntrack and
 * the per-CPU counters.
 */

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed int __s32;
typedef signed long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_LPM_TRIE = 11,
};

#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_ANY 0
#define BPF_NOEXIST 1

/* tc / tcx verdicts: UNSPEC (tcx: NEXT) hands the packet on unchanged. */
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_SHOT 2

/* The prefix of struct __sk_buff (include/uapi/linux/bpf.h, ABI) up to
 * ifindex, the only field read. */
struct __sk_buff {
	__u32 len, pkt_type, mark, queue_mapping, protocol, vlan_present, vlan_tci,
		vlan_proto, priority, ingress_ifindex, ifindex;
};

struct iphdr {
	__u8 ver_ihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__u16 check;
	__be32 saddr;
	__be32 daddr;
};

#define IP_MF 0x2000
#define IP_OFFSET 0x1fff
#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define DIR_INGRESS 0  /* to the pod: tc egress of the host veth */
#define DIR_EGRESS 1   /* from the pod: tc ingress of the host veth */

#define ID_WORLD 0     /* an address no ipcache prefix covers */

/* ipcache (Cilium's cilium_ipcache): peer prefix -> identity. */
struct ipcache_key {
	__u32 prefixlen;  /* LPM trie: bits that count, of addr */
	__be32 addr;
};

/* Endpoints with policy, by host-veth ifindex. flags: which directions are
 * selected (the others pass). */
#define EP_INGRESS (1 << DIR_INGRESS)
#define EP_EGRESS (1 << DIR_EGRESS)
struct ep_val {
	__u32 flags;
	__u32 identity;  /* the pod's own identity (information; not looked up) */
};

/* Policy map (Cilium's cilium_policy_<ep>, one map with the endpoint in the
 * key): proto 0 and dport 0 are the wildcards. */
struct policy_key {
	__u32 ep;        /* host-veth ifindex */
	__u32 identity;  /* peer identity */
	__be16 dport;    /* 0: any port */
	__u8 proto;      /* 0: any protocol (then dport is 0) */
	__u8 dir;        /* DIR_INGRESS or DIR_EGRESS */
};

struct policy_val {
	__u32 rule;  /* index of the first rule that allows it, for readers */
};

struct ct_key {
	__u32 ep;
	__be32 saddr, daddr;
	__be16 sport, dport;
	__u8 proto;
	__u8 pad[3];
};

/* Counters, per CPU: what Drops and Allowed read. */
#define CNT_ALLOW 0  /* new flows evaluated and allowed */
#define CNT_DROP 1   /* packets dropped by policy */
#define CNT_MAX 2

/* Sizes are placeholders: Go sets max_entries at load time. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__type(key, struct ipcache_key);
	__type(value, __u32);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} cnb_pol_ipc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct ep_val);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} cnb_pol_ep SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct policy_key);
	__type(value, struct policy_val);
	__uint(max_entries, 262144);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} cnb_pol_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct ct_key);
	__type(value, __u32);
	__uint(max_entries, 65536);
} cnb_pol_ct SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, CNT_MAX);
} cnb_pol_cnt SEC(".maps");

struct pkt {
	__be32 saddr, daddr;
	__be16 sport, dport;  /* 0 for protocols without ports and fragments */
	__u8 proto;
};

/* parse fills p for an IPv4 packet; 0 if it is not one (it then passes:
 * ARP and IPv6 are not policed, as the Spec is IPv4 only). */
static __always_inline int parse(struct __sk_buff *skb, struct pkt *p)
{
	struct iphdr ip;
	__be16 proto, ports[2];
	__u32 ihl;

	if (bpf_skb_load_bytes(skb, 12, &proto, sizeof(proto)) < 0 ||
	    proto != bpf_htons(ETH_P_IP))
		return 0;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0 ||
	    (ip.ver_ihl >> 4) != 4)
		return 0;
	ihl = (ip.ver_ihl & 0xf) * 4;
	if (ihl < sizeof(ip))
		return 0;
	p->saddr = ip.saddr;
	p->daddr = ip.daddr;
	p->proto = ip.protocol;
	if ((p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) &&
	    !(ip.frag_off & bpf_htons(IP_OFFSET))) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN + ihl, ports, sizeof(ports)) < 0)
			return 0;
		p->sport = ports[0];
		p->dport = ports[1];
	}
	return 1;
}

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&cnb_pol_cnt, &idx);

	if (c)
		*c += 1;
}

/* allowed looks the peer up in the ipcache, then the policy map: exact
 * port, any port of the protocol, any protocol. */
static __always_inline int allowed(__u32 ep, __u8 dir, __be32 peer, const struct pkt *p)
{
	struct ipcache_key ik = {.prefixlen = 32, .addr = peer};
	struct policy_key k = {.ep = ep, .dir = dir, .proto = p->proto, .dport = p->dport};
	__u32 *id = bpf_map_lookup_elem(&cnb_pol_ipc, &ik);

	k.identity = id ? *id : ID_WORLD;
	if (bpf_map_lookup_elem(&cnb_pol_map, &k))
		return 1;
	k.dport = 0;
	if (bpf_map_lookup_elem(&cnb_pol_map, &k))
		return 1;
	k.proto = 0;
	return bpf_map_lookup_elem(&cnb_pol_map, &k) != 0;
}

static __always_inline int enforce(struct __sk_buff *skb, __u8 dir)
{
	__u32 ep = skb->ifindex, one = 1;
	struct ct_key ct = {}, rev = {};
	struct ep_val *e;
	struct pkt p = {};

	if (!parse(skb, &p))
		return TC_ACT_UNSPEC;
	e = bpf_map_lookup_elem(&cnb_pol_ep, &ep);
	if (!e)
		return TC_ACT_UNSPEC;  /* no policy on this endpoint */

	ct.ep = ep;
	ct.saddr = p.saddr;
	ct.daddr = p.daddr;
	ct.sport = p.sport;
	ct.dport = p.dport;
	ct.proto = p.proto;
	if (bpf_map_lookup_elem(&cnb_pol_ct, &ct))
		return TC_ACT_UNSPEC;  /* a flow already seen this way round */
	rev.ep = ep;
	rev.saddr = p.daddr;
	rev.daddr = p.saddr;
	rev.sport = p.dport;
	rev.dport = p.sport;
	rev.proto = p.proto;
	if (bpf_map_lookup_elem(&cnb_pol_ct, &rev))
		return TC_ACT_UNSPEC;  /* a reply */

	if (e->flags & (1 << dir)) {
		if (!allowed(ep, dir, dir == DIR_INGRESS ? p.saddr : p.daddr, &p)) {
			count(CNT_DROP);
			return TC_ACT_SHOT;
		}
		count(CNT_ALLOW);
	}
	bpf_map_update_elem(&cnb_pol_ct, &ct, &one, BPF_ANY);
	return TC_ACT_UNSPEC;
}

SEC("tc")
int cnb_pol_from_pod(struct __sk_buff *skb)
{
	return enforce(skb, DIR_EGRESS);
}

SEC("tc")
int cnb_pol_to_pod(struct __sk_buff *skb)
{
	return enforce(skb, DIR_INGRESS);
}

char __license[] SEC("license") = "Dual BSD/GPL";
