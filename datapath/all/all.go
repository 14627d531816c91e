// Package all registers every lab Service datapath with package datapath,
// in the order --service-datapath lists them; import it (blank) to open
// datapaths by name. A new datapath is its package, with a Variants
// function, and one line here.
//
// The order is this list's and not left to each package's init: Go
// initialises independent packages by import path, which would put ebpf
// before iptables.
package all

import (
	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/datapath/iptables"
	"github.com/cnibench/cnibench/datapath/nftables"
)

func init() {
	datapath.Register(iptables.Variants()...)
	datapath.Register(nftables.Variants()...)
	datapath.Register(ebpf.Variants()...)
}
