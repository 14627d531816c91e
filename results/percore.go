package results

import "github.com/cnibench/cnibench/engine/kinds"

// PerCore is a sample's work per core-second of the lab's nodes: queries
// (transactions, requests, DNS answers) or GB per second of a core kept
// busy. The Istio report divided by the proxies' and apps' CPU alone; the
// kernel's cores, where a datapath does most of its work, were not
// counted. Here both are: PerCore counts every busy tick of the nodes'
// CPUs (the kernel's too), PerUserCore only the user ticks, and KernelPct
// says how far apart the two are and why.
type PerCore struct {
	PerCore     float64 `json:"per_core"`      // work ÷ busy core-seconds
	PerUserCore float64 `json:"per_user_core"` // work ÷ user core-seconds (the kernel's share left out); 0 with no user time
	KernelPct   float64 `json:"kernel_pct"`    // (system + softirq + irq) ÷ busy, %
}

// WorkPerCore is rd's work per core-second of the nodes' CPUs in n. The
// CPU spans the whole sample (connecting, warm-up) and the work only the
// measured interval, so both are taken as rates, assuming steady load as
// the per-unit CPU metrics do: (work ÷ measured s) ÷ (busy s ÷ window s).
// ok is false without work, CPU or a window.
func WorkPerCore(rd kinds.Reading, n *NodesCPU) (PerCore, bool) {
	if n == nil || n.Seconds <= 0 || rd.Seconds <= 0 || rd.Work <= 0 {
		return PerCore{}, false
	}
	t := n.CPUTotal()
	busy := t.BusySec()
	if busy <= 0 {
		return PerCore{}, false
	}
	rate := rd.Work / rd.Seconds
	pc := PerCore{PerCore: rate / (busy / n.Seconds), KernelPct: 100 * t.KernelSec() / busy}
	if t.UserSec > 0 {
		pc.PerUserCore = rate / (t.UserSec / n.Seconds)
	}
	return pc, true
}

// Cores is how many cores an entry kept busy on average over the window.
func (n *NodesCPU) Cores(e NodeCPU) float64 {
	if n == nil || n.Seconds <= 0 {
		return 0
	}
	return e.BusySec() / n.Seconds
}
