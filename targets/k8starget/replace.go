package k8starget

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cnibench/cnibench/suite"
)

// The k8s target keeps its agents: a dead one is replaced by a new pod.
var (
	_ suite.AgentKeeper = (*Target)(nil)
	_ suite.DeathGracer = (*Target)(nil)
	_ suite.Readdresser = (*Target)(nil)
)

// deathGrace is how long a failed sample waits for an agent's death to be
// seen (suite.DeathGracer): the kubelet reports a killed container a
// second or two after its connections broke, and the death watch lists
// once per pollInterval. Tests shorten it.
var deathGrace = 5 * time.Second

// AgentReplacement is an agent pod that died during the run and the pod
// that took its place.
type AgentReplacement struct {
	Endpoint string    `json:"endpoint"`
	Node     string    `json:"node"`
	OldPod   string    `json:"old_pod"`
	NewPod   string    `json:"new_pod,omitempty"` // empty when the replacement failed
	Cause    string    `json:"cause"`
	At       time.Time `json:"at"`
	ReadyIn  string    `json:"ready_in,omitempty"` // from the death seen to the new agent answering
	Error    string    `json:"error,omitempty"`    // why no pod replaces it
}

// AgentDone implements suite.AgentKeeper: closed when the death watch
// sees the endpoint's agent pod die (nil: no agent there).
func (t *Target) AgentDone(endpoint string) <-chan struct{} { return t.deaths.deadChan(endpoint) }

// DeathGrace implements suite.DeathGracer.
func (t *Target) DeathGrace() time.Duration { return deathGrace }

// ServerAddr implements suite.Readdresser: a replaced pod-network server
// has a new pod IP (a Service's ClusterIP and a node's IP stay).
func (t *Target) ServerAddr(placement string) (string, error) {
	p, err := t.Placement(placement)
	return p.ServerAddr, err
}

// ReplaceDead implements suite.AgentKeeper: each agent pod of endpoints
// that died, as the API server says now (deathCause), is replaced by a new
// pod of the same role on the same node, waited for until its agent
// answers (and, behind a Service, until the Service forwards to it). died
// names every death on one line; err is a replacement that failed. An
// endpoint whose replacement failed stays lost: every later sample on it
// fails at once with why, rather than waiting out a new attempt each time.
func (t *Target) ReplaceDead(ctx context.Context, endpoints []string) (died, err error) {
	var deaths []string
	var errs []error
	for _, ep := range endpoints {
		if lost, ok := t.lost[ep]; ok {
			errs = append(errs, lost)
			continue
		}
		was, ok := t.pods[ep]
		if !ok {
			continue
		}
		now, gerr := t.cs.CoreV1().Pods(t.cfg.Namespace).Get(ctx, was.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			now = nil
		case gerr != nil:
			continue // cannot tell now: the sample's own error stands, the next check sees it
		}
		cause := deathCause(was, now, t.deaths.lastSeen(ep))
		if cause == "" {
			continue
		}
		p, rerr := t.replaceAgent(ctx, ep, cause)
		if rerr != nil {
			lost := fmt.Errorf("agent %s has no pod: %s, and replacing it failed: %v", ep, cause, rerr)
			if t.lost == nil {
				t.lost = map[string]error{}
			}
			t.lost[ep] = lost
			deaths, errs = append(deaths, cause), append(errs, fmt.Errorf("agent %s: %w", ep, rerr))
			continue
		}
		deaths = append(deaths, cause+"; pod "+p.Name+" replaces it")
	}
	if len(deaths) == 0 {
		return nil, errors.Join(errs...)
	}
	return errors.New(strings.Join(deaths, "; ")), errors.Join(errs...)
}

// replaceAgent puts a new pod where endpoint's dead one was: the same pod
// as created (after any sysctl fallback), under a new name, pinned to the
// same node. The old pod goes first: a host-network agent's ports must be
// free, and nothing of a dead agent may linger. The replacement is
// recorded in the provenance, failed or not.
func (t *Target) replaceAgent(ctx context.Context, ep, cause string) (*corev1.Pod, error) {
	old := t.pods[ep]
	start := time.Now().UTC()
	rec := AgentReplacement{Endpoint: ep, Node: old.Spec.NodeName, OldPod: old.Name, Cause: cause, At: start}
	p, err := t.startReplacement(ctx, ep, old)
	if err != nil {
		rec.Error = oneLine(err.Error())
		t.prov.Replacements = append(t.prov.Replacements, rec)
		return nil, err
	}
	rec.NewPod, rec.ReadyIn = p.Name, time.Since(start).Round(100*time.Millisecond).String()
	t.prov.Replacements = append(t.prov.Replacements, rec)
	t.recordEndpoints()
	t.readSysctlsOf(ctx, ep)
	return p, nil
}

func (t *Target) startReplacement(ctx context.Context, ep string, old *corev1.Pod) (*corev1.Pod, error) {
	ns := t.cfg.Namespace
	release(t.access, old)
	uid := old.UID
	err := t.cs.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) { // Conflict: another pod by that name, ours is gone
		return nil, fmt.Errorf("delete pod %s: %w", old.Name, err)
	}
	if err := waitPodGone(ctx, t.cs, ns, old.Name, uid); err != nil {
		return nil, err
	}
	fresh, err := t.builtPod(old)
	if err != nil {
		return nil, err
	}
	fresh.Name = t.replacementName(ep)
	if err := t.fallback.createPod(ctx, fresh, metav1.CreateOptions{FieldManager: ManagedBy}); err != nil {
		return nil, fmt.Errorf("create pod %s: %w", fresh.Name, err)
	}
	ready, err := waitReady(ctx, t.cs, ns, t.cfg.RunID, []string{fresh.Name}, t.cfg.Timeout, t.fallback)
	if err != nil {
		return nil, err
	}
	p := ready[fresh.Name]
	c, err := t.dialAgent(ctx, ep, p)
	if err != nil {
		return nil, err
	}
	t.pods[ep], t.agents[ep] = p, c
	t.deaths.watch(ep, p)
	// A new pod behind a Service (or a new client through one) measures
	// only once the Service proxy forwards to it.
	for _, r := range t.serviceRoutes() {
		if r.server == ep || r.client == ep {
			if err := t.waitReachable(ctx, r, time.Now().Add(t.cfg.Timeout), t.cfg.Timeout); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// builtPod is a copy of the pod as the run created old: the manifest, with
// the sysctls a fallback dropped left out.
func (t *Target) builtPod(old *corev1.Pod) (*corev1.Pod, error) {
	if b := t.fallback.built(old.Name); b != nil {
		return b.DeepCopy(), nil
	}
	m, err := Build(t.layout)
	if err != nil {
		return nil, err
	}
	for _, p := range m.Pods {
		if p.Labels[LabelEndpoint] == old.Labels[LabelEndpoint] {
			return p.DeepCopy(), nil
		}
	}
	return nil, fmt.Errorf("no manifest for endpoint %s", old.Labels[LabelEndpoint])
}

// replacementName is the endpoint's next pod name: cnibench-node1-pod0-r1,
// -r2, … (the dead pod's name may still be held while it terminates).
func (t *Target) replacementName(ep string) string {
	n := 1
	for _, r := range t.prov.Replacements {
		if r.Endpoint == ep {
			n++
		}
	}
	return PodName(ep) + "-r" + strconv.Itoa(n)
}

// readSysctlsOf re-reads one agent's effective sysctls (a replacement's).
func (t *Target) readSysctlsOf(ctx context.Context, ep string) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if s, err := t.agents[ep].Sysctls(rctx); err == nil && t.prov.EndpointSysctls != nil {
		t.prov.EndpointSysctls[ep] = *s
	}
}
