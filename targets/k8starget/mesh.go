package k8starget

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What of a service mesh is in the run's path (docs/k8s.md, "Mesh in the
// path"). cnibench installs none and measures whatever the cluster has;
// the results must then say what was in the path, or a sidecar's or
// ztunnel's cost passes for the CNI's. Read from the cluster's objects once
// the agents run:
//   - sidecars: containers of the agent pods that are not the agent
//     (Istio's istio-proxy, Linkerd's linkerd-proxy, any injected one),
//     native sidecars (init containers that keep running) included;
//   - Istio ambient: the ztunnel DaemonSet, the run namespace's
//     istio.io/dataplane-mode label, and istio-cni's
//     ambient.istio.io/redirection annotation on the agent pods (their
//     traffic is captured by the node's ztunnel);
//   - waypoints: the namespace's istio.io/use-waypoint label and the
//     waypoint pods in it;
//   - Cilium's L7 proxy: cilium-config's enable-l7-proxy and
//     external-envoy-proxy, and the cilium-envoy DaemonSet.
const (
	labelDataplaneMode  = "istio.io/dataplane-mode"
	labelUseWaypoint    = "istio.io/use-waypoint"
	labelWaypointPod    = "gateway.istio.io/managed"
	annotRedirection    = "ambient.istio.io/redirection"
	ciliumL7ProxyKey    = "enable-l7-proxy"
	ciliumExternalEnvoy = "external-envoy-proxy"
)

// meshDaemonSets are the DaemonSets of a mesh's node-level components.
var meshDaemonSets = map[string]string{
	"ztunnel":        "istio-ztunnel",
	"istio-cni-node": "istio-cni",
	"cilium-envoy":   "cilium-envoy",
	"linkerd-cni":    "linkerd-cni",
}

// Mesh is the run's mesh provenance (Provenance.Mesh).
type Mesh struct {
	// Summary is one line: "none found in the path", or what is
	// ("Istio ambient: ztunnel captures node0-pod0, node1-pod0; ...").
	Summary string `json:"summary"`
	// Sidecars are, per endpoint, the containers beside the agent, as
	// "name (image)".
	Sidecars map[string][]string `json:"sidecars,omitempty"`
	// Redirected are the endpoints whose pods istio-cni captured for
	// ambient (annotation ambient.istio.io/redirection=enabled).
	Redirected []string `json:"ambient_redirected,omitempty"`
	// NamespaceMode and UseWaypoint are the run namespace's
	// istio.io/dataplane-mode and istio.io/use-waypoint labels.
	NamespaceMode string `json:"namespace_dataplane_mode,omitempty"`
	UseWaypoint   string `json:"namespace_use_waypoint,omitempty"`
	// WaypointPods are the namespace's waypoint pods.
	WaypointPods []string `json:"waypoint_pods,omitempty"`
	// CiliumProxy is Cilium's L7 proxy as cilium-config has it.
	CiliumProxy string `json:"cilium_proxy,omitempty"`
	// Components are the mesh DaemonSets found (meshDaemonSets).
	Components []Component `json:"components,omitempty"`
}

// readMesh records the mesh in the path; a read that fails is a note (the
// least-privilege Role may not list what a mesh keeps elsewhere).
func (t *Target) readMesh(ctx context.Context) {
	m, err := detectMesh(ctx, t.meshSource(), t.prov.CNI)
	if err != nil {
		t.prov.Notes = append(t.prov.Notes, "mesh in the path not fully read: "+oneLine(err.Error()))
	}
	t.prov.Mesh = m
}

// meshSource is what detectMesh reads: the cluster and the run's pods.
type meshSource interface {
	daemonSets(ctx context.Context) ([]Component, error)
	namespaceLabels(ctx context.Context) (map[string]string, error)
	namespacePods(ctx context.Context, selector string) ([]string, error)
	agentPods() map[string]*corev1.Pod
}

// detectMesh reads the mesh from src; what it could read is kept with the
// first error.
func detectMesh(ctx context.Context, src meshSource, cni *CNI) (*Mesh, error) {
	m := &Mesh{}
	var firstErr error
	keep := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	for ep, p := range src.agentPods() {
		if sc := sidecars(p); len(sc) > 0 {
			if m.Sidecars == nil {
				m.Sidecars = map[string][]string{}
			}
			m.Sidecars[ep] = sc
		}
		if p.Annotations[annotRedirection] == "enabled" {
			m.Redirected = append(m.Redirected, ep)
		}
	}
	sort.Strings(m.Redirected)
	comps, err := src.daemonSets(ctx)
	if err != nil {
		keep(err)
	}
	m.Components = comps
	if lbl, err := src.namespaceLabels(ctx); err != nil {
		keep(err)
	} else {
		m.NamespaceMode, m.UseWaypoint = lbl[labelDataplaneMode], lbl[labelUseWaypoint]
	}
	if m.WaypointPods, err = src.namespacePods(ctx, labelWaypointPod); err != nil {
		keep(err)
	}
	if cni != nil && cni.Cilium != nil {
		m.CiliumProxy = ciliumProxy(cni.Cilium.Keys, comps)
	}
	m.Summary = m.summary()
	return m, firstErr
}

// sidecars are a pod's containers that are not the agent, native sidecars
// (init containers with restartPolicy Always) included.
func sidecars(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		if c.Name != ContainerNm {
			out = append(out, fmt.Sprintf("%s (%s)", c.Name, c.Image))
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, fmt.Sprintf("%s (%s, native sidecar)", c.Name, c.Image))
		}
	}
	return out
}

// ciliumProxy says where Cilium's L7 proxy runs, from cilium-config.
func ciliumProxy(keys map[string]string, comps []Component) string {
	if keys[ciliumL7ProxyKey] == "false" {
		return "off (enable-l7-proxy=false)"
	}
	for _, c := range comps {
		if c.Plugin == "cilium-envoy" {
			return fmt.Sprintf("Envoy in DaemonSet %s/%s %s, used by L7 policy only", c.Namespace, c.DaemonSet, c.Version)
		}
	}
	if keys[ciliumExternalEnvoy] == "true" {
		return "Envoy in a DaemonSet (external-envoy-proxy=true; cilium-envoy not found), used by L7 policy only"
	}
	return "Envoy inside cilium-agent, used by L7 policy only"
}

// summary is the one line the report shows.
func (m *Mesh) summary() string {
	var parts []string
	if n := len(m.Sidecars); n > 0 {
		var eps []string
		for ep, sc := range m.Sidecars {
			eps = append(eps, ep+": "+strings.Join(sc, ", "))
		}
		sort.Strings(eps)
		parts = append(parts, "sidecars in the agent pods ("+strings.Join(eps, "; ")+")")
	}
	if len(m.Redirected) > 0 {
		parts = append(parts, "Istio ambient: the node's ztunnel captures "+strings.Join(m.Redirected, ", "))
	} else if m.NamespaceMode == "ambient" {
		parts = append(parts, "Istio ambient asked by the namespace (istio.io/dataplane-mode=ambient) but no agent pod is captured")
	}
	if m.UseWaypoint != "" || len(m.WaypointPods) > 0 {
		parts = append(parts, fmt.Sprintf("waypoint %q (pods: %s)", m.UseWaypoint, or(strings.Join(m.WaypointPods, ", "), "none in the namespace")))
	}
	if len(parts) == 0 {
		parts = append(parts, "no sidecar, ztunnel capture or waypoint in the path")
	}
	if m.CiliumProxy != "" {
		parts = append(parts, "Cilium's L7 proxy: "+m.CiliumProxy)
	}
	return strings.Join(parts, "; ")
}

// clusterMesh reads the mesh from the target's cluster.
type clusterMesh struct{ t *Target }

func (t *Target) meshSource() meshSource { return clusterMesh{t} }

func (c clusterMesh) agentPods() map[string]*corev1.Pod { return c.t.pods }

// daemonSets are the mesh DaemonSets DetectCNI's listing found.
func (c clusterMesh) daemonSets(context.Context) ([]Component, error) {
	if c.t.prov.CNI == nil {
		return nil, nil
	}
	out := slices.Clone(c.t.prov.CNI.meshComponents)
	sort.Slice(out, func(i, j int) bool { return out[i].Plugin+out[i].Namespace < out[j].Plugin+out[j].Namespace })
	return out, nil
}

func (c clusterMesh) namespaceLabels(ctx context.Context) (map[string]string, error) {
	n, err := c.t.cs.CoreV1().Namespaces().Get(ctx, c.t.cfg.Namespace, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read namespace %s: %w", c.t.cfg.Namespace, err)
	}
	return n.Labels, nil
}

func (c clusterMesh) namespacePods(ctx context.Context, selector string) ([]string, error) {
	pods, err := c.t.cs.CoreV1().Pods(c.t.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list waypoint pods in %s: %w", c.t.cfg.Namespace, err)
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out, nil
}
