package iptables

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/datapath"
)

// Verify reads the namespace's tables back with iptables-save and checks,
// in this order, that our fixed chains and jump rules exist, that every
// Service port of the last Program has its KUBE-SERVICES rule (VIP, port,
// protocol) jumping to its KUBE-SVC chain, that the chain jumps to every
// endpoint's KUBE-SEP chain and that each of those DNATs to its endpoint;
// the error names the first piece missing. Then the counts must equal
// Expected (an extra or duplicated rule is an error too).
func (d *Datapath) Verify(ctx context.Context) (datapath.Counts, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	dm, err := d.dump(ctx)
	if err != nil {
		return datapath.Counts{}, err
	}
	got := count(dm)
	if d.last == nil {
		return got, nil
	}
	if err := datapath.Judge(d.Name(), check(dm, d.last), got, d.Expected(*d.last), fmtCounts); err != nil {
		d.held = nil // the kernel lost something: the next sync rewrites all
		return got, err
	}
	return got, nil
}

// count counts our chains and rules (jumps included) in nat and filter,
// the Service ports KUBE-SERVICES dispatches and the DNAT rules of the
// KUBE-SEP chains.
func count(dm dump) datapath.Counts {
	var c datapath.Counts
	for _, table := range []string{"nat", "filter"} {
		t := dm[table]
		if t == nil {
			continue
		}
		for ch := range t.user {
			if isOurChain(table, ch) {
				c.Chains++
			}
		}
		for _, r := range t.rules {
			ours := isOurChain(table, r.chain)
			if ours || (t.builtin[r.chain] != "" && isOurChain(table, r.target())) {
				c.Rules++
			}
			if table != "nat" || !ours {
				continue
			}
			if r.chain == chainServices && strings.HasPrefix(r.target(), prefixSVC) {
				c.Services++
			}
			if strings.HasPrefix(r.chain, prefixSEP) && r.target() == "DNAT" {
				c.Endpoints++
			}
		}
	}
	return c
}

// check looks for every piece spec needs and names the first missing one.
func check(dm dump, spec *datapath.Spec) error {
	for _, table := range []string{"filter", "nat"} {
		t := dm[table]
		fixed := filterChains
		if table == "nat" {
			fixed = natChains
		}
		for _, c := range fixed {
			if t == nil || !t.user[c] {
				return fmt.Errorf("%s chain %s missing", table, c)
			}
		}
	}
	for _, j := range jumps {
		if !hasJump(dm, j) {
			return fmt.Errorf("jump from %s %s to %s missing", j.table, j.src, j.dst)
		}
	}
	nat := dm["nat"]
	byChain := make(map[string][]rule, len(nat.user))
	dispatch := make(map[string]string, len(spec.Services))
	for _, r := range nat.rules {
		byChain[r.chain] = append(byChain[r.chain], r)
		if r.chain == chainServices {
			dispatch[dispatchKey(r.opt("-d"), r.opt("-p"), r.opt("--dport"))] = r.target()
		}
	}
	for i := range spec.Services {
		s := &spec.Services[i]
		sc := svcChain(s)
		what := fmt.Sprintf("service %s (%s:%d/%s)", s.ServicePortName(), s.VIP, s.Port, s.Protocol)
		if dispatch[dispatchKey(s.VIP.String()+"/32", proto(s), strconv.Itoa(int(s.Port)))] != sc {
			return fmt.Errorf("%s: no %s rule jumping to %s", what, chainServices, sc)
		}
		if !nat.user[sc] {
			return fmt.Errorf("%s: chain %s missing", what, sc)
		}
		targets := map[string]bool{}
		for _, r := range byChain[sc] {
			targets[r.target()] = true
		}
		for _, ep := range s.Endpoints {
			ec := sepChain(s, ep)
			if !targets[ec] {
				return fmt.Errorf("%s: %s does not jump to %s (endpoint %s)", what, sc, ec, endpointString(ep))
			}
			dnat := false
			for _, r := range byChain[ec] {
				if r.target() == "DNAT" && r.opt("--to-destination") == endpointString(ep) {
					dnat = true
				}
			}
			if !dnat {
				return fmt.Errorf("%s: endpoint %s: no DNAT rule in %s", what, endpointString(ep), ec)
			}
		}
	}
	return nil
}

func dispatchKey(dst, proto, port string) string { return dst + " " + proto + " " + port }

func fmtCounts(c datapath.Counts) string {
	return fmt.Sprintf("%d services, %d endpoints, %d rules, %d chains", c.Services, c.Endpoints, c.Rules, c.Chains)
}
