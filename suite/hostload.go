package suite

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/procstat"
	"github.com/cnibench/cnibench/results"
)

// CPUPinner is a target on this machine whose client and server agents
// run on known CPUs (the lab): the runner then records what those CPUs
// spent during each sample (results.PinnedCPU). nil slices mean the agents
// were not pinned.
type CPUPinner interface {
	PinnedCPUs() (client, server []int)
}

// hostLoad is the machine's load between two /proc/stat readings around
// sample s, with the share of it that was the benchmark's own.
func hostLoad(before, after procstat.Stat, s results.Sample) *results.HostLoad {
	h := &results.HostLoad{}
	d := after.All.Sub(before.All)
	if total := d.Total() + d.Steal; total > 0 {
		h.StealPct = 100 * d.Steal / total
	}
	if wall := s.End.Sub(s.Start).Seconds(); wall > 0 {
		h.BusyCores = d.Busy() / wall
		own := s.ClientCPUSec + s.ServerCPUSec
		if s.DatapathUsage != nil {
			own += s.DatapathUsage.CPUSec
		}
		h.OwnCores = own / wall
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			h.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return h
}

// pinnedCPU is what the agents' CPUs spent between two readings: the
// union of the client's and server's, every CPU when either is unpinned.
func pinnedCPU(p CPUPinner, before, after procstat.Stat) *results.PinnedCPU {
	cpus := agentCPUs(p)
	d := after.Sum(cpus).Sub(before.Sum(cpus))
	pc := &results.PinnedCPU{CPUs: "all", BusySec: d.Busy(), SoftirqSec: d.IRQ + d.SoftIRQ, SystemSec: d.System, UserSec: d.User + d.Nice}
	if cpus != nil {
		pc.CPUs = cpuNames(cpus)
	}
	return pc
}

// agentCPUs is the union of the CPUs the client and server agents are
// pinned to, sorted; nil when either is unpinned (every CPU is theirs).
func agentCPUs(p CPUPinner) []int {
	client, server := p.PinnedCPUs()
	if len(client) == 0 || len(server) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(client), server...))))
}

// cpuNames is a CPU list as results write it: "0,1".
func cpuNames(cpus []int) string {
	var names []string
	for _, c := range cpus {
		names = append(names, strconv.Itoa(c))
	}
	return strings.Join(names, ",")
}
