package ebpf

import "github.com/cnibench/cnibench/lab/policy"

// The enforcer of the eBPF Service datapaths ("ebpf" and "ebpf-tc"): as
// Cilium, which enforces policy in the same BPF programs that balance.
func init() {
	policy.Register(policy.Variant{
		Name:   Name,
		Family: []string{"ebpf"},
		Open:   open,
	})
}

// open is Open as the registry wants it (no typed nil on error).
func open(s policy.Site) (policy.Enforcer, error) {
	e, err := Open(s)
	if err != nil {
		return nil, err
	}
	return e, nil
}
