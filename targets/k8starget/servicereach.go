package k8starget

import (
	"context"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
)

// Reachability check of the run's test Services: kube-proxy or Cilium
// programs a new Service some time after the API server has it (a second or
// more on a busy node), and a run that measured at once recorded the first
// samples of pod-to-service as "connection refused". So before anything is
// measured, each client that goes through a Service completes a short
// TCP_RR through it.
const (
	reachProbe    = 200 * time.Millisecond // one attempt's TCP_RR
	reachInterval = 300 * time.Millisecond // between attempts
)

// serviceRoute is one client endpoint measuring through one Service.
type serviceRoute struct {
	client, server, clusterIP string
}

// serviceRoutes are the (client, Service) routes of the run's placements'
// pairs that go through a Service and are not skipped, each once.
func (t *Target) serviceRoutes() []serviceRoute {
	var out []serviceRoute
	seen := map[serviceRoute]bool{}
	for _, name := range t.cfg.Placements {
		if _, skip := t.skipped[name]; skip || !isServicePlacement(name) {
			continue
		}
		for k := range max(1, t.cfg.Pairs) {
			eps, err := pairEndpoints(name, k)
			if err != nil {
				continue
			}
			ip, ok := t.services[eps[1]]
			if !ok {
				continue
			}
			r := serviceRoute{client: eps[0], server: eps[1], clusterIP: ip}
			if _, ok := t.agents[r.client]; ok && !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// waitServicesReachable waits until every serviceRoute completes a TCP_RR
// through its Service without an error, or fails after timeout naming the
// Service, the client's node and the last error.
func (t *Target) waitServicesReachable(ctx context.Context, timeout time.Duration) error {
	if len(t.serviceRoutes()) == 0 {
		return nil
	}
	t.progress("waiting until the Service proxy forwards the test Services ...")
	took, err := t.servicesReachable(ctx, timeout)
	if err != nil {
		t.progress(" failed\n")
		return err
	}
	t.progress(" reachable in %s\n", took.Round(100*time.Millisecond))
	return nil
}

// servicesReachable is waitServicesReachable without progress lines, for a
// step that reports the wait in its own line (a twin's switch); it returns
// how long the wait took.
func (t *Target) servicesReachable(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for _, r := range t.serviceRoutes() {
		if err := t.waitReachable(ctx, r, deadline, timeout); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

func (t *Target) waitReachable(ctx context.Context, r serviceRoute, deadline time.Time, timeout time.Duration) error {
	c := t.agents[r.client]
	o := engine.Options{Test: engine.TCPRR, Host: r.clusterIP, RunnerOptions: engine.RunnerOptions{Duration: engine.Duration(reachProbe)}, Streams: 1}
	var last string
	for {
		rctx, cancel := context.WithTimeout(ctx, max(time.Until(deadline), 0)+30*time.Second)
		res, err := agent.RunAs[engine.Result](rctx, c, results.KindRR, &o)
		cancel()
		switch {
		case err != nil:
			last = oneLine(err.Error())
		case res.Errors > 0 || res.Transactions == 0:
			last = fmt.Sprintf("%d transactions, %d errors %v", res.Transactions, res.Errors, res.ErrorsByCause)
		default:
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !time.Now().Before(deadline) {
			node := ""
			if p := t.pods[r.client]; p != nil {
				node = " on node " + p.Spec.NodeName
			}
			return fmt.Errorf("service %s/%s (%s:%d) not reachable from %s%s within %s: is its Service proxy (kube-proxy, Cilium) running on that node? last attempt: %s",
				t.cfg.Namespace, ServiceName(r.server), r.clusterIP, engine.DefaultPort[engine.TCPRR], r.client, node, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(reachInterval):
		}
	}
}
