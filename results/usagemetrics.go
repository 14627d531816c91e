package results

import "github.com/cnibench/cnibench/engine/kinds"

// Datapath metrics: what the datapath components (Sample.DatapathUsage)
// spent on the work a sample did, next to the client's and server's own
// CPU per unit of work.
const (
	MetricDatapathCPUOp    = kinds.MetricDatapathCPUOp
	MetricDatapathCPUReq   = kinds.MetricDatapathCPUReq
	MetricDatapathCPUQuery = kinds.MetricDatapathCPUQuery
	MetricDatapathCPUGB    = kinds.MetricDatapathCPUGB
	MetricDatapathCores    = "datapath cores"
	MetricDatapathMemory   = "datapath memory"
	// MetricFlowEvents and MetricFlowEventsLost: the flow observability's
	// event rate during a sample, and its losses (lab flows scenarios).
	MetricFlowEvents     = "flow events"
	MetricFlowEventsLost = "flow events lost"
)

// datapathMetricOrder is where reports list them: after the endpoints' CPU.
var datapathMetricOrder = []string{
	MetricDatapathCPUGB, MetricDatapathCPUOp, MetricDatapathCPUReq, MetricDatapathCPUQuery,
	MetricDatapathCores, MetricDatapathMemory, MetricFlowEvents, MetricFlowEventsLost,
}

// DatapathCPUMetric names the datapath CPU-per-unit metric of a kind and
// its unit ("" for an unknown kind).
func DatapathCPUMetric(kind string) (name, unit string) {
	k, _ := kinds.Lookup(kind)
	return k.PerWork.Datapath, k.PerWork.Unit
}

// collectDatapath adds a successful sample's datapath metrics, if it has
// usage: CPU per unit of work (the usage spans the whole sample, warmup
// too, so it is scaled to the measured interval assuming steady load, as
// the endpoints' CPU is), average cores and memory in MiB.
func collectDatapath(c *collector, pw kinds.PerWork, s Sample, rd kinds.Reading) {
	u := s.DatapathUsage
	if u == nil || u.Seconds <= 0 {
		return
	}
	if u.Flows || u.FlowEvents > 0 || u.FlowEventsLost > 0 {
		c.add(MetricFlowEvents, "events/s", Info, false, s.Round, float64(u.FlowEvents)/u.Seconds)
		c.add(MetricFlowEventsLost, "events", Info, false, s.Round, float64(u.FlowEventsLost))
	}
	if len(u.Components) == 0 {
		return // flow events only: no datapath process to account
	}
	if pw.Datapath != "" && rd.Seconds > 0 && rd.Work > 0 {
		share := min(rd.Seconds/u.Seconds, 1)
		c.add(pw.Datapath, pw.Unit, LowerIsBetter, false, s.Round, u.CPUSec*share*rd.Scale/rd.Work)
	}
	c.add(MetricDatapathCores, "cores", Info, false, s.Round, u.Cores)
	if u.MemoryBytes > 0 { // not read (the lab's proxies): no row of zeros
		c.add(MetricDatapathMemory, "MiB", Info, false, s.Round, float64(u.MemoryBytes)/(1<<20))
	}
}
