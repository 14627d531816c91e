package k8starget

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
)

// Outcomes of the NetworkPolicy check.
const (
	// NetPolEnforced: the denied probe was dropped and the allowed one
	// connected.
	NetPolEnforced = "enforced"
	// NetPolNotEnforced: the denied probe still connected when the wait
	// ended: the CNI does not enforce NetworkPolicy (the bridge CNI).
	NetPolNotEnforced = "not enforced"
	// NetPolBroken: the allowed probe failed too: the policy (or the CNI's
	// implementation of it) blocks the run's own traffic.
	NetPolBroken = "broken"
)

// netPolWait bounds how long the check polls for enforcement after the
// policy is applied (CNIs program it asynchronously, within seconds);
// netPolInterval is the pause between attempts. Tests shorten both.
var (
	netPolWait     = 30 * time.Second
	netPolInterval = 300 * time.Millisecond
)

// NetPolProbe is one connection attempt of the check: a short TCP_RR from
// an agent to a server pod's IP and data port.
type NetPolProbe struct {
	From      string `json:"from"`    // endpoint of the prober
	To        string `json:"to"`      // server endpoint
	Addr      string `json:"addr"`    // pod IP:port
	Allowed   bool   `json:"allowed"` // the policy allows it
	Connected bool   `json:"connected"`
	Detail    string `json:"detail"` // transactions, or why it failed
}

// NetPolCheck is what the results record of the check.
type NetPolCheck struct {
	Outcome  string   `json:"outcome"` // NetPolEnforced, NetPolNotEnforced or NetPolBroken
	Verdict  string   `json:"verdict"` // one sentence saying what the outcome means
	Policies []string `json:"policies"`
	Servers  []string `json:"servers"` // the endpoints the policy selects
	// Baseline are the probes before any policy: all connected, so a
	// failing denied probe afterwards is the policy's doing.
	Baseline []NetPolProbe `json:"baseline"`
	Probes   []NetPolProbe `json:"probes"` // the last attempt's
	Attempts int           `json:"attempts"`
	WaitedS  float64       `json:"waited_s"` // from the policy's creation to the last attempt
	// EnforcedAfterS is how long after its creation the policy was first
	// seen enforced (only with NetPolEnforced).
	EnforcedAfterS *float64 `json:"enforced_after_s,omitempty"`
	// PolicyInPlace says whether the run measured with the policy applied
	// (it is removed at once when the outcome is broken).
	PolicyInPlace bool `json:"policy_in_place"`
	// Hubble is Cilium's enable-hubble as found in cilium-config (only
	// where Cilium is detected): flow visibility on or off during the run.
	Hubble string `json:"hubble,omitempty"`
	// CiliumL4 and CiliumL7 are the L3/L4 and the L7
	// CiliumNetworkPolicy (only where Cilium is detected;
	// netpol_cilium.go).
	CiliumL4 *CiliumL4 `json:"cilium_l4,omitempty"`
	CiliumL7 *CiliumL7 `json:"cilium_l7,omitempty"`
}

// prober runs a test from one agent (an *agent.Client).
type prober = agent.KindRunner

// netPolRun is one check: the layout, the pod IPs of its endpoints and
// the agents that probe (the client and the denied prober).
type netPolRun struct {
	cs       kubernetes.Interface
	layout   Layout
	ips      map[string]string // endpoint → pod IP
	probers  map[string]prober // netPolClient and NetPolDeniedEndpoint
	baseline time.Duration     // bound of the wait for the baseline
}

// decideNetPol turns one attempt's probes into an outcome: any allowed
// probe failing is broken, else any denied probe connecting is not
// enforced, else enforced.
func decideNetPol(probes []NetPolProbe) string {
	notEnforced := false
	for _, p := range probes {
		switch {
		case p.Allowed && !p.Connected:
			return NetPolBroken
		case !p.Allowed && p.Connected:
			notEnforced = true
		}
	}
	if notEnforced {
		return NetPolNotEnforced
	}
	return NetPolEnforced
}

// attempt probes every selected server from the client and from the
// denied prober.
func (r *netPolRun) attempt(ctx context.Context) []NetPolProbe {
	var out []NetPolProbe
	for _, srv := range netPolServers(r.layout) {
		for _, from := range []string{netPolClient, NetPolDeniedEndpoint} {
			out = append(out, r.probe(ctx, from, srv))
		}
	}
	return out
}

// probe is a 200 ms TCP_RR from an agent to a server pod's IP, allowed
// by the NetworkPolicy from the client only.
func (r *netPolRun) probe(ctx context.Context, from, to string) NetPolProbe {
	return r.probeTo(ctx, from, to, from == netPolClient)
}

// probeTo is a 200 ms TCP_RR from an agent to another's pod IP; allowed
// says whether the policy under test allows it. A dropped SYN ends with
// the run (the engine stops connecting at its deadline).
func (r *netPolRun) probeTo(ctx context.Context, from, to string, allowed bool) NetPolProbe {
	port := engine.DefaultPort[engine.TCPRR]
	p := NetPolProbe{From: from, To: to, Addr: net.JoinHostPort(r.ips[to], strconv.Itoa(port)), Allowed: allowed}
	o := engine.Options{Test: engine.TCPRR, Host: r.ips[to], RunnerOptions: engine.RunnerOptions{Duration: engine.Duration(reachProbe)}, Streams: 1}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := agent.RunAs[engine.Result](rctx, r.probers[from], results.KindRR, &o)
	switch {
	case err != nil:
		p.Detail = oneLine(err.Error())
	case res.Errors > 0 || res.Transactions == 0:
		p.Detail = fmt.Sprintf("%d transactions, %d errors %v", res.Transactions, res.Errors, res.ErrorsByCause)
	default:
		p.Connected = true
		p.Detail = fmt.Sprintf("%d transactions", res.Transactions)
	}
	return p
}

// run checks the baseline, applies the policy and polls until it is
// enforced or netPolWait has passed. It leaves the policy in place; the
// caller removes it (broken) or the run's cleanup does.
func (r *netPolRun) run(ctx context.Context) (*NetPolCheck, error) {
	c := &NetPolCheck{Servers: netPolServers(r.layout)}
	if err := r.waitBaseline(ctx, c); err != nil {
		return nil, err
	}
	opts := metav1.CreateOptions{FieldManager: ManagedBy}
	for _, np := range networkPolicies(r.layout) {
		if _, err := r.cs.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, np, opts); err != nil {
			return nil, fmt.Errorf("create NetworkPolicy %s/%s: %w", np.Namespace, np.Name, err)
		}
		c.Policies = append(c.Policies, np.Name)
	}
	c.PolicyInPlace = true
	applied := time.Now()
	probes, attempts, enforced, err := r.pollUntil(ctx, netPolWait, func(p []NetPolProbe) bool { return decideNetPol(p) == NetPolEnforced })
	if err != nil {
		return nil, err
	}
	c.Probes, c.Attempts, c.Outcome = probes, attempts, decideNetPol(probes)
	c.WaitedS = time.Since(applied).Seconds()
	if enforced {
		after := c.WaitedS
		c.EnforcedAfterS = &after
	}
	c.Verdict = netPolVerdict(c)
	return c, nil
}

// pollUntil repeats the probes every netPolInterval until done holds for
// an attempt or wait has passed (CNIs program policy asynchronously); it
// returns the last attempt's probes and how many attempts it made.
func (r *netPolRun) pollUntil(ctx context.Context, wait time.Duration, done func([]NetPolProbe) bool) ([]NetPolProbe, int, bool, error) {
	return r.pollProbes(ctx, wait, r.attempt, done)
}

// pollProbes is pollUntil with other probes than the check's.
func (r *netPolRun) pollProbes(ctx context.Context, wait time.Duration, attempt func(context.Context) []NetPolProbe, done func([]NetPolProbe) bool) ([]NetPolProbe, int, bool, error) {
	deadline := time.Now().Add(wait)
	for attempts := 1; ; attempts++ {
		probes := attempt(ctx)
		if ctx.Err() != nil {
			return nil, attempts, false, ctx.Err()
		}
		if done(probes) {
			return probes, attempts, true, nil
		}
		if !time.Now().Before(deadline) {
			return probes, attempts, false, nil
		}
		select {
		case <-ctx.Done():
			return nil, attempts, false, ctx.Err()
		case <-time.After(netPolInterval):
		}
	}
}

// waitBaseline waits until every probe connects before any policy exists
// (the denied prober has just started), or fails naming the probe.
func (r *netPolRun) waitBaseline(ctx context.Context, c *NetPolCheck) error {
	deadline := time.Now().Add(r.baseline)
	for {
		c.Baseline = r.attempt(ctx)
		var failed []string
		for _, p := range c.Baseline {
			if !p.Connected {
				failed = append(failed, fmt.Sprintf("%s to %s (%s): %s", p.From, p.To, p.Addr, p.Detail))
			}
		}
		if len(failed) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("NetworkPolicy check: before any policy was applied, %s did not connect within %s: the check cannot tell a dropped probe from a broken path", strings.Join(failed, "; "), r.baseline)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(netPolInterval):
		}
	}
}

// netPolVerdict says in one sentence what the outcome means, naming the
// probe that decided it.
func netPolVerdict(c *NetPolCheck) string {
	wait := time.Duration(c.WaitedS * float64(time.Second)).Round(100 * time.Millisecond)
	for _, p := range c.Probes {
		switch {
		case c.Outcome == NetPolBroken && p.Allowed && !p.Connected:
			return fmt.Sprintf("NetworkPolicy blocks the run's own traffic: the allowed probe from %s to %s (%s) failed %s after the policy was applied: %s", p.From, p.To, p.Addr, wait, p.Detail)
		case c.Outcome == NetPolNotEnforced && !p.Allowed && p.Connected:
			return fmt.Sprintf("this CNI does not enforce NetworkPolicy: the denied probe from %s to %s (%s) still connected %s after the policy was applied", p.From, p.To, p.Addr, wait)
		}
	}
	return fmt.Sprintf("NetworkPolicy enforced %s after it was applied: the denied probes from %s were dropped, the client's connected", wait, NetPolDeniedEndpoint)
}

// deleteNetPols removes the check's policies (when they break the run's
// own traffic); the run's cleanup removes them in any other case.
func deleteNetPols(ctx context.Context, cs kubernetes.Interface, l Layout) error {
	for _, np := range networkPolicies(l) {
		err := cs.NetworkingV1().NetworkPolicies(np.Namespace).Delete(ctx, np.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete NetworkPolicy %s/%s: %w", np.Namespace, np.Name, err)
		}
	}
	return nil
}
