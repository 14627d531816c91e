// Package flows is flow observability for the lab (issue 16 point 4):
// per-flow events taken from a node's datapath and read by a consumer in
// the node's namespace, so a scenario can be run with observability on
// (a Recorder per node) and off (none), the toggle verified by counting
// events, and the event rate reported beside the overhead.
//
// Two mechanisms, one per datapath family, with the same event semantics
// (Event: time, 5-tuple, ifindex, direction, TCP flags, verdict):
//
// EBPF, as Hubble. Two tc programs (bpf/flows.c) on the node side of each
// pod veth: ingress sees what the pod sends, egress what it receives. An
// event is emitted into a BPF ring buffer for every TCP packet with SYN,
// FIN or RST, which is what Cilium's monitor aggregation "medium" (its
// default) still reports, and for the first packet of a UDP flow: UDP has
// no flags, so a small LRU map of 5-tuples seen at each hook (65,536
// entries, idle timeout 30 s, refreshed at most once a second so a busy
// flow costs a lookup, not a write per packet) stands in for Cilium's
// conntrack "new" state. Hence a TCP flow gives at least one event per
// hook it crosses (SYN, SYN-ACK, FINs) and a UDP flow one per direction
// per hook. The ring buffer, not a perf buffer, because it is shared by
// all CPUs (one reader, ordered events, memory not multiplied by CPUs) and
// because a full ring is visible: bpf_ringbuf_reserve fails and the
// program counts the loss in a per-CPU array, which Counts.Lost reports.
// The programs attach with tcx at the tail of each hook's chain (cls_bpf
// at priority 0xfff0 on kernels without tcx), after datapath/ebpf's
// Service programs and lab/policy/ebpf's enforcers, and return TCX_NEXT: they
// never change a verdict, and they see only what those let through.
// Nothing is pinned: the Recorder's process owns the programs and maps
// and Close (or the process's exit) frees them.
//
// NFLOG, for netfilter datapaths, as Calico's flow logs and Kubernetes
// NetworkPolicy loggers do: an nft table of ours (<prefix>flows) with a
// base chain on the node's forward hook, after the filter chains, that
// logs to an NFLOG group (a) a flow's first packet ("ct state new": TCP
// SYN, UDP first datagram) and (b) TCP packets with FIN or RST; a
// NETLINK_NETFILTER socket bound to the group in the node's namespace
// reads them. Every pod flow crosses the node's forward hook, so one chain
// covers all veths. NFLOG rather than conntrack events: conntrack events
// need conntrack in the node namespace, which an eBPF-only node need not
// have, and they report NEW and DESTROY of the kernel's table rather than
// packets of the datapath; a log rule is the netfilter analogue of the tc
// program (it runs in the packet path and costs per packet) and its
// events match eBPF's kinds (a SYN-ACK is the only one it does not log).
// Losses are exact: the group numbers its messages (NFULNL_CFG_F_SEQ) and
// a gap is a message the socket could not take.
//
// Both deliver in batches, as a monitor must at tens of thousands of
// events a second: flows.c wakes the reader only when 64 KiB are waiting
// and the reader drains the ring every 20 ms anyway; the NFLOG group
// sends up to 128 messages per datagram, at least every 20 ms. Per-event
// wakeups cost, at TCP_CRR's ~4,000 connections/s here, ~7 us per
// program run (the submit's irq_work self-IPI, in a VM) and 21% / 65% of
// a core for the consumers; batched, ~400 ns and 1-7%
// (TestMeasureRate). So Counts lags the datapath by up to 20 ms.
//
// Both mechanisms observe after the datapath's own filtering, so every
// event's verdict is Forwarded (a dropped packet never reaches them);
// drop events would need the enforcers' cooperation and are not here.
//
// The lead's usage: Open(site, EBPF or NFLOG, ifaces, Options{}) per node
// when a scenario has flows on, Installed() as the "on" check, Counts()
// before and after the measurement window (RatePerSec), Sample(n) for the
// report, Close() when done, Leftovers() as the "off" check.
package flows
