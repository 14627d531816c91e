package k8starget

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// policyToggle is the policy twin's part: the NetworkPolicy check's
// policy (netpol.go) applied for the twin's samples and removed for the
// others', each switch proved by the check's probes: on, the denied
// prober's connections are dropped while the client's connect; off,
// every probe connects again (a CNI removes a policy asynchronously too).
type policyToggle struct {
	t   *Target
	run *netPolRun
}

func (p *policyToggle) Part() string   { return "policy" }
func (p *policyToggle) Restarts() bool { return false }
func (p *policyToggle) How() string {
	return fmt.Sprintf("NetworkPolicy %s in namespace %s: %v accept every port from %s only (and the control port %d from anywhere); proved by %s's connections dropped and %s's connecting (on), and every probe connecting (off)",
		NetPolName, p.t.cfg.Namespace, netPolServers(p.t.layout), netPolClient, ControlPort, NetPolDeniedEndpoint, netPolClient)
}

// Check runs the NetworkPolicy check (baseline, policy, bounded wait):
// anything but enforced refuses the twin with the check's verdict. The
// policy is then removed and that proved, so the rounds start with it off.
func (p *policyToggle) Check(ctx context.Context) (bool, string, error) {
	pod := p.t.pods[NetPolDeniedEndpoint]
	if len(netPolServers(p.t.layout)) == 0 || pod == nil {
		return false, "", errors.New("no server on the pod network runs on this cluster (the placements that have one were skipped)")
	}
	denied, err := p.t.dialAgent(ctx, NetPolDeniedEndpoint, pod)
	if err != nil {
		return false, "", fmt.Errorf("the denied prober: %w", err)
	}
	ips := map[string]string{}
	for ep, pd := range p.t.pods {
		ips[ep] = pd.Status.PodIP
	}
	p.run = &netPolRun{cs: p.t.cs, layout: p.t.layout, ips: ips, baseline: p.t.cfg.Timeout,
		probers: map[string]prober{netPolClient: p.t.agents[netPolClient], NetPolDeniedEndpoint: denied}}
	c, err := p.run.run(ctx)
	if err != nil {
		return false, "", err
	}
	p.t.prov.NetworkPolicy = c
	if c.Outcome != NetPolEnforced {
		err := errors.New(c.Verdict)
		if derr := deleteNetPols(context.WithoutCancel(ctx), p.t.cs, p.t.layout); derr != nil {
			err = errors.Join(err, derr)
		}
		c.PolicyInPlace = false
		return false, "", err
	}
	off, err := p.Set(ctx, false)
	if err != nil {
		return false, "", err
	}
	c.PolicyInPlace = false
	return false, fmt.Sprintf("%s; %s", c.Verdict, off), nil
}

// Set applies or removes the policy and polls until the probes show it.
func (p *policyToggle) Set(ctx context.Context, on bool) (string, error) {
	start := time.Now()
	var done func([]NetPolProbe) bool
	if on {
		for _, np := range networkPolicies(p.t.layout) {
			if _, err := p.t.cs.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, np, metav1.CreateOptions{FieldManager: ManagedBy}); err != nil {
				return "", fmt.Errorf("create NetworkPolicy %s/%s: %w", np.Namespace, np.Name, err)
			}
		}
		done = func(pr []NetPolProbe) bool { return decideNetPol(pr) == NetPolEnforced }
	} else {
		if err := deleteNetPols(ctx, p.t.cs, p.t.layout); err != nil {
			return "", err
		}
		done = allConnected
	}
	probes, attempts, ok, err := p.run.pollUntil(ctx, netPolWait, done)
	if err != nil {
		return "", err
	}
	took := time.Since(start).Round(100 * time.Millisecond)
	switch {
	case !ok && on:
		return "", fmt.Errorf("NetworkPolicy %s not enforced within %s (%d attempts): %s", NetPolName, netPolWait, attempts, probesText(probes))
	case !ok:
		return "", fmt.Errorf("NetworkPolicy %s removed, but not every probe connects again within %s (%d attempts): %s", NetPolName, netPolWait, attempts, probesText(probes))
	case on:
		return fmt.Sprintf("%s enforced %s after it was applied (%d attempts): %s", NetPolName, took, attempts, probesText(probes)), nil
	}
	return fmt.Sprintf("%s removed; every probe connects again %s after (%d attempts): %s", NetPolName, took, attempts, probesText(probes)), nil
}

func allConnected(probes []NetPolProbe) bool {
	for _, p := range probes {
		if !p.Connected {
			return false
		}
	}
	return len(probes) > 0
}

// probesText is "netpol-denied → node1-pod0 (10.0.1.5:5203) dropped,
// node0-pod0 → node1-pod0 (…) connected".
func probesText(probes []NetPolProbe) string {
	var parts []string
	for _, p := range probes {
		got := "dropped"
		if p.Connected {
			got = "connected"
		}
		parts = append(parts, fmt.Sprintf("%s → %s (%s) %s", p.From, p.To, p.Addr, got))
	}
	return strings.Join(parts, ", ")
}
