package labtarget

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
)

// scenarios are the lab configurations `run --scenarios` knows, each a
// change to the base lab config. Each scenario gets a lab of its own, named
// after it, so all of them stay up while rounds alternate between them.
var scenarios = map[string]func(*lab.Config){
	"native": func(c *lab.Config) { c.Routing = lab.RoutingNative },
	"vxlan":  func(c *lab.Config) { c.Routing = lab.RoutingVXLAN },
}

func init() {
	for _, d := range datapath.Names() {
		scenarios[d] = func(c *lab.Config) { c.ServiceDatapath = d }
	}
}

// labName shortens a scenario's known parts into a lab name: a Service
// datapath becomes its registered token ("iptables-legacy" → "iptl"), the
// "+" between parts goes.
func labName(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		if v, ok := datapath.Lookup(p); ok {
			p = v.Short
		}
		b.WriteString(p)
	}
	return b.String()
}

// ScenarioNames lists the known scenarios.
func ScenarioNames() []string {
	var n []string
	for k := range scenarios {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// ScenarioConfig returns the lab config of a named scenario on top of base.
// Names combine with "+": "vxlan+ebpf" is a VXLAN lab with the eBPF
// Service datapath.
func ScenarioConfig(name string, base lab.Config) (lab.Config, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	cfg := base
	parts := strings.Split(name, "+")
	for _, part := range parts {
		apply, ok := scenarios[part]
		if !ok {
			return base, fmt.Errorf("unknown scenario %q (known: %s; combine with +, e.g. vxlan+ebpf)", part, strings.Join(ScenarioNames(), ", "))
		}
		apply(&cfg)
	}
	// The scenario's lab is named after it, in the 12 characters [a-z0-9]
	// a lab name allows.
	cfg.Name = labName(parts)
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("scenario %q: %w", name, err)
	}
	return cfg, nil
}
