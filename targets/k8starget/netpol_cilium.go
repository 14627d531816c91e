package k8starget

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Where Cilium runs, the NetworkPolicy check also applies two
// CiliumNetworkPolicies, each proved by probes before the run measures:
//   - an L3/L4 one (CiliumL4Name) on the denied prober: it accepts only
//     its control port, so the client's TCP_RR probe to it, which
//     connects before, must be dropped: Cilium enforces its own policy
//     kind at L3/L4, apart from the NetworkPolicy (which selects the
//     servers, not the prober, and so cannot account for the drop);
//   - an L7 HTTP one (CiliumL7Name) on the run's servers: the client's
//     HTTP traffic to them then goes through Cilium's per-node proxy
//     (Envoy), which is what L7 policy costs, and a path it does not
//     allow gets the proxy's 403.
//
// They are applied only in the run's namespace, only when the CRD
// exists, and removed with the run (Close; after a crash the garbage
// collector removes them with the run's Secret, their owner, which `k8s
// cleanup` deletes).
const (
	CiliumL4Name = "cnibench-l4-prober-ingress"
	CiliumL7Name = "cnibench-l7-http"
)

// ciliumNPResource is the CRD's resource.
var ciliumNPResource = schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumnetworkpolicies"}

// CiliumL4 is what the results record of the L3/L4 CiliumNetworkPolicy.
type CiliumL4 struct {
	Applied bool   `json:"applied"`
	Name    string `json:"name,omitempty"`
	Rule    string `json:"rule,omitempty"`   // what it allows
	Reason  string `json:"reason,omitempty"` // why it was not applied
	// Outcome is NetPolEnforced (the probe was dropped) or
	// NetPolNotEnforced (it still connected when the wait ended).
	Outcome string `json:"outcome,omitempty"`
	Verdict string `json:"verdict,omitempty"` // one sentence naming the probe
	// Baseline is the probe before the policy: connected, so a drop
	// afterwards is the policy's doing.
	Baseline *NetPolProbe `json:"baseline,omitempty"`
	Probe    *NetPolProbe `json:"probe,omitempty"` // the last attempt's
	Attempts int          `json:"attempts,omitempty"`
	WaitedS  float64      `json:"waited_s,omitempty"` // from the policy's creation to the last attempt
}

// CiliumL7 is what the results record of the L7 policy.
type CiliumL7 struct {
	Applied bool   `json:"applied"`
	Name    string `json:"name,omitempty"`
	Rule    string `json:"rule,omitempty"` // what it allows
	// Outcome is NetPolEnforced (Verified) or NetPolNotEnforced, once
	// probed.
	Outcome string `json:"outcome,omitempty"`
	// Reason says why it was not applied, or not enforced: "no L7 proxy
	// on this cluster (…)" where Cilium runs without one.
	Reason string `json:"reason,omitempty"`
	// Verified says Cilium's proxy enforced the rule before the run
	// measured: from the client, the allowed path got 200 and a denied
	// path 403 on every server (netpol_l7probe.go).
	Verified bool      `json:"verified"`
	Probes   []L7Probe `json:"probes,omitempty"` // the last attempt's
	Attempts int       `json:"attempts,omitempty"`
	WaitedS  float64   `json:"waited_s,omitempty"` // from the policy's creation to the last attempt
}

// httpPort is the agents' HTTP server port (kinds' "http").
func httpPort() int32 {
	for _, p := range dataPorts() {
		if p.Name == "http" {
			return p.ContainerPort
		}
	}
	return 8080
}

// ciliumPolicy is a CiliumNetworkPolicy of the run: its labels, owned by
// the run's Secret when owner is set.
func ciliumPolicy(l Layout, name string, owner *metav1.OwnerReference, spec map[string]any) *unstructured.Unstructured {
	lbl := map[string]any{}
	for k, v := range baseLabels(l.RunID, NameAgent) {
		lbl[k] = v
	}
	meta := map[string]any{"name": name, "namespace": l.Namespace, "labels": lbl}
	if owner != nil {
		meta["ownerReferences"] = []any{map[string]any{"apiVersion": owner.APIVersion, "kind": owner.Kind, "name": owner.Name, "uid": string(owner.UID)}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cilium.io/v2",
		"kind":       "CiliumNetworkPolicy",
		"metadata":   meta,
		"spec":       spec,
	}}
}

// ciliumL4Policy is the L3/L4 CiliumNetworkPolicy: the denied prober
// accepts its control port from anywhere (the CLI's control API and the
// kubelet's readiness probe) and nothing else. No L7 rule: Cilium
// enforces it with or without its proxy.
func ciliumL4Policy(l Layout, owner *metav1.OwnerReference) *unstructured.Unstructured {
	return ciliumPolicy(l, CiliumL4Name, owner, map[string]any{
		"endpointSelector": map[string]any{"matchLabels": map[string]any{LabelRunID: l.RunID, LabelEndpoint: NetPolDeniedEndpoint}},
		"ingress": []any{map[string]any{
			"fromEntities": []any{"all"},
			"toPorts":      []any{map[string]any{"ports": []any{map[string]any{"port": strconv.Itoa(ControlPort), "protocol": "TCP"}}}},
		}},
	})
}

// ciliumL7Policy is the L7 CiliumNetworkPolicy: the pod-network servers
// accept HTTP GET of ciliumL7AllowedPath (what the HTTP tests ask for)
// from the client pod on the HTTP port, through Cilium's proxy, which
// answers any other path with 403. owner, when set, is the run's Secret.
func ciliumL7Policy(l Layout, owner *metav1.OwnerReference) *unstructured.Unstructured {
	servers := make([]any, 0, 2)
	for _, s := range netPolServers(l) {
		servers = append(servers, s)
	}
	return ciliumPolicy(l, CiliumL7Name, owner, map[string]any{
		"endpointSelector": map[string]any{
			"matchLabels":      map[string]any{LabelRunID: l.RunID},
			"matchExpressions": []any{map[string]any{"key": LabelEndpoint, "operator": "In", "values": servers}},
		},
		"ingress": []any{map[string]any{
			"fromEndpoints": []any{map[string]any{"matchLabels": map[string]any{LabelRunID: l.RunID, LabelEndpoint: netPolClient}}},
			"toPorts": []any{map[string]any{
				"ports": []any{map[string]any{"port": strconv.Itoa(int(httpPort())), "protocol": "TCP"}},
				"rules": map[string]any{"http": []any{map[string]any{"method": "GET", "path": ciliumL7AllowedPath}}},
			}},
		}},
	})
}

// hasCiliumNPCRD says whether the API server serves CiliumNetworkPolicies.
func hasCiliumNPCRD(cs kubernetes.Interface) (bool, error) {
	list, err := cs.Discovery().ServerResourcesForGroupVersion(ciliumNPResource.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", ciliumNPResource.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == ciliumNPResource.Resource {
			return true, nil
		}
	}
	return false, nil
}

// ciliumPolicies applies the run's CiliumNetworkPolicies where it can.
type ciliumPolicies struct {
	dyn   dynamic.Interface
	l     Layout
	owner *metav1.OwnerReference // the run's Secret
}

// ciliumPoliciesFor says why no CiliumNetworkPolicy can be applied ("" and
// the applier when they can): no CRD, or no client for it.
func ciliumPoliciesFor(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, l Layout) (*ciliumPolicies, string) {
	ok, err := hasCiliumNPCRD(cs)
	switch {
	case err != nil:
		return nil, err.Error()
	case !ok:
		return nil, "the CRD ciliumnetworkpolicies.cilium.io is not installed"
	case dyn == nil:
		return nil, "no client for custom resources"
	}
	p := &ciliumPolicies{dyn: dyn, l: l}
	if s, err := cs.CoreV1().Secrets(l.Namespace).Get(ctx, SecretName, metav1.GetOptions{}); err == nil && s.UID != "" {
		p.owner = &metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: s.Name, UID: s.UID}
	}
	return p, ""
}

// create applies one policy; a refusal is the run's error.
func (p *ciliumPolicies) create(ctx context.Context, obj *unstructured.Unstructured) error {
	if _, err := p.dyn.Resource(ciliumNPResource).Namespace(p.l.Namespace).Create(ctx, obj, metav1.CreateOptions{FieldManager: ManagedBy}); err != nil {
		return fmt.Errorf("create CiliumNetworkPolicy %s/%s: %w", p.l.Namespace, obj.GetName(), err)
	}
	return nil
}

// ciliumL4Rule and ciliumL7Rule say what each policy allows.
func ciliumL4Rule() string {
	return fmt.Sprintf("ingress to %s only on %d/TCP (its control port), from anywhere; L3/L4, no L7 rule", NetPolDeniedEndpoint, ControlPort)
}

func ciliumL7Rule(l Layout) string {
	return fmt.Sprintf("HTTP GET %s on %d/TCP from %s to %v (Cilium's proxy)", ciliumL7AllowedPath, httpPort(), netPolClient, netPolServers(l))
}

// applyCiliumL4 applies the L3/L4 policy and proves it: the client's probe
// to the denied prober connects before (polled up to the baseline's
// bound: the prober has just started) and is dropped after, polled
// until it is or the wait has passed. Only a failed create or a baseline
// that never connects is an error.
func (p *ciliumPolicies) applyCiliumL4(ctx context.Context, r *netPolRun) (*CiliumL4, error) {
	c := &CiliumL4{Rule: ciliumL4Rule()}
	probe := func(ctx context.Context) []NetPolProbe {
		return []NetPolProbe{r.probeTo(ctx, netPolClient, NetPolDeniedEndpoint, false)}
	}
	base, _, ok, err := r.pollProbes(ctx, r.baseline, probe, allConnected)
	if err != nil {
		return nil, err
	}
	c.Baseline = &base[0]
	if !ok {
		return nil, fmt.Errorf("CiliumNetworkPolicy check: before %s was applied, %s to %s (%s) did not connect within %s: the check cannot tell a dropped probe from a broken path: %s",
			CiliumL4Name, netPolClient, NetPolDeniedEndpoint, base[0].Addr, r.baseline, base[0].Detail)
	}
	if err := p.create(ctx, ciliumL4Policy(p.l, p.owner)); err != nil {
		return nil, err
	}
	c.Applied, c.Name = true, CiliumL4Name
	applied := time.Now()
	last, attempts, dropped, err := r.pollProbes(ctx, netPolWait, probe, func(pr []NetPolProbe) bool { return !pr[0].Connected })
	if err != nil {
		return nil, err
	}
	c.Probe, c.Attempts, c.WaitedS = &last[0], attempts, time.Since(applied).Seconds()
	wait := time.Duration(c.WaitedS * float64(time.Second)).Round(100 * time.Millisecond)
	if dropped {
		c.Outcome = NetPolEnforced
		c.Verdict = fmt.Sprintf("CiliumNetworkPolicy L3/L4 enforced %s after it was applied: the probe from %s to %s (%s) was dropped", wait, netPolClient, NetPolDeniedEndpoint, last[0].Addr)
	} else {
		c.Outcome = NetPolNotEnforced
		c.Verdict = fmt.Sprintf("CiliumNetworkPolicy L3/L4 not enforced: the probe from %s to %s (%s) still connected %s after it was applied", netPolClient, NetPolDeniedEndpoint, last[0].Addr, wait)
	}
	return c, nil
}

// applyCiliumL7 applies the L7 policy; only a failed create is an error.
// Its proof is l7Check's.
func (p *ciliumPolicies) applyCiliumL7(ctx context.Context) (*CiliumL7, error) {
	c := &CiliumL7{Rule: ciliumL7Rule(p.l)}
	if err := p.create(ctx, ciliumL7Policy(p.l, p.owner)); err != nil {
		return nil, err
	}
	c.Applied, c.Name = true, CiliumL7Name
	return c, nil
}

// noL7Proxy says why Cilium cannot enforce an L7 rule on this cluster, ""
// when it may: cilium-config's enable-l7-proxy=false, with which the agent
// refuses every policy that has one ("L7 policy is not supported since
// L7 proxy is not enabled"; the default is on).
func noL7Proxy(cil *CiliumConfig) string {
	if cil != nil && strings.EqualFold(strings.TrimSpace(cil.Keys["enable-l7-proxy"]), "false") {
		return "no L7 proxy on this cluster (cilium-config enable-l7-proxy=false: Cilium refuses policies with L7 rules)"
	}
	return ""
}

// deleteCiliumPolicies removes the check's policies named.
func deleteCiliumPolicies(ctx context.Context, dyn dynamic.Interface, l Layout, names []string) error {
	var errs []error
	for _, name := range names {
		err := dyn.Resource(ciliumNPResource).Namespace(l.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete CiliumNetworkPolicy %s/%s: %w", l.Namespace, name, err))
		}
	}
	return errors.Join(errs...)
}
