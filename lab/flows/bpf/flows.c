// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Flow events at the node side of pod veths, as Hubble's trace events with
 * Cilium's monitor aggregation "medium": an event per TCP packet carrying
 * SYN, FIN or RST, and per first UDP packet of a flow (a 5-tuple not seen
 * at this hook for UDP_IDLE_NS). Events go to a BPF ring buffer read by
 * flows/ebpf.go; a failed reserve (the ring is full) is counted in
 * cnb_flow_lost, never silent. The programs only observe: they return
 * TC_ACT_UNSPEC (tcx: NEXT) so whatever runs after them decides.
 */
#include "types.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define DIR_FROM_POD 0 /* veth ingress on the node side: sent by the pod */
#define DIR_TO_POD 1   /* veth egress: delivered to the pod */

#define VERDICT_FORWARDED 0 /* passed every program attached before ours */

/* A UDP 5-tuple idle this long is a new flow again (Cilium's CT default
 * for non-TCP is 60 s; 30 s keeps the map turning over under benchmarks
 * that reuse ports). Refreshed at most once a second per flow. */
#define UDP_IDLE_NS (30ULL * 1000000000ULL)
#define UDP_REFRESH_NS (1000000000ULL)

/* Wake the reader only once this much is waiting: a wakeup per event
 * (submit's default when the reader keeps up) raises an irq_work
 * self-IPI per packet, microseconds in a VM, and a reader context switch
 * per event. Between wakeups flows/ebpf.go drains the ring on a timer
 * (drainEvery), so an event waits at most that long. */
#define WAKEUP_BYTES (64 * 1024)

/* flows/event.go mirrors this layout (TestEventLayout checks it). */
struct flow_event {
	__u64 ts_ns;     /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u32 ifindex;
	__u8 proto;
	__u8 dir;        /* DIR_FROM_POD or DIR_TO_POD */
	__u8 tcp_flags;  /* TCP flags byte; 0 for UDP */
	__u8 verdict;
	__u32 pad;
};

/* Forces struct flow_event into the object's BTF for the layout test. */
const struct flow_event *unused_flow_event __attribute__((unused));

struct udp_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u32 ifindex;   /* per hook, as TCP's SYN is reported at each hook */
	__u8 dir;
	__u8 pad[3];
};

/* Size is a placeholder: Go sets it (Options.RingBytes). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} cnb_flow_events SEC(".maps");

/* Reserve failures (ring full), per CPU, summed by Go. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} cnb_flow_lost SEC(".maps");

/* UDP flows seen: last-seen time. LRU, so a full map forgets the oldest
 * flows (which then report again) instead of failing. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct udp_key);
	__type(value, __u64);
	__uint(max_entries, 65536);
} cnb_flow_udp SEC(".maps");

/* udp_new reports whether this UDP packet starts a flow at this hook. */
static __always_inline int udp_new(struct udp_key *k, __u64 now)
{
	__u64 *seen = bpf_map_lookup_elem(&cnb_flow_udp, k);
	if (seen && now - *seen < UDP_IDLE_NS) {
		if (now - *seen > UDP_REFRESH_NS)
			*seen = now;
		return 0;
	}
	bpf_map_update_elem(&cnb_flow_udp, k, &now, BPF_ANY);
	return 1;
}

static __always_inline int observe(struct __sk_buff *skb, __u8 dir)
{
	struct iphdr_min ip;
	__be16 ports[2]; /* source, destination */
	__u8 flags = 0;
	__u64 now;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_UNSPEC;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0)
		return TC_ACT_UNSPEC;
	if (ip.protocol != IPPROTO_TCP && ip.protocol != IPPROTO_UDP)
		return TC_ACT_UNSPEC;
	if (ip.frag_off & bpf_htons(IP_OFFSET))
		return TC_ACT_UNSPEC; /* a later fragment: no ports */
	__u32 l4off = ETH_HLEN + (ip.ver_ihl & 0x0f) * 4;
	/* Ports only: a UDP datagram can be shorter than a TCP header. */
	if (bpf_skb_load_bytes(skb, l4off, ports, sizeof(ports)) < 0)
		return TC_ACT_UNSPEC;

	now = bpf_ktime_get_ns();
	if (ip.protocol == IPPROTO_TCP) {
		if (bpf_skb_load_bytes(skb, l4off + 13, &flags, 1) < 0)
			return TC_ACT_UNSPEC;
		if (!(flags & (TCP_SYN | TCP_FIN | TCP_RST)))
			return TC_ACT_UNSPEC;
	} else {
		struct udp_key k = {
			.saddr = ip.saddr, .daddr = ip.daddr,
			.sport = ports[0], .dport = ports[1],
			.ifindex = skb->ifindex, .dir = dir,
		};
		if (!udp_new(&k, now))
			return TC_ACT_UNSPEC;
	}

	struct flow_event *e = bpf_ringbuf_reserve(&cnb_flow_events, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *lost = bpf_map_lookup_elem(&cnb_flow_lost, &zero);
		if (lost)
			*lost += 1; /* per-CPU slot: no atomics needed */
		return TC_ACT_UNSPEC;
	}
	e->ts_ns = now;
	e->saddr = ip.saddr;
	e->daddr = ip.daddr;
	e->sport = ports[0];
	e->dport = ports[1];
	e->ifindex = skb->ifindex;
	e->proto = ip.protocol;
	e->dir = dir;
	e->tcp_flags = flags;
	e->verdict = VERDICT_FORWARDED;
	e->pad = 0;
	if (bpf_ringbuf_query(&cnb_flow_events, BPF_RB_AVAIL_DATA) >= WAKEUP_BYTES)
		bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	else
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return TC_ACT_UNSPEC;
}

SEC("tc")
int cnb_flows_from_pod(struct __sk_buff *skb)
{
	return observe(skb, DIR_FROM_POD);
}

SEC("tc")
int cnb_flows_to_pod(struct __sk_buff *skb)
{
	return observe(skb, DIR_TO_POD);
}

char _license[] SEC("license") = "Dual BSD/GPL";
