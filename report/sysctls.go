package report

import (
	"maps"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/results"
)

// endpointSysctls is target details' "endpoint_sysctls": what each agent
// read in its own network namespace (both targets write it).
type endpointSysctls map[string]struct {
	Values     map[string]string `json:"values"`
	Unreadable map[string]string `json:"unreadable"`
}

// sysctlsText is one line of a scenario's effective sysctls, endpoints
// with the same values grouped: "node0-pod0 (client), node1-pod0 (server):
// ip_local_port_range=1024 65535, tcp_tw_reuse=1; node0 (client), …"; ""
// when the run did not record them. Keys are shown without their
// net.ipv4./net.core./net.netfilter. prefix; unreadable ones are left out.
func sysctlsText(run *results.Run, details map[string]any) string {
	eps, ok := detail[endpointSysctls](details, "endpoint_sysctls")
	if !ok || len(eps) == 0 {
		return ""
	}
	roles := map[string]string{}
	for _, r := range run.Results {
		for _, s := range strings.Split(r.Placement.Server, "+") {
			if s != "" && roles[s] == "" {
				roles[s] = "server"
			}
		}
	}
	for _, r := range run.Results {
		if r.Placement.Client != "" {
			roles[r.Placement.Client] = "client"
		}
	}
	var order []string
	groups := map[string][]string{}
	for _, ep := range slices.Sorted(maps.Keys(eps)) {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(eps[ep].Values)) {
			short := k[strings.LastIndex(k, ".")+1:]
			kv = append(kv, short+"="+eps[ep].Values[k])
		}
		vals := strings.Join(kv, ", ")
		if _, seen := groups[vals]; !seen {
			order = append(order, vals)
		}
		name := ep
		if role := roles[ep]; role != "" {
			name += " (" + role + ")"
		}
		groups[vals] = append(groups[vals], name)
	}
	var parts []string
	for _, vals := range order {
		parts = append(parts, strings.Join(groups[vals], ", ")+": "+vals)
	}
	return strings.Join(parts, "; ")
}
