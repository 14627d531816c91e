package ebpf

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab/policy"
)

// Identities are Cilium's local CIDR identities: every distinct prefix
// the node's policy names (rule peers, and each selected pod's /32) gets
// one, and the ipcache maps the prefix to it. The datapath looks up the
// peer's /32, and the longest prefix wins, so a rule allowing prefix P is
// written for P's identity and for the identity of every more specific
// prefix inside P, as Cilium does for CIDR identities: a peer covered by
// a /32 of another rule is still allowed by the /16 that contains it.
// Identities stay the same across Programs while their prefix is in use,
// so reprogramming rewrites only what changed.
type identities struct {
	ids  map[netip.Prefix]uint32
	free []uint32
	next uint32
}

// firstIdentity is where Cilium's node-local (CIDR) identities start.
const firstIdentity = 1 << 24

// assign drops the identities of prefixes no longer used and gives the new
// ones an identity each (in prefix order, so a Spec always numbers the same).
func (a *identities) assign(used map[netip.Prefix]bool) {
	if a.ids == nil {
		a.ids, a.next = map[netip.Prefix]uint32{}, firstIdentity
	}
	for p, id := range a.ids {
		if !used[p] {
			delete(a.ids, p)
			a.free = append(a.free, id)
		}
	}
	slices.Sort(a.free)
	var fresh []netip.Prefix
	for p := range used {
		if _, ok := a.ids[p]; !ok {
			fresh = append(fresh, p)
		}
	}
	slices.SortFunc(fresh, func(x, y netip.Prefix) int {
		if c := x.Addr().Compare(y.Addr()); c != 0 {
			return c
		}
		return x.Bits() - y.Bits()
	})
	for _, p := range fresh {
		if n := len(a.free); n > 0 {
			a.ids[p], a.free = a.free[0], a.free[1:]
			continue
		}
		a.ids[p] = a.next
		a.next++
	}
}

// state is a node's policy as map entries: what Program writes and Verify
// compares the kernel with.
type state struct {
	pods  []podRef
	ipc   map[ipcKey]uint32
	eps   map[uint32]epVal
	pol   map[polKey]polVal
	rules []ruleRef
	peers int // over all rules
}

// podRef is a selected pod and its host veth.
type podRef struct {
	name, iface string
	ifindex     uint32
}

// ruleRef is one Rule of the Spec and the policy entries it needs.
type ruleRef struct {
	pod   int // index in state.pods
	dir   uint8
	index int
	peers []netip.Prefix
	keys  []polKey
}

func (r ruleRef) String(s *state) string {
	dir := "ingress"
	if r.dir == dirEgress {
		dir = "egress"
	}
	return fmt.Sprintf("pod %s %s rule %d", s.pods[r.pod].name, dir, r.index)
}

// build turns pods (one node's, already validated) into map entries;
// ifindex[i] is pods[i]'s host veth. ids is updated to the prefixes used.
func build(pods []policy.PodPolicy, ifaces []string, ifindex []uint32, ids *identities) (*state, error) {
	used := map[netip.Prefix]bool{}
	for _, p := range pods {
		used[netip.PrefixFrom(p.IP, 32)] = true
		for _, rules := range [][]policy.Rule{p.Ingress, p.Egress} {
			for _, r := range rules {
				for _, pr := range r.Peers {
					used[pr.Masked()] = true
				}
			}
		}
	}
	ids.assign(used)
	// inside[P]: every used prefix contained in P (P included).
	inside := make(map[netip.Prefix][]netip.Prefix, len(used))
	for q := range used {
		for b := q.Bits(); b >= 0; b-- {
			if a := netip.PrefixFrom(q.Addr(), b).Masked(); used[a] {
				inside[a] = append(inside[a], q)
			}
		}
	}
	s := &state{ipc: make(map[ipcKey]uint32, len(used)), eps: map[uint32]epVal{}, pol: map[polKey]polVal{}}
	for p, id := range ids.ids {
		s.ipc[ipcKeyOf(p)] = id
	}
	for i, p := range pods {
		if _, dup := s.eps[ifindex[i]]; dup {
			return nil, fmt.Errorf("ebpf policy: pod %s: host interface %s is another pod's too", p.Pod, ifaces[i])
		}
		s.pods = append(s.pods, podRef{name: p.Pod, iface: ifaces[i], ifindex: ifindex[i]})
		ep := epVal{Identity: ids.ids[netip.PrefixFrom(p.IP, 32)]}
		for dir, rules := range map[uint8][]policy.Rule{dirIngress: p.Ingress, dirEgress: p.Egress} {
			if rules == nil {
				continue // unselected: every packet passes
			}
			ep.Flags |= 1 << dir
			for j, r := range rules {
				s.addRule(ruleRef{pod: i, dir: dir, index: j, peers: r.Peers}, r.Ports, inside, ids)
			}
		}
		s.eps[ifindex[i]] = ep
	}
	// Rules in Spec order (the map above ranges at random).
	slices.SortFunc(s.rules, func(x, y ruleRef) int {
		if x.pod != y.pod {
			return x.pod - y.pod
		}
		if x.dir != y.dir {
			return int(x.dir) - int(y.dir)
		}
		return x.index - y.index
	})
	return s, nil
}

// addRule writes r's policy entries: for each peer, the identities of
// every prefix inside it, on each port (no ports: any protocol). An entry
// another rule already wrote keeps that rule's index.
func (s *state) addRule(r ruleRef, ports []policy.Port, inside map[netip.Prefix][]netip.Prefix, ids *identities) {
	if len(ports) == 0 {
		ports = []policy.Port{{}}
	}
	ep := s.pods[r.pod].ifindex
	for _, peer := range r.peers {
		for _, q := range inside[peer.Masked()] {
			for _, pt := range ports {
				k := polKey{Ep: ep, Identity: ids.ids[q], Dport: be16(pt.Port), Proto: protoNum(pt.Protocol), Dir: r.dir}
				if _, ok := s.pol[k]; !ok {
					s.pol[k] = polVal{Rule: uint32(r.index)}
				}
				r.keys = append(r.keys, k)
			}
		}
	}
	s.rules = append(s.rules, r)
	s.peers += len(r.peers)
}

func protoNum(p datapath.Protocol) uint8 {
	switch p {
	case datapath.TCP:
		return ipprotoTCP
	case datapath.UDP:
		return ipprotoUDP
	}
	return 0
}

// counts is what a kernel holding s shows Verify.
func (s *state) counts() policy.Counts {
	return policy.Counts{Pods: len(s.pods), Rules: len(s.rules), Peers: s.peers, MapEntries: len(s.ipc) + len(s.eps) + len(s.pol)}
}
