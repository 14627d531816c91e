// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Per-packet Service DNAT on a pod's veth, as Cilium does when socket LB is
 * off: attached on the node side of each pod veth,
 *
 *   - ingress (packets from the pod): a packet to a Service VIP:port gets
 *     its destination rewritten to an endpoint, chosen at random for the
 *     flow's first packet and then kept in a BPF conntrack entry, and a
 *     reverse entry is written for the replies;
 *   - egress (packets to the pod): a packet matching a reverse entry (a
 *     reply from an endpoint) gets its source rewritten back to the VIP.
 *
 * Replies from an endpoint on the same node come out of that pod's veth and
 * are routed to the client's veth; replies from another node arrive on
 * eth0 and are routed to the client's veth too: either way the client's
 * egress hook sees them. Checksums are fixed incrementally with
 * bpf_l3_csum_replace / bpf_l4_csum_replace (BPF_F_PSEUDO_HDR for the
 * address, BPF_F_MARK_MANGLED_0 so a zero UDP checksum stays "none").
 */
#include "lb.h"

#define DIR_FWD 0  /* client -> VIP: value is the endpoint */
#define DIR_REV 1  /* endpoint -> client: value is the VIP */

struct ct_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 dir;
	__u16 pad;
};

struct ct_val {
	__be32 addr;
	__be16 port;
	__u16 pad;
	__u32 rev;  /* svc_val.rev when the entry was made (DIR_FWD) */
};

/* Conntrack (Cilium's cilium_ct4_global). LRU: entries of finished flows
 * are recycled first; a live flow refreshes its entry with every packet. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct ct_key);
	__type(value, struct ct_val);
	__uint(max_entries, 262144);
} cnb_ct4 SEC(".maps");

/* Offsets in the IPv4 header. */
#define IP_CSUM_OFF 10
#define IP_SADDR_OFF 12
#define IP_DADDR_OFF 16

struct flow {
	__be32 saddr, daddr;
	__be16 sport, dport;
	__u8 proto;
	__u32 l3off, l4off, csum_off;  /* csum_off: L4 checksum, from packet start */
};

/* parse fills f for an unfragmented IPv4 TCP or UDP packet; 0 if it is not one. */
static __always_inline int parse(struct __sk_buff *skb, struct flow *f)
{
	struct iphdr ip;
	__be16 proto;
	__be16 ports[2];
	__u32 ihl;

	if (bpf_skb_load_bytes(skb, 12, &proto, sizeof(proto)) < 0 ||
	    proto != bpf_htons(ETH_P_IP))
		return 0;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0)
		return 0;
	if ((ip.ver_ihl >> 4) != 4)
		return 0;
	ihl = (ip.ver_ihl & 0xf) * 4;
	if (ihl < sizeof(ip))
		return 0;
	/* Fragments (offset or MF set) carry no, or not only, ports. */
	if (ip.frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return 0;
	f->proto = ip.protocol;
	if (f->proto == IPPROTO_TCP)
		f->csum_off = 16;
	else if (f->proto == IPPROTO_UDP)
		f->csum_off = 6;
	else
		return 0;
	f->saddr = ip.saddr;
	f->daddr = ip.daddr;
	f->l3off = ETH_HLEN;
	f->l4off = ETH_HLEN + ihl;
	f->csum_off += f->l4off;
	if (bpf_skb_load_bytes(skb, f->l4off, ports, sizeof(ports)) < 0)
		return 0;
	f->sport = ports[0];
	f->dport = ports[1];
	return 1;
}

/* rewrite replaces one address (at IP offset addr_off) and one port (at L4
 * offset port_off) and fixes the IP and L4 checksums. 0 on success. */
static __always_inline int rewrite(struct __sk_buff *skb, const struct flow *f,
				   __u32 addr_off, __be32 old_addr, __be32 new_addr,
				   __u32 port_off, __be16 old_port, __be16 new_port)
{
	__u64 mangled = f->proto == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;

	if (old_addr != new_addr) {
		if (bpf_l4_csum_replace(skb, f->csum_off, old_addr, new_addr,
					BPF_F_PSEUDO_HDR | mangled | sizeof(new_addr)) < 0)
			return -1;
		if (bpf_l3_csum_replace(skb, f->l3off + IP_CSUM_OFF, old_addr, new_addr,
					sizeof(new_addr)) < 0)
			return -1;
		if (bpf_skb_store_bytes(skb, f->l3off + addr_off, &new_addr, sizeof(new_addr), 0) < 0)
			return -1;
	}
	if (old_port != new_port) {
		if (bpf_l4_csum_replace(skb, f->csum_off, old_port, new_port,
					mangled | sizeof(new_port)) < 0)
			return -1;
		if (bpf_skb_store_bytes(skb, f->l4off + port_off, &new_port, sizeof(new_port), 0) < 0)
			return -1;
	}
	return 0;
}

SEC("tc")
int cnb_tc_from_pod(struct __sk_buff *skb)
{
	struct ct_key fkey = {}, rkey = {};
	struct ct_val fval = {}, rval = {}, *ct;
	struct svc_val *svc;
	struct backend *be;
	struct flow f = {};
	int fresh = 1;

	if (!parse(skb, &f))
		return TC_ACT_UNSPEC;
	svc = lb_lookup(f.daddr, f.dport, f.proto);
	if (!svc)
		return TC_ACT_UNSPEC;

	fkey.saddr = f.saddr;
	fkey.daddr = f.daddr;
	fkey.sport = f.sport;
	fkey.dport = f.dport;
	fkey.proto = f.proto;
	fkey.dir = DIR_FWD;
	ct = bpf_map_lookup_elem(&cnb_ct4, &fkey);
	if (ct && ct->rev == svc->rev) {
		fval = *ct;
		fresh = 0;
	} else {
		/* New flow, or the Service's endpoints changed since. */
		be = lb_pick(svc);
		if (!be)
			return TC_ACT_SHOT;  /* no endpoint: drop, as kube-proxy rejects */
		fval.addr = be->addr;
		fval.port = be->port;
		fval.rev = svc->rev;
		bpf_map_update_elem(&cnb_ct4, &fkey, &fval, BPF_ANY);
	}
	rkey.saddr = fval.addr;
	rkey.daddr = f.saddr;
	rkey.sport = fval.port;
	rkey.dport = f.sport;
	rkey.proto = f.proto;
	rkey.dir = DIR_REV;
	/* The reverse entry is written with the forward one, and again if the
	 * LRU recycled it while the flow was quiet in that direction. */
	if (fresh || !bpf_map_lookup_elem(&cnb_ct4, &rkey)) {
		rval.addr = f.daddr;
		rval.port = f.dport;
		bpf_map_update_elem(&cnb_ct4, &rkey, &rval, BPF_ANY);
	}

	if (rewrite(skb, &f, IP_DADDR_OFF, f.daddr, fval.addr, 2, f.dport, fval.port) < 0)
		return TC_ACT_SHOT;
	return TC_ACT_UNSPEC;
}

SEC("tc")
int cnb_tc_to_pod(struct __sk_buff *skb)
{
	struct ct_key rkey = {};
	struct ct_val *rev;
	struct flow f = {};

	if (!parse(skb, &f))
		return TC_ACT_UNSPEC;
	rkey.saddr = f.saddr;
	rkey.daddr = f.daddr;
	rkey.sport = f.sport;
	rkey.dport = f.dport;
	rkey.proto = f.proto;
	rkey.dir = DIR_REV;
	rev = bpf_map_lookup_elem(&cnb_ct4, &rkey);
	if (!rev)
		return TC_ACT_UNSPEC;
	if (rewrite(skb, &f, IP_SADDR_OFF, f.saddr, rev->addr, 0, f.sport, rev->port) < 0)
		return TC_ACT_SHOT;
	return TC_ACT_UNSPEC;
}
