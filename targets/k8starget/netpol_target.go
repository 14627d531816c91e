package k8starget

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
)

// checkNetworkPolicy runs the NetworkPolicy check of a run with
// --network-policy-check, once the agents are up and before anything is
// measured, and records it in the provenance and the run's notes. A
// broken policy is removed at once, so the run measures without it; an
// enforced or unenforced one stays until the run's cleanup.
func (t *Target) checkNetworkPolicy(ctx context.Context) error {
	if !t.cfg.NetworkPolicyCheck {
		return nil // the security profile's policy twin runs the check itself
	}
	pod := t.pods[NetPolDeniedEndpoint]
	if len(netPolServers(t.layout)) == 0 || pod == nil {
		return errors.New("--network-policy-check: no server on the pod network runs on this cluster (the placements that have one were skipped)")
	}
	denied, err := t.dialAgent(ctx, NetPolDeniedEndpoint, pod)
	if err != nil {
		return fmt.Errorf("the NetworkPolicy check's denied prober: %w", err)
	}
	ips := map[string]string{}
	for ep, p := range t.pods {
		ips[ep] = p.Status.PodIP
	}
	r := &netPolRun{cs: t.cs, layout: t.layout, ips: ips, baseline: t.cfg.Timeout,
		probers: map[string]prober{netPolClient: t.agents[netPolClient], NetPolDeniedEndpoint: denied}}
	t.progress("NetworkPolicy check: applying %s, probing %v from %s (allowed) and %s (denied) ...", NetPolName, netPolServers(t.layout), netPolClient, NetPolDeniedEndpoint)
	res, err := r.run(ctx)
	if err != nil {
		t.progress(" failed\n")
		return err
	}
	t.progress(" %s", res.Outcome)
	var ciliumNotes []string
	if cil := t.prov.CNI; cil != nil && cil.Cilium != nil && res.Outcome != NetPolBroken {
		res.Hubble = or(cil.Cilium.EnableHubble, "not set")
		if ciliumNotes, err = t.checkCiliumPolicies(ctx, r, res, noL7Proxy(cil.Cilium)); err != nil {
			t.progress(" failed\n")
			return err
		}
	}
	if err := settleNetPol(ctx, t.cs, t.layout, res); err != nil {
		return err
	}
	t.prov.NetworkPolicy = res
	t.prov.Notes = append(t.prov.Notes, "NetworkPolicy check: "+res.Outcome+": "+res.Verdict)
	t.prov.Notes = append(t.prov.Notes, ciliumNotes...)
	t.progress("\n")
	if res.Outcome != NetPolEnforced {
		t.progress("warning: %s\n", res.Verdict)
	}
	return nil
}

// checkCiliumPolicies applies the check's CiliumNetworkPolicies where the
// CRD is served and proves each (netpol_cilium.go): the L3/L4 one by the
// client's probe to the denied prober dropped, the L7 one by the proxy's
// 403 on a path it does not allow. notes are the run's: the L3/L4
// verdict, and the L7 rule's reason when it is not enforced.
func (t *Target) checkCiliumPolicies(ctx context.Context, r *netPolRun, res *NetPolCheck, noProxy string) (notes []string, err error) {
	p, why := ciliumPoliciesFor(ctx, t.cs, t.cfg.Dynamic, t.layout)
	if p == nil {
		res.CiliumL4 = &CiliumL4{Rule: ciliumL4Rule(), Reason: why}
		res.CiliumL7 = &CiliumL7{Rule: ciliumL7Rule(t.layout), Reason: why}
		return nil, nil
	}
	t.progress("; CiliumNetworkPolicy L3/L4: probing %s from %s ...", NetPolDeniedEndpoint, netPolClient)
	l4, err := p.applyCiliumL4(ctx, r)
	if l4 != nil && l4.Applied {
		t.ciliumPolicies = append(t.ciliumPolicies, l4.Name)
	}
	if err != nil {
		return nil, err
	}
	res.CiliumL4 = l4
	notes = append(notes, l4.Verdict)
	t.progress(" %s", l4.Outcome)
	if res.CiliumL7, err = p.applyCiliumL7(ctx); err != nil {
		return nil, err
	}
	t.ciliumPolicies = append(t.ciliumPolicies, res.CiliumL7.Name)
	t.progress("; L7 rule: probing %s (200) and %s (403) ...", ciliumL7AllowedPath, ciliumL7DeniedPath)
	if err := l7Check(ctx, res.CiliumL7, t.agents[netPolClient], netPolServers(t.layout), r.ips, netPolWait, netPolInterval, noProxy); err != nil {
		return nil, err
	}
	t.progress(" %s", res.CiliumL7.Outcome)
	if res.CiliumL7.Verified {
		return notes, nil
	}
	if noProxy != "" {
		t.progress(" (no L7 proxy on this cluster)")
	}
	return append(notes, "CiliumNetworkPolicy L7 rule: "+NetPolNotEnforced+": "+res.CiliumL7.Reason), nil
}

// closeCiliumPolicies removes the CiliumNetworkPolicies the check applied
// (Close).
func (t *Target) closeCiliumPolicies() error {
	if len(t.ciliumPolicies) == 0 || t.cfg.Dynamic == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
	defer cancel()
	return deleteCiliumPolicies(ctx, t.cfg.Dynamic, t.layout, t.ciliumPolicies)
}

// settleNetPol removes a broken policy at once, so the run measures its
// own traffic without it; an enforced or unenforced one stays for the run.
func settleNetPol(ctx context.Context, cs kubernetes.Interface, l Layout, res *NetPolCheck) error {
	if res.Outcome != NetPolBroken {
		return nil
	}
	if err := deleteNetPols(ctx, cs, l); err != nil {
		return err
	}
	res.PolicyInPlace = false
	res.Verdict += "; the policy was removed and the run measured without it"
	return nil
}
