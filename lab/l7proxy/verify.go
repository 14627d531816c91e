package l7proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// Probe sends one request from the client pod's namespace to addr
// ("ip:port") on a new connection, and returns the status and the
// proxies the response went through (the HeaderProxy values, from the
// server side).
func (d *Deployment) Probe(ctx context.Context, addr, method, path string) (status int, proxies []string, err error) {
	ns := d.Spec.Client.Netns
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		var c net.Conn
		err := netnsx.Do(ns, func() (err error) {
			c, err = (&net.Dialer{Timeout: 3 * time.Second}).DialContext(ctx, "tcp4", a)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("l7proxy: %s %s%s from %s: %w", method, addr, path, d.Spec.Client.Name, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Values(HeaderProxy), nil
}

// Verify proves the policy holds for every server, before measuring: an
// allowed request gets 200 from the server through every expected proxy,
// a request to the denied path gets 403 from the enforcing proxy, and
// that proxy's denied counter went up.
func (d *Deployment) Verify(ctx context.Context) error {
	method, path := d.Spec.allowedProbe()
	for _, s := range d.Spec.Servers {
		want, enforcer := d.PathOf(s)
		before, err := d.Counters()
		if err != nil {
			return err
		}
		addr := net.JoinHostPort(s.IP, strconv.Itoa(d.Spec.Port))
		st, via, err := d.Probe(ctx, addr, method, path)
		if err != nil {
			return err
		}
		if st != http.StatusOK || !slices.Equal(via, want) {
			return fmt.Errorf("l7proxy: allowed %s %s%s: status %d through %v, want 200 through %v", method, addr, path, st, via, want)
		}
		st, via, err = d.Probe(ctx, addr, "GET", d.Spec.deniedPath())
		if err != nil {
			return err
		}
		if st != http.StatusForbidden || !slices.Contains(via, enforcer) {
			return fmt.Errorf("l7proxy: denied GET %s%s: status %d through %v, want 403 from %s", addr, d.Spec.deniedPath(), st, via, enforcer)
		}
		after, err := d.Counters()
		if err != nil {
			return err
		}
		if after[enforcer].Denied <= before[enforcer].Denied {
			return fmt.Errorf("l7proxy: %s answered 403 but its denied counter stayed at %d", enforcer, after[enforcer].Denied)
		}
	}
	return nil
}

// PathOf is the proxies a response from server s passes, server side
// first (as their headers appear), and the one enforcing the rules.
func (d *Deployment) PathOf(s PodRef) (want []string, enforcer string) {
	switch d.Spec.Model {
	case PerNode:
		return []string{"node-" + s.Node}, "node-" + s.Node
	case PerNodeEgress:
		return []string{"node-" + d.Spec.Client.Node}, "node-" + d.Spec.Client.Node
	}
	return []string{"server-" + s.Name, "client-" + d.Spec.Client.Name}, "server-" + s.Name
}
