/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Minimal, vmlinux-free definitions for cnibench's BPF programs: only the
 * UAPI types, constants and context layouts our programs use, copied from
 * include/uapi/linux/bpf.h (the layouts are ABI and never change). Keeping
 * them here means building needs neither kernel headers nor a vmlinux.h,
 * only clang and libbpf-dev's bpf_helpers.h.
 */
#ifndef CNB_TYPES_H
#define CNB_TYPES_H

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
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_LRU_HASH = 9,
};

/* Map flags. */
#define BPF_F_NO_PREALLOC (1U << 0)

/* bpf_l3_csum_replace / bpf_l4_csum_replace flags. */
#define BPF_F_HDR_FIELD_MASK 0xfULL
#define BPF_F_PSEUDO_HDR (1ULL << 4)
#define BPF_F_MARK_MANGLED_0 (1ULL << 5)

/* bpf_map_update_elem flags. */
#define BPF_ANY 0

/* tc / tcx verdicts: UNSPEC (tcx: NEXT) lets the packet go on unchanged
 * through any later program and the stack. */
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_SHOT 2

/* Program context of cgroup/{connect,sendmsg,recvmsg,getpeername}4: the
 * prefix of struct bpf_sock_addr we read and write. */
struct bpf_sock_addr {
	__u32 user_family;
	__u32 user_ip4;    /* network byte order */
	__u32 user_ip6[4];
	__u32 user_port;   /* network byte order, in the low 16 bits */
	__u32 family;
	__u32 type;
	__u32 protocol;
};

/* Program context of tc: we read no field of it (headers are read with
 * bpf_skb_load_bytes), so an opaque declaration is enough. */
struct __sk_buff;

/* IPv4 header without options (include/uapi/linux/ip.h; the version/IHL
 * bitfield as one byte). */
struct iphdr {
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

#endif
