// Package ebpf implements the eBPF Service datapaths of cnibench, the two
// ways Cilium load-balances ClusterIP Services:
//
//   - "ebpf" (SocketLB): socket-level load balancing. cgroup/connect4
//     (TCP, connected UDP) and cgroup/sendmsg4 (unconnected UDP) rewrite a
//     Service VIP:port to an endpoint before any packet exists;
//     cgroup/recvmsg4 and getpeername4 show the VIP again to UDP sockets.
//     Attached to one cgroup v2 directory, e.g. a lab's cnb-<lab>, so every
//     process below it is covered.
//   - "ebpf-tc" (TCLB): per-packet DNAT with a BPF conntrack on the node
//     side of the pods' veths (tcx, or clsact + cls_bpf via netlink on
//     kernels before 6.6), as Cilium does when socket LB is off.
//
// Both read the same two maps, which Program fills from a datapath.Spec in
// batches: cnb_lb4_svc, (VIP, port, protocol) -> (endpoint count, first
// backend slot, revision), and cnb_lb4_be, slot -> endpoint, in the spirit
// of Cilium's lb4_services_v2 and lb4_backends_v3. Endpoints are chosen
// with bpf_get_prandom_u32, as Cilium's socket LB does.
//
// Capacity is explicit: maps have fixed sizes (Options), Preflight says
// when a Spec does not fit, and Program refuses it rather than overflowing
// silently, unless Options.AutoSize lets it grow the maps (new maps are
// filled, then the attached programs are swapped atomically).
//
// Lifetime: by default everything belongs to the process (Close, or exit,
// detaches every program and frees every map). With Options.PinDir the
// maps and links are pinned in a private bpffs there, Release leaves the
// datapath running for a later process to take over (same PinDir), and
// Close or RemovePinned removes it. Typical use in a lab:
//
//	d, err := ebpf.NewSocketLB(l.CgroupRoot, ebpf.Options{AutoSize: true, PinDir: stateDir + "/bpf"})
//	// or ebpf.NewTCLB("/run/netns/cnb-x-node0", nil, opts): every cnbp* veth
//	err = d.Preflight(largestSpec)     // CapacityError, or grown maps
//	st, err := d.Program(ctx, spec)    // st.Generate (ours) + st.Apply (kernel)
//	counts, err := d.Verify(ctx)       // compare with d.Expected(spec)
//	mem, err := d.Memory(ctx)
//	d.Release() // keep it for `run`; d.Close() tears it down
//
// The C programs are in bpf/, compiled by bpf2go into the committed
// *_bpfel.o files (see gen.go and scripts/check-bpf.sh).
package ebpf

import "github.com/cnibench/cnibench/datapath"

// Both datapaths implement the shared interface.
var (
	_ datapath.Datapath = (*SocketLB)(nil)
	_ datapath.Datapath = (*TCLB)(nil)
)
