package labtarget

import (
	"context"
	"time"

	"github.com/cnibench/cnibench/l7proxy"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// UsageSourceL7Proxy marks a lab sample's datapath usage read from the L7
// proxies' cgroups: the CPU the proxies spent on the sample's traffic,
// beside the client's and server's own.
const UsageSourceL7Proxy = "l7proxy"

// l7Mark is the proxies' CPU at a sample's start.
type l7Mark struct {
	at  time.Time
	cpu l7proxy.Usage
}

// StartUsage implements suite.UsageSampler: with L7 proxies, their CPU
// is the lab's datapath usage; without, nothing is read.
func (t *Target) StartUsage(ctx context.Context) (suite.UsageMark, error) {
	if t.l7 == nil || t.l7.d == nil {
		return nil, nil
	}
	u, err := t.l7.d.CPU()
	if err != nil {
		return nil, err
	}
	return l7Mark{at: time.Now(), cpu: u}, nil
}

// EndUsage implements suite.UsageSampler: each proxy's CPU since mark.
func (t *Target) EndUsage(ctx context.Context, mark suite.UsageMark) (*results.DatapathUsage, error) {
	m, ok := mark.(l7Mark)
	if !ok || t.l7 == nil || t.l7.d == nil {
		return nil, nil
	}
	u, err := t.l7.d.CPU()
	if err != nil {
		return nil, err
	}
	secs := time.Since(m.at).Seconds()
	var comps []results.ComponentUsage
	for _, name := range t.l7.d.Names() {
		comps = append(comps, results.ComponentUsage{Plugin: "haproxy-" + t.l7.check.Model, Pod: name,
			CPUSec: (u.ByProxy[name] - m.cpu.ByProxy[name]).Seconds()})
	}
	return results.NewDatapathUsage(UsageSourceL7Proxy, secs, comps), nil
}
