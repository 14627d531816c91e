// Package policytest holds the root tests every policy enforcer must
// pass, shared by the enforcer packages' tests: a one-node lab with three
// pods (server, client, other), enforcement checked with real TCP
// connects, read back after hand edits, reprogrammed, closed without
// leftovers, and programmed at scale. Only tests import it.
package policytest

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/labtest"
	"github.com/cnibench/cnibench/lab/policy"
)

// Port is the server pod's TCP port the policies allow.
const Port = 8080

// Open is an enforcer's constructor (a policy.Variant's Open).
type Open func(policy.Site) (policy.Enforcer, error)

// Env is a one-node lab with three pods on routed veths, as the lab
// builds them: pod0 serves, pod1 is the allowed client, pod2 the other.
type Env struct {
	Lab                   *lab.Lab
	Site                  policy.Site
	Server, Client, Other lab.Endpoint
	ifaces                map[string]string // pod -> host interface
}

// NewEnv brings the lab up (root), removed at cleanup.
func NewEnv(t *testing.T, tag string) *Env {
	t.Helper()
	l := labtest.NewLabSized(t, tag, 1, 3)
	node := labtest.Endpoint(t, l, "node0")
	e := &Env{Lab: l, Site: policy.Site{Netns: node.NetnsPath(), Node: "node0", StateDir: l.Config.StateDir, Prefix: l.Prefix},
		Server: labtest.Endpoint(t, l, "node0-pod0"), Client: labtest.Endpoint(t, l, "node0-pod1"),
		Other: labtest.Endpoint(t, l, "node0-pod2"), ifaces: map[string]string{}}
	for _, p := range []lab.Endpoint{e.Server, e.Client, e.Other} {
		var err error
		e.ifaces[p.Name], err = l.HostIface(p.Name)
		if err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// Pod is the PodPolicy skeleton of ep (no direction selected).
func (e *Env) Pod(ep lab.Endpoint) policy.PodPolicy {
	return policy.PodPolicy{Pod: ep.Name, Node: ep.Node, IP: netip.MustParseAddr(ep.IP), HostIface: e.ifaces[ep.Name]}
}

// Allow is a rule allowing TCP Port from or to the given pods.
func Allow(eps ...lab.Endpoint) policy.Rule {
	r := policy.Rule{Ports: []policy.Port{{Protocol: datapath.TCP, Port: Port}}}
	for _, ep := range eps {
		r.Peers = append(r.Peers, netip.PrefixFrom(netip.MustParseAddr(ep.IP), 32))
	}
	return r
}

// ClientServer is the spec of the checks: the server admits only the
// client on Port (with a second, dummy peer, so netfilter renders the
// rule with a peer set); the client may only reach the server on Port
// (a single peer). extra rules go in front of the server's real one (a
// policy-scale step).
func (e *Env) ClientServer(extra ...policy.Rule) policy.Spec {
	srv, cli := e.Pod(e.Server), e.Pod(e.Client)
	in := Allow(e.Client)
	in.Peers = append(in.Peers, netip.MustParsePrefix("198.18.0.1/32"))
	srv.Ingress = append(append([]policy.Rule{}, extra...), in)
	cli.Egress = []policy.Rule{Allow(e.Server)}
	return policy.Spec{Pods: []policy.PodPolicy{srv, cli}}
}

// Dial connects from ep to the pod to on Port within timeout.
func Dial(from, to lab.Endpoint, timeout time.Duration) error {
	addr := net.JoinHostPort(to.IP, fmt.Sprint(Port))
	return netnsx.Do(from.NetnsPath(), func() error {
		c, err := net.DialTimeout("tcp4", addr, timeout)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// MustConnect fails the test unless from reaches to.
func MustConnect(t *testing.T, from, to lab.Endpoint) {
	t.Helper()
	if err := Dial(from, to, 2*time.Second); err != nil {
		t.Fatalf("%s -> %s:%d should connect: %v", from.Name, to.Name, Port, err)
	}
}

// MustBeDropped fails the test unless a connect from from to to times
// out (a dropped SYN; a refused connect would be a reset, not a drop).
func MustBeDropped(t *testing.T, from, to lab.Endpoint) {
	t.Helper()
	err := Dial(from, to, 300*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("%s -> %s:%d should be dropped (time out), got %v", from.Name, to.Name, Port, err)
	}
}
