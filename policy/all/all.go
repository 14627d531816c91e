// Package all registers every policy enforcer (as datapath/all does for
// Service datapaths): import it for its side effect where the lab picks
// one with policy.ForDatapath.
package all

import (
	_ "github.com/cnibench/cnibench/policy/ebpf" // "ebpf", for ebpf and ebpf-tc
)
