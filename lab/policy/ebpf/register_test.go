package ebpf

import (
	"errors"
	"testing"

	cebpf "github.com/cilium/ebpf"

	"github.com/cnibench/cnibench/internal/kfeature"
	"github.com/cnibench/cnibench/lab/policy"
)

// TestRegistered: both eBPF Service datapaths pick this enforcer, and a
// bad site is refused before any kernel call.
func TestRegistered(t *testing.T) {
	for _, dp := range []string{"ebpf", "ebpf-tc"} {
		v, err := policy.ForDatapath(dp)
		if err != nil || v.Name != Name {
			t.Errorf("ForDatapath(%q) = %q, %v; want %q", dp, v.Name, err, Name)
		}
	}
	v, _ := policy.Lookup(Name)
	if e, err := v.Open(policy.Site{Node: "node0"}); err == nil || e != nil {
		t.Errorf("Open without a namespace: %v, %v; want an error and no enforcer", e, err)
	}
}

func TestUnsupportedWraps(t *testing.T) {
	err := unsupported("LPM trie maps", cebpf.ErrNotSupported)
	if _, ok := kfeature.As(err); !ok || !errors.Is(err, ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, cebpf.ErrNotSupported) {
		t.Errorf("%v: not a kfeature.Unsupported wrapping ErrUnsupported and its cause", err)
	}
	if err := loadUnsupported("x", errors.New("EPERM")); errors.Is(err, ErrUnsupported) {
		t.Errorf("%v wrongly marked unsupported", err)
	}
}
