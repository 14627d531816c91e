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
	if cil := t.prov.CNI; cil != nil && cil.Cilium != nil && res.Outcome != NetPolBroken {
		res.Hubble = or(cil.Cilium.EnableHubble, "not set")
		if res.CiliumL7, err = applyCiliumL7(ctx, t.cs, t.cfg.Dynamic, t.layout); err != nil {
			return err
		}
		t.ciliumL7 = res.CiliumL7.Applied
		if t.ciliumL7 {
			t.progress(" L7 rule: probing %s (200) and %s (403) ...", ciliumL7AllowedPath, ciliumL7DeniedPath)
			if err := l7Check(ctx, res.CiliumL7, t.agents[netPolClient], netPolServers(t.layout), ips, netPolWait, netPolInterval); err != nil {
				return err
			}
			t.progress(" %s;", map[bool]string{true: "verified", false: "NOT verified"}[res.CiliumL7.Verified])
			if !res.CiliumL7.Verified {
				t.prov.Notes = append(t.prov.Notes, "CiliumNetworkPolicy L7 rule: "+res.CiliumL7.Reason)
			}
		}
	}
	if err := settleNetPol(ctx, t.cs, t.layout, res); err != nil {
		return err
	}
	t.prov.NetworkPolicy = res
	t.prov.Notes = append(t.prov.Notes, "NetworkPolicy check: "+res.Outcome+": "+res.Verdict)
	t.progress(" %s\n", res.Outcome)
	if res.Outcome != NetPolEnforced {
		t.progress("warning: %s\n", res.Verdict)
	}
	return nil
}

// closeCiliumL7 removes the L7 policy the check applied (Close).
func (t *Target) closeCiliumL7() error {
	if !t.ciliumL7 || t.cfg.Dynamic == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
	defer cancel()
	return deleteCiliumL7(ctx, t.cfg.Dynamic, t.layout)
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
