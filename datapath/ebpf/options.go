package ebpf

import "fmt"

// Datapath names, as used on the command line.
const (
	NameSocket = "ebpf"    // socket-level LB (SocketLB)
	NameTC     = "ebpf-tc" // per-packet DNAT on pod veths (TCLB)
)

// Default map sizes: Cilium's defaults (--bpf-lb-map-max 65536 for the
// service and backend maps; its global TCP conntrack holds 524288, half of
// that is plenty for one node of a lab). The UDP reverse-NAT map of socket
// LB holds one entry per UDP socket and endpoint, far fewer.
const (
	DefaultLBMapMax       = 65536
	DefaultFlowMapMax     = 262144  // ebpf-tc conntrack
	DefaultSockFlowMapMax = 65536   // ebpf UDP reverse-NAT
	maxMapEntries         = 1 << 26 // a sanity bound for AutoSize and Options
)

// TC attach modes (Options.TCAttach).
const (
	AttachAuto    = "auto"    // tcx when the kernel has it (6.6+), else netlink
	AttachTCX     = "tcx"     // bpf_link on the tcx hook only
	AttachNetlink = "netlink" // clsact qdisc + cls_bpf filter (direct-action)
)

// Options configure a datapath. The zero value is valid (defaults).
type Options struct {
	// LBMapMax is the size of the service map and of the backend map
	// (endpoint slots); 0 = DefaultLBMapMax.
	LBMapMax int `json:"lb_map_max,omitempty"`
	// FlowMapMax is the size of the per-flow map: conntrack for ebpf-tc
	// (two entries per flow), UDP reverse translation for ebpf (one entry
	// per UDP socket and endpoint); 0 = DefaultFlowMapMax (ebpf-tc) or
	// DefaultSockFlowMapMax (ebpf). It is an LRU map:
	// finished flows are recycled first.
	FlowMapMax int `json:"flow_map_max,omitempty"`
	// ExpectedFlows is how many flows may be alive at once; Preflight
	// checks the flow map holds them. 0 = not checked.
	ExpectedFlows int `json:"expected_flows,omitempty"`
	// AutoSize lets Preflight and Program grow the maps to what a Spec
	// needs instead of refusing it.
	AutoSize bool `json:"auto_size,omitempty"`
	// Incremental makes Program write only the entries that changed since
	// the last Program; by default every entry is rewritten (a full sync).
	Incremental bool `json:"incremental,omitempty"`
	// PinDir, if set, is a directory where the maps and links are pinned so
	// the datapath outlives this process (a private bpffs is mounted there
	// if it is not on one; use a path under the lab's state directory). A
	// later constructor with the same PinDir takes the datapath over.
	PinDir string `json:"pin_dir,omitempty"`
	// TCAttach is how ebpf-tc attaches: AttachAuto (default), AttachTCX or
	// AttachNetlink. Unused by ebpf.
	TCAttach string `json:"tc_attach,omitempty"`
}

// withDefaults returns o with defaults filled in, or an error naming a bad field.
func (o Options) withDefaults() (Options, error) {
	if o.LBMapMax == 0 {
		o.LBMapMax = DefaultLBMapMax
	}
	if o.FlowMapMax == 0 {
		o.FlowMapMax = DefaultFlowMapMax
	}
	if o.TCAttach == "" {
		o.TCAttach = AttachAuto
	}
	switch {
	case o.LBMapMax < 1 || o.LBMapMax > maxMapEntries:
		return o, fmt.Errorf("ebpf options: lb_map_max must be 1..%d, got %d", maxMapEntries, o.LBMapMax)
	case o.FlowMapMax < 1 || o.FlowMapMax > maxMapEntries:
		return o, fmt.Errorf("ebpf options: flow_map_max must be 1..%d, got %d", maxMapEntries, o.FlowMapMax)
	case o.ExpectedFlows < 0:
		return o, fmt.Errorf("ebpf options: expected_flows must be >= 0, got %d", o.ExpectedFlows)
	case o.TCAttach != AttachAuto && o.TCAttach != AttachTCX && o.TCAttach != AttachNetlink:
		return o, fmt.Errorf("ebpf options: tc_attach must be %s, %s or %s, got %q", AttachAuto, AttachTCX, AttachNetlink, o.TCAttach)
	}
	return o, nil
}
