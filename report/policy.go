package report

import (
	"encoding/json"
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
	Drops   uint64   `json:"drops"`
	Skipped []string `json:"skipped"`
}

// policyText is one line saying what policy a scenario's numbers were
// measured under and the enforcement check made before them: "iptables:
// 3 pods, 3 rules, 4 peers read back from the kernel (programmed in
// 12ms); node0-pod0 → node1-pod0 connected, node1-pod1 → node1-pod0
// dropped, …; 6 packets dropped by the policy, counted by the kernel";
// "" for a scenario without policy.
func policyText(details map[string]any) string {
	raw, ok := details["policy"]
	if !ok || raw == nil {
		return ""
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return ""
	}
	var p policyCheck
	if json.Unmarshal(b, &p) != nil || p.Enforcer == "" {
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
