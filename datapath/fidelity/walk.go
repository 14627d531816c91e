package fidelity

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/datapath"
)

// Walk renders what a packet to s's ClusterIP meets: the rules or map
// elements that dispatch it, then every per-Service chain reached from
// them, depth first in rule order, as "chain: rule" lines. It fails when
// nothing dispatches s.
func (d *Dump) Walk(s datapath.Service) ([]string, error) {
	w := walker{d: d, seen: map[string]bool{}}
	var roots []string
	if d.Layout == "iptables" {
		roots = w.iptablesDispatch(s)
	} else {
		roots = w.nftDispatch(s)
	}
	if len(roots) == 0 {
		return nil, fmt.Errorf("%s: nothing dispatches %s (%s:%d/%s)", d.Layout, s.Key(), s.VIP, s.Port, s.Protocol)
	}
	for _, c := range roots {
		w.chain(c)
	}
	return w.lines, nil
}

type walker struct {
	d     *Dump
	seen  map[string]bool
	lines []string
}

// iptablesDispatch adds the KUBE-SERVICES rules of table nat that match
// s's ClusterIP and port, and returns their per-Service targets.
func (w *walker) iptablesDispatch(s datapath.Service) []string {
	proto := strings.ToLower(string(s.Protocol))
	var roots []string
	for _, r := range w.d.Chains["nat/KUBE-SERVICES"] {
		f := strings.Fields(r)
		if has(f, "-d", s.VIP.String()+"/32") && has(f, "--dport", strconv.Itoa(int(s.Port))) && has(f, "-p", proto) {
			w.lines = append(w.lines, "nat/KUBE-SERVICES: "+r)
			for _, t := range targets("iptables", r) {
				roots = append(roots, "nat/"+t)
			}
		}
	}
	return roots
}

// nftDispatch adds the cluster-ips and service-ips elements of s's
// ClusterIP and returns the chains the service-ips element goes to.
func (w *walker) nftDispatch(s datapath.Service) []string {
	vip := s.VIP.String()
	key := fmt.Sprintf("%s . %s . %d :", vip, strings.ToLower(string(s.Protocol)), s.Port)
	var roots []string
	for _, e := range w.d.Elements["cluster-ips"] {
		if e == vip {
			w.lines = append(w.lines, "cluster-ips: "+e)
		}
	}
	for _, e := range w.d.Elements["service-ips"] {
		if strings.HasPrefix(e, key) {
			w.lines = append(w.lines, "service-ips: "+e)
			roots = append(roots, targets("nftables", e)...)
		}
	}
	return roots
}

// chain adds c's rules and walks on into the per-Service chains they
// reach; shared chains (KUBE-MARK-MASQ, mark-for-masquerade) are named by
// the rule that jumps there and compared with the rest of the layout.
func (w *walker) chain(c string) {
	if w.seen[c] || !w.d.perService(c) {
		return
	}
	w.seen[c] = true
	rules, ok := w.d.Chains[c]
	if !ok {
		w.lines = append(w.lines, c+": (chain missing)")
		return
	}
	for _, r := range rules {
		w.lines = append(w.lines, c+": "+r)
	}
	for _, r := range rules {
		for _, t := range targets(w.d.Layout, r) {
			if w.d.Layout == "iptables" {
				t = c[:strings.IndexByte(c, '/')+1] + t
			}
			w.chain(t)
		}
	}
}

// has reports whether words contain flag followed by value.
func has(words []string, flag, value string) bool {
	for i := 0; i < len(words)-1; i++ {
		if words[i] == flag && words[i+1] == value {
			return true
		}
	}
	return false
}
