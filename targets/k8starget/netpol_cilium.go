package k8starget

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Where Cilium runs, the NetworkPolicy check also applies a
// CiliumNetworkPolicy with an L7 HTTP rule to the run's servers: the
// client's HTTP traffic to them then goes through Cilium's per-node proxy
// (Envoy), which is what L7 policy costs. It is applied only in the run's
// namespace, only when the CRD exists, and removed with the run (Close; after
// a crash the garbage collector removes it with the run's Secret, its
// owner, which `k8s cleanup` deletes).
const CiliumL7Name = "cnibench-l7-http"

// ciliumNPResource is the CRD's resource.
var ciliumNPResource = schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumnetworkpolicies"}

// CiliumL7 is what the results record of the L7 policy.
type CiliumL7 struct {
	Applied bool   `json:"applied"`
	Name    string `json:"name,omitempty"`
	Rule    string `json:"rule,omitempty"`   // what it allows
	Reason  string `json:"reason,omitempty"` // why it was not applied, or not verified
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

// ciliumL7Policy is the CiliumNetworkPolicy: the pod-network servers
// accept HTTP GET of ciliumL7AllowedPath (what the HTTP tests ask for)
// from the client pod on the HTTP port, through Cilium's proxy, which
// answers any other path with 403. owner, when set, is the run's Secret.
func ciliumL7Policy(l Layout, owner *metav1.OwnerReference) *unstructured.Unstructured {
	servers := make([]any, 0, 2)
	for _, s := range netPolServers(l) {
		servers = append(servers, s)
	}
	lbl := map[string]any{}
	for k, v := range baseLabels(l.RunID, NameAgent) {
		lbl[k] = v
	}
	meta := map[string]any{"name": CiliumL7Name, "namespace": l.Namespace, "labels": lbl}
	if owner != nil {
		meta["ownerReferences"] = []any{map[string]any{"apiVersion": owner.APIVersion, "kind": owner.Kind, "name": owner.Name, "uid": string(owner.UID)}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cilium.io/v2",
		"kind":       "CiliumNetworkPolicy",
		"metadata":   meta,
		"spec": map[string]any{
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
		},
	}}
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

// applyCiliumL7 applies the L7 policy where it can and says what it did;
// only a failed create of an applicable policy is an error.
func applyCiliumL7(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, l Layout) (*CiliumL7, error) {
	c := &CiliumL7{Rule: fmt.Sprintf("HTTP GET %s on %d/TCP from %s to %v (Cilium's proxy)", ciliumL7AllowedPath, httpPort(), netPolClient, netPolServers(l))}
	ok, err := hasCiliumNPCRD(cs)
	switch {
	case err != nil:
		c.Reason = err.Error()
		return c, nil
	case !ok:
		c.Reason = "the CRD ciliumnetworkpolicies.cilium.io is not installed"
		return c, nil
	case dyn == nil:
		c.Reason = "no client for custom resources"
		return c, nil
	}
	var owner *metav1.OwnerReference
	if s, err := cs.CoreV1().Secrets(l.Namespace).Get(ctx, SecretName, metav1.GetOptions{}); err == nil && s.UID != "" {
		owner = &metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: s.Name, UID: s.UID}
	}
	obj := ciliumL7Policy(l, owner)
	if _, err := dyn.Resource(ciliumNPResource).Namespace(l.Namespace).Create(ctx, obj, metav1.CreateOptions{FieldManager: ManagedBy}); err != nil {
		return nil, fmt.Errorf("create CiliumNetworkPolicy %s/%s: %w", l.Namespace, CiliumL7Name, err)
	}
	c.Applied, c.Name = true, CiliumL7Name
	return c, nil
}

// deleteCiliumL7 removes the L7 policy (a no-op when none was applied).
func deleteCiliumL7(ctx context.Context, dyn dynamic.Interface, l Layout) error {
	err := dyn.Resource(ciliumNPResource).Namespace(l.Namespace).Delete(ctx, CiliumL7Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete CiliumNetworkPolicy %s/%s: %w", l.Namespace, CiliumL7Name, err)
	}
	return nil
}
