package part

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
)

// How long an allowed probe may take to connect, and how long a denied
// one must stay unanswered to count as dropped (a lab path answers in
// well under a millisecond; a refusal would come back at once).
const (
	allowedProbeTimeout = 2 * time.Second
	deniedProbeTimeout  = 500 * time.Millisecond
)

// Probe connects from pod from to a fresh listener in pod to, and
// returns what happened and an error when the outcome is not want
// ("connect" or "drop"); what names the part being checked in the error
// ("policy iptables", "flows nflog").
func Probe(l *lab.Lab, what, from, to, want string) (results.PolicyProbe, error) {
	src, err := l.Endpoint(from)
	if err != nil {
		return results.PolicyProbe{}, err
	}
	dst, err := l.Endpoint(to)
	if err != nil {
		return results.PolicyProbe{}, err
	}
	ln, err := listenIn(dst)
	if err != nil {
		return results.PolicyProbe{}, fmt.Errorf("%s probe: listener in %s: %w", what, to, err)
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
	p := results.PolicyProbe{From: from, To: to + " " + ln.Addr().String(), Want: want}
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
	switch {
	case want == "connect" && err != nil:
		return p, fmt.Errorf("%s: the benchmark's own traffic is blocked: %s → %s: %s", what, from, p.To, p.Got)
	case want == "drop" && err == nil:
		return p, fmt.Errorf("%s is not enforced: %s reached %s, which it denies", what, from, p.To)
	case want == "drop" && !isTimeout(err):
		return p, fmt.Errorf("%s: the denied probe %s → %s was not dropped: %s", what, from, p.To, p.Got)
	}
	return p, nil
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

// OtherPod is the first lab pod not in names, "" if none: a pod outside
// a policy's allowed sets, to probe from or to.
func OtherPod(l *lab.Lab, names []string) string {
	for _, n := range l.Nodes {
		for _, p := range n.Pods {
			if !slices.Contains(names, p.Name) {
				return p.Name
			}
		}
	}
	return ""
}
