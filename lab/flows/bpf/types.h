/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The UAPI types and constants flows.c uses, copied from
 * include/uapi/linux/{bpf,ip,tcp}.h (ABI: they never change), so building
 * needs neither kernel headers nor a vmlinux.h, only clang and libbpf-dev's
 * bpf_helpers.h.
 */
#ifndef CNB_FLOWS_TYPES_H
#define CNB_FLOWS_TYPES_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef signed short __s16;
typedef signed int __s32;
typedef signed long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u64 __be64;
typedef __u16 __sum16;
typedef __u32 __wsum;

enum bpf_map_type {
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
};

#define BPF_ANY 0

/* bpf_ringbuf_submit flags and bpf_ringbuf_query's question. */
#define BPF_RB_NO_WAKEUP (1ULL << 0)
#define BPF_RB_FORCE_WAKEUP (1ULL << 1)
#define BPF_RB_AVAIL_DATA 0

/* tc / tcx: UNSPEC (tcx: NEXT) hands the packet on unchanged to the next
 * program and the stack: we only observe. */
#define TC_ACT_UNSPEC (-1)

/* tc context: headers are read with bpf_skb_load_bytes; ifindex is the
 * only field we read (its offset is ABI). */
struct __sk_buff {
	__u32 len;
	__u32 pkt_type;
	__u32 mark;
	__u32 queue_mapping;
	__u32 protocol;
	__u32 vlan_present;
	__u32 vlan_tci;
	__u32 vlan_proto;
	__u32 priority;
	__u32 ingress_ifindex;
	__u32 ifindex;
};

struct iphdr_min {
	__u8 ver_ihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__sum16 check;
	__be32 saddr;
	__be32 daddr;
};

#define IP_MF 0x2000
#define IP_OFFSET 0x1fff
#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17

/* TCP flags byte (offset 13 of the TCP header). */
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10

#endif
