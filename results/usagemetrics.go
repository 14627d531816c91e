package results

// Datapath metrics: what the datapath components (Sample.DatapathUsage)
// spent on the work a sample did, next to the client's and server's own
// CPU per unit of work.
const (
	MetricDatapathCPUOp    = "datapath CPU per op"
	MetricDatapathCPUReq   = "datapath CPU per request"
	MetricDatapathCPUQuery = "datapath CPU per query"
	MetricDatapathCPUGB    = "datapath CPU per GB"
	MetricDatapathCores    = "datapath cores"
	MetricDatapathMemory   = "datapath memory"
)

// datapathMetricOrder is where reports list them: after the endpoints' CPU.
var datapathMetricOrder = []string{
	MetricDatapathCPUGB, MetricDatapathCPUOp, MetricDatapathCPUReq, MetricDatapathCPUQuery,
	MetricDatapathCores, MetricDatapathMemory,
}

// DatapathCPUMetric names the datapath CPU-per-unit metric of a kind and
// its unit ("" for an unknown kind).
func DatapathCPUMetric(kind string) (name, unit string) {
	switch kind {
	case KindStream:
		return MetricDatapathCPUGB, "s"
	case KindRR:
		return MetricDatapathCPUOp, "µs"
	case KindHTTP:
		return MetricDatapathCPUReq, "µs"
	case KindDNS:
		return MetricDatapathCPUQuery, "µs"
	}
	return "", ""
}

// collectDatapath adds a successful sample's datapath metrics, if it has
// usage: CPU per unit of work (the usage spans the whole sample, warmup
// too, so it is scaled to the measured interval assuming steady load, as
// the endpoints' CPU is), average cores and memory in MiB.
func collectDatapath(c *collector, kind string, s Sample) {
	u := s.DatapathUsage
	if u == nil || u.Seconds <= 0 {
		return
	}
	var seconds, units, scale float64
	switch kind {
	case KindStream:
		seconds, units, scale = s.Engine.Seconds, float64(s.Engine.BytesReceived)/1e9, 1
	case KindRR:
		seconds, units, scale = s.Engine.Seconds, float64(s.Engine.Transactions), 1e6
	case KindHTTP, KindDNS:
		ld, _ := asLoad(s)
		seconds, units, scale = ld.seconds, float64(ld.ops), 1e6
	}
	if name, unit := DatapathCPUMetric(kind); name != "" && seconds > 0 && units > 0 {
		share := min(seconds/u.Seconds, 1)
		c.add(name, unit, LowerIsBetter, false, s.Round, u.CPUSec*share*scale/units)
	}
	c.add(MetricDatapathCores, "cores", Info, false, s.Round, u.Cores)
	c.add(MetricDatapathMemory, "MiB", Info, false, s.Round, float64(u.MemoryBytes)/(1<<20))
}
