package kinds

// OpenLoop is what a paced (open-loop, QPS > 0) load client's result says
// of its target; the load kinds' results embed it and leave it zero in a
// closed loop. AchievedRatio is the achieved rate ÷ TargetQPS; MissedTarget
// is set when that is below the kind's MissedTargetRatio (0.98: the client,
// the server or the path could not keep up, or queries were lost), and
// MissedByPercent says by how much, 100 × (1 − AchievedRatio).
type OpenLoop struct {
	TargetQPS       float64 `json:"target_qps,omitempty"`
	AchievedRatio   float64 `json:"achieved_ratio,omitempty"`
	MissedTarget    bool    `json:"missed_target"`
	MissedByPercent float64 `json:"missed_by_percent,omitempty"`
}

// ClientCPU is the CPU a load client's process used during the measured
// interval (getrusage(RUSAGE_SELF): a server in the same process counts
// too), embedded by the load kinds' results.
type ClientCPU struct {
	ClientCPUUserSec float64 `json:"client_cpu_user_sec"`
	ClientCPUSysSec  float64 `json:"client_cpu_sys_sec"`
	// ClientCPUs is the number of CPUs the client could use: the CPUs in
	// its affinity mask (sched_getaffinity), capped at GOMAXPROCS.
	ClientCPUs int `json:"client_cpus"`
	// ClientCPUUtil is (user + sys) / (Seconds × ClientCPUs).
	ClientCPUUtil float64 `json:"client_cpu_util"`
	// ClientSaturated is ClientCPUUtil ≥ the kind's SaturatedUtil (0.90):
	// the client used (nearly) all the CPU it had, so the rate may be the
	// client's limit rather than the server's or the datapath's.
	ClientSaturated bool `json:"client_saturated"`
}

// Add adds a pair's client CPU to an aggregate of pairs (a kind's Merge):
// times and CPUs summed, the highest utilisation, saturated if any pair's
// client was.
func (c *ClientCPU) Add(o ClientCPU) {
	c.ClientCPUUserSec += o.ClientCPUUserSec
	c.ClientCPUSysSec += o.ClientCPUSysSec
	c.ClientCPUs += o.ClientCPUs
	c.ClientCPUUtil = max(c.ClientCPUUtil, o.ClientCPUUtil)
	c.ClientSaturated = c.ClientSaturated || o.ClientSaturated
}
