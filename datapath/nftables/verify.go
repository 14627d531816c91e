package nftables

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/cnibench/cnibench/datapath"
)

// Verify lists table ip kube-proxy as JSON and checks that the base and
// fixed chains exist, then for every Service port of the last Program: its
// ClusterIP in cluster-ips, its service-ips element going to its chain
// and, in kube-proxy's layout, the service chain's numgen map reaching
// every endpoint chain and each endpoint chain's DNAT; in the flat layout,
// one endpoints-<proto> element per bucket holding the right endpoint and
// each endpoint IP's hairpin pair. The error names the first piece
// missing. Then the counts must equal Expected.
func (d *Datapath) Verify(ctx context.Context) (datapath.Counts, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	out, err := d.run.Run(ctx, nil, nil, "nft", "-j", "list", "table", "ip", table)
	if err != nil {
		if d.last == nil && strings.Contains(err.Error(), "No such file or directory") {
			return datapath.Counts{}, nil
		}
		return datapath.Counts{}, fmt.Errorf("%s: list table ip %s: %w", d.Name(), table, err)
	}
	l, err := parseListing(out)
	if err != nil {
		return datapath.Counts{}, fmt.Errorf("%s: %w", d.Name(), err)
	}
	got := d.count(l)
	if d.last == nil {
		return got, nil
	}
	check := checkKubeProxy
	if d.opts.Flat {
		check = checkFlat
	}
	if err := datapath.Judge(d.Name(), check(l, d.last), got, d.Expected(*d.last), fmtCounts); err != nil {
		d.drift = true
		return got, err
	}
	return got, nil
}

func (d *Datapath) count(l *listing) datapath.Counts {
	c := datapath.Counts{Chains: len(l.chains), Rules: l.nrules, Services: len(l.elements[serviceIPsMap])}
	for _, els := range l.elements {
		c.Elements += len(els)
	}
	if d.opts.Flat {
		for _, pr := range flatProtos {
			c.Endpoints += len(l.elements[endpointsMap(pr)])
		}
		return c
	}
	for ch, rules := range l.rules {
		if !strings.HasPrefix(ch, endpointPrefix) {
			continue
		}
		for _, r := range rules {
			c.Endpoints += len(r.dnat)
		}
	}
	return c
}

// checkCommon checks the chains every layout has and a Service's dispatch
// element, returning the element's verdict.
func checkCommon(l *listing, s *datapath.Service) (what, verdict string, err error) {
	what = fmt.Sprintf("service %s (%s:%d/%s)", s.ServicePortName(), s.VIP, s.Port, s.Protocol)
	if _, ok := l.elements[clusterIPsSet][s.VIP.String()]; !ok {
		return what, "", fmt.Errorf("%s: ClusterIP missing from set %s", what, clusterIPsSet)
	}
	verdict, ok := l.elements[serviceIPsMap][svcKey(s)]
	if !ok {
		return what, "", fmt.Errorf("%s: no element %s in map %s", what, svcKey(s), serviceIPsMap)
	}
	return what, verdict, nil
}

func svcKey(s *datapath.Service) string {
	return fmt.Sprintf("%s . %s . %d", s.VIP, proto(s), s.Port)
}

func checkFixed(l *listing, extra ...string) error {
	for _, bc := range baseChains {
		if !l.chains[bc.name] {
			return fmt.Errorf("base chain %s missing", bc.name)
		}
	}
	for _, c := range append(fixedChains, extra...) {
		if !l.chains[c] {
			return fmt.Errorf("chain %s missing", c)
		}
	}
	return nil
}

func checkKubeProxy(l *listing, spec *datapath.Spec) error {
	if err := checkFixed(l); err != nil {
		return err
	}
	for i := range spec.Services {
		s := &spec.Services[i]
		what, verdict, err := checkCommon(l, s)
		if err != nil {
			return err
		}
		sc := serviceChain(s)
		if verdict != "goto "+sc {
			return fmt.Errorf("%s: service-ips sends it to %q, want goto %s", what, verdict, sc)
		}
		if !l.chains[sc] {
			return fmt.Errorf("%s: chain %s missing", what, sc)
		}
		targets := map[string]bool{}
		for _, r := range l.rules[sc] {
			for _, t := range r.targets {
				targets[t] = true
			}
		}
		for _, ep := range s.Endpoints {
			ec := endpointChain(s, ep)
			dest := netip.AddrPortFrom(ep.IP, ep.Port).String()
			if !targets[ec] {
				return fmt.Errorf("%s: %s does not reach %s (endpoint %s)", what, sc, ec, dest)
			}
			found := false
			for _, r := range l.rules[ec] {
				for _, dn := range r.dnat {
					found = found || dn == dest
				}
			}
			if !found {
				return fmt.Errorf("%s: endpoint %s: no DNAT rule in %s", what, dest, ec)
			}
		}
	}
	return nil
}

func checkFlat(l *listing, spec *datapath.Spec) error {
	lbs := map[string]bool{}
	for i := range spec.Services {
		lbs[lbChain(len(spec.Services[i].Endpoints))] = true
	}
	var extra []string
	for c := range lbs {
		extra = append(extra, c)
	}
	if err := checkFixed(l, extra...); err != nil {
		return err
	}
	hairpin := l.elements[hairpinSet]
	for i := range spec.Services {
		s := &spec.Services[i]
		what, verdict, err := checkCommon(l, s)
		if err != nil {
			return err
		}
		if lb := lbChain(len(s.Endpoints)); verdict != "goto "+lb {
			return fmt.Errorf("%s: service-ips sends it to %q, want goto %s", what, verdict, lb)
		}
		m := endpointsMap(proto(s))
		for b, ep := range s.Endpoints {
			key := fmt.Sprintf("%s . %d . %d", s.VIP, s.Port, b)
			want := fmt.Sprintf("%s . %d", ep.IP, ep.Port)
			if got, ok := l.elements[m][key]; !ok || got != want {
				return fmt.Errorf("%s: endpoint %s:%d: element %s of map %s is %q, want %q",
					what, ep.IP, ep.Port, key, m, got, want)
			}
			if _, ok := hairpin[ep.IP.String()+" . "+ep.IP.String()]; !ok {
				return fmt.Errorf("%s: endpoint %s: no hairpin pair in set %s", what, ep.IP, hairpinSet)
			}
		}
	}
	return nil
}

func fmtCounts(c datapath.Counts) string {
	return fmt.Sprintf("%d services, %d endpoints, %d rules, %d chains, %d elements",
		c.Services, c.Endpoints, c.Rules, c.Chains, c.Elements)
}
