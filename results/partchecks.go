package results

import (
	"fmt"
	"strings"
	"time"
)

// The records of the lab's built-in parts (policy, L7, flows, encryption,
// tuning): one JSON type each, written by the part into the target's
// details under its key and read back by the report (the policy-scale
// analysis, and the checks of files written before runs recorded them).
// Their Text is the check line, so the part and the report of an older
// file say the same.

// Labels of the built-in parts' checks.
const (
	PolicyLabel     = "L3/L4 policy, enforcement checked before measuring"
	FlowsLabel      = "Flow observability on, checked before measuring"
	EncryptionLabel = "Encryption between nodes, proved before measuring"
	TuningLabel     = "Tuning, read back from the kernel before measuring"
	L7Label         = "L7 policy on HTTP, checked before measuring (the proxies' CPU is the datapath CPU of each sample)"
	AmbientLabel    = "Ambient mesh (a per-node L4 proxy, mutual TLS between nodes), proved before measuring (the proxies' CPU is the datapath CPU of each sample)"
)

// PolicyCheck is what a run programmed as L3/L4 policy and how it proved
// enforcement (details "policy").
type PolicyCheck struct {
	Enforcer string        `json:"enforcer"`
	Counts   PolicyCounts  `json:"counts"`     // read back from every node's kernel, summed
	Program  time.Duration `json:"program_ns"` // programming and read-back, all nodes
	Probes   []PolicyProbe `json:"probes"`
	// Drops: packets the enforcers counted as dropped during the denied
	// probes (read from the kernel before and after).
	Drops uint64 `json:"drops"`
	// Skipped says why a probe direction could not be made.
	Skipped []string `json:"skipped,omitempty"`
	// ScaleRules: dummy rules per server pod in front of its real rule
	// (a policy-N scenario).
	ScaleRules int `json:"scale_rules,omitempty"`
}

// PolicyCounts is what the kernel held of a policy (policy.Counts).
type PolicyCounts struct {
	Pods       int `json:"pods"`
	Rules      int `json:"rules"`
	Peers      int `json:"peers"`
	Chains     int `json:"chains,omitempty"`
	Elements   int `json:"elements,omitempty"`
	MapEntries int `json:"map_entries,omitempty"`
}

// PolicyProbe is one enforcement probe: a TCP connection from one pod to
// a listener in another, and what happened.
type PolicyProbe struct {
	From string `json:"from"`
	To   string `json:"to"`   // "node1-pod0 198.19.1.10:40123"
	Want string `json:"want"` // "connect" or "drop"
	Got  string `json:"got"`  // "connected", "dropped (no answer in 500ms)", or the error
}

// Text: "iptables: 3 pods, 3 rules, 4 peers read back from the kernel
// (programmed in 12ms); node0-pod0 → node1-pod0 connected, …; 6 packets
// dropped by the policy, counted by the kernel".
func (p PolicyCheck) Text() string {
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

// L7Check is the L7 policy a scenario ran under and how it was proved
// (details "l7").
type L7Check struct {
	Model   string   `json:"model"`
	Rules   []L7Rule `json:"rules"`
	Proxies []string `json:"proxies"`
	// Checks: one line per probe made after the proxies were verified, e.g.
	// "node1-pod0: GET / 200 through [node-node1]; GET /cnb-l7-denied 403 from node-node1".
	Checks []string      `json:"checks"`
	Start  time.Duration `json:"start_ns"` // proxies started, rules added, verified
	// Pinned says where each proxy ran ("node-node1 on CPUs 1").
	Pinned []string `json:"pinned,omitempty"`
}

// L7Rule is one allowed HTTP request (l7proxy.HTTPRule).
type L7Rule struct {
	Method     string `json:"method,omitempty"`
	Path       string `json:"path,omitempty"`
	PathPrefix string `json:"path_prefix,omitempty"`
}

// Text says which proxies the HTTP numbers went through, their
// allow-list and the checks made before measuring.
func (c L7Check) Text() string {
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

// FlowsCheck is the flow observability a scenario ran with and how it was
// proved on (details "flows").
type FlowsCheck struct {
	Mechanism string `json:"mechanism"` // flows.EBPF or flows.NFLOG
	Installed int    `json:"installed"` // programs attached / log rules, read from the kernel, all nodes
	// Probes connections made by the check; Events and SYNs what the
	// recorders counted for them (≥ 1 SYN event per connection).
	Probes int    `json:"probes"`
	Events uint64 `json:"events"`
	SYNs   uint64 `json:"syn_events"`
}

// Text says how flows were observed and how the toggle was proved on.
func (c FlowsCheck) Text() string {
	return fmt.Sprintf("%s events (%d hooks or rules read back from the kernel); %d probe connections gave %d events, %d of them SYN; each sample's event rate is its \"flow events\" row; emitting them costs the datapath softirq time, mostly charged to the client and server; each node's consumer (a thread of the cnibench process) is counted in the datapath CPU",
		c.Mechanism, c.Installed, c.Probes, c.Events, c.SYNs)
}

// EncryptionCheck is how a scenario's node-to-node encryption was proved
// on (details "encryption").
type EncryptionCheck struct {
	Mode           string `json:"mode"`           // "wireguard"
	Implementation string `json:"implementation"` // what encrypts
	// Kernel says whether this kernel has WireGuard devices ("available",
	// or the unsupported error): the userspace daemon stands in for it.
	Kernel string `json:"kernel_wireguard"`
	// KernelESP is the same for IPsec ESP, the other mode CNIs offer.
	KernelESP string `json:"kernel_ipsec_esp"`
	MTU       int    `json:"pod_mtu"` // pods' MTU, lowered by the overhead
	// Probes are connections from node0's first pod to a pod on each
	// other node, with what each node's device counted meanwhile.
	Probes []string `json:"probes"`
	// Pinned says where each node's daemon ran during the run.
	Pinned []string `json:"pinned,omitempty"`
}

// Text says how traffic between nodes was encrypted and the probes that
// proved it.
func (c EncryptionCheck) Text() string {
	esp := c.KernelESP
	if esp == "" {
		esp = "not recorded"
	}
	s := fmt.Sprintf("%s by %s; pods' MTU %d; kernel WireGuard: %s; kernel IPsec ESP: %s; %s; the daemons' CPU is each sample's datapath CPU",
		c.Mode, c.Implementation, c.MTU, c.Kernel, esp, strings.Join(c.Probes, "; "))
	if len(c.Pinned) > 0 {
		s += " (daemons pinned as the nodes' agents: " + strings.Join(c.Pinned, ", ") + ")"
	}
	return s
}

// TuningCheck is what one tuning did (details "tuning", a list; tuning.Check).
type TuningCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "applied", "not applicable" or "failed"
	Detail string `json:"detail"` // what was read back, or why not
	Sites  int    `json:"sites"`  // namespaces it was verified in
}

// Text: "cc-reno applied (read back: reno in 10 namespaces)", or one that
// did not apply, whose samples were skipped: "…: nothing measured under it".
func (c TuningCheck) Text() string {
	s := fmt.Sprintf("%s %s (%s)", c.Name, c.Status, c.Detail)
	if c.Status != "applied" {
		s += ": nothing measured under it"
	}
	return s
}
