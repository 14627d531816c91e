package labtarget

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// How long an allowed probe may take to connect, and how long a denied
// one must stay unanswered to count as dropped (a lab path answers in
// well under a millisecond; a refusal would come back at once).
const (
	allowedProbeTimeout = 2 * time.Second
	deniedProbeTimeout  = 500 * time.Millisecond
)

// Probe is one enforcement probe: a TCP connection from one pod to a
// listener in another, and what happened.
type Probe struct {
	From string `json:"from"`
	To   string `json:"to"`   // "node1-pod0 198.19.1.10:40123"
	Want string `json:"want"` // "connect" or "drop"
	Got  string `json:"got"`  // "connected", "dropped (no answer in 500ms)", or the error
}

// checkEnforcement proves the policy holds before anything is measured:
// a client connects to a server; a pod outside the clients cannot reach
// that server (ingress), and the client cannot reach a pod outside the
// servers (egress), both dropped and counted by the kernel.
func (t *Target) checkEnforcement(ctx context.Context, clients, servers []string) error {
	c := &t.policy.check
	what := "policy " + c.Enforcer
	client, server := clients[0], servers[0]
	if err := t.probe(what, client, server, "connect", c); err != nil {
		return err
	}
	before, err := t.policyDrops(ctx)
	if err != nil {
		return err
	}
	denied := 0
	if from := t.otherPod(append(slices.Clone(clients), server)); from != "" {
		if err := t.probe(what, from, server, "drop", c); err != nil {
			return err
		}
		denied++
	} else {
		c.Skipped = append(c.Skipped, "ingress: every pod but "+server+" is a client")
	}
	if to := t.otherPod(append(slices.Clone(servers), clients...)); to != "" {
		if err := t.probe(what, client, to, "drop", c); err != nil {
			return err
		}
		denied++
	} else {
		c.Skipped = append(c.Skipped, "egress: every pod but the clients is a server")
	}
	if denied == 0 {
		return errors.New("policy: no pod outside the allowed sets to probe from or to; a lab with more pods (--pods-per-node) can prove enforcement")
	}
	after, err := t.policyDrops(ctx)
	if err != nil {
		return err
	}
	c.Drops = after - before
	if c.Drops < uint64(denied) {
		return fmt.Errorf("policy %s: the denied probes timed out but the kernel counted %d drops for %d probes: something else dropped them", c.Enforcer, c.Drops, denied)
	}
	return nil
}

// otherPod is the first lab pod not in names, "" if none.
func (t *Target) otherPod(names []string) string {
	for _, n := range t.lab.Nodes {
		for _, p := range n.Pods {
			if !slices.Contains(names, p.Name) {
				return p.Name
			}
		}
	}
	return ""
}

// policyDrops sums the enforcers' kernel drop counters.
func (t *Target) policyDrops(ctx context.Context) (uint64, error) {
	var sum uint64
	for _, e := range t.policy.enforcers {
		d, err := e.Drops(ctx)
		if err != nil {
			return 0, fmt.Errorf("policy %s: reading drops: %w", e.Name(), err)
		}
		sum += d
	}
	return sum, nil
}

// probe connects from pod from to a fresh listener in pod to, records it
// in c, and returns an error when the outcome is not want; what names the
// feature being checked in the error ("policy iptables", "flows nflog").
func (t *Target) probe(what, from, to, want string, c *PolicyCheck) error {
	src, err := t.lab.Endpoint(from)
	if err != nil {
		return err
	}
	dst, err := t.lab.Endpoint(to)
	if err != nil {
		return err
	}
	ln, err := listenIn(dst)
	if err != nil {
		return fmt.Errorf("policy probe: listener in %s: %w", to, err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	timeout := allowedProbeTimeout
	if want == "drop" {
		timeout = deniedProbeTimeout
	}
	p := Probe{From: from, To: to + " " + ln.Addr().String(), Want: want}
	err = netnsx.Do(src.NetnsPath(), func() error {
		conn, err := net.DialTimeout("tcp", ln.Addr().String(), timeout)
		if err == nil {
			conn.Close()
		}
		return err
	})
	switch {
	case err == nil:
		p.Got = "connected"
	case isTimeout(err):
		p.Got = fmt.Sprintf("dropped (no answer in %s)", timeout)
	default:
		p.Got = err.Error()
	}
	c.Probes = append(c.Probes, p)
	switch {
	case want == "connect" && err != nil:
		return fmt.Errorf("%s: the benchmark's own traffic is blocked: %s → %s: %s", what, from, p.To, p.Got)
	case want == "drop" && err == nil:
		return fmt.Errorf("%s is not enforced: %s reached %s, which it denies", what, from, p.To)
	case want == "drop" && !isTimeout(err):
		return fmt.Errorf("%s: the denied probe %s → %s was not dropped: %s", what, from, p.To, p.Got)
	}
	return nil
}

// isTimeout tells a connect that got no answer (dropped) from one that
// was refused or failed otherwise.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// listenIn opens a TCP listener on an ephemeral port of e's address,
// inside e's namespace.
func listenIn(e lab.Endpoint) (net.Listener, error) {
	var ln net.Listener
	err := netnsx.Do(e.NetnsPath(), func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(e.IP, "0"))
		return err
	})
	return ln, err
}
