package report

import (
	"fmt"
	"strings"
	"time"
)

// policyCheck is target details' "policy" (labtarget.PolicyCheck): the
// L3/L4 policy a scenario ran with and how enforcement was proved.
type policyCheck struct {
	Enforcer string `json:"enforcer"`
	Counts   struct {
		Pods  int `json:"pods"`
		Rules int `json:"rules"`
		Peers int `json:"peers"`
	} `json:"counts"`
	Program time.Duration `json:"program_ns"`
	Probes  []struct {
		From string `json:"from"`
		To   string `json:"to"`
		Want string `json:"want"`
		Got  string `json:"got"`
	} `json:"probes"`
	Drops      uint64   `json:"drops"`
	Skipped    []string `json:"skipped"`
	ScaleRules int      `json:"scale_rules"`
}

// policyText is one line saying what policy a scenario's numbers were
// measured under and the enforcement check made before them: "iptables:
// 3 pods, 3 rules, 4 peers read back from the kernel (programmed in
// 12ms); node0-pod0 → node1-pod0 connected, node1-pod1 → node1-pod0
// dropped, …; 6 packets dropped by the policy, counted by the kernel";
// "" for a scenario without policy.
func policyText(details map[string]any) string {
	p, ok := detail[policyCheck](details, "policy")
	if !ok || p.Enforcer == "" {
		return ""
	}
	var probes []string
	for _, pr := range p.Probes {
		to, _, _ := strings.Cut(pr.To, " ")
		probes = append(probes, fmt.Sprintf("%s → %s %s", pr.From, to, pr.Got))
	}
	s := fmt.Sprintf("%s: %d pods, %d rules, %d peers read back from the kernel (programmed in %s); %s; %d packets dropped by the policy, counted by the kernel",
		p.Enforcer, p.Counts.Pods, p.Counts.Rules, p.Counts.Peers, p.Program.Round(time.Millisecond), strings.Join(probes, ", "), p.Drops)
	for _, sk := range p.Skipped {
		s += "; not probed: " + sk
	}
	return s
}

// l7Check is target details' "l7" (labtarget.L7Check).
type l7Check struct {
	Model string `json:"model"`
	Rules []struct {
		Method     string `json:"method"`
		Path       string `json:"path"`
		PathPrefix string `json:"path_prefix"`
	} `json:"rules"`
	Proxies []string      `json:"proxies"`
	Checks  []string      `json:"checks"`
	Start   time.Duration `json:"start_ns"`
	Pinned  []string      `json:"pinned"`
}

// l7Text is one line saying which L7 proxies a scenario's HTTP numbers
// went through, their allow-list and the checks made before measuring;
// "" for a scenario without L7 policy.
func l7Text(details map[string]any) string {
	c, ok := detail[l7Check](details, "l7")
	if !ok || c.Model == "" {
		return ""
	}
	var rules []string
	for _, r := range c.Rules {
		rule := strings.TrimSpace(r.Method + " " + r.Path)
		if r.PathPrefix != "" {
			rule += " " + r.PathPrefix + "*"
		}
		rules = append(rules, rule)
	}
	s := fmt.Sprintf("%s HAProxy (%s), allowing only %s, started and verified in %s: %s",
		c.Model, strings.Join(c.Proxies, ", "), strings.Join(rules, ", "), c.Start.Round(time.Millisecond), strings.Join(c.Checks, "; "))
	if len(c.Pinned) > 0 {
		s += " (proxies pinned with the pods they serve: " + strings.Join(c.Pinned, ", ") + ")"
	}
	return s
}

// flowsCheck is target details' "flows" (labtarget.FlowsCheck).
type flowsCheck struct {
	Mechanism string `json:"mechanism"`
	Installed int    `json:"installed"`
	Probes    int    `json:"probes"`
	Events    uint64 `json:"events"`
	SYNs      uint64 `json:"syn_events"`
}

// flowsText is one line saying how a scenario observed flows and how the
// toggle was proved on; "" with flows off.
func flowsText(details map[string]any) string {
	c, ok := detail[flowsCheck](details, "flows")
	if !ok || c.Mechanism == "" {
		return ""
	}
	return fmt.Sprintf("%s events (%d hooks or rules read back from the kernel); %d probe connections gave %d events, %d of them SYN; each sample's event rate is its \"flow events\" row; emitting them costs the datapath softirq time, mostly charged to the client and server; each node's consumer (a thread of the cnibench process) is counted in the datapath CPU",
		c.Mechanism, c.Installed, c.Probes, c.Events, c.SYNs)
}
