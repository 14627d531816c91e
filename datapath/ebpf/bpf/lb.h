/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Service tables shared by the socket-level (sock.c) and the per-packet
 * (tc.c) load balancers, in the spirit of Cilium's lb4_services_v2 and
 * lb4_backends_v3: a service map keyed by (VIP, port, protocol) giving the
 * number of endpoints and where their slots start in the backend map, and
 * a backend map from slot to endpoint address. Go writes both from
 * userspace (datapath/ebpf/layout.go mirrors these structs); the programs
 * only read them.
 */
#ifndef CNB_LB_H
#define CNB_LB_H

#include "types.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct svc_key {
	__be32 addr;  /* VIP */
	__be16 port;  /* Service port */
	__u8 proto;   /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 pad;
};

struct svc_val {
	__u32 base;   /* first backend slot */
	__u16 count;  /* endpoints, in slots base .. base+count-1 */
	__u16 pad;
	__u32 rev;    /* hash of the endpoint list: changes when it changes */
};

struct backend {
	__be32 addr;
	__be16 port;
	__u16 pad;
};

/* Sizes are placeholders: Go sets max_entries at load time (Options,
 * Preflight, AutoSize). Non-preallocated, so memory follows the entries. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct svc_key);
	__type(value, struct svc_val);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} cnb_lb4_svc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct backend);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} cnb_lb4_be SEC(".maps");

static __always_inline struct svc_val *lb_lookup(__be32 addr, __be16 port, __u8 proto)
{
	struct svc_key key = {.addr = addr, .port = port, .proto = proto};

	return bpf_map_lookup_elem(&cnb_lb4_svc, &key);
}

/* lb_pick chooses one endpoint of svc uniformly at random, as Cilium's
 * socket LB does (bpf_get_prandom_u32). NULL if the Service has none. */
static __always_inline struct backend *lb_pick(const struct svc_val *svc)
{
	__u32 slot;

	if (svc->count == 0)
		return NULL;
	slot = svc->base + bpf_get_prandom_u32() % svc->count;
	return bpf_map_lookup_elem(&cnb_lb4_be, &slot);
}

char __license[] SEC("license") = "Dual BSD/GPL";

#endif
