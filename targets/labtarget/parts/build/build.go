// Package build registers the scenario parts the lab is built with and
// that open nothing: the routing between nodes, the Service datapath,
// ebpf without its socket LB, and churn (which the churn schedule reads).
package build

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// SockLBOff is the part that turns ebpf's socket LB off.
const SockLBOff = "socklb-off"

func init() {
	for _, r := range []string{lab.RoutingNative, lab.RoutingVXLAN} {
		part.One(part.Plain{PartName: r, PartToken: r, Config: func(c *lab.Config) { c.Routing = r }, Conflict: onlyOne("routings", isRouting)})
	}
	for _, d := range datapath.Names() {
		v, _ := datapath.Lookup(d)
		part.One(part.Plain{PartName: d, PartToken: v.Short, Config: func(c *lab.Config) { c.ServiceDatapath = d }, Conflict: onlyOne("Service datapaths", isDatapath)})
	}
	// The eBPF datapath without its socket LB (Cilium's
	// socketLB.enabled=false): Services translated per packet at tc, which
	// is the ebpf-tc datapath. It configures after the datapath parts.
	part.One(part.Plain{PartName: SockLBOff, PartToken: "nsl", PartPhase: part.Services, Config: func(c *lab.Config) {
		if c.ServiceDatapath == "ebpf" {
			c.ServiceDatapath = "ebpf-tc"
		}
	}, Conflict: func(_ part.Part, s part.Scenario) error {
		if s.Lab.ServiceDatapath != "ebpf-tc" || s.Has("ebpf-tc") {
			return fmt.Errorf("%s turns off the ebpf datapath's socket LB and goes with ebpf only (e.g. ebpf+%s)", SockLBOff, SockLBOff)
		}
		return nil
	}})
	// The same lab as without it; the churn schedule changes its Services
	// during its samples (suite.ChurnPart).
	part.One(part.Plain{PartName: suite.ChurnPart, PartToken: "chn"})
}

func isRouting(p part.Part) bool {
	return p.Name() == lab.RoutingNative || p.Name() == lab.RoutingVXLAN
}

func isDatapath(p part.Part) bool { _, ok := datapath.Lookup(p.Name()); return ok }

// onlyOne refuses a second part of a kind (two routings, two Service
// datapaths): one would silently win.
func onlyOne(kind string, is func(part.Part) bool) func(part.Part, part.Scenario) error {
	return func(self part.Part, s part.Scenario) error {
		if others := s.Others(self, is); len(others) > 0 {
			names := []string{self.Name()}
			for _, o := range others {
				names = append(names, o.Name())
			}
			return fmt.Errorf("%s are both %s: choose one", strings.Join(names, " and "), kind)
		}
		return nil
	}
}
