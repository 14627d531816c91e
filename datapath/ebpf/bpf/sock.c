// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Socket-level Service load balancing, as Cilium's bpf_sock.c does it: the
 * VIP is translated once, when the application connects (TCP, connected
 * UDP) or sends a datagram (unconnected UDP), so packets leave the socket
 * already addressed to an endpoint and no per-packet NAT or conntrack is
 * needed. For UDP, a reverse entry keyed by the socket cookie lets
 * recvmsg4 and getpeername4 show the VIP again, so the application sees
 * replies from the address it sent to.
 */
#include "lb.h"

struct rsk_key {
	__u64 cookie;  /* socket cookie */
	__be32 addr;   /* endpoint the socket was sent to */
	__be16 port;
	__u16 pad;
};

struct rsk_val {
	__be32 addr;   /* VIP */
	__be16 port;   /* Service port */
	__u16 pad;
};

/* Reverse translation for UDP sockets (Cilium's lb4_reverse_sk). LRU: a
 * closed socket's entries age out instead of filling the map. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct rsk_key);
	__type(value, struct rsk_val);
	__uint(max_entries, 65536);
} cnb_lb4_rsk SEC(".maps");

/* xlate_fwd rewrites ctx's destination when it is a Service VIP. It
 * returns 0 when the Service has no endpoint (the call then fails), 1
 * otherwise. */
static __always_inline int xlate_fwd(struct bpf_sock_addr *ctx, __u8 proto)
{
	__be32 vip = ctx->user_ip4;
	__be16 vport = (__be16)ctx->user_port;
	struct svc_val *svc;
	struct backend *be;

	svc = lb_lookup(vip, vport, proto);
	if (!svc)
		return 1;
	be = lb_pick(svc);
	if (!be)
		return 0;
	if (proto == IPPROTO_UDP) {
		struct rsk_key key = {
			.cookie = bpf_get_socket_cookie(ctx),
			.addr = be->addr,
			.port = be->port,
		};
		struct rsk_val val = {.addr = vip, .port = vport};

		bpf_map_update_elem(&cnb_lb4_rsk, &key, &val, BPF_ANY);
	}
	ctx->user_ip4 = be->addr;
	ctx->user_port = (__u32)be->port;
	return 1;
}

/* xlate_rev shows an endpoint's address as the VIP it was reached through. */
static __always_inline void xlate_rev(struct bpf_sock_addr *ctx)
{
	struct rsk_key key = {
		.cookie = bpf_get_socket_cookie(ctx),
		.addr = ctx->user_ip4,
		.port = (__be16)ctx->user_port,
	};
	struct rsk_val *val;

	val = bpf_map_lookup_elem(&cnb_lb4_rsk, &key);
	if (!val)
		return;
	ctx->user_ip4 = val->addr;
	ctx->user_port = (__u32)val->port;
}

static __always_inline __u8 sock_proto(const struct bpf_sock_addr *ctx)
{
	__u32 p = ctx->protocol;

	if (p == IPPROTO_TCP || p == IPPROTO_UDP)
		return p;
	return 0;
}

SEC("cgroup/connect4")
int cnb_sock4_conn(struct bpf_sock_addr *ctx)
{
	__u8 proto = sock_proto(ctx);

	if (!proto)
		return 1;
	return xlate_fwd(ctx, proto);
}

SEC("cgroup/sendmsg4")
int cnb_sock4_send(struct bpf_sock_addr *ctx)
{
	return xlate_fwd(ctx, IPPROTO_UDP);
}

SEC("cgroup/recvmsg4")
int cnb_sock4_recv(struct bpf_sock_addr *ctx)
{
	xlate_rev(ctx);
	return 1;
}

SEC("cgroup/getpeername4")
int cnb_sock4_peer(struct bpf_sock_addr *ctx)
{
	if (sock_proto(ctx) == IPPROTO_UDP)
		xlate_rev(ctx);
	return 1;
}
