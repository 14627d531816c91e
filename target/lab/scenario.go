package labtarget

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/lab"
)

// scenarios are the lab configurations `run --scenarios` knows, each a
// change to the base lab config. Each scenario gets a lab of its own, named
// after it, so all of them stay up while rounds alternate between them.
var scenarios = map[string]func(*lab.Config){
	"native": func(c *lab.Config) { c.Routing = lab.RoutingNative },
	"vxlan":  func(c *lab.Config) { c.Routing = lab.RoutingVXLAN },
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
func ScenarioConfig(name string, base lab.Config) (lab.Config, error) {
	apply, ok := scenarios[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return base, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(ScenarioNames(), ", "))
	}
	cfg := base
	cfg.Name = strings.ToLower(strings.TrimSpace(name))
	apply(&cfg)
	return cfg, cfg.Validate()
}
