package k8starget

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/datapath"
)

// The churn's side of ClusterServices (PerChange): Program writes only
// what changed since the last Program, from what it wrote (no list of the
// namespace per sync), and each Program's changes are awaited on their
// own (servicescale_await.go) until every node holds each changed Service
// as written, by the probes' keys: a Service created is
// held when its key is there (kube-proxy writes a Service's chains and
// its endpoints' in one transaction; Cilium's frontend is named once its
// backend slots are written), one removed when its key is gone,
// and one whose endpoints changed when every endpoint's key is there and
// no removed endpoint's is (counts cannot see an endpoint replaced; the
// probe names kube-proxy's endpoint chains and Cilium's backends alike).

// serviceCheck is what a node must hold of one changed dummy Service.
type serviceCheck struct {
	port    nodeprobe.ServicePort
	present bool             // false: removed, its key must be gone
	want    []netip.AddrPort // endpoints that must be live (updated Services)
	gone    []netip.AddrPort // endpoints that must not be
}

// programChanges is Program for PerChange: creates, endpoint updates and
// removals against what the last Programs wrote.
func (c *ClusterServices) programChanges(ctx context.Context, want map[string]datapath.Service) error {
	if c.written == nil {
		// The first Program: dummies of this run may be in the namespace
		// already (the twins share this datapath, so not theirs: a write
		// that failed after the server took it); their state is unknown,
		// so they are rewritten or removed.
		have, err := c.existing(ctx)
		if err != nil {
			return err
		}
		c.written = map[string]datapath.Service{}
		for name := range have {
			if _, ok := want[name]; !ok {
				c.written[name] = datapath.Service{} // removed below
			}
		}
		for name := range have {
			if s, ok := want[name]; ok {
				if err := c.update(ctx, name, datapath.Service{}, s); err != nil {
					return err
				}
			}
		}
	}
	var create, update, remove []string
	c.mu.Lock()
	for name, s := range want {
		old, ok := c.written[name]
		switch {
		case !ok:
			create = append(create, name)
		case !sameEndpoints(old.Endpoints, s.Endpoints):
			update = append(update, name)
		}
	}
	for name := range c.written {
		if _, ok := want[name]; !ok {
			remove = append(remove, name)
		}
	}
	c.mu.Unlock()
	sort.Strings(create)
	sort.Strings(update)
	sort.Strings(remove)
	err := c.parallel(ctx, "creating", create, func(ctx context.Context, name string) error {
		return c.create(ctx, name, want[name])
	})
	if err == nil {
		err = c.parallel(ctx, "updating", update, func(ctx context.Context, name string) error {
			c.mu.Lock()
			old := c.written[name]
			c.mu.Unlock()
			return c.update(ctx, name, old, want[name])
		})
	}
	if err == nil {
		err = c.parallel(ctx, "deleting", remove, c.removeWritten)
	}
	return err
}

// update rewrites the EndpointSlices of dummy name from old's endpoints
// to s's (one per target port: updated in place, made or deleted as the
// ports come and go).
func (c *ClusterServices) update(ctx context.Context, name string, old, s datapath.Service) error {
	_, slices := dummyObjects(c.Namespace, c.RunID, name, s)
	keep := map[string]bool{}
	for _, sl := range slices {
		keep[sl.Name] = true
		if err := c.write(ctx); err != nil {
			return err
		}
		_, err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).Update(ctx, sl, metav1.UpdateOptions{FieldManager: ManagedBy})
		if apierrors.IsNotFound(err) {
			if err := c.write(ctx); err != nil {
				return err
			}
			_, err = c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).Create(ctx, sl, metav1.CreateOptions{FieldManager: ManagedBy})
		}
		if err != nil {
			return fmt.Errorf("update EndpointSlice %s: %w", sl.Name, err)
		}
	}
	if old.Name != "" {
		_, oldSlices := dummyObjects(c.Namespace, c.RunID, name, old)
		for _, sl := range oldSlices {
			if keep[sl.Name] {
				continue
			}
			if err := c.write(ctx); err != nil {
				return err
			}
			if err := c.Clientset.DiscoveryV1().EndpointSlices(c.Namespace).Delete(ctx, sl.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete EndpointSlice %s: %w", sl.Name, err)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written[name] = s
	if ip, ok := c.clusterIPs[name]; ok {
		c.addCheck(name, ip, s, old.Endpoints)
	}
	return nil
}

// removeWritten deletes dummy name's EndpointSlices (named from what was
// written) and its Service.
func (c *ClusterServices) removeWritten(ctx context.Context, name string) error {
	c.mu.Lock()
	old := c.written[name]
	c.mu.Unlock()
	names := []string{}
	if old.Name != "" {
		_, sl := dummyObjects(c.Namespace, c.RunID, name, old)
		for _, s := range sl {
			names = append(names, s.Name)
		}
	} else {
		bySvc, err := c.slicesByService(ctx)
		if err != nil {
			return err
		}
		names = bySvc[name]
	}
	if err := c.deleteDummy(ctx, name, names); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.written, name)
	if ip, ok := c.clusterIPs[name]; ok {
		c.checks[name] = &serviceCheck{port: c.port(name, ip, old)}
		delete(c.clusterIPs, name)
	}
	return nil
}

// created records a dummy the API server now holds, with its ClusterIP.
func (c *ClusterServices) created(name string, ip netip.Addr, s datapath.Service) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written != nil {
		c.written[name] = s
	}
	if c.clusterIPs == nil {
		c.clusterIPs = map[string]netip.Addr{}
	}
	c.clusterIPs[name] = ip
	if c.PerChange {
		c.checks[name] = &serviceCheck{port: c.port(name, ip, s), present: true}
	}
}

// addCheck records that the endpoints of name changed from old to s's:
// merged with an earlier Program's check not yet held, endpoints removed
// then are still gone unless s has them again. c.mu is held.
func (c *ClusterServices) addCheck(name string, ip netip.Addr, s datapath.Service, old []datapath.Endpoint) {
	ck := &serviceCheck{port: c.port(name, ip, s), present: true}
	have := map[netip.AddrPort]bool{}
	for _, ep := range s.Endpoints {
		ap := netip.AddrPortFrom(ep.IP, ep.Port)
		have[ap] = true
		ck.want = append(ck.want, ap)
	}
	gone := old
	if prev := c.latest[name]; prev != nil {
		for _, ap := range prev.gone {
			gone = append(gone, datapath.Endpoint{IP: ap.Addr(), Port: ap.Port()})
		}
	}
	for _, ep := range gone {
		ap := netip.AddrPortFrom(ep.IP, ep.Port)
		if !have[ap] && !slices.Contains(ck.gone, ap) {
			ck.gone = append(ck.gone, ap)
		}
	}
	c.checks[name] = ck
}

// port is how the probes key dummy name.
func (c *ClusterServices) port(name string, ip netip.Addr, s datapath.Service) nodeprobe.ServicePort {
	return nodeprobe.ServicePort{Namespace: c.Namespace, Name: name, PortName: s.PortName,
		Protocol: string(s.Protocol), ClusterIP: ip, Port: s.Port}
}

// sameEndpoints tells whether a and b hold the same endpoints.
func sameEndpoints(a, b []datapath.Endpoint) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[datapath.Endpoint]int, len(a))
	for _, ep := range a {
		seen[ep]++
	}
	for _, ep := range b {
		if seen[ep]--; seen[ep] < 0 {
			return false
		}
	}
	return true
}
