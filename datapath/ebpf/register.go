package ebpf

import (
	"errors"

	"github.com/cnibench/cnibench/datapath"
)

// Variants are the registry entries of the eBPF load balancers: the
// socket LB once on the lab's cgroup (it sees every pod's connect()), the
// tc LB on every node's pod veths. Both take Site.Options as Options.
func Variants() []datapath.Variant {
	return []datapath.Variant{
		{Name: NameSocket, Short: "ebpf", Scope: datapath.PerLab, Open: openSocket},
		{Name: NameTC, Short: "ebpftc", Scope: datapath.PerNode, Open: openTC},
	}
}

// siteOptions is the site's Options when they are ours, else the defaults.
func siteOptions(s datapath.Site) Options {
	o, _ := s.Options.(Options)
	return o
}

func openSocket(s datapath.Site) (datapath.Datapath, error) {
	if s.Cgroup == "" {
		return nil, errors.New("the socket load balancer attaches to the lab's cgroup, and this machine has no cgroup v2")
	}
	d, err := NewSocketLB(s.Cgroup, siteOptions(s))
	if err != nil {
		return nil, err
	}
	return d, nil
}

func openTC(s datapath.Site) (datapath.Datapath, error) {
	d, err := NewTCLB(s.Netns, nil, siteOptions(s))
	if err != nil {
		return nil, err
	}
	return d, nil
}
