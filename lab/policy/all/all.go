// Package all registers every lab policy enforcer with package policy:
// import it (blank) to open enforcers by name or by Service datapath
// (policy.ForDatapath). Each enforcer package registers itself in its
// init; a new one is its package and one line here.
package all

import (
	_ "github.com/cnibench/cnibench/lab/policy/ebpf"     // "ebpf", for ebpf and ebpf-tc: ipcache and policy maps at tc
	_ "github.com/cnibench/cnibench/lab/policy/iptables" // "iptables": chains with ipsets
	_ "github.com/cnibench/cnibench/lab/policy/nftables" // "nftables": a table of ours with sets
)
