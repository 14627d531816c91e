package policy

import (
	"context"
	"fmt"

	"github.com/cnibench/cnibench/datapath"
)

// Counts is what Verify read back from the kernel (or what a Spec should
// produce, from Expected). Fields an enforcer does not use stay zero.
type Counts struct {
	Pods       int `json:"pods"`                  // pods whose policy is attached
	Rules      int `json:"rules"`                 // policy rules present (a Rule of the Spec each)
	Peers      int `json:"peers"`                 // peer prefixes present, over all rules
	Chains     int `json:"chains,omitempty"`      // iptables or nft chains of ours
	Elements   int `json:"elements,omitempty"`    // ipset / nft set elements
	MapEntries int `json:"map_entries,omitempty"` // BPF map entries
}

// Holds is nil when c, as Verify read it, has the pods, rules and peers of
// want (from Expected), else an error saying what differs: the check
// every caller makes before measuring.
func (c Counts) Holds(want Counts) error {
	if c.Pods != want.Pods || c.Rules != want.Rules || c.Peers != want.Peers {
		return fmt.Errorf("kernel holds policy for %d pods / %d rules / %d peers, want %d / %d / %d",
			c.Pods, c.Rules, c.Peers, want.Pods, want.Rules, want.Peers)
	}
	return nil
}

// Enforcer is one live policy datapath in one node's network namespace.
// It runs its kernel calls inside the namespace given at construction,
// never in the caller's.
type Enforcer interface {
	// Name is the enforcer's registered name, e.g. "iptables", "ebpf".
	Name() string
	// Program makes the kernel hold exactly spec.OnNode(this node), in as
	// few batches as the mechanism allows.
	Program(ctx context.Context, spec Spec) (datapath.ProgramStats, error)
	// Verify reads the kernel back; an error names the first missing piece.
	Verify(ctx context.Context) (Counts, error)
	// Expected is what Verify should find for spec.
	Expected(spec Spec) Counts
	// Drops is the number of packets the policy dropped on this node since
	// it was opened, read from the kernel (rule counters, a BPF map).
	Drops(ctx context.Context) (uint64, error)
	// Close removes everything the enforcer created (idempotent).
	Close() error
}
