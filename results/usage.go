package results

import "sort"

// Sources of a sample's DatapathUsage.
const (
	// UsageSourceMetrics: the metrics API (metrics-server). Its CPU is a
	// rate over a window of ~15 s or more, so a sample's CPU is the mean of
	// the rates read at its start and end times its length: approximate.
	UsageSourceMetrics = "metrics"
	// UsageSourceKubelet: the kubelet's summary API, cumulative CPU
	// counters, so a sample's CPU is an exact difference.
	UsageSourceKubelet = "kubelet"
	// UsageSourceLab: the lab's own datapath components, read exactly
	// (the L7 proxies' cgroup CPU counters) and the flow events of a
	// flows scenario.
	UsageSourceLab = "lab"
)

// DatapathUsage is what the cluster's datapath components (the CNI agent,
// kube-proxy, ...) used on the run's nodes during one sample: the CPU the
// benchmark's traffic costs the datapath, which the client's and server's
// own CPU does not show.
type DatapathUsage struct {
	Source string `json:"source"` // UsageSourceMetrics or UsageSourceKubelet
	// Seconds between the two reads: the whole sample, warmup included.
	Seconds float64 `json:"seconds"`
	// WindowSec is the longest metrics API window read (metrics source
	// only): rates averaged over it, not over the sample.
	WindowSec float64 `json:"window_sec,omitempty"`
	// Totals over every component and node: CPU seconds in the sample,
	// average cores (CPUSec / Seconds) and working set at the end.
	CPUSec      float64          `json:"cpu_sec"`
	Cores       float64          `json:"cores"`
	MemoryBytes uint64           `json:"memory_bytes"`
	Components  []ComponentUsage `json:"components"`
	// FlowEvents and FlowEventsLost: per-flow events the lab's flow
	// observability read during the sample, and those the kernel could not
	// hand over (ring buffer or socket full); zero without flows.
	FlowEvents     uint64 `json:"flow_events,omitempty"`
	FlowEventsLost uint64 `json:"flow_events_lost,omitempty"`
	// Flows is set when flow observability was on: a sample with no
	// events then still records its zero rate.
	Flows bool `json:"flows,omitempty"`
}

// ComponentUsage is one datapath DaemonSet's pod on one node, its
// containers summed.
type ComponentUsage struct {
	Plugin      string  `json:"plugin"` // cilium, kube-proxy, calico, ...
	Node        string  `json:"node"`
	Pod         string  `json:"pod"`
	CPUSec      float64 `json:"cpu_sec"`
	Cores       float64 `json:"cores"`
	MemoryBytes uint64  `json:"memory_bytes"` // working set at the end of the sample
}

// NewDatapathUsage fills in the per-component cores and the totals, and
// sorts the components by plugin, node and pod.
func NewDatapathUsage(source string, seconds float64, comps []ComponentUsage) *DatapathUsage {
	u := &DatapathUsage{Source: source, Components: comps}
	u.Total(seconds)
	return u
}

// Total sorts u's components and sums them over seconds (each one's
// cores, u's CPU, memory and cores): what NewDatapathUsage does to a
// usage whose components were added one by one.
func (u *DatapathUsage) Total(seconds float64) {
	u.Seconds, u.CPUSec, u.MemoryBytes, u.Cores = seconds, 0, 0, 0
	sort.Slice(u.Components, func(i, j int) bool {
		a, b := u.Components[i], u.Components[j]
		if a.Plugin != b.Plugin {
			return a.Plugin < b.Plugin
		}
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		return a.Pod < b.Pod
	})
	for i := range u.Components {
		c := &u.Components[i]
		if seconds > 0 {
			c.Cores = c.CPUSec / seconds
		}
		u.CPUSec += c.CPUSec
		u.MemoryBytes += c.MemoryBytes
	}
	if seconds > 0 {
		u.Cores = u.CPUSec / seconds
	}
}
